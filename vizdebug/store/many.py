"""Many stored runs at once, read lightly: what :func:`vizdebug.compare_runs` draws.

Opening a hundred runs with :func:`~vizdebug.store.opening.open_run` would read each one
whole (every sampled statistic, the loader, the diagnosis). A comparison needs far less:
each run's settings and state, and its curves at the resolution of a chart. So each curve
is read as a fixed number of step buckets, aggregated by SQLite over the ``(name, step)``
index: per bucket the first and last step, the min, the max, the mean and how many values
were not finite. Nothing is sampled away silently: a spike of one step is the max of its
bucket and stays on the chart; a series short enough is read point by point.

The files are untrusted input: every query goes through :class:`~vizdebug.store.run.Run`'s
guarded read-only connection, names are bounded, and the number of metrics and buckets
read is bounded before anything is allocated.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import VizdebugError, VizdebugTypeError
from ..records import EVAL_PREFIXES
from ..records.runs import Curve, RunEntry
from .schema import is_run_file

BUCKETS = 600        # buckets per curve: about one per pixel column of the chart (min/max each)
MAX_METRICS = 200    # metric names read per run
MAX_RUNS = 2000      # runs in one comparison
NAME_LIMIT = 200     # characters of a metric name kept
FINDINGS_UP_TO_MB = 64.0  # runs larger than this are listed and compared without a diagnosis


def run_files(folder: Path, recursive: bool = True) -> Iterator[Path]:
    """``*.sqlite`` files under ``folder`` (non-hidden sub-folders too when ``recursive``),
    in name order; symbolic links to folders are not followed."""
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if recursive and not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".sqlite"):
                yield Path(root) / name


def run_paths(source: Any, *, recursive: bool = True) -> list[Path]:
    """The run files named by ``source``: a folder (its ``*.sqlite`` runs, sub-folders
    included), a run file, a :class:`~vizdebug.store.run.Run`, or a list of those.

    >>> run_paths([])
    []
    """
    from .run import Run

    items = source if isinstance(source, (list, tuple)) else [source]
    paths: list[Path] = []
    for item in items:
        if isinstance(item, Run):
            paths.append(item.path)
        elif isinstance(item, (str, os.PathLike)):
            paths.extend(_paths_of(Path(os.fspath(item)), recursive))
        else:
            raise VizdebugTypeError(
                f"compare_runs takes run files, folders of runs or opened runs; got "
                f"{type(item).__name__}. Pass e.g. vd.compare_runs('runs/') or "
                f"vd.compare_runs(['runs/a.sqlite', 'runs/b.sqlite'])")
    unique = list(dict.fromkeys(p.resolve() for p in paths))
    if len(unique) > MAX_RUNS:
        raise VizdebugError(f"{len(unique)} runs is more than one comparison holds "
                            f"({MAX_RUNS}); pass a sub-folder or a list")
    return unique


def _paths_of(path: Path, recursive: bool) -> Iterable[Path]:
    if path.is_dir():
        return [p for p in run_files(path, recursive) if is_run_file(p)]
    if not path.exists():
        raise VizdebugError(f"{str(path)!r} does not exist; pass a run file or a folder "
                            f"of runs (what store= wrote)")
    if not is_run_file(path):
        raise VizdebugError(f"{str(path)!r} is not a vizdebug run file")
    return [path]


def default_metric(names: list[str]) -> str | None:
    """The metric a comparison draws unless told: ``loss``, else the first ``*loss*``
    that is not an evaluation one, else the first.

    >>> default_metric(["acc", "val_loss", "train_loss"])
    'train_loss'
    """
    for prefer in ("loss", "train_loss"):
        if prefer in names:
            return prefer
    losses = [n for n in names if "loss" in n.lower() and not n.startswith(EVAL_PREFIXES)]
    return (losses or [n for n in names if "loss" in n.lower()] or names or [None])[0]


def read_entry(path: Path, metrics: Iterable[str] | str | None = None,
               buckets: int = BUCKETS) -> RunEntry:
    """One run's settings, state and curves. ``metrics``: which ones (all by default;
    ``"default"``: the one :func:`default_metric` picks). One guarded connection reads
    them all; each query walks the ``(name, step)`` index."""
    from .run import Run

    try:
        run = Run(path)
    except VizdebugError as exc:
        return RunEntry(path, path.stem, "unreadable", {}, None, None, [], note=str(exc))
    try:
        with run._reading("scalars") as conn:
            names = _metric_names(conn)
            if metrics == "default":
                wanted = [m for m in [default_metric(names)] if m is not None]
            else:
                wanted = names if metrics is None else [m for m in metrics if m in names]
            curves = {m: _curve(conn, m, buckets) for m in wanted}
            last = _last_step(conn, [n for n in names if n not in run._traced()])
        return RunEntry(path, _run_name(run), run.state, _config(run.meta), last,
                        _number(run.meta.get("created")), names, curves)
    except VizdebugError as exc:
        return RunEntry(path, path.stem, "unreadable", {}, None, None, [], note=str(exc))
    finally:
        run._probe.close()


def _last_step(conn: Any, names: list[str]) -> int | None:
    """The highest step any of ``names`` reached (an index lookup per name)."""
    steps = [conn.execute("SELECT MAX(step) FROM scalars WHERE name=? AND "
                          "typeof(step)='integer'", (n,)).fetchone()[0] for n in names]
    steps = [int(s) for s in steps if isinstance(s, int)]
    return max(steps) if steps else None


def _run_name(run: Any) -> str:
    name = run.meta.get("name")
    return str(name)[:NAME_LIMIT] if isinstance(name, str) and name else run.path.stem


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(float(value)) else None


def _config(meta: dict[str, Any]) -> dict[str, Any]:
    """The run's ``config=`` (plain JSON scalars only, names and values bounded)."""
    raw = meta.get("config")
    if not isinstance(raw, dict):
        return {}
    plain = (str, int, float, bool, type(None))
    return {str(k)[:NAME_LIMIT]: (v[:NAME_LIMIT] if isinstance(v, str) else v)
            for k, v in list(raw.items())[:MAX_METRICS] if isinstance(v, plain)}


