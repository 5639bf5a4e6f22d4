"""vizdebug's one tick and number-format module in Python: the static pictures' ticks and
labels (the dashboard's twin, a report, a stored run). Its browser twin is
``static/chart_ticks.js``, which the live charts and the drift explorer use; the two give the
same ticks and the same labels for the same range (``tests/test_ticks.py`` runs both), so a
chart and its static twin read alike.

The formats are the two the charts use: ``"~g"`` (four significant digits, exponent
notation from a million up and below 1e-4) and ``".0%"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal

__all__ = ["format_tick", "log_ticks", "nice_ticks", "tick_labels"]


def _js_number(v: float) -> str:
    """A float as JavaScript's ``String(v)`` writes it: the shortest digits that read back
    as ``v`` (as ``repr``), positional from 1e-6 up to 1e21 (``1.0`` is ``"1"``, ``1e-05``
    is ``"0.00001"``), exponent notation beyond (``"1.5e-7"``, ``"2e+21"``)."""
    if v == 0:
        return "0"
    digits = Decimal(repr(v))
    exp = digits.adjusted()
    if -7 < exp < 21:
        text = format(digits, "f")
        return text.rstrip("0").rstrip(".") if "." in text else text
    mantissa = format(digits.scaleb(-exp), "f")
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    return f"{mantissa}e{'+' if exp > 0 else '-'}{abs(exp)}"


def _round_significant(v: float, digits: int) -> Decimal:
    """``v`` to ``digits`` significant digits as JavaScript's ``toPrecision`` rounds: from
    the double's exact value, a tie away from zero (Python's formats round a tie to even,
    so 1402500 would be 1.402e6 here and 1.403e6 in the browser)."""
    exact = Decimal(v)
    if exact == 0:
        return exact
    for exp in (exact.adjusted(), exact.adjusted() + 1):  # 9.9995 to four digits is 10.00
        rounded = exact.quantize(Decimal(1).scaleb(exp - digits + 1), rounding=ROUND_HALF_UP)
        if rounded.adjusted() == exp:
            return rounded
    return rounded


def _precision(v: float, digits: int) -> float:
    """``parseFloat(v.toPrecision(digits))``."""
    return float(_round_significant(v, digits))


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round values in ``[lo, hi]``: steps of 1, 2 or 5 times a power of ten.

    Examples
    --------
    >>> nice_ticks(0, 1, 5)
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> nice_ticks(0.0641, 0.9, 5)
    [0.2, 0.4, 0.6, 0.8]
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [float(lo)] if math.isfinite(lo) else []
    raw = (hi - lo) / max(n, 1)
    mag = math.pow(10, math.floor(math.log10(raw)))
    step = mag * next((m for m in (1, 2, 5, 10) if m * mag >= raw), 10)
    out = []
    k = math.ceil(lo / step - 1e-9)
    while k * step <= hi + step * 1e-9:
        out.append(_precision(k * step, 12))
        k += 1
    return out


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks of a log axis over ``[lo, hi]`` given as log10 values: decades, and 2 and 5
    times them when the range spans fewer than 2.5 decades; at most eight.

    Examples
    --------
    >>> [round(10 ** v, 6) for v in log_ticks(-1, 0.5)]
    [0.1, 0.2, 0.5, 1.0, 2.0]
    """
    mults = (1, 2, 5) if hi - lo < 2.5 else (1,)
    out = [math.log10(m) + d for d in range(math.floor(lo), math.ceil(hi) + 1) for m in mults]
    out = [v for v in out if lo - 1e-9 <= v <= hi + 1e-9]
    every = max(1, math.ceil(len(out) / 8))
    return out[::every]


def format_tick(v: float | None, fmt: str = "~g") -> str:
    """A number as the charts write it: ``".0%"`` as a whole percentage, anything else as
    ``"~g"``: four significant digits, trailing zeros dropped, exponent notation (``1.5e-5``,
    ``2e6``) from a million up and below 1e-4. Not a finite number: its name.

    Examples
    --------
    >>> [format_tick(1234567), format_tick(0.000012), format_tick(0.1 + 0.2),
    ...  format_tick(0.456, ".0%")]
    ['1.235e6', '1.2e-5', '0.3', '46%']
    """
    if v is None:
        return "null"
    v = float(v)
    if not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if fmt == ".0%":
        return f"{math.floor(v * 100 + 0.5)}%"
    a = abs(v)
    if a != 0 and (a >= 1e6 or a < 1e-4):
        rounded = _round_significant(v, 4)  # v.toExponential(3), trailing zeros dropped
        exp = rounded.adjusted()
        mantissa = format(rounded.scaleb(-exp), "f")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{exp}"
    return _js_number(_precision(v, 4))


def tick_labels(values: Sequence[float], fmt: str = "~g") -> list[str]:
    """The labels of ``values`` that tell neighbours apart: more digits where
    :func:`format_tick` writes two alike (413.475, 413.5 and 413.525 are all ``413.5`` to
    four digits).

    Examples
    --------
    >>> tick_labels([413.475, 413.5, 413.525])
    ['413.48', '413.5', '413.52']
    """
    labels = [format_tick(v, fmt) for v in values]
    digits = 5
    while digits <= 12 and fmt != ".0%" and len(set(labels)) < len(labels):
        labels = [_js_number(_precision(v, digits)) for v in values]
        digits += 1
    return labels
