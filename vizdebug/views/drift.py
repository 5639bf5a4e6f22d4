"""The drift explorer: ranked per-feature tests, overlays and sliders that answer in the browser.

The statistics come from :mod:`vizdebug.analysis.drift`; this module arranges them. The
interactive part is one small script (``drift.js``) drawing SVG from precomputed sketches:
no plotly.js on the page, no kernel round trip, so sliders keep working while the kernel
trains. The same script runs in the live widget (anywidget) and in static HTML.
"""

from __future__ import annotations

import html
import json
import math
import uuid
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis import drift as drift_stats
from ..analysis import sketches
from ..analysis.drift_findings import drift_findings, drift_table, rank
from ..analysis.drift_input import as_table, canonical, columns_for
from ..errors import VizdebugError
from ._base import View, live_esm
from ._drift_svg import overlay_figure

if TYPE_CHECKING:
    import pandas as pd

    from ..findings import Findings

_JS = Path(__file__).with_name("drift.js")


@cache
def _js_source() -> str:
    return _JS.read_text(encoding="utf-8")


def _to_json(data: Any) -> str:
    """JSON safe to place inside ``<script>``: no ``<`` survives, non-finite numbers are null."""
    text = json.dumps(_finite(data), separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _finite(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else (None if math.isnan(x) else (1e308 if x > 0 else -1e308))
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


class DriftView(View):
    """Per-feature drift between a reference and a current data set.

    Build it with :func:`compare_distributions`. ``table`` is ranked by drift,
    ``findings`` holds ``feature-drift`` findings; in a notebook it shows the table, an
    overlay of the selected feature and sliders (bins, significance, effect threshold, time
    window, what-if shift/scale) that redraw in the browser.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> view = compare_distributions({"x": rng.normal(size=300)}, {"x": rng.normal(1, size=300)})
    >>> bool(view.table.loc[0, "drifted"])
    True
    """

    title = "vizdebug: drift"
    uses_plotly = False

    def __init__(self, results: list[drift_stats.FeatureDrift], *, alpha: float,
                 effect_threshold: float, correction: str, only_ref: list[str] | None = None,
                 only_cur: list[str] | None = None, buckets: sketches.Buckets | None = None,
                 time_name: str | None = None) -> None:
        self.results = rank(results, effect_threshold)
        self.alpha = alpha
        self.effect_threshold = effect_threshold
        self.correction = correction
        self.only_ref = list(only_ref or [])
        self.only_cur = list(only_cur or [])
        self.buckets = buckets
        self.time_name = time_name

    @property
    def table(self) -> pd.DataFrame:
        """Features ranked by drift: ``feature``, ``kind``, ``test``, ``statistic``, ``p_value``, ``drifted``, ..."""
        return drift_table(self.results, self.effect_threshold)

    @property
    def findings(self) -> Findings:
        """``feature-drift`` findings with numbers and a hint."""
        return drift_findings(self.results, alpha=self.alpha, effect_threshold=self.effect_threshold,
                              correction=self.correction, only_ref=self.only_ref, only_cur=self.only_cur)

    @property
    def drifted(self) -> list[str]:
        """Names of the drifted features, most drifted first."""
        return [r.feature for r in self.results if r.drifted]

    def __repr__(self) -> str:
        n = len(self.results)
        top = ", ".join(f"{r.feature} ({r.effect_metric} {r.effect_size:.3g})" for r in self.results if r.drifted)
        return f"DriftView: {len(self.drifted)} of {n} features drifted" + (f": {top}" if top else "")

    def data(self) -> dict[str, Any]:
        """Everything the browser needs, JSON-ready: settings, ranked features and their sketches."""
        feats = []
        for r in self.results:
            row = {c: getattr(r, c) for c in (
                "feature", "kind", "test", "statistic", "p_value", "p_adjusted", "effect_metric",
                "effect_size", "psi", "drifted", "n_ref", "n_cur", "missing_ref", "missing_cur",
                "unseen_share", "ref_summary", "cur_summary", "note")}
            row["sketch"] = r.sketch
            feats.append(row)
        time = None
        if self.buckets is not None:
            time = {"edges": [float(e) for e in self.buckets.edges], "is_datetime": self.buckets.is_datetime,
                    "name": self.time_name}
        return {"alpha": self.alpha, "effect_threshold": self.effect_threshold,
                "correction": self.correction, "features": feats, "time": time}

    def _static_html(self) -> str:
        # unique across kernel sessions: saved outputs of an earlier run share the page
        div_id = f"vd-drift-{uuid.uuid4().hex[:12]}"
        return (
            f"<h3>{html.escape(repr(self).split(':')[0])}: {len(self.drifted)} of "
            f"{len(self.results)} features drifted</h3>"
            f"{self.findings.to_html()}"
            f'<div id="{div_id}" class="vd-drift-app">{self._table_html()}{self._static_overlays()}</div>'
            f'<script type="application/json" id="{div_id}-data">{_to_json(self.data())}</script>'
            f"<script>(function(){{{_js_source()}\nvar el=document.getElementById('{div_id}');"
            f"var d=JSON.parse(document.getElementById('{div_id}-data').textContent);"
            f"vdDriftMount(el,d,null);}})();</script>"
        )

    def _table_html(self) -> str:
        """The ranked table as plain HTML (what shows where scripts do not run)."""
        df = self.table
        cols = ["feature", "kind", "test", "statistic", "p_adjusted", "effect_metric", "effect_size", "psi", "drifted"]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(_cell(row[c]))}</td>" for c in cols) + "</tr>"
            for _, row in df.iterrows()
        )
        return f'<table class="vd-table vd-drift-table"><tr>{head}</tr>{body}</table>'

    def _static_overlays(self, limit: int = 3) -> str:
        """Overlays of the most drifted features, drawn here for pages without scripts."""
        figures = [
            overlay_figure(r.feature, r.kind, r.sketch,
                           f"({r.effect_metric} {r.effect_size:.3g}{', drifted' if r.drifted else ''})")
            for r in self.results[:limit]
        ]
        return f'<div class="vd-static-plots">{"".join(figures)}</div>'

    def _build_widget(self) -> Any:
        return _widget_class()(data=self.data(), selected=self.results[0].feature if self.results else "",
                               alpha=self.alpha, effect_threshold=self.effect_threshold)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if math.isfinite(v) else ("–" if math.isnan(v) else str(v))
    return str(v)


