"""The training profile: what vizdebug understood about the program before any verdict.

Built from the records alone (a live session's or a stored run's): how many optimizers
step and what each holds, which logged losses are minimised and which are the two sides
of a game, the batch size the model receives, the sampler, frozen parameters and the mode
of their norm layers, lazy modules, closures, inputs that require grad, whether the first
layer's output is normalised. Every training rule reads it before it speaks (through
:func:`profile_of`), and the findings view shows :meth:`TrainingProfile.lines`, so a user
can see why a rule spoke or stayed quiet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ...records import ACTIVATION_FIELDS, ProgramFacts, TrainingRecords

WEIGHT_LAYERS = ("Linear", "Conv", "LazyLinear", "LazyConv", "Bilinear")
NORM_PREFIXES = ("BatchNorm", "SyncBatchNorm", "LayerNorm", "GroupNorm", "InstanceNorm",
                 "LocalResponseNorm", "RMSNorm", "LazyBatchNorm", "LazyInstanceNorm")
# names a two-player loop gives its losses: loss_D / errG / d_loss / critic / adversarial
_PLAYER = re.compile(r"(?:^|[^a-z])(?:d|g|disc\w*|gen\w*|critic|adv\w*)(?:[^a-z]|$)|err[dg]\b",
                     re.IGNORECASE)


@dataclass(frozen=True)
class TrainingProfile:
    """The program's shape as the rules read it.

    Examples
    --------
    >>> profile = build_profile(TrainingRecords())
    >>> profile.optimizers, profile.game_losses, profile.per_sample
    (0, (), False)
    """

    optimizers: int = 0               # optimizers seen stepping
    model_optimizers: int = 0         # of them, updating the watched model's parameters
    other_optimizers: int = 0         # updating only tensors outside it (another network)
    optimizer_names: tuple[str, ...] = ()
    optimizer_sizes: tuple[tuple[int, int], ...] = ()  # each one's (model tensors, others)
    closure: bool = False             # step(closure): LBFGS and the like
    held: frozenset[int] = frozenset()  # trainable tensors some optimizer updates
    hand_updates: bool = False        # gradients, but no optimizer steps: SGD by hand
    train_losses: tuple[str, ...] = ()
    game_losses: tuple[str, ...] = ()  # the two sides of a game: not minimised as curves
    batch_size: int | None = None     # median batch the model received
    min_batch: int | None = None
    sampler: str | None = None
    rebalanced: bool = False          # a weighted sampler draws the batches
    frozen: tuple[str, ...] = ()
    frozen_norms_training: tuple[str, ...] = ()  # frozen norm layers in train()
    lazy: tuple[str, ...] = ()
    input_requires_grad: bool = False
    first_layer_normalised: bool = False  # a norm layer reads the first layer's output
    soft_targets: bool = False        # a class loss given probabilities (mixup, soft labels)
    facts_known: bool = False         # False for records without program facts (old runs)
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def per_sample(self) -> bool:
        """One sample per step (a classic per-example loop)."""
        return self.batch_size == 1

    @property
    def game(self) -> bool:
        """Two networks trained against each other (a GAN's discriminator and generator)."""
        return bool(self.game_losses)

    def lines(self) -> list[str]:
        """What vizdebug understood, one short line per fact, for the findings view."""
        out = [_optimizer_line(self)]
        if self.game:
            out.append(f"losses {', '.join(self.game_losses[:4])}: the two sides of a game "
                       "(not read as losses to minimise)")
        elif self.train_losses:
            out.append(f"losses minimised: {', '.join(self.train_losses[:4])}")
        if self.batch_size is not None:
            extra = f" (smallest {self.min_batch})" if self.min_batch != self.batch_size else ""
            out.append(f"batch size: {self.batch_size}{extra}"
                       + (" (one sample per step)" if self.per_sample else ""))
        if self.sampler is not None:
            out.append(f"sampler: {self.sampler}" + (" (rebalances the classes)"
                                                      if self.rebalanced else ""))
        if self.frozen:
            out.append(f"frozen: {len(self.frozen)} parameter tensors ({_few(self.frozen)})")
        if self.frozen_norms_training:
            out.append(f"frozen norm layers left in train(): {_few(self.frozen_norms_training)}")
        if self.lazy:
            out.append(f"lazy modules: {_few(self.lazy)}")
        if self.input_requires_grad:
            out.append("the model's input requires grad (a gradient penalty, input attribution)")
        if self.first_layer_normalised:
            out.append("the first layer's output is normalised by a norm layer")
        if self.soft_targets:
            out.append("class targets given as probabilities (mixup, cutmix, soft labels)")
        return [*out, *self.notes]


def _few(items: tuple[str, ...], n: int = 3) -> str:
    more = f" and {len(items) - n} more" if len(items) > n else ""
    return ", ".join(items[:n]) + more


def _optimizer_line(p: TrainingProfile) -> str:
    if not p.facts_known:
        return "optimizers: not recorded (a run stored by an older vizdebug)"
    if p.optimizers == 0:
        return ("optimizers: none seen stepping; weights updated by hand" if p.hand_updates
                else "optimizers: none seen stepping")
    parts = []
    for name, (held, outside) in zip(p.optimizer_names, p.optimizer_sizes):
        where = (f"the watched model's {held} trainable tensors" if held else
                 f"{outside} tensors outside the watched model (another network)")
        parts.append(f"{name} over {where}")
    closure = " (step(closure))" if p.closure else ""
    return "optimizers: " + "; ".join(parts) + closure


def build_profile(rec: TrainingRecords) -> TrainingProfile:
    """Read the profile from ``rec`` (pure; see :func:`profile_of` for the cached one)."""
    facts = rec.program or ProgramFacts()
    opts = facts.optimizers
    model_opts = [o for o in opts if o.held]
    held = frozenset(i for o in opts for i in o.held)
    losses = _train_losses(rec)
    sizes = facts.batch_sizes or ([facts.loader_batch_size] if facts.loader_batch_size else [])
    return TrainingProfile(
        optimizers=len(opts), model_optimizers=len(model_opts),
        other_optimizers=len(opts) - len(model_opts),
        optimizer_names=tuple(o.cls for o in opts), closure=any(o.closure for o in opts),
        optimizer_sizes=tuple((len(o.held), o.outside) for o in opts),
        held=held, hand_updates=not opts and rec.grads.shape[0] > 0,
        train_losses=losses, game_losses=_game_losses(losses, len(opts)),
        batch_size=int(np.median(sizes)) if sizes else None,
        min_batch=int(min(sizes)) if sizes else None, sampler=facts.sampler,
        rebalanced=facts.sampler_weighted, frozen=tuple(facts.frozen),
        frozen_norms_training=tuple(p for p in facts.frozen_norms_training
                                    if p not in facts.frozen_norms_eval),
        lazy=tuple(facts.lazy), input_requires_grad=facts.input_requires_grad,
        first_layer_normalised=first_layer_normalised(rec), facts_known=rec.program is not None,
        soft_targets=facts.soft_targets,
    )


def profile_of(rec: TrainingRecords) -> TrainingProfile:
    """The profile of ``rec``, built once and kept on the records object (rules ask for it
    one after the other on the same records)."""
    cached = rec.__dict__.get("_profile")
    if cached is None:
        cached = rec.__dict__["_profile"] = build_profile(rec)
    return cached


def _train_losses(rec: TrainingRecords) -> tuple[str, ...]:
    evals = ("val", "valid", "validation", "test", "eval")
    return tuple(n for n in rec.scalars
                 if "loss" in n.lower() and not n.lower().startswith(evals))


def _game_losses(losses: tuple[str, ...], optimizers: int) -> tuple[str, ...]:
    """Losses of two players: two optimizers step, and the program logs one loss per
    player (two or more training losses, or names such as ``loss_D``/``errG``)."""
    if optimizers < 2 or not losses:
        return ()
    players = tuple(n for n in losses if _PLAYER.search(n))
    if len(players) >= 2 or (players and len(losses) == 1):
        return players
    return losses if len(losses) >= 2 else ()


def call_order(rec: TrainingRecords) -> list[int]:
    """The modules (indices into ``rec.module_classes``) the first sampled step ran, in
    the order it called them."""
    if rec.activations.shape[0] == 0 or not rec.module_classes:
        return []
    order = rec.activations[0, :, ACTIVATION_FIELDS.index("order")]
    return [int(i) for i in np.argsort(np.where(np.isfinite(order), order, np.inf))
            if np.isfinite(order[i])]


def first_weight_layer(rec: TrainingRecords) -> int | None:
    """The first module with weights in the call order; ``None`` when a norm layer (or
    nothing with weights) comes first."""
    for i in call_order(rec):
        cls = rec.module_classes[i]
        if cls.startswith(NORM_PREFIXES):
            return None
        if cls.startswith(WEIGHT_LAYERS):
            return i
    return None


def first_layer_normalised(rec: TrainingRecords) -> bool:
    """Whether the first module the batch reaches with weights (or the input itself) is
    followed by a norm layer in the step's call order."""
    classes = [rec.module_classes[i] for i in call_order(rec)]
    for pos, cls in enumerate(classes[:-1]):
        if cls.startswith(NORM_PREFIXES):
            return True
        if cls.startswith(WEIGHT_LAYERS):
            return classes[pos + 1].startswith(NORM_PREFIXES)
    return False
