"""The ``vizdebug`` command line (``python -m vizdebug``): ``demo``, ``report`` and ``ls``.

The help it prints is :data:`DESCRIPTION` and :data:`EXAMPLES`, plain text for a terminal
(this docstring is for the source, not the user).
"""

from __future__ import annotations

import argparse
import sys

from .cli import compare as cli_compare
from .cli import ls as cli_ls

DESCRIPTION = "Visual debugging for PyTorch training: look at stored runs from a terminal."
EXAMPLES = """\
examples:
  vizdebug ls runs/                 list the runs in runs/ (state, steps, size, findings)
  vizdebug report runs/exp1.sqlite  write runs/exp1.html, a report that works offline
  vizdebug compare runs/ --group-by lr
                                    write runs/compare.html: the runs' curves overlaid,
                                    grouped by their config's lr, and their findings
  vizdebug demo                     train a small CNN on digits and write its report

A run file is written by vd.watch(model, store="runs/exp1.sqlite").
"vizdebug COMMAND --help" tells more about each command."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vizdebug", description=DESCRIPTION, epilog=EXAMPLES,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                title="commands")
    demo = sub.add_parser("demo", help="train a small CNN on digits with vizdebug attached "
                                       "and write an HTML report")
    demo.add_argument("--out", default="vizdebug-demo-report.html", help="report path")
    demo.add_argument("--epochs", type=int, default=5)
    rep = sub.add_parser("report", help="write an HTML report of a stored run")
    rep.add_argument("run", help="run file (or folder: its newest run)")
    rep.add_argument("--out", default=None, help="report path (default: RUN with .html)")
    cli_ls.add_parser(sub)
    cli_compare.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "ls":
        return cli_ls.main(args)
    if args.command == "compare":
        return cli_compare.main(args)
    if args.command == "demo":
        from .demo import run_demo
        from .errors import VizdebugError

        try:
            run_demo(args.out, epochs=args.epochs)
        except VizdebugError as exc:  # e.g. no torch: the message says what to install
            print(f"vizdebug demo: {cli_ls.printable(str(exc))}", file=sys.stderr)
            return 2
    elif args.command == "report":
        from . import open_run, report
        from .errors import VizdebugError

        try:
            run = open_run(args.run)
        except VizdebugError as exc:
            print(f"vizdebug report: {cli_ls.printable(str(exc))}", file=sys.stderr)
            return 2
        out = args.out or str(run.path.with_suffix(".html"))
        written = report(run, out, title=f"vizdebug run {run.path.name}")
        # (what the file holds and its name, printable: no escape reaches the terminal)
        print(cli_ls.printable(f"{run!r}") + "\nreport written to " + cli_ls.printable(str(written)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
