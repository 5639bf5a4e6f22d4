"""Drift tests on data larger than memory: Parquet streamed in record batches into sketches.

Two passes per source. Pass 1 keeps, per column, mergeable moments (count, missing, sum,
sum of squares, min, max) and a bounded uniform sample; the pooled samples of both sides
fix ``FINE_BINS`` shared quantile bins. Pass 2 counts every value into those bins (counts
merge by addition) and into the view's display bins. KS and Wasserstein are then computed
on the bin grid: the KS statistic is a lower bound of the exact one, short by at most the
largest bin mass (about 1/FINE_BINS); the table's ``test`` says ``ks (binned)``.
Categorical columns (strings, dictionaries, booleans) are counted exactly. With a time
column (:class:`.drift_time.StreamTime`) the current side keeps only the rows inside the
window, batch by batch, and pass 2 also counts them per time bucket for the view's slider.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...data.parquet import arrow_dataset, arrow_kind
from ...data.tables import KINDS
from ...errors import VizdebugError
from ...progress import Progress
from . import sketches
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
SAMPLE_PER_BATCH = 2048
BATCH_ROWS = 131_072


@dataclass
class NumericStream:
    """Mergeable sketch of one numeric column: moments, a sample, then bin counts."""

    n: int = 0
    missing: int = 0
    total: float = 0.0
    total_sq: float = 0.0
    lo: float = np.inf
    hi: float = -np.inf
    samples: list[np.ndarray] = field(default_factory=list)
    fine: np.ndarray | None = None
    display: np.ndarray | None = None
    buckets: np.ndarray | None = None  # display bins per time bucket (current side with time=)

    def observe(self, v: np.ndarray, rng: np.random.Generator) -> None:
        ok = v[np.isfinite(v)]
        self.missing += len(v) - len(ok)
        self.n += len(ok)
        self.total += float(ok.sum())
        self.total_sq += float(np.square(ok).sum())
        if len(ok):
            self.lo, self.hi = min(self.lo, float(ok.min())), max(self.hi, float(ok.max()))
        take = min(len(ok), SAMPLE_PER_BATCH)
        self.samples.append(rng.choice(ok, take, replace=False) if take < len(ok) else ok.copy())

    def count(self, v: np.ndarray, grids: tuple[np.ndarray, np.ndarray], ids: np.ndarray | None,
              n_buckets: int) -> None:
        inner, disp = grids
        finite = np.isfinite(v)
        ok = v[finite]
        fine = np.bincount(np.searchsorted(inner, ok, side="right"), minlength=len(inner) + 1)
        bins = np.searchsorted(disp[1:-1], ok, side="right")
        shown = np.bincount(bins, minlength=len(disp) - 1)
        self.fine = fine if self.fine is None else self.fine + fine
        self.display = shown if self.display is None else self.display + shown
        if ids is not None:
            per = sketches.bucket_table(ids[finite], bins, n_buckets, len(disp) - 1)
            self.buckets = per if self.buckets is None else self.buckets + per

    @property
    def std(self) -> float:
        mean = self.total / max(self.n, 1)
        return float(np.sqrt(max(self.total_sq / max(self.n, 1) - mean * mean, 0.0)))


def _numeric_values(arr: Any, kind: str) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind == "datetime":
        arr = pc.cast(pc.cast(arr, pa.timestamp("ms")), pa.int64())
    return arr.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def _category_codes(arr: Any, names: list[str], has_other: bool) -> np.ndarray:
    """Each row's position in a categorical sketch's names (-1 for missing)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    enc = arr if pa.types.is_dictionary(arr.type) else pc.dictionary_encode(arr)
    lut = sketches.category_index(enc.dictionary.to_pylist(), names, has_other)
    return lut[enc.indices.fill_null(len(enc.dictionary)).to_numpy(zero_copy_only=False)]


