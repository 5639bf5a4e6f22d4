"""Crafted run files (issue 25): every one is read as far as is safe, refused with its
reason, or listed as one line of ``vizdebug ls``; never a hang, an allocation the file's
bytes do not back, a raw traceback, or terminal escapes printed raw. Each file is a real
run written by a real Session, then altered with sqlite3 the way an attacker would.

What could hang runs in a child process with a timeout, so this file cannot hang."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import vizdebug as vd
from vizdebug.cli import ls as cli_ls
from vizdebug.store import guard
from vizdebug.store import run as store_run

ROOT = Path(__file__).resolve().parents[1]
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
# opens a run, diagnoses it, reports it and lists it (the file and its folder), in a child
CHILD = """
import resource, sys, tempfile, os
import vizdebug as vd
from vizdebug.__main__ import main
path = sys.argv[1]
try:
    vd.open_run(path).findings()
    print("OPENED")
except vd.VizdebugError as exc:
    print("REFUSED", exc)
print("REPORT", main(["report", path, "--out", os.path.join(tempfile.mkdtemp(), "r.html")]))
print("LS-FILE", main(["ls", path]))
print("LS-DIR", main(["ls", os.path.dirname(path)]))
# this process's own peak: VmHWM belongs to the memory of the program exec'd here, while
# ru_maxrss keeps the parent's peak at fork on Linux (the test process's, ~1.7 GB late in
# the whole suite)
try:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("MAXRSS-MB", peak // 1024)
"""


def _run(path: Path, steps: int = 6) -> Path:
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    with vd.watch(model, store=path, every=1) as session:
        for _ in range(steps):
            loss = model(torch.randn(4, 3)).pow(2).mean()
            loss.backward()
            session.log(loss=loss)
    return path


def _alter(path: Path, *statements: str, params: tuple = ()) -> Path:
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.execute(sql, params if "?" in sql else ())
    conn.commit()
    conn.close()
    return path


def _set_meta(path: Path, key: str, value: object) -> Path:
    return _alter(path, "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                  params=(key, json.dumps(value)))


def _child(path: Path, timeout: float = 90) -> dict[str, str]:
    """What the child printed, by its first word (a hang fails the test, not the suite)."""
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                              text=True, cwd=ROOT, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"reading {path.name} still ran after {timeout} s") from None
    assert done.returncode == 0, done.stderr[-3000:]
    return {line.split(" ", 1)[0]: line.partition(" ")[2] for line in done.stdout.splitlines()
            if line.split(" ", 1)[0].isupper()}


def _columns(path: Path, table: str) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


@pytest.mark.skipif(sys.platform == "win32", reason="file names are bytes on POSIX only")
def test_a_run_in_a_folder_whose_name_is_not_utf8_opens_and_is_listed(tmp_path):
    folder = tmp_path / os.fsdecode(b"caf\xe9")
    path = _run(folder / "r.sqlite")
    assert vd.open_run(path).last_step == 5
    (row,) = cli_ls.list_runs(folder)
    assert row["state"] == "closed" and row["steps"] == 6
    strict = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}  # as in a UTF-8 terminal
    for command in (["ls", "-r", os.fsencode(tmp_path)], ["report", os.fsencode(path)]):
        done = subprocess.run([sys.executable, "-m", "vizdebug", *command], capture_output=True,
                              cwd=ROOT, timeout=120, env=strict)
        assert done.returncode == 0, done.stderr
    assert b"caf\\xe9/r.html" in done.stdout and (folder / "r.html").exists()
    (row,) = cli_ls.list_runs(tmp_path, recursive=True)
    assert cli_ls.table([row], tmp_path).splitlines()[1].startswith("caf\\xe9/r.sqlite  closed")


@pytest.mark.parametrize("table", ["scalars", "meta", "blobs", "samples", "system"])
def test_a_table_replaced_by_an_endless_view_is_refused_at_once(tmp_path, table):
    path = _run(tmp_path / "r.sqlite")
    columns = ", ".join(f"x AS {c}" for c in _columns(path, table))
    _alter(path, f"DROP TABLE {table}", f"CREATE VIEW {table} AS {ENDLESS} SELECT {columns} FROM c")
    start = time.monotonic()
    out = _child(path)
    assert time.monotonic() - start < 60
    assert out["REFUSED"].startswith(repr(str(path))) and f"a view {table!r}" in out["REFUSED"]
    assert out["REPORT"] == "2" and out["LS-FILE"] == out["LS-DIR"] == "0"


def test_a_trigger_or_a_virtual_table_is_refused_too(tmp_path):
    path = _alter(_run(tmp_path / "r.sqlite"),
                  "CREATE TRIGGER t AFTER INSERT ON scalars BEGIN SELECT 1; END")
    with pytest.raises(vd.VizdebugError, match="it holds a trigger 't'"):
        vd.open_run(path)
    other = _run(tmp_path / "other.sqlite")
    _alter(other, "DROP TABLE system", "CREATE VIRTUAL TABLE system USING rtree(id, a, b)")
    with pytest.raises(vd.VizdebugError, match="virtual table"):
        vd.open_run(other)


def test_another_programs_database_with_a_view_is_not_a_run(tmp_path):
    _alter(tmp_path / "app.sqlite", "CREATE TABLE t (x)", "CREATE VIEW v AS SELECT x FROM t")
    assert cli_ls.list_runs(tmp_path) == []
    with pytest.raises(vd.VizdebugError, match="is not a vizdebug run file"):
        vd.open_run(tmp_path / "app.sqlite")


def test_every_read_stops_after_a_budget_of_sqlite_steps(tmp_path):
    """The deadline itself, beside the refusal of views: an endless query on a run file's
    connection stops, and says why."""
    path = _run(tmp_path / "r.sqlite")
    code = ("import sys, sqlite3, time\nfrom pathlib import Path\n"
            "from vizdebug.store.guard import open_read, explain\n"
            "conn = open_read(Path(sys.argv[1])); t = time.monotonic()\n"
            f"try:\n    conn.execute({ENDLESS + 'SELECT count(*) FROM c'!r}).fetchone()\n"
            "except sqlite3.OperationalError as exc:\n"
            "    print(round(time.monotonic() - t, 1), explain(conn, exc))\n")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=90)
    seconds, _, why = done.stdout.partition(" ")
    assert "SQLite steps" in why and float(seconds) < 30, done.stdout + done.stderr


def test_no_value_read_is_longer_than_the_file_could_hold(tmp_path):
    """Beside the refusal of what computes values: one value is bounded by the file."""
    conn = guard.open_read(_run(tmp_path / "r.sqlite"))
    try:
        with pytest.raises(sqlite3.DataError, match="too big"):
            conn.execute("SELECT zeroblob(?)", (guard.MIN_VALUE_LIMIT + 1,)).fetchone()
    finally:
        conn.close()


def test_the_budget_stops_a_runs_reads_and_the_run_says_so(tmp_path, monkeypatch):
    path = _run(tmp_path / "r.sqlite", steps=200)
    run = vd.open_run(path)
    monkeypatch.setattr(guard, "CHECK_EVERY", 100)  # a budget that opens, then stops
    monkeypatch.setattr(guard, "BASE_STEPS", 400)   # the first read of the scalars
    monkeypatch.setattr(guard, "STEPS_PER_BYTE", 0)
    found = run.findings()
    damage = [f.message for f in found if f.code == "collector-error"]
    assert any("SQLite steps" in m for m in damage), damage


@pytest.mark.parametrize("how", ["view", "generated column"])
def test_a_blobs_table_that_computes_huge_values_allocates_nothing(tmp_path, how):
    path = _run(tmp_path / "r.sqlite")
    huge = "zeroblob(900000000)"
    if how == "view":
        rows = " UNION ALL ".join(f"SELECT '{n}', 'json', {huge}"
                                  for n in ("events", "errors", "loader", "program"))
        _alter(path, "DROP TABLE blobs", f"CREATE VIEW blobs (name, kind, data) AS {rows}")
    else:
        _alter(path, "ALTER TABLE blobs RENAME TO old",
               f"CREATE TABLE blobs (name TEXT, kind TEXT, data BLOB AS ({huge}) VIRTUAL)",
               "INSERT INTO blobs (name, kind) SELECT name, kind FROM old", "DROP TABLE old")
    out = _child(path)
    assert "REFUSED" in out and int(out["MAXRSS-MB"]) < 1500, out


HUGE = {"created": 10**400, "heartbeat": 10**400, "interval": -(10**400), "every": 10**400,
        "rank": 10**400, "param_numel": [10**400, 3]}


@pytest.mark.parametrize(("key", "value"), list(HUGE.items()), ids=list(HUGE))
def test_a_number_too_large_for_a_float_is_damage_not_a_crash(tmp_path, key, value):
    path = _set_meta(_run(tmp_path / "r.sqlite"), key, value)
    found = vd.open_run(path).findings()
    damage = " ".join(f.message for f in found if f.code == "collector-error")
    assert "unusable settings" in damage and key in damage
    (row,) = cli_ls.list_runs(tmp_path)
    assert row["state"] == "closed" and row["steps"] == 6 and row["findings"] is not None


def test_a_million_module_names_are_damage_not_a_crash(tmp_path):
    path = _run(tmp_path / "r.sqlite")
    names = [f"m{i}" for i in range(10**6)]
    _set_meta(path, "module_paths", names)
    _set_meta(path, "module_classes", ["ReLU"] * len(names))
    found = vd.open_run(path).findings()
    assert any("module_paths holds 1000000 names" in f.message for f in found)
    (row,) = cli_ls.list_runs(tmp_path)
    assert row["state"] == "closed" and row["findings"] is not None


def test_one_bad_file_is_one_line_of_the_listing(tmp_path, monkeypatch, capsys):
    from vizdebug.__main__ import main

    _run(tmp_path / "good.sqlite")
    _set_meta(_run(tmp_path / "huge.sqlite"), "created", 10**400)
    view = _run(tmp_path / "view.sqlite")
    _alter(view, "DROP TABLE scalars", f"CREATE VIEW scalars AS {ENDLESS} SELECT x AS step, "
                                       "'loss' AS name, 1.0 AS value, 0.0 AS time FROM c")
    _run(tmp_path / "boom.sqlite")
    real = store_run.Run.findings

    def findings(self):  # a defect of vizdebug's own, on one file
        if self.path.name == "boom.sqlite":
            raise RuntimeError("a defect")
        return real(self)

    monkeypatch.setattr(store_run.Run, "findings", findings)
    assert main(["ls", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line for line in lines[1:5]}
    assert set(rows) == {"good.sqlite", "huge.sqlite", "view.sqlite", "boom.sqlite"}
    assert " unreadable " in rows["view.sqlite"] and " closed " in rows["huge.sqlite"]
    assert any("boom.sqlite: vizdebug could not read it (RuntimeError: a defect)" in line
               for line in lines)


def test_ls_prints_printable_characters_only(tmp_path, capsys):
    from vizdebug.__main__ import main

    _set_meta(_run(tmp_path / "state.sqlite"), "state", "\x1b]0;pwned\x07\x1b[2J")
    _run(tmp_path / "name\x1b[2J\r.sqlite")
    crafted = _run(tmp_path / "view\x1b]0;t\x07.sqlite")
    _alter(crafted, "DROP TABLE system", "CREATE VIEW system AS SELECT 1 AS time")
    assert main(["ls", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert not any(ord(c) < 32 and c != "\n" or c == "\x7f" for c in out), repr(out)
    assert "\\x1b]0;pwned\\x07\\x1b[2J" in out and "name\\x1b[2J\\r.sqlite" in out
    assert "view\\x1b]0;t\\x07.sqlite" in out


def _long_run(path: Path) -> Path:
    """An honest run whose reads are as costly per byte as a run's get: a metric over
    ``MAX_POINTS`` (read bucketed), several short ones, sampled statistics every step."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with vd.watch(model, store=path, every=1) as session:
        for step in range(600):
            opt.zero_grad()
            loss = (model(torch.randn(4, 8)) - 1).pow(2).mean()
            loss.backward()
            opt.step()
            session.log(loss=loss, acc=step / 600, lr=0.1)
        for step in range(600, 30_600):
            session.log(step=step, loss=1.0 / step)
    return path


def test_an_honest_long_run_reads_in_a_small_share_of_its_budget(tmp_path, monkeypatch):
    path = _long_run(tmp_path / "long.sqlite")
    shares = []

    class Measured(guard.ReadBudget):
        def __call__(self) -> int:
            shares.append((self.used + guard.CHECK_EVERY) / self.steps)
            return super().__call__()

    monkeypatch.setattr(guard, "ReadBudget", Measured)
    run = vd.open_run(path)
    assert not run.findings().errors and not run.damage
    vd.report(run, tmp_path / "long.html", progress=False)
    assert shares and max(shares) < 0.1, shares  # (read it did, and well within)


def test_an_honest_run_opens_as_fast_as_without_the_guard(tmp_path, monkeypatch):
    path = _long_run(tmp_path / "long.sqlite")

    def plain(path: Path, *, timeout: float = 2.0) -> sqlite3.Connection:
        conn = sqlite3.connect(guard.ro_uri(path), uri=True, timeout=timeout)
        conn.execute("PRAGMA query_only=1")
        return conn

    def seconds(opener) -> float:
        monkeypatch.setattr(store_run, "open_read", opener)
        start = time.perf_counter()
        vd.open_run(path).findings()
        return time.perf_counter() - start

    timings = [(seconds(guard.open_read), seconds(plain)) for _ in range(5)]  # interleaved
    guarded, unguarded = (min(t) for t in zip(*timings))
    assert guarded < 1.5 * unguarded + 0.2, timings  # (a shared machine's noise allowed)
