"""The logging thread's share of the writing, for when the writing thread is starved.

A training loop whose C calls hold the GIL for milliseconds at a time (a data pipeline in
pure C, a numpy reduction, ``sum(range(n))``) leaves a waiting thread a slice of the GIL
only every switch interval, and a write takes many: on an idle machine such a loop, logging
3 metrics a step, had kept 3,099 of 20,352 points after 4 s, and at 50 metrics a step
nothing of 8 s, when it was killed. So ``ScalarLog.log`` calls :meth:`LateWrite.help_if_late`
after it resolves its values (a chunk, or 0.25 s of them; outside its lock): when nothing was written for ``LATE``
intervals, the logging thread waits (0.1 s at most) for the writer's lock, which lets a
writer caught mid-write finish, and writes once itself if the writer still has not.
The work is the one the writing thread would have done under the same GIL.
"""

from __future__ import annotations

import os
import time

LATE = 1.0  # write intervals with no write after which the logging thread writes once
WAIT = 0.1  # seconds the logging thread waits at most for the writer's lock


class LateWrite:
    """Mixed into :class:`~vizdebug.store.writer.RunWriter` (its lock, pid, interval,
    ``_tick`` and the time of its last write, ``_written``)."""

    def help_if_late(self) -> None:
        """Write once in this thread when the writing thread is late (never raises)."""
        try:
            if (self.closed or time.monotonic() - self._written < LATE * self.interval
                    or os.getpid() != self._pid):
                return
            # Waiting for the lock hands the GIL over: a starved writer holding it (mid-write)
            # finishes then. Bounded, and at most once per LATE intervals.
            if not self._lock.acquire(timeout=WAIT):
                self._written = time.monotonic()
                return
            try:
                if time.monotonic() - self._written >= LATE * self.interval and not self.closed:
                    self._written = time.monotonic()  # a failing write is not retried at once
                    self._tick(None, report=True)  # reports its own errors
            finally:
                self._lock.release()
        except Exception:
            pass
