"""A session knows when training stopped (the cell ended, no step for a while), and shows
its first anomaly once as a finding in a notebook, as a warning in a script.

The kernel's cell events come from IPython's own EventManager, triggered as the kernel
does around each cell."""

from __future__ import annotations

import warnings

import torch
from IPython.core.events import EventManager, available_events

import vizdebug as vd
from vizdebug.collect.checks.anomaly import AnomalyEvent, AnomalyPolicy, AnomalyWarning
from vizdebug.collect.session.core import _progress
from vizdebug.collect.session.lifecycle import IDLE_AFTER, Lifecycle, notice_bundle


class Shell:
    """What a Lifecycle reads of the kernel's shell: its real event manager."""

    def __init__(self) -> None:
        self.events = EventManager(self, available_events)

    def run_cell(self, body=lambda: None) -> None:
        self.events.trigger("pre_run_cell", None)
        body()
        self.events.trigger("post_run_cell", None)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _notebook_session(shell: Shell, clock: Clock):
    model = torch.nn.Linear(2, 1)
    session = vd.watch(model, every=1)
    session.lifecycle.close()  # the test's shell stands in for the kernel's
    session.lifecycle = Lifecycle(session, _progress, shell, clock=clock, wall=lambda: 0.0)
    session.policy.notify = session.lifecycle.anomaly_notice
    return model, session


def _steps(model, session, n: int) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(n):
        opt.zero_grad()
        loss = model(torch.randn(4, 2)).pow(2).mean()
        loss.backward()
        opt.step()
        session.log(loss=loss)


def test_the_driving_cell_ending_stops_it_and_a_later_step_resumes_it():
    shell, clock = Shell(), Clock()
    model, session = _notebook_session(shell, clock)
    shell.run_cell()  # displaying the dashboard: no step, still running
    assert session.state == "running"
    before = session.version
    shell.run_cell(lambda: _steps(model, session, 5))
    assert session.state == "stopped (cell finished)"
    assert session.version != before  # views polling the version see the change
    shell.run_cell(lambda: session.findings())  # reading does not count as training
    assert session.state == "stopped (cell finished)"
    _steps(model, session, 1)  # another cell trains again
    assert session.state == "running"
    session.close()
    assert session.state == "closed"
    assert not session.lifecycle.active
    assert shell.events.callbacks["post_run_cell"] == []  # unregistered on close


def test_no_step_for_a_while_reads_idle_then_running_again():
    shell, clock = Shell(), Clock()
    model, session = _notebook_session(shell, clock)
    assert session.state == "running"
    clock.now += 10 * IDLE_AFTER
    assert session.state == "running"  # never trained: nothing to be idle from
    _steps(model, session, 3)
    assert session.state == "running"
    clock.now += IDLE_AFTER + 1
    assert session.state.startswith("idle since ")
    _steps(model, session, 1)
    assert session.state == "running"
    session.close()


def test_a_script_session_is_unchanged():
    model = torch.nn.Linear(2, 1)
    session = vd.watch(model)
    assert not session.lifecycle.active
    session.log(loss=1.0)
    assert session.state == "running"
    session.close()


def test_in_a_notebook_the_first_anomaly_is_one_styled_finding(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda data, raw=False: shown.append(data))
    shell, clock = Shell(), Clock()
    model, session = _notebook_session(shell, clock)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnomalyWarning)  # a warning would fail the test
        model(torch.full((4, 2), float("nan")))
        model(torch.full((4, 2), float("nan")))
        session.findings()
        shell.run_cell()
    assert len(shown) == 1
    assert "vd-finding vd-error" in shown[0]["text/html"]
    assert "nonfinite-activation" in shown[0]["text/plain"]
    assert "nonfinite-activation" in session.findings().codes
    session.close()


def test_in_a_script_the_anomaly_stays_a_python_warning():
    policy = AnomalyPolicy("warn")
    event = AnomalyEvent("input-none", 3, "fc", "Linear", "fc got None")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy.record(event)
        policy.record(event)
    assert [w.category for w in caught] == [AnomalyWarning]


def test_the_notice_escapes_what_it_shows():
    event = AnomalyEvent("input-none", 3, "<b>fc</b>", "Linear", "got <script>x</script>")
    html = notice_bundle(event)["text/html"]
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;b&gt;fc" in html


def test_the_views_are_redrawn_when_the_training_cell_ends_and_only_then():
    class View:  # what the session asks of a live view
        def __init__(self):
            self.forced = 0

        def refresh(self, force=False):
            self.forced += bool(force)
            return force

        def due(self):
            return 0.0

    shell, clock = Shell(), Clock()
    model, session = _notebook_session(shell, clock)
    view = View()
    session.add_view(view)
    shell.run_cell(lambda: _steps(model, session, 2))
    assert view.forced == 1  # the status now says stopped; the static twin is redrawn
    shell.run_cell(lambda: session.findings())
    assert view.forced == 1  # a cell that did not train changes nothing
    session.close()
    assert view.forced == 2
