"""Progress on long work: silent when short, a line (or tqdm) when slow, and Ctrl-C that
stops cleanly (a short message, no partial file, no thread left)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest

import vizdebug as vd
from vizdebug import progress as progress_mod


class Items:
    """A dataset of small images; ``slow`` seconds per item; item ``stop`` is Ctrl-C."""

    def __init__(self, n: int, slow: float = 0.0, stop: int | None = None) -> None:
        self.n, self.slow, self.stop = n, slow, stop

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        if i == self.stop:
            raise KeyboardInterrupt
        time.sleep(self.slow)
        return np.random.default_rng(i).random((1, 8, 8)).astype(np.float32), i % 3


_EARLIER: set[threading.Thread] = set()


@pytest.fixture(autouse=True)
def _earlier_threads():
    """Threads alive before the test (another library's tqdm bar in an earlier test of the
    same process can leave tqdm's monitor running): not this test's to answer for."""
    _EARLIER.clear()
    _EARLIER.update(threading.enumerate())
    yield


def _ours() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t not in _EARLIER and
            (t.name == "vizdebug-progress" or type(t).__name__ == "TMonitor")]


@pytest.fixture
def shown(monkeypatch):
    """The line is drawn into captured stderr (not a terminal), after 0.2 s."""
    monkeypatch.setenv("VIZDEBUG_PROGRESS", "1")
    monkeypatch.setattr(progress_mod, "DELAY", 0.2)
    monkeypatch.setattr(progress_mod, "LINE_EVERY", 0.05)


def test_slow_work_shows_progress_and_fast_work_is_silent(shown, capsys):
    assert vd.check_dataset(Items(40, slow=0.02)).at_least("warning") == []
    err = capsys.readouterr().err
    assert "check_dataset: " in err and " of 40 items (" in err and "s left" in err
    assert err.endswith("\r")  # the line is erased when the work is done
    vd.check_dataset(Items(40))
    vd.check_dataset(Items(40, slow=0.02), progress=False)
    assert capsys.readouterr().err == ""


def test_drift_over_parquet_shows_rows_read(shown, capsys, tmp_path, monkeypatch):
    from vizdebug.analysis.drift import streaming

    monkeypatch.setattr(progress_mod, "DELAY", 0.0)
    monkeypatch.setattr(streaming, "BATCH_ROWS", 250)
    rng = np.random.default_rng(0)
    for name, shift in (("ref", 0.0), ("cur", 0.5)):
        pd.DataFrame({"x": rng.normal(shift, 1, 2000), "c": rng.choice(list("ab"), 2000)}
                     ).to_parquet(tmp_path / f"{name}.parquet")
    view = vd.compare_distributions(tmp_path / "ref.parquet", tmp_path / "cur.parquet")
    assert view.drifted == ["x"]
    err = capsys.readouterr().err
    assert "drift over Parquet: " in err and " of 8,000 rows" in err


def test_ctrl_c_inside_check_dataset_stops_with_a_short_message(shown, capsys, monkeypatch):
    monkeypatch.setattr(progress_mod, "DELAY", 0.0)
    before = threading.active_count()
    with pytest.raises(KeyboardInterrupt, match="check_dataset interrupted after 5 of 20 items"):
        vd.check_dataset(Items(20, stop=5))
    assert capsys.readouterr().err.endswith("check_dataset: interrupted after 5 of 20 items\n")
    assert threading.active_count() == before and _ours() == []


class Part:
    """A report part whose HTML takes a while, or is interrupted."""

    title = "a slow part"

    def __init__(self, slow: float = 0.0, stop: bool = False) -> None:
        self.slow, self.stop = slow, stop

    def to_html(self) -> str:
        time.sleep(self.slow)
        if self.stop:
            raise KeyboardInterrupt
        return "<p>part</p>"


def test_ctrl_c_in_a_report_leaves_no_file_and_no_thread(shown, capsys, tmp_path, monkeypatch):
    out = tmp_path / "r.html"
    vd.report([Part(slow=0.5)], out)  # one long step: the ticker shows its time and stage
    err = capsys.readouterr().err
    assert "report: 0 of 1 parts" in err and "a slow part" in err and _ours() == []
    out.unlink()
    with pytest.raises(KeyboardInterrupt, match="report interrupted after 1 of 2 parts"):
        vd.report([Part(), Part(stop=True)], out)
    assert list(tmp_path.iterdir()) == [] and _ours() == []
    out.write_text("the earlier report")

    def cut(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(progress_mod.os, "replace", cut)  # Ctrl-C while the file is written
    with pytest.raises(KeyboardInterrupt):
        vd.report([Part()], out)
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]
    assert out.read_text() == "the earlier report"


def test_in_a_notebook_tqdm_draws_and_leaves_no_monitor_thread(monkeypatch, capsys):
    pytest.importorskip("tqdm")
    monkeypatch.delenv("VIZDEBUG_PROGRESS", raising=False)
    monkeypatch.setattr(progress_mod, "DELAY", 0.0)
    monkeypatch.setattr(progress_mod, "in_kernel", lambda: True)
    with progress_mod.Progress("counting", total=3, unit="steps") as bar:
        for _ in range(3):
            bar.update()
            assert bar._bar is not None
    assert "counting" in capsys.readouterr().err and _ours() == []
    monkeypatch.setenv("VIZDEBUG_PROGRESS", "0")
    with progress_mod.Progress("counting", total=3) as bar:
        bar.update(3)
    assert bar._bar is None and capsys.readouterr().err == ""
