"""``lr_find``: the LR range test (Leslie Smith's, as in fastai and Lightning's Tuner) and
its view: the loss against the learning rate on a log axis, the suggested rate with its
rule, the rate the user trains with, and a finding when that rate sits where the loss
diverges. The loop is :mod:`vizdebug.collect.lr_find`, the reading of the curve
:mod:`vizdebug.analysis.training.lr_range`; this module only arranges them.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._env import require_torch
from ..analysis.training.curves import is_lr_name
from ..analysis.training.lr_range import (
    DIVERGE_FACTOR,
    RULE_TEXT,
    RULES,
    LRCurve,
    lr_findings,
    read_curve,
)
from ..errors import VizdebugError, VizdebugTypeError, describe
from ..findings import Findings, findings_html
from ..findings import fmt_number as _f
from ._base import View
from ._display import shown_where_called
from ._figure_svg import figure_svg
from ._plotly_export import plotly_go

_STOPPED = {"end": "ran to the last rate", "diverged": "stopped: the loss diverged",
            "non-finite": "stopped: the loss was not finite"}


class LRFinderView(View):
    """The result of :func:`lr_find`: ``.lrs``, ``.losses`` (raw and ``.smoothed``),
    ``.suggestion`` and its ``.rule``, ``.suggestions`` (every rule), ``.findings``.

    :meth:`check` tests another rate (or a watched Session's) against the curve.
    """

    title = "vizdebug LR range test"

    def __init__(self, curve: LRCurve, optimizer: str = "", train_lr: float | None = None) -> None:
        self.curve = curve
        self.optimizer = optimizer
        self.train_lr = train_lr
        self.findings = Findings(lr_findings(curve, train_lr, optimizer=optimizer))

    lrs = property(lambda self: self.curve.lrs)
    losses = property(lambda self: self.curve.losses)
    smoothed = property(lambda self: self.curve.smoothed)
    suggestion = property(lambda self: self.curve.suggestion)
    rule = property(lambda self: self.curve.rule)
    suggestions = property(lambda self: dict(self.curve.suggestions))

    def check(self, lr_or_session: Any) -> Findings:
        """Findings for a rate (a number) or for the largest rate a watched Session or a
        stored Run logged (its ``lr/group<i>`` series).

        Examples
        --------
        >>> from vizdebug.analysis.training.lr_range import read_curve, lr_schedule
        >>> lrs = lr_schedule(1e-4, 1.0, 40)
        >>> curve = read_curve(lrs, np.r_[np.linspace(2.3, 0.3, 30), np.geomspace(0.5, 20, 10)], "diverged")
        >>> LRFinderView(curve).check(0.9).codes, LRFinderView(curve).check(1e-3).codes
        (['lr-too-high'], [])
        """
        lr = _rate_of(lr_or_session)
        return Findings(lr_findings(self.curve, lr, optimizer=self.optimizer))

    def to_frame(self) -> Any:
        """The curve as a DataFrame: ``lr``, ``loss``, ``smoothed``."""
        import pandas as pd

        return pd.DataFrame({"lr": self.lrs, "loss": self.losses, "smoothed": self.smoothed})

    def figure(self) -> Any:
        """The curve as a ``plotly.graph_objects.Figure`` (log LR axis; the raw and the
        smoothed loss are :meth:`to_frame`'s columns, with the marked rates); needs plotly."""
        return plotly_go().Figure(self._figure_dict())

    def __repr__(self) -> str:
        s = self.suggestion
        said = f"suggested {s:.3g} ({self.rule})" if s is not None else "no suggestion"
        return (f"<LRFinderView: {len(self.lrs)} steps, {_f(self.lrs[0])}..{_f(self.lrs[-1])}, "
                f"{said}, {len(self.findings)} findings>")

    def _figure_dict(self) -> dict[str, Any]:
        c = self.curve
        keep = np.isfinite(c.smoothed)
        x, raw, sm = c.lrs[keep].tolist(), c.losses[keep].tolist(), c.smoothed[keep].tolist()
        data = [
            {"type": "scatter", "mode": "markers", "x": x, "y": raw, "name": "loss (each batch)",
             "marker": {"color": "#9ecae1", "size": 3}},
            {"type": "scatter", "mode": "lines", "x": x, "y": sm, "name": "smoothed loss",
             "line": {"color": "#1f77b4", "width": 2}},
        ]
        shapes = []
        for lr, name, colour in self._marks():
            y = float(np.interp(math.log10(lr), np.log10(c.lrs[keep]), c.smoothed[keep])) \
                if keep.any() else 0.0
            data.append({"type": "scatter", "mode": "markers", "x": [lr], "y": [y], "name": name,
                         "marker": {"color": colour, "size": 9}})
            shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": lr, "x1": lr,
                           "y0": 0, "y1": 1, "line": {"color": colour, "dash": "dash"}})
        layout = {"height": 340, "margin": {"l": 60, "r": 210, "t": 20, "b": 45},
                  "xaxis": {"type": "log", "title": {"text": "learning rate"}},
                  "yaxis": {"title": {"text": "loss"}, "range": self._y_range()},
                  "shapes": shapes, "legend": {"x": 1.02, "y": 1}}
        return {"data": data, "layout": layout}

    def _marks(self) -> list[tuple[float, str, str]]:
        marks = []
        if self.suggestion is not None:
            marks.append((self.suggestion, f"suggested {_f(self.suggestion)}", "#2ca02c"))
        if self.curve.diverge_lr is not None:
            marks.append((self.curve.diverge_lr, f"diverges {_f(self.curve.diverge_lr)}", "#d62728"))
        if self.train_lr is not None and self.train_lr > 0:
            marks.append((self.train_lr, f"you train at {_f(self.train_lr)}", "#ff7f0e"))
        return marks

    def _y_range(self) -> list[float]:
        """From under the lowest loss to a little over the start: the divergence's climb
        past that is clipped (said under the chart), or it would flatten the valley."""
        sm = self.smoothed[np.isfinite(self.smoothed)]
        if sm.size == 0:
            return [0.0, 1.0]
        lo, hi = float(sm.min()), float(max(sm[0], np.percentile(sm, 90)))
        pad = (hi - lo) * 0.08 or abs(hi) * 0.1 or 1.0
        return [lo - pad, hi + 2 * pad]

    def _static_html(self) -> str:
        c = self.curve
        s = self.suggestion
        head = (f"<h3>LR range test: suggested rate {_f(s)}</h3>" if s is not None else
                "<h3>LR range test: no rate suggested (the loss never fell)</h3>")
        rule = html.escape(RULE_TEXT[self.rule])
        others = ", ".join(f"{html.escape(r)} {_f(v)}" for r, v in c.suggestions.items()
                           if r != self.rule)
        opt = f" with {html.escape(self.optimizer)}" if self.optimizer else ""
        top = float(self._y_range()[1])
        clipped = int(np.sum(np.isfinite(c.smoothed) & (c.smoothed > top)))
        note = (f"<div class='vd-note'>Rule {rule}.{' Other rules: ' + others + '.' if others else ''}"
                f"</div><div class='vd-note'>{len(c.lrs)} steps{opt} from {_f(c.lrs[0])} to "
                f"{_f(c.lrs[-1])}; {_STOPPED[c.stopped]}; model, optimizer and RNG states "
                "restored afterwards."
                + (f" {clipped} smoothed points above {_f(top)} are clipped." if clipped else "")
                + "</div>")
        return head + note + findings_html(self.findings) + figure_svg(self._figure_dict(), 900)


