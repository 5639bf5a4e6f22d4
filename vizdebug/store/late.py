"""The logging thread's share of the writing, for when the writing thread is starved.

A training loop whose C calls hold the GIL for milliseconds at a time (a data pipeline in
pure C, a numpy reduction, ``sum(range(n))``) leaves a waiting thread a slice of the GIL
only every switch interval, and a write takes many: on an idle machine such a loop, logging
3 metrics a step, had kept 3,099 of 20,352 points after 4 s, and at 50 metrics a step
nothing of 8 s, when it was killed. So ``ScalarLog.log`` asks :meth:`LateWrite.help_if_late`
whether the file is behind, at the time that call last named (it answers with the seconds
until the next question, so ``log()`` itself only compares two floats): when nothing was
committed for :data:`LATE` seconds, the logging thread waits (:data:`WAIT` at most) for the
writer's lock, which lets a writer caught mid-write finish, and writes once itself if the
writer still has not. The work is the one the writing thread would have done under the
same GIL. A lock it could not take is asked for again :data:`RETRY` seconds later (not a
whole interval: that left 1.2-1.4 s between commits on an idle machine).
"""

from __future__ import annotations

import os
import time

LATE = 0.6   # seconds with no commit after which the logging thread writes (interval 0.5 s)
WAIT = 0.1   # seconds the logging thread waits at most for the writer's lock
RETRY = 0.05  # seconds before asking again after the lock could not be taken
NEVER = 1e9


class LateWrite:
    """Mixed into :class:`~vizdebug.store.writer.RunWriter` (its lock, pid, ``_tick`` and
    the time of its last commit, ``_written``)."""

    def help_if_late(self) -> float:
        """Write once in this thread when the file is :data:`LATE` seconds behind; return
        the seconds until it should be asked again (never raises)."""
        try:
            if self.closed or os.getpid() != self._pid:
                return NEVER
            behind = time.monotonic() - self._written
            if behind < LATE:
                return LATE - behind
            # Waiting for the lock hands the GIL over: a starved writer holding it (mid-write)
            # finishes then. Bounded; asked again soon when it could not be taken.
            if not self._lock.acquire(timeout=WAIT):
                return RETRY
            try:
                if time.monotonic() - self._written >= LATE and not self.closed:
                    self._written = time.monotonic()  # a failing write is not retried at once
                    self._tick(None, report=True)  # reports its own errors
            finally:
                self._lock.release()
            return LATE
        except Exception:
            return LATE
