"""One streamed side's sketches: accumulated batch by batch, merged part by part.

:class:`StreamSide` reads arrow record batches of one side (a Parquet dataset in this
process, or one partition of a Dask or Spark DataFrame on a worker) into per-column
sketches. Pass 1 keeps numeric moments (count, missing, sum, sum of squares, min, max) and
the rows sampled by position (:mod:`.sampling`), and counts categories exactly; pass 2
counts numeric values into the shared bins, and with a time window also per time bucket.
Every part of a sketch merges by addition, min/max or concatenation, so the merged sketches
of a side's partitions equal the sketches of the side read in one stream (sums of floats up
to their rounding order).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...progress import Progress
from . import sampling, sketches
from .windows import StreamTime


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

    def observe(self, v: np.ndarray, chosen: np.ndarray | None) -> None:
        """Moments of the finite values of ``v``; the ``chosen`` rows (None: all) sampled."""
        finite = np.isfinite(v)
        ok = v[finite]
        self.missing += len(v) - len(ok)
        self.n += len(ok)
        self.total += float(ok.sum())
        self.total_sq += float(np.square(ok).sum())
        if len(ok):
            self.lo, self.hi = min(self.lo, float(ok.min())), max(self.hi, float(ok.max()))
        self.samples.append(ok if chosen is None else v[finite & chosen])

    def count(self, v: np.ndarray, grids: tuple[np.ndarray, np.ndarray], ids: np.ndarray | None,
              n_buckets: int) -> None:
        inner, disp = grids
        finite = np.isfinite(v)
        ok = v[finite]
        fine = np.bincount(np.searchsorted(inner, ok, side="right"), minlength=len(inner) + 1)
        bins = np.searchsorted(disp[1:-1], ok, side="right")
        shown = np.bincount(bins, minlength=len(disp) - 1)
        self.fine = _add(self.fine, fine)
        self.display = _add(self.display, shown)
        if ids is not None:
            self.buckets = _add(self.buckets, sketches.bucket_table(ids[finite], bins, n_buckets, len(disp) - 1))

    def merge(self, other: NumericStream) -> None:
        """Add ``other`` (the same column over other rows) into this sketch."""
        self.n += other.n
        self.missing += other.missing
        self.total += other.total
        self.total_sq += other.total_sq
        self.lo, self.hi = min(self.lo, other.lo), max(self.hi, other.hi)
        self.samples.extend(other.samples)
        self.fine = _add(self.fine, other.fine)
        self.display = _add(self.display, other.display)
        self.buckets = _add(self.buckets, other.buckets)

    @property
    def std(self) -> float:
        mean = self.total / max(self.n, 1)
        return float(np.sqrt(max(self.total_sq / max(self.n, 1) - mean * mean, 0.0)))


def _add(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return b if a is None else a if b is None else a + b


def numeric_values(arr: Any, kind: str) -> np.ndarray:
    """An arrow column as float64 (datetimes as epoch milliseconds, missing as NaN)."""
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
    """One side's streamed sketches; the current side may keep only a time window.

    ``offset`` is the position of the dataset's first row in the whole side (a partition's
    start), ``seed`` and ``below`` choose the sampled rows (:mod:`.sampling`).
    """

    dataset: Any
    columns: dict[str, str]  # name -> kind
    clock: StreamTime | None = None
    nums: dict[str, NumericStream] = field(default_factory=dict)
    counts: dict[str, Counter] = field(default_factory=dict)
    missing: Counter = field(default_factory=Counter)
    bucket_counts: dict[str, np.ndarray] = field(default_factory=dict)
    bar: Progress | None = None  # counts the rows read
    offset: int = 0
    seed: int = 0
    below: int | None = None
    batch_rows: int = 131_072

    def batches(self, names: list[str], sample: bool = False,
                ) -> Iterator[tuple[Any, np.ndarray | None, np.ndarray | None]]:
        """Record batches of ``names`` (windowed), each row's time bucket when timed, and
        (with ``sample``) which rows are sampled."""
        read = names + ([self.clock.name] if self.clock and self.clock.name not in names else [])
        start = self.offset
        for batch in self.dataset.to_batches(columns=read, batch_size=self.batch_rows):
            if self.bar is not None:
                self.bar.update(batch.num_rows)
            chosen = sampling.chosen(start, batch.num_rows, self.seed, self.below) if sample else None
            start += batch.num_rows
            if self.clock is None:
                yield batch, None, chosen
                continue
            kept, ids, keep = self.clock.select(batch)
            yield kept, ids, (chosen[keep] if chosen is not None and keep is not None else chosen)

    def first_pass(self) -> None:
        """Moments and samples of numeric columns; exact counts of categorical ones."""
        self.nums = {c: NumericStream() for c, k in self.columns.items() if k in ("numeric", "datetime")}
        self.counts = {c: Counter() for c in self.columns if c not in self.nums}
        for batch, _, chosen in self.batches(list(self.columns), sample=True):
            for name in self.columns:
                arr = batch.column(name)
                if name in self.nums:
                    self.nums[name].observe(numeric_values(arr, self.columns[name]), chosen)
                    continue
                self.missing[name] += arr.null_count
                counts = arr.drop_null().value_counts().to_pylist()
                self.counts[name].update({str(d["values"]): d["counts"] for d in counts})

    def second_pass(self, grids: dict[str, tuple], sketched: dict[str, dict]) -> None:
        """Bin counts of numeric columns; per time bucket, the categories of ``sketched``
        (name -> a categorical sketch) too."""
        n = self.clock.edges.size - 1 if self.clock else 0
        cats = {name: sk for name, sk in sketched.items() if self.clock and sk}
        if not self.nums and not cats:
            return
        for batch, ids, _ in self.batches(list(self.nums) + list(cats)):
            for name, stream in self.nums.items():
                stream.count(numeric_values(batch.column(name), self.columns[name]), grids[name], ids, n)
            for name, sk in cats.items():
                has_other = len(sk["categories"]) > sketches.MAX_CATEGORIES  # "(other)" was added
                codes = _category_codes(batch.column(name), sk["categories"], has_other)
                per = sketches.bucket_table(ids, codes, n, len(sk["categories"]))
                self.bucket_counts[name] = self.bucket_counts.get(name, 0) + per

    def merge(self, other: StreamSide) -> None:
        """Add the sketches of ``other`` (the same columns over other rows) into this side."""
        for name, stream in other.nums.items():
            self.nums.setdefault(name, NumericStream()).merge(stream)
        for name, counts in other.counts.items():
            self.counts.setdefault(name, Counter()).update(counts)
        self.missing.update(other.missing)
        for name, per in other.bucket_counts.items():
            self.bucket_counts[name] = self.bucket_counts.get(name, 0) + per