@cache
def _widget_class() -> type:
    import anywidget
    import traitlets

    class DriftWidget(anywidget.AnyWidget):
        """The live drift explorer; slider positions are mirrored into traits."""

        _esm = live_esm(_js_source() + "\nexport default { render({ model, el }) { "
                        "vdDriftMount(el, model.get('data'), model); } };\n")
        data = traitlets.Dict().tag(sync=True)
        fallback_id = traitlets.Unicode("").tag(sync=True)  # the static twin to hide
        selected = traitlets.Unicode("").tag(sync=True)
        alpha = traitlets.Float(0.05).tag(sync=True)
        effect_threshold = traitlets.Float(0.1).tag(sync=True)
        bins = traitlets.Int(30).tag(sync=True)
        window = traitlets.List([]).tag(sync=True)
        shift = traitlets.Float(0.0).tag(sync=True)
        scale = traitlets.Float(1.0).tag(sync=True)

        def __init__(self, **kwargs: Any) -> None:
            kwargs["data"] = _finite(kwargs.get("data", {}))
            super().__init__(**kwargs)

    return DriftWidget


def compare_distributions(
    reference: Any, current: Any, *, features: list[str] | None = None, time: Any = None,
    categorical: list[str] | None = None, kinds: dict[str, str] | None = None,
    alpha: float = 0.05, effect_threshold: float = 0.1, correction: str = "holm",
    window: tuple[Any, Any] | None = None, time_buckets: int = 24,
) -> DriftView:
    """Compare each feature's distribution between ``reference`` and ``current``.

    Parameters
    ----------
    reference, current : DataFrame, dict of arrays, 2-d ndarray or tensor, or a Parquet
        path / pyarrow dataset (streamed in record batches into sketches).
    features : the columns to compare (default: all shared columns).
    time : the name of a time column of ``current`` (or an array with one value per current
        row): the view gets a time-window slider and a drift-over-time strip.
    categorical : columns to treat as categories; ``kinds`` overrides any feature's kind
        (``numeric``, ``categorical``, ``boolean``, ``datetime``).
    alpha, correction : significance after correcting for many features (``holm``,
        ``bonferroni``, ``bh`` or ``none``).
    effect_threshold : the smallest effect called drift (normed Wasserstein for numbers,
        Jensen-Shannon distance for categories).
    window : ``(start, end)`` of ``time`` to keep from the current data (either may be None).

    Returns
    -------
    DriftView

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> ref = pd.DataFrame({"a": rng.normal(size=1000), "b": rng.choice(list("xyz"), 1000)})
    >>> cur = pd.DataFrame({"a": rng.normal(0.5, size=1000), "b": rng.choice(list("xyz"), 1000)})
    >>> compare_distributions(ref, cur).drifted
    ['a']
    """
    from ..analysis.streaming import is_stream_source, stream_compare

    if correction not in drift_stats.CORRECTIONS:
        raise VizdebugError(f"correction must be one of {drift_stats.CORRECTIONS}, got {correction!r}")
    if is_stream_source(reference) or is_stream_source(current):
        results, only_ref, only_cur = stream_compare(reference, current, features=features,
                                                     categorical=categorical, kinds=kinds)
        drift_stats.decide(results, alpha=alpha, effect_threshold=effect_threshold, correction=correction)
        return DriftView(results, alpha=alpha, effect_threshold=effect_threshold,
                         correction=correction, only_ref=only_ref, only_cur=only_cur)
    current, time_values, time_name, is_dt = _split_time(current, time, window)
    pairs, only_ref, only_cur = columns_for(reference, current, features=features,
                                           categorical=categorical, kinds=kinds)
    if time_name is not None:
        pairs = [p for p in pairs if p[0].name != time_name]
        only_cur = [n for n in only_cur if n != time_name]
    buckets = sketches.make_buckets(time_values, time_buckets, is_dt) if time_values is not None else None
    results = drift_stats.compare_columns(pairs, alpha=alpha, effect_threshold=effect_threshold,
                                          correction=correction, buckets=buckets)
    return DriftView(results, alpha=alpha, effect_threshold=effect_threshold, correction=correction,
                     only_ref=only_ref, only_cur=only_cur, buckets=buckets, time_name=time_name)


