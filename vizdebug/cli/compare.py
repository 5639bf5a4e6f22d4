"""``vizdebug compare DIR [--metric M] [--group-by KEY] [--baseline RUN] [--out FILE]``:
the runs of a folder compared (curves overlaid or grouped, the runs table, findings
against the baseline), written as one standalone HTML report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    """The ``compare`` sub-command's arguments."""
    cmp = sub.add_parser("compare", help="compare the stored runs of a folder in one HTML report")
    cmp.add_argument("runs", nargs="+", help="a folder of runs, or run files")
    cmp.add_argument("--metric", default=None, help="metric to draw and rank by (default: loss)")
    cmp.add_argument("--group-by", default=None, metavar="KEY",
                     help="a config key: mean and min-max band per value (e.g. seeds of an lr)")
    cmp.add_argument("--baseline", default=None, metavar="RUN",
                     help="a run's name: the others' findings are diffed against it")
    cmp.add_argument("--filter", default="", help="e.g. 'lr=0.1 state=closed'")
    cmp.add_argument("--out", default=None,
                     help="report path (default: compare.html in the first folder)")


def main(args: argparse.Namespace) -> int:
    """Write the report; 2 (and the reason on stderr) when the runs cannot be compared."""
    from ..errors import VizdebugError
    from ..report import report
    from ..views.compare import compare_runs
    from .ls import printable

    try:
        view = compare_runs(args.runs, args.metric, group_by=args.group_by,
                            baseline=args.baseline, filter=args.filter)
    except VizdebugError as exc:
        print(f"vizdebug compare: {printable(str(exc))}", file=sys.stderr)
        return 2
    first = Path(args.runs[0])
    out = args.out or str((first if first.is_dir() else first.parent) / "compare.html")
    written = report(view, out, title=f"vizdebug: {len(view.entries)} runs compared")
    print(printable(repr(view)))
    print(printable(f"report written to {written}"))
    return 0
