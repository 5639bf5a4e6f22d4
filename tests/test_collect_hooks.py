"""Model hooks: statistics, sampling, anomalies, removal, re-watch, weak references."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest
import torch
from torch import nn

import vizdebug as vd
from vizdebug.analysis.training.activations import activation_stats as reference_stats
from vizdebug.collect.checks.anomaly import AnomalyWarning, WatchAnomaly
from vizdebug.collect.hooks import outputs as outputs_module
from vizdebug.collect.hooks.fused import norms
from vizdebug.collect.hooks.rows import group_rows
from vizdebug.collect.hooks.stats import _sample_torch, output_key, sample_outputs
from vizdebug.errors import VizdebugError, VizdebugTypeError
from vizdebug.records import ACTIVATION_STATS


class Log(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x)  # NaN for negative inputs


class Net(nn.Module):
    """``encoder.2.1`` is a Log layer: the first module to produce NaN."""

    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU(),
                                     nn.Sequential(nn.Linear(8, 8), Log()))
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(x))


def mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def train_steps(model: nn.Module, steps: int, session=None, seed: int = 1) -> None:
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        x = torch.randn(32, 6, generator=gen)
        y = torch.randint(0, 3, (32,), generator=gen)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if session is not None:
            session.log(loss=loss)


def hook_count(model: nn.Module) -> int:
    n = sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())
    return n + sum(len(p._post_accumulate_grad_hooks or {}) for p in model.parameters())


# -- statistics ---------------------------------------------------------------------------
def activation_stats(x: torch.Tensor, cls: str, path: str = "numpy") -> np.ndarray:
    """One output through a collector fast path: ``numpy`` (CPU float) or ``torch`` (the
    device path, run on the CPU)."""
    axis = output_key(x, cls)[3]
    sample = sample_outputs([x], axis) if path == "numpy" else _sample_torch([x], axis)[0]
    return group_rows([sample], [cls])[0]


@pytest.mark.parametrize("path", ["numpy", "torch", "reference"])
def test_activation_stats_match_numpy(path):
    x = torch.zeros(3, 2, 2)  # (batch, sequence, features): feature 1 is always 0
    x[:, :, 0] = torch.tensor([[-1.0, 2.0], [6.0, -7.0], [0.0, 3.0]])
    got = (reference_stats(x.numpy(), "Linear") if path == "reference"
           else activation_stats(x, "Linear", path))
    s = dict(zip(ACTIVATION_STATS, got.tolist()))
    a = x.numpy().ravel()
    assert s["mean"] == pytest.approx(a.mean())
    assert s["std"] == pytest.approx(a.std(ddof=1), rel=1e-5)
    assert s["zero"] == pytest.approx((a == 0).mean())
    assert s["dead"] == pytest.approx(0.5)  # 3-d, not conv: units are the last dim
    assert s["saturated"] == pytest.approx((np.abs(a) > 5).mean())
    assert s["nonfinite"] == 0 and s["absmax"] == 7.0 and s["numel"] == 12


@pytest.mark.parametrize("cls", ["ReLU", "Tanh", "Sigmoid", "Linear"])
def test_numpy_and_torch_paths_agree_with_the_reference(cls):
    torch.manual_seed(0)
    x = torch.randn(16, 8, 5, 5) * 4
    x[:, 2] = 0.0
    x[3, 1, 0, 0] = float("nan")
    want = reference_stats(x.numpy(), cls)
    for path in ("numpy", "torch"):
        np.testing.assert_allclose(activation_stats(x, cls, path), want, rtol=1e-5, atol=1e-6,
                                   equal_nan=True)


def test_unit_maxima_match_a_direct_reduction():
    torch.manual_seed(0)
    for shape in [(64, 16, 8, 8), (64, 32, 4, 4), (5, 3, 2), (4, 6), (2, 3, 4, 5, 6)]:
        x = torch.randn(shape)
        x[0, 0].view(-1)[0] = float("nan") if len(shape) == 5 else x[0, 0].view(-1)[0]
        for cls in ("Conv2d", "Linear"):
            dim = 2 if x.dim() == 3 and cls == "Linear" else 1
            direct = x.abs().amax(dim=[d for d in range(x.dim()) if d != dim])
            for got in (sample_outputs([x], dim).unit_max[0], _sample_torch([x], dim)[0].unit_max[0]):
                got = torch.as_tensor(got)
                assert torch.equal(got, direct) or (
                    torch.equal(got[1:], direct[1:]) and got[0].isnan() and direct[0].isnan())
    x = torch.randn(8, 4, 3, 3).to(memory_format=torch.channels_last)
    assert torch.equal(torch.as_tensor(sample_outputs([x], 1).unit_max[0]),
                       x.abs().amax(dim=(0, 2, 3)))
    x = -torch.rand(6, 3, 2, 2) - 1  # all negative: |min| is the answer
    x[2, 1, 0, 1] = -float("inf")
    x[:, 2] = -0.0
    for got in (sample_outputs([x], 1).unit_max[0], _sample_torch([x], 1)[0].unit_max[0]):
        got = torch.as_tensor(got)
        assert torch.equal(got, x.abs().amax(dim=(0, 2, 3))) and not got.signbit().any()
    assert activation_stats(torch.tensor([-3.0, 2.0]), "Linear")[
        ACTIVATION_STATS.index("absmax")] == 3.0


def test_activation_stats_dead_channels_and_nonfinite():
    x = torch.ones(4, 3, 2, 2)
    x[:, 1] = 0.0
    x[0, 2, 0, 0] = float("nan")
    for got in (activation_stats(x, "ReLU"), activation_stats(x, "ReLU", "torch"),
                reference_stats(x.numpy(), "ReLU")):
        s = dict(zip(ACTIVATION_STATS, got.tolist()))
        assert s["dead"] == pytest.approx(1 / 3)
        assert s["nonfinite"] == 1


def test_activation_stats_bounded_activations_use_their_own_saturation():
    x = torch.tensor([0.995, 0.5, -0.999, 0.0])
    for got in (activation_stats(x, "Tanh"), activation_stats(x, "Tanh", "torch"),
                reference_stats(x.numpy(), "Tanh")):
        assert dict(zip(ACTIVATION_STATS, got.tolist()))["saturated"] == pytest.approx(0.5)


def test_grad_norms_fused():
    got = [n.item() for n in norms([torch.ones(4), torch.full((2,), 3.0)])]
    assert got == pytest.approx([2.0, np.sqrt(18)])


# -- sampling -----------------------------------------------------------------------------
def test_every_samples_training_steps_only():
    model = mlp()
    with vd.watch(model, every=3) as session:
        train_steps(model, 7, session)
        model.eval()
        with torch.no_grad():
            model(torch.randn(2, 6))  # evaluation: not a training step
        model.train()
        rec = session.records()
    assert rec.act_steps.tolist() == [0, 3, 6]
    assert rec.grad_steps.tolist() == [0, 3, 6]
    assert rec.module_paths == ["0", "1", "2"]
    assert session.hooks.steps == 7


def test_grad_norms_weight_norms_and_update_ratio_are_right():
    model = mlp()
    session = vd.watch(model, every=1)
    x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    nn.functional.cross_entropy(model(x), y).backward()
    grads = [p.grad.norm().item() for p in model.parameters()]
    weights = [p.detach().norm().item() for p in model.parameters()]
    opt.step()
    opt.zero_grad()
    model(x)  # the next step seals the previous one (after the optimizer moved)
    rec = session.records()
    session.close()
    g = rec.grads[0]
    assert g[:, 0] == pytest.approx(grads, rel=1e-5)
    assert g[:, 1] == pytest.approx(weights, rel=1e-5)
    assert g[:, 2] == pytest.approx([0.5 * a / b for a, b in zip(grads, weights)], rel=1e-4)


def test_weight_statistics_follow_a_replaced_or_moved_parameter():
    """The weights are read through cached numpy views: a parameter whose storage is
    replaced (``.data =``, a dtype change) is read afresh, never from the old storage."""
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model, every=1)
    x, y = torch.randn(8, 6), torch.randint(0, 3, (8,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        weights = [p.detach().norm().item() for p in model.parameters()]
        opt.step()
        return weights

    step()
    with torch.no_grad():
        model[0].weight.data = model[0].weight.data * 3.0  # new storage, same shape
    want = step()
    model.double()  # every parameter gets new float64 storage
    x = x.double()
    want64 = step()
    rec = session.records()
    session.close()
    assert rec.grads[1][:, 1] == pytest.approx(want, rel=1e-5)
    assert rec.grads[2][:, 1] == pytest.approx(want64, rel=1e-9)
    assert np.isfinite(rec.grads[1:, :, 2]).all()


def test_outputs_unchanged_and_training_bitwise_identical():
    plain, watched = mlp(3), mlp(3)
    x = torch.randn(5, 6)
    session = vd.watch(watched, every=1)
    assert torch.equal(plain(x), watched(x))
    train_steps(plain, 25)
    train_steps(watched, 25, session)
    session.close()
    for a, b in zip(plain.parameters(), watched.parameters()):
        assert torch.equal(a, b)


# -- lifetime -----------------------------------------------------------------------------
def test_close_removes_every_hook_and_is_idempotent():
    model = mlp()
    before = hook_count(model)
    session = vd.watch(model, every=1)
    assert hook_count(model) > before
    session.close()
    session.close()
    assert hook_count(model) == before


def test_rewatch_replaces_hooks_instead_of_stacking():
    model = mlp()
    first = vd.watch(model)
    once = hook_count(model)
    second = vd.watch(model)
    assert hook_count(model) == once
    assert first.closed and not second.closed
    second.close()


def test_nothing_keeps_the_model_or_graph_alive():
    model = mlp()
    session = vd.watch(model, every=1)
    train_steps(model, 3, session)
    out = model(torch.randn(4, 6))
    out_ref, model_ref = weakref.ref(out), weakref.ref(model)
    del out, model
    gc.collect()
    assert out_ref() is None and model_ref() is None
    session.records()  # still readable after the model is gone
    session.close()


# -- robustness ---------------------------------------------------------------------------
def test_collector_error_becomes_a_finding_and_training_goes_on(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(outputs_module, "sample_outputs", broken)
    model = mlp()
    with vd.watch(model, every=1) as session:
        train_steps(model, 4, session)
    found = session.findings()
    assert "collector-error" in found.codes
    err = [f for f in found if f.code == "collector-error"][0]
    assert "boom" in err.message and err.severity == "warning"


@pytest.mark.parametrize("bad", [None, "model", 3, [nn.Linear(2, 2)]])
def test_watch_rejects_non_modules(bad):
    with pytest.raises(VizdebugTypeError, match="torch.nn.Module"):
        vd.watch(bad)


@pytest.mark.parametrize("every", [0, -1, 1.5, "10", True])
def test_watch_rejects_bad_every(every):
    with pytest.raises(VizdebugError, match="every"):
        vd.watch(mlp(), every=every)


def test_watch_rejects_bad_on_anomaly():
    with pytest.raises(VizdebugError, match="'warn', 'raise', 'pdb', 'ignore'; got 'loud'"):
        vd.watch(mlp(), on_anomaly="loud")


# -- anomalies ----------------------------------------------------------------------------
def nan_input() -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randn(16, 4)


def test_raise_names_module_path_class_step_and_statistics():
    model = Net()
    with torch.no_grad():
        model.encoder[2][0].bias.fill_(-10.0)  # Log receives negative values: NaN
    session = vd.watch(model, on_anomaly="raise")
    with pytest.raises(WatchAnomaly) as info:
        model(nan_input())
    err = info.value
    assert err.module_path == "encoder.2.1" and err.module_class == "Log" and err.step == 0
    msg = str(err)
    assert "'encoder.2.1' (Log)" in msg and "step 0" in msg
    assert "non-finite of" in msg and "Input: shape (16, 8)" in msg
    assert isinstance(err, vd.AnomalyError)
    session.close()


def test_warn_gives_one_warning_and_a_finding_where_it_started():
    model = Net()
    with torch.no_grad():
        model.encoder[2][0].bias.fill_(-10.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with vd.watch(model, every=1, on_anomaly="warn") as session:
            for _ in range(4):
                session.log(loss=model(nan_input()).sum())
        found = session.findings()
    ours = [w for w in caught if issubclass(w.category, AnomalyWarning)]
    assert len(ours) == 1
    f = [f for f in found if f.code == "nonfinite-activation"][0]
    assert f.where == "encoder.2.1" and f.severity == "error"
    assert "nonfinite-loss" in found.codes


def test_ignore_records_without_warning():
    model = Net()
    with torch.no_grad():
        model.encoder[2][0].bias.fill_(-10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with vd.watch(model, every=1, on_anomaly="ignore") as session:
            model(nan_input())
            model(nan_input())
    assert "nonfinite-activation" in session.findings().codes


def test_pdb_opens_the_debugger_in_the_hook_frame_then_raises():
    model = Net()
    with torch.no_grad():
        model.encoder[2][0].bias.fill_(-10.0)
    session = vd.watch(model, on_anomaly="pdb")
    seen = {}

    def debugger(frame):
        seen.update(module=type(frame.f_locals["module"]).__name__,
                    has_output="output" in frame.f_locals)

    session.policy.debugger = debugger
    with pytest.raises(WatchAnomaly):
        model(nan_input())
    assert seen == {"module": "Log", "has_output": True}
    session.close()


def test_none_input_is_named_with_the_module_that_returned_none():
    from tests.digits_runs import NoneModel

    model = NoneModel()
    session = vd.watch(model, on_anomaly="raise")
    with pytest.raises(WatchAnomaly, match="'flat' \\(Flatten\\) received None") as info:
        model(torch.randn(2, 1, 8, 8))
    assert "'block' returned None" in str(info.value)
    session.close()

    session = vd.watch(model, on_anomaly="ignore")
    with pytest.raises(Exception):  # noqa: B017 - torch's own error for a None input
        model(torch.randn(2, 1, 8, 8))
    found = session.findings()
    f = [f for f in found if f.code == "input-none"][0]
    assert f.where == "flat" and "'block'" in f.hint
    session.close()


class Flaky(nn.Module):
    """Returns None when ``broken`` is set: a forward() that lost its return on one path."""

    broken = False

    def forward(self, x: torch.Tensor) -> torch.Tensor | None:
        if self.broken:
            return None
        return x


def test_layer_hooks_are_attached_only_for_sampled_steps():
    model = mlp()
    base = hook_count(model)
    session = vd.watch(model, every=3)
    model(torch.randn(2, 6))  # step 0: sampled
    sampled = hook_count(model)
    model(torch.randn(2, 6))  # step 1: only the step counter remains
    assert hook_count(model) == base + 2 < sampled
    session.close()
    assert hook_count(model) == base


def sgd_step(model: nn.Module, opt: torch.optim.Optimizer) -> None:
    opt.zero_grad()
    model(torch.randn(4, 6)).pow(2).mean().backward()
    opt.step()


def test_with_an_optimizer_no_hook_runs_between_samples():
    """Once the model's optimizer has stepped, it counts the steps: the model carries no
    hook at all between samples, and samples land on the same steps as before."""
    model = mlp()
    base = hook_count(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    session = vd.watch(model, every=4)
    sgd_step(model, opt)  # step 0: sampled, counted by the root hook
    assert session.hooks.clock.optimizer is not None  # the optimizer counts from now on
    seen = []
    for _ in range(9):  # steps 1..9
        seen.append(hook_count(model) - base)
        sgd_step(model, opt)
    # hooks are attached at the optimizer step before a sampled step (4, 8)
    assert [n > 0 for n in seen] == [False, False, False, True, False, False, False, True,
                                     False]
    model.eval()
    with torch.no_grad():
        model(torch.randn(2, 6))  # evaluation: not counted
    assert session.records().act_steps.tolist() == [0, 4, 8]
    assert session.hooks.steps == 10
    session.close()
    assert hook_count(model) == base


def test_only_the_model_s_optimizer_counts_and_a_new_one_takes_over():
    model, other = mlp(), nn.Linear(3, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    opt_other = torch.optim.SGD(other.parameters(), lr=0.01)
    session = vd.watch(model, every=5)
    for _ in range(3):
        sgd_step(model, opt)
        opt_other.step()  # does not update the model: ignored
    assert session.hooks.steps == 3
    head = torch.optim.SGD(model[2].parameters(), lr=0.01)  # a second owner, same steps
    for _ in range(2):
        sgd_step(model, opt)
        head.step()
    assert session.hooks.steps == 5
    del opt, head
    opt2 = torch.optim.SGD(model.parameters(), lr=0.01)  # a re-created optimizer
    for _ in range(5):
        sgd_step(model, opt2)
    assert session.hooks.steps == 10
    assert session.records().act_steps.tolist() == [0, 5]
    session.close()


def test_a_crash_on_none_under_the_optimizer_clock_is_named_afterwards(monkeypatch):
    """No hook runs between samples: the crash is named from the exception the notebook
    (or the interpreter) keeps in sys.last_value."""
    flaky = Flaky()
    model = nn.Sequential(nn.Linear(4, 4), flaky, nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    session = vd.watch(model, every=50, on_anomaly="ignore")
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        opt.step()
    flaky.broken = True
    try:
        model(torch.randn(2, 4))  # step 3: not sampled, no hook on the model
    except TypeError as exc:
        monkeypatch.setattr("sys.last_value", exc, raising=False)
        monkeypatch.delattr("sys.last_exc", raising=False)
    f = [f for f in session.findings() if f.code == "input-none"][0]
    assert f.where == "2" and "step 3" in f.message and "'1' returned None" in f.message
    assert len([f for f in session.findings() if f.code == "input-none"]) == 1
    session.close()


def test_paused_takes_every_hook_off_and_the_steps_are_not_counted():
    model = mlp()
    base = hook_count(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [torch.randn(4, 6) for _ in range(6)]
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(12, 6)),
                                         batch_size=4)
    for every in (1, 2):
        session = vd.watch(model, every=every, loader=loader)
        sgd_step(model, opt)
        with session.paused():
            assert hook_count(model) == base
            for _ in range(3):
                sgd_step(model, opt)
            for _ in loader:
                pass
        for _ in loader:
            pass
        for _ in range(3):
            sgd_step(model, opt)
        rec = session.records()
        assert session.hooks.steps == 4 and rec.loader.batches == 3
        assert rec.act_steps.tolist() == ([0, 1, 2, 3] if every == 1 else [0, 2])
        session.close()
        assert hook_count(model) == base
        with session.paused():  # closed: nothing to pause, nothing comes back
            assert hook_count(model) == base
        assert hook_count(model) == base
    del data


def test_a_crash_on_none_between_samples_is_still_named():
    flaky = Flaky()
    model = nn.Sequential(nn.Linear(4, 4), flaky, nn.Linear(4, 2))
    session = vd.watch(model, every=50, on_anomaly="ignore")
    model(torch.randn(2, 4))  # step 0, sampled, fine
    flaky.broken = True
    with pytest.raises(TypeError):  # torch's own error propagates unchanged
        model(torch.randn(2, 4))  # step 1: not sampled, no layer hooks attached
    f = [f for f in session.findings() if f.code == "input-none"][0]
    assert f.where == "2" and "step 1" in f.message and "'1' returned None" in f.message
    session.close()


def test_the_torch_internals_the_hooks_rely_on():
    """Each reach into torch's private API, checked against the pinned torch: the name and
    locals of the module-call frame (crash naming), the version counter shared by views (an
    output changed in place), the end-of-backward callback queue and the fused norms."""
    import inspect

    from vizdebug.collect.checks import crash
    from vizdebug.collect.hooks import fused

    assert nn.Module._call_impl.__name__ == crash._MODULE_CALL
    assert list(inspect.signature(nn.Module._call_impl).parameters)[:2] == ["self", "args"]
    x = torch.randn(4, 3)
    view, version = x[:, 0], x._version
    view.add_(1.0)
    assert x._version == view._version > version
    ran = []
    y = torch.randn(3, requires_grad=True)
    y.register_hook(lambda g: fused.at_end_of_backward(lambda: ran.append(y.grad is not None)))
    y.sum().backward()
    assert ran == [True]  # queued, and run once the gradients were accumulated
    assert len(torch._foreach_norm([torch.ones(2), torch.ones(3)], 2, dtype=torch.float32)) == 2


def test_the_loss_checks_stop_before_the_model_s_optimizer_steps():
    """The loss checks' torch function mode sees the loss and backward of a sampled step,
    not the optimizer's own torch calls (from the first step on: before any optimizer
    counts, one that holds the model's parameters); another optimizer stepping in between
    (a GAN's other half) leaves it on."""
    depths = []

    class Recording(torch.optim.SGD):
        def step(self, closure=None):
            depths.append(torch._C._len_torch_function_stack())
            return super().step(closure)

    model = mlp()
    other = Recording(nn.Linear(2, 2).parameters(), lr=0.1)
    opt = Recording(model.parameters(), lr=0.1)
    session = vd.watch(model, every=1)
    for _ in range(4):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(torch.randn(8, 6)), torch.randint(0, 3, (8,)))
        other.step()
        loss.backward()
        opt.step()
    session.close()
    # the other one sees the mode, ours never (step 0 included: it holds the parameters)
    assert depths[0::2] == [1, 1, 1, 1] and depths[1::2] == [0, 0, 0, 0]
    assert session.hooks.losses.calls == 4
