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

from ..errors import short_repr
from ..findings import CODES
from ..records import AnomalyEvent, LoaderRecord, ProgramFacts
from ..records.loader import is_int as _is_int
from ..records.loader import is_number as _is_number
from .reader import MAX_WIDTH
from .schema import DamagedRun

MAX_WORLD = 4096   # ranks of a multi-process job looked for beside rank 0's file
MAX_COUNT = 2 ** 62  # a stored count or step setting (an int64 holds it)


def _strings(meta: dict[str, Any], key: str, problems: list[str]) -> list[str]:
    """A list of names, at most :data:`MAX_WIDTH` of them (as many columns as a read
    keeps: the rules point at column ``i`` by name ``i``)."""
    value = meta.get(key, [])
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        problems.append(f"{key} is not a list of names")
        return []
    if len(value) > MAX_WIDTH:
        problems.append(f"{key} holds {len(value)} names, more than the {MAX_WIDTH} read")
        return value[:MAX_WIDTH]
    return value


def _finite(value: Any) -> bool:
    """A real number that a float holds, finite (``10**400`` is not: it overflows)."""
    if not _is_number(value):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _count(value: Any, low: int) -> bool:
    """An int in ``[low, MAX_COUNT]``."""
    return _is_int(value) and low <= value <= MAX_COUNT


def _names(meta: dict[str, Any], out: dict[str, Any], problems: list[str]) -> None:
    """The module and parameter names and the parameters' sizes."""
    for key in ("module_paths", "module_classes", "param_paths"):
        out[key] = _strings(meta, key, problems)
    numel = meta.get("param_numel", [])
    if not (isinstance(numel, list) and all(_count(n, 0) for n in numel)):
        problems.append("param_numel is not a list of counts")
        numel = []
    out["param_numel"] = numel[:MAX_WIDTH]
    if len(out["module_classes"]) != len(out["module_paths"]):
        out["module_classes"] = (out["module_classes"] + ["?"] * len(out["module_paths"])
                                 )[:len(out["module_paths"])]


def _settings(meta: dict[str, Any], out: dict[str, Any], problems: list[str]) -> None:
    """The sampling setting, the process's place in its job, and its times."""
    limits = {"every": (1, MAX_COUNT), "rank": (0, MAX_WORLD - 1), "world_size": (1, MAX_WORLD)}
    for key, (low, high) in limits.items():
        value = meta.get(key, low)
        ok = (_is_int(value) and low <= value <= high) or (key == "every" and value == "auto")
        if not ok:
            problems.append(f"{key}={short_repr(value)}")
            value = low
        out[key] = value
    for key in ("interval", "heartbeat", "created"):
        value = meta.get(key)
        if value is not None and not _finite(value):
            problems.append(f"{key}={short_repr(value)}")
            out[key] = None
    if out.get("interval") is not None and out["interval"] <= 0:
        out["interval"] = None


def clean_meta(meta: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``meta`` with every setting the reader uses of the right type and within range (a
    wrong one is replaced by its default and named).

    >>> clean_meta({"created": 10**400})[1]
    ['created=an int of 1329 bits']
    """
    problems: list[str] = []
    out = dict(meta)
    _names(meta, out, problems)
    _settings(meta, out, problems)
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
