"""Tracked embeddings: a layer's output on a fixed probe set at chosen points of training.

``session.track_embeddings(layer, probe, every=...)`` runs the model over the probe once at
once (the starting point) and then at each due point: at the end of every epoch
(``every="epoch"``) or every ``n`` optimizer steps (``every=n``), and when the session
closes if training went on since the last frame. An epoch ends when a pass over the
watched loader (``watch(model, loader=...)`` or ``session.tap_loader(...)``) runs to its
end, or, without one, when ``session.log(epoch=...)`` is called after training steps; a
frame's ``epoch`` counts the epochs that had ended when it was taken (``None`` when the
session has no way of knowing them): the frame after the first epoch is epoch 1, also with
``every=n`` at the first epoch's last step (a pass of known length ends with its last batch).

A probe pass leaves training as it was: it runs between steps, in eval mode (each module's
train/eval flag is put back), under ``torch.no_grad()``, with every global RNG restored
after, and with the session's own hooks taken off (the step clock, the activation
statistics, the loss and mode checks never see it; ``"auto"`` leaves its time out of the
step timing). A forward hook on the tracked module, present only during the pass, keeps
its output: flattened, or averaged over the spatial axes for a convolution's feature map
(``N x C x ...``), as float32 on the CPU. The probe goes through the model in batches of at
most :data:`PROBE_BATCH` samples (and :data:`PROBE_BATCH_BYTES` of input). An error during
training is reported as a collector error, never raised.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import VizdebugError, VizdebugTypeError, describe, short_repr
from ...records import MAX_EMBEDDING_DIM, EmbeddingFrame, EmbeddingProbe
from ...store.embeddings import pick_layer
from ..hooks.stats import first_tensor

if TYPE_CHECKING:
    from ..session.core import Session
    from .probe import Probe

PROBE_BATCH = 256
PROBE_BATCH_BYTES = 32 << 20
MAX_FRAMES = 256                 # frames of a layer kept in memory (then every other goes)
MAX_LAYER_BYTES = 256 << 20      # ... and at most this many bytes of them
_POOLED_3D = ("Conv", "Pool", "Norm")  # an (N, C, L) output of these is averaged over L


def check_track_every(every: Any) -> int | str:
    """``"epoch"`` or a whole number of optimizer steps >= 1."""
    if every == "epoch" and isinstance(every, str):
        return every
    if isinstance(every, bool) or not isinstance(every, (int, np.integer)) or every < 1:
        raise VizdebugTypeError(f"every must be 'epoch' or a whole number of optimizer steps "
                                f">= 1, got {describe(every)}: {short_repr(every)}")
    return int(every)


class LayerTracker:
    """One tracked layer: its probe, its frames, and the frames the store has not had."""

    def __init__(self, layer: str, module: Any, probe: Probe, every: int | str,
                 stored: bool) -> None:
        self.layer, self.probe, self.every = layer, probe, every
        self.module_ref = weakref.ref(module)
        self.pooled_3d = any(k in type(module).__name__ for k in _POOLED_3D)
        self.frames: list[EmbeddingFrame] = []
        self.unstored: list[EmbeddingFrame] | None = [] if stored else None
        self.probe_stored = not stored
        self.last_step: int | None = None
        self.lock = threading.Lock()
        self.views: list[weakref.ref] = []  # live timeline views that follow new frames

    def capture(self, model: Any, step: int, epoch: int | None) -> EmbeddingFrame:
        module = self.module_ref()
        if module is None:
            raise VizdebugError(f"the tracked module {self.layer!r} no longer exists")
        features = probe_features(model, module, self.probe.inputs, self.pooled_3d, self.layer)
        frame = EmbeddingFrame(self.layer, step, epoch, features)
        with self.lock:
            self.frames.append(frame)
            self._thin()
            if self.unstored is not None:
                self.unstored.append(frame)
            self.last_step = step
            views = [v for v in (ref() for ref in self.views) if v is not None]
        for view in views:  # outside the lock: appending draws (PCA onto the last picture)
            try:
                view.append([frame])
            except Exception as exc:  # e.g. NaN rows: that view stops following
                self.views = [r for r in self.views if r() is not view]
                raise VizdebugError(f"a timeline view of {self.layer!r} stopped following "
                                    f"the frames: {exc}") from exc
        return frame

    def follow(self, view: Any) -> None:
        """Hand ``view`` (a timeline of this layer's frames so far) each later frame."""
        with self.lock:
            shown = view.steps[-1] if view.steps else -1
            missed = [f for f in self.frames if f.step > shown]
            self.views = [r for r in self.views if r() is not None] + [weakref.ref(view)]
        if missed:
            view.append(missed)

    def _thin(self) -> None:
        """Keep at most :data:`MAX_FRAMES` (and :data:`MAX_LAYER_BYTES`): every other frame
        goes, the first and the newest stay."""
        size = max(1, self.frames[0].features.nbytes)
        limit = max(2, min(MAX_FRAMES, MAX_LAYER_BYTES // size))
        if len(self.frames) > limit:
            self.frames = [*self.frames[:-1:2], self.frames[-1]]

    def take_unstored(self) -> tuple[list[EmbeddingFrame], list[EmbeddingProbe]]:
        """The frames (and the probe, once) not handed to the store yet."""
        with self.lock:
            frames, self.unstored = self.unstored or [], [] if self.unstored is not None else None
            probes = [] if self.probe_stored else [self.probe.record(self.layer)]
            self.probe_stored = True
        return frames, probes


def probe_features(model: Any, module: Any, inputs: Any, pooled_3d: bool,
                   layer: str) -> np.ndarray:
    """``module``'s output over ``inputs`` as ``(n, dim)`` float32 (see the module docstring).
    The model's train/eval flags and the global RNGs are as before afterwards."""
    import torch

    from ...analysis.datasets.top_losses import _all_rng_preserved

    device, dtype = _device_dtype(model)
    n = int(inputs.shape[0])
    per = max(1, min(PROBE_BATCH, PROBE_BATCH_BYTES // max(1, inputs[:1].nbytes)))
    kept: list[Any] = []
    handle = module.register_forward_hook(
        lambda mod, args, output: kept.append(first_tensor(output)) if not kept else None)
    modes = [(m, m.training) for m in model.modules()]
    out = None
    try:
        with _all_rng_preserved(None), torch.no_grad():
            model.eval()
            for start in range(0, n, per):
                x = inputs[start:start + per]
                x = x.to(device, dtype) if x.is_floating_point() and dtype else x.to(device)
                kept.clear()
                model(x)
                rows = _rows(kept, len(x), pooled_3d, layer)
                if out is None:
                    out = np.empty((n, rows.shape[1]), dtype=np.float32)
                out[start:start + len(x)] = rows.numpy()
    finally:
        handle.remove()
        for m, mode in modes:
            m.training = mode
    return out


def _device_dtype(model: Any) -> tuple[Any, Any]:
    """Where the model's weights live, and the dtype of its first floating weight."""
    import torch

    tensors = [*model.parameters(), *model.buffers()]
    device = tensors[0].device if tensors else torch.device("cpu")
    dtype = next((t.dtype for t in tensors if t.is_floating_point()), None)
    return device, dtype


def _rows(kept: list[Any], n: int, pooled_3d: bool, layer: str) -> Any:
    """One row per sample of the module's output, on the CPU as float32."""
    if not kept or kept[0] is None:
        raise VizdebugError(f"the module {layer!r} did not run (or returned no tensor) in the "
                            "model's forward on the probe; track a module the forward calls")
    t = kept[0].detach()
    if t.ndim == 0 or t.shape[0] != n:
        raise VizdebugError(f"the output of {layer!r} has shape {tuple(t.shape)} for {n} probe "
                            "inputs, not one row per sample; track another layer")
    t = t.float()
    if t.ndim == 1:
        t = t[:, None]
    elif t.ndim >= 4 or (t.ndim == 3 and pooled_3d):
        t = t.flatten(2).mean(2)  # global average pooling of a feature map
    else:
        t = t.flatten(1)
    if t.shape[1] > MAX_EMBEDDING_DIM:
        raise VizdebugError(f"the output of {layer!r} has {t.shape[1]:,} features per sample "
                            f"(more than {MAX_EMBEDDING_DIM:,}); track a smaller or pooled layer")
    return t.cpu()


class EmbeddingTracking:
    """The :class:`~vizdebug.collect.session.core.Session` methods of tracked embeddings."""

    _trackers: dict[str, LayerTracker]
    _epochs: list[int]  # [epochs completed, optimizer steps at the last epoch end, known]

    def track_embeddings(self: Session, layer: str, probe: Any, *, labels: Any = None,
                         images: Any = None, every: int | str = "epoch") -> None:
        """Record ``layer``'s output on a fixed ``probe`` set over training.

        ``layer`` is a module path (``model.named_modules()``: ``"fc1"``,
        ``"features.3"``); ``probe`` a tensor, an array, an ``(x, y)`` pair, a Dataset or a
        DataLoader of at most 10,000 samples, read once now; ``labels`` one per probe
        sample (by default the probe's own targets); ``images`` the pictures shown for the
        probe samples (stored as small thumbnails). ``every`` is ``"epoch"`` (at the end of
        each pass over the watched loader, else at each ``log(epoch=...)``) or a number of
        optimizer steps. A first frame is taken now. Training stays bitwise identical; the
        cost is one forward pass over the probe per due point. See
        :mod:`vizdebug.collect.taps.embeddings`.

        Examples
        --------
        >>> session.track_embeddings("fc1", x_val[:500], labels=y_val[:500])  # doctest: +SKIP
        >>> session.embeddings()                                             # doctest: +SKIP
        """
        from .probe import find_layer, read_probe  # (not loaded by `import vizdebug`)

        if self.closed:
            raise VizdebugError("this session is closed; watch the model again (vd.watch) "
                                "and track the layer on the new session")
        model = self.hooks.model_ref()
        if model is None:
            raise VizdebugError("the watched model no longer exists")
        module = find_layer(model, layer)
        if layer in _trackers(self):
            raise VizdebugError(f"layer {layer!r} is already tracked in this session; watch "
                                "the model again (vd.watch) to track it with another probe")
        every = check_track_every(every)
        tracker = LayerTracker(layer, module, read_probe(probe, labels, images), every,
                               self.store is not None)
        try:
            with self.paused():
                tracker.capture(model, self.hooks.steps, self._epoch_now())
        except VizdebugError:
            raise
        except Exception as exc:
            raise VizdebugError(f"the model failed on the probe for {layer!r}: "
                                f"{type(exc).__name__}: {exc}; pass inputs shaped like a "
                                "training batch's") from exc
        self._trackers[layer] = tracker
        self._wire_tracking()

    def embedding_layers(self) -> list[str]:
        """The tracked layers, in the order they were tracked."""
        return list(_trackers(self))

    def embedding_frames(self, layer: str | None = None) -> list[EmbeddingFrame]:
        """The frames of ``layer`` (the first tracked by default), in step order."""
        tracker = _trackers(self)[pick_layer(self.embedding_layers(), layer)]
        with tracker.lock:
            return list(tracker.frames)

    def embedding_probe(self, layer: str | None = None) -> EmbeddingProbe:
        """The probe set of ``layer``: its size, labels and thumbnails."""
        name = pick_layer(self.embedding_layers(), layer)
        return _trackers(self)[name].probe.record(name)

    def _follow_embeddings(self: Session, layer: str, view: Any) -> None:
        """``session.embeddings()`` of a running session: the view gets each new frame."""
        if not self.closed:
            _trackers(self)[layer].follow(view)

    # -- due points -------------------------------------------------------------------------
    def _wire_tracking(self: Session) -> None:
        """Listen to optimizer steps and epoch ends (weakly: a session nobody keeps still
        closes when it is dropped)."""
        clock = self.hooks.clock
        if self.tap.on_pass_end is None:
            clock.after_optimizer_step.append(_weak_call(self._on_tracked_step))
            self.tap.on_pass_end = _weak_call(self._on_epoch_end)
        self.__dict__.pop("log", None)  # log() now also sees logged epochs

    def _epoch_now(self: Session) -> int | None:
        """Epochs ended so far; the last step of a pass ends its epoch (the pass itself
        ends when the loop asks for one more batch)."""
        epochs = self.__dict__.setdefault("_epochs", [0, 0, 0])
        tap = self.tap
        if not (epochs[2] or tap.passes or tap._loader_ref is not None):
            return None
        return epochs[0] + (tap.pass_done and self.hooks.steps > epochs[1])

    def _on_epoch_end(self: Session) -> None:
        """A pass over the watched loader ended, or ``epoch`` was logged."""
        epochs = self.__dict__.setdefault("_epochs", [0, 0, 0])
        steps = self.hooks.steps
        epochs[2] = 1
        if steps <= epochs[1]:
            return  # no training step since the last epoch end (an evaluation pass)
        epochs[0], epochs[1] = epochs[0] + 1, steps
        self._capture_due(lambda t: t.every == "epoch", held=False)

    def _on_tracked_step(self: Session) -> None:
        """After each optimizer step that the clock counts (inside torch's hook loop)."""
        steps = self.hooks.steps
        self._capture_due(lambda t: t.every != "epoch" and steps % t.every == 0, held=True)

    def _final_embeddings(self: Session) -> None:
        """When the session closes: a last frame of each layer that trained since its last."""
        if not getattr(self, "_trackers", None):
            return
        epochs = self.__dict__.setdefault("_epochs", [0, 0, 0])
        if self._epoch_now() is not None and self.hooks.steps > epochs[1]:
            epochs[0], epochs[1] = epochs[0] + 1, self.hooks.steps  # the last epoch ended
        self._capture_due(lambda t: True, held=False)

    def _capture_due(self: Session, due: Any, held: bool) -> None:
        trackers = [t for t in _trackers(self).values()
                    if due(t) and t.last_step != self.hooks.steps]
        model = self.hooks.model_ref()
        if not trackers or model is None:
            return
        clock = self.hooks.clock
        clock.held = held  # inside the optimizer's hook loop: leave the global hook alone
        try:
            with self.paused():
                for tracker in trackers:
                    try:
                        tracker.capture(model, self.hooks.steps, self._epoch_now())
                    except Exception as exc:
                        self._on_error(f"the embedding tracker on {tracker.layer!r}", exc)
        finally:
            clock.held = False

    def _take_embeddings(self) -> tuple[list[EmbeddingFrame], list[EmbeddingProbe]]:
        """What the run store has not had yet (the feed's part)."""
        frames: list[EmbeddingFrame] = []
        probes: list[EmbeddingProbe] = []
        for tracker in list(_trackers(self).values()):
            new, probe = tracker.take_unstored()
            frames += new
            probes += probe
        return frames, probes


def _weak_call(method: Any) -> Any:
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()
    return call


def _trackers(session: Any) -> dict[str, LayerTracker]:
    return session.__dict__.setdefault("_trackers", {})
