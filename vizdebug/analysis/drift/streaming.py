"""Drift tests on data larger than memory: sketches streamed from Parquet or a cluster.

Two passes per side (:mod:`.sides`), over Parquet record batches in this process or over
the partitions of a Dask or Spark DataFrame on its workers (:mod:`.engines`). Pass 1 keeps,
per column, mergeable moments (count, missing, sum, sum of squares, min, max) and a sample
of about ``sampling.SAMPLE_ROWS`` rows chosen by their position (so every engine samples the
same rows); the pooled samples of both sides fix ``FINE_BINS`` shared quantile bins. Pass 2
counts every value into those bins (counts merge by addition) and into the view's display
bins. KS and Wasserstein are then computed on the bin grid: the KS statistic is a lower
bound of the exact one, short by at most the largest bin mass (about 1/FINE_BINS); the
table's ``test`` says ``ks (binned)``. Categorical columns (strings, dictionaries, booleans)
are counted exactly. With a time column (:class:`.windows.StreamTime`) the current side
keeps only the rows inside the window, batch by batch, and pass 2 also counts them per time
bucket for the view's slider.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ...data.parquet import arrow_kind
from ...data.tables import KINDS
from ...errors import VizdebugError
from ...progress import Progress
from . import sketches
from .engines import source_for
from .sampling import sample_below
from .sides import NumericStream, StreamSide
from .stats import (
    FeatureDrift,
    js_from_counts,
    ks_pvalue,
    no_values_note,
    psi_from_counts,
    untested,
)
from .windows import StreamTime

FINE_BINS = 4096
BATCH_ROWS = 131_072


def _columns(ref_ds: Any, cur_ds: Any, features: list[str] | None, categorical: list[str] | None,
             kinds: dict[str, str] | None, time_name: str | None) -> tuple[dict[str, str], list[str], list[str]]:
    """The compared columns with their kinds (None: nested values, not compared), and the
    names only in the reference / current."""
    for side, ds in (("reference", ref_ds), ("current", cur_ds)):
        twice = [n for n, k in Counter(ds.schema.names).items() if k > 1]
        if twice:  # (arrow keeps both; a column cannot then be asked for by its name)
            raise VizdebugError(f"the {side} data has {len(twice)} column names used more "
                                f"than once (e.g. {twice[0]!r}); give each column its own name")
    ref_cols = {f.name: arrow_kind(f.type) for f in ref_ds.schema}
    cur_cols = {f.name: arrow_kind(f.type) for f in cur_ds.schema}
    names = [n for n in features or [c for c in ref_cols if c in cur_cols] if n != time_name]
    for n in names:
        if n not in ref_cols or n not in cur_cols:
            side, there = ("reference", ref_cols) if n not in ref_cols else ("current", cur_cols)
            raise VizdebugError(f"feature {n!r} is missing from the {side} data; its columns are {list(there)[:20]}")
    if not names:
        raise VizdebugError(f"the reference and current data share no column names (reference: "
                            f"{list(ref_cols)[:10]}, current: {list(cur_cols)[:10]}); rename columns so they match")
    overrides = dict(kinds or {}) | {c: "categorical" for c in categorical or []}
    for n, k in overrides.items():
        if k not in KINDS:
            raise VizdebugError(f"kind for {n!r} must be one of {KINDS}, got {k!r}")
        if n not in names:
            raise VizdebugError(f"kind given for {n!r}, which is not a compared feature ({names[:20]})")
    cols = {n: _kind(n, overrides.get(n), ref_ds, cur_ds) for n in names}
    only_ref = [c for c in ref_cols if c not in cur_cols] if features is None else []
    only_cur = [c for c in cur_cols if c not in ref_cols and c != time_name] if features is None else []
    return cols, only_ref, only_cur


def _kind(name: str, asked: str | None, ref_ds: Any, cur_ds: Any) -> str | None:
    """A column's kind: the one asked for where the arrow types on both sides allow it."""
    types = [ds.schema.field(name).type for ds in (ref_ds, cur_ds)]
    found = [arrow_kind(t) for t in types]
    if None in found:
        return None
    if asked == "categorical":
        return asked
    if asked is None:  # sides of different kinds (float here, text there): as categories
        same = found[0] == found[1] or set(found) <= {"numeric", "boolean"}
        return ("numeric" if "numeric" in found else found[0]) if same else "categorical"
    fits = {"numeric": ("numeric", "boolean"), "datetime": ("datetime",), "boolean": ("boolean",)}
    bad = [t for t, k in zip(types, found) if k not in fits[asked]]
    if bad:
        raise VizdebugError(f"kinds={{{name!r}: {asked!r}}} but the Parquet column holds {bad[0]} "
                            f"values; convert the column, or compare it as 'categorical'")
    return asked


