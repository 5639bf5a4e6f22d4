"""The training dashboard's numbers as frames, and its panels as plotly figures.

``Dashboard.to_frame(panel)`` / ``Dashboard.figure(panel)`` (and the same on a ``Session``
or a stored ``Run``) come from here. Each panel's frame is built from the source's
:class:`~vizdebug.records.TrainingRecords` (through ``analysis/`` where a statistic is
needed), and its figure from that frame only (:mod:`._plotly_export`), so a figure holds
exactly the frame's numbers:

========================  ================================================================
panel                     frame (long form)
========================  ================================================================
``curves``                every logged metric: ``step``, ``name``, ``value``
``grads``                 per parameter and sampled step: ``grad_norm``, ``weight_norm``,
                          ``update_ratio`` (figure: heat of log10 gradient norm)
``health``                per module, at the latest sample: ``dead``, ``saturated``, ``zero``
                          (``saturated`` NaN where no bounded activation reads the output)
``timing``                the recent batches: ``batch``, ``wait_ms``, ``compute_ms``
``system``                the process: ``seconds``, ``cpu_percent``, ``rss_mib``, ``gpu_mib``
``epochs``                a row per epoch: ``epoch``, ``first_step``, ``last_step``, metrics
``activations``           per module and sampled step: ``mean``, ``low``, ``high``, ``absmax``
``parameters``            per parameter and sampled step: ``weight_rms``, ``grad_rms``,
                          ``update_ratio`` (figure: heat of log10 weight RMS)
``optimizer``             per parameter group and step: ``lr``, ``momentum``, ``weight_decay``
========================  ================================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..analysis.training.distributions import LayerColumns, activation_bands, parameter_scales
from ..analysis.training.epochs import epoch_table
from ..analysis.training.saturation import shown_saturation
from ..errors import VizdebugError, VizdebugTypeError
from ..records import ACTIVATION_FIELDS, GRAD_FIELDS, TrainingRecords
from . import _plotly_export as px

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

FRAME_PANELS = ("curves", "grads", "health", "timing", "system", "epochs", "activations",
                "parameters", "optimizer")


def check_panel(panel: Any) -> str:
    """``panel`` if it names a panel, else an error listing the panels."""
    if not isinstance(panel, str):
        raise VizdebugTypeError(f"panel must be a panel's name (one of {list(FRAME_PANELS)}), "
                                f"got {type(panel).__name__} {panel!r}")
    if panel not in FRAME_PANELS:
        raise VizdebugError(f"no panel called {panel!r}; the panels are {list(FRAME_PANELS)}")
    return panel


def _frame(columns: dict[str, Any]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(columns)


def _layer_frame(cols: LayerColumns) -> pd.DataFrame:
    return _frame({"step": cols.step, "layer": cols.layer, **cols.values})


def curves_frame(rec: TrainingRecords) -> pd.DataFrame:
    names, steps, values = [], [], []
    for name, (s, v) in rec.scalars.items():
        names += [name] * int(np.size(s))
        steps.append(np.asarray(s, dtype=np.int64))
        values.append(np.asarray(v, dtype=float))
    return _frame({"step": np.concatenate(steps) if steps else np.empty(0, np.int64),
                   "name": names,
                   "value": np.concatenate(values) if values else np.empty(0)})


def grads_frame(rec: TrainingRecords) -> pd.DataFrame:
    n_steps, n_params = rec.grads.shape[:2] if rec.grads.ndim == 3 else (0, 0)
    paths = list(rec.param_paths)[:n_params]
    out: dict[str, Any] = {"step": np.repeat(np.asarray(rec.grad_steps, dtype=np.int64), len(paths)),
                           "param": paths * n_steps}
    for name in GRAD_FIELDS:
        out[name] = rec.grad(name)[:, :len(paths)].reshape(-1) if n_steps else np.empty(0)
    return _frame(out)


def health_frame(rec: TrainingRecords) -> pd.DataFrame:
    if rec.activations.shape[0] == 0:
        return _frame({"module": [], "class": [], "step": np.empty(0, np.int64),
                       "dead": [], "saturated": [], "zero": []})
    latest = rec.activations[-1]
    n = min(latest.shape[0], len(rec.module_paths))
    return _frame({"module": list(rec.module_paths[:n]), "class": list(rec.module_classes[:n]),
                   "step": np.full(n, int(rec.act_steps[-1]), dtype=np.int64),
                   "dead": latest[:n, ACTIVATION_FIELDS.index("dead")].astype(float),
                   # what the dashboard draws: a logits layer's large values are no saturation
                   "saturated": shown_saturation(rec)[:n],
                   "zero": latest[:n, ACTIVATION_FIELDS.index("zero")].astype(float)})


def timing_frame(rec: TrainingRecords) -> pd.DataFrame:
    wait = 1000 * np.asarray(rec.loader.wait, dtype=float)
    compute = 1000 * np.asarray(rec.loader.compute, dtype=float)
    n = min(wait.size, compute.size)
    first = rec.loader.batches - n  # the recent batches the tap keeps
    return _frame({"batch": np.arange(first, first + n, dtype=np.int64),
                   "wait_ms": wait[-n:] if n else wait[:0],
                   "compute_ms": compute[-n:] if n else compute[:0]})


def system_frame(system: np.ndarray) -> pd.DataFrame:
    system = np.asarray(system, dtype=float).reshape(-1, 4)
    start = system[0, 0] if system.shape[0] else 0.0
    return _frame({"seconds": system[:, 0] - start, "cpu_percent": system[:, 1],
                   "rss_mib": system[:, 2], "gpu_mib": system[:, 3]})


def epochs_frame(rec: TrainingRecords) -> pd.DataFrame:
    table = epoch_table(rec)
    if table is None:
        return _frame({"epoch": np.empty(0, np.int64), "first_step": np.empty(0, np.int64),
                       "last_step": np.empty(0, np.int64)})
    epoch = [None if e == -1 else int(e) for e in table.epoch]
    return _frame({"epoch": np.asarray(epoch, dtype=object) if table.in_progress else table.epoch,
                   "first_step": table.first_step, "last_step": table.last_step,
                   **table.columns})


def optimizer_frame(rec: TrainingRecords, source: Any) -> pd.DataFrame:
    """The hyper tap's reads where the source has them (a live session), else the traced
    or logged ``lr/group<i>`` series (momentum and weight decay unknown: NaN)."""
    tap = getattr(source, "hyper", None)
    columns = tap.columns() if tap is not None else None
    if columns is not None and columns["step"].size:
        return _frame({k: v for k, v in columns.items() if k != "time"})
    steps, groups, lrs = [], [], []
    for name, (s, v) in rec.scalars.items():
        if name.startswith("lr/group") and name[8:].isdigit():
            steps.append(np.asarray(s, dtype=np.int64))
            groups.append(np.full(np.size(s), int(name[8:]), dtype=np.int64))
            lrs.append(np.asarray(v, dtype=float))
    if not steps:
        return _frame({"step": np.empty(0, np.int64), "group": np.empty(0, np.int64),
                       "lr": [], "momentum": [], "weight_decay": []})
    lr = np.concatenate(lrs)
    return _frame({"step": np.concatenate(steps), "group": np.concatenate(groups), "lr": lr,
                   "momentum": np.full(lr.size, np.nan), "weight_decay": np.full(lr.size, np.nan)})


def panel_frame(panel: str, rec: TrainingRecords, system: np.ndarray, source: Any = None
                ) -> pd.DataFrame:
    """The frame of one panel (see the module docstring)."""
    if panel == "system":
        return system_frame(system)
    if panel == "optimizer":
        return optimizer_frame(rec, source)
    if panel == "activations":
        return _layer_frame(activation_bands(rec))
    if panel == "parameters":
        return _layer_frame(parameter_scales(rec))
    build = {"curves": curves_frame, "grads": grads_frame, "health": health_frame,
             "timing": timing_frame, "epochs": epochs_frame}[panel]
    return build(rec)


def panel_figure(panel: str, frame: pd.DataFrame) -> go.Figure:
    """One panel's plotly figure, from its frame."""
    if panel == "curves":
        return px.lines_figure(frame, x="step", y="value", by="name", title="Learning curves")
    if panel == "grads":
        return px.heatmap_figure(frame, x="step", y="param", z="grad_norm", log10=True,
                                 title="Gradient norm per parameter")
    if panel == "health":
        return px.bars_figure(frame, category="module", values=["dead", "saturated", "zero"],
                              horizontal=True, value_title="share of units",
                              title="Activation health (latest sample)")
    if panel == "timing":
        wide = frame.melt(id_vars="batch", value_vars=["wait_ms", "compute_ms"],
                          var_name="part", value_name="ms")
        return px.lines_figure(wide, x="batch", y="ms", by="part", title="Data wait vs compute")
    if panel == "system":
        wide = frame.melt(id_vars="seconds", value_vars=["cpu_percent", "rss_mib", "gpu_mib"],
                          var_name="measure", value_name="value")
        return px.lines_figure(wide, x="seconds", y="value", by="measure", title="System")
    if panel == "epochs":
        metrics = [c for c in frame.columns if c not in ("epoch", "first_step", "last_step")]
        wide = frame.melt(id_vars="last_step", value_vars=metrics, var_name="metric")
        return px.lines_figure(wide, x="last_step", y="value", by="metric",
                               title="Per-epoch metrics (at each epoch's last step)")
    if panel == "activations":
        return px.band_figure(frame, x="step", mid="mean", low="low", high="high", by="layer",
                              title="Activations per layer: mean ± std", y_title="output")
    if panel == "parameters":
        return px.heatmap_figure(frame, x="step", y="layer", z="weight_rms", log10=True,
                                 title="Weight RMS per parameter")
    return optimizer_figure(frame)


