"""When a notebook session's training stopped, and how its anomalies are shown there.

In a Jupyter kernel a :class:`~vizdebug.collect.session.core.Session` keeps a
:class:`Lifecycle`, which listens to IPython's ``pre_run_cell``/``post_run_cell``
events. When a cell in which training steps arrived ends, the session reads
``stopped (cell finished)``; when no step has arrived for a while (at least
``IDLE_AFTER`` seconds, longer for slow steps) it reads ``idle since 12:03``; a later
step, in any cell, makes it ``running`` again. Nobody has to call ``close()`` for the
dashboard to stop saying "running". The listeners go when the session closes (or is
garbage collected).

The first anomaly (a NaN activation, a ``None`` input) is shown once as a styled
finding in the notebook instead of a red stderr warning; a thread other than the
kernel's main one (a dashboard refresh) leaves it for the end of the running cell.

Outside a kernel (a script, the test suite) nothing of this runs: the state stays
``running`` until ``close()``, and an anomaly is a Python warning.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from ..._env import in_kernel
from ...analysis.training.events import event_finding
from ...findings import CODES, Finding, findings_html

IDLE_AFTER = 30.0  # seconds without a step before a session reads "idle" (at least)
IDLE_STEPS = 20  # ... or this many typical gaps between steps, if longer


def kernel_shell() -> Any:
    """The IPython shell of the running Jupyter kernel, or None (a script, a terminal)."""
    if not in_kernel():
        return None
    from IPython import get_ipython

    return get_ipython()


class Lifecycle:
    """The notebook side of a session: its stop/idle state and its anomaly notices.

    ``progress`` reads something that changes at every training step (the session's
    step counters). With ``shell=None`` (no kernel) it stays inert.
    """

    def __init__(self, session: Any, progress: Callable[[Any], Any], shell: Any = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self._ref = weakref.ref(session)
        self._progress = progress
        self.shell = shell
        self.clock, self.wall = clock, wall
        self._seen = progress(session)
        self._seen_at, self._seen_wall = clock(), wall()
        self._first_at: float | None = None
        self._changes = 0
        self._cell_start = self._seen
        self._stopped_at: Any = None  # progress when the cell that drove it ended
        self._notices: list[Any] = []  # anomaly notices waiting for the main thread
        self._lock = threading.Lock()
        if shell is not None:
            shell.events.register("pre_run_cell", self._pre_run_cell)
            shell.events.register("post_run_cell", self._post_run_cell)

    @property
    def active(self) -> bool:
        """True in a kernel, until :meth:`close`."""
        return self.shell is not None

    def close(self) -> None:
        """Stop listening to the kernel's cell events (harmless twice)."""
        if self.shell is not None and threading.current_thread() is threading.main_thread():
            self._show_notices()
        shell, self.shell = self.shell, None
        if shell is None:
            return
        for name, callback in (("pre_run_cell", self._pre_run_cell),
                               ("post_run_cell", self._post_run_cell)):
            with contextlib.suppress(ValueError):  # already gone
                shell.events.unregister(name, callback)

    # -- state ------------------------------------------------------------------------------
    def _note(self, now: Any) -> None:
        if now == self._seen:
            return
        at = self.clock()
        with self._lock:
            self._seen, self._seen_at, self._seen_wall = now, at, self.wall()
            self._changes += 1
            if self._first_at is None:
                self._first_at = at

    def idle_after(self) -> float:
        """Seconds without a step after which the session reads idle."""
        if self._first_at is None or self._changes < 2:
            return IDLE_AFTER
        gap = (self._seen_at - self._first_at) / (self._changes - 1)
        return max(IDLE_AFTER, IDLE_STEPS * gap)

    def state(self) -> str | None:
        """``"stopped (cell finished)"``, ``"idle since HH:MM"``, or None (running)."""
        session = self._ref()
        if self.shell is None or session is None:
            return None
        now = self._progress(session)
        self._note(now)
        stopped = self._stopped_at
        if stopped is not None:
            if now == stopped:
                return "stopped (cell finished)"
            self._stopped_at = None  # a step came later, from another cell: running again
        if self._changes and self.clock() - self._seen_at > self.idle_after():
            return "idle since " + time.strftime("%H:%M", time.localtime(self._seen_wall))
        return None

    # -- kernel events ----------------------------------------------------------------------
    def _pre_run_cell(self, *_: Any) -> None:
        session = self._ref()
        if session is None or session.closed:
            self.close()
            return
        self._cell_start = self._progress(session)

    def _post_run_cell(self, *_: Any) -> None:
        session = self._ref()
        if session is None or session.closed:
            self.close()
            return
        try:
            now = self._progress(session)
            self._note(now)
            self._show_notices()
            if now != self._cell_start:  # this cell drove the training, and it is over:
                self._stopped_at = now  # the status line and the static twins say so now
                session._notify_views()
        except Exception as exc:  # never an error box under the user's cell
            session._on_error("the end-of-cell update", exc)

    # -- anomaly notices --------------------------------------------------------------------
    def anomaly_notice(self, event: Any) -> bool:
        """Show ``event`` as a styled finding (now, or at the end of the running cell);
        False when there is no notebook to show it in (then the caller warns)."""
        if self.shell is None:
            return False
        with self._lock:
            self._notices.append(event)
        if threading.current_thread() is threading.main_thread():
            self._show_notices()
        return True

    def _show_notices(self) -> None:
        with self._lock:
            events, self._notices = self._notices, []
        if events:
            from IPython.display import display

            for event in events:
                display(notice_bundle(event), raw=True)


def notice_finding(event: Any) -> Finding:
    """An anomaly event as the finding the notebook shows at once."""
    finding = event_finding(event)  # worded where every verdict is: analysis/
    if finding.code not in CODES:
        finding = Finding("nonfinite-activation", finding.severity, finding.message,
                          where=finding.where, hint=finding.hint)
    return finding


def notice_bundle(event: Any) -> dict[str, str]:
    """The mime bundle of an anomaly notice: a styled finding, and plain text."""
    finding = notice_finding(event)
    head = ('<div class="vd-view vd-anomaly-notice" style="border-left:3px solid #c62828;'
            'padding:2px 8px;margin:4px 0"><b style="font-family:sans-serif;font-size:13px">'
            "vizdebug noticed an anomaly while training</b>")
    return {"text/html": head + findings_html([finding]) + "</div>",
            "text/plain": f"vizdebug: {finding}"}
