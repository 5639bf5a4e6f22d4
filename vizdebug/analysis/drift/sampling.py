"""Which rows a streamed side samples: decided by each row's position, not by how it is read.

A row is sampled when a hash of its global position (its row number in the source, counted
before any time window) falls below a threshold set from the side's row count. The same
rows are therefore chosen whether the data comes as one Parquet file read in record batches,
a folder of files, or the partitions of a Dask or Spark DataFrame: every engine computes the
same quantile grid and so the same statistics. The hash (splitmix64's finaliser) is a
bijection of 64-bit integers, so no two positions share a key. The sample is a Bernoulli
sample of about ``SAMPLE_ROWS`` rows of the side (all rows of a smaller side); samples of
parts merge by concatenation.
"""

from __future__ import annotations

import numpy as np

SAMPLE_ROWS = 131_072  # expected sampled rows per side: 32 per fine bin when both sides are large
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def row_keys(start: int, n: int, seed: int) -> np.ndarray:
    """64-bit keys of the rows at positions ``start .. start + n - 1`` for a side's ``seed``.

    Examples
    --------
    >>> row_keys(5, 3, 0).tolist() == row_keys(0, 8, 0)[5:].tolist()
    True
    """
    z = np.arange(start, start + n, dtype=np.uint64)
    with np.errstate(over="ignore"):  # the arithmetic is meant to wrap around 2**64
        z = z * _GOLDEN + np.uint64(seed + 1) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def sample_below(total_rows: int, target: int | None = None) -> int | None:
    """The key below which a row is sampled, for a side of ``total_rows`` rows (None: all).

    Examples
    --------
    >>> sample_below(1000) is None, sample_below(4 * SAMPLE_ROWS) == 2 ** 62
    (True, True)
    """
    target = SAMPLE_ROWS if target is None else target
    if total_rows <= target:
        return None
    return int(target / total_rows * 2.0 ** 64)


def chosen(start: int, n: int, seed: int, below: int | None) -> np.ndarray | None:
    """Which of ``n`` rows from position ``start`` are sampled (None: every row)."""
    if below is None:
        return None
    return row_keys(start, n, seed) < np.uint64(below)
