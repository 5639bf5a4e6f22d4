"""Comparing runs: groups of runs (seeds of one setting) as a mean and a min-max band,
a text filter over names and settings, and the findings a run has that a baseline has not.

Pure functions over :class:`~vizdebug.store.many.RunEntry` (what the store read); the view
(:mod:`vizdebug.views.compare`) draws what they return.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..findings import Finding, Findings
from ..records.runs import RunEntry, higher_is_better

GRID = 500  # steps on a group's common grid


@dataclass(frozen=True)
class Band:
    """A group of runs on one metric: the mean of their curves and the range they span,
    on a common step grid (a run counts only inside its own step range)."""

    label: str
    runs: tuple[str, ...]
    step: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray


def group_label(entry: RunEntry, key: str) -> str:
    """The group of ``entry`` under config ``key`` (``key=?`` when it has none).

    >>> from pathlib import Path
    >>> e = RunEntry(Path("a"), "a", "closed", {"lr": 0.1}, 9, None, [])
    >>> group_label(e, "lr"), group_label(e, "seed")
    ('lr=0.1', 'seed=?')
    """
    value = entry.config.get(key, "?")
    return f"{key}={value}"


def groups(entries: Sequence[RunEntry], key: str) -> dict[str, list[RunEntry]]:
    """The runs by their value of config ``key``, in first-seen order."""
    out: dict[str, list[RunEntry]] = {}
    for entry in entries:
        out.setdefault(group_label(entry, key), []).append(entry)
    return out


def band(label: str, members: Sequence[RunEntry], metric: str, grid: int = GRID) -> Band | None:
    """The mean and min-max band of ``metric`` over ``members`` (None when none logged it)."""
    curves = [(e.name, e.curves[metric]) for e in members
              if metric in e.curves and e.curves[metric].step.size]
    if not curves:
        return None
    lo = min(int(c.step[0]) for _, c in curves)
    hi = max(int(c.step[-1]) for _, c in curves)
    steps = np.unique(np.linspace(lo, hi, min(grid, hi - lo + 1)).round().astype(np.int64))
    stack = np.vstack([_on_grid(c.step, c.mean, steps) for _, c in curves])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        # a step no run of the group reached is an all-NaN column: NaN, not a warning
        warnings.simplefilter("ignore", RuntimeWarning)
        mean, low, high = np.nanmean(stack, 0), np.nanmin(stack, 0), np.nanmax(stack, 0)
    return Band(label, tuple(n for n, _ in curves), steps, mean, low, high)


def _on_grid(step: np.ndarray, value: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``value`` interpolated onto ``grid`` over its finite points, NaN outside its range."""
    ok = np.isfinite(value)
    out = np.full(grid.shape, np.nan)
    if not ok.any():
        return out
    xs, ys = step[ok].astype(float), value[ok]
    inside = (grid >= xs[0]) & (grid <= xs[-1])
    out[inside] = np.interp(grid[inside].astype(float), xs, ys)
    return out


def matches(entry: RunEntry, query: str) -> bool:
    """Whether ``entry`` passes a filter: space-separated terms, each ``key=value`` (a
    config setting, ``state=``, ``name=``) or a word found in its name or settings; all
    must hold.

    >>> from pathlib import Path
    >>> e = RunEntry(Path("a"), "seed1", "closed", {"lr": 0.1}, 9, None, [])
    >>> matches(e, "lr=0.1 seed"), matches(e, "lr=0.2")
    (True, False)
    """
    fields = {"name": entry.name, "state": entry.state,
              **{k: str(v) for k, v in entry.config.items()}}
    text = " ".join(f"{k}={v}" for k, v in fields.items()).lower()
    for term in query.lower().split():
        key, sep, value = term.partition("=")
        if sep and key in {k.lower() for k in fields}:
            if not any(k.lower() == key and str(v).lower() == value for k, v in fields.items()):
                return False
        elif term not in text:
            return False
    return True


def new_findings(run: Findings, baseline: Findings,
                 severities: Iterable[str] = ("warning", "error")) -> list[Finding]:
    """The findings of ``run`` (warnings and errors by default) whose code and place the
    baseline does not have: what this run brought."""
    known = {(f.code, f.where) for f in baseline}
    wanted = set(severities)
    return [f for f in run if f.severity in wanted and (f.code, f.where) not in known]


def rank(entries: Sequence[RunEntry], metric: str, by: str = "best") -> list[RunEntry]:
    """``entries`` best first on ``metric`` (``by``: ``best`` or ``final``); runs without
    it last, in their order."""

    sign = -1.0 if higher_is_better(metric) else 1.0

    def key(entry: RunEntry) -> tuple[int, float]:
        value = entry.summary(metric)[by]
        return (1, 0.0) if not math.isfinite(value) else (0, sign * value)

    return sorted(entries, key=key)
