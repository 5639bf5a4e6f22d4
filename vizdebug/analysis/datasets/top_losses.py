"""Per-sample losses of a model over its data and the k worst samples, for
:func:`vizdebug.show_top_losses`. The model runs in eval mode under ``torch.no_grad()``;
its train/eval flags, parameters and the global RNG states are restored, and the user's
loader is never advanced (a fresh pass). torch is imported inside the functions.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...data.arrays import is_nested, to_numpy
from ...data.parts import dataset_length, split_batch
from ...data.sources import own_pass, preserved_rng
from ...errors import VizdebugError, VizdebugTypeError, describe, short_repr

MAX_SAMPLES = 10_000
CHUNK = 256  # items per forward pass for a Dataset or an (x, y) pair
MAX_OUTPUTS = 1000  # outputs per sample kept for predictions (more: no prediction shown)
_REGRESSION_LOSSES = ("MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "mse_loss", "l1_loss",
                      "smooth_l1_loss", "huber_loss")


@dataclass
class TopLosses:
    """The k worst samples, worst first, and the per-sample losses of all that were read.

    ``indices`` are positions in the source (dataset indices for a DataLoader over a
    map-style Dataset, a Dataset, or an ``(x, y)`` pair); ``predictions`` are class ids
    (or raw values for a regression); ``probabilities`` the predicted class's softmax (or
    sigmoid) probability, NaN where there is none.
    """

    indices: list[int]
    losses: np.ndarray
    targets: list[Any]
    predictions: list[Any]
    probabilities: np.ndarray
    inputs: Any  # the k inputs as one CPU tensor, worst first
    all_losses: np.ndarray
    n_read: int
    truncated: bool = False
    per_sample_calls: bool = False
    task: str = "multiclass"


def top_losses(model: Any, data: Any, loss_fn: Any, k: int = 16, *,
               max_samples: int = MAX_SAMPLES) -> TopLosses:
    """Run ``model`` over ``data`` (a DataLoader, a Dataset, an iterable of ``(x, y)``
    batches, or one ``(x, y)`` pair) and rank its samples by ``loss_fn``, worst first.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Linear(3, 2)
    >>> x, y = torch.randn(20, 3), torch.randint(0, 2, (20,))
    >>> res = top_losses(model, (x, y), torch.nn.CrossEntropyLoss(), k=4)
    >>> len(res.indices), bool((res.losses[:-1] >= res.losses[1:]).all()), res.n_read
    (4, True, 20)
    """
    import torch

    k, max_samples = _check_args(model, data, loss_fn, k, max_samples)
    acc = _Accumulator(k, loss_fn)
    modes = [(m, m.training) for m in model.modules()]
    with _all_rng_preserved(data), torch.no_grad():
        model.eval()
        try:
            for start, x, y in _batches(data, max_samples, acc):
                acc.add(start, x, y, *_evaluate(model, loss_fn, x, y, acc))
        finally:
            for module, mode in modes:
                module.training = mode
    return acc.result()


def _check_args(model: Any, data: Any, loss_fn: Any, k: Any, max_samples: Any) -> tuple[int, int]:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise VizdebugTypeError(
            f"model must be a torch.nn.Module, got {describe(model)}: {short_repr(model)}")
    if not callable(loss_fn):
        raise VizdebugTypeError(
            f"loss_fn must be callable (e.g. nn.CrossEntropyLoss() or F.cross_entropy), got "
            f"{describe(loss_fn)}: {short_repr(loss_fn)}")
    for name, v in (("k", k), ("max_samples", max_samples)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise VizdebugTypeError(f"{name} must be a whole number, got {describe(v)}: {short_repr(v)}")
        if v <= 0:
            raise VizdebugError(f"{name}={v}: it must be at least 1")
    return int(k), int(max_samples)


@contextlib.contextmanager
def _all_rng_preserved(data: Any) -> Iterator[None]:
    """Python, numpy, torch (CPU and CUDA) and the loader's generator, restored after."""
    import torch

    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        with preserved_rng(data):
            yield
    finally:
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def _batches(data: Any, max_samples: int, acc: _Accumulator) -> Iterator[tuple[int, Any, Any]]:
    """``(start, x, y)`` batches of at most ``max_samples`` items in all."""
    start = 0
    for b, raw in enumerate(_raw_batches(data, acc)):
        if raw is None:
            raise VizdebugError(f"batch {b} of the {acc.description} is None; a collate_fn or "
                                "the loader returned nothing")
        x, y = split_batch(raw)
        if x is None or y is None:
            raise VizdebugError(
                f"batch {b} of the {acc.description} is {describe(raw)}; top losses need "
                "(input, target) batches, e.g. (x, y) tuples or {'image': x, 'label': y}")
        if is_nested(x) or len(getattr(x, "shape", ())) == 0:
            raise VizdebugTypeError(f"the input of batch {b} of the {acc.description} is "
                                    f"{describe(x)}; it must be a tensor or array with a batch axis")
        n = int(x.shape[0])
        if start + n > max_samples:
            x, y, n = x[:max_samples - start], y[:max_samples - start], max_samples - start
            acc.cut = True
        yield start, x, y
        start += n
        if start >= max_samples:
            acc.cut = acc.cut or _has_more(data, start)
            return


