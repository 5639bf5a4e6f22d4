"""Training rules about the protocol around the model: BatchNorm fed too few values per
channel, frozen BatchNorm left in training mode, a GAN whose real and generated samples
live in different ranges, a discriminator that wins at once. Pure numpy over
:class:`~vizdebug.records.TrainingRecords` and the program facts the profile reads.
"""

from __future__ import annotations

import re

import numpy as np

from ...findings import Finding
from ...findings import fmt_number as _f
from ...records import ProgramFacts, TrainingRecords
from .profile import profile_of

# BatchNorm in training normalises each channel by the mean and variance of the batch's
# values in it: one value raises in torch ("Expected more than 1 value per channel when
# training"): a warning. Two or three give a variance of two or three numbers (Wu & He
# 2018 show BN's error rising steeply as the batch shrinks), but a working conditional
# GAN of the corpus (public/cgan-digits: a last batch of 3 into BatchNorm1d) trains well
# through them, so they are info.
MIN_BN_VALUES = 2
NOISY_BN_VALUES = 4
# [0, 1] data: the sampled real batches lie inside it (up to rounding) and span most of it
UNIT_SLACK = 1e-3
UNIT_SPAN = 0.5
# a discriminator's input below the real data's minimum by this share of the real span is
# not a real batch (the generator's)
BELOW_REAL = 0.1
# a discriminator "wins": its loss fell to this share of its start while the generator's
# rose to GROWTH times its start
D_WIN_SHARE = 0.05
G_GROWTH = 2.0
MIN_LOGGED = 20
# a frozen norm layer's running mean "moved" beyond float noise (in its running std)
MIN_NORM_DRIFT = 1e-4

_D_NAME = re.compile(r"(?:^|[^a-z])(?:d|dis\w*|critic)(?:[^a-z]|$)|errd\b", re.IGNORECASE)
_G_NAME = re.compile(r"(?:^|[^a-z])(?:g|gen\w*)(?:[^a-z]|$)|errg\b", re.IGNORECASE)


# -- BatchNorm and the batch it receives ----------------------------------------------------
def rule_batchnorm_small_batch(rec: TrainingRecords) -> list[Finding]:
    """A BatchNorm layer that trains on a batch giving it fewer than ``MIN_BN_VALUES``
    values per channel (a warning; fewer than ``NOISY_BN_VALUES``: info): the loader's
    last batch (``drop_last=False`` and a dataset length that the batch size does not
    divide) or the smallest batch the model received."""
    facts, profile = rec.program, profile_of(rec)
    if facts is None or not facts.batch_norms or profile.batch_size is None:
        return []
    smallest, why = _smallest_batch(facts, profile.min_batch)
    if smallest is None:
        return []
    eval_frozen = set(facts.frozen_norms_eval) - set(facts.frozen_norms_training)
    for path, channels in facts.batch_norms:
        spatial = _spatial(rec, path, channels, profile.batch_size)
        if path in eval_frozen or spatial is None or smallest * spatial >= NOISY_BN_VALUES:
            continue
        return [_small_batch_finding(path, smallest, smallest * spatial, why, facts)]
    return []


def _smallest_batch(facts: ProgramFacts, min_seen: int | None) -> tuple[int | None, str]:
    size, n = facts.loader_batch_size, facts.dataset_len
    if facts.drop_last is False and size and n and n % size:
        last = n % size
        if min_seen is None or last <= min_seen:
            return last, f"the last batch of every epoch ({n} samples, batch_size={size}, " \
                         "drop_last=False)"
    if min_seen is not None:
        return min_seen, "the smallest batch the model received"
    return None, ""


def _spatial(rec: TrainingRecords, path: str, channels: int, batch: int) -> int | None:
    """Values per channel of one sample at the layer (1 for ``(N, C)``, ``H*W`` for
    images), from its sampled output size; None where it never ran in training."""
    if path not in rec.module_paths or rec.activations.shape[0] == 0:
        return None
    numel = rec.act("numel")[:, rec.module_paths.index(path)]
    numel = numel[np.isfinite(numel) & (numel > 0)]
    if numel.size == 0 or channels <= 0:
        return None
    return max(1, round(float(np.median(numel)) / (batch * channels)))