def _metric_names(conn: Any) -> list[str]:
    """Distinct metric names, walked along the ``(name, step)`` index one name at a time
    (a skip scan: cost per name, not per row)."""
    rows = conn.execute(
        "WITH RECURSIVE n(name) AS (SELECT MIN(name) FROM scalars "
        "UNION ALL SELECT (SELECT MIN(name) FROM scalars WHERE name > n.name) FROM n "
        f"WHERE n.name IS NOT NULL LIMIT {MAX_METRICS + 1}) "
        "SELECT name FROM n WHERE typeof(name)='text'").fetchall()
    return [str(r[0])[:NAME_LIMIT] for r in rows[:MAX_METRICS]]


def _curve(conn: Any, name: str, buckets: int) -> Curve:
    """``name`` bucketed over its step range (one bucket per point when short)."""
    (lo, hi, count), = conn.execute(
        "SELECT MIN(step), MAX(step), COUNT(*) FROM scalars WHERE name=? "
        "AND typeof(step)='integer'", (name,)).fetchall()
    if not count:
        empty = np.empty(0)
        return Curve(name, empty.astype(np.int64), empty, empty, empty, empty.astype(np.int64), 0)
    width = max(1, -(-(int(hi) - int(lo) + 1) // buckets))  # steps per bucket
    rows = conn.execute(
        "SELECT MAX(step), MIN(value), MAX(value), AVG(value), "
        "SUM(value IS NULL OR value != value OR abs(value) > 1.7976931348623157e308) "
        "FROM scalars WHERE name=? AND typeof(step)='integer' "
        "AND typeof(value) IN ('real','integer','null') "
        f"GROUP BY (step - ?) / ? ORDER BY 1 LIMIT {buckets + 1}",
        (name, int(lo), width)).fetchall()
    arr = np.array([[np.nan if v is None else float(v) for v in r] for r in rows],
                   dtype=np.float64).reshape(-1, 5)
    return Curve(name, arr[:, 0].astype(np.int64), arr[:, 1], arr[:, 2], arr[:, 3],
                 arr[:, 4].astype(np.int64), int(count))