def _has_more(data: Any, read: int) -> bool:  # False when all of a known size was read
    with contextlib.suppress(Exception):
        return len(data[0] if isinstance(data, tuple) else data.dataset
                   if hasattr(data, "dataset") else data) > read or isinstance(data, list)
    return True


def _raw_batches(data: Any, acc: _Accumulator) -> Iterator[Any]:
    from torch.utils.data import DataLoader, Dataset, IterableDataset

    if isinstance(data, DataLoader):
        acc.description = "DataLoader"
        yield from _guarded(_fresh_pass(data), acc.description)
    elif isinstance(data, Dataset) and not isinstance(data, IterableDataset) \
            and hasattr(data, "__len__"):
        acc.description = f"{type(data).__name__} of {dataset_length(data)} items"
        yield from _guarded(_dataset_chunks(data), acc.description)
    elif isinstance(data, tuple) and len(data) == 2 and getattr(type(data[0]), "shape", None):
        acc.description = f"(x, y) pair of {describe(data[0])}"  # (a nested x has no shape)
        n = dataset_length(data[0], "the x of the (x, y) pair")
        yield from _guarded(((data[0][s:s + CHUNK], data[1][s:s + CHUNK])  # a y that cannot
                             for s in range(0, n, CHUNK)), acc.description)  # be cut: named
    elif hasattr(data, "__iter__") and not isinstance(data, (str, bytes, Mapping)):
        acc.description = type(data).__name__
        yield from _guarded(data, acc.description)
    else:
        raise VizdebugTypeError(
            f"cannot read batches from {describe(data)}: {short_repr(data)}; pass a "
            "DataLoader, a Dataset or an (x, y) pair of tensors")


def _fresh_pass(loader: Any) -> Iterator[Any]:
    """A map-style DataLoader's dataset in order (same collate_fn and batch size, in this
    process): ranks name dataset indices and no sampler RNG is drawn. Others: a fresh pass."""
    from torch.utils.data import DataLoader, IterableDataset, RandomSampler, SequentialSampler

    if isinstance(loader.dataset, IterableDataset) or loader.batch_size is None \
            or type(loader.sampler) not in (SequentialSampler, RandomSampler):
        return iter(own_pass(loader))  # a custom sampler: positions in this pass
    plain = DataLoader(loader.dataset, batch_size=loader.batch_size, shuffle=False,
                       collate_fn=loader.collate_fn, num_workers=0)
    return iter(plain)


def _dataset_chunks(dataset: Any) -> Iterator[Any]:
    from torch.utils.data import default_collate

    for s in range(0, n := dataset_length(dataset), CHUNK):
        items = [dataset[i] for i in range(s, min(s + CHUNK, n))]
        bad = next((s + j for j, it in enumerate(items) if it is None), None)
        if bad is not None:
            raise VizdebugError(f"dataset[{bad}] is None; vd.check_dataset(dataset) lists them all")
        yield default_collate(items)


def _guarded(it: Iterable[Any], description: str) -> Iterator[Any]:
    b = 0
    while True:
        try:
            raw = next(it := iter(it))  # (an iterable's iter() may raise too)
        except StopIteration:
            return
        except VizdebugError:
            raise
        except Exception as exc:
            raise VizdebugError(f"reading batch {b} from the {description} failed with "
                                f"{type(exc).__name__}: {str(exc)[:300]}") from exc
        yield raw
        b += 1