def _small_batch_finding(path: str, batch: int, values: int, why: str,
                         facts: ProgramFacts) -> Finding:
    raises = values < MIN_BN_VALUES
    outcome = ("torch raises 'Expected more than 1 value per channel when training'" if raises
               else f"its mean and variance come from {values} values per channel")
    fix = ("set drop_last=True on the training DataLoader" if facts.drop_last is False
           else "use a larger batch")
    return Finding(
        "batchnorm-small-batch", "warning" if raises else "info",
        f"{path!r} (BatchNorm, training) receives {why}: {batch} samples, {values} values per "
        f"channel; {outcome}",
        where=path, evidence={"batch": batch, "values_per_channel": values},
        hint=f"{fix} so that no training batch is that small, or use GroupNorm/LayerNorm, "
             "which do not depend on the batch")


# -- frozen BatchNorm left in train() -------------------------------------------------------
def rule_frozen_batchnorm_training(rec: TrainingRecords) -> list[Finding]:
    """Frozen BatchNorm layers (affine parameters without gradients) left in ``train()``:
    their running statistics follow the new data while the protocol says frozen. Info
    only: PyTorch's own feature-extraction tutorial does exactly this and trains fine
    (the statistics adapt to the new data, which is often what helps)."""
    frozen = profile_of(rec).frozen_norms_training
    if not frozen:
        return []
    drift = {p: d for p, d in (rec.program.frozen_norm_drift if rec.program else {}).items()
             if p in frozen}
    moved = (f"; their running means moved by up to {_f(max(drift.values()))} of their std at "
             f"the first step ({max(drift, key=drift.get)!r})") if drift else ""
    undone = [p for p in frozen if p in set(rec.program.frozen_norms_set_eval)
              and drift.get(p, 0.0) > MIN_NORM_DRIFT]
    if undone:
        return [_eval_undone_finding(undone, drift)]
    return [Finding(
        "frozen-batchnorm-training", "info",
        f"{len(frozen)} frozen BatchNorm layers stay in train() mode ({', '.join(frozen[:3])}"
        f"{' ...' if len(frozen) > 3 else ''}): their running statistics keep moving with the "
        f"new data although their weights are frozen{moved}",
        where=frozen[0], evidence={"layers": list(frozen[:50]), "drift": drift},
        hint="if the backbone's statistics must stay the pretrained ones, put these layers "
             "back in eval() after every model.train() (or use FrozenBatchNorm2d)")]


def _eval_undone_finding(undone: list[str], drift: dict[str, float]) -> Finding:
    """The program itself had put these frozen layers in eval() (inside a model in train())
    when it was watched, and a later ``model.train()`` put them back in training: the
    freeze it meant does not hold, and their statistics moved (a warning)."""
    worst = max(undone, key=lambda p: drift[p])
    return Finding(
        "frozen-batchnorm-training", "warning",
        f"{len(undone)} frozen BatchNorm layers ({', '.join(undone[:3])}"
        f"{' ...' if len(undone) > 3 else ''}) were in eval() when the model was watched, set "
        "so by the program inside a model in train(), and trained in train() mode afterwards: "
        "a later model.train() undid that eval(), and their running means moved by up to "
        f"{_f(drift[worst])} of their std ({worst!r}) while their weights stay frozen",
        where=undone[0], evidence={"layers": list(undone[:50]), "drift": drift,
                                   "relation": "eval undone by train()"},
        hint="model.train() sets every submodule's mode: re-apply eval() to the frozen "
             "BatchNorm layers after each model.train() (override train() in the model), or "
             "replace them by FrozenBatchNorm2d / track_running_stats=False")


# -- GANs -------------------------------------------------------------------------------------
def rule_gan_range(rec: TrainingRecords) -> list[Finding]:
    """In a game, real batches scaled to [0, 1] against generated samples that reach
    below 0: a generator ending in ``Tanh`` (range [-1, 1]) or, when the watched model is
    the discriminator, inputs below the real data's minimum. The discriminator then tells
    real from fake by the range alone."""
    real = _real_range(rec)
    if not profile_of(rec).game or real is None:
        return []
    lo, hi = real
    tanh = _last_module(rec, "Tanh")
    if tanh is not None:
        return [_range_finding(lo, hi, -1.0, f"the generator ends in Tanh ({tanh!r}), whose "
                                             "range is [-1, 1]", tanh)]
    ranges = np.asarray(rec.program.input_ranges if rec.program else [], dtype=float)
    if ranges.size == 0:
        return []
    # the watched model is the discriminator when some of its inputs are real batches
    reads_real = np.any((ranges[:, 0] >= lo - UNIT_SLACK) & (ranges[:, 1] <= hi + UNIT_SLACK))
    fake_lo = float(ranges[:, 0].min())
    if not reads_real or fake_lo >= lo - BELOW_REAL * (hi - lo):
        return []
    return [_range_finding(lo, hi, fake_lo, "the discriminator also receives inputs down to "
                                            f"{_f(fake_lo)} (the generator's)", None)]