def _split_time(current: Any, time: Any, window: tuple[Any, Any] | None) -> tuple[Any, Any, str | None, bool]:
    """The time values of the current rows (epoch ms or numbers), with ``window`` applied."""
    import numpy as np

    if time is None:
        if window is not None:
            raise VizdebugError("window=(start, end) needs time=<a time column of the current data>")
        return current, None, None, False
    table = as_table(current, "current")
    if isinstance(time, str):
        if time not in table:
            raise VizdebugError(f"time={time!r} is not a column of the current data; its columns are {list(table)[:20]}")
        raw, name = table[time], time
    else:
        raw, name = time, None
    n_rows = len(next(iter(table.values()))) if table else 0
    if len(raw) != n_rows:
        raise VizdebugError(f"time has {len(raw)} values but the current data has {n_rows} rows")
    is_dt = _is_datetime(raw)
    values = canonical(raw, "datetime" if is_dt else "numeric", name or "time", "current")
    if window is None:
        return current, values, name, is_dt
    keep = _window_mask(values, window, is_dt)
    if not keep.any():
        raise VizdebugError(f"window {window} keeps no current rows (time spans {np.nanmin(values)} to {np.nanmax(values)})")
    return {k: np.asarray(v)[keep] for k, v in table.items()}, values[keep], name, is_dt


def _is_datetime(raw: Any) -> bool:
    import numpy as np
    import pandas as pd

    dtype = getattr(raw, "dtype", None) or np.asarray(raw).dtype
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return True
    if getattr(dtype, "kind", "") == "O":
        sample = [x for x in list(raw[:50]) if x is not None]
        return bool(sample) and all(isinstance(x, (pd.Timestamp, str)) or hasattr(x, "isoformat") for x in sample)
    return False


def _window_mask(values: Any, window: tuple[Any, Any], is_dt: bool) -> Any:
    import numpy as np
    import pandas as pd

    def bound(b: Any, default: float) -> float:
        if b is None:
            return default
        if not is_dt:
            return float(b)
        ts = pd.Timestamp(b)
        ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
        return float(ts.value // 1_000_000)

    lo, hi = bound(window[0], -np.inf), bound(window[1], np.inf)
    return (values >= lo) & (values < hi)
