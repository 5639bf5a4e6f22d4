"""The run writers open in this process, and what becomes of them when a close could not
write, when a new writer takes over their path, at a fork, and at exit."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import time
import weakref
from pathlib import Path
from typing import Any

from .claim import release

OPEN: weakref.WeakSet = weakref.WeakSet()


def finish_later(writer: Any, patience: float) -> None:
    """A close that could not write: try again every interval for ``patience`` seconds,
    then give up (what was lost is reported)."""
    end = time.monotonic() + patience
    while time.monotonic() < end and not writer.closed:
        time.sleep(writer.interval)
        with writer._lock:
            if writer.closing is not None and writer._final_write(writer.closing, 0.0):
                return
    writer.give_up(f"its database stayed locked for {patience:g} s")


def supersede(path: Path) -> None:
    """A new writer of ``path`` in this process ends an earlier one's late close."""
    for writer in list(OPEN):
        if writer.closing is not None and Path(os.path.realpath(writer.path)) == path:
            writer.give_up("a new run of this process replaces it")


def write_up_to_now(path: Path) -> None:
    """Have this process's live writer of ``path`` (if any) write what it holds now (a
    writer closing late, in its own thread, is left to finish)."""
    real = os.path.realpath(path)
    for writer in list(OPEN):
        if writer.closed or writer.closing is not None:
            continue
        if os.path.realpath(writer.path) == real:
            with contextlib.suppress(Exception):  # a failed write is the writer's to report
                writer.tick()


def _forget_all_in_child() -> None:
    """In a forked child (a DataLoader worker), which never writes: drop its copies of the
    writers' locks, so that a worker outliving a killed parent does not keep the run
    looking alive."""
    for writer in list(OPEN):
        release(writer._lock_fd)
        writer._lock_fd = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_all_in_child)


@atexit.register
def _close_all_at_exit() -> None:
    """A script that ends without ``session.close()`` still leaves a complete run."""
    for writer in list(OPEN):
        with contextlib.suppress(Exception):
            writer.close(writer.closing or "ended")
            if not writer.closed:
                writer.give_up("the process is exiting")
                sys.stderr.write(f"vizdebug: the run file {str(writer.path)!r} was not "
                                 f"finished: {writer.last_error}\n")
