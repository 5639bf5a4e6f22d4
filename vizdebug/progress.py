"""Progress on long work (``check_dataset`` over a large dataset, drift over Parquet, a
report of a long run): silent when the work is short, then ``tqdm.auto`` in a notebook and
one updating line in a terminal.

Nothing shows before :data:`DELAY` seconds have passed, so quick calls stay quiet. The
work's own updates draw the bar; work made of a few long steps (a report of a long run)
asks for ``ticker=True``: a daemon thread then redraws the elapsed time and the current
:attr:`Progress.stage`, and is stopped and joined when the work ends, however it ends.
``progress=False`` on the call, or
``VIZDEBUG_PROGRESS=0`` in the environment, turns it off; ``VIZDEBUG_PROGRESS=1`` draws
the line even where stderr is not a terminal (a log file, a test). Ctrl-C
(``KeyboardInterrupt``) inside the work closes the bar and propagates with a short message
saying how far the work got.

Examples
--------
>>> with Progress("counting", total=3) as bar:
...     for _ in range(3):
...         bar.update()
>>> bar.done
3
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

from ._env import in_kernel

ENV = "VIZDEBUG_PROGRESS"
DELAY = 2.0        # seconds of work before anything shows
LINE_EVERY = 0.2   # seconds between redraws of the terminal line


def setting(progress: bool | None = None) -> str:
    """``off``, ``on`` (as the place allows) or ``always`` (the line, even into a file)."""
    if progress is False:
        return "off"
    value = os.environ.get(ENV, "").strip().lower()
    if value in ("0", "off", "false", "no"):
        return "off" if progress is None else "on"
    return "always" if value in ("1", "on", "true", "yes") else "on"


def _tqdm_class() -> Any:
    """``tqdm.auto.tqdm`` without its monitor thread, or None when tqdm is missing."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None

    class QuietTqdm(tqdm):  # type: ignore[misc, valid-type]
        monitor_interval = 0  # no TMonitor thread left behind

    return QuietTqdm


class Progress:
    """A progress display for ``total`` units of work named ``what``.

    Use it as a context manager and call :meth:`update` as the work goes; ``progress``
    is the caller's switch (None: the environment decides).
    """

    def __init__(self, what: str, total: int | None = None, *, unit: str = "items",
                 progress: bool | None = None, stream: TextIO | None = None,
                 ticker: bool = False) -> None:
        self.what, self.total, self.unit = what, total, unit
        self.done = 0
        self.stage = ""              # what is going on now, shown after the count
        self.mode = setting(progress)
        self._stream = stream
        self._start = time.monotonic()
        self._bar: Any = None        # the tqdm bar, once shown
        self._line = 0               # width of the terminal line drawn, once shown
        self._drawn_at = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = None
        shown_here = self.mode == "always" or in_kernel() or _is_tty(self._out())
        if ticker and self.mode != "off" and shown_here:
            self._ticker = threading.Thread(target=self._tick, name="vizdebug-progress",
                                            daemon=True)
            self._ticker.start()

    # -- the work's side ------------------------------------------------------------------
    def update(self, n: int = 1) -> None:
        """Count ``n`` more units done (cheap: draws at most every :data:`LINE_EVERY` s)."""
        self.done += n
        if self.mode != "off":
            self._maybe_draw()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        interrupted = isinstance(exc, KeyboardInterrupt)
        self.close(interrupted=interrupted)
        if interrupted and exc is not None and not exc.args:
            exc.args = (f"{self.what} interrupted after {self._count()}",)

    def close(self, *, interrupted: bool = False) -> None:
        """Stop the ticker and take the display down (a terminal line is erased, or ends
        in 'interrupted')."""
        self._stop.set()
        if self._ticker is not None and self._ticker is not threading.current_thread():
            self._ticker.join()
        self._ticker = None
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            if self._line:
                out = self._out()
                tail = f"{self.what}: interrupted after {self._count()}\n" if interrupted else ""
                out.write("\r" + " " * self._line + "\r" + tail)
                out.flush()
                self._line = 0
            self.mode = "off"

    def _tick(self) -> None:
        while not self._stop.wait(LINE_EVERY):
            self._maybe_draw()

    def _maybe_draw(self) -> None:
        with self._lock:
            now = time.monotonic()
            if self.mode == "off" or now - self._start < DELAY:
                return
            if self._bar is not None:
                self._bar.set_postfix_str(self.stage, refresh=False)
                self._bar.update(self.done - self._bar.n)
                if now - self._drawn_at >= 1.0:
                    self._bar.refresh()  # the elapsed time moves while a step is long
                    self._drawn_at = now
            elif now - self._drawn_at >= LINE_EVERY:
                self._drawn_at = now
                self._draw(now)

    # -- drawing ----------------------------------------------------------------------------
    def _out(self) -> TextIO:
        return self._stream or sys.stderr

    def _count(self) -> str:
        of = f" of {self.total:,}" if self.total else ""
        return f"{self.done:,}{of} {self.unit}"

    def _draw(self, now: float) -> None:
        if not self._line and self.mode != "always" and in_kernel() and self._stream is None:
            bar = _tqdm_class()
            if bar is not None:
                self._bar = bar(total=self.total, initial=self.done, desc=self.what,
                                unit=" " + self.unit, leave=False)
                return
        out = self._out()
        if self.mode != "always" and not self._line and not (in_kernel() or _is_tty(out)):
            self.mode = "off"  # a log file or a pipe: no line to overwrite
            return
        text = self._text(now)
        out.write("\r" + text.ljust(self._line))
        out.flush()
        self._line = max(self._line, len(text))

    def _text(self, now: float) -> str:
        spent = now - self._start
        text = f"{self.what}: {self._count()}"
        if self.total and self.done:
            left = spent * (self.total - self.done) / self.done
            text += f" ({100 * self.done / self.total:.0f}%), {spent:.0f} s, about {left:.0f} s left"
        else:
            text += f", {spent:.0f} s"
        return text + (f" · {self.stage}" if self.stage else "")


def _is_tty(out: TextIO) -> bool:
    try:
        return bool(out.isatty())
    except (AttributeError, ValueError):
        return False
