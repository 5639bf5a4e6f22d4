"""Models of unusual shape trained with vizdebug attached (issue 20): no collector error,
no warning, and the trained weights bitwise equal to the same run without vizdebug."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd

X = torch.randn(128, 8, generator=torch.Generator().manual_seed(0))
Y = (X[:, 0] > 0).long()


def loader() -> DataLoader:
    return DataLoader(TensorDataset(X, Y), batch_size=32)


def classify(model: nn.Module, opt: torch.optim.Optimizer, session: Any) -> None:
    for _ in range(3):
        for x, y in loader():
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if session is not None:
                session.log(loss=loss)


def trained(build: Callable[[], nn.Module], loop: Callable = classify, *, watched: bool,
            **watch: Any) -> tuple[dict[str, torch.Tensor], list[str]]:
    """The weights after training (with or without vizdebug) and what vizdebug said
    above info, with any Python warning raised from inside vizdebug."""
    torch.manual_seed(0)
    model = build()
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    if not watched:
        loop(model, opt, None)
        return model.state_dict(), []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with vd.watch(model, **watch) as session:
            loop(model, opt, session)
        said = [f"{f.severity} {f.code}: {f.message}" for f in session.findings()
                if f.severity != "info"]
    said += [f"python warning {w.message}" for w in seen if "vizdebug" in w.filename]
    return model.state_dict(), said


def assert_unchanged_and_quiet(build: Callable[[], nn.Module], loop: Callable = classify,
                               **watch: Any) -> None:
    plain, _ = trained(build, loop, watched=False)
    weights, said = trained(build, loop, watched=True, **watch)
    assert said == []
    assert plain.keys() == weights.keys()
    assert all(torch.equal(plain[k], weights[k]) for k in plain)


class ComplexWeights(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mix = nn.Linear(8, 4, dtype=torch.cfloat)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.mix(x.to(torch.cfloat)).abs())


class ComplexParameter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 4, dtype=torch.cfloat) * 0.1)
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x.to(torch.cfloat) @ self.w
        return self.head(torch.cat([z.real, z.imag], 1))


@pytest.mark.parametrize("build", [ComplexWeights, ComplexParameter])
def test_complex_valued_models(build: Callable[[], nn.Module]) -> None:
    """Before: ``collector-error`` (the gradient collector raised ``linalg.vector_norm:
    dtype should be complex for complex inputs``) and a Python warning from vizdebug's
    activation sample (``Casting complex values to real discards the imaginary part``)."""
    assert_unchanged_and_quiet(build, every=1)


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))


def per_sample_gradients(model: nn.Module, opt: torch.optim.Optimizer, session: Any) -> None:
    """DP-SGD's recipe: per-sample gradients with ``torch.func``, clipped, averaged."""
    from torch.func import functional_call, grad, vmap

    def loss_of(params: dict, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(functional_call(model, params, (x[None],)), y[None])

    for _ in range(2):
        for x, y in loader():
            params = {k: v.detach() for k, v in model.named_parameters()}
            grads = vmap(grad(loss_of), in_dims=(None, 0, 0))(params, x, y)
            opt.zero_grad()
            for k, p in model.named_parameters():
                p.grad = grads[k].clamp(-1, 1).mean(0)
            opt.step()
            if session is not None:
                session.log(loss=F.cross_entropy(model(x), y).detach())


def test_per_sample_gradients_with_torch_func() -> None:
    """Before: seven ``collector-error`` warnings: the hooks read vmap's batched tensors
    (no storage: ``.numpy()`` and ``.item()`` raise) in the step counter, the activation
    collector and the loss check. A forward under a torch.func transform is now not
    sampled, as an eval pass is not."""
    assert_unchanged_and_quiet(mlp, per_sample_gradients, every=1)
