"""The ``blobs`` rows of a run file: snapshots replaced as they change (anomaly events,
collector errors, program facts, the loader's record) and the captured batches, which take
turns in :data:`CAPTURED_SLOTS` slots (the oldest slot is reused)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..records import RunDelta
from .schema import to_json, to_npy

CAPTURED_SLOTS = 4  # captured batches kept in the file

__all__ = ["CAPTURED_SLOTS", "put_blob", "write_batch", "write_snapshots"]


def put_blob(conn: Any, name: str, kind: str, data: bytes | str) -> None:
    """Write (or replace) one blob."""
    conn.execute("INSERT OR REPLACE INTO blobs (name, kind, data) VALUES (?, ?, ?)",
                 (name, kind, data))


def write_snapshots(conn: Any, delta: RunDelta) -> None:
    """The snapshots ``delta`` carries (those that changed since the last write)."""
    if delta.events is not None:
        put_blob(conn, "events", "json", to_json([ev.to_json() for ev in delta.events]))
    if delta.errors is not None:
        put_blob(conn, "errors", "json", to_json([list(e) for e in delta.errors]))
    if delta.program is not None:
        put_blob(conn, "program", "json", to_json(delta.program))
    if delta.loader is not None:
        plain, arrays = delta.loader.parts()
        for key, value in arrays.items():
            put_blob(conn, f"loader.{key}", "npy", to_npy(value))
        put_blob(conn, "loader", "json", to_json(plain))


def write_batch(conn: Any, arrays: list[np.ndarray], counter: int) -> int:
    """A captured batch goes into slot ``counter % CAPTURED_SLOTS``; returns the slot
    counter to keep once the transaction commits (``counter`` when there is no batch)."""
    if not arrays:
        return counter
    slot = counter % CAPTURED_SLOTS
    conn.execute("DELETE FROM blobs WHERE name LIKE ?", (f"batch.{slot}.%",))
    for i, array in enumerate(arrays):
        put_blob(conn, f"batch.{slot}.{i}", "npy", to_npy(array))
    put_blob(conn, f"batch.{slot}", "json", to_json({"order": counter}))
    return counter + 1
