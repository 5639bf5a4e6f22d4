"""Per-tensor statistics computed on the tensor's own device, without reading them back.

Each function returns a small 1-d float tensor; the caller stacks many of them and reads
them in one transfer later (see :mod:`vizdebug.collect.hooks`). Shares (zeros,
saturation) are estimated on a strided subsample of at most ``SUBSAMPLE`` elements, which
keeps the cost flat for large activations; the non-finite count and the per-unit dead
test always look at every element, because one NaN or one dead channel matters.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

ACTIVATION_FIELDS = ("mean", "std", "zero", "dead", "saturated", "nonfinite", "absmax", "numel")
SUBSAMPLE = 4096
DEAD_EPS = 1e-8
_BOUNDED = {"Tanh": 0.99, "Hardtanh": 0.99, "Softsign": 0.99}
_UNIT = {"Sigmoid": 0.01, "Hardsigmoid": 0.01, "Softmax": None}


def _unit_dim(x: torch.Tensor, module_class: str) -> int | None:
    """The dimension that indexes units: channels (dim 1) or features (last dim of 3-d)."""
    if x.dim() < 2 or x.shape[0] < 2:
        return None
    if x.dim() == 3 and not module_class.startswith("Conv"):
        return 2
    return 1


def _saturated(sub: torch.Tensor, module_class: str) -> torch.Tensor:
    if module_class in _BOUNDED:
        return (sub.abs() > _BOUNDED[module_class]).float().mean()
    if module_class in _UNIT:
        return ((sub < 0.01) | (sub > 0.99)).float().mean()
    # DeepDiagnosis: a pre-activation is saturated when it lies outside +-5.
    return (sub.abs() > 5.0).float().mean()


def activation_stats(output: torch.Tensor, module_class: str) -> torch.Tensor:
    """The :data:`ACTIVATION_FIELDS` of one activation, as a float32 tensor on its device.

    Examples
    --------
    >>> import torch
    >>> s = activation_stats(torch.zeros(4, 3), "ReLU")
    >>> dict(zip(ACTIVATION_FIELDS, s.tolist()))["dead"]
    1.0
    """
    import torch

    x = output.detach()
    if not x.is_floating_point():
        x = x.float()
    flat = x.reshape(-1)
    n = flat.numel()
    if n == 0:
        return torch.tensor([math.nan] * 7 + [0.0], device=x.device)
    sub = flat[:: max(1, n // SUBSAMPLE)]
    nonfinite = n - torch.isfinite(flat).sum()
    dim = _unit_dim(x, module_class)
    if dim is None:
        dead = torch.zeros((), device=x.device)
    else:
        per_unit = x.abs().amax(dim=[d for d in range(x.dim()) if d != dim])
        dead = (per_unit <= DEAD_EPS).float().mean()
    parts = [
        sub.mean(), sub.std() if sub.numel() > 1 else torch.zeros((), device=x.device),
        (sub == 0).float().mean(), dead, _saturated(sub, module_class),
        nonfinite.float(), flat.abs().max(), torch.tensor(float(n), device=x.device),
    ]
    return torch.stack([p.float() for p in parts])


def describe_tensor(t: Any) -> str:
    """A one-line summary (shape, dtype, min/max/mean, non-finite count), syncing once.

    Used only on the error path (``on_anomaly="raise"``), where a sync is fine.

    Examples
    --------
    >>> import torch
    >>> describe_tensor(torch.tensor([1.0, float("nan")]))
    'shape (2,) float32, 1 non-finite of 2, finite min 1, max 1, mean 1'
    """
    import torch

    if t is None:
        return "None"
    if not isinstance(t, torch.Tensor):
        return type(t).__name__
    x = t.detach()
    dtype = str(x.dtype).replace("torch.", "")
    head = f"shape {tuple(x.shape)} {dtype}"
    if x.numel() == 0 or x.is_complex():
        return head
    x = x.float().reshape(-1)
    finite = torch.isfinite(x)
    n_bad = int(x.numel() - finite.sum())
    good = x[finite]
    if good.numel() == 0:
        return f"{head}, all {x.numel()} values non-finite"
    lo, hi, mean = (float(v) for v in (good.min(), good.max(), good.mean()))
    return (
        f"{head}, {n_bad} non-finite of {x.numel()}, "
        f"finite min {lo:.4g}, max {hi:.4g}, mean {mean:.4g}"
    )


def grad_norms(tensors: list[torch.Tensor]) -> torch.Tensor:
    """L2 norms of several tensors in one fused call (``torch._foreach_norm`` when present).

    Examples
    --------
    >>> import torch
    >>> grad_norms([torch.ones(4), torch.zeros(2)]).tolist()
    [2.0, 0.0]
    """
    import torch

    if not tensors:
        return torch.zeros(0)
    detached = [t.detach() for t in tensors]
    foreach_norm = getattr(torch, "_foreach_norm", None)
    if foreach_norm is not None:
        try:
            return torch.stack([n.float() for n in foreach_norm(detached)])
        except RuntimeError:  # mixed devices or dtypes: fall back to one norm each
            pass
    return torch.stack([torch.linalg.vector_norm(t).float() for t in detached])
