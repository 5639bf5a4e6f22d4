"""What the axis-ordered modules receive: the RNN- and transformer-family modules' input
shapes against the loader's batch size, whether the first convolution got its input
reshaped rather than permuted, and softmaxes inside the program's own modules taken over
the batch (:mod:`.softmax_axes`). Watched over the first few training forwards only (their
pre-hooks then remove themselves); read by :mod:`vizdebug.analysis.training.axes`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...records.program import MAX_AXIS_FACTS, MAX_FACT_PATHS, AxisFacts
from ..hooks.compiled import graph_safe, unhookable_ids
from .softmax_axes import softmax_facts

if TYPE_CHECKING:
    import torch

AXIS_CALLS = 3  # training forwards watched (per sequence module; of the model for its convs)
_INPUT_NAMES = ("input", "src", "query", "x")  # a sequence module's input passed by name


class AxisWatch:
    """What the RNN-family and transformer-family modules, and the first convolution, receive
    at the first :data:`AXIS_CALLS` training forwards; then their pre-hooks go for good.

    A sequence module's observation is its input's shape and its ``batch_first``; the
    convolution's is whether its input is the model input reshaped (its elements in their
    memory order) rather than permuted. Training is untouched: the hooks only read.

    Examples
    --------
    >>> import torch
    >>> lstm = torch.nn.LSTM(4, 8)
    >>> watch = AxisWatch(lstm, changed=lambda: None)
    >>> _ = lstm(torch.randn(32, 5, 4))
    >>> [(a.cls, a.shape, a.batch_first) for a in watch.facts()]
    [('LSTM', [32, 5, 4], False)]
    """

    def __init__(self, model: torch.nn.Module, changed: Any) -> None:
        self.changed = changed
        self.on_error: Any = lambda where, exc: None
        self.observed: list[AxisFacts] = []
        self._root_input: Any = None  # the model input of the training forward in progress
        self._watching = False        # a watched training forward is in progress
        self._conv_seen = False       # it reached its first convolution
        self._softmaxes: set[int] = set()  # softmax nodes of this forward already read
        self._root_calls = 0
        self.paused = False  # Session.paused(): forwards in between are not the program's
        self._handles: list[Any] = []  # the model's and the convolutions' hooks
        self._sequence: dict[str, list[Any]] = {}  # path -> [handle, training calls seen]
        # the embedding sizes of the model's Embedding layers: a convolution's input whose
        # first axes are the token input's (batch, seq) and last one of these is embedded
        # text, its token axis on the convolution's channel axis
        self._embedding_dims = {int(m.embedding_dim) for m in model.modules()
                                if type(m).__name__ == "Embedding"}
        self._register(model)

    def facts(self) -> list[AxisFacts]:
        return [AxisFacts(**vars(a)) for a in self.observed]

    def remove(self) -> None:
        """Take every hook off (harmless when called twice)."""
        handles, self._handles = self._handles, []
        handles += [entry[0] for entry in self._sequence.values()]
        self._sequence = {}
        for handle in handles:
            handle.remove()
        self._root_input = None

    def _register(self, model: torch.nn.Module) -> None:
        import torch

        nn = torch.nn
        sequences = (nn.RNNBase, nn.MultiheadAttention, nn.Transformer, nn.TransformerEncoder,
                     nn.TransformerDecoder, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)
        convs = (nn.Conv1d, nn.Conv2d, nn.Conv3d)  # (lazy ones subclass them)
        taken: list[str] = []  # sequence modules hooked: their own submodules are not
        compiled = unhookable_ids(model)  # (their hooks would run in compiled code)
        for path, module in model.named_modules():
            name = path or type(model).__name__
            if id(module) in compiled:
                continue
            inside = any(path.startswith(t + ".") or not t for t in taken)
            if isinstance(module, sequences) and not inside and len(taken) < MAX_AXIS_FACTS:
                taken.append(path)
                hook = module.register_forward_pre_hook(graph_safe(self._sequence_hook(name)),
                                                        with_kwargs=True)
                self._sequence[name] = [hook, 0]
            elif isinstance(module, convs) and len(self._handles) < MAX_FACT_PATHS:
                self._handles.append(
                    module.register_forward_pre_hook(graph_safe(self._conv_hook(name))))
            if _own_module(module) and len(self._handles) < MAX_FACT_PATHS:  # its softmaxes
                self._handles.append(module.register_forward_hook(
                    graph_safe(self._softmax_hook(name, module is model))))
        if (self._handles or self._sequence) and id(model) not in compiled:  # the model's input
            self._handles += [model.register_forward_pre_hook(graph_safe(self._root_pre)),
                              model.register_forward_hook(graph_safe(self._root_post),
                                                          always_call=True)]

    def _record(self, facts: AxisFacts) -> None:
        if len(self.observed) < MAX_AXIS_FACTS and facts not in self.observed:
            self.observed.append(facts)
            self.changed()

    # -- hooks -------------------------------------------------------------------------
    def _root_pre(self, module: torch.nn.Module, args: tuple) -> None:
        self._watching = module.training and not self.paused  # eval passes are not watched
        self._root_input = _first_tensor(args, {}) if module.training else None
        self._conv_seen = False
        self._softmaxes = set()

    def _root_post(self, module: torch.nn.Module, args: tuple, output: Any) -> None:
        if not self._watching:
            return
        self._watching, self._root_input = False, None
        self._root_calls += 1
        if self._root_calls >= AXIS_CALLS:
            handles, self._handles = self._handles, []
            for handle in handles:
                handle.remove()

    def _sequence_hook(self, path: str) -> Any:
        def hook(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
            try:
                if module.training and not self.paused:
                    self._observe_sequence(path, module, _first_tensor(args, kwargs))
            except Exception as exc:
                self.on_error(f"the axis-order collector on {path!r}", exc)
        return hook

    def _observe_sequence(self, path: str, module: torch.nn.Module, x: Any) -> None:
        entry = self._sequence.get(path)
        if entry is None:
            return
        entry[1] += 1
        if entry[1] >= AXIS_CALLS:  # the last watched call: the hook goes
            entry[0].remove()
            del self._sequence[path]
        if x is not None and x.dim() == 3:
            root = self._root_input
            self._record(AxisFacts(path, type(module).__name__, "sequence", list(x.shape),
                                   _batch_first(module),
                                   list(root.shape) if root is not None else []))

    def _softmax_hook(self, path: str, is_root: bool) -> Any:
        def hook(module: torch.nn.Module, args: tuple, output: Any) -> None:
            try:
                root = self._root_input
                if not self._watching or root is None or root.dim() < 1:
                    return
                import torch

                outputs = output if isinstance(output, (tuple, list)) else (output,)
                # the loss check's torch function mode may be armed already (it is at the
                # model's output): reading the graph is not the program's own call
                with torch._C.DisableTorchFunction():
                    found = [facts for out in outputs[:4] for facts in softmax_facts(
                        path, out, int(root.shape[0]), self._softmaxes, is_root)]
                for facts in found:
                    self._record(facts)
            except Exception as exc:
                self.on_error(f"the axis-order collector on {path!r}", exc)
        return hook

    def _conv_hook(self, path: str) -> Any:
        def hook(module: torch.nn.Module, args: tuple) -> None:
            try:
                root, x = self._root_input, _first_tensor(args, {})
                if self._conv_seen or not self._watching or root is None or x is None:
                    return
                if _channels_elsewhere(module, x):  # it will fail: say why first
                    self._conv_seen = True
                    self._record(AxisFacts(path, type(module).__name__, "conv", list(x.shape),
                                           root_shape=list(root.shape),
                                           in_channels=module.in_channels))
                elif x.numel() == root.numel():
                    self._conv_seen = True  # the first convolution fed the model input's values
                    self._observe_conv(path, module, x, root)
                elif self._tokens_on_channels(x, root):
                    self._conv_seen = True
                    self._record(AxisFacts(path, type(module).__name__, "conv_tokens",
                                           list(x.shape), root_shape=list(root.shape),
                                           in_channels=module.in_channels))
            except Exception as exc:
                self.on_error(f"the axis-order collector on {path!r}", exc)
        return hook

    def _tokens_on_channels(self, x: Any, root: Any) -> bool:
        """A Conv1d input laid out (batch, seq, embedding) from the token input (batch, seq):
        the sequence on the channel axis, the embedding along the convolved one."""
        return (x.dim() == 3 and root.dim() == 2 and not root.is_floating_point()
                and tuple(x.shape[:2]) == tuple(root.shape) and root.shape[1] > 1
                and int(x.shape[2]) in self._embedding_dims and x.shape[2] != x.shape[1])

    def _observe_conv(self, path: str, module: torch.nn.Module, x: Any, root: Any) -> None:
        order = axes_keeping_order(tuple(root.shape), tuple(x.shape))
        if order is None:
            return  # a reshape that keeps every axis (or none that could): nothing to tell
        import torch

        with torch.no_grad():
            reshaped = _affine_per_channel(x, root.reshape(x.shape))
            permuted = _affine_per_channel(x, root.permute(order).reshape(x.shape))
        self._record(AxisFacts(path, type(module).__name__, "conv", list(x.shape), None,
                               list(root.shape), reshaped, permuted, list(order)))


def _own_module(module: Any) -> bool:
    """A module class of the program's own (not torch's): its forward may hold a softmax."""
    return not type(module).__module__.startswith("torch.")


def _first_tensor(args: tuple, kwargs: dict) -> Any:
    candidates = [*args[:1], *(kwargs.get(k) for k in _INPUT_NAMES)]
    return next((a for a in candidates if hasattr(a, "dim") and hasattr(a, "shape")), None)


def _channels_elsewhere(conv: Any, x: Any) -> bool:
    """The convolution's channels are not on axis 1 of its input but on the last."""
    channels = getattr(conv, "in_channels", 0)
    return x.dim() >= 3 and channels > 0 and x.shape[1] != channels and x.shape[-1] == channels


