"""``vizdebug ls``: real runs written by real Sessions, listed by the real command line:
one closed (with a planted fault), one held open by a live writer in another process,
one whose writer was killed (interrupted)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import torch

import vizdebug as vd
from vizdebug.cli import ls as cli_ls
from vizdebug.store.schema import is_run_file

from .digits_runs import start_store_child

ROOT = Path(__file__).resolve().parents[1]


def _ls(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vizdebug", "ls", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def _closed_run_with_a_nan(path: Path) -> None:
    model = torch.nn.Linear(3, 1)
    with vd.watch(model, store=path, every=1) as session:
        for step in range(6):
            loss = model(torch.randn(4, 3)).pow(2).mean()
            loss.backward()
            session.log(loss=loss if step < 4 else torch.tensor(float("nan")))


def _wait_for(predicate, timeout: float = 90.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def _steps(path: Path) -> int:
    if not is_run_file(path):
        return -1
    return vd.open_run(path).last_step


def _main(capsys, *args: str) -> tuple[int, str, str]:
    from vizdebug.__main__ import main

    code = main(["ls", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ls_lists_closed_running_and_interrupted_runs(tmp_path, capsys):
    live, doomed = tmp_path / "live.sqlite", tmp_path / "doomed.sqlite"
    children = [start_store_child(p, every=1, interval=0.2, pause=0.01) for p in (live, doomed)]
    try:
        (tmp_path / "sub").mkdir()
        _closed_run_with_a_nan(tmp_path / "sub" / "closed.sqlite")
        (tmp_path / ".hidden").mkdir()
        _closed_run_with_a_nan(tmp_path / ".hidden" / "skipped.sqlite")
        sqlite3.connect(tmp_path / "other.sqlite").execute("CREATE TABLE t (x)").connection.close()
        _wait_for(lambda: _steps(live) >= 5 and _steps(doomed) >= 5)
        children[1].send_signal(signal.SIGKILL)
        children[1].wait(timeout=10)
        flat = cli_ls.list_runs(tmp_path)
        deep = _ls(str(tmp_path), "-r", "--json")
        code, text, _ = _main(capsys, str(tmp_path), "-r")
    finally:
        for child in children:
            child.kill()
            child.wait(timeout=10)
    assert deep.returncode == code == 0, deep.stderr
    states = {Path(r["path"]).name: r["state"] for r in flat}
    assert states == {"live.sqlite": "running", "doomed.sqlite": "interrupted"}
    rows = {Path(r["path"]).name: r for r in json.loads(deep.stdout)}
    assert set(rows) == {"live.sqlite", "doomed.sqlite", "closed.sqlite"}
    closed = rows["closed.sqlite"]
    assert closed["state"] == "closed" and closed["last_step"] == 5
    assert closed["findings"]["error"] >= 1  # the NaN loss
    assert rows["doomed.sqlite"]["findings"]["warning"] >= 1  # run-interrupted
    assert all(r["size_bytes"] > 4096 and r["started"] for r in rows.values())
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["RUN", "STATE"]
    assert any(line.startswith("sub/closed.sqlite") and " closed " in line
               and "error" in line for line in lines)


def test_ls_messages_and_the_findings_bound(tmp_path, capsys):
    code, _, err = _main(capsys, str(tmp_path / "nope"))
    assert code == 2 and "no folder or file" in err
    code, out, _ = _main(capsys, str(tmp_path))
    assert code == 0 and "no vizdebug runs" in out and "-r" in out
    run = tmp_path / "a.sqlite"
    _closed_run_with_a_nan(run)
    (row,) = cli_ls.list_runs(tmp_path, up_to_mb=0.001)
    assert row["findings"] is None and "over --findings-up-to" in row["note"]
    (row,) = cli_ls.list_runs(run)
    assert row["findings"]["error"] >= 1
    not_a_run = tmp_path / "notes.txt"
    not_a_run.write_text("hello")
    code, _, err = _main(capsys, str(not_a_run))
    assert code == 2 and "not a vizdebug run file" in err
    code, out, _ = _main(capsys, str(tmp_path), "--json", "--no-findings")
    assert code == 0 and json.loads(out)[0]["state"] == "closed"
    assert cli_ls.human_size(1536) == "1.5 kB" and cli_ls.human_size(12) == "12 B"
