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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ..analysis.activations import unit_axis
from .stats import GROUP_MAX, GroupSample, output_key, sample_outputs

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

    def __init__(self, classes: list[str]) -> None:
        self.classes = classes
        self._conv = [c.startswith("Conv") for c in classes]  # (their 3-d units: dim 1)
        self.eager: set[int] = set()  # modules sampled inside their hook
        self.learned = False  # a first pass has shown which modules need that
        self._kept: list[tuple[int, torch.Tensor, int, bool]] = []  # idx, output, version, eager
        self._calls = 0  # outputs handed over in this step (their call order)
        self._samples: list[tuple[list[int], list[int], GroupSample]] | None = None

    def begin(self) -> None:
        """A sampled step starts."""
        self._samples, self._calls, self._kept = [], 0, []

    def output(self, idx: int, tensor: torch.Tensor) -> None:
        """Module ``idx`` produced ``tensor`` (called from its forward hook)."""
        order, self._calls = self._calls, self._calls + 1
        eager = idx in self.eager or not self.learned
        if eager and self._samples is not None:
            key = output_key(tensor, self.classes[idx])
            self._samples.append(([idx], [order], sample_outputs([tensor], key[3])))
        self._kept.append((idx, tensor, tensor._version, eager))  # see end_forward

    def end_forward(self) -> None:
        """The forward pass ended: reduce what it kept, grouped by shape."""
        kept, self._kept = self._kept, []
        if self._samples is None or not kept:
            return
        groups: dict[tuple, list[tuple[int, int, Any]]] = {}
        for order, (idx, tensor, version, eager) in enumerate(kept, self._calls - len(kept)):
            # ``_version`` counts in-place writes to a tensor and its views: autograd's
            # own check that a saved tensor is unchanged; torch has no public equivalent.
            if tensor._version != version:
                self.eager.add(idx)  # sampled in its hook from now on
            elif not eager:  # grouped by what output_key tells apart, computed cheaply
                key = (tensor.shape, tensor.dtype, tensor.device, self._conv[idx],
                       id(tensor) if tensor.numel() > GROUP_MAX else None)
                groups.setdefault(key, []).append((idx, order, tensor))
        self.learned = True
        for key, members in groups.items():
            axis = unit_axis(tuple(key[0]), self.classes[members[0][0]])
            self._samples.append(([i for i, _, _ in members], [o for _, o, _ in members],
                                  sample_outputs([t for _, _, t in members], axis)))

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
