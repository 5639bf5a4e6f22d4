"""Run every benchmark in this folder, one after another: ``python benchmarks/run_all.py``.

Each benchmark compares vizdebug side by side, in the same run, with what a user would use
instead, and prints medians and ratios. Pass names to run a subset, e.g.
``python benchmarks/run_all.py show_batch drift``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    if argv:
        scripts = [s for s in scripts if any(a in s.stem for a in argv)]
    failed = []
    for script in scripts:
        print(f"\n=== {script.name}", flush=True)
        t = time.perf_counter()
        if subprocess.run([sys.executable, str(script)], cwd=HERE.parent).returncode:
            failed.append(script.name)
        print(f"--- {script.name}: {time.perf_counter() - t:.0f} s", flush=True)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