def _batch_first(module: Any) -> bool | None:
    """The module's ``batch_first``: its own, its attention's, or its first layer's."""
    layers = getattr(module, "layers", None)
    first = layers[0] if layers is not None and len(layers) else None
    for obj in (module, getattr(module, "self_attn", None), first,
                getattr(first, "self_attn", None)):
        value = getattr(obj, "batch_first", None)
        if isinstance(value, bool):
            return value
    return None


def _boundaries(shape: tuple[int, ...]) -> set[int]:
    out, size = set(), 1
    for n in shape:
        size *= n
        out.add(size)
    return out


def _keeps_axes(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    """Whether reshaping ``src`` to ``dst`` only merges or only splits neighbouring axes."""
    a, b = _boundaries(src), _boundaries(dst)
    return a <= b or b <= a


def axes_keeping_order(src: tuple[int, ...], dst: tuple[int, ...]) -> list[int] | None:
    """The permutation of ``src``'s axes, fewest inversions first, after which a reshape to
    ``dst`` keeps every axis; None where the plain reshape already does, or where no
    permutation that moves an axis longer than 1 does.

    >>> axes_keeping_order((32, 8, 8, 3), (32, 3, 8, 8))
    [0, 3, 1, 2]
    >>> axes_keeping_order((32, 3, 8, 8), (32, 3, 8, 8)) is None
    True
    """
    import itertools

    if len(src) > 6 or _keeps_axes(src, dst):
        return None
    longer = [i for i, n in enumerate(src) if n > 1]
    ranked = sorted(itertools.permutations(range(len(src))), key=_inversions)
    for order in ranked:
        moved = [i for i in order if src[i] > 1] != longer
        if moved and _keeps_axes(tuple(src[i] for i in order), dst):
            return list(order)
    return None


def _inversions(order: tuple[int, ...]) -> int:
    return sum(a > b for i, a in enumerate(order) for b in order[i + 1:])


AFFINE_TOLERANCE = 1e-4  # relative: float32 rounding of a scale-and-shift stays far below


def _affine_per_channel(x: Any, y: Any, samples: int = 8) -> bool:
    """Whether ``x`` is ``a * y + b`` per channel (axis 1) on its first samples: the same
    values in the same places, up to a normalisation applied after the reshape."""
    xs = x[:samples].detach().double().transpose(0, 1).reshape(x.shape[1], -1)
    ys = y[:samples].detach().double().transpose(0, 1).reshape(y.shape[1], -1)
    xc, yc = xs - xs.mean(1, keepdim=True), ys - ys.mean(1, keepdim=True)
    var = (yc * yc).sum(1, keepdim=True)
    scale = (xc * yc).sum(1, keepdim=True) / var.clamp_min(1e-300)
    residual = (xc - scale * yc).abs().amax(1)
    bound = AFFINE_TOLERANCE * xc.abs().amax(1).clamp_min(1e-12)
    return bool(((residual <= bound) & (var.squeeze(1) > 0)).all())
