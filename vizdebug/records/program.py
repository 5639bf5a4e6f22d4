"""The program's shape as the collectors saw it: optimizers, sampler, batch sizes, frozen
parameters and their modules' modes, lazy modules, what axis-sensitive modules received.
Read by the training profile and the rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# -- the program's shape (read by the training profile) -------------------------------------

#: Bounds of the program facts, for the collector and the store's reader alike.
MAX_OPTIMIZERS = 16
MAX_LOSS_FUNCTIONS = 16  # the names of the torch loss functions a run saw
MAX_FACT_PATHS = 256
MAX_AXIS_FACTS = 32  # what sequence modules and the first convolution received


@dataclass
class OptimizerFacts:
    """One optimizer seen stepping while the model was watched.

    ``held`` are the indices (into ``TrainingRecords.param_paths``) of the watched model's
    trainable parameters it updates; ``outside`` how many of its tensors are not the
    watched model's (another network's, an input's); ``closure`` whether ``step()`` was
    given a closure (LBFGS); ``first_step`` the training step of its first ``step()``.

    >>> OptimizerFacts("Adam", [0, 1], 0, 10).to_json()["cls"]
    'Adam'
    """

    cls: str
    held: list[int]
    outside: int
    steps: int
    closure: bool = False
    first_step: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"cls": self.cls, "held": list(self.held), "outside": self.outside,
                "steps": self.steps, "closure": self.closure, "first_step": self.first_step}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OptimizerFacts:
        return cls(str(d["cls"])[:100], [int(i) for i in d["held"][:1_000_000]],
                   int(d["outside"]), int(d["steps"]), bool(d.get("closure", False)),
                   int(d.get("first_step", 0)))


@dataclass
class AxisFacts:
    """What one axis-sensitive module received at one of the first training forwards.

    ``kind`` is ``"sequence"`` (an RNN/LSTM/GRU or a transformer layer: ``batch_first`` is
    its setting) or ``"conv"`` (the first convolution a forward reached). For a ``"conv"``,
    ``reshaped`` says whether its input holds the model input's elements in their memory
    order (a ``view``/``reshape`` of it, up to a per-channel affine map), ``order`` the
    permutation of the model input's axes that gives the convolution's shape without
    mixing axes (``[]`` where none does), and ``permuted`` whether the input equals that
    permutation (then the program permuted, or both readings agree). ``in_channels`` is
    the convolution's own: an input whose axis 1 holds another number fails in it.

    >>> AxisFacts.from_json(AxisFacts("lstm", "LSTM", "sequence", [32, 8, 4], False).to_json()).shape
    [32, 8, 4]
    """

    path: str
    cls: str
    kind: str
    shape: list[int]
    batch_first: bool | None = None
    root_shape: list[int] = field(default_factory=list)  # the model's input
    reshaped: bool = False
    permuted: bool = False
    order: list[int] = field(default_factory=list)
    in_channels: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "cls": self.cls, "kind": self.kind,
                "shape": list(self.shape), "batch_first": self.batch_first,
                "root_shape": list(self.root_shape), "reshaped": self.reshaped,
                "permuted": self.permuted, "order": list(self.order),
                "in_channels": self.in_channels}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> AxisFacts:
        def ints(key: str) -> list[int]:
            return [int(i) for i in d.get(key, [])[:16]]

        first, channels = d.get("batch_first"), d.get("in_channels")
        return cls(str(d["path"])[:500], str(d["cls"])[:100], str(d["kind"])[:20],
                   ints("shape"), None if first is None else bool(first), ints("root_shape"),
                   bool(d.get("reshaped", False)), bool(d.get("permuted", False)),
                   ints("order"), None if channels is None else int(channels))


@dataclass
class ProgramFacts:
    """What the collectors saw of the program's shape, beside the statistics: the
    optimizers, the loader's sampler and batch size, the batch sizes the model received,
    frozen parameters and the modes of their modules, lazy modules. JSON-able (stored as
    one snapshot); every list is bounded by :data:`MAX_FACT_PATHS`.

    >>> ProgramFacts.from_json(ProgramFacts(batch_sizes=[32, 32, 8]).to_json()).batch_sizes
    [32, 32, 8]
    """

    optimizers: list[OptimizerFacts] = field(default_factory=list)
    sampler: str | None = None           # the watched loader's sampler class
    sampler_weighted: bool = False       # a WeightedRandomSampler (or one with weights)
    loader_batch_size: int | None = None
    batch_sizes: list[int] = field(default_factory=list)  # first axis of the model's input
    frozen: list[str] = field(default_factory=list)       # parameters with requires_grad=False
    frozen_norms_training: list[str] = field(default_factory=list)  # frozen norms in train()
    frozen_norms_eval: list[str] = field(default_factory=list)      # frozen norms in eval()
    # frozen norms the program had put in eval() itself, inside a model in train(), when
    # it was watched (a freeze() recipe's intent: their statistics are to stay)
    frozen_norms_set_eval: list[str] = field(default_factory=list)
    lazy: list[str] = field(default_factory=list)         # modules built lazily
    # where compiled code (torch.compile, TorchScript) starts: no forward hook runs there
    compiled: list[str] = field(default_factory=list)
    input_requires_grad: bool = False    # the model's input required grad (a penalty term)
    axes: list[AxisFacts] = field(default_factory=list)   # see :class:`AxisFacts`
    drop_last: bool | None = None        # the watched loader's drop_last (None: unknown)
    dataset_len: int | None = None       # len() of the watched loader's dataset
    batch_norms: list[list] = field(default_factory=list)  # [path, num_features] per BatchNorm
    input_ranges: list[list[float]] = field(default_factory=list)  # [min, max] per sampled input
    # how far each frozen norm layer's running mean moved since the first mode check, in
    # units of its running std then (mean over channels; the largest reading)
    frozen_norm_drift: dict[str, float] = field(default_factory=dict)
    loss_functions: list[str] = field(default_factory=list)  # torch loss functions called
    soft_targets: bool = False  # a class loss was given probability targets (mixup)

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in _FACT_FIELDS}
        out["optimizers"] = [o.to_json() for o in self.optimizers]
        out["axes"] = [a.to_json() for a in self.axes]
        out["batch_norms"] = [[str(p), int(c)] for p, c in self.batch_norms]
        out["input_ranges"] = [[float(lo), float(hi)] for lo, hi in self.input_ranges]
        out["frozen_norm_drift"] = {str(k): float(v) for k, v in self.frozen_norm_drift.items()}
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ProgramFacts:
        """Rebuild from :meth:`to_json` output (a stored run's snapshot); raises
        ``KeyError``/``TypeError``/``ValueError`` on a damaged one (the reader's to name)."""
        def paths(key: str) -> list[str]:
            return [str(p)[:500] for p in d.get(key, [])[:MAX_FACT_PATHS]]

        batch = d.get("loader_batch_size")
        return cls(
            optimizers=[OptimizerFacts.from_json(o) for o in d.get("optimizers", [])[:MAX_OPTIMIZERS]],
            sampler=None if d.get("sampler") is None else str(d["sampler"])[:100],
            sampler_weighted=bool(d.get("sampler_weighted", False)),
            loader_batch_size=None if batch is None else int(batch),
            batch_sizes=[int(b) for b in d.get("batch_sizes", [])[:MAX_FACT_PATHS]],
            frozen=paths("frozen"), frozen_norms_training=paths("frozen_norms_training"),
            frozen_norms_eval=paths("frozen_norms_eval"),
            frozen_norms_set_eval=paths("frozen_norms_set_eval"), lazy=paths("lazy"),
            compiled=paths("compiled"),
            input_requires_grad=bool(d.get("input_requires_grad", False)),
            axes=[AxisFacts.from_json(a) for a in d.get("axes", [])[:MAX_AXIS_FACTS]],
            drop_last=None if d.get("drop_last") is None else bool(d["drop_last"]),
            dataset_len=None if d.get("dataset_len") is None else int(d["dataset_len"]),
            batch_norms=[[str(p)[:500], int(c)]
                         for p, c in d.get("batch_norms", [])[:MAX_FACT_PATHS]],
            input_ranges=[[float(lo), float(hi)]
                          for lo, hi in d.get("input_ranges", [])[:MAX_FACT_PATHS]],
            frozen_norm_drift={str(k)[:500]: float(v) for k, v in
                               list(d.get("frozen_norm_drift", {}).items())[:MAX_FACT_PATHS]},
            loss_functions=[str(f)[:100] for f in d.get("loss_functions", [])[:MAX_LOSS_FUNCTIONS]],
            soft_targets=bool(d.get("soft_targets", False)),
        )


_FACT_FIELDS = ("sampler", "sampler_weighted", "loader_batch_size", "batch_sizes", "frozen",
                "frozen_norms_training", "frozen_norms_eval", "frozen_norms_set_eval", "lazy",
                "compiled", "loss_functions", "soft_targets",
                "input_requires_grad",
                "drop_last", "dataset_len")