def _rate_of(lr_or_session: Any) -> float:
    if isinstance(lr_or_session, (int, float)) and not isinstance(lr_or_session, bool):
        return float(lr_or_session)
    records = getattr(lr_or_session, "records", None)
    if not callable(records) or isinstance(lr_or_session, type):
        raise VizdebugTypeError(f"check() needs a learning rate or a Session/Run that logged one, "
                                f"got {describe(lr_or_session)}")
    rates = [np.asarray(values, dtype=float) for name, (_, values) in records().scalars.items()
             if is_lr_name(name) and len(values)]
    if not rates or not np.isfinite(np.concatenate(rates)).any():
        raise VizdebugError("check() was given a Session/Run with no learning rate logged yet "
                            "(lr/group<i> series): train a few steps first, or pass the rate")
    return float(np.nanmax(np.concatenate(rates)))


def lr_find(model: Any, loader: Any, loss_fn: Any = None, optimizer: Any = None, *,
            start_lr: float = 1e-7, end_lr: float = 10.0, num_steps: int = 100,
            diverge_factor: float = DIVERGE_FACTOR, rule: str = "valley",
            train_lr: float | None = None, batch_fn: Callable | None = None,
            forward: Callable | None = None) -> LRFinderView:
    """LR range test: train ``num_steps`` batches at rates rising exponentially from
    ``start_lr`` to ``end_lr`` and show the loss against the rate, with a suggested rate.

    The test stops once the smoothed loss passes ``diverge_factor`` x its best. Afterwards
    the model (parameters, buffers, gradients, train/eval mode of each module), the optimizer
    (its state, momentum buffers included, and each group's hyperparameters) and the RNG
    states of torch, numpy and Python are exactly as before: training that follows is
    bitwise the same as without the test.

    Parameters
    ----------
    model
        A ``torch.nn.Module`` (on any device; batches are moved to its device).
    loader
        A DataLoader or any re-iterable of batches: ``(x, y)`` tuples, dicts (the input and
        target keys vizdebug knows), or anything with ``batch_fn``/``forward``.
    loss_fn
        ``loss_fn(output, target)`` returning one number (a 0-d tensor).
    optimizer
        The optimizer you train with (its type and settings shape the curve); ``None``
        uses a throwaway ``torch.optim.Adam``. Every group gets the test's rate.
    rule
        Which rule suggests the rate: ``"valley"`` (fastai's default), ``"steepest"``
        (Lightning's) or ``"minimum/10"``; all three are in ``.suggestions``.
    train_lr
        The rate you mean to train with (default: the optimizer's first group's ``lr``);
        past where the loss diverges it gives an ``lr-too-high`` finding.
    batch_fn
        ``batch_fn(batch) -> (inputs, target)`` for batches of another shape.
    forward
        ``forward(model, batch) -> loss`` to compute the loss yourself (``loss_fn`` unused).

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    >>> x, y = torch.randn(256, 4), torch.randint(0, 3, (256,))
    >>> batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 256, 32)]
    >>> view = lr_find(model, batches, torch.nn.CrossEntropyLoss(), num_steps=30, end_lr=1.0)
    >>> view.rule, len(view.lrs) <= 30
    ('valley', True)
    """
    require_torch("lr_find()")
    from ..collect.lr_find import check_arguments, run_range_test

    check_arguments(model, loader, loss_fn, optimizer, start_lr, end_lr, num_steps, forward)
    if rule not in RULES:
        raise VizdebugError(f"rule must be one of {list(RULES)}, got {rule!r}")
    if not isinstance(diverge_factor, (int, float)) or not diverge_factor > 1:
        raise VizdebugError(f"diverge_factor must be a number above 1, got {diverge_factor!r}")
    if train_lr is None and optimizer is not None:
        train_lr = float(optimizer.param_groups[0]["lr"])
    test = run_range_test(model, loader, loss_fn, optimizer, start_lr=float(start_lr),
                          end_lr=float(end_lr), num_steps=num_steps,
                          diverge_factor=float(diverge_factor), batch_fn=batch_fn, forward=forward)
    curve = read_curve(test.lrs, test.losses, test.stopped, rule)
    return shown_where_called(LRFinderView(curve, test.optimizer, train_lr))
