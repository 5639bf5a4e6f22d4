"""The module outputs of a sampled step, kept by the forward hooks and reduced together.

A forward hook only hands its output over (:meth:`OutputCollector.output`): the output is
kept, with its version counter, until the model's forward pass ends, and then all outputs
of the pass are reduced at once, grouped by shape (:func:`~.stats.sample_outputs`). The
outputs are alive until then anyway (the rest of the forward pass, or autograd, holds
them), so keeping them costs no memory beyond the pass.

An output can change after its hook ran: an in-place operation later in forward
(``ReLU(inplace=True)`` after a ``Linear``, ``x += residual``) rewrites it. Such a change
bumps the tensor's version counter (shared with its views), so it is seen when the pass
ends: the changed output is dropped (its row of that step stays empty, never wrong), and
from then on that module is sampled inside its hook, before anything can change it. The
first sampled pass samples every module inside its hook while watching the versions, so
its rows are complete and it learns which modules need that.

An ``nn.ReLU`` whose input is the output kept just before (the same tensor: a
``Linear``/``LayerNorm``/``Conv`` followed by its activation) is not reduced at all: its
sample is derived from its input's reductions (:func:`~.stats.sample_with_relus`), which
needs the input unchanged until the pass ends (its version again) and the ReLU's output to
be relu of it: not in place, and no other forward hook on the module or global forward
hook that could have replaced the output before this one saw it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ...analysis.training.activations import unit_axis
from .stats import GROUP_MAX, GroupSample, output_key, sample_outputs, sample_with_relus

if TYPE_CHECKING:
    import torch


class StepSamples(NamedTuple):
    """A sampled step's activations: ``idx[k]`` is the module of the k-th output of the
    samples (in group order), ``order[k]`` the place of its call in the step."""

    idx: np.ndarray
    order: np.ndarray
    samples: list[GroupSample]


class OutputCollector:
    """Owns the outputs of the forward pass in progress, the samples of the sampled step,
    and which modules' outputs are changed in place (sampled in their hook).

    Examples
    --------
    >>> import torch
    >>> outputs = OutputCollector(["Linear", "ReLU"])
    >>> outputs.begin(); outputs.learned = True
    >>> x = torch.randn(8, 4)
    >>> outputs.output(0, x); outputs.output(1, x.relu())
    >>> outputs.end_forward(); outputs.seal().idx.tolist()
    [0, 1]
    """

    def __init__(self, classes: list[str], modules: list[Any] | None = None) -> None:
        import torch

        self.classes = classes
        self._relu = [type(m) is torch.nn.ReLU for m in modules or [None] * len(classes)]
        self._conv = [c.startswith("Conv") for c in classes]  # (their 3-d units: dim 1)
        self.eager: set[int] = set()  # modules sampled inside their hook
        self.learned = False  # a first pass has shown which modules need that
        # idx, output, version, eager, and for a ReLU of the output kept before, its place
        self._kept: list[tuple[int, torch.Tensor, int, bool, int]] = []
        self._calls = 0  # outputs handed over in this step (their call order)
        self._samples: list[tuple[list[int], list[int], GroupSample]] | None = None

    def begin(self) -> None:
        """A sampled step starts."""
        self._samples, self._calls, self._kept = [], 0, []

    def output(self, idx: int, tensor: torch.Tensor, module: Any = None,
               inputs: tuple = ()) -> None:
        """Module ``idx`` produced ``tensor`` from ``inputs`` (called from its forward hook
        on ``module``)."""
        if tensor.is_meta:
            return  # (a meta tensor has a shape but no values to sample)
        order, self._calls = self._calls, self._calls + 1
        eager = idx in self.eager or not self.learned
        if eager and self._samples is not None:
            key = output_key(tensor, self.classes[idx])
            self._samples.append(([idx], [order], sample_outputs([tensor], key[3])))
        kept, source = self._kept, -1
        if self._relu[idx] and inputs and kept and inputs[0] is kept[-1][1] and (
                tensor is not inputs[0] and len(module._forward_hooks) == 1):
            source = len(kept) - 1
        kept.append((idx, tensor, tensor._version, eager, source))  # see end_forward

    def end_forward(self) -> None:
        """The forward pass ended: reduce what it kept, grouped by shape."""
        kept, self._kept = self._kept, []
        if self._samples is None or not kept:
            return
        # key: (members (idx, order, output), ReLUs derived from them (idx, order, member))
        groups: dict[tuple, tuple[list, list]] = {}
        grouped: dict[int, tuple[tuple, int]] = {}  # kept place: its group and place there
        sources = {e[4] for e in kept} if not _global_forward_hooks() else set()
        for place, (idx, tensor, version, eager, source) in enumerate(kept):
            order = place + self._calls - len(kept)
            # ``_version`` counts in-place writes to a tensor and its views: autograd's
            # own check that a saved tensor is unchanged; torch has no public equivalent.
            if tensor._version != version:
                self.eager.add(idx)  # sampled in its hook from now on
            elif not eager:  # grouped by what output_key tells apart, computed cheaply
                if source in grouped:
                    key, member = grouped[source]
                    groups[key][1].append((idx, order, member))
                    continue
                key = (tensor.shape, tensor.dtype, tensor.device, self._conv[idx],
                       id(tensor) if tensor.numel() > GROUP_MAX else None)
                members = groups.setdefault(key, ([], []))[0]
                if place in sources and _derivable(tensor):
                    grouped[place] = key, len(members)
                members.append((idx, order, tensor))
        self.learned = True
        for key, (members, relus) in groups.items():
            self._sample_group(tuple(key[0]), members, relus)

    def _sample_group(self, shape: tuple, members: list, relus: list) -> None:
        axis = unit_axis(shape, self.classes[members[0][0]])
        if relus:  # the ReLUs' inputs first, in the ReLUs' order
            first = [m for _, _, m in relus]
            rest = sorted(set(range(len(members))) - set(first))
            members = [members[m] for m in first + rest]
            sample, derived = sample_with_relus([t for _, _, t in members], axis, len(relus),
                                                unit_axis(shape, "ReLU"))
            self._samples.append(([i for i, _, _ in relus], [o for _, o, _ in relus], derived))
        else:
            sample = sample_outputs([t for _, _, t in members], axis)
        self._samples.append(([i for i, _, _ in members], [o for _, o, _ in members], sample))

    def discard(self) -> None:
        """Forward raised: what it kept goes (nothing of it outlives the pass)."""
        self._kept = []

    def seal(self) -> StepSamples | None:
        """The sampled step's samples (``None``: nothing sampled), for reading later."""
        if self._kept:
            self.end_forward()  # forward was called without the model's own hooks
        samples, self._samples = self._samples, None
        if not samples:
            return None
        return StepSamples(np.concatenate([i for i, _, _ in samples]),
                           np.concatenate([o for _, o, _ in samples]),
                           [s for _, _, s in samples])


def _derivable(tensor: torch.Tensor) -> bool:
    """An output a following ReLU's sample can be derived from: one with units (a batch),
    not empty, and not float64 (a ReLU's own float64 sample may be float64 or float32
    depending on its group; a derived one would have to guess)."""
    import torch

    return tensor.ndim > 1 and tensor.shape[0] > 1 and tensor.numel() > 0 and (
        tensor.dtype != torch.float64)


def _global_forward_hooks() -> bool:
    """Global forward hooks (``register_module_forward_hook``) run before a module's own:
    one could replace a ReLU's output before its hook saw it. torch keeps them in a
    module-level dict and has no public way to ask."""
    import torch.nn.modules.module as torch_module

    return bool(getattr(torch_module, "_global_forward_hooks", True))
