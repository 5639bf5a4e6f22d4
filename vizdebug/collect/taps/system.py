"""A ~1 Hz sampler of the process: CPU use, resident memory, GPU memory when CUDA is up.

It runs in a daemon thread that holds no reference to the session or the model, reads
``/proc`` (or ``resource`` elsewhere) and never initialises CUDA itself.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections import deque

import numpy as np

from ...records import RunDelta

SYSTEM_FIELDS = ("time", "cpu_percent", "rss_mb", "gpu_mb")


def rss_mb() -> float:
    """Resident memory of this process in MiB.

    Examples
    --------
    >>> rss_mb() > 0
    True
    """
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (2**20 if sys.platform == "darwin" else 2**10)


def gpu_mb() -> float:
    """CUDA memory allocated by torch in MiB; NaN when torch or CUDA is not in use."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return torch.cuda.memory_allocated() / 2**20
    except Exception:
        pass
    return float("nan")


class SystemSampler:
    """Samples :data:`SYSTEM_FIELDS` every ``interval`` seconds into a bounded deque.

    Examples
    --------
    >>> sampler = SystemSampler(interval=0.01).start()
    >>> sampler.stop()
    >>> sampler.array().shape[1]
    4
    """

    def __init__(self, interval: float = 1.0, capacity: int = 3600) -> None:
        self.interval = interval
        self.samples: deque[tuple[float, float, float, float]] = deque(maxlen=capacity)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: tuple[float, float] | None = None
        self.count = 0

    def sample(self) -> None:
        """Take one sample now."""
        now, cpu = time.time(), time.process_time()
        percent = float("nan")
        if self._last is not None and now > self._last[0]:
            percent = 100.0 * (cpu - self._last[1]) / (now - self._last[0])
        self._last = (now, cpu)
        self.samples.append((now, percent, rss_mb(), gpu_mb()))
        self.count += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # a sampler must never take the kernel down
                self.sample()
            self._stop.wait(self.interval)

    def start(self) -> SystemSampler:
        """Start the thread (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="vizdebug-system",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread and wait for it (harmless when called twice)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2.0)

    def records_since(self, cursor: int | None) -> tuple[RunDelta, int]:
        """The collector contract: the samples taken since ``cursor`` (a count) that are
        still held."""
        count, seen = self.count, cursor or 0
        if count <= seen:
            return RunDelta(), seen
        return RunDelta(system=list(self.samples)[-(count - seen):]), count

    def array(self) -> np.ndarray:
        """The samples as an ``(n, 4)`` array of :data:`SYSTEM_FIELDS`."""
        return np.asarray(list(self.samples), dtype=float).reshape(-1, len(SYSTEM_FIELDS))
