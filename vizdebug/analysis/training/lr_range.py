"""The LR range test's curve read: smoothing, the suggested rate, where the loss diverges,
and the ``lr-too-high`` finding. Pure numpy; the test itself runs in
:mod:`vizdebug.collect.lr_find`.

The suggestion rule is fastai's **valley** (its default since fastai 2.5): the middle, on
the log-LR axis, of the longest stretch over which the smoothed loss keeps falling (the
longest decreasing run of points, gaps allowed). It is steadier than the two older rules,
which are given beside it: the **steepest** descent (Lightning's ``suggestion()``: the most
negative slope of the smoothed loss against log LR, noisy on short or noisy curves) and
fastai's **minimum / 10** (a tenth of the rate at the smoothed minimum, which assumes the
usual bowl shape).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...findings import Finding
from ...findings import fmt_number as _f

BETA = 0.98  # the smoothing of fastai and Lightning (a debiased exponential average)
DIVERGE_FACTOR = 4.0  # stop once the smoothed loss passes 4x its best (fastai, Lightning)
SKIP_START = 0.1  # the first tenth of the points is left out of the rules (fastai)
DIVERGE_WINDOW = 5  # the trailing median that reads where the loss breaks
SKIP_END = 5  # and the last few, where a stopped test's loss shoots up
MIN_POINTS = 5
RULES = ("valley", "steepest", "minimum/10")
RULE_TEXT = {
    "valley": "valley: the middle of the longest stretch over which the smoothed loss "
              "keeps falling (fastai's default)",
    "steepest": "steepest: where the smoothed loss falls fastest against log LR "
                "(Lightning's suggestion)",
    "minimum/10": "minimum/10: a tenth of the rate at the smoothed loss's minimum (fastai)",
}


def lr_schedule(start_lr: float, end_lr: float, num_steps: int) -> np.ndarray:
    """``num_steps`` rates from ``start_lr`` to ``end_lr``, evenly spaced on a log axis.

    >>> lr_schedule(1e-3, 1e-1, 3).tolist()
    [0.001, 0.01, 0.1]
    """
    return np.geomspace(start_lr, end_lr, num_steps)


def smooth(losses: np.ndarray, beta: float = BETA) -> np.ndarray:
    """The debiased exponential moving average of ``losses`` (NaN stays NaN onward).

    >>> smooth(np.array([2.0, 2.0, 2.0])).round(12).tolist()
    [2.0, 2.0, 2.0]
    """
    losses = np.asarray(losses, dtype=float)
    out = np.empty_like(losses)
    avg = 0.0
    for i, value in enumerate(losses):
        avg = beta * avg + (1 - beta) * value
        out[i] = avg / (1 - beta ** (i + 1))
    return out


class Smoother:
    """The running form of :func:`smooth`, with the divergence test of the loop."""

    def __init__(self, beta: float = BETA, factor: float = DIVERGE_FACTOR) -> None:
        self.beta, self.factor = beta, factor
        self.avg, self.n, self.best = 0.0, 0, math.inf

    def add(self, value: float) -> float:
        self.n += 1
        self.avg = self.beta * self.avg + (1 - self.beta) * value
        smoothed = self.avg / (1 - self.beta ** self.n)
        self.best = min(self.best, smoothed)
        return smoothed

    def diverged(self, smoothed: float) -> bool:
        """The smoothed loss is past ``factor`` times its best (or not a number)."""
        return not math.isfinite(smoothed) or (
            self.n > 1 and self.best > 0 and smoothed > self.factor * self.best)


def _window(n: int) -> slice:
    start = int(n * SKIP_START)
    end = n - SKIP_END if n - SKIP_END - start >= MIN_POINTS else n
    return slice(start, end)


def valley_index(values: np.ndarray) -> int:
    """The middle of the valley: the longest decreasing subsequence of ``values`` (gaps
    allowed) ends at some point; the valley is as many points as it holds, ending there.

    Placing the valley by its length before its end, not at the subsequence's first point,
    is fastai's reading: on a flat, noisy start a long subsequence picks up points far to
    the left of the real descent, and its first point would suggest a rate that barely
    trains.

    >>> valley_index(np.array([5.0, 4, 3, 2, 1, 9]))
    2
    """
    n = len(values)
    length = np.ones(n, dtype=int)
    for i in range(1, n):
        before = np.flatnonzero(values[:i] > values[i])
        if before.size:
            length[i] = length[before].max() + 1
    end = int(np.argmax(length))
    start = max(0, end - int(length[end]) + 1)
    return start + (end - start) // 2


@dataclass(frozen=True)
class LRCurve:
    """What an LR range test measured and what it suggests.

    ``lrs`` and ``losses`` are per step (the loss of the batch before the step at that
    rate); ``smoothed`` their debiased moving average. ``stopped`` says why it ended:
    ``"end"`` (the last rate), ``"diverged"`` (smoothed loss past ``DIVERGE_FACTOR`` x its
    best) or ``"non-finite"``. ``suggestions`` holds every rule's rate; ``suggestion`` is the
    ``rule``'s (None when the curve is too short or never falls).
    """

    lrs: np.ndarray
    losses: np.ndarray
    smoothed: np.ndarray
    stopped: str
    suggestions: dict[str, float] = field(default_factory=dict)
    rule: str = "valley"
    diverge_lr: float | None = None

    @property
    def suggestion(self) -> float | None:
        return self.suggestions.get(self.rule)

    @property
    def best_lr(self) -> float:
        finite = np.where(np.isfinite(self.smoothed), self.smoothed, np.inf)
        return float(self.lrs[int(np.argmin(finite))])


def read_curve(lrs: np.ndarray, losses: np.ndarray, stopped: str,
               rule: str = "valley") -> LRCurve:
    """The curve of one test: smoothed, with each rule's rate and the divergence point.

    >>> lrs = lr_schedule(1e-4, 1.0, 40)
    >>> losses = np.r_[np.linspace(2.3, 0.3, 30), np.geomspace(0.5, 20, 10)]
    >>> curve = read_curve(lrs, losses, "diverged")
    >>> 1e-4 < curve.suggestion < curve.best_lr < curve.diverge_lr <= 1.0
    True
    """
    lrs, losses = np.asarray(lrs, dtype=float), np.asarray(losses, dtype=float)
    smoothed = smooth(losses)
    return LRCurve(lrs, losses, smoothed, stopped, suggest(lrs, smoothed), rule,
                   divergence_lr(lrs, losses))


def suggest(lrs: np.ndarray, smoothed: np.ndarray) -> dict[str, float]:
    """Each rule's rate (:data:`RULES`), from the finite points inside the rules' window;
    empty when fewer than :data:`MIN_POINTS` remain or the loss never falls."""
    keep = np.isfinite(smoothed)
    lrs, smoothed = lrs[keep], smoothed[keep]
    window = _window(len(lrs))
    x, y = np.log10(lrs[window]), smoothed[window]
    if len(y) < MIN_POINTS or not np.any(np.diff(y) < 0):
        return {}
    slope = np.gradient(y, x)
    return {"valley": float(10 ** x[valley_index(y)]),
            "steepest": float(10 ** x[int(np.argmin(slope))]),
            "minimum/10": float(10 ** x[int(np.argmin(y))] / 10)}


def divergence_lr(lrs: np.ndarray, losses: np.ndarray) -> float | None:
    """The first rate past the lowest point at which the loss is back above where it
    started (worse than the untrained model) and stays there, or is not finite; None if
    it never is.

    Read on a trailing median of :data:`DIVERGE_WINDOW` raw losses, not on the smoothed
    curve: the smoothing's average over ~50 steps lags by about half a decade of rate on a
    100-step test, which would place the divergence far past where the loss broke.
    """
    raw = np.where(np.isfinite(losses), losses, np.inf)
    if len(raw) < MIN_POINTS:
        return None
    med = np.array([np.median(raw[max(0, i - DIVERGE_WINDOW + 1):i + 1]) for i in range(len(raw))])
    start = float(np.median(raw[:DIVERGE_WINDOW]))
    lowest = int(np.argmin(med))
    above = med[lowest:] > start
    # above from some point to the end of the test (a stopped test ends diverged)
    for i in np.flatnonzero(above):
        if above[i:].all() or np.isinf(raw[lowest + i]):
            return float(lrs[lowest + i])
    return None


def lr_findings(curve: LRCurve, train_lr: float | None, *, where: str | None = None,
                optimizer: str = "") -> list[Finding]:
    """``lr-too-high`` when ``train_lr`` is at or past the rate where the test's loss
    diverged. A rate before it (a sane one, or one in the rising part short of divergence)
    gives nothing: the curve of a short test says little about those."""
    if train_lr is None or curve.diverge_lr is None or train_lr < curve.diverge_lr:
        return []
    tested = f" with {optimizer}" if optimizer else ""
    best = curve.suggestion
    fix = (f"try about {_f(best)} (the {curve.rule} rule)" if best is not None
           else f"try a rate below {_f(curve.best_lr)}")
    message = (f"the learning rate you train with, {_f(train_lr)}, is at or past "
               f"{_f(curve.diverge_lr)}, where the LR range test's loss{tested} diverged: "
               f"from its lowest, {_f(float(np.nanmin(curve.smoothed)))} at "
               f"{_f(curve.best_lr)}, back above its start, {_f(float(curve.smoothed[0]))}")
    return [Finding("lr-too-high", "warning", message, where=where,
                    evidence={"train_lr": float(train_lr), "diverge_lr": curve.diverge_lr,
                              "best_lr": curve.best_lr, "suggested_lr": best,
                              "rule": curve.rule},
                    hint=f"Lower the learning rate: {fix}. A rate where the range test's "
                         "loss rises back past its start makes training unstable or diverge.")]
