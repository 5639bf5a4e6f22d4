"""A list of :class:`~vizdebug.records.EmbeddingFrame` checked and read as one timeline,
and what the timeline says about the layer (``representation-collapse``).

Rows that hold NaN or inf in any frame are left out of every frame (a point must be the
same point on each frame to be followed); a frame where every row does is left out and
named (training that diverged still shows the frames before it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import VizdebugError, VizdebugTypeError, describe
from ...findings import Finding
from ...records import EmbeddingFrame

COLLAPSE_SPREAD = 0.01  # the last frame's spread at most 1 % of the widest frame's
COLLAPSE_RANK = 1.5  # effective rank of a representation reduced to about a line
RANK_PEAK = 3.0  # ... after having been at least this


@dataclass
class Timeline:
    """The frames of one layer as arrays: ``values[i]`` is ``(len(rows), d)``."""

    layer: str
    steps: list[int]
    epochs: list[int | None]
    values: list[np.ndarray]
    rows: np.ndarray  # input (probe) index of each kept row
    n_probe: int
    notes: list[str] = field(default_factory=list)
    source: list[int] = field(default_factory=list)  # index of each frame in the list given


def read_frames(frames: object) -> Timeline:
    """Check ``frames`` (one layer, one probe size) and read them in step order.

    Examples
    --------
    >>> f = [EmbeddingFrame("fc", s, s, np.full((3, 2), s, np.float32)) for s in (2, 1)]
    >>> t = read_frames(f)
    >>> t.layer, t.steps, t.values[0].shape
    ('fc', [1, 2], (3, 2))
    """
    items = _frame_list(frames)
    layers = sorted({f.layer for f in items})
    if len(layers) > 1:
        raise VizdebugError(f"the frames come from {len(layers)} layers {layers[:8]}: pass the "
                            "frames of one layer (e.g. [f for f in frames if f.layer == "
                            f"{layers[0]!r}])")
    order = sorted(range(len(items)), key=lambda i: items[i].step)
    items = [items[i] for i in order]
    arrays = [_matrix(f) for f in items]
    sizes = sorted({len(a) for a in arrays})
    if len(sizes) > 1:
        raise VizdebugError(f"the frames of layer {layers[0]!r} hold different numbers of probe "
                            f"rows {sizes}: every frame must hold the same probe samples")
    return _finite(Timeline(layers[0], [int(f.step) for f in items], [f.epoch for f in items],
                            arrays, np.arange(sizes[0]), sizes[0], source=order))


def _frame_list(frames: object) -> list[EmbeddingFrame]:
    if isinstance(frames, EmbeddingFrame):
        frames = [frames]
    if not isinstance(frames, (list, tuple)):
        raise VizdebugTypeError(f"frames is {describe(frames)}; pass a list of "
                                "vizdebug.records.EmbeddingFrame (e.g. run.embeddings data)")
    bad = [i for i, f in enumerate(frames) if not isinstance(f, EmbeddingFrame)]
    if bad:
        raise VizdebugTypeError(f"frames[{bad[0]}] is {describe(frames[bad[0]])}, not an "
                                "EmbeddingFrame(layer, step, epoch, features)")
    if not frames:
        raise VizdebugError("frames is empty: there is no embedding to show (track a layer "
                            "with session.track_embeddings and train at least one epoch)")
    return list(frames)


def _matrix(frame: EmbeddingFrame) -> np.ndarray:
    try:
        arr = np.asarray(frame.features)
    except (TypeError, ValueError):
        arr = np.asarray([])
    if arr.dtype.kind not in "biuf" or arr.ndim == 0 or arr.size == 0:
        raise VizdebugTypeError(f"the features of the frame at step {frame.step} are "
                                f"{describe(frame.features)}; each frame needs an n_probe x dim "
                                "array of numbers")
    arr = arr.reshape(len(arr), -1)
    return arr.astype(np.float32 if arr.dtype.itemsize <= 4 else np.float64, copy=False)


def _finite(t: Timeline) -> Timeline:
    ok = [np.isfinite(a).all(axis=1) for a in t.values]
    empty = [i for i, m in enumerate(ok) if not m.any()]
    keep = [i for i in range(len(ok)) if i not in empty]
    if not keep:
        raise VizdebugError(f"every row of every frame of layer {t.layer!r} holds NaN or inf: "
                            "there is nothing to place (did training diverge from the start?)")
    if empty:
        t.notes.append(f"{len(empty)} frames hold only NaN or inf and are left out: steps "
                       f"{[t.steps[i] for i in empty][:8]}")
    rows = np.flatnonzero(np.logical_and.reduce([ok[i] for i in keep]))
    if len(rows) == 0:
        raise VizdebugError(f"no probe row of layer {t.layer!r} is finite on every frame: "
                            "there is no point that can be followed")
    if len(rows) < t.n_probe:
        bad = np.setdiff1d(np.arange(t.n_probe), rows)
        t.notes.append(f"{len(bad)} of {t.n_probe} probe rows hold NaN or inf on some frame and "
                       f"are left out: rows {bad[:10].tolist()}{' ...' if len(bad) > 10 else ''}")
    return Timeline(t.layer, [t.steps[i] for i in keep], [t.epochs[i] for i in keep],
                    [t.values[i][rows] if len(rows) < t.n_probe else t.values[i] for i in keep],
                    rows, t.n_probe, t.notes, [t.source[i] for i in keep])


def check_later(shown: Timeline, more: Timeline) -> None:
    """Refuse frames that cannot extend ``shown``: another layer or probe, earlier steps,
    or rows that are finite so far and not in them."""
    if more.layer != shown.layer or more.n_probe != shown.n_probe:
        raise VizdebugError(f"append takes frames of layer {shown.layer!r} with {shown.n_probe} "
                            f"probe rows, got layer {more.layer!r} with {more.n_probe}")
    if more.steps[0] < shown.steps[-1]:
        raise VizdebugError(f"append takes later frames: step {more.steps[0]} comes before "
                            f"the last frame shown (step {shown.steps[-1]})")
    lost = np.setdiff1d(shown.rows, more.rows)
    if len(lost):
        raise VizdebugError(f"probe rows {lost[:10].tolist()} hold NaN or inf in the new "
                            "frames: the points shown so far cannot be followed into them")


def frame_predictions(predictions: object, t: Timeline, n_given: int) -> np.ndarray | None:
    """Predictions as ``(frames, kept rows)``: one array for every frame (one value or
    ``n x c`` scores per probe sample), or a list of such arrays, one per frame given.

    >>> f = [EmbeddingFrame("fc", s, s, np.zeros((2, 1), np.float32)) for s in (5, 3)]
    >>> frame_predictions([[1, 1], [0, 0]], read_frames(f), 2).tolist()  # by step
    [[0, 0], [1, 1]]
    """
    from .project import per_point

    if predictions is None:
        return None
    if isinstance(predictions, (list, tuple)) and len(predictions) == n_given and (
            np.ndim(predictions[0]) >= 1):
        per = [per_point(p, t.n_probe, f"predictions[{i}]") for i, p in enumerate(predictions)]
        return np.stack([per[i][t.rows] for i in t.source])
    one = per_point(predictions, t.n_probe, "predictions")
    return np.tile(one[t.rows], (len(t.steps), 1))


def frame_name(step: int, epoch: int | None) -> str:
    """``step 120 (epoch 3)``, or ``step 120``."""
    return f"step {step}" + ("" if epoch is None else f" (epoch {epoch})")


def collapse_finding(t: Timeline, eranks: list[float], spreads: list[float],
                     n_classes: int, knn_last: float | None) -> Finding | None:
    """``representation-collapse`` when the spread of the points, or their effective rank,
    falls towards zero over the frames; ``None`` when it does not.

    A representation that ends on about a line is what a healthy network does with two
    classes (neural collapse), and what it does with many classes it separates well, so
    the rank rule warns only for three or more classes the last frame does not separate.
    """
    if len(spreads) < 2:
        return None
    peak = int(np.argmax(spreads))
    if spreads[peak] > 0 and spreads[-1] <= COLLAPSE_SPREAD * spreads[peak]:
        return _collapse(t, "warning", f"the spread of the points fell from {spreads[peak]:.3g} "
                         f"at {frame_name(t.steps[peak], t.epochs[peak])} to {spreads[-1]:.3g}",
                         {"spread": [round(s, 6) for s in spreads]})
    top = int(np.argmax(eranks))
    if eranks[-1] <= COLLAPSE_RANK and eranks[top] >= RANK_PEAK:
        warn = n_classes > 2 and (knn_last is None or knn_last < 0.9)
        return _collapse(t, "warning" if warn else "info",
                         f"its effective rank fell from {eranks[top]:.1f} at "
                         f"{frame_name(t.steps[top], t.epochs[top])} to {eranks[-1]:.2f}",
                         {"effective_rank": [round(r, 3) for r in eranks]})
    return None


def _collapse(t: Timeline, severity: str, what: str, evidence: dict) -> Finding:
    last = frame_name(t.steps[-1], t.epochs[-1])
    return Finding(
        "representation-collapse", severity,
        f"layer {t.layer!r} collapses over training: {what} (last frame: {last})",
        where=t.layer, evidence={**evidence, "steps": t.steps},
        hint="the layer's outputs stop depending on the input: dying ReLUs, a learning rate "
             "too high, weight decay too strong, or a loss that a constant output satisfies")
