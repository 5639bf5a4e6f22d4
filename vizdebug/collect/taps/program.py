"""The program's shape, as the training profile reads it: which optimizers step and what
they hold, the loader's sampler and batch size, the batch sizes the model receives, frozen
parameters and the train/eval mode of their norm layers, lazy modules.

Everything here is read where it is cheap: the model's structure once at ``watch()``, the
optimizers from the step post-hook the step clock already has (a dict lookup and an
increment per step; what an optimizer holds is read at its first step), the model's input
at sampled steps only (the root pre-hook), the frozen norm layers' modes at a few steps.
No verdict is written here: :mod:`vizdebug.analysis.training.profile` reads the facts.
"""

from __future__ import annotations

import weakref
from collections import deque
from typing import TYPE_CHECKING, Any

from ...records import (
    MAX_FACT_PATHS,
    MAX_LOSS_FUNCTIONS,
    MAX_OPTIMIZERS,
    OptimizerFacts,
    ProgramFacts,
    RunDelta,
)
from ..hooks.compiled import compiled_paths
from .axes import AxisWatch

if TYPE_CHECKING:
    import torch

NORM_CLASSES = ("BatchNorm", "SyncBatchNorm", "InstanceNorm")
MODE_CHECKS_FIRST = 3   # frozen norm layers' modes read at the first steps of an optimizer,
MODE_CHECK_EVERY = 64   # then every n-th step
RANGE_FORWARDS = 64     # sampled forwards whose input range is read, then every n-th:
RANGE_EVERY = 16
MAX_INPUT_RANGES = 64   # the value ranges of the sampled forwards' inputs kept (the last)


