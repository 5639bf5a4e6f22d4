"""Per-layer distributions over training, from the statistics the hooks sample.

No histogram is taken on the hot path: at a sampled step the hook engine records, per
module output, its mean, standard deviation and largest magnitude (``ACTIVATION_STATS``),
and per parameter its gradient and weight norms (``GRAD_FIELDS``). From those:

- :func:`activation_bands`: each layer's output as a band over the sampled steps, mean
  ± one standard deviation, with the largest magnitude as its envelope (TensorBoard's
  distribution panel draws quantile bands; with two moments the band is mean ± std);
- :func:`parameter_scales`: each parameter's weight and gradient scale as a root mean
  square (norm / sqrt(elements)), comparable across layers of any size, and the update
  ratio, per sampled step (drawn as a heat: layers by steps).

Pure numpy; a row per (sampled step, layer) in long form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...records import TrainingRecords

__all__ = ["LayerColumns", "activation_bands", "parameter_scales"]


@dataclass
class LayerColumns:
    """Long-form columns: ``step`` and ``layer`` (one entry per sampled step and layer,
    steps ascending within each layer, layers in the model's order) and the named
    ``values`` columns.

    >>> cols = LayerColumns(np.array([0]), ["fc"], {"mean": np.array([0.5])})
    >>> len(cols), cols.names()
    (1, ['step', 'layer', 'mean'])
    """

    step: np.ndarray
    layer: list[str]
    values: dict[str, np.ndarray]

    def __len__(self) -> int:
        return int(self.step.size)

    def names(self) -> list[str]:
        return ["step", "layer", *self.values]

    def wide(self, name: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``(layers, steps, matrix)``: the column ``name`` as ``(layers, steps)``, the
        long form's layer-major blocks side by side.

        >>> cols = LayerColumns(np.array([0, 5, 0, 5]), ["a", "a", "b", "b"],
        ...                     {"m": np.arange(4.0)})
        >>> layers, steps, m = cols.wide("m"); layers, steps.tolist(), m.tolist()
        (['a', 'b'], [0, 5], [[0.0, 1.0], [2.0, 3.0]])
        """
        layers = list(dict.fromkeys(self.layer))
        per = len(self) // max(len(layers), 1)
        return layers, self.step[:per], self.values[name].reshape(len(layers), per)


def _long(steps: np.ndarray, names: list[str], keep: np.ndarray,
          columns: dict[str, np.ndarray]) -> LayerColumns:
    """``(samples, layers)`` columns as long form, layer by layer, the kept layers only."""
    picked = [j for j in range(len(names)) if keep[j]]
    step = np.concatenate([steps for _ in picked]) if picked else np.empty(0, np.int64)
    layer = [names[j] for j in picked for _ in range(steps.size)]
    values = {k: (np.concatenate([v[:, j] for j in picked]) if picked else np.empty(0))
              for k, v in columns.items()}
    return LayerColumns(step.astype(np.int64), layer, values)


def activation_bands(rec: TrainingRecords) -> LayerColumns:
    """Each module output's ``mean``, ``low`` / ``high`` (mean ∓ std) and ``absmax`` at
    each sampled step; modules never sampled with a finite mean are left out.

    Examples
    --------
    >>> from vizdebug.records import ACTIVATION_FIELDS
    >>> acts = np.zeros((2, 1, len(ACTIVATION_FIELDS)))
    >>> acts[:, 0, 0], acts[:, 0, 1], acts[:, 0, 6] = [0.0, 1.0], [1.0, 2.0], [3.0, 5.0]
    >>> rec = TrainingRecords(module_paths=["fc"], module_classes=["Linear"],
    ...                       act_steps=np.array([0, 10]), activations=acts)
    >>> b = activation_bands(rec); b.values["low"].tolist(), b.values["high"].tolist()
    ([-1.0, -1.0], [1.0, 3.0])
    """
    if rec.activations.shape[0] == 0 or not rec.module_paths:
        return LayerColumns(np.empty(0, np.int64), [], {k: np.empty(0) for k in
                                                        ("mean", "low", "high", "absmax")})
    mean, std, absmax = (rec.act(k).astype(float) for k in ("mean", "std", "absmax"))
    keep = np.isfinite(mean).any(axis=0)
    names = [f"{p} ({c})" for p, c in zip(rec.module_paths, rec.module_classes)]
    return _long(np.asarray(rec.act_steps), names, keep,
                 {"mean": mean, "low": mean - std, "high": mean + std, "absmax": absmax})


def parameter_scales(rec: TrainingRecords) -> LayerColumns:
    """Each parameter's ``weight_rms``, ``grad_rms`` and ``update_ratio`` at each sampled
    step (an RMS is the norm over the square root of the element count).

    Examples
    --------
    >>> grads = np.array([[[2.0, 4.0, 0.01]]])  # grad_norm, weight_norm, update_ratio
    >>> rec = TrainingRecords(param_paths=["w"], param_numel=[4], grad_steps=np.array([3]),
    ...                       grads=grads)
    >>> s = parameter_scales(rec); s.values["grad_rms"].tolist(), s.values["weight_rms"].tolist()
    ([1.0], [2.0])
    """
    empty = LayerColumns(np.empty(0, np.int64), [], {k: np.empty(0) for k in
                                                     ("weight_rms", "grad_rms", "update_ratio")})
    if rec.grads.shape[0] == 0 or not rec.param_paths:
        return empty
    numel = np.asarray([max(int(n), 1) for n in rec.param_numel][:len(rec.param_paths)],
                       dtype=float)
    if numel.size != len(rec.param_paths):  # element counts not known (yet): norms as they are
        numel = np.ones(len(rec.param_paths))
    root = np.sqrt(numel)[None, :]
    grad, weight = rec.grad("grad_norm") / root, rec.grad("weight_norm") / root
    keep = np.isfinite(weight).any(axis=0) | np.isfinite(grad).any(axis=0)
    return _long(np.asarray(rec.grad_steps), list(rec.param_paths), keep,
                 {"weight_rms": weight, "grad_rms": grad,
                  "update_ratio": rec.grad("update_ratio").astype(float)})
