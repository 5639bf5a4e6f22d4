"""Summaries of one loss call's tensors (torch, on their device), for
:func:`vizdebug.analysis.training.loss_checks.loss_problems` to judge."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...analysis.training.loss_checks import CLASS_LOSSES, LOSS_FUNCTIONS, loss_problems

__all__ = ["LOSS_FUNCTIONS", "backward_problems", "check_loss_call", "summarize"]

GRAPH_LIMIT = 20_000  # autograd nodes walked to find the leaves of a loss
NUMPY_MAX = 1 << 20   # elements summarised in numpy rather than torch


def check_loss_call(name: str, args: tuple, kwargs: dict) -> list[tuple[str, str, str, str]]:
    """The problems of one call of the loss function ``name``: ``(code, severity,
    message, hint)`` tuples."""
    summary = summarize(name, args, kwargs)
    return loss_problems(summary) if summary is not None else []


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
            values += [(xd.float().sum(cdim) - 1).abs().max(),
                       torch.logsumexp(xd.float(), cdim).abs().max()]
            keys += ["rowsum_dev", "lse_dev"]
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
            peak = xf.max(axis=cdim, keepdims=True)
            lse = np.log(np.exp(xf - peak).sum(axis=cdim)) + np.squeeze(peak, cdim)
            out.update(n_classes=int(x.shape[cdim]),
                       rowsum_dev=float(np.abs(xf.sum(cdim) - 1).max()),
                       lse_dev=float(np.abs(lse).max()))
            if t.dtype.kind in "iub":
                t = t[t != kwargs.get("ignore_index", -100)]
        if t.size:
            out.update(t_min=float(t.min()), t_max=float(t.max()))
    return out


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


def backward_problems(loss: Any, known: set[int] | None) -> list[tuple[str, str, str, str]]:
    """A loss with no graph (rebuilt from ``.item()``: no parameter gets a gradient), or
    (when ``known`` holds the ids of the trainable tensors) leaves of its graph that
    require gradients but that neither the model nor its optimizer holds (modules in a
    plain list, a bare tensor attribute)."""
    import torch

    if not isinstance(loss, torch.Tensor):
        return []
    if loss.grad_fn is None:
        if not loss.requires_grad:
            return []
        return [("zero-gradients", "error",
                 "backward() was called on a tensor without a graph (a new leaf): no "
                 "parameter of the model gets a gradient from it",
                 "the loss was rebuilt from a number (torch.tensor(loss.item(), "
                 "requires_grad=True), .numpy(), .detach()): compute it with torch "
                 "operations on the model's output")]
    if known is None:  # the graph is walked once, when the trainable tensors are known
        return []
    foreign = _foreign_leaves(loss.grad_fn, known)
    if not foreign:
        return []
    shapes = ", ".join(str(tuple(t.shape)) for t in foreign[:5])
    return [("parameters-not-updated", "warning",
             f"{len(foreign)} tensors that require gradients feed the loss but are neither "
             f"parameters of the watched model nor held by its optimizer (shapes {shapes})",
             "they get gradients but are never updated: keep sub-modules in nn.ModuleList/"
             "nn.ModuleDict (not a Python list or dict), wrap trainable tensors in "
             "nn.Parameter, and build the optimizer after every module exists")]


def _foreign_leaves(root: Any, known: set[int]) -> list[Any]:
    """Leaves (``AccumulateGrad`` nodes' tensors) under ``root`` whose ids are not known."""
    seen, stack, out = set(), [root], []
    while stack and len(seen) < GRAPH_LIMIT:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        variable = getattr(node, "variable", None)  # AccumulateGrad: the leaf tensor
        if variable is not None and id(variable) not in known:
            out.append(variable)
        stack.extend(child for child, _ in node.next_functions)
    return out
