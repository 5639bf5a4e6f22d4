"""set_seed and environment()."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.errors import VizdebugError


def _draws() -> tuple:
    import random

    return random.random(), float(np.random.rand()), torch.randn(3).tolist()


def test_set_seed_repeats_every_generator_and_asks_for_deterministic_kernels():
    before = torch.are_deterministic_algorithms_enabled()
    cudnn = torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark
    try:
        done = vd.set_seed(123)
        first = _draws()
        vd.set_seed(123)
        assert _draws() == first
        assert done["seeded"] == ["random", "numpy", "torch"]
        assert torch.are_deterministic_algorithms_enabled()
    finally:
        torch.use_deterministic_algorithms(before)
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn
    vd.set_seed(124, deterministic=False)
    assert _draws() != first


@pytest.mark.parametrize("seed", [-1, 2**40, 1.5, "0", True, None])
def test_bad_seeds_get_a_clear_error(seed):
    with pytest.raises(VizdebugError, match="set_seed takes an integer"):
        vd.set_seed(seed)


def test_environment_names_versions_and_hardware():
    env = vd.environment()
    assert env["packages"]["torch"].startswith(torch.__version__.split("+")[0])
    assert env["packages"]["vizdebug"] == vd.__version__
    assert env["gpus"] == [] or isinstance(env["gpus"][0], str)


def test_the_seed_and_the_environment_are_stored_with_the_run(tmp_path):
    model = torch.nn.Linear(3, 2)
    before = torch.are_deterministic_algorithms_enabled()
    vd.set_seed(7, deterministic=False)
    with vd.watch(model, store=tmp_path / "run.sqlite") as session:
        session.log(loss=1.0)
    torch.use_deterministic_algorithms(before)
    meta = vd.open_run(tmp_path / "run.sqlite").meta
    assert meta["seed"]["seed"] == 7 and "torch" in meta["seed"]["seeded"]
    assert meta["environment"]["packages"]["vizdebug"] == vd.__version__
