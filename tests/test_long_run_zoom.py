"""The dashboard's zoom, kernel side (issue 24): the message the page sends goes through
the real widget's message handler in-process and the reply is what the widget sends back
(``widget.send`` is caught: no kernel comm here). Runs are real Sessions writing real
SQLite files; the front end that sends and draws these is tested in the browser."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.store import reader as store_reader
from vizdebug.views._dashboard_zoom import answer_zoom

N = 30_000


def _log(session: vd.Session, n: int = N) -> None:
    for step in range(n):
        value = 1.0 / (step + 1)
        if step == 21_000:
            value = 50.0  # one spike
        session.log(step=step, loss=value, acc=min(1.0, step / n))
        if step % 4000 == 3999:  # keep the writer up (no drops on a loaded machine)
            session.log_store.resolve()
            if session.store is not None:
                session.store.tick()


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("zoom") / "run.sqlite"
    with vd.watch(torch.nn.Linear(2, 1), store=path) as session:
        _log(session)
    return path


def _zoom(view, **message) -> dict:
    """Send ``message`` as the page does; return what the widget sent back."""
    widget = view.widget
    sent = []
    widget.send = lambda content, buffers=None: sent.append(content)
    widget._handle_custom_msg({"kind": "zoom", "panel": "curves", **message}, [])
    assert len(sent) == 1
    return sent[0]


def test_a_zoom_into_90_percent_of_a_stored_run_answers_with_its_real_points(run_file):
    view = vd.open_run(run_file).dashboard()
    at = N * 9 // 10
    reply = _zoom(view, lo=at - 300, hi=at + 300, points=1200)
    assert reply["kind"] == "zoomed" and reply["panel"] == "curves"
    assert (reply["lo"], reply["hi"]) == (at - 300, at + 300)
    loss = next(s for s in reply["series"] if s["name"] == "loss")
    assert loss["exact"] and loss["ymin"] is None and loss["ymax"] is None
    assert loss["x"] == list(range(at - 300, at + 301))
    assert loss["y"] == pytest.approx([1.0 / (s + 1) for s in loss["x"]])
    assert {s["name"] for s in reply["series"]} == {"loss", "acc"}


def test_a_wide_zoom_is_an_envelope_that_keeps_the_spike(run_file):
    view = vd.open_run(run_file).dashboard()
    reply = _zoom(view, lo=10_000, hi=29_999, points=400)
    loss = next(s for s in reply["series"] if s["name"] == "loss")
    assert not loss["exact"] and len(loss["x"]) <= 200
    assert max(v for v in loss["ymax"] if v is not None) == 50.0
    assert all(lo <= y <= hi for lo, y, hi in zip(loss["ymin"], loss["y"], loss["ymax"]))
    assert loss["x"] == sorted(loss["x"]) and loss["x"][0] >= 10_000 and loss["x"][-1] <= 29_999


def test_reset_is_the_whole_run_at_the_charts_width(run_file):
    reply = _zoom(vd.open_run(run_file).dashboard(), reset=True, points=800)
    assert (reply["lo"], reply["hi"]) == (0, N - 1)
    loss = next(s for s in reply["series"] if s["name"] == "loss")
    assert not loss["exact"] and 100 <= len(loss["x"]) <= 400
    assert max(loss["ymax"]) == 50.0 and loss["ymax"][0] == 1.0


@pytest.mark.parametrize(("message", "words"), [
    ({"panel": "grads", "lo": 0, "hi": 10}, "no zoom from the kernel"),
    ({"lo": "a", "hi": 10}, "lo must be a step number"),
    ({"lo": 10, "hi": 2}, "before lo"),
    ({"lo": 0, "hi": float("nan")}, "hi must be a step number"),
    ({"lo": 0, "hi": 10, "points": "wide"}, "points must be"),
])
def test_a_request_it_cannot_answer_gets_words_not_a_traceback(run_file, message, words):
    reply = _zoom(vd.open_run(run_file).dashboard(), **message)
    assert reply["kind"] == "zoomed" and reply["series"] == [] and words in reply["error"]


def test_other_messages_are_not_answered(run_file):
    widget = vd.open_run(run_file).dashboard().widget
    sent = []
    widget.send = lambda content, buffers=None: sent.append(content)
    widget._handle_custom_msg({"kind": "hello"}, [])
    widget._handle_custom_msg("zoom", [])
    assert sent == []


def test_a_live_session_with_a_store_zooms_from_its_file(tmp_path):
    with vd.watch(torch.nn.Linear(2, 1), store=tmp_path / "live.sqlite") as session:
        _log(session)
        session.log_store.resolve()
        session.store.tick()  # (what the writer thread does every half second)
        view = session.dashboard()
        at = 27_000
        reply = _zoom(view, lo=at, hi=at + 99, points=500)
        loss = next(s for s in reply["series"] if s["name"] == "loss")
        assert loss["exact"] and loss["x"] == list(range(at, at + 100))
        wide = _zoom(view, reset=True, points=500)
        loss = next(s for s in wide["series"] if s["name"] == "loss")
        assert not loss["exact"] and max(loss["ymax"]) == 50.0


def test_a_live_session_without_a_store_zooms_in_what_it_holds():
    with vd.watch(torch.nn.Linear(2, 1)) as session:
        _log(session, 3000)
        view = session.dashboard()
        reply = _zoom(view, lo=100, hi=199, points=500)
        loss = next(s for s in reply["series"] if s["name"] == "loss")
        assert loss["exact"] and loss["x"] == list(range(100, 200))
        assert loss["label"] == "loss"


def test_names_are_labelled_escaped_for_the_traces(tmp_path):
    with vd.watch(torch.nn.Linear(2, 1), store=tmp_path / "esc.sqlite") as session:
        for step in range(50):
            session.log(**{"<b>loss</b>": float(step)})
    reply = answer_zoom(vd.open_run(tmp_path / "esc.sqlite"),
                        {"kind": "zoom", "panel": "curves", "reset": True})
    (series,) = reply["series"]
    assert series["name"] == "<b>loss</b>" and series["label"] == "&lt;b&gt;loss&lt;/b&gt;"


def test_a_run_with_many_stored_chunks_reads_a_bounded_spread_of_them(tmp_path, monkeypatch):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    path = tmp_path / "chunks.sqlite"
    with vd.watch(model, store=path, every=1) as session:
        for _ in range(40):
            model(torch.randn(2, 3)).pow(2).mean().backward()
            session.log(loss=1.0)
            session.store.tick()  # a chunk of sampled rows per write
    full = vd.open_run(path).records()
    monkeypatch.setattr(store_reader, "MAX_CHUNKS", 8)
    part = vd.open_run(path).records()
    assert 8 <= part.grad_steps.size < full.grad_steps.size
    assert part.grad_steps[-1] == full.grad_steps[-1]  # the newest always
    assert np.isin(part.grad_steps, full.grad_steps).all()