@dataclass
class StreamSide:
    """One side's streamed sketches; the current side may keep only a time window."""

    dataset: Any
    columns: dict[str, str]  # name -> kind
    clock: StreamTime | None = None
    nums: dict[str, NumericStream] = field(default_factory=dict)
    counts: dict[str, Counter] = field(default_factory=dict)
    missing: Counter = field(default_factory=Counter)
    bucket_counts: dict[str, np.ndarray] = field(default_factory=dict)
    bar: Progress | None = None  # counts the rows read

    def batches(self, names: list[str]) -> Iterator[tuple[Any, np.ndarray | None]]:
        """Record batches of ``names`` (windowed), with each row's time bucket when timed."""
        read = names + ([self.clock.name] if self.clock and self.clock.name not in names else [])
        for batch in self.dataset.to_batches(columns=read, batch_size=BATCH_ROWS):
            if self.bar is not None:
                self.bar.update(batch.num_rows)
            yield (batch, None) if self.clock is None else self.clock.select(batch)

    def first_pass(self, seed: int) -> None:
        """Moments and samples of numeric columns; exact counts of categorical ones."""
        rng = np.random.default_rng(seed)
        self.nums = {c: NumericStream() for c, k in self.columns.items() if k in ("numeric", "datetime")}
        self.counts = {c: Counter() for c in self.columns if c not in self.nums}
        for batch, _ in self.batches(list(self.columns)):
            for name in self.columns:
                arr = batch.column(name)
                if name in self.nums:
                    self.nums[name].observe(_numeric_values(arr, self.columns[name]), rng)
                    continue
                self.missing[name] += arr.null_count
                counts = arr.drop_null().value_counts().to_pylist()
                self.counts[name].update({str(d["values"]): d["counts"] for d in counts})

    def second_pass(self, grids: dict[str, tuple], sketched: dict[str, FeatureDrift]) -> None:
        """Bin counts of numeric columns; per time bucket, categories of ``sketched`` too."""
        n = self.clock.edges.size - 1 if self.clock else 0
        cats = {name: r.sketch for name, r in sketched.items() if self.clock and r.sketch}
        if not self.nums and not cats:
            return
        for batch, ids in self.batches(list(self.nums) + list(cats)):
            for name, stream in self.nums.items():
                stream.count(_numeric_values(batch.column(name), self.columns[name]), grids[name], ids, n)
            for name, sk in cats.items():
                has_other = len(sk["categories"]) > sketches.MAX_CATEGORIES  # "(other)" was added
                codes = _category_codes(batch.column(name), sk["categories"], has_other)
                per = sketches.bucket_table(ids, codes, n, len(sk["categories"]))
                self.bucket_counts[name] = self.bucket_counts.get(name, 0) + per


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
            raise VizdebugError(f"feature {n!r} is missing from the {'reference' if n not in ref_cols else 'current'} Parquet data")
    if not names:
        raise VizdebugError("the reference and current Parquet data share no column names")
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
    """Per-feature drift of two Parquet sources, never holding more than one batch.

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
    ref_ds, cur_ds = arrow_dataset(reference), arrow_dataset(current)
    found, only_ref, only_cur = _columns(ref_ds, cur_ds, features, categorical, kinds, clock and clock.name)
    cols = {n: k for n, k in found.items() if k is not None}
    nested = {n: _nested(n, ref_ds) for n, k in found.items() if k is None}
    rows = 2 * (ref_ds.count_rows() + cur_ds.count_rows())  # Parquet: from the metadata
    with Progress("drift over Parquet", total=rows, unit="rows", progress=progress) as bar:
        ref, cur = StreamSide(ref_ds, cols, bar=bar), StreamSide(cur_ds, cols, clock, bar=bar)
        ref.first_pass(seed=0)
        cur.first_pass(seed=1)
        grids = {n: _grids(ref.nums[n], cur.nums[n]) for n in ref.nums}
        categorical_results = {n: _categorical_result(n, cols[n], ref, cur) for n in ref.counts}
        ref.second_pass(grids, {})
        cur.second_pass(grids, categorical_results)
    for name, per in cur.bucket_counts.items():
        categorical_results[name].sketch["bucket_counts"] = per.tolist()
    results = [
        nested[n] if n in nested
        else _numeric_result(n, cols[n], ref.nums[n], cur.nums[n], grids[n]) if n in ref.nums
        else categorical_results[n]
        for n in found
    ]
    return results, only_ref, only_cur


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


def _categorical_result(name: str, kind: str, ref: StreamSide, cur: StreamSide) -> FeatureDrift:
    from scipy import stats

    r, c = ref.counts[name], cur.counts[name]
    cats = [k for k, _ in r.most_common()] + [k for k, _ in c.most_common() if k not in r]
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
