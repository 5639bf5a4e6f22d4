"""Drift benchmark: vizdebug vs a plain scipy loop vs Evidently 0.7, same data, one run.

    python benchmarks/bench_drift.py                    # 10k / 100k / 1M rows x 20 columns
    python benchmarks/bench_drift.py --sizes 10000 100000 --no-evidently
    python benchmarks/bench_drift.py --wide 10000          # 200 rows x 10,000 columns: the page
    python benchmarks/bench_drift.py --dask 10000000       # Dask LocalCluster vs the Parquet stream

Reference and current each have ``n`` rows and 20 numeric columns; 6 columns drift by
different amounts (one by only 0.02 sigma: significant at 1M rows, but not drift). The data
is written once per size to Parquet; Evidently (which does not import beside pandas 3) runs
in its own virtual environment, ``benchmarks/.venv-evidently`` (created on first use with
``pandas<3`` and ``evidently==0.7.23``), in a subprocess that times only ``Report.run``.

The scipy loop computes per column what vizdebug computes - ``ks_2samp`` and
``wasserstein_distance`` / reference std - then the same rule (Holm-corrected KS p < 0.05
and normed Wasserstein >= 0.1), so the verdicts must agree exactly.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-evidently"
SHIFTS = {"f00": 0.5, "f01": 0.25, "f02": 0.12, "f03": 0.02}  # in sigma
SCALES = {"f04": 1.5}
MIXES = {"f05": 0.2}  # a fifth of the rows from another mode

EVIDENTLY_SCRIPT = r"""
import json, sys, time
import pandas as pd
from evidently import Report
from evidently.presets import DataDriftPreset
ref = pd.read_parquet(sys.argv[1]); cur = pd.read_parquet(sys.argv[2])
t = time.perf_counter()
snap = Report([DataDriftPreset()]).run(current_data=cur, reference_data=ref)
elapsed = time.perf_counter() - t
out = {}
for m in snap.dict()["metrics"]:
    cfg = m["config"]
    if cfg.get("type", "").endswith("ValueDrift"):
        value, thr = m["value"], cfg["threshold"]
        is_p = "p_value" in cfg["method"].lower() or "test" in cfg["method"].lower()
        out[cfg["column"]] = {"method": cfg["method"], "value": value,
                              "drifted": bool(value < thr if is_p else value >= thr)}
