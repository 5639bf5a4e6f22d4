"""The logging thread's share of the writing (store/late.py): when the writing thread is
starved of the GIL (on an idle machine, a loop whose C calls hold it), ``log()`` itself
commits once the file is ``LATE`` seconds behind, so a kill loses less than a second. Here
the writing thread never runs (its interval is an hour), which is what starvation looks
like from the file: every commit below is the logging thread's."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from vizdebug.collect.taps.scalars import ScalarLog
from vizdebug.records import RunDelta
from vizdebug.store import late
from vizdebug.store.writer import RunWriter


def _wired(path: Path) -> tuple[ScalarLog, RunWriter, list[float]]:
    log = ScalarLog()

    def take(final: bool) -> RunDelta:
        log.resolve()
        return RunDelta()

    writer = RunWriter(path, RunDelta(meta={"every": 1}), take_delta=take, interval=3600.0)
    log.sink, log.after_resolve = writer.sink, writer.help_if_late
    commits: list[float] = []
    commit = writer._commit

    def counted(*args, **kwargs):
        commit(*args, **kwargs)
        commits.append(time.monotonic())

    writer._commit = counted
    writer.start()
    return log, writer, commits


def _log_for(log: ScalarLog, seconds: float) -> float:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        log.log(loss=0.5, acc=0.25, lr=1e-3)
        time.sleep(0.001)
    return time.time()


def test_a_starved_writer_leaves_no_gap_longer_than_late_between_commits(tmp_path):
    log, writer, commits = _wired(tmp_path / "late.sqlite")
    try:
        began = time.monotonic()
        stopped = _log_for(log, 3.0)
        gaps = np.diff([began, *commits])
        # each commit is due LATE s after the one before; log() asks within RESOLVE_EVERY
        assert len(commits) >= 3 and gaps.max() < late.LATE + 0.3, gaps
        newest = writer._conn.execute("SELECT max(time) FROM scalars").fetchone()[0]
        assert stopped - newest < late.LATE + 0.3
    finally:
        writer.close()


def test_a_writer_holding_its_lock_is_waited_for_briefly_then_asked_again_soon(tmp_path):
    log, writer, commits = _wired(tmp_path / "held.sqlite")
    try:
        _log_for(log, late.LATE + 0.1)  # the first help commits
        assert commits
        first = len(commits)
        released = threading.Event()

        def hold() -> None:  # a writer caught mid-write, for 0.4 s
            with writer._lock:
                released.wait(0.4)

        holder = threading.Thread(target=hold)
        holder.start()
        t = time.monotonic()
        _log_for(log, late.LATE + 0.8)
        holder.join()
        # the help waited WAIT at most per try, retried RETRY later (not a whole LATE), and
        # wrote as soon as the lock was free
        assert len(commits) > first
        assert commits[first] - t < late.LATE + 0.4 + late.WAIT + late.RETRY + 0.2
    finally:
        writer.close()


def test_a_writer_on_time_is_never_helped(tmp_path):
    log = ScalarLog()
    writer = RunWriter(tmp_path / "ontime.sqlite", RunDelta(meta={"every": 1}),
                       take_delta=lambda final: (log.resolve(), RunDelta())[1], interval=0.1)
    log.sink, log.after_resolve = writer.sink, writer.help_if_late
    by_logging_thread: list[bool] = []
    commit = writer._commit

    def counted(*args, **kwargs):
        commit(*args, **kwargs)
        by_logging_thread.append(threading.current_thread() is threading.main_thread())

    writer._commit = counted
    writer.start()
    try:
        _log_for(log, 1.5)
    finally:
        writer.close()
    # the writing thread commits every 0.1 s, well inside LATE: log() never writes
    assert len(by_logging_thread) >= 5 and not any(by_logging_thread[:-1])


def test_without_a_store_log_never_asks():
    log = ScalarLog()
    calls: list[int] = []
    log.log(loss=1.0)
    log.after_resolve = lambda: calls.append(1) or 0.0
    log.log(loss=1.0)
    assert calls == [1]
    log.after_resolve = None
    for _ in range(10):
        log.log(loss=1.0)
    assert calls == [1] and len(log._pending) == 10
