"""Property-based tests over the public entry points that take the user's data (issue 10).

Whatever is passed to ``show_batch``, ``check_batch``, ``check_dataset``, ``watch`` /
``Session.log`` / ``Session.findings`` / ``Session.scalars`` and ``report``, the only
exceptions that may escape are :class:`VizdebugError` (a ``ValueError``) and
:class:`VizdebugTypeError` (a ``TypeError``), with a message; no call takes longer than
``LIMIT_S``. The number of generated examples is written at the end of the module's run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import vizdebug as vd
from vizdebug.errors import VizdebugError

from .input_strategies import batches, datasets, frames, log_values, params, steps

EVIL = "<img src=x onerror=alert(1)>"
LIMIT_S = 20  # one call; the slowest sound example here takes well under a second
EXAMPLES = {"count": 0, "examples": 0}  # calls made, generated examples run


SCALE = float(os.environ.get("VIZDEBUG_PROPERTY_SCALE", "1"))  # > 1 for a deeper local run


def budget(examples: int) -> settings:
    """``examples`` per test (times ``SCALE``), no deadline (the shared CI machine is noisy:
    ``time_limit`` bounds each call instead), no example database in the working tree."""
    return settings(max_examples=max(1, round(examples * SCALE)), deadline=None,
                    database=None, suppress_health_check=list(HealthCheck))

pytestmark = pytest.mark.filterwarnings("ignore")  # odd inputs may warn; only raises count


@contextlib.contextmanager
def time_limit(seconds: int):
    """Fail the example (rather than hang the suite) when a call runs past ``seconds``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(*_):
        raise TimeoutError(f"a call ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def clear(call, *args, **kwargs) -> Any:
    """``call(*args, **kwargs)``: its result, or the VizdebugError it raised; anything else
    fails the example."""
    EXAMPLES["count"] += 1
    with time_limit(LIMIT_S):
        try:
            result = call(*args, **kwargs)
        except VizdebugError as exc:
            assert len(str(exc)) > 10, f"{type(exc).__name__} without a message"
            event(f"{getattr(call, '__name__', 'call')}: refused")
            return exc
    event(f"{getattr(call, '__name__', 'call')}: done")
    return result


@pytest.fixture(scope="module", autouse=True)
def _count_examples(request):
    """Say how many generated calls ran, after the run's summary (output is captured
    while tests run)."""
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    start = dict(EXAMPLES)

    def say() -> None:
        line = (f"test_properties: {EXAMPLES['examples'] - start['examples']} generated "
                f"examples ran, {EXAMPLES['count'] - start['count']} calls")
        reporter.write_line(line) if reporter is not None else print(line)

    request.config.add_cleanup(say)
    yield


@budget(250)
@given(batch=batches(), kwargs=params())
def test_show_batch_draws_or_refuses_clearly(batch, kwargs):
    EXAMPLES["examples"] += 1
    view = clear(vd.show_batch, batch, **kwargs)
    if isinstance(view, VizdebugError):
        return
    assert "vd-batch" in view.to_html()
    assert view.findings is not None and repr(view)
    clear(view.next)
    clear(view.previous)


@budget(200)
@given(batch=batches(), kwargs=params())
def test_check_batch_finds_or_refuses_clearly(batch, kwargs):
    EXAMPLES["examples"] += 1
    kwargs.pop("n", None)
    kwargs.pop("classes", None)
    found = clear(vd.check_batch, batch, **kwargs)
    if not isinstance(found, VizdebugError):
        assert found.to_html() is not None and all(f.code for f in found)


@budget(150)
@given(data=datasets(), sample=st.one_of(st.none(), st.integers(-1, 3), st.just(1000),
                                         st.sampled_from([1.5, "all", True])))
def test_check_dataset_finds_or_refuses_clearly(data, sample):
    EXAMPLES["examples"] += 1
    found = clear(vd.check_dataset, data, sample=sample)
    if not isinstance(found, VizdebugError):
        assert isinstance(found.codes, list)


@budget(80)
@given(data=datasets(), n=st.one_of(st.none(), st.integers(1, 5)))
def test_show_batch_of_datasets_and_iterables(data, n):
    EXAMPLES["examples"] += 1
    view = clear(vd.show_batch, data, n=n)
    if not isinstance(view, VizdebugError):
        clear(view.next)
        assert "vd-batch" in view.to_html()


@budget(60)
@given(frame=frames())
def test_frames_become_tables_or_clear_errors(frame):
    EXAMPLES["examples"] += 1
    view = clear(vd.show_batch, frame)
    if not isinstance(view, VizdebugError):
        assert "vd-tabular" in view.to_html()
    clear(vd.check_batch, frame)


@pytest.fixture(scope="module")
def session():
    s = vd.watch(torch.nn.Linear(2, 2))
    s.log(**{EVIL: 1.0})  # a metric name a report must escape
    yield s
    s.close()


@budget(300)
@given(values=st.dictionaries(st.text(max_size=6), log_values(), max_size=3), step=steps())
def test_log_accepts_only_what_it_can_keep(session, values, step):
    EXAMPLES["examples"] += 1
    before = session.log_store.stored_points()
    result = clear(session.log, step, **values)
    after = session.log_store.stored_points()
    if isinstance(result, VizdebugError):
        assert after == before  # a refused call logs nothing
    else:
        assert after == before + len(values)  # (far below the capacity: no thinning)
    clear(session.log_store.resolve)  # the pending chunk always resolves


@budget(25)
@given(values=st.lists(st.dictionaries(st.sampled_from(["loss", "val_loss", "acc", "lr"]),
                                       log_values(), max_size=3), max_size=30))
def test_findings_and_scalars_after_any_accepted_log(values):
    EXAMPLES["examples"] += 1
    s = vd.watch(torch.nn.Linear(2, 2))
    try:
        for v in values:
            clear(s.log, **v)
        assert not isinstance(clear(s.findings), Exception)
        frame = clear(s.scalars)
        assert list(frame.columns) == ["step", "name", "value", "time", "rank"]
    finally:
        s.close()


@budget(30)
@given(model=st.sampled_from(["module"] * 4 + [None, 3, "model", object()]),
       every=st.one_of(st.just("auto"), st.integers(1, 5), st.integers(-1, 5),
                       st.sampled_from(["x", 1.5, None])),
       on_anomaly=st.sampled_from(["warn", "ignore"] * 3 + ["raise", "explode", None, 3]),
       loader=st.one_of(st.none(), st.none(), st.sampled_from([[1, 2], "loader", 3])))
def test_watch_attaches_or_refuses_clearly(model, every, on_anomaly, loader):
    EXAMPLES["examples"] += 1
    module = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    s = clear(vd.watch, module if model == "module" else model, every=every,
              on_anomaly=on_anomaly, loader=loader)
    if isinstance(s, VizdebugError):
        return
    try:
        with contextlib.suppress(Exception):  # the model's own errors (none expected) propagate
            module(torch.rand(4, 2)).sum().backward()
        clear(s.log, loss=1.0)
        clear(s.findings)
    finally:
        s.close()


@budget(40)
@given(batches=st.lists(batches(), min_size=1, max_size=4), every=st.integers(1, 3))
def test_a_watched_loader_of_anything_never_breaks_the_loop(batches, every):
    """The loader tap describes whatever the loop's loader yields; its failures are
    collector errors (findings), never exceptions in the user's ``for`` loop."""
    EXAMPLES["examples"] += 1
    loader = torch.utils.data.DataLoader(_Items(batches), batch_size=None, collate_fn=_as_is)
    s = vd.watch(torch.nn.Linear(2, 2), loader=loader, every=every)
    try:
        with time_limit(LIMIT_S):
            seen = [b for b in loader]  # raises nothing: this is the user's loop
            s.log(loss=1.0)
        assert len(seen) == len(batches)
        clear(s.findings)
        clear(vd.show_batch, s.captured_batches()) if s.captured_batches() else None
    finally:
        s.close()


def _as_is(batch: Any) -> Any:
    return batch  # torch's default_convert refuses some dtypes (longdouble) on its own


class _Items(torch.utils.data.Dataset):
    def __init__(self, items: list) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> Any:
        return self.items[i]


_OUT = Path(tempfile.mkdtemp(prefix="vd-properties-"))
_VIEW = vd.show_batch(np.random.default_rng(0).random((4, 1, 8, 8)))


@budget(60)
@given(part=st.sampled_from(["view", "findings", "list", "junk", "empty", "session"]),
       path=st.one_of(st.text(max_size=8).map(lambda t: str(_OUT / f"{t}.html")),
                      st.from_regex(r"[a-z]{1,6}", fullmatch=True).map(lambda t: _OUT / f"{t}.html"),
                      st.sampled_from([None, 3, bytes(_OUT / "x.html"), str(_OUT / "x.txt"), str(_OUT),
                                       str(_OUT / "d/e.htm"),
                                       _OUT / "p.html"])),
       title=st.one_of(st.none(), st.text(max_size=12), st.sampled_from([3, b"t", ["t"]])))
def test_report_writes_or_refuses_clearly(session, part, path, title):
    EXAMPLES["examples"] += 1
    what = {"view": _VIEW, "findings": vd.check_batch(np.zeros((4, 1, 8, 8))),
            "list": [_VIEW, vd.check_batch(np.zeros((4, 1, 8, 8)))], "junk": object(),
            "empty": [], "session": [session, session.findings()]}[part]
    out = clear(vd.report, what, path, title=title)
    if not isinstance(out, VizdebugError):
        text = out.read_text(encoding="utf-8")
        assert text.startswith("<!DOCTYPE html>") and EVIL not in text
        if isinstance(title, str) and "<" in title:
            assert title not in text  # escaped
