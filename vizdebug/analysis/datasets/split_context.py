"""Leaks through what rows share besides their features: the same group (patient, user,
session) on both sides of a split, and test times inside the training period.

- ``split-group-leak``: groups given with ``groups=`` (or a column named like a group key
  whose values repeat) that hold rows in train and in test. The model meets the test
  patients' other scans in training and is graded on recognising them.
- ``split-time-leak``: test rows dated before the end of the training data. Given ``time=``
  the split is meant to be a forecast, so any interleaving counts; a datetime column found
  in the frames counts only where the targets follow time (the test targets are predicted
  by their training neighbours in time better than chance), since an i.i.d. table may carry
  a date without being a forecast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...findings import Finding
from .split_keys import (
    SplitKeys,
    as_times,
    evident_groups,
    evident_time,
    given_keys,
    group_labels,
)
from .split_scores import lift_over_chance

if TYPE_CHECKING:
    from .splits import SplitRows

GROUP_WARN_SHARE = 0.01  # test rows in shared groups that make a warning (as duplicates do)
TIME_WARN_SHARE = 0.01   # test rows dated inside the training period that make a warning
SHOWN = 5                # groups named in a message


# -- groups ------------------------------------------------------------------------------
def group_findings(a: SplitRows, b: SplitRows, groups: Any) -> list[Finding]:
    """Groups with rows on both sides of the split."""
    given = given_keys(groups, a, b, "groups")
    keys = [given] if given is not None else evident_groups(a, b)
    return [f for k in keys if (f := _shared_groups(k)) is not None]


def _shared_groups(keys: SplitKeys) -> Finding | None:
    train, test = group_labels(keys)
    seen = np.zeros(max(train.max(initial=-1), test.max(initial=-1)) + 2, dtype=bool)
    seen[train[train >= 0]] = True
    rows = np.flatnonzero((test >= 0) & seen[np.maximum(test, 0)])
    if rows.size == 0:
        return None
    shared = np.unique(test[rows])
    share = rows.size / test.size
    severity = "warning" if share >= GROUP_WARN_SHARE and rows.size >= 2 else "info"
    names = [str(keys.test[np.argmax(test == c)]) for c in shared[:50]]
    told = "" if keys.given else ", a column named like a group key"
    return Finding(
        "split-group-leak", severity,
        f"{shared.size} of {np.unique(test[test >= 0]).size} test groups ({keys.name}{told}) "
        f"also have rows in train: {rows.size} of {test.size} test rows ({share:.1%}) belong "
        f"to groups the model trained on (e.g. {', '.join(names[:SHOWN])})",
        where=keys.name,
        evidence={"test_indices": rows[:256].tolist(), "share": share,
                  "groups": names[:50], "shared_groups": int(shared.size)},
        hint="the test score measures recognising known groups, not new ones: split by group "
             "(sklearn GroupShuffleSplit or GroupKFold with groups=the patient/user/session) "
             "so each group sits on one side only",
    )


# -- time --------------------------------------------------------------------------------
def time_findings(a: SplitRows, b: SplitRows, time: Any) -> list[Finding]:
    """Test rows dated before the last training row."""
    keys = given_keys(time, a, b, "time")
    keys = keys if keys is not None else evident_time(a, b)
    if keys is None:
        return []
    keys = as_times(keys)
    ta, tb = keys.train, keys.test
    ok_a, ok_b = np.isfinite(ta), np.isfinite(tb)
    if ok_a.sum() < 2 or ok_b.sum() == 0:
        return []
    end = ta[ok_a].max()
    rows = np.flatnonzero(ok_b & (tb < end))
    if rows.size == 0:
        return []
    share = rows.size / ok_b.sum()
    severity = "warning" if share >= TIME_WARN_SHARE and rows.size >= 2 else "info"
    follows = None if keys.given else _targets_follow_time(a, b, ta, tb)
    if not keys.given and not follows:
        severity = "info"  # a date on an i.i.d. table: no forecast to spoil
    return [_time_finding(keys, rows, share, severity, follows)]


def _targets_follow_time(a: SplitRows, b: SplitRows, ta: np.ndarray, tb: np.ndarray) -> bool:
    """Whether the training targets near a test row's time predict its target beyond chance."""
    if a.y is None or b.y is None or a.y.ndim != 1 or b.y.ndim != 1:
        return False
    return lift_over_chance(ta, a.y, tb, b.y).significant


def _time_finding(keys: SplitKeys, rows: np.ndarray, share: float, severity: str,
                  follows: bool | None) -> Finding:
    ta, tb = keys.train[np.isfinite(keys.train)], keys.test[np.isfinite(keys.test)]
    span = (f"train {_when(ta.min(), keys)} to {_when(ta.max(), keys)}, test "
            f"{_when(tb.min(), keys)} to {_when(tb.max(), keys)}")
    why = "" if follows is None else (
        "; the targets follow time (neighbours in time predict them)" if follows else
        "; the targets do not follow time here, so this may be an i.i.d. table with a date")
    return Finding(
        "split-time-leak", severity,
        f"{rows.size} of {tb.size} test rows ({share:.1%}) are dated before the end of the "
        f"training data ({span}): the model is tested inside the period it trained on{why}",
        where=keys.name,
        evidence={"test_indices": rows[:256].tolist(), "share": share, "given": keys.given},
        hint="for a forecast, split by time: train on rows before a cut-off and test on rows "
             "after it (shuffle=False, or sklearn TimeSeriesSplit with gap= the window or "
             "horizon), never a shuffled train_test_split",
    )


def _when(t: float, keys: SplitKeys) -> str:
    if keys.datetime:
        return str(np.datetime64(int(t), "ns")).replace("T00:00:00.000000000", "")[:19]
    return f"{t:g}"
