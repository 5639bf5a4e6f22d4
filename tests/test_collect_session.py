"""Session: scalars(), findings(), context manager, system sampler, report, rank."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
import torch

import vizdebug as vd
from vizdebug.collect.taps.system import SystemSampler, rss_mb
from vizdebug.errors import VizdebugError


def test_scalars_is_a_long_frame_with_rank():
    model = torch.nn.Linear(2, 1)
    with vd.watch(model) as session:
        session.log(loss=torch.tensor(1.0))
        session.log(loss=0.5, acc=0.7)
        session.log(val_loss=0.6)
    df = session.scalars()
    assert list(df.columns) == ["step", "name", "value", "time", "rank"]
    assert df[df.name == "loss"].value.tolist() == [1.0, 0.5]
    assert df[df.name == "val_loss"].step.tolist() == [1]
    assert (df["rank"] == 0).all()
    assert df.time.is_monotonic_increasing


def test_empty_scalars_has_the_columns():
    with vd.watch(torch.nn.Linear(2, 1)) as session:
        pass
    df = session.scalars()
    assert df.empty and list(df.columns) == ["step", "name", "value", "time", "rank"]
    assert isinstance(df, pd.DataFrame)


def test_log_errors_are_clear_and_nan_is_kept():
    session = vd.watch(torch.nn.Linear(2, 1))
    with pytest.raises(VizdebugError, match="log\\(loss=...\\).*got str"):
        session.log(loss="abc")
    session.log(loss=float("nan"))
    assert np.isnan(session.scalars().value.iloc[0])
    assert "nonfinite-loss" in session.findings().codes
    session.close()


def test_context_manager_marks_failure_and_lets_the_error_through():
    model = torch.nn.Linear(2, 1)
    with pytest.raises(KeyError), vd.watch(model) as session:
        raise KeyError("boom")
    assert session.closed and "KeyError" in session.failed


def test_system_sampler_reads_memory_and_cpu():
    sampler = SystemSampler(interval=0.02).start()
    deadline = time.time() + 5
    while len(sampler.samples) < 3 and time.time() < deadline:
        time.sleep(0.02)
    sampler.stop()
    sampler.stop()
    arr = sampler.array()
    assert arr.shape[0] >= 3 and (arr[:, 2] > 10).all()
    assert np.isfinite(arr[1:, 1]).all()
    assert rss_mb() > 10


def test_report_includes_the_static_dashboard(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    with vd.watch(model, every=1) as session:
        for _ in range(5):
            loss = model(torch.randn(8, 3)).pow(2).mean()
            loss.backward()
            session.log(**{"loss": loss, "<b>evil</b>": 1.0})
    path = vd.report(session, tmp_path / "r.html")
    text = path.read_text()
    assert "Training dashboard" in text and "vdDrawStatic(" in text  # the SVG charts
    assert "<b>evil</b>" not in text.replace("\\u003cb\\u003eevil", "")
    assert "Plotly.newPlot" not in text and len(text) < 300_000  # no 4.8 MB plotly.js


def test_repr_says_what_is_watched():
    session = vd.watch(torch.nn.Linear(2, 1), every=7)
    assert "every=7" in repr(session) and "watching" in repr(session)
    session.close()
    assert "closed" in repr(session)


def test_findings_while_training_runs_in_a_background_thread():
    """The README's set-up: a notebook asks for findings while another thread trains.
    Sealing the step in progress from the notebook's thread raced with its hooks
    ('need at least one array to concatenate', collector errors)."""
    import threading
    import warnings

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), 0.01)
    session = vd.watch(model, every=1)
    done = threading.Event()

    def train():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(400):
                loss = torch.nn.functional.cross_entropy(model(torch.randn(32, 20)),
                                                         torch.randint(0, 4, (32,)))
                opt.zero_grad()
                loss.backward()
                opt.step()
                session.log(loss=loss)
        done.set()

    worker = threading.Thread(target=train)
    worker.start()
    polls = 0
    while not done.is_set():
        session.findings()
        polls += 1
    worker.join()
    assert polls > 0 and session.collector_errors() == []
    assert len(session.records().act_steps) == 400  # the last steps too, once it ended
    session.close()