def optimizer_figure(frame: pd.DataFrame) -> go.Figure:
    """Learning rate, momentum and weight decay, a row each, a line per parameter group."""
    return px.subplots_figure(optimizer_rows(frame), "Optimizer settings per parameter group")


def optimizer_rows(frame: pd.DataFrame) -> dict[str, go.Figure]:
    """The optimizer panel's three rows: ``lr`` (log scale when positive), ``momentum``,
    ``weight_decay``, a line per parameter group."""
    wide = frame.assign(group=[f"group {g}" for g in frame["group"]])
    lr = wide["lr"].to_numpy(dtype=float)
    log_lr = bool(lr.size) and bool((lr[np.isfinite(lr)] > 0).all())
    return {setting: px.lines_figure(wide, x="step", y=setting, by="group", title=setting,
                                     log_y=log_lr and setting == "lr")
            for setting in ("lr", "momentum", "weight_decay")}


def source_records(source: Any) -> tuple[TrainingRecords, np.ndarray]:
    """A training source's records and its system samples, read now."""
    rec = source.records(flush=not source.closed)
    system = getattr(getattr(source, "system", None), "array", lambda: np.empty((0, 4)))()
    return rec, system


def source_frame(source: Any, panel: str = "curves") -> pd.DataFrame:
    """One panel's frame, read from ``source`` now (a Session, a Run, a Dashboard's)."""
    panel = check_panel(panel)
    rec, system = source_records(source)
    return panel_frame(panel, rec, system, source)


def source_figure(source: Any, panel: str | None = None) -> go.Figure:
    """One panel's figure, or with ``panel=None`` every panel that has data, one row each."""
    px.plotly_go()  # the missing-plotly error before any work
    if panel is not None:
        return panel_figure(check_panel(panel), source_frame(source, panel))
    rec, system = source_records(source)
    frames = {p: panel_frame(p, rec, system, source) for p in FRAME_PANELS}
    figures = {name: panel_figure(name, frame) for name, frame in frames.items()
               if name != "optimizer" and len(frame)}
    if not figures and not len(frames["optimizer"]):
        raise VizdebugError("nothing was collected yet: no panel has data to draw")
    flat = dict(figures)
    if len(frames["optimizer"]):  # its three rows, as rows of the whole
        flat.update({f"optimizer {k}": f for k, f in optimizer_rows(frames["optimizer"]).items()})
    return px.subplots_figure(flat, "vizdebug training dashboard")
