"""``vizdebug ls [DIR]``: the stored runs in a folder, with their state, steps, size on
disk, start time and findings by severity: causes only, each as severe as the worst finding
it explains (those are folded under it; ``folded`` in ``--json`` says how many).

The state is the one :class:`~vizdebug.store.run.Run` reports: ``running`` while a
writer holds the run file's lock, ``interrupted`` when the file was never closed and
no writer holds it (killed, crashed), ``closed``, ``ended`` (the script exited without
``close()``) or ``failed``. Findings are the diagnosis of the stored run (the same rules as
``vd.open_run(path).findings()``); reading a run takes up to a second per 10 MB, so runs
larger than ``--findings-up-to`` MB are listed without them unless asked.

``STEPS`` counts the steps done, as the dashboard and the report do (a run that logged
steps 0 to 114 did 115; ``last_step`` in ``--json`` is 114). One file is one line whatever
is wrong with it (``unreadable`` and the reason), and what a file holds is printed as
printable characters only: a stored string cannot move the cursor or retitle the terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..errors import VizdebugError
from ..findings import Findings
from ..progress import Progress
from ..store.many import FINDINGS_UP_TO_MB, run_files


def add_parser(sub: Any) -> None:
    ls = sub.add_parser("ls", help="list the stored runs in a folder (state, steps, size, "
                                   "start, findings)")
    ls.add_argument("dir", nargs="?", default=".", help="folder (default: the current one) "
                                                        "or one run file")
    ls.add_argument("-r", "--recursive", action="store_true", help="look in sub-folders too "
                                                                   "(hidden ones skipped)")
    ls.add_argument("--json", action="store_true", help="one JSON array on stdout")
    ls.add_argument("--findings-up-to", type=float, default=FINDINGS_UP_TO_MB, metavar="MB",
                    help="diagnose runs up to this size on disk (default %(default)g MB; "
                         "larger ones are listed without findings)")
    ls.add_argument("--no-findings", action="store_true", help="skip the diagnosis (fast)")


def disk_size(path: Path) -> int:
    """Bytes of the run file and SQLite's ``-wal``/``-shm`` beside it."""
    total = 0
    for part in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(OSError):
            total += part.stat().st_size
    return total


