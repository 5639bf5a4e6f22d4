"""Command line: ``python -m vizdebug demo [--out report.html] [--epochs N]``."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="vizdebug", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="train a small CNN on digits with vizdebug attached "
                                       "and write an HTML report")
    demo.add_argument("--out", default="vizdebug-demo-report.html", help="report path")
    demo.add_argument("--epochs", type=int, default=5)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo

        run_demo(args.out, epochs=args.epochs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
