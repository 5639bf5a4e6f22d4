"""Observations of one loss call's tensors (torch, on their device), for
:func:`vizdebug.analysis.training.loss_checks.loss_problems` to judge, and of the graph
behind ``loss.backward()``.

Each observation is ``(code, detail)``: the code the analysis gives it, and what was seen
(plain numbers, shapes and names, stored as JSON with the run); the analysis
(:mod:`vizdebug.analysis.training.loss_verdicts`) words the finding.
"""

from __future__ import annotations

import functools
import re
import weakref
from typing import Any

import numpy as np

from ...analysis.training.loss_checks import (
    CLASS_LOSSES,
    LOSS_FUNCTIONS,
    NON_NEGATIVE_OPS,
    UNIT_RANGE_OPS,
    loss_problems,
)
from ...analysis.training.loss_verdicts import (
    CUT_FROM_MODEL,
    LOSS_CALL,
    NO_GRAPH,
    UNTRAINED_LEAVES,
)

__all__ = ["LOSS_FUNCTIONS", "backward_problems", "check_loss_call", "normaliser", "output_op",
           "summarize"]

GRAPH_LIMIT = 20_000  # autograd nodes walked to find the leaves of a loss
NUMPY_MAX = 1 << 20   # elements summarised in numpy rather than torch
OP_HOPS = 16          # autograd nodes walked back past reshapes to the op that made an output
# Operations that keep every value where it was (reshapes, views, copies, casts): the op
# behind them made the output. Names as autograd's nodes and torch's functions give them.
PASS_THROUGH = frozenset({
    "view", "unsafeview", "reshape", "reshapealias", "squeeze", "unsqueeze", "expand",
    "expandas", "viewas", "clone", "contiguous", "t", "permute", "transpose", "select",
    "slice", "index", "getitem", "tocopy", "to", "float", "double", "half", "alias",
    "asstrided", "flatten", "narrow",
})
NORMALISERS = frozenset({"softmax", "logsoftmax"})  # op_name of their autograd nodes
Observation = tuple[str, dict[str, Any]]  # code, detail


@functools.lru_cache(maxsize=1024)  # (called for each torch function while armed)
def op_name(name: str) -> str:
    """``SigmoidBackward0``, ``sigmoid_`` and ``__getitem__`` as ``sigmoid``, ``getitem``."""
    return re.sub(r"backward\d*$", "", name.lower()).replace("_", "")


def output_op(tensor: Any, made: dict[int, tuple[str, weakref.ref]] | None = None) -> str | None:
    """The operation that made ``tensor``, past reshapes and casts: its autograd node's, or
    (without a graph) the one ``made`` saw produce it (id -> (op, weak reference))."""
    seen = (made or {}).get(id(tensor))
    if seen is not None and seen[1]() is tensor:
        return seen[0]
    node = getattr(tensor, "grad_fn", None)
    for _ in range(OP_HOPS):
        if node is None:
            return None
        name = op_name(type(node).__name__)
        if name not in PASS_THROUGH:
            return name
        node = node.next_functions[0][0] if node.next_functions else None
    return None


def normaliser(tensor: Any) -> tuple[str, int, tuple[int, ...]] | None:
    """``(op, dim, shape)`` when ``tensor`` (or what it is a reshape or slice of) was made by
    a softmax or log_softmax: the axis it normalised (as autograd saved it, ``dim=-1`` as
    the last) and the shape it normalised. None otherwise, or without a graph."""
    node = getattr(tensor, "grad_fn", None)
    for hop in range(OP_HOPS):
        if node is None:
            return None
        name = op_name(type(node).__name__)
        if name in NORMALISERS:
            return _normalised_axis(node, tensor if hop == 0 else None)
        if name not in PASS_THROUGH:
            return None
        node = node.next_functions[0][0] if node.next_functions else None
    return None


def _normalised_axis(node: Any, tensor: Any) -> tuple[str, int, tuple[int, ...]] | None:
    """The axis a softmax node normalised and its output's shape (``tensor``'s, or the
    saved output's behind a reshape); None where the node no longer holds them."""
    dim = getattr(node, "_saved_dim", None)
    try:
        shape = tuple((tensor if tensor is not None else node._saved_result).shape)
    except RuntimeError:  # saved tensors freed (after a backward)
        return None
    if not isinstance(dim, int) or not shape:
        return None
    dim = dim - (1 << 64) if dim >= 1 << 63 else dim  # (saved as unsigned: -1 wraps)
    return op_name(type(node).__name__), dim % len(shape), shape


