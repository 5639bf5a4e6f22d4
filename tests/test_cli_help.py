"""The command line says what it does in plain words (issue 22): ``vizdebug --help`` is a
short usage text with the commands and examples, and ``vizdebug ls`` counts a run's steps
as the dashboard and the report of the same run do."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import torch

import vizdebug as vd
from vizdebug.cli import ls as cli_ls

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vizdebug", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_help_is_a_short_plain_usage_text_with_the_commands_and_examples():
    done = _cli("--help")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert not re.search(r"``|:class:|:func:|:data:|\*\*", text), text  # no RST markup
    lines = text.splitlines()
    assert len(lines) <= 30 and max(len(line) for line in lines) <= 100, text
    assert lines[0].startswith("usage: vizdebug")
    for command in ("demo", "report", "ls"):
        assert re.search(rf"^\s+{command}\s+\w", text, re.M), command  # listed with its help
    assert "examples:" in text and re.search(r"^\s+vizdebug ls \S", text, re.M)


def test_no_command_says_what_is_missing():
    done = _cli()
    assert done.returncode == 2 and "required" in done.stderr and "COMMAND" in done.stderr


def test_ls_counts_the_steps_the_dashboard_and_the_report_show(tmp_path, capsys):
    from vizdebug.__main__ import main

    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    path = tmp_path / "r.sqlite"
    with vd.watch(model, store=path, every=1) as session:
        for _ in range(115):
            opt.zero_grad()
            loss = model(torch.randn(4, 3)).pow(2).mean()
            loss.backward()
            opt.step()
            session.log(loss=loss)
        live = re.search(r"step (\d+) ·", session.dashboard().to_html()).group(1)
    run = vd.open_run(path)
    page = vd.report(run, tmp_path / "r.html", progress=False).read_text(encoding="utf-8")
    reported = re.search(r"step (\d+) ·", page).group(1)
    assert main(["ls", str(tmp_path)]) == 0
    head, row = capsys.readouterr().out.splitlines()[:2]
    assert head.split()[:3] == ["RUN", "STATE", "STEPS"]
    assert row.split()[2] == live == reported == "115"  # (no column here holds a space)
    (json_row,) = cli_ls.list_runs(tmp_path)
    assert json_row["steps"] == 115 and json_row["last_step"] == 114


def test_the_demo_says_what_is_missing_instead_of_a_traceback(monkeypatch, capsys):
    """Without torch the demo cannot train: one line naming the extra, exit status 2."""
    from vizdebug import __main__, demo
    from vizdebug.errors import VizdebugError

    def no_torch(*_, **__):
        raise VizdebugError('the demo needs torch: pip install "vizdebug[torch]"')

    monkeypatch.setattr(demo, "run_demo", no_torch)
    assert __main__.main(["demo"]) == 2
    assert 'pip install "vizdebug[torch]"' in capsys.readouterr().err
