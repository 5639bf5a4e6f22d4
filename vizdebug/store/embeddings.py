"""Tracked embeddings in a run file: written by the writer, read back by a Run.

Frames are raw little-endian float32 bytes beside their ``n`` and ``dim``; a probe's labels
are ``.npy`` (numbers) or JSON (text) and its thumbnails ``.npy`` ``uint8``. Nothing is
unpickled, and every size is checked before anything is allocated: ``n`` and ``dim`` within
:data:`~vizdebug.records.MAX_PROBE` and :data:`~vizdebug.records.MAX_EMBEDDING_DIM`, a
frame's bytes exactly ``n * dim * 4``, a thumbnail blob no longer than its ``n`` thumbnails
can be. A layer with many frames is read as at most :data:`MAX_FRAMES_READ` of them (evenly
spaced, the first and the newest kept; fewer when they are large). A Run reads only the
frames it has not read yet, so a run that is still being written is followed.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import numpy as np

from ..errors import VizdebugError, short_repr
from ..records import (
    MAX_EMBEDDING_DIM,
    MAX_PROBE,
    MAX_THUMB_SIDE,
    EmbeddingFrame,
    EmbeddingProbe,
)
from .schema import DamagedRun, from_json, from_npy, to_json, to_npy

MAX_FRAMES_READ = 256
MAX_READ_BYTES = 512 << 20  # bytes of one layer's frames held after a read
MAX_LAYERS = 1000
MAX_LAYER_NAME = 1000
NPY_SLACK = 4096  # bytes a .npy header may add to its values


def write_embeddings(conn: sqlite3.Connection, frames: list[EmbeddingFrame],
                     probes: list[EmbeddingProbe]) -> None:
    """Insert new frames and probe sets (inside the writer's transaction)."""
    for probe in probes:
        labels, kind = _labels_blob(probe.labels)
        images = None if probe.images is None else to_npy(np.asarray(probe.images, np.uint8))
        conn.execute("INSERT OR REPLACE INTO embedding_probes (layer, n, labels, labels_kind, "
                     "images) VALUES (?, ?, ?, ?, ?)", (probe.layer, int(probe.n), labels,
                                                        kind, images))
    conn.executemany(
        "INSERT INTO embeddings (layer, step, epoch, n, dim, data) VALUES (?, ?, ?, ?, ?, ?)",
        [(f.layer, int(f.step), None if f.epoch is None else int(f.epoch),
          int(f.features.shape[0]), int(f.features.shape[1]),
          np.ascontiguousarray(f.features, dtype="<f4").tobytes()) for f in frames])


def _labels_blob(labels: Any) -> tuple[Any, str | None]:
    if labels is None:
        return None, None
    if isinstance(labels, np.ndarray) and labels.dtype.kind in "biuf":
        return to_npy(labels), "npy"
    return to_json([str(v) for v in labels]), "json"


class StoredEmbeddings:
    """The :class:`~vizdebug.store.run.Run` methods of tracked embeddings (a mixin over its
    ``_query``, ``damage`` and ``meta``)."""

    damage: dict[str, str]
    meta: dict[str, Any]

    def _has_embeddings(self) -> bool:
        rows = self._query("SELECT count(*) FROM sqlite_master WHERE type='table' AND "
                           "name IN ('embeddings', 'embedding_probes')", table="meta")
        return rows[0][0] == 2

    def embedding_layers(self) -> list[str]:
        """The tracked layers stored in the run (none in a run without them, or older)."""
        if not self._has_embeddings():
            return []
        rows = self._query("SELECT layer FROM embeddings GROUP BY layer ORDER BY min(rowid) "
                           "LIMIT ?", (MAX_LAYERS,), "embeddings")
        return [r[0] for r in rows if isinstance(r[0], str) and len(r[0]) <= MAX_LAYER_NAME]

    def embedding_frames(self, layer: str | None = None) -> list[EmbeddingFrame]:
        """The stored frames of ``layer`` (the first tracked by default), in step order;
        those written since the last call are read now."""
        name = pick_layer(self.embedding_layers(), layer)
        cache = self.__dict__.setdefault("_frame_cache", {})
        key = (self.meta.get("created"), name)
        held: dict[int, EmbeddingFrame] = cache.setdefault(key, {})
        rows = self._query("SELECT rowid, step, epoch, n, dim, length(data) FROM embeddings "
                           "WHERE layer=? ORDER BY step, rowid", (name,), "embeddings")
        good, bad = _valid_rows(rows)
        chosen = _spaced(good)
        missing = [r[0] for r in chosen if r[0] not in held]
        for rowid in missing:  # one blob at a time: bounded by the checks above
            data = self._query("SELECT data FROM embeddings WHERE rowid=?", (rowid,),
                               "embeddings")[0][0]
            row = next(r for r in chosen if r[0] == rowid)
            if not isinstance(data, bytes) or len(data) != row[3] * row[4] * 4:
                bad.append(f"rowid {rowid}: {row[3]} x {row[4]} float32 values need "
                           f"{row[3] * row[4] * 4} bytes, the blob holds "
                           f"{len(data) if isinstance(data, bytes) else type(data).__name__}")
                continue
            features = np.frombuffer(data, dtype="<f4").reshape(row[3], row[4]).astype(np.float32)
            held[rowid] = EmbeddingFrame(name, row[1], row[2], features)
        keep = {r[0] for r in chosen}
        for rowid in [r for r in held if r not in keep]:
            del held[rowid]
        if bad:
            self.damage.setdefault("embeddings", f"table 'embeddings': frames of {name!r} "
                                   f"could not be read (skipped): {'; '.join(bad[:3])}")
        frames = [held[r[0]] for r in chosen if r[0] in held]
        if not frames and bad:
            raise self._damaged("embeddings", f"no frame of {name!r} can be read: {bad[0]}")
        return frames

    def embedding_probe(self, layer: str | None = None) -> EmbeddingProbe:
        """The probe set of ``layer``: its size, labels and thumbnails."""
        name = pick_layer(self.embedding_layers(), layer)
        try:
            return self._stored_probe(name)
        except DamagedRun as exc:
            raise self._damaged(exc.table, str(exc).split(": ", 1)[-1]) from None

    def _stored_probe(self, name: str) -> EmbeddingProbe:
        rows = self._query("SELECT n, labels, labels_kind, length(images) FROM "
                           "embedding_probes WHERE layer=?", (name,), "embedding_probes")
        if not rows:
            raise VizdebugError(f"the run holds frames of {name!r} but not its probe set "
                                "(the writer stopped before it was written)")
        n, labels, kind, images_len = rows[0]
        if not isinstance(n, int) or not 0 < n <= MAX_PROBE:
            raise DamagedRun("embedding_probes", f"probe size {str(n)[:40]} is out of range")
        images = None
        if images_len is not None:
            if not isinstance(images_len, int) or images_len > n * MAX_THUMB_SIDE ** 2 * 3 + NPY_SLACK:
                raise DamagedRun("embedding_probes", f"the thumbnails of {name!r} take "
                                 f"{images_len} bytes, more than {n} thumbnails can")
            blob = self._query("SELECT images FROM embedding_probes WHERE layer=?", (name,),
                               "embedding_probes")[0][0]
            images = _thumbs(from_npy(blob, "thumbnails", "embedding_probes"), n)
        return EmbeddingProbe(name, n, _labels(labels, kind, n), images)


def pick_layer(layers: list[str], layer: str | None) -> str:
    """``layer`` when tracked, the first tracked layer for ``None``, else a clear error.

    >>> pick_layer(["fc1", "fc2"], None)
    'fc1'
    """
    if not layers:
        raise VizdebugError("no layer is tracked: call session.track_embeddings(layer, probe) "
                            "before training (a stored run holds the layers its session tracked)")
    if layer is None:
        return layers[0]
    if layer not in layers:
        raise VizdebugError(f"layer {short_repr(layer)} is not tracked; tracked: "
                            + ", ".join(repr(n) for n in layers))
    return layer


def _valid_rows(rows: list[tuple]) -> tuple[list[tuple], list[str]]:
    """Rows whose sizes are within the caps and agree with their blob's length."""
    good, bad = [], []
    for rowid, step, epoch, n, dim, length in rows:
        if not (isinstance(step, int) and (epoch is None or isinstance(epoch, int))
                and isinstance(n, int) and isinstance(dim, int)
                and 0 < n <= MAX_PROBE and 0 < dim <= MAX_EMBEDDING_DIM):
            bad.append(f"rowid {rowid}: step {str(step)[:20]}, {str(n)[:20]} x {str(dim)[:20]}")
        elif length != n * dim * 4:
            bad.append(f"rowid {rowid}: {n} x {dim} float32 values need {n * dim * 4} bytes, "
                       f"the blob holds {length}")
        else:
            good.append((rowid, step, epoch, n, dim))
    return good, bad


def _spaced(rows: list[tuple]) -> list[tuple]:
    """At most :data:`MAX_FRAMES_READ` rows (and :data:`MAX_READ_BYTES`), evenly spaced,
    the first and the last kept."""
    if not rows:
        return rows
    size = max(r[3] * r[4] * 4 for r in rows)
    limit = max(2, min(MAX_FRAMES_READ, MAX_READ_BYTES // size))
    if len(rows) <= limit:
        return rows
    idx = np.unique(np.linspace(0, len(rows) - 1, limit).round().astype(int))
    return [rows[i] for i in idx]


def _labels(blob: Any, kind: Any, n: int) -> Any:
    if blob is None:
        return None
    if kind == "npy":
        labels = from_npy(blob, "probe labels", "embedding_probes")
        if labels.shape != (n,):
            raise DamagedRun("embedding_probes", f"the probe labels have shape {labels.shape}, "
                             f"not ({n},)")
        return labels.astype(np.int64) if labels.dtype.kind in "biu" else labels
    if kind == "json" and isinstance(blob, str) and len(blob) < n * 1000 + 100:
        labels = from_json(blob, "probe labels", "embedding_probes")
        if isinstance(labels, list) and len(labels) == n and all(isinstance(v, str) for v in labels):
            return labels
    raise DamagedRun("embedding_probes", "the probe labels are not one label per sample")


def _thumbs(images: np.ndarray, n: int) -> np.ndarray:
    ok = (images.dtype == np.uint8 and images.ndim in (3, 4) and images.shape[0] == n
          and max(images.shape[1:3]) <= MAX_THUMB_SIDE
          and (images.ndim == 3 or images.shape[3] == 3))
    if not ok:
        raise DamagedRun("embedding_probes", f"the thumbnails are {images.dtype} of shape "
                         f"{images.shape}; expected {n} small uint8 pictures")
    return images