def check_loss_call(name: str, args: tuple, kwargs: dict,
                    made: dict[int, tuple[str, weakref.ref]] | None = None) -> list[Observation]:
    """What the analysis finds wrong in one call of the loss function ``name``: one
    ``(code, detail)`` per problem, the detail holding the call's summary."""
    summary = summarize(name, args, kwargs)
    if summary is None:
        return []
    summary["output_op"] = output_op(_argument(args, kwargs, 0, "input"), made)
    codes = dict.fromkeys(p[0] for p in loss_problems(summary))
    return [(code, {"check": LOSS_CALL, "function": name, "seen": summary}) for code in codes]


def observed(detail: dict[str, Any]) -> str:
    """One line saying what a loss call was given (the message of its event).

    Examples
    --------
    >>> seen = {"x_shape": (8, 1), "t_shape": (8, 1), "x_min": 0.2, "x_max": 0.6,
    ...         "t_min": 3.0, "t_max": 12.0, "output_op": "sigmoid"}
    >>> observed({"function": "mse_loss", "seen": seen})[:52]
    'mse_loss was given an input of shape (8, 1) from sig'
    """
    s = detail["seen"]
    op = s.get("output_op")
    source = f" from {op}" if op in UNIT_RANGE_OPS | NON_NEGATIVE_OPS else ""  # (not addmm)
    targets = f", {s['t_min']:.3g} to {s['t_max']:.3g}" if "t_min" in s else ""
    return (f"{detail['function']} was given an input of shape {tuple(s['x_shape'])}{source}, "
            f"values {s['x_min']:.3g} to {s['x_max']:.3g}, and targets of shape "
            f"{tuple(s['t_shape'])}{targets}")