def _real_range(rec: TrainingRecords) -> tuple[float, float] | None:
    """The sampled real batches' range, when it lies in [0, 1] and spans most of it."""
    stats = rec.loader.batch_stats
    if stats.shape[0] == 0:
        return None
    lo, hi = float(np.nanmin(stats[:, 0])), float(np.nanmax(stats[:, 1]))
    inside = lo >= -UNIT_SLACK and hi <= 1 + UNIT_SLACK
    return (lo, hi) if inside and hi - lo >= UNIT_SPAN else None


def _last_module(rec: TrainingRecords, cls: str) -> str | None:
    """The watched model's last module in call order, when it is a ``cls``."""
    if rec.activations.shape[0] == 0:
        return None
    order = rec.act("order")[0]
    if not np.isfinite(order).any():
        return None
    last = int(np.nanargmax(order))
    return rec.module_paths[last] if rec.module_classes[last] == cls else None


def _range_finding(lo: float, hi: float, fake_lo: float, how: str, where: str | None) -> Finding:
    return Finding(
        "gan-range-mismatch", "warning",
        f"the real batches lie in [{_f(lo)}, {_f(hi)}] while {how}: generated samples reach "
        f"{_f(fake_lo)}, where no real sample is, so the discriminator can tell them apart by "
        "their range alone",
        where=where, evidence={"real_min": lo, "real_max": hi, "fake_min": fake_lo},
        hint="scale the real images to [-1, 1] (Normalize((0.5,), (0.5,)) after ToTensor, or "
             "x * 2 - 1) to match the Tanh output, or end the generator in Sigmoid")


def rule_discriminator_wins(rec: TrainingRecords) -> list[Finding]:
    """The discriminator's loss fell to ~0 while the generator's grew: D separates real
    from fake with ease and G's gradients carry little (a failure mode, ganhacks #10)."""
    pair = _player_losses(rec)
    if pair is None:
        return []
    (d_name, d), (g_name, g) = pair
    d_start, d_end, g_start, g_end = _ends(d) + _ends(g)
    if np.nanmin(d) < 0 or not d_start > 0 or not g_start > 0:
        return []  # a critic's (WGAN) loss is not bounded below by 0
    if d_end > D_WIN_SHARE * d_start or g_end < G_GROWTH * g_start:
        return []
    return [Finding(
        "discriminator-wins", "warning",
        f"{d_name} fell from {_f(d_start)} to {_f(d_end)} while {g_name} rose from "
        f"{_f(g_start)} to {_f(g_end)}: the discriminator wins and the generator learns little",
        where=d_name, evidence={"d_start": d_start, "d_end": d_end, "g_start": g_start,
                                "g_end": g_end},
        hint="check that real and generated samples share one range and preprocessing (real "
             "images in [-1, 1] for a Tanh generator), then weaken D or strengthen G: a lower "
             "D learning rate, label smoothing, fewer D steps")]


def _player_losses(rec: TrainingRecords) -> tuple[tuple[str, np.ndarray], ...] | None:
    names = profile_of(rec).game_losses
    d = [n for n in names if _D_NAME.search(n)]
    g = [n for n in names if _G_NAME.search(n) and n not in d]
    if not d or not g:
        return None
    out = tuple((n, rec.scalars[n][1][np.isfinite(rec.scalars[n][1])]) for n in (d[0], g[0]))
    return out if min(v.size for _, v in out) >= MIN_LOGGED else None


def _ends(values: np.ndarray) -> tuple[float, float]:
    """Median of the first 5% (at least 3) and of the last half."""
    head = max(3, values.size // 20)
    return float(np.median(values[:head])), float(np.median(values[values.size // 2:]))