def _evaluate(model: Any, loss_fn: Any, x: Any, y: Any, acc: _Accumulator):
    """Model outputs and per-sample losses of one batch, as CPU tensors."""
    x, y = _to_model(model, x), _to_model(model, y, target=True)
    try:
        out = _logits(model(x))
    except Exception as exc:
        raise VizdebugError(f"model(x) raised {type(exc).__name__}: {str(exc)[:300]} for an "
                            f"input of {describe(x)}") from exc
    losses = per_sample_loss(loss_fn, out, y, acc)
    return out.detach().float().cpu(), losses


def _to_model(model: Any, v: Any, target: bool = False) -> Any:
    import torch

    param = next(model.parameters(), None)
    device = param.device if param is not None else torch.device("cpu")
    if isinstance(v, np.ndarray):
        v = torch.as_tensor(to_numpy(v, "the targets" if target else "the inputs").copy())
        if v.is_floating_point() and param is not None and not target:
            v = v.to(param.dtype)
    return v.to(device) if isinstance(v, torch.Tensor) else v


def _logits(out: Any) -> Any:
    import torch

    if isinstance(out, (tuple, list)) and out:
        out = out[0]
    elif isinstance(out, Mapping) and "logits" in out:
        out = out["logits"]
    elif hasattr(out, "logits"):
        out = out.logits
    if not isinstance(out, torch.Tensor):
        raise VizdebugTypeError(f"the model returned {describe(out)}; top losses need a tensor")
    return out


def per_sample_loss(loss_fn: Any, out: Any, y: Any, acc: Any = None) -> Any:
    """One loss per sample: ``reduction="none"`` when ``loss_fn`` takes it, else one call
    per sample (``acc.per_sample_calls`` says so). Returns a 1-D float CPU tensor.

    >>> import torch
    >>> out, y = torch.zeros(3, 2), torch.tensor([0, 1, 0])
    >>> per_sample_loss(torch.nn.CrossEntropyLoss(), out, y).tolist()
    [0.6931..., 0.6931..., 0.6931...]
    >>> per_sample_loss(lambda o, t: (o[:, 0] - t).pow(2).mean(), out, y.float()).tolist()
    [0.0, 1.0, 0.0]
    """
    try:
        losses = _reduced_none(loss_fn, out, y)
        if losses is None:
            losses = _one_by_one(loss_fn, out, y)
            if acc is not None:
                acc.per_sample_calls = True
    except Exception as exc:
        raise VizdebugError(
            f"loss_fn {short_repr(loss_fn)} ({getattr(loss_fn, '__name__', type(loss_fn).__name__)}) raised {type(exc).__name__}: "
            f"{str(exc)[:300]} on outputs of {describe(out)} and targets of {describe(y)}"
        ) from exc
    return losses.detach().float().cpu()


def _reduced_none(loss_fn: Any, out: Any, y: Any) -> Any:
    import torch

    if isinstance(loss_fn, torch.nn.Module) and hasattr(loss_fn, "reduction"):
        fn = copy.copy(loss_fn)  # the user's module keeps its reduction
        fn.reduction = "none"
        losses = fn(out, y)
    elif _takes_reduction(loss_fn):
        losses = loss_fn(out, y, reduction="none")
    else:
        return None
    if losses.ndim == 0 or losses.shape[0] != out.shape[0]:
        return None
    return losses.reshape(len(losses), -1).mean(dim=1)


def _takes_reduction(fn: Any) -> bool:
    try:
        return "reduction" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _one_by_one(loss_fn: Any, out: Any, y: Any) -> Any:
    import torch

    return torch.stack([torch.as_tensor(loss_fn(out[i:i + 1], y[i:i + 1]), dtype=torch.float32)
                        .reshape(-1).mean() for i in range(len(out))])


