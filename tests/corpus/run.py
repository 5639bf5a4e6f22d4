"""Run every corpus program and print what vizdebug made of it.

    python -m tests.corpus.run               # the table, then the totals
    python -m tests.corpus.run --markdown    # the same as a Markdown table (for the README)
    python -m tests.corpus.run -k softmax    # only the entries whose name holds "softmax"
    python -m tests.corpus.run -v            # also each program's first/last loss and val values

A fault is *detected* when a warning or error has its expected code (at its expected place
when one is given), *partly* when vizdebug warned about something else (or the right code
at the wrong place), *missed* when it said nothing, *crashed* when running it raised. A
twin or a control is *clean* with no warning and no error, a *false alarm* otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
import warnings
from dataclasses import dataclass

from . import CONTROL, ENTRIES, FAULT, Entry

DETECTED, PARTLY, MISSED, CRASHED = "detected", "partly", "missed", "crashed"
CLEAN, FALSE_ALARM = "clean", "false alarm"


@dataclass
class Outcome:
    entry: Entry
    verdict: str
    said: list[str]  # "severity code [where]" for every warning and error
    seconds: float
    error: str | None = None  # the last line of the traceback, when it crashed
    metrics: str = ""  # the program's first/last loss and last validation values


def alarms(findings) -> list:
    """The findings a user is told to act on: warnings and errors."""
    return [f for f in findings if f.severity in ("warning", "error")]


def named(entry: Entry, findings) -> bool:
    """Whether a warning or error names the entry's code at its place."""
    return any(f.code == entry.code and (entry.where is None or entry.where in (f.where or ""))
               for f in alarms(findings))


def judge(entry: Entry, findings) -> str:
    loud = alarms(findings)
    if entry.kind == FAULT:
        if named(entry, findings):
            return DETECTED
        return PARTLY if loud else MISSED
    return FALSE_ALARM if loud else CLEAN


def run_entry(entry: Entry) -> Outcome:
    from . import _loop

    _loop.LAST_METRICS.clear()
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the programs' own torch warnings, as reported
            findings = entry.run()
    except Exception as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return Outcome(entry, CRASHED, [], time.perf_counter() - start, last)
    said = [f"{f.severity} {f.code}" + (f" [{f.where}]" if f.where else "")
            for f in alarms(findings)]
    metrics = " ".join(f"{k}={v:.3g}" for k, v in _loop.LAST_METRICS.items())
    return Outcome(entry, judge(entry, findings), said, time.perf_counter() - start,
                   metrics=metrics)


def totals(outcomes: list[Outcome]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for o in outcomes:
        group = "faults" if o.entry.kind == FAULT else "twins and controls"
        out.setdefault(group, {})
        out[group][o.verdict] = out[group].get(o.verdict, 0) + 1
    return out


def _expected(e: Entry) -> str:
    if e.kind != FAULT:
        return "(no warning)"
    return e.code + (f" [{e.where}]" if e.where else "")


def print_text(outcomes: list[Outcome], verbose: bool = False) -> None:
    width = max(len(o.entry.name) for o in outcomes)
    for o in outcomes:
        said = "; ".join(o.said) if o.said else (o.error or "-")
        print(f"{o.entry.name:<{width}}  {o.verdict:<11} {o.seconds:5.1f}s  "
              f"expected {_expected(o.entry)}; said: {said}")
        if verbose and o.metrics:
            print(f"{'':<{width}}  {o.metrics}")


def print_markdown(outcomes: list[Outcome]) -> None:
    print("| program | kind | expected | verdict | vizdebug said |")
    print("|---|---|---|---|---|")
    for o in outcomes:
        said = "; ".join(o.said) if o.said else (o.error or "nothing")
        said = said.replace("|", "\\|")
        print(f"| `{o.entry.name}` | {o.entry.kind} | {_expected(o.entry)} | {o.verdict} "
              f"| {said} |")


def summary(outcomes: list[Outcome]) -> str:
    t = totals(outcomes)
    faults = t.get("faults", {})
    n_faults = sum(faults.values())
    clean = t.get("twins and controls", {})
    n_clean = sum(clean.values())
    controls = sum(1 for o in outcomes if o.entry.kind == CONTROL)
    lines = [
        f"faults: {n_faults}: " + ", ".join(f"{faults.get(k, 0)} {k}"
                                            for k in (DETECTED, PARTLY, MISSED, CRASHED)),
        f"twins and controls: {n_clean} ({n_clean - controls} twins, {controls} controls): "
        + ", ".join(f"{clean.get(k, 0)} {k}" for k in (CLEAN, FALSE_ALARM, CRASHED)),
        f"time: {sum(o.seconds for o in outcomes):.1f}s",
    ]
    for verdict in (DETECTED, PARTLY, MISSED, CRASHED, FALSE_ALARM):
        names = [o.entry.name for o in outcomes if o.verdict == verdict]
        if names:
            lines.append(f"{verdict}: {', '.join(names)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.corpus.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("-k", dest="match", default="",
                        help="only names holding this (several: comma-separated)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also print each program's first/last loss and validation values")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # tiny models: one thread is faster and steadier on shared cores
    wanted = args.match.split(",")
    outcomes = [run_entry(e) for e in ENTRIES if any(w in e.name for w in wanted)]
    if not outcomes:
        print(f"no entry matches {args.match!r}")
        return 1
    if args.markdown:
        print_markdown(outcomes)
    else:
        print_text(outcomes, args.verbose)
    print()
    print(summary(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