class ProgramTap:
    """Collects :class:`~vizdebug.records.ProgramFacts` for one watched model.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    >>> _ = model[1].weight.requires_grad_(False)
    >>> tap = ProgramTap(model)
    >>> tap.facts().frozen
    ['1.weight']
    """

    def __init__(self, model: torch.nn.Module) -> None:
        trainable = [p for _, p in model.named_parameters() if p.requires_grad]
        self._index = {id(p): i for i, p in enumerate(trainable)}
        self.frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
        self.lazy = [n for n, m in model.named_modules() if _is_lazy(m)]
        self.compiled = [p or type(model).__name__ for p in compiled_paths(model)]
        self._frozen_norms = [(n, weakref.ref(m)) for n, m in model.named_modules()
                              if _frozen_norm(m)][:MAX_FACT_PATHS]
        self._optimizers: dict[int, tuple[weakref.ref, OptimizerFacts]] = {}
        # frozen norm layers in eval() inside a model in train() at watch: set so by the program
        self.norms_set_eval = [n for n, ref in self._frozen_norms
                               if model.training and not ref().training]
        self.norms_training: set[str] = set()
        self.norms_eval: set[str] = set()
        # frozen norm layers' running means at the first mode check, and how far (in their
        # running std then) they moved since: frozen weights, statistics that still move
        self._norm_first: dict[str, tuple[Any, float]] = {}
        self.norm_drift: dict[str, float] = {}
        self.batch_sizes: deque[int] = deque(maxlen=MAX_FACT_PATHS)
        self.input_requires_grad = False
        self._ranges_offered = 0
        self._inputs: list[weakref.ref] = []  # the sampled step's input tensors (all forwards)
        self._inputs_step: int | None = None
        self.sampler: str | None = None
        self.sampler_weighted = False
        self.loader_batch_size: int | None = None
        self.drop_last: bool | None = None
        self.dataset_len: int | None = None
        # BatchNorm layers and their channels: how many values per channel a batch gives
        self.batch_norms = [[n, int(m.num_features)] for n, m in model.named_modules()
                            if type(m).__name__.startswith("BatchNorm")
                            and isinstance(getattr(m, "num_features", None), int)
                            ][:MAX_FACT_PATHS]
        self.input_ranges: deque[list[float]] = deque(maxlen=MAX_INPUT_RANGES)
        self.step = lambda: 0  # the training step in progress (the session's clock)
        self.loss_functions = lambda: []  # the loss functions the loss check saw
        self.soft_targets = lambda: False  # a class loss saw probability targets
        self.version = 0
        self.axes = AxisWatch(model, changed=self._changed)  # the first training forwards

    # -- what the collectors hand over -------------------------------------------------------
    def observe_loader(self, loader: Any) -> None:
        """The watched loader's sampler and batch size (a DataLoader's; others have none)."""
        sampler = getattr(loader, "sampler", None)
        batch_sampler = getattr(loader, "batch_sampler", None)
        if sampler is not None:
            self.sampler = type(sampler).__name__
            self.sampler_weighted = hasattr(sampler, "weights")
        elif batch_sampler is not None:
            self.sampler = type(batch_sampler).__name__
        size = getattr(loader, "batch_size", None)
        self.loader_batch_size = size if isinstance(size, int) else None
        drop = getattr(loader, "drop_last", None)
        self.drop_last = drop if isinstance(drop, bool) else None
        self.dataset_len = _length(getattr(loader, "dataset", None))
        self.version += 1

    def observe_input(self, args: tuple) -> None:
        """A sampled training step's input: its first axis, whether it requires grad."""
        first = args[0] if args else None
        step = self.step()
        if step != self._inputs_step:  # a new sampled step: its forwards' inputs from here
            self._inputs, self._inputs_step = [], step
        if len(self._inputs) < MAX_FACT_PATHS:
            self._inputs += [weakref.ref(a) for a in args if getattr(a, "requires_grad", False)]
        shape = getattr(first, "shape", None)
        if shape is not None and len(shape) > 0:
            self.batch_sizes.append(int(shape[0]))
            self.input_requires_grad |= bool(getattr(first, "requires_grad", False))
            self._observe_range(first)
            self.version += 1

    def _observe_range(self, first: Any) -> None:
        # the value range a sampled forward received: a discriminator reads real and
        # generated batches, and their ranges are compared with the loader's. One read of
        # the input: the first RANGE_FORWARDS sampled forwards, then every RANGE_EVERY-th
        # (with every=1 a read each step would cost a few percent of a small step)
        self._ranges_offered += 1
        if self._ranges_offered > RANGE_FORWARDS and self._ranges_offered % RANGE_EVERY:
            return
        if getattr(first, "is_floating_point", lambda: False)() and first.numel() > 0 and (
                not first.is_meta) and str(first.layout) == "torch.strided":  # (a meta
            # tensor has no values, a sparse one no aminmax: a GCN's features go in sparse)
            low, high = (float(v) for v in first.detach().aminmax())
            self.input_ranges.append([low, high])

    def optimizer_stepped(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """After any optimizer's ``step()`` (from the global step post-hook)."""
        seen = self._optimizers.get(id(optimizer))
        if seen is None or seen[0]() is not optimizer:
            if len(self._optimizers) >= MAX_OPTIMIZERS:
                return
            seen = (weakref.ref(optimizer), self._first_sight(optimizer))
            self._optimizers[id(optimizer)] = seen
        facts = seen[1]
        facts.steps += 1
        # Every step: a count. At the first steps and every n-th, what may change (the
        # closure, the frozen norm layers' modes), and a new snapshot for the store.
        if facts.steps <= MODE_CHECKS_FIRST or facts.steps % MODE_CHECK_EVERY == 0:
            # the hook's args are step()'s own: (optimizer, closure?)
            facts.closure |= (len(args) > 1 and callable(args[1])) or "closure" in (kwargs or {})
            if facts.held:
                self._read_norm_modes()
            self.version += 1

    def known_ids(self) -> set[int]:
        """Ids of the tensors that any optimizer seen stepping updates, and of the last
        sampled step's inputs that require grad (a gradient penalty's interpolates)."""
        ids = {id(t) for ref in self._inputs if (t := ref()) is not None}
        for ref, _ in list(self._optimizers.values()):
            optimizer = ref()
            for group in getattr(optimizer, "param_groups", ()):
                ids.update(id(p) for p in group.get("params", ()))
        return ids

    # -- reading -------------------------------------------------------------------------------
    def facts(self) -> ProgramFacts:
        """A snapshot of what was seen so far."""
        return ProgramFacts(
            optimizers=[OptimizerFacts(**vars(f)) for _, f in list(self._optimizers.values())],
            sampler=self.sampler, sampler_weighted=self.sampler_weighted,
            loader_batch_size=self.loader_batch_size, batch_sizes=list(self.batch_sizes),
            frozen=self.frozen[:MAX_FACT_PATHS],
            frozen_norms_training=sorted(self.norms_training),
            frozen_norms_eval=sorted(self.norms_eval),
            frozen_norms_set_eval=list(self.norms_set_eval), lazy=self.lazy[:MAX_FACT_PATHS],
            compiled=self.compiled[:MAX_FACT_PATHS],
            input_requires_grad=self.input_requires_grad, axes=self.axes.facts(),
            drop_last=self.drop_last, dataset_len=self.dataset_len,
            batch_norms=[list(b) for b in self.batch_norms],
            input_ranges=[list(r) for r in self.input_ranges],
            frozen_norm_drift=dict(list(self.norm_drift.items())[:MAX_FACT_PATHS]),
            loss_functions=[str(f) for f in self.loss_functions()][:MAX_LOSS_FUNCTIONS],
            soft_targets=bool(self.soft_targets()),
        )

    def records_since(self, cursor: int | None) -> tuple[RunDelta, int]:
        """The collector contract: the facts when they changed since ``cursor`` (a
        version; ``None``: now, whatever changed)."""
        version = self.version
        if cursor is not None and version == cursor:
            return RunDelta(), cursor
        return RunDelta(program=self.facts().to_json()), version

    def remove(self) -> None:
        """Take off the hooks this tap holds (harmless when called twice)."""
        self.axes.remove()

    def _changed(self) -> None:
        self.version += 1

    def _first_sight(self, optimizer: Any) -> OptimizerFacts:
        held, outside = [], 0
        for group in getattr(optimizer, "param_groups", []):
            for p in group.get("params", []):
                i = self._index.get(id(p))
                if i is None:
                    outside += 1
                else:
                    held.append(i)
        return OptimizerFacts(type(optimizer).__name__, sorted(set(held)), outside, 0,
                              first_step=int(self.step()))

    def _read_norm_modes(self) -> None:
        for path, ref in self._frozen_norms:
            module = ref()
            if module is not None:
                (self.norms_training if module.training else self.norms_eval).add(path)
                self._read_drift(path, module)

    def _read_drift(self, path: str, module: Any) -> None:
        mean, var = getattr(module, "running_mean", None), getattr(module, "running_var", None)
        if mean is None or var is None:
            return
        first = self._norm_first.get(path)
        if first is None:
            scale = float(var.detach().clamp_min(1e-12).sqrt().mean())
            self._norm_first[path] = (mean.detach().clone(), scale)
            return
        moved = float((mean.detach() - first[0]).abs().mean()) / max(first[1], 1e-12)
        self.norm_drift[path] = max(self.norm_drift.get(path, 0.0), moved)


def _length(dataset: Any) -> int | None:
    """``len(dataset)``, or None where it has none (an iterable dataset) or it fails."""
    try:
        n = len(dataset)
    except Exception:  # a user's __len__ may raise anything: no length then
        return None
    return n if isinstance(n, int) else None


def _is_lazy(module: Any) -> bool:
    return any(type(p).__name__ == "UninitializedParameter"
               for p in module.parameters(recurse=False)) or \
        type(module).__name__.startswith("Lazy")


def _frozen_norm(module: Any) -> bool:
    """A norm layer with affine parameters that do not train (a frozen backbone's)."""
    if not type(module).__name__.startswith(NORM_CLASSES):
        return False
    weight = getattr(module, "weight", None)
    return weight is not None and not weight.requires_grad \
        and getattr(module, "track_running_stats", False)


# -- what axis-sensitive modules receive ---------------------------------------------------
