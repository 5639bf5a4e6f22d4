"""From per-feature drift results to ``feature-drift`` findings and a ranked table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...findings import Finding, Findings
from .stats import FeatureDrift

if TYPE_CHECKING:
    import pandas as pd

DATASET_DRIFT_SHARE = 0.5  # Evidently's dataset-drift rule: half the columns drift
UNSEEN_WARN_SHARE = 0.01
MISSING_WARN_CHANGE = 0.1

TABLE_COLUMNS = [
    "feature", "kind", "test", "statistic", "p_value", "p_adjusted", "effect_metric",
    "effect_size", "psi", "drifted", "n_ref", "n_cur", "missing_ref", "missing_cur",
    "unseen_share", "ref_summary", "cur_summary", "p_method", "note",
]


def rank(results: Sequence[FeatureDrift], effect_threshold: float) -> list[FeatureDrift]:
    """Drifted first, then by effect relative to its threshold, then by p-value."""
    def key(r: FeatureDrift) -> tuple:
        effect = r.effect_size if r.effect_size == r.effect_size else -1.0
        p = r.p_value if r.p_value == r.p_value else 2.0
        return (not r.drifted, -effect / effect_threshold, p)

    return sorted(results, key=key)


def drift_table(results: Sequence[FeatureDrift], effect_threshold: float) -> pd.DataFrame:
    """The ranked table of ``DriftView.table``.

    Examples
    --------
    >>> r = FeatureDrift("x", "numeric", "ks", 0.5, 0.01, "normed wasserstein", 0.6, 0.3, 10, 10, 0, 0)
    >>> list(drift_table([r], 0.1)["feature"])
    ['x']
    """
    import pandas as pd

    rows = [{c: getattr(r, c) for c in TABLE_COLUMNS} for r in rank(results, effect_threshold)]
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def drift_findings(
    results: Sequence[FeatureDrift], *, alpha: float, effect_threshold: float, correction: str,
    only_ref: Sequence[str] = (), only_cur: Sequence[str] = (),
) -> Findings:
    """``feature-drift`` findings: drifted features, dataset drift, schema, missing, unseen.

    Examples
    --------
    >>> drift_findings([], alpha=0.05, effect_threshold=0.1, correction="holm")
    Findings: nothing to report
    """
    out: list[Finding] = []
    for r in rank(results, effect_threshold):
        if r.drifted:
            out.append(_drifted(r, alpha, effect_threshold, correction, len(results)))
        out.extend(_missing(r) + _unseen(r) + _untested(r))
    out.extend(_dataset(results))
    out.extend(_schema(only_ref, only_cur))
    out.extend(_small_effects(results, alpha, effect_threshold))
    return Findings(out)


def format_p(p: float) -> str:
    """A p-value in two significant digits; one under 1e-300 (0, or a subnormal such as
    2.81e-317, whose digits mean nothing) is said to be under 1e-300. The browser's
    ``fmtP`` (views/drift_plots.js) follows the same rule, so one table never shows both.

    >>> format_p(0.0), format_p(2.81e-317), format_p(3.2e-45), format_p(0.0123)
    ('< 1e-300', '< 1e-300', '3.2e-45', '0.012')
    """
    return "< 1e-300" if p < 1e-300 else f"{p:.2g}"


def _drifted(r: FeatureDrift, alpha: float, threshold: float, correction: str, m: int) -> Finding:
    test = "KS D" if r.test == "ks" else "chi2"
    corrected = f"{correction}-adjusted over {m} features" if correction != "none" else "uncorrected"
    message = (
        f"{r.feature!r} has drifted: {r.effect_metric} {r.effect_size:.3g} (threshold "
        f"{threshold:g}), {test} = {r.statistic:.3g}, p {_p_clause(r.p_adjusted)} ({corrected}, "
        f"alpha {alpha:g}); reference {r.ref_summary} vs current {r.cur_summary} "
        f"({r.n_ref:,} vs {r.n_cur:,} values)"
    )
    return Finding("feature-drift", "warning", message, where=r.feature,
                   evidence=_evidence(r), hint=_hint(r))


def _p_clause(p: float) -> str:
    text = format_p(p)
    return text if text.startswith("<") else f"= {text}"


def _evidence(r: FeatureDrift) -> dict:
    return {
        "test": r.test, "statistic": r.statistic, "p_value": r.p_value,
        "p_adjusted": r.p_adjusted, "effect_metric": r.effect_metric,
        "effect_size": r.effect_size, "psi": r.psi, "n_ref": r.n_ref, "n_cur": r.n_cur,
    }


def _hint(r: FeatureDrift) -> str:
    if r.kind in ("categorical", "boolean"):
        if r.unseen_share >= UNSEEN_WARN_SHARE:
            return ("new categories appear in the current data: check upstream encoding or a new "
                    "source; map them explicitly before the model sees them, then retrain on recent data")
        return ("the category mix changed (a new population, sampling or a labelling change); "
                "re-weight or retrain on recent data if the change is real")
    if r.kind == "datetime":
        return "the time range moved: expected for timestamps; exclude this feature from the model or drop it here"
    return ("the value distribution moved: look for a unit or scale change, a recalibrated sensor "
            "or a new population upstream; if it is real, retrain or re-weight on recent data "
            "(the view's time window shows when it started)")


def _missing(r: FeatureDrift) -> list[Finding]:
    change = r.missing_cur - r.missing_ref
    if abs(change) < MISSING_WARN_CHANGE:
        return []
    where = "current" if change > 0 else "reference"
    return [Finding(
        "feature-drift", "warning",
        f"{r.feature!r}: missing values went from {r.missing_ref:.1%} of the reference to "
        f"{r.missing_cur:.1%} of the current data",
        where=r.feature, evidence={"missing_ref": r.missing_ref, "missing_cur": r.missing_cur},
        hint=f"a feed or join that stopped delivering values in the {where} data; fix the "
             "source, or impute the same way on both sides before comparing",
    )]


def _untested(r: FeatureDrift) -> list[Finding]:
    if r.test != "none":
        return []
    return [Finding("feature-drift", "info", f"{r.feature!r}: {r.note or 'not compared'}", where=r.feature,
                    hint="leave identifiers and empty columns out (features=[...]), or fix the feed "
                         "that left the column empty")]


def _unseen(r: FeatureDrift) -> list[Finding]:
    if r.unseen_share <= 0:
        return []
    severity = "warning" if r.unseen_share >= UNSEEN_WARN_SHARE else "info"
    examples = ", ".join(repr(e) for e in r.unseen_examples)
    return [Finding(
        "feature-drift", severity,
        f"{r.feature!r}: {r.unseen_share:.2%} of current rows have categories never seen in "
        f"the reference (e.g. {examples})",
        where=r.feature, evidence={"unseen_share": r.unseen_share, "examples": list(r.unseen_examples)},
        hint="an encoder fitted on the reference maps these to 'unknown' or fails; add them "
             "to the vocabulary deliberately, or fix the upstream change that created them",
    )]


def _dataset(results: Sequence[FeatureDrift]) -> list[Finding]:
    tested = [r for r in results if r.test != "none"]
    drifted = [r for r in tested if r.drifted]
    if len(tested) < 2 or len(drifted) < DATASET_DRIFT_SHARE * len(tested):
        return []
    return [Finding(
        "feature-drift", "warning",
        f"dataset drift: {len(drifted)} of {len(tested)} features drifted "
        f"(rule: at least {DATASET_DRIFT_SHARE:.0%}, as Evidently)",
        evidence={"drifted": [r.feature for r in drifted], "tested": len(tested)},
        hint="a change this broad usually comes from the pipeline (another source, a new "
             "preprocessing step, swapped columns), not from the world: compare the pipelines first",
    )]


def _schema(only_ref: Sequence[str], only_cur: Sequence[str]) -> list[Finding]:
    out = []
    for names, here, there in ((only_ref, "reference", "current"), (only_cur, "current", "reference")):
        if names:
            out.append(Finding(
                "feature-drift", "warning",
                f"{len(names)} column(s) only in the {here} data, not compared: "
                f"{', '.join(map(repr, list(names)[:10]))}",
                evidence={f"only_{here[:3]}": list(names)},
                hint=f"the {there} pipeline drops or renames them; align the schemas, or pass "
                     "features=[...] to compare a chosen subset",
            ))
    return out


def _small_effects(results: Sequence[FeatureDrift], alpha: float, threshold: float) -> list[Finding]:
    small = [r for r in results if not r.drifted and r.p_adjusted < alpha]
    if not small:
        return []
    biggest = max(small, key=lambda r: r.effect_size)
    return [Finding(
        "feature-drift", "info",
        f"{len(small)} feature(s) differ significantly but by less than the effect threshold "
        f"{threshold:g} (largest: {biggest.feature!r}, {biggest.effect_metric} "
        f"{biggest.effect_size:.3g}); with {biggest.n_cur:,} rows even tiny shifts are detectable",
        evidence={"features": [r.feature for r in small]},
        hint="statistically real but practically small; lower effect_threshold if such "
             "changes matter for your model",
    )]