def _nested(name: str, ref_ds: Any) -> FeatureDrift:
    base = dict(feature=name, kind="categorical", effect_metric="jensen-shannon",
                n_ref=0, n_cur=0, missing_ref=0.0, missing_cur=0.0)
    return untested(base, f"holds nested values ({ref_ds.schema.field(name).type}): not "
                          "compared; flatten it into scalar columns to compare it")


def stream_compare(reference: Any, current: Any, *, features: list[str] | None = None,
                   categorical: list[str] | None = None, kinds: dict[str, str] | None = None,
                   clock: StreamTime | None = None, progress: bool | None = None,
                   ) -> tuple[list[FeatureDrift], list[str], list[str]]:
    """Per-feature drift of two streamed sources, never holding more than one batch here.

    Either side may be a Parquet path, arrow or pandas data (read here in record batches),
    or a Dask or Spark DataFrame (sketched per partition on its engine, :mod:`.engines`).

    ``clock`` (from :func:`.drift_time.stream_time` on the current side) keeps the current
    rows inside its window and counts them per time bucket; its column is not compared.
    Reading both sides twice shows its progress when it takes more than 2 s
    (``progress=False`` turns that off).

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> pd.DataFrame({"x": range(100)}).to_parquet(os.path.join(d, "r.parquet"))
    >>> pd.DataFrame({"x": range(50, 150)}).to_parquet(os.path.join(d, "c.parquet"))
    >>> res, _, _ = stream_compare(os.path.join(d, "r.parquet"), os.path.join(d, "c.parquet"))
    >>> res[0].test
    'ks (binned)'
    """
    ref_src, cur_src = source_for(reference, "reference"), source_for(current, "current")
    found, only_ref, only_cur = _columns(ref_src, cur_src, features, categorical, kinds, clock and clock.name)
    cols = {n: k for n, k in found.items() if k is not None}
    nested = {n: _nested(n, ref_src) for n, k in found.items() if k is None}
    n_ref, n_cur = ref_src.rows(), cur_src.rows()  # Parquet: from the metadata
    where = _engines(ref_src, cur_src)
    with Progress(f"drift over {where}", total=2 * (n_ref + n_cur), unit="rows", progress=progress) as bar:
        ref = StreamSide(None, cols, bar=bar, seed=0, below=sample_below(n_ref), batch_rows=BATCH_ROWS)
        cur = StreamSide(None, cols, clock, bar=bar, seed=1, below=sample_below(n_cur), batch_rows=BATCH_ROWS)
        ref_src.first_pass(ref)
        cur_src.first_pass(cur)
        grids = {n: _grids(ref.nums[n], cur.nums[n]) for n in ref.nums}
        categorical_results = {n: _categorical_result(n, cols[n], ref, cur) for n in ref.counts}
        ref_src.second_pass(ref, grids, {})
        cur_src.second_pass(cur, grids, {n: r.sketch for n, r in categorical_results.items()})
    for name, per in cur.bucket_counts.items():
        categorical_results[name].sketch["bucket_counts"] = per.tolist()
    results = [
        nested[n] if n in nested
        else _numeric_result(n, cols[n], ref.nums[n], cur.nums[n], grids[n]) if n in ref.nums
        else categorical_results[n]
        for n in found
    ]
    return results, only_ref, only_cur


def _engines(*sources: Any) -> str:
    """What the progress line says is read: Parquet, or the engines of the sides."""
    names = sorted({type(s).__name__.removesuffix("Source") for s in sources} - {"Local"})
    return " and ".join(names) if names else "Parquet"


def _grids(ref: NumericStream, cur: NumericStream) -> tuple[np.ndarray, np.ndarray]:
    pooled = np.sort(np.concatenate(ref.samples + cur.samples)) if ref.n + cur.n else np.zeros(1)
    inner = np.unique(pooled[np.linspace(0, len(pooled) - 1, FINE_BINS + 1).astype(np.int64)[1:-1]])
    a = np.sort(np.concatenate(ref.samples)) if ref.samples else pooled
    b = np.sort(np.concatenate(cur.samples)) if cur.samples else pooled
    lo, hi = sketches.display_range(a if len(a) else pooled, b if len(b) else pooled)
    return inner, np.linspace(lo, hi, sketches.DISPLAY_BINS + 1)