def _started(created: Any) -> str | None:
    if not isinstance(created, (int, float)) or isinstance(created, bool):
        return None
    try:
        return _dt.datetime.fromtimestamp(created, _dt.timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return None


def _findings(run: Any, size: int, up_to_mb: float | None) -> tuple[Findings | None, str | None]:
    """The run's findings, or None and why they were not read."""
    if up_to_mb is None:
        return None, "not asked (--no-findings)"
    if size > up_to_mb * 1e6:
        return None, (f"{size / 1e6:.0f} MB is over --findings-up-to {up_to_mb:g}; "
                      f"`vizdebug report {run.path}` reads it all")
    try:
        found = run.findings()
    except VizdebugError as exc:
        return None, str(exc)
    return found, None


def describe(path: Path, up_to_mb: float | None = FINDINGS_UP_TO_MB) -> dict[str, Any]:
    """One row of the listing (plain JSON values); an unreadable file gets state
    ``unreadable`` and the reason."""
    from ..store.run import Run

    size = disk_size(path)
    row: dict[str, Any] = {"path": str(path), "state": "unreadable", "last_step": None,
                           "steps": None, "size_bytes": size, "started": None, "rank": None,
                           "findings": None, "folded": None, "note": None}
    try:
        run = Run(path)
    except Exception as exc:  # one file, whatever is wrong with it, is one line
        row["note"] = _unreadable(exc)
        return row
    try:
        _fill(row, run, size, up_to_mb)
    except Exception as exc:  # (what was read before it stands)
        row["note"] = _unreadable(exc)
    finally:
        run._probe.close()
    return row


def _fill(row: dict[str, Any], run: Any, size: int, up_to_mb: float | None) -> None:
    row.update(state=run.state, last_step=run.last_step,
               started=_started(run.meta.get("created")), rank=run.meta.get("rank", 0))
    row["steps"] = row["last_step"] + 1 if row["last_step"] >= 0 else 0
    found, row["note"] = _findings(run, size, up_to_mb)
    if found is not None:  # causes only: a finding another explains folds under it
        row["findings"], row["folded"] = found.counts(), len(found) - len(found.causes)


def _unreadable(exc: Exception) -> str:
    """Why a file could not be listed: a vizdebug error says it; anything else is a
    defect of vizdebug's, named as one."""
    if isinstance(exc, VizdebugError):
        return str(exc)
    return f"vizdebug could not read it ({type(exc).__name__}: {str(exc)[:300]}); please report this"


def list_runs(folder: Path, *, recursive: bool = False,
              up_to_mb: float | None = FINDINGS_UP_TO_MB) -> list[dict[str, Any]]:
    """The rows of the runs under ``folder`` (or of the one run file ``folder``), oldest
    first."""
    from ..store.schema import NOT_A_RUN, run_file_problem

    paths = [folder] if folder.is_file() else list(run_files(folder, recursive))
    rows = []
    with Progress("vizdebug ls", total=len(paths), unit="files") as bar:
        for p in paths:
            problem = run_file_problem(p)
            if problem is None:
                rows.append(describe(p, up_to_mb))
            elif problem != NOT_A_RUN:  # a run file refused unread (a view in it, ...)
                rows.append(_refused(p, problem))
            bar.update()
    return sorted(rows, key=lambda r: (r["started"] or "", r["path"]))


def _refused(path: Path, problem: str) -> dict[str, Any]:
    return {"path": str(path), "state": "unreadable", "last_step": None, "steps": None,
            "size_bytes": disk_size(path), "started": None, "rank": None, "findings": None,
            "folded": None, "note": problem}


def printable(text: str) -> str:
    r"""``text`` with every character a terminal would act on (escape sequences, bells,
    carriage returns, a name's undecodable bytes) written as its Python escape.

    >>> printable("run\x1b[2J\udcff.sqlite")
    'run\\x1b[2J\\xff.sqlite'
    """
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(char: str) -> str:
    if "\udc80" <= char <= "\udcff":  # a byte of a file name that is not UTF-8
        return f"\\x{ord(char) - 0xDC00:02x}"
    return repr(char)[1:-1]


def human_size(n: int) -> str:
    """``1536`` -> ``'1.5 kB'`` (powers of 1000, as ``ls -h --si``)."""
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"  # pragma: no cover - the loop returns


def _findings_text(counts: dict | None, folded: int | None = None) -> str:
    """``'1 warning (+39 folded)'``: the causes by severity, then how many findings they
    explain (counted under them, not beside them)."""
    if counts is None:
        return "-"
    parts = [f"{n} {s}{'s' if n != 1 and s != 'info' else ''}" for s, n in counts.items() if n]
    return (", ".join(parts) or "none") + (f" (+{folded} folded)" if folded else "")


def _local(started: str | None) -> str:
    if started is None:
        return "?"
    return _dt.datetime.fromisoformat(started).astimezone().strftime("%Y-%m-%d %H:%M")


def table(rows: list[dict[str, Any]], base: Path) -> str:
    """The rows as aligned text columns; paths relative to ``base`` where they can be."""
    head = ("RUN", "STATE", "STEPS", "SIZE", "STARTED", "FINDINGS")
    lines = [head]
    for r in rows:
        steps = "-" if not r.get("steps") else str(r["steps"])
        lines.append((_name(r["path"], base), printable(str(r["state"])), steps,
                      human_size(r["size_bytes"]), _local(r["started"]),
                      _findings_text(r["findings"], r.get("folded"))))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    out = ["  ".join(c.rjust(w) if i in (2, 3) else c.ljust(w)
                     for i, (c, w) in enumerate(zip(line, widths))).rstrip() for line in lines]
    notes = [f"  {_name(r['path'], base)}: {printable(r['note'])}" for r in rows if r["note"]
             and r["note"] != "not asked (--no-findings)"]
    return "\n".join(out + (["", "notes:", *notes] if notes else []))


def _name(path: str, base: Path) -> str:
    """``path`` relative to ``base`` where it can be, printable."""
    try:
        return printable(os.path.relpath(path, base))
    except ValueError:  # another drive (Windows)
        return printable(path)


def main(args: argparse.Namespace) -> int:
    """``vizdebug ls``: 0 when listed (even none), 2 when ``DIR`` is not there."""
    folder = Path(args.dir).expanduser()
    if not folder.exists():
        print(f"vizdebug ls: no folder or file {str(folder)!r}", file=sys.stderr)
        return 2
    up_to = None if args.no_findings else args.findings_up_to
    rows = list_runs(folder, recursive=args.recursive, up_to_mb=up_to)
    if args.json:
        print(json.dumps(rows, indent=1))
    elif rows:
        print(table(rows, folder if folder.is_dir() else folder.parent))
    elif folder.is_file():
        print(f"vizdebug ls: {str(folder)!r} is not a vizdebug run file", file=sys.stderr)
        return 2
    else:
        deeper = "" if args.recursive else " (-r looks in sub-folders too)"
        print(f"no vizdebug runs (*.sqlite written by vd.watch(model, store=...)) in "
              f"{str(folder)!r}{deeper}")
    return 0
