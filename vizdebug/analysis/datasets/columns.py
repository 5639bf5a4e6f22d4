"""Per-column statistics of a tabular batch, and which columns a page shows.

A table may have a million columns (gene expression, bag-of-words, a flattened image read
as a table); everything here is one vectorised pass over its cells, never a loop of
pandas calls per column, and a page shows at most ``limit`` columns: those holding missing
or non-finite values first (what the findings name), then the others in their order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

SHOWN_COLUMNS = 50  # columns drawn on one page (and rows of its column statistics)


@dataclass(frozen=True)
class ColumnStats:
    """Statistics of every column of a frame, by position (names may repeat).

    ``lo``/``hi``/``mean``/``std`` are over each numeric column's finite values (NaN for
    other columns and for columns without one); ``missing`` counts NA values and
    ``nonfinite`` NA, NaN and infinite ones.
    """

    numeric: np.ndarray
    missing: np.ndarray
    nonfinite: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def from_frame(cls, frame: Any) -> ColumnStats:
        """Statistics of ``frame``'s columns in one pass over its values.

        >>> import pandas as pd
        >>> s = ColumnStats.from_frame(pd.DataFrame({"a": [1.0, float("inf")], "b": ["x", None]}))
        >>> s.hi.tolist()[0], s.missing.tolist(), s.nonfinite.tolist()
        (1.0, [0, 1], [1, 1])
        """
        width, dtypes = frame.shape[1], frame.dtypes
        kinds = {d: d.kind in "biuf" for d in dtypes.drop_duplicates()}  # a few dtypes
        numeric = dtypes.map(kinds).to_numpy(dtype=bool).reshape(width)
        missing = frame.isna().to_numpy().sum(axis=0).astype(np.int64).reshape(width)
        values = frame.iloc[:, np.flatnonzero(numeric)].to_numpy(dtype=np.float64,
                                                                  na_value=np.nan)
        values = np.ascontiguousarray(values)  # pandas hands columns over transposed
        lo, hi, mean, std, bad = (np.full(width, np.nan) for _ in range(5))
        lo[numeric], hi[numeric], mean[numeric], std[numeric], bad[numeric] = _finite_stats(values)
        nonfinite = np.where(numeric, np.nan_to_num(bad), missing).astype(np.int64)
        return cls(numeric, missing, nonfinite, lo, hi, mean, std)

    def shown(self, limit: int = SHOWN_COLUMNS) -> np.ndarray:
        """Positions of the columns a page shows: those holding missing or non-finite
        values first, then the others, each group in the frame's order.

        >>> import pandas as pd
        >>> ColumnStats.from_frame(pd.DataFrame([[1.0, 2.0, None]])).shown(2).tolist()
        [2, 0]
        """
        flagged = self.nonfinite > 0
        order = np.concatenate([np.flatnonzero(flagged), np.flatnonzero(~flagged)])
        return order[:limit]

    def row(self, k: int) -> dict[str, Any]:
        """The statistics of column ``k`` (by position) as one table row."""
        out: dict[str, Any] = {"missing": int(self.missing[k])}
        if self.numeric[k]:
            out.update(min=float(self.lo[k]), max=float(self.hi[k]),
                       mean=float(self.mean[k]), std=float(self.std[k]))
        return out


def _finite_stats(values: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per column of a rows x columns array: min, max, mean and (population) std of its
    finite values, NaN where there is none, and how many values are not finite."""
    finite = np.isfinite(values)
    count = finite.sum(axis=0)
    with np.errstate(all="ignore"):  # columns without a finite value: NaN, said so below
        lo = np.where(finite, values, np.inf).min(axis=0, initial=np.inf)
        hi = np.where(finite, values, -np.inf).max(axis=0, initial=-np.inf)
        zeroed = np.where(finite, values, 0.0)
        mean = zeroed.sum(axis=0) / count
        std = np.sqrt(np.where(finite, (zeroed - mean) ** 2, 0.0).sum(axis=0) / count)
    none = count == 0
    lo[none], hi[none], mean[none], std[none] = np.nan, np.nan, np.nan, np.nan
    return lo, hi, mean, std, (values.shape[0] - count).astype(np.float64)
