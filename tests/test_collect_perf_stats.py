"""The cheaper collector paths (CPU samples, batched reads) against direct computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

import vizdebug as vd
from vizdebug.collect import hooks as hooks_module
from vizdebug.collect.stats import (
    ACTIVATION_FIELDS,
    SUBSAMPLE,
    activation_sample,
    activation_sample_cpu,
    cpu_activation_rows,
)


def direct_row(x: torch.Tensor, cls: str) -> np.ndarray:
    """The ACTIVATION_FIELDS of ``x`` written out plainly (float64, no batching)."""
    a = x.detach().double().numpy()
    flat = a.reshape(-1)
    v = flat[:: max(1, flat.size // SUBSAMPLE)][:SUBSAMPLE]
    v = v[~np.isnan(v)]
    dim = 2 if a.ndim == 3 and not cls.startswith("Conv") else 1
    unit_max = np.abs(a).max(axis=tuple(d for d in range(a.ndim) if d != dim))
    if cls in ("Sigmoid", "Softmax", "Hardsigmoid"):
        sat = np.mean((v < 0.01) | (v > 0.99))
    else:
        sat = np.mean(np.abs(v) > {"Tanh": 0.99}.get(cls, 5.0))
    absmax = unit_max.max()
    with np.errstate(invalid="ignore"):  # inf in the sample: the reference std is NaN too
        return np.array([v.mean(), v.std(ddof=1), np.mean(v == 0), np.mean(unit_max <= 1e-8),
                         sat, float(not math.isfinite(absmax)), absmax, a.size])


def outputs() -> list[tuple[torch.Tensor, str]]:
    gen = torch.Generator().manual_seed(0)
    conv = torch.randn(16, 8, 5, 5, generator=gen) * 4
    conv[:, 2] = 0.0  # a dead channel
    with_nan = conv.clone()
    with_nan[3, 1, 0, 0] = float("nan")
    neg = -torch.rand(6, 3, 2, 2, generator=gen) - 1
    neg[2, 1, 0, 1] = -float("inf")
    neg[:, 2] = -0.0
    seq = torch.randn(4, 7, 5, generator=gen)
    seq[:, :, 1] = 0.0
    return [
        (conv, "Conv2d"), (conv.relu(), "ReLU"), (with_nan, "Conv2d"), (neg, "Conv2d"),
        (torch.randn(64, 10, generator=gen), "Linear"), (torch.rand(64, 32, generator=gen), "Sigmoid"),
        (torch.tanh(3 * torch.randn(64, 32, 8, 8, generator=gen)), "Tanh"),
        (seq, "Linear"), (seq, "Conv1d"), (conv.double(), "Conv2d"), (torch.randn(2, 1), "Linear"),
    ]


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_cpu_rows_match_direct_computation_one_by_one_and_batched():
    cases = outputs()
    samples = [activation_sample_cpu(x, cls) for x, cls in cases]
    assert all(s is not None for s in samples)
    classes = [c for _, c in cases]
    batched = cpu_activation_rows(samples + samples[::-1], classes + classes[::-1])
    for i, (x, cls) in enumerate(cases):
        want = direct_row(x, cls)
        for got in (cpu_activation_rows([samples[i]], [cls])[0], batched[i],
                    batched[2 * len(cases) - 1 - i]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
            assert not np.signbit(got[ACTIVATION_FIELDS.index("absmax")])


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_cpu_rows_match_the_torch_reduction_of_the_same_output():
    from vizdebug.collect.stats import batch_activation_stats

    for x, cls in outputs():
        in_torch = batch_activation_stats([activation_sample(x, cls)], [cls])[0].double().numpy()
        got = cpu_activation_rows([activation_sample_cpu(x, cls)], [cls])[0]
        np.testing.assert_allclose(got, in_torch, rtol=1e-5, atol=1e-6, equal_nan=True)


def test_nonnegative_shortcut_is_exact_for_relu_outputs():
    x = torch.randn(32, 4, 3, 3).relu()
    x[:, 1] = 0.0
    x[5, 2, 0, 0] = float("nan")
    full = cpu_activation_rows([activation_sample_cpu(x, "ReLU")], ["ReLU"])
    short = cpu_activation_rows([activation_sample_cpu(x, "ReLU", nonnegative=True)], ["ReLU"])
    np.testing.assert_array_equal(short, full)


def test_cpu_sample_declines_what_it_cannot_take():
    assert activation_sample_cpu(torch.randn(4, 3).half(), "Linear") is None
    assert activation_sample_cpu(torch.randn(3, 4).t(), "Linear") is None  # not contiguous
    assert activation_sample_cpu(torch.randn(5), "Linear") is None  # no batch dimension
    assert activation_sample_cpu(torch.randn(1, 5), "Linear") is None  # batch of one


class Shift(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def test_hooked_rows_match_direct_computation_over_many_steps():
    """Every=1 on the CPU: samples read in batches of steps; each row is still exact, also
    for a ReLU whose output a user hook shifts below zero (the shortcut must step aside)."""
    torch.manual_seed(0)
    # ReLUs: of a sampled input (max taken from it), of a ReLU, shifted by a user hook,
    # in place (its input changed: the max is taken again)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.ReLU(), nn.ReLU(),
                          nn.Flatten(), nn.Linear(4 * 36, 3), nn.ReLU(inplace=True), nn.Tanh())
    model[3].register_forward_hook(lambda m, i, o: o - 1.0)
    seen: dict[int, list[torch.Tensor]] = {}
    step = [0]
    for idx, module in enumerate(model):
        module.register_forward_hook(
            lambda m, i, o, idx=idx: seen.setdefault(step[0], []).append((idx, o.detach().clone())))
    session = vd.watch(model, every=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    steps = hooks_module.READ_AFTER * 2 + 3
    for step[0] in range(steps):
        opt.zero_grad()
        x = torch.randn(8, 1, 6, 6)
        x[0, 0, 0, 0] = float("nan") if step[0] == 5 else x[0, 0, 0, 0]  # NaN through ReLUs
        model(x).pow(2).mean().backward()
        for p in model.parameters():
            p.grad = torch.nan_to_num(p.grad)
        opt.step()
    rec = session.records()
    session.close()
    assert rec.act_steps.tolist() == list(range(steps))
    classes = [type(m).__name__ for m in model]
    for s in range(steps):
        for idx, out in seen[s]:
            if classes[idx] == "Flatten":
                assert np.isnan(rec.activations[s, idx, 0])
                continue
            np.testing.assert_allclose(rec.activations[s, idx, :len(ACTIVATION_FIELDS)],
                                       direct_row(out, classes[idx]), rtol=1e-5, atol=1e-6,
                                       equal_nan=True)
    assert rec.activations[0, 3, ACTIVATION_FIELDS.index("absmax")] >= 1.0  # shifted below 0


def test_update_ratio_over_many_steps_matches_direct_computation():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    session = vd.watch(model, every=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.3, momentum=0.9)
    want = []
    for _ in range(hooks_module.READ_AFTER + 5):
        opt.zero_grad()
        nn.functional.cross_entropy(model(torch.randn(8, 6)), torch.randint(0, 3, (8,))).backward()
        before = [p.detach().clone() for p in model.parameters()]
        grads = [p.grad.norm().item() for p in model.parameters()]
        opt.step()
        want.append([[g, b.norm().item(), (p.detach() - b).norm().item() / b.norm().item()]
                     for g, b, p in zip(grads, before, model.parameters())])
    model(torch.randn(8, 6))  # seals the last step (after its optimizer step)
    rec = session.records()
    session.close()
    np.testing.assert_allclose(rec.grads[: len(want)], np.array(want), rtol=1e-4)


def test_samples_are_read_in_batches_and_flush_reads_everything():
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    session = vd.watch(model, every=1)
    for _ in range(hooks_module.READ_AFTER + 2):
        model(torch.randn(8, 6)).sum().backward()
    read = session.hooks.activations.steps().size
    assert 0 < read < hooks_module.READ_AFTER + 2
    assert session.records(flush=False).act_steps.size == read + 1  # the sealed ones
    assert session.records().act_steps.size == hooks_module.READ_AFTER + 2
    session.close()


@pytest.mark.parametrize("mode", ["warn", "ignore"])
def test_none_input_that_does_not_crash_is_named_without_a_pre_hook(mode):
    class TakesNone(nn.Module):
        def forward(self, x, extra=None):
            return x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 3), TakesNone()

        def forward(self, x):
            return self.b(self.a(x), None)

    model = Net()
    session = vd.watch(model, every=1, on_anomaly=mode)
    assert not any(m._forward_pre_hooks for m in model.children())
    with pytest.warns(vd.collect.anomaly.AnomalyWarning) if mode == "warn" else _nothing():
        model(torch.randn(2, 3))
    events = [e for e in session.policy.events if e.kind == "input-none"]
    assert [(e.module_path, e.detail["position"]) for e in events] == [("b", 1)]
    session.close()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_gradient_norms_of_weights_numpy_cannot_take_use_torch_and_stay_right():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3)).to(torch.bfloat16)
    session = vd.watch(model, every=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    want = []
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(8, 6, dtype=torch.bfloat16)).float().pow(2).mean().backward()
        before = [p.detach().float().clone() for p in model.parameters()]
        grads = [p.grad.float().norm().item() for p in model.parameters()]
        opt.step()
        want.append([[g, b.norm().item(), (p.detach().float() - b).norm().item() / b.norm().item()]
                     for g, b, p in zip(grads, before, model.parameters())])
    model(torch.randn(8, 6, dtype=torch.bfloat16))
    rec = session.records()
    session.close()
    np.testing.assert_allclose(rec.grads[:3], np.array(want), rtol=1e-3)
    assert not any("collector" in w for w, _, _ in rec.errors)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 3)
        self.b = nn.Linear(4, 3).to(torch.bfloat16)

    def forward(self, x):
        return self.a(x), self.b(x.bfloat16())


def test_numpy_and_torch_gradient_paths_mix_in_one_step():
    """Two backward passes in one step: float32 weights (numpy), then bfloat16 (torch)."""
    torch.manual_seed(0)
    model = TwoHeads()
    session = vd.watch(model, every=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    out_a, out_b = model(torch.randn(5, 4))
    out_a.pow(2).sum().backward()
    out_b.float().pow(2).sum().backward()
    before = [p.detach().float().clone() for p in model.parameters()]
    grads = [p.grad.float().norm().item() for p in model.parameters()]
    opt.step()
    model(torch.randn(5, 4))
    rec = session.records()
    session.close()
    want = [[g, b.norm().item(), (p.detach().float() - b).norm().item() / b.norm().item()]
            for g, b, p in zip(grads, before, model.parameters())]
    np.testing.assert_allclose(rec.grads[0], np.array(want), rtol=1e-3)
    assert not rec.errors


def test_deferred_batch_summaries_are_exact_in_order_and_see_the_batch_as_yielded():
    from vizdebug.collect.loader import BATCH_FIELDS, DEFER_BATCHES, LoaderTap

    gen = torch.Generator().manual_seed(0)
    batches = [torch.randn(4, 3, generator=gen) * (i + 1) for i in range(DEFER_BATCHES + 3)]
    batches[2][1, 1] = float("nan")
    batches[4] = torch.arange(12).reshape(4, 3)  # summarised at once: the order must hold
    batches[5] = torch.randn(2, 5, dtype=torch.float64, generator=gen)  # another size
    want = []
    for b in batches:
        a = b.double().numpy().ravel()
        f = a[np.isfinite(a)]
        want.append([f.min(), f.max(), f.mean(), f.std(), a.size - f.size, a.size])
    tap = LoaderTap(every=1)
    for batch in tap.wrap(iter(batches)):
        if batch.is_floating_point():
            batch.mul_(0)  # the loop changes the batch in place after it was yielded
    tap.timing()
    assert tap.stats.steps().tolist() == list(range(len(batches)))
    np.testing.assert_allclose(tap.stats.stacked(len(BATCH_FIELDS)), np.array(want), rtol=1e-9)


def test_large_outputs_are_reduced_to_units_in_the_hook_and_stay_exact(monkeypatch):
    from vizdebug.collect import stats

    monkeypatch.setattr(stats, "KEEP_MAXIMA", 8)
    for x, cls in outputs():
        sample = activation_sample_cpu(x, cls)
        assert sample.reduced == (x[0].numel() > 8)
        np.testing.assert_allclose(cpu_activation_rows([sample], [cls])[0], direct_row(x, cls),
                                   rtol=1e-5, atol=1e-6, equal_nan=True)
    relu = torch.randn(16, 8, 5, 5).relu()
    for hi in (None, relu.amax(0).numpy()):
        sample = activation_sample_cpu(relu, "ReLU", nonnegative=True, hi=hi)
        np.testing.assert_allclose(cpu_activation_rows([sample], ["ReLU"])[0],
                                   direct_row(relu, "ReLU"), rtol=1e-6)


def test_a_relu_after_a_large_output_takes_its_own_max(monkeypatch):
    from vizdebug.collect import stats

    monkeypatch.setattr(stats, "KEEP_MAXIMA", 8)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU())
    session = vd.watch(model, every=1)
    x = torch.randn(16, 4)
    out = model(x)
    rec = session.records()
    session.close()
    np.testing.assert_allclose(rec.activations[0, 1, :len(ACTIVATION_FIELDS)],
                               direct_row(out, "ReLU"), rtol=1e-6)