print(json.dumps({"seconds": elapsed, "columns": out}))
"""


def make_data(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    ref, cur = {}, {}
    for j in range(20):
        name = f"f{j:02d}"
        draw = (lambda size: rng.lognormal(0, 0.5, size)) if j % 3 == 2 else (lambda size: rng.normal(10, 2, size))
        ref[name], x = draw(n), draw(n)
        sd = np.std(ref[name])
        x = x + SHIFTS.get(name, 0.0) * sd
        if name in SCALES:
            x = np.mean(x) + (x - np.mean(x)) * SCALES[name]
        if name in MIXES:
            x = np.where(rng.random(n) < MIXES[name], x + 3 * sd, x)
        cur[name] = x
    return pd.DataFrame(ref), pd.DataFrame(cur)


def run_vizdebug(ref: pd.DataFrame, cur: pd.DataFrame) -> tuple[float, dict, float]:
    from vizdebug import compare_distributions

    compare_distributions(ref.iloc[:100], cur.iloc[:100])  # imports and first-call costs
    t = time.perf_counter()
    view = compare_distributions(ref, cur)
    elapsed = time.perf_counter() - t
    tracemalloc.start()  # a second run for memory: tracing slows the first one down
    compare_distributions(ref, cur)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    verdicts = dict(zip(view.table.feature, view.table.drifted.astype(bool)))
    return elapsed, verdicts, peak / (ref.memory_usage().sum() + cur.memory_usage().sum())


def run_stream(ref_path: Path, cur_path: Path) -> tuple[float, dict]:
    from vizdebug import compare_distributions

    t = time.perf_counter()
    view = compare_distributions(ref_path, cur_path)
    return time.perf_counter() - t, dict(zip(view.table.feature, view.table.drifted.astype(bool)))


def run_scipy(ref: pd.DataFrame, cur: pd.DataFrame, with_wasserstein: bool = True) -> tuple[float, dict]:
    from scipy import stats

    from vizdebug.analysis.drift.stats import adjust_pvalues

    stats.ks_2samp(ref.iloc[:100, 0], cur.iloc[:100, 0])
    stats.wasserstein_distance(ref.iloc[:100, 0], cur.iloc[:100, 0])
    t = time.perf_counter()
    p, effect = [], []
    for c in ref.columns:
        a, b = ref[c].to_numpy(), cur[c].to_numpy()
        p.append(stats.ks_2samp(a, b).pvalue)
        if with_wasserstein:
            effect.append(stats.wasserstein_distance(a, b) / np.std(a))
    elapsed = time.perf_counter() - t
    if not with_wasserstein:
        return elapsed, {}
    adj = adjust_pvalues(np.array(p), "holm")
    return elapsed, {c: bool(q < 0.05 and e >= 0.1) for c, q, e in zip(ref.columns, adj, effect)}


def ensure_venv() -> Path:
    py = VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "pandas<3", "evidently==0.7.23", "pyarrow"], check=True)
    return py


def run_evidently(ref_path: Path, cur_path: Path) -> tuple[float, dict]:
    out = subprocess.run([str(ensure_venv()), "-c", EVIDENTLY_SCRIPT, str(ref_path), str(cur_path)],
                         check=True, capture_output=True, text=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return res["seconds"], {c: v["drifted"] for c, v in res["columns"].items()}


def bench(n: int, tmp: Path, evidently: bool) -> dict:
    ref, cur = make_data(n)
    ref_path, cur_path = tmp / f"ref_{n}.parquet", tmp / f"cur_{n}.parquet"
    ref.to_parquet(ref_path)
    cur.to_parquet(cur_path)
    row: dict = {"rows": n}
    row["vizdebug_s"], ours, row["vizdebug_peak_x_data"] = run_vizdebug(ref, cur)
    row["stream_s"], streamed = run_stream(ref_path, cur_path)
    row["scipy_ks_s"], _ = run_scipy(ref, cur, with_wasserstein=False)
    row["scipy_ks_w_s"], scipy_v = run_scipy(ref, cur)
    row["drifted"] = sorted(c for c, v in ours.items() if v)
    row["same_as_scipy"] = ours == scipy_v
    row["stream_same"] = streamed == ours
    if evidently:
        row["evidently_s"], ev = run_evidently(ref_path, cur_path)
        row["evidently_drifted"] = sorted(c for c, v in ev.items() if v)
    print(json.dumps(row), flush=True)
    return row


def markdown(rows: list[dict]) -> str:
    lines = ["| rows (each side) x 20 cols | vizdebug | scipy KS loop | scipy KS+W loop | Evidently 0.7 | vizdebug vs scipy KS+W | vs Evidently | peak mem / data | Parquet stream | verdicts = scipy |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ev = r.get("evidently_s")
        vs_ev = f"{ev / r['vizdebug_s']:.0f}x faster" if ev else "-"
        lines.append(
            f"| {r['rows']:,} | {r['vizdebug_s']:.2f} s | {r['scipy_ks_s']:.2f} s | {r['scipy_ks_w_s']:.2f} s | "
            f"{f'{ev:.1f} s' if ev else 'not run'} | {r['scipy_ks_w_s'] / r['vizdebug_s']:.1f}x faster | "
            f"{vs_ev} | {r['vizdebug_peak_x_data']:.2f}x | "
            f"{r['stream_s']:.2f} s | {'yes' if r['same_as_scipy'] else 'NO'} |")
    return "\n".join(lines)


def bench_wide(n_cols: int, rows: int = 200) -> dict:
    """A wide table: the seconds to analyse and to render the page, and the page's size."""
    from vizdebug import compare_distributions

    rng = np.random.default_rng(0)
    names = [f"c{j}" for j in range(n_cols)]
    ref = pd.DataFrame(rng.normal(size=(rows, n_cols)), columns=names)
    cur = pd.DataFrame(rng.normal(size=(rows, n_cols)) + (np.arange(n_cols) % 200 == 0), columns=names)
    t = time.perf_counter()
    view = compare_distributions(ref, cur)
    analysed = time.perf_counter() - t
    page = view._repr_mimebundle_()["text/html"]
    row = {"columns": n_cols, "rows": rows, "analyse_s": round(analysed, 2),
           "page_s": round(time.perf_counter() - t - analysed, 2), "page_mb": round(len(page) / 1e6, 2)}
    print(json.dumps(row), flush=True)
    return row


