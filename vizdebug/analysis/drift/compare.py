"""The one entry point for drift: two data sets in, a :class:`DriftResult` out.

:func:`analyze_drift` takes the reference and the current data in any form
:mod:`vizdebug.data.tables` reads (in memory, or Parquet streamed in record batches), applies
the time window and cuts the current rows into time buckets (:mod:`.drift_time`), tests
every feature (:mod:`.drift` in memory, :mod:`.streaming` for Parquet), decides drift and
returns everything a view draws: the ranked per-feature results with their sketches, the
table, the findings and the time axis.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...data.frames import engine_of
from ...data.parquet import is_stream_source
from ...data.tables import KINDS, as_table, columns_for
from ...errors import VizdebugError
from . import stats as drift_stats
from .findings import drift_findings, drift_table, rank
from .windows import TimeAxis, check_window, stream_time, window_current

MAX_TIME_BUCKETS = 1000

if TYPE_CHECKING:
    import pandas as pd

    from ...findings import Findings


@dataclass(frozen=True)
class DriftOptions:
    """What to compare and how to decide; checked when made.

    ``time`` names a time column of the current data (in memory also an array with one
    value per current row); ``window=(start, end)`` keeps ``start <= time < end`` of the
    current rows; ``time_buckets`` is the resolution of the view's time slider.

    Examples
    --------
    >>> DriftOptions(correction="sidak")
    Traceback (most recent call last):
    ...
    vizdebug.errors.VizdebugError: correction must be one of ('holm', 'bonferroni', 'bh', 'none'), got 'sidak'
    """

    features: list[str] | None = None
    categorical: list[str] | None = None
    kinds: dict[str, str] | None = None
    alpha: float = 0.05
    effect_threshold: float = 0.1
    correction: str = "holm"
    time: Any = None
    window: tuple[Any, Any] | None = None
    time_buckets: int = 24

    def __post_init__(self) -> None:
        for name in ("features", "categorical"):
            value = getattr(self, name)
            if isinstance(value, str):  # one name, not its characters
                object.__setattr__(self, name, [value])
            elif value is not None and not isinstance(value, (list, tuple)):
                raise VizdebugError(f"{name} must be a list of column names, got {value!r}")
        if self.kinds is not None and not (isinstance(self.kinds, Mapping)
                                           and all(isinstance(k, str) for k in self.kinds.values())):
            raise VizdebugError(f"kinds must be a dict {{column: kind}} with kinds from "
                                f"{KINDS}, e.g. kinds={{'age': 'numeric'}}; got {self.kinds!r}")
        for name in ("alpha", "effect_threshold"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise VizdebugError(f"{name} must be a number, got {value!r}")
        if self.correction not in drift_stats.CORRECTIONS:
            raise VizdebugError(f"correction must be one of {drift_stats.CORRECTIONS}, got {self.correction!r}")
        if not 0 < self.alpha < 1:
            raise VizdebugError(f"alpha must be in (0, 1), got {self.alpha}")
        if self.window is not None and self.time is None:
            raise VizdebugError("window=(start, end) needs time=<a time column of the current data>")
        check_window(self.window)
        buckets = self.time_buckets
        if (isinstance(buckets, bool) or not isinstance(buckets, (int, np.integer))
                or not 1 <= buckets <= MAX_TIME_BUCKETS):
            # each bucket carries every feature's histogram to the page: 10**6 of them made
            # a 258 MB page after 41 s
            raise VizdebugError(f"time_buckets must be a whole number from 1 to "
                                f"{MAX_TIME_BUCKETS} (the slider's steps), got {buckets!r}")


@dataclass
class DriftResult:
    """Everything a drift view draws: ranked features (with sketches), table, findings, time axis."""

    features: list[drift_stats.FeatureDrift]  # ranked by drift; each holds its view sketch
    table: pd.DataFrame
    findings: Findings
    options: DriftOptions
    time: TimeAxis | None = None
    streamed: bool = False
    only_ref: list[str] = field(default_factory=list)
    only_cur: list[str] = field(default_factory=list)

    @classmethod
    def from_features(cls, results: list[drift_stats.FeatureDrift], options: DriftOptions, *,
                      only_ref: list[str], only_cur: list[str], time: TimeAxis | None = None,
                      streamed: bool = False) -> DriftResult:
        """Decided results -> ranked features, the table and the findings."""
        thr = options.effect_threshold
        findings = drift_findings(results, alpha=options.alpha, effect_threshold=thr,
                                  correction=options.correction, only_ref=only_ref, only_cur=only_cur)
        return cls(rank(results, thr), drift_table(results, thr), findings, options, time, streamed,
                   list(only_ref), list(only_cur))

    @property
    def drifted(self) -> list[str]:
        """Names of the drifted features, most drifted first."""
        return [r.feature for r in self.features if r.drifted]


def analyze_drift(reference: Any, current: Any, options: DriftOptions | None = None, *,
                  progress: bool | None = None) -> DriftResult:
    """Per-feature drift between ``reference`` and ``current``, in memory or streamed.

    Either side may be a Parquet path or a pyarrow dataset: then both are streamed in
    record batches into sketches, with the same time window and buckets as in memory. Either
    may be a Dask or a Spark DataFrame: its partitions are sketched on its engine and merged
    here, with the statistics of the Parquet path (:mod:`.engines`).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> res = analyze_drift({"x": rng.normal(size=500)}, {"x": rng.normal(1, size=500)})
    >>> res.drifted, list(res.table.columns[:3])
    (['x'], ['feature', 'kind', 'test'])
    """
    options = options or DriftOptions()
    engines = [engine_of(reference, "reference"), engine_of(current, "current")]
    if is_stream_source(reference) or is_stream_source(current) or any(engines):
        return _streamed(reference, current, options, progress)
    return _in_memory(reference, current, options)


def _in_memory(reference: Any, current: Any, options: DriftOptions) -> DriftResult:
    current, buckets, axis = window_current(current, options.time, options.window, options.time_buckets)
    if axis is not None and axis.name is not None:  # the time column is the axis, not a feature
        reference, current = (_without(side, axis.name, name) for side, name in
                              ((reference, "reference"), (current, "current")))
    pairs, only_ref, only_cur = columns_for(reference, current, features=options.features,
                                           categorical=options.categorical, kinds=options.kinds)
    results = drift_stats.compare_columns(pairs, alpha=options.alpha, effect_threshold=options.effect_threshold,
                                          correction=options.correction, buckets=buckets)
    return DriftResult.from_features(results, options, only_ref=only_ref, only_cur=only_cur, time=axis)


def _without(data: Any, column: str, side: str) -> Any:
    """``data`` as a table of columns without ``column`` (where it has one)."""
    table = as_table(data, side)
    return {k: v for k, v in table.items() if k != column} if column in table else data


def _streamed(reference: Any, current: Any, options: DriftOptions,
              progress: bool | None = None) -> DriftResult:
    import pyarrow as pa

    try:
        return _stream(reference, current, options, progress)
    except pa.ArrowException as exc:  # a file that changed type mid-way, a cast that fails
        raise VizdebugError(f"cannot compare the Parquet / arrow data: {type(exc).__name__}: "
                            f"{str(exc)[:300]}") from None


def _stream(reference: Any, current: Any, options: DriftOptions,
            progress: bool | None = None) -> DriftResult:
    from .engines import source_for
    from .streaming import stream_compare

    current = source_for(current, "current")
    clock = stream_time(current, options.time, options.window, options.time_buckets)
    results, only_ref, only_cur = stream_compare(reference, current, features=options.features,
                                                 categorical=options.categorical, kinds=options.kinds,
                                                 clock=clock, progress=progress)
    drift_stats.decide(results, alpha=options.alpha, effect_threshold=options.effect_threshold,
                       correction=options.correction)
    return DriftResult.from_features(results, options, only_ref=only_ref, only_cur=only_cur,
                                     time=clock and clock.axis, streamed=True)
