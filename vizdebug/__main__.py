"""Command line.

``python -m vizdebug demo [--out report.html] [--epochs N]``: the demo.
``python -m vizdebug report RUN [--out report.html]``: a standalone report of a stored run
(``vd.watch(model, store=RUN)``), e.g. of a job that crashed.
``python -m vizdebug ls [DIR] [-r] [--json]``: the stored runs in a folder, their state,
last step, size, start time and findings.
"""

from __future__ import annotations

import argparse
import sys

from .cli import ls as cli_ls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vizdebug", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="train a small CNN on digits with vizdebug attached "
                                       "and write an HTML report")
    demo.add_argument("--out", default="vizdebug-demo-report.html", help="report path")
    demo.add_argument("--epochs", type=int, default=5)
    rep = sub.add_parser("report", help="write an HTML report of a stored run")
    rep.add_argument("run", help="run file (or folder: its newest run)")
    rep.add_argument("--out", default=None, help="report path (default: RUN with .html)")
    cli_ls.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "ls":
        return cli_ls.main(args)
    if args.command == "demo":
        from .demo import run_demo

        run_demo(args.out, epochs=args.epochs)
    elif args.command == "report":
        from . import open_run, report
        from .errors import VizdebugError

        try:
            run = open_run(args.run)
        except VizdebugError as exc:
            print(f"vizdebug report: {exc}", file=sys.stderr)
            return 2
        out = args.out or str(run.path.with_suffix(".html"))
        print(f"{run!r}\nreport written to {report(run, out, title=f'vizdebug run {run.path.name}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
