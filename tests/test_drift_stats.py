"""Drift statistics against scipy, false-alarm rate, and detection power."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats
from scipy.spatial.distance import jensenshannon

from vizdebug.analysis.drift.stats import (
    adjust_pvalues,
    compare_columns,
    js_from_counts,
    ks_pvalue,
    ks_wasserstein_sorted,
    psi_from_counts,
)
from vizdebug.data.tables import columns_for


def _ours(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float, str]:
    sa, sb = np.sort(a), np.sort(b)
    d, w = ks_wasserstein_sorted(sa, sb)
    d, p, method = ks_pvalue(d, len(a), len(b), sa, sb)
    return d, p, w, method


@pytest.mark.parametrize(
    ("n1", "n2", "decimals", "shift"),
    [(1, 1, None, 0.0), (1, 50, None, 0.0), (30, 17, None, 0.3), (500, 800, 1, 0.1),
     (10_000, 9_000, None, 0.02), (20_000, 15_000, 2, 0.01), (150_000, 90_000, None, 0.005)],
)
def test_ks_and_wasserstein_equal_scipy(n1: int, n2: int, decimals: int | None, shift: float) -> None:
    rng = np.random.default_rng(n1 + n2)
    a, b = rng.normal(size=n1), rng.normal(shift, 1.2, size=n2)
    if decimals is not None:  # many ties
        a, b = np.round(a, decimals), np.round(b, decimals)
    d, p, w, method = _ours(a, b)
    ref = stats.ks_2samp(a, b)
    assert d == ref.statistic
    if method == "maag-dicaire tail":  # far below any alpha: order of magnitude is what counts
        assert p < 1e-8 and abs(np.log10(p) - np.log10(ref.pvalue)) < 0.1
    else:
        assert p == pytest.approx(ref.pvalue, rel=1e-12, abs=0)
    assert w == pytest.approx(stats.wasserstein_distance(a, b), rel=1e-12, abs=1e-15)
    assert method in ("exact", "asymptotic", "maag-dicaire tail")


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 60), elements=st.floats(-1e6, 1e6, allow_nan=False)),
    arrays(np.float64, st.integers(1, 60), elements=st.integers(-5, 5).map(float)),
)
def test_ks_and_wasserstein_equal_scipy_any_samples(a: np.ndarray, b: np.ndarray) -> None:
    d, p, w, _ = _ours(a, b)
    ref = stats.ks_2samp(a, b)
    assert d == ref.statistic and p == ref.pvalue
    assert w == pytest.approx(stats.wasserstein_distance(a, b), rel=1e-9, abs=1e-9)


def test_float32_input_gives_scipy_numbers_of_the_same_values() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.normal(size=30_000).astype(np.float32), rng.normal(0.03, size=20_000).astype(np.float32)
    (r,) = compare_columns(columns_for({"x": a}, {"x": b})[0])
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = stats.ks_2samp(a64, b64)
    assert r.statistic == ref.statistic and r.p_value == pytest.approx(ref.pvalue, rel=1e-12)
    w = stats.wasserstein_distance(a64, b64)
    assert r.effect_size == pytest.approx(w / np.std(a64), rel=1e-12)


@pytest.mark.parametrize("shift", [0.07, 0.09])
def test_far_tail_pvalue_approximation_within_two_percent(shift: float) -> None:
    # scipy spends ~0.5 s per feature here; the approximation is used only far below any alpha
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=60_000), rng.normal(shift, size=60_000)
    d, p, _, method = _ours(a, b)
    assert method == "maag-dicaire tail"
    assert 1e-30 < p < 1e-8
    assert p == pytest.approx(stats.ks_2samp(a, b).pvalue, rel=0.02)


def test_chi2_and_js_equal_scipy() -> None:
    rng = np.random.default_rng(0)
    ref = {"c": rng.choice(list("abcd"), 3000, p=[0.4, 0.3, 0.2, 0.1])}
    cur = {"c": rng.choice(list("abcde"), 2000, p=[0.3, 0.3, 0.2, 0.1, 0.1])}
    pairs, _, _ = columns_for(ref, cur)
    (r,) = compare_columns(pairs)
    cats = list("abcde")
    rc = np.array([np.sum(ref["c"] == k) for k in cats])
    cc = np.array([np.sum(cur["c"] == k) for k in cats])
    chi2, p, _, _ = stats.chi2_contingency(np.vstack([rc, cc]))
    assert r.statistic == pytest.approx(chi2, rel=1e-12) and r.p_value == pytest.approx(p, rel=1e-9)
    assert r.effect_size == pytest.approx(jensenshannon(rc, cc, base=2), rel=1e-12)
    assert js_from_counts(rc, cc) == pytest.approx(jensenshannon(rc, cc, base=2))
    assert r.unseen_share == pytest.approx(cc[4] / cc.sum())
    assert r.unseen_examples == ["e"]


def test_psi_known_value() -> None:
    assert psi_from_counts(np.array([50, 50]), np.array([50, 50])) == 0
    expected = (0.6 - 0.5) * np.log(0.6 / 0.5) + (0.4 - 0.5) * np.log(0.4 / 0.5)
    assert psi_from_counts(np.array([50, 50]), np.array([60, 40])) == pytest.approx(expected)


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.integers(1, 30), elements=st.floats(0, 1)))
def test_holm_matches_definition_and_bh_matches_scipy(p: np.ndarray) -> None:
    m = len(p)
    order = np.argsort(p, kind="stable")
    brute = np.empty(m)
    for rank, i in enumerate(order):
        brute[i] = min(1.0, max((m - k) * p[order[k]] for k in range(rank + 1)))
    assert np.allclose(adjust_pvalues(p, "holm"), brute)
    assert np.allclose(adjust_pvalues(p, "bh"), stats.false_discovery_control(p))
    assert np.allclose(adjust_pvalues(p, "bonferroni"), np.minimum(1, p * m))


def test_adjust_keeps_nan_untested() -> None:
    out = adjust_pvalues(np.array([0.01, np.nan, 0.02]), "holm")
    assert np.isnan(out[1]) and out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.02)


def _null_dataset(rng: np.random.Generator, n: int) -> tuple[dict, dict]:
    def draw() -> dict:
        cols = {f"x{j}": rng.normal(size=n) for j in range(6)}
        cols |= {f"g{j}": rng.gamma(2.0, size=n) for j in range(2)}
        cols |= {f"c{j}": rng.choice(list("abcde"), n, p=[0.4, 0.3, 0.15, 0.1, 0.05]) for j in range(2)}
        return cols

    return draw(), draw()


def _null_rates(runs: int, n: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    per_feature = any_raw = any_significant = any_drift = tested = 0
    for _ in range(runs):
        ref, cur = _null_dataset(rng, n)
        results = compare_columns(columns_for(ref, cur)[0], workers=1)
        tested += len(results)
        per_feature += sum(r.p_value < 0.05 for r in results)
        any_raw += any(r.p_value < 0.05 for r in results)
        any_significant += any(r.p_adjusted < 0.05 for r in results)
        any_drift += any(r.drifted for r in results)
    return {"per_feature": per_feature / tested, "any_uncorrected": any_raw / runs,
            "any_significant": any_significant / runs, "any_drift": any_drift / runs}


def test_false_alarm_rate_on_identical_distributions_is_bounded() -> None:
    # 300 data sets x 10 features (normal, gamma, categorical) from one distribution.
    rates = _null_rates(300, 400, 2026)
    # p-values are calibrated: about 5 % of single features fall below 0.05 ...
    assert 0.03 <= rates["per_feature"] <= 0.07, rates
    # ... so an uncorrected rule (Evidently's) alarms on a third or more of clean data sets,
    assert rates["any_uncorrected"] >= 0.25, rates
    # while Holm keeps the family-wise rate at alpha = 0.05 (0.09: > 3 standard errors above)
    assert rates["any_significant"] <= 0.09 and rates["any_drift"] <= 0.09, rates


def test_no_false_alarm_on_large_identical_samples() -> None:
    # with many rows, chance differences are significant now and then but never large
    rates = _null_rates(30, 20_000, 99)
    assert rates["any_drift"] == 0, rates


def test_big_shift_on_few_rows_is_drift_and_tiny_shift_on_many_rows_is_not() -> None:
    rng = np.random.default_rng(7)
    small = compare_columns(columns_for({"x": rng.normal(size=200)}, {"x": rng.normal(0.8, size=200)})[0])
    assert small[0].drifted
    big = compare_columns(columns_for({"x": rng.normal(size=1_000_000)},
                                      {"x": rng.normal(0.01, size=1_000_000)})[0])
    assert big[0].p_adjusted < 1e-6 and not big[0].drifted
    assert big[0].effect_size < 0.05


@pytest.mark.parametrize(("kind", "shift"), [("mean", 0.5), ("scale", 1.8), ("tail", 0.3)])
def test_known_numeric_shifts_are_detected(kind: str, shift: float) -> None:
    rng = np.random.default_rng(11)
    ref = {"x": rng.normal(size=3000), "y": rng.normal(size=3000)}
    x = rng.normal(size=3000)
    if kind == "mean":
        x = x + shift
    elif kind == "scale":
        x = x * shift
    else:
        x = np.where(rng.random(3000) < shift, rng.normal(4, size=3000), x)
    results = compare_columns(columns_for(ref, {"x": x, "y": rng.normal(size=3000)})[0])
    verdict = {r.feature: r.drifted for r in results}
    assert verdict == {"x": True, "y": False}


def test_categorical_shift_detected() -> None:
    rng = np.random.default_rng(5)
    ref = {"c": rng.choice(list("abc"), 5000, p=[0.6, 0.3, 0.1])}
    cur = {"c": rng.choice(list("abc"), 5000, p=[0.3, 0.3, 0.4])}
    (r,) = compare_columns(columns_for(ref, cur)[0])
    assert r.test == "chi2" and r.drifted and r.effect_size > 0.1
