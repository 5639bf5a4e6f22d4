"""Another process opens a run while its writer is starting (issue 20).

``vd.watch(model, store=path)`` claims the file (an empty file under the writer's lock)
before it creates the tables; ``open_run`` in that window once raised "not a vizdebug run
file". A real child process whose writer is held in that window for 0.6 s shows it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import vizdebug as vd

CHILD = textwrap.dedent("""
    import sys, time, torch
    import vizdebug as vd
    from vizdebug.store import writer
    original = writer.RunWriter._open
    def slow_open(self, start):  # the file is claimed (empty, locked): no tables yet
        time.sleep(0.6)
        original(self, start)
    writer.RunWriter._open = slow_open
    with vd.watch(torch.nn.Linear(3, 1), store=sys.argv[1]) as session:
        for step in range(3):
            session.log(loss=float(step))
        time.sleep(1.0)
""")


def test_open_run_while_the_writer_creates_its_tables(tmp_path: Path) -> None:
    script, path = tmp_path / "child.py", tmp_path / "job.rank1.sqlite"
    script.write_text(CHILD)
    env = {**os.environ, "PYTHONPATH": str(Path(vd.__file__).parents[1])}
    child = subprocess.Popen([sys.executable, str(script), str(path)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.005)
        assert path.exists() and path.stat().st_size == 0  # in the window
        run = vd.open_run(path)
        assert run.state in ("running", "closed")
        assert set(run.scalars()["name"]) <= {"loss"}
    finally:
        assert child.wait(timeout=60) == 0
    assert vd.open_run(path).scalars()["value"].tolist() == [0.0, 1.0, 2.0]


def test_an_empty_file_nobody_writes_is_still_not_a_run(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    path.touch()
    start = time.monotonic()
    try:
        vd.open_run(path)
    except vd.VizdebugError as exc:
        assert "not a vizdebug run file" in str(exc)
    else:
        raise AssertionError("an empty file opened as a run")
    assert time.monotonic() - start < 1.0  # no wait: no writer holds it