def _binned(edges: np.ndarray, c1: np.ndarray, c2: np.ndarray) -> tuple[float, float]:
    """KS on the bin edges and Wasserstein with values spread evenly inside each bin."""
    gap = np.abs(np.concatenate([[0.0], np.cumsum(c1) / c1.sum() - np.cumsum(c2) / c2.sum()]))
    return float(gap.max()), float(np.sum((gap[:-1] + gap[1:]) / 2 * np.diff(edges)))


def _numeric_result(name: str, kind: str, ref: NumericStream, cur: NumericStream, grids: tuple) -> FeatureDrift:
    inner, disp = grids
    base = dict(feature=name, kind=kind, effect_metric="normed wasserstein", n_ref=ref.n, n_cur=cur.n,
                missing_ref=ref.missing / max(ref.n + ref.missing, 1),
                missing_cur=cur.missing / max(cur.n + cur.missing, 1))
    if ref.n == 0 or cur.n == 0:
        return untested(base, no_values_note(ref.n, cur.n))
    lo, hi = min(ref.lo, cur.lo), max(ref.hi, cur.hi)
    d, w = _binned(np.concatenate([[lo], np.clip(inner, lo, hi), [hi]]), ref.fine, cur.fine)
    _, p, _ = ks_pvalue(d, ref.n, cur.n)
    scale = ref.std or cur.std
    a_q = _sample_quantiles(ref.samples)
    b_q = _sample_quantiles(cur.samples)
    sketch = {"lo": float(disp[0]), "hi": float(disp[-1]), "ref_hist": ref.display.tolist(),
              "cur_hist": cur.display.tolist(), "ref_q": a_q, "cur_q": b_q,
              "ref_mean": ref.total / ref.n, "ref_std": ref.std}
    if cur.buckets is not None:
        sketch["bucket_hist"] = cur.buckets.tolist()
    return FeatureDrift(
        test="ks (binned)", statistic=d, p_value=p, p_method="asymptotic, binned",
        effect_size=w / scale if scale > 0 else (0.0 if w == 0 else float("inf")),
        psi=psi_from_counts(*_deciles(ref.fine, cur.fine)),
        ref_summary=f"mean {ref.total / ref.n:.4g}, sd {ref.std:.3g}",
        cur_summary=f"mean {cur.total / cur.n:.4g}, sd {cur.std:.3g}", sketch=sketch, **base)


def _sample_quantiles(samples: list[np.ndarray]) -> list[float]:
    s = np.sort(np.concatenate(samples))
    return [float(v) for v in sketches.quantiles(s)]


def _deciles(c1: np.ndarray, c2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cum = np.cumsum(c1) / c1.sum()
    cuts = np.searchsorted(cum, np.arange(1, 10) / 10) + 1
    groups = np.split(np.arange(len(c1)), np.unique(np.clip(cuts, 1, len(c1) - 1)))
    return np.array([c1[g].sum() for g in groups]), np.array([c2[g].sum() for g in groups])


def _by_count(counts: Counter) -> list[str]:
    return sorted(counts, key=lambda k: (-counts[k], k))


def _categorical_result(name: str, kind: str, ref: StreamSide, cur: StreamSide) -> FeatureDrift:
    from scipy import stats

    r, c = ref.counts[name], cur.counts[name]
    cats = _by_count(r) + [k for k in _by_count(c) if k not in r]  # ties by name: any engine, one order
    rc = np.array([r.get(k, 0) for k in cats], dtype=np.int64)
    cc = np.array([c.get(k, 0) for k in cats], dtype=np.int64)
    n_r, n_c = int(rc.sum()), int(cc.sum())
    base = dict(feature=name, kind=kind, effect_metric="jensen-shannon", n_ref=n_r, n_cur=n_c,
                missing_ref=ref.missing[name] / max(n_r + ref.missing[name], 1),
                missing_cur=cur.missing[name] / max(n_c + cur.missing[name], 1))
    if n_r == 0 or n_c == 0:
        return untested(base, no_values_note(n_r, n_c))
    chi2, p = (0.0, 1.0) if len(cats) < 2 else stats.chi2_contingency(np.vstack([rc, cc]))[:2]
    unseen = (rc == 0) & (cc > 0)
    return FeatureDrift(
        test="chi2", statistic=float(chi2), p_value=float(p), p_method="asymptotic",
        effect_size=js_from_counts(rc, cc), psi=psi_from_counts(rc, cc),
        unseen_share=float(cc[unseen].sum() / n_c), unseen_examples=[cats[i] for i in np.nonzero(unseen)[0][:5]],
        ref_summary=f"top {cats[int(np.argmax(rc))]!r}", cur_summary=f"top {cats[int(np.argmax(cc))]!r}",
        sketch=sketches.categorical_sketch(cats, rc, cc, np.array([], dtype=object), None), **base)