def predictions(out: Any, loss_fn: Any, targets: np.ndarray | None) -> tuple[str, list, np.ndarray]:
    """``(task, predictions, probabilities)`` from CPU outputs: softmax over several
    outputs, sigmoid for one output with 0/1 targets, the raw value for a regression.

    >>> import torch
    >>> task, pred, prob = predictions(torch.tensor([[0.0, 2.0], [3.0, 0.0]]), None, None)
    >>> task, pred, prob.round(2).tolist()
    ('multiclass', [1, 0], [0.88, 0.95])
    """
    import torch

    n = out.shape[0]
    flat = out.reshape(n, -1)
    if out.ndim == 2 and flat.shape[1] > 1:
        p = torch.softmax(flat, dim=1)
        best = p.max(dim=1)
        return "multiclass", best.indices.tolist(), best.values.numpy().astype(np.float64)
    if flat.shape[1] == 1:
        v = flat[:, 0]
        name = getattr(loss_fn, "__name__", type(loss_fn).__name__)
        binary = name not in _REGRESSION_LOSSES and targets is not None and \
            np.isin(targets[~np.isnan(targets)], (0, 1)).all()
        if binary:
            p = torch.sigmoid(v).numpy().astype(np.float64)
            pred = (p >= 0.5).astype(int)
            return "binary", pred.tolist(), np.where(pred == 1, p, 1 - p)
        return "regression", v.tolist(), np.full(n, np.nan)
    return "other", [None] * n, np.full(n, np.nan)


def target_values(y: Any, n: int) -> list[Any]:
    """One caption value per sample: a class id, a number, or None.

    >>> import torch
    >>> target_values(torch.tensor([[0, 1.0], [1, 0]]), 2), target_values(torch.tensor([3, 4]), 2)
    ([1, 0], [3, 4])
    """
    import torch

    if not isinstance(y, torch.Tensor):
        with contextlib.suppress(Exception):
            y = torch.as_tensor(np.asarray(y))
    if not isinstance(y, torch.Tensor) or y.ndim == 0 or y.shape[0] != n:
        return [None] * n
    y = y.detach().cpu()
    if y.numel() == n:
        return y.reshape(-1).tolist()
    if y.ndim == 2:
        return y.argmax(dim=1).tolist()  # one-hot or soft targets
    return [None] * n


class _Accumulator:
    """Per-sample scalars of every batch; the inputs of the current k worst only."""

    def __init__(self, k: int, loss_fn: Any) -> None:
        self.k, self.loss_fn = k, loss_fn
        self.description, self.cut, self.per_sample_calls = "data", False, False
        self.losses, self.outputs, self.targets = [], [], []  # per batch, per batch, per item
        self.kept: list[tuple[float, int, Any]] = []  # (rank key, index, input)

    def add(self, start: int, x: Any, y: Any, out: Any, losses: Any) -> None:
        import torch

        loss = losses.numpy().astype(np.float64)
        self.losses.append(loss)
        small = out.ndim <= 2 and out[:1].numel() <= MAX_OUTPUTS
        self.outputs.append(out if small else None)  # a segmentation map is not kept
        self.targets += target_values(y, len(loss))
        key = np.where(np.isnan(loss), np.inf, loss)  # a NaN loss is the worst of all
        floor = self.kept[-1][0] if len(self.kept) >= self.k else -np.inf
        best = np.argsort(-key, kind="stable")[:self.k]
        x = torch.as_tensor(to_numpy(x, "the inputs").copy()) if isinstance(x, np.ndarray) else x
        new = [(float(key[i]), start + int(i), x[i].detach().cpu().clone())
               for i in best if key[i] >= floor]
        self.kept = sorted(self.kept + new, key=lambda t: (-t[0], t[1]))[:self.k]

    def result(self) -> TopLosses:
        import torch

        if not self.losses:
            raise VizdebugError(f"the {self.description} yielded no batch: it is empty")
        all_losses = np.concatenate(self.losses)
        out = torch.cat(self.outputs) if _same_tail(self.outputs) else None
        idx = [i for _, i, _ in self.kept]
        tgt = np.asarray([t if t is not None else np.nan for t in self.targets], dtype=float)
        task, pred, prob = predictions(out, self.loss_fn, tgt) if out is not None else \
            ("other", [None] * len(all_losses), np.full(len(all_losses), np.nan))
        return TopLosses(idx, all_losses[idx], [self.targets[i] for i in idx],
                         [pred[i] for i in idx], prob[idx],
                         torch.stack([x for _, _, x in self.kept]), all_losses, len(all_losses),
                         self.cut, self.per_sample_calls, task)


def _same_tail(outputs: list[Any]) -> bool:
    return all(o is not None for o in outputs) and len({tuple(o.shape[1:]) for o in outputs}) == 1