def write_chunked(folder: Path, n: int, chunk: int = 1_000_000) -> tuple[Path, Path]:
    """``n`` rows a side as Parquet folders of ``chunk``-row files, made chunk by chunk (the
    same distributions as :func:`make_data`, with the population moments for the shifts)."""
    sd = {j: (2.0 if j % 3 != 2 else float(np.sqrt((np.e ** 0.25 - 1) * np.e ** 0.25))) for j in range(20)}
    mean = {j: (10.0 if j % 3 != 2 else float(np.e ** 0.125)) for j in range(20)}
    ref_dir, cur_dir = folder / "ref", folder / "cur"
    for d in (ref_dir, cur_dir):
        d.mkdir(exist_ok=True)
    for i, start in enumerate(range(0, n, chunk)):
        rng, m = np.random.default_rng(i), min(chunk, n - start)
        ref, cur = {}, {}
        for j in range(20):
            name = f"f{j:02d}"
            draw = rng.lognormal if j % 3 == 2 else rng.normal
            args = (0, 0.5, m) if j % 3 == 2 else (10, 2, m)
            ref[name], x = draw(*args), draw(*args) + SHIFTS.get(name, 0.0) * sd[j]
            if name in SCALES:
                x = mean[j] + (x - mean[j]) * SCALES[name]
            if name in MIXES:
                x = np.where(rng.random(m) < MIXES[name], x + 3 * sd[j], x)
            cur[name] = x
        pd.DataFrame(ref).to_parquet(ref_dir / f"part-{i:05d}.parquet")
        pd.DataFrame(cur).to_parquet(cur_dir / f"part-{i:05d}.parquet")
    return ref_dir, cur_dir


def bench_dask(n: int, repeat: int = 2) -> dict:
    """The Parquet folders streamed here against ``dd.read_parquet`` of the same folders on
    a 2-worker LocalCluster, interleaved ``repeat`` times; the tables must be equal."""
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from vizdebug import compare_distributions

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        ref_dir, cur_dir = write_chunked(Path(tmp), n)
        row: dict = {"rows": n, "columns": 20, "write_s": round(time.perf_counter() - t, 1),
                     "stream_s": [], "dask_s": [], "load_before": round(os.getloadavg()[0], 1)}
        print(f"wrote 2 x {n:,} rows in {row['write_s']} s", file=sys.stderr, flush=True)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster):
            for _ in range(repeat):
                t = time.perf_counter()
                streamed = compare_distributions(ref_dir, cur_dir, progress=False)
                row["stream_s"].append(round(time.perf_counter() - t, 2))
                print(f"Parquet stream: {row['stream_s'][-1]} s", file=sys.stderr, flush=True)
                t = time.perf_counter()
                on_dask = compare_distributions(dd.read_parquet(ref_dir), dd.read_parquet(cur_dir), progress=False)
                row["dask_s"].append(round(time.perf_counter() - t, 2))
                print(f"Dask LocalCluster: {row['dask_s'][-1]} s", file=sys.stderr, flush=True)
    a, b = streamed.table.set_index("feature"), on_dask.table.set_index("feature").loc[streamed.table.feature]
    row["same_statistics"] = bool((a.statistic == b.statistic).all() and (a.p_value == b.p_value).all()
                                  and np.allclose(a.effect_size, b.effect_size, rtol=1e-9))
    row["drifted"] = streamed.drifted
    row["load_after"] = round(os.getloadavg()[0], 1)
    row["dask_over_stream"] = [round(d / s, 2) for d, s in zip(row["dask_s"], row["stream_s"])]
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--no-evidently", action="store_true")
    parser.add_argument("--wide", type=int, default=0, help="only the wide case, with this many columns")
    parser.add_argument("--dask", type=int, default=0, help="only Dask against the Parquet stream, this many rows a side")
    parser.add_argument("--repeat", type=int, default=2, help="with --dask: interleaved runs of each")
    parser.add_argument("--out", type=Path, default=HERE.parent / "artifacts" / "bench_drift.json")
    args = parser.parse_args()
    if args.wide:
        bench_wide(args.wide)
        return
    if args.dask:
        row = bench_dask(args.dask, args.repeat)
        args.out.with_name("bench_drift_dask.json").write_text(json.dumps(row, indent=1))
        return
    with tempfile.TemporaryDirectory() as tmp:
        rows = [bench(n, Path(tmp), not args.no_evidently) for n in args.sizes]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1))
    print(markdown(rows))
    for r in rows:
        print(f"{r['rows']:>9,}: vizdebug drifted {r['drifted']}; Evidently drifted {r.get('evidently_drifted', '-')}")


if __name__ == "__main__":
    main()
