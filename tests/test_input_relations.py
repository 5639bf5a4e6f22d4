"""Unnormalised or channels-last inputs are facts about the data (check_batch says them at
info); they are faults when the model is known to suffer them (vd.watch)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd


def _digits(scale: float):
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.as_tensor(d.images[:512, None].astype(np.float32) * scale)
    return DataLoader(TensorDataset(x, torch.as_tensor(d.target[:512])), batch_size=64,
                      shuffle=True, generator=torch.Generator().manual_seed(0))


def _train(model: nn.Module, loader: DataLoader, epochs: int = 2) -> vd.Findings:
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    with vd.watch(model, loader=loader) as session:
        for _ in range(epochs):
            for x, y in loader:
                opt.zero_grad()
                loss = nn.functional.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
                session.log(loss=loss)
        return session.findings()


def _cnn(*after_conv: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), *after_conv, nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 64, 10))


def test_check_batch_says_the_fact_at_info():
    loader = _digits(16.0)  # 0..255 pixels
    found = vd.check_batch(next(iter(loader)))
    assert [f.severity for f in found if f.code == "input-not-normalized"] == ["info"]
    nhwc = torch.rand(8, 8, 8, 3)
    assert [f.severity for f in vd.check_batch(nhwc) if f.code == "layout-channels-last"] == ["info"]


def test_raw_pixels_into_a_plain_conv_are_named_at_the_first_layer():
    found = _train(_cnn(), _digits(16.0))
    (f,) = [f for f in found if f.code == "input-not-normalized"]
    assert f.severity == "warning" and f.where == "0"
    assert f.evidence["first_layer_std"] > 5 and f.evidence["input_abs"] > 200


def test_a_norm_layer_after_the_first_layer_absorbs_the_scale():
    found = _train(_cnn(nn.BatchNorm2d(8)), _digits(16.0))
    assert "input-not-normalized" not in found.codes


class _Scaled(nn.Module):
    """A forward that scales its own input (x / 255): the loader's range is no fault."""

    def __init__(self) -> None:
        super().__init__()
        self.net = _cnn()

    def forward(self, x):
        return self.net(x / 255.0)


def test_a_model_that_scales_its_input_itself_is_clean():
    found = _train(_Scaled(), _digits(16.0))
    assert "input-not-normalized" not in found.codes


def test_unit_scale_inputs_are_clean():
    found = _train(_cnn(), _digits(1 / 16))
    assert "input-not-normalized" not in found.codes