def _argument(args: tuple, kwargs: dict, index: int, key: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(key)


def summarize(name: str, args: tuple, kwargs: dict) -> dict[str, Any] | None:
    """Shapes and a few statistics of the input and target of a loss call (one read)."""
    import torch

    x, t = _argument(args, kwargs, 0, "input"), _argument(args, kwargs, 1, "target")
    if not (isinstance(x, torch.Tensor) and isinstance(t, torch.Tensor)):
        return None
    if x.numel() == 0 or not x.is_floating_point() or x.is_complex():
        return None
    out: dict[str, Any] = {"function": name, "x_shape": tuple(x.shape),
                           "t_shape": tuple(t.shape), "t_int": not t.is_floating_point()}
    out["broadcast_numel"] = _broadcast_numel(tuple(x.shape), tuple(t.shape))
    if _numpy_ready(x) and _numpy_ready(t):
        # small CPU tensors: numpy's calls cost a fraction of torch's dispatch per op
        out.update(_numpy_stats(name, x.detach().numpy(), t.detach().numpy(), kwargs))
        return out
    with torch.no_grad():
        xd, td = x.detach(), t.detach()
        values = [xd.min(), xd.max(), (xd == 0).float().mean()]
        keys = ["x_min", "x_max", "x_zero_share"]
        cdim = 1 if xd.ndim >= 2 else 0
        if name in CLASS_LOSSES:
            out["n_classes"] = int(xd.shape[cdim])
            xf = xd.float()
            values += [(xf.sum(cdim) - 1).abs().max(), torch.logsumexp(xf, cdim).abs().max(),
                       (xf.sum(0) - 1).abs().max(), torch.logsumexp(xf, 0).abs().max()]
            keys += ["rowsum_dev", "lse_dev", "colsum_dev", "lse0_dev"]
        tv = _target_values(td, name, kwargs)
        if tv is not None and tv.numel():
            values += [tv.min().float(), tv.max().float()]
            keys += ["t_min", "t_max"]
        read = torch.stack([v.float() for v in values]).tolist()  # the one device read
    out.update(zip(keys, read))
    return out


def _numpy_ready(t: Any) -> bool:
    import torch

    return (t.device.type == "cpu" and t.layout == torch.strided and not t.is_conj()
            and t.dtype in (torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8,
                            torch.bool) and t.numel() <= NUMPY_MAX)


def _numpy_stats(name: str, x: np.ndarray, t: np.ndarray, kwargs: dict) -> dict[str, float]:
    """The same statistics as the torch path, in numpy (CPU tensors' own memory)."""
    with np.errstate(all="ignore"):
        out = {"x_min": float(x.min()), "x_max": float(x.max()),
               "x_zero_share": float(np.count_nonzero(x == 0)) / x.size}
        if name in CLASS_LOSSES:
            cdim = 1 if x.ndim >= 2 else 0
            xf = x.astype(np.float64)
            out.update(n_classes=int(x.shape[cdim]),
                       rowsum_dev=float(np.abs(xf.sum(cdim) - 1).max()),
                       lse_dev=float(np.abs(_logsumexp(xf, cdim)).max()),
                       colsum_dev=float(np.abs(xf.sum(0) - 1).max()),
                       lse0_dev=float(np.abs(_logsumexp(xf, 0)).max()))
            if t.dtype.kind in "iub":
                t = t[t != kwargs.get("ignore_index", -100)]
        if t.size:
            out.update(t_min=float(t.min()), t_max=float(t.max()))
    return out


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    peak = x.max(axis=axis, keepdims=True)
    return np.log(np.exp(x - peak).sum(axis=axis)) + np.squeeze(peak, axis)


def _target_values(t: Any, name: str, kwargs: dict) -> Any:
    """The targets that count (class ids other than ``ignore_index``)."""
    if t.is_complex():
        return None
    if name in CLASS_LOSSES and not t.is_floating_point():
        ignore = kwargs.get("ignore_index", -100)
        return t[t != ignore]
    return t


def _broadcast_numel(a: tuple[int, ...], b: tuple[int, ...]) -> int | None:
    """Elements of the broadcast of shapes ``a`` and ``b`` when they differ (None when
    equal or not broadcastable)."""
    if a == b:
        return None
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    dims = []
    for p, q in zip(a, b):
        if p != q and 1 not in (p, q):
            return None
        dims.append(max(p, q))
    total = 1
    for d in dims:
        total *= d
    return total


def backward_problems(loss: Any, known: set[int] | None) -> list[Observation]:
    """A loss with no graph (rebuilt from ``.item()``: no parameter gets a gradient), or
    (when ``known`` holds the ids of the trainable tensors) leaves of its graph that
    require gradients but that neither the model nor its optimizer holds (modules in a
    plain list, a bare tensor attribute): ``(code, detail)`` observations."""
    import torch

    if not isinstance(loss, torch.Tensor):
        return []
    if loss.grad_fn is None:
        if not loss.requires_grad:
            return []
        return [("zero-gradients", {"check": NO_GRAPH, "function": "backward"})]
    if known is None:  # the graph is walked once, when the trainable tensors are known
        return []
    foreign, reached = _foreign_leaves(loss.grad_fn, known)
    if not foreign:
        return []
    if not reached:  # new leaves only: the loss was rebuilt apart from the model
        return [("zero-gradients",
                 {"check": CUT_FROM_MODEL, "function": "backward", "count": len(foreign),
                  "shapes": [list(t.shape) for t in foreign[:5]]})]
    return [("parameters-not-updated",
             {"check": UNTRAINED_LEAVES, "function": "backward", "count": len(foreign),
              "shapes": [list(t.shape) for t in foreign[:5]]})]


def _foreign_leaves(root: Any, known: set[int]) -> tuple[list[Any], bool]:
    """Leaves (``AccumulateGrad`` nodes' tensors) under ``root`` whose ids are not known,
    and whether any known leaf is under it too."""
    seen, stack, out = set(), [root], []
    reached = False
    while stack and len(seen) < GRAPH_LIMIT:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)  # AccumulateGrad: the leaf tensor
        if variable is not None and id(variable) not in known:
            out.append(variable)
        reached |= variable is not None and id(variable) in known
        stack.extend(child for child, _ in node.next_functions)
    return out, reached or len(seen) >= GRAPH_LIMIT  # (a graph not walked to its end)
