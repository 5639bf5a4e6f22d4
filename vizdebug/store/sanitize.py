"""What a run file's JSON parts must look like before the rules and views see them.

A run file may come from anywhere (a crashed job, a colleague, an attacker): every value
read from it is checked here against the shape the writer gives it. A part that does not
fit is left out and named (``(table, what was wrong)``), so the rest of the run is still
shown and the damage is reported instead of surfacing later as a ``TypeError`` deep in a
rule or a view.
"""

from __future__ import annotations

import math
from typing import Any

from ..findings import CODES
from ..records import AnomalyEvent, LoaderRecord, ProgramFacts
from ..records.loader import is_int as _is_int
from ..records.loader import is_number as _is_number
from .schema import DamagedRun

MAX_WORLD = 4096   # ranks of a multi-process job looked for beside rank 0's file


def _strings(meta: dict[str, Any], key: str, problems: list[str]) -> list[str]:
    value = meta.get(key, [])
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    problems.append(f"{key} is not a list of names")
    return []


def clean_meta(meta: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``meta`` with every setting the reader uses of the right type (a wrong one is
    replaced by its default and named)."""
    problems: list[str] = []
    out = dict(meta)
    for key in ("module_paths", "module_classes", "param_paths"):
        out[key] = _strings(meta, key, problems)
    numel = meta.get("param_numel", [])
    if not (isinstance(numel, list) and all(_is_int(n) and n >= 0 for n in numel)):
        problems.append("param_numel is not a list of counts")
        numel = []
    out["param_numel"] = numel
    if len(out["module_classes"]) != len(out["module_paths"]):
        out["module_classes"] = (out["module_classes"] + ["?"] * len(out["module_paths"])
                                 )[:len(out["module_paths"])]
    defaults = {"every": 1, "rank": 0, "world_size": 1}
    for key, default in defaults.items():
        value = meta.get(key, default)
        ok = (_is_int(value) and value >= (key != "rank")) or (key == "every" and value == "auto")
        if not ok or (key == "world_size" and not 1 <= value <= MAX_WORLD):
            problems.append(f"{key}={value!r}")
            value = default
        out[key] = value
    for key in ("interval", "heartbeat", "created"):
        value = meta.get(key)
        if value is not None and not (_is_number(value) and math.isfinite(value)):
            problems.append(f"{key}={value!r}")
            out[key] = None
    if out.get("interval") is not None and out["interval"] <= 0:
        out["interval"] = None
    return out, problems


def clean_program(value: Any) -> ProgramFacts | None:
    """The program facts as the training profile reads them (``None``: an older run)."""
    if value is None:
        return None
    try:
        return ProgramFacts.from_json(value)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DamagedRun("blobs", f"the stored program facts are damaged ({exc})") from None


def clean_events(value: Any) -> list[AnomalyEvent]:
    """Anomaly events as the rules read them (typed; a code this vizdebug does not know
    is damage, not an event)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise DamagedRun("blobs", "the stored events are not a list")
    out = []
    for ev in value:
        try:
            event = AnomalyEvent.from_json(ev)
        except ValueError:
            event = None
        if event is None or event.kind not in CODES:
            raise DamagedRun("blobs", f"a stored event is not an event: {str(ev)[:200]}")
        out.append(event)
    return out


def clean_errors(value: Any) -> list[tuple[str, str, int]]:
    """Collector errors: ``(where, message, count)``."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(
            isinstance(e, list) and len(e) == 3 and isinstance(e[0], str)
            and isinstance(e[1], str) and _is_int(e[2]) for e in value):
        raise DamagedRun("blobs", "the stored collector errors are not (where, message, "
                                  "count) triples")
    return [tuple(e) for e in value]


def clean_loader(parts: tuple[dict[str, Any], dict[str, Any]]) -> LoaderRecord:
    """The loader tap's record as the rules and the dashboard read it."""
    plain, arrays = parts
    if not plain:
        return LoaderRecord()
    try:
        return LoaderRecord.from_parts(plain, arrays)
    except ValueError as exc:
        raise DamagedRun("blobs", f"the stored {exc}") from None


def fill_names(names: list, width: int, filler: Any) -> list:
    """``names`` for ``width`` columns: a damaged list is filled in, so the rules and
    views can still point at every column.

    >>> fill_names(["fc"], 3, "module")
    ['fc', 'module 1', 'module 2']
    """
    if len(names) >= width:
        return list(names)
    extra = [f"{filler} {i}" if isinstance(filler, str) and filler != "?" else filler
             for i in range(len(names), width)]
    return [*names, *extra]
