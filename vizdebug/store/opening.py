"""``open_run(path)``: find the run file a path names (a file, or a folder's newest run)
and open it as a :class:`~vizdebug.store.run.Run`."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..errors import VizdebugError, VizdebugTypeError, describe
from .claim import LockProbe
from .guard import UnsafeRun
from .job import Job
from .registry import write_up_to_now
from .run import Run
from .schema import NOT_A_RUN, is_run_file, run_file_problem

CREATING_PATIENCE = 5.0  # seconds to wait for a starting writer's tables (ms unloaded)


def _resolve(path: object) -> Path:
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise VizdebugTypeError(f"open_run() takes the path of a run file, got {describe(path)}")
    p = Path(os.fspath(path)).expanduser()
    if p.is_dir():
        runs = sorted((f for f in p.glob("*.sqlite") if ".rank" not in f.name and is_run_file(f)),
                      key=lambda f: f.stat().st_mtime)
        if not runs:
            raise VizdebugError(f"no vizdebug run (*.sqlite) in the folder {str(p)!r}")
        return runs[-1]
    if not p.exists() and p.suffix != ".sqlite" and p.with_name(p.name + ".sqlite").is_file():
        p = p.with_name(p.name + ".sqlite")  # a job's (or run's) name, without .sqlite
    if not p.exists():
        raise VizdebugError(f"no run file at {str(p)!r}; pass the path given to "
                            "vd.watch(model, store=...)")
    problem = run_file_problem(p)
    if problem == NOT_A_RUN and _being_created(p):
        problem = _created(p)
    if problem == NOT_A_RUN:
        raise VizdebugError(f"{str(p)!r} is {NOT_A_RUN}")
    if problem is not None:  # a file holding a view, a trigger...: the guard's words
        raise UnsafeRun(problem)
    return p


def _being_created(path: Path) -> bool:
    """True while a writer holds the file's lock (``store/claim.py``) before its tables
    and settings are in: ``vd.watch(..., store=path)`` claims the empty file first."""
    probe = LockProbe(path)
    try:
        return probe.writer_alive() is True
    finally:
        probe.close()


def _created(path: Path) -> str | None:
    """Wait (at most :data:`CREATING_PATIENCE` s) for a starting writer to create its
    tables, so a second process that opens a job as it starts reads an empty run."""
    deadline = time.monotonic() + CREATING_PATIENCE
    while time.monotonic() < deadline:
        time.sleep(0.02)
        problem = run_file_problem(path)
        if problem != NOT_A_RUN or not _being_created(path):
            return problem
    return (f"a run whose writer (vd.watch) has held it for {CREATING_PATIENCE:.0f} s "
            "without creating its tables; open it again in a moment")


def open_run(path: str | os.PathLike) -> Run:
    """Open a run stored by ``vd.watch(model, store=path)``.

    ``path`` is the run file, its name without ``.sqlite``, or a folder (its newest
    run). Rank 0's run of a ``torch.distributed`` job opens as a
    :class:`~vizdebug.store.job.Job`: every rank's run (``.ranks``), merged. The run may still be written
    by another process: the Run reads what was committed, and its dashboard follows. A run
    this process is still writing is written up to now first, so a notebook that opens
    its own session's file sees everything logged so far.

    Examples
    --------
    >>> import torch, tempfile, os, vizdebug as vd
    >>> path = os.path.join(tempfile.mkdtemp(), "run.sqlite")
    >>> model = torch.nn.Linear(3, 1)
    >>> with vd.watch(model, store=path) as session:
    ...     for step in range(3):
    ...         session.log(loss=float(step))
    >>> run = vd.open_run(path)
    >>> run.state, run.scalars()["value"].tolist()
    ('closed', [0.0, 1.0, 2.0])
    """
    resolved = _resolve(path)
    write_up_to_now(resolved)
    run = Run(resolved)
    if int(run.meta.get("rank", 0)) == 0 and int(run.meta.get("world_size") or 1) > 1:
        return Job(resolved)  # rank 0 of a multi-process job: every rank, merged
    return run
