"""The collectors' fast paths (grouped samples, batched reads) against the reference."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import vizdebug as vd
from vizdebug.analysis.training.activations import activation_stats
from vizdebug.collect.hooks import engine as hooks_module
from vizdebug.collect.hooks import rows, stats
from vizdebug.collect.hooks.rows import group_rows
from vizdebug.collect.hooks.stats import numpy_ready, output_key, sample_outputs
from vizdebug.records import ACTIVATION_STATS


def direct_row(x: torch.Tensor, cls: str) -> np.ndarray:
    """The reference row of ``x`` (the definition, in :mod:`vizdebug.analysis.training.activations`)."""
    x = x.detach()
    return activation_stats((x.float() if x.dtype in (torch.half, torch.bfloat16) else x).numpy(),
                            cls)


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
        (torch.randn(5, generator=gen), "Linear"), (torch.zeros(0, 3), "Linear"),
        (conv.half(), "Conv2d"), (torch.arange(12).reshape(4, 3), "Linear"),
        (conv.to(memory_format=torch.channels_last), "Conv2d"), (torch.randn(3, 4).t(), "Linear"),
    ]


def sample(tensors: list[torch.Tensor], cls: str, path: str) -> stats.GroupSample:
    axis = output_key(tensors[0], cls)[3]
    if path == "torch":  # the device path, run on the CPU
        return stats._sample_torch([t.detach() for t in tensors], axis)[0]
    return sample_outputs(tensors, axis)


@pytest.mark.parametrize("path", ["numpy", "torch"])
def test_fast_rows_match_the_reference_one_by_one_and_grouped(path):
    cases = outputs()
    single = [sample([x], cls, path) for x, cls in cases]
    grouped = [sample([x, x.clone(), x], cls, path) for x, cls in cases]
    classes = [c for _, c in cases]
    rows = group_rows(single + grouped[::-1], classes + [c for c in classes[::-1] for _ in "abc"])
    for i, (x, cls) in enumerate(cases):
        want = direct_row(x, cls)
        j = len(cases) + 3 * (len(cases) - 1 - i)
        for got in (group_rows([single[i]], [cls])[0], rows[i], rows[j], rows[j + 1], rows[j + 2]):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
            assert not np.signbit(got[ACTIVATION_STATS.index("absmax")])


def test_random_outputs_match_the_reference_on_both_paths():
    gen = torch.Generator().manual_seed(1)
    for trial in range(40):
        ndim = 1 + trial % 4
        shape = tuple(int(n) for n in torch.randint(1, 7, (ndim,), generator=gen))
        x = torch.randn(shape, generator=gen) * float(torch.rand(1, generator=gen) * 8)
        x[x.abs() < 0.3] = 0.0
        cls = ["Linear", "ReLU", "Tanh", "Sigmoid", "Conv2d"][trial % 5]
        for path in ("numpy", "torch"):
            got = group_rows([sample([x, x * 2], cls, path)], [cls, cls])
            np.testing.assert_allclose(got[0], direct_row(x, cls), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got[1], direct_row(x * 2, cls), rtol=1e-5, atol=1e-6)


def test_numpy_path_takes_only_what_numpy_reads_without_a_copy():
    assert numpy_ready(torch.randn(4, 3)) and numpy_ready(torch.randn(4, 3).double())
    assert not numpy_ready(torch.randn(4, 3).half())
    assert not numpy_ready(torch.randn(4, 3).to_sparse())
    assert numpy_ready(torch.randn(3, 4).t())  # a permuted layout: reduced in memory order
    assert isinstance(sample([torch.randn(3, 4).t()], "Linear", "numpy").values, np.ndarray)
    assert isinstance(sample([torch.randn(3, 4).half()], "Linear", "numpy").values, torch.Tensor)


def test_a_transposed_or_channels_last_output_is_reduced_where_it_lies(monkeypatch):
    """Not copied into C order first: reduced along its memory (the fast path exists for
    MultiheadAttention's batch-first output and channels-last convolutions)."""
    reduced = []
    real = stats._unit_reduce
    monkeypatch.setattr(stats, "_unit_reduce", lambda *a: reduced.append(a[1]) or real(*a))
    attention = torch.randn(32, 8, 16).transpose(0, 1)  # (batch, tokens, features)
    conv = torch.randn(4, 3, 5, 5).to(memory_format=torch.channels_last)
    for x, cls in ((attention, "Dropout"), (conv, "Conv2d")):
        reduced.clear()
        got = group_rows([sample_outputs([x], output_key(x, cls)[3])], [cls])[0]
        assert len(reduced) == 2  # the max and the min, on the array as it lies
        np.testing.assert_allclose(got, direct_row(x, cls), rtol=1e-5, atol=1e-6)


def test_permuted_sliced_and_broadcast_layouts_match_the_reference_and_the_torch_path():
    """MultiheadAttention's batch-first output is a transposed view and a channels-last
    convolution's output is permuted: numpy reduces them in the order of their memory;
    slices and broadcast views are copied first. NaN, inf and -0.0 included."""
    gen = torch.Generator().manual_seed(3)
    for trial in range(120):
        ndim = 2 + trial % 3
        shape = [int(n) for n in torch.randint(1, 7, (ndim,), generator=gen)]
        perm = torch.randperm(ndim, generator=gen).tolist()
        base = torch.randn([shape[p] for p in perm], generator=gen) * 3
        base[base.abs() < 0.2] = -0.0 if trial % 2 else 0.0
        base.view(-1)[0] = float("nan") if trial % 7 == 0 else base.view(-1)[0]
        base.view(-1)[-1] = -float("inf") if trial % 11 == 0 else base.view(-1)[-1]
        x = base.permute(*np.argsort(perm).tolist())
        if trial % 3 == 0:
            x = x[:, : max(1, x.shape[1] - 1)]
        if trial % 13 == 0:
            x = x[:, :1].expand(-1, 4, *x.shape[2:])
        for cls in ("Linear", "Conv2d", "ReLU", "Tanh", "Sigmoid"):
            axis = output_key(x, cls)[3]
            fast = group_rows([sample_outputs([x], axis)], [cls])[0]
            on_torch = group_rows([stats._sample_torch([x], axis)[0]], [cls])[0]
            for got in (fast, on_torch):
                np.testing.assert_allclose(got, direct_row(x, cls), rtol=1e-5, atol=1e-6,
                                           equal_nan=True)


class Shift(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


def _train_with_a_nan(model: nn.Module, steps: int, nan_at: int, gen: torch.Generator | None = None,
                      step: list[int] | None = None) -> None:
    """SGD steps on batches of 8 random 6x6 images, one NaN pixel at step ``nan_at`` (it
    runs through the ReLUs), the gradients cleaned so that training goes on; ``step[0]``
    says which step runs (for hooks that record per step)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(steps):
        if step is not None:
            step[0] = i
        opt.zero_grad()
        x = torch.randn(8, 1, 6, 6, generator=gen)
        x[0, 0, 0, 0] = float("nan") if i == nan_at else x[0, 0, 0, 0]
        model(x).pow(2).mean().backward()
        for p in model.parameters():
            p.grad = torch.nan_to_num(p.grad)
        opt.step()


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
    steps = hooks_module.READ_AFTER * 2 + 3
    _train_with_a_nan(model, steps, nan_at=5, step=step)
    rec = session.records()
    session.close()
    assert rec.act_steps.tolist() == list(range(steps))
    classes = [type(m).__name__ for m in model]
    for s in range(steps):
        for idx, out in seen[s]:
            if classes[idx] == "Flatten":
                assert np.isnan(rec.activations[s, idx, 0])
                continue
            np.testing.assert_allclose(rec.activations[s, idx, :len(ACTIVATION_STATS)],
                                       direct_row(out, classes[idx]), rtol=1e-5, atol=1e-6,
                                       equal_nan=True)
    assert rec.activations[0, 3, ACTIVATION_STATS.index("absmax")] >= 1.0  # shifted below 0


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


def test_sparse_samples_are_read_a_few_at_a_time_and_a_late_one_alone(monkeypatch):
    from vizdebug.collect.checks.anomaly import AnomalyPolicy
    from vizdebug.collect.hooks import pending as pending_module

    pending = pending_module.PendingSteps(["fc"], ["Linear"], 1, AnomalyPolicy("ignore"))
    reads: list[list[int]] = []
    monkeypatch.setattr(pending, "_read", lambda sealed: reads.append([s for s, _, _ in sealed]))
    for step in (0, 10, 20, 30):  # "auto"'s early samples, each sealed one step later
        pending.add(step, None, None, step + 1)
    assert reads == []  # three wait: not read one by one
    pending.add(45, None, None, 46)
    assert reads == [[0, 10, 20, 30]]
    pending.add(45 + pending_module.READ_LATEST + 1, None, None, 45 + pending_module.READ_LATEST + 2)
    assert reads[-1] == [45]  # one sample, but old enough
    pending.read_all()
    assert reads[-1] == [45 + pending_module.READ_LATEST + 1]


@pytest.mark.parametrize("mode", ["warn", "ignore"])
def test_none_input_that_does_not_crash_is_named_without_a_pre_hook(mode):
    class TakesNone(nn.Module):
        def forward(self, x, extra):  # (not declared optional: None there is a fault)
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
    with pytest.warns(vd.collect.checks.anomaly.AnomalyWarning) if mode == "warn" else _nothing():
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
    from vizdebug.collect.taps.loader import DEFER_BATCHES, LoaderTap
    from vizdebug.records import BATCH_FIELDS

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


def test_large_outputs_match_the_reference():
    x = torch.randn(16, 64, 12, 12)
    x[:, 5] = 0.0
    for path in ("numpy", "torch"):
        for cls in ("Conv2d", "ReLU"):
            got = group_rows([sample([x, x.relu()], cls, path)], [cls, cls])
            np.testing.assert_allclose(got[0], direct_row(x, cls), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got[1], direct_row(x.relu(), cls), rtol=1e-5, atol=1e-6)


def test_a_relu_after_a_linear_takes_its_own_statistics():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
    session = vd.watch(model, every=1)
    for _ in range(3):
        x = torch.randn(16, 4)
        out = model(x)
    rec = session.records()
    session.close()
    np.testing.assert_allclose(rec.activations[2, 3, :len(ACTIVATION_STATS)],
                               direct_row(out, "ReLU"), rtol=1e-6)


class SometimesInPlace(nn.Module):
    """Adds one to its input in place once ``on`` is set: the output of the module before
    it changes after that module's hook ran."""

    on = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.add_(1.0) if self.on else x + 1.0


def test_an_output_changed_in_place_later_is_never_read_changed():
    """Outputs are reduced when forward ends: one changed in place after its hook ran
    (its version moved) is dropped for that step, and its module is sampled inside its
    hook from then on; every row that is there is exact."""
    torch.manual_seed(0)
    late = SometimesInPlace()
    model = nn.Sequential(nn.Linear(4, 8), late, nn.ReLU(), nn.Linear(8, 8), nn.ReLU(inplace=True))
    seen: dict[int, list] = {}
    step = [0]
    for idx, module in enumerate(model):
        module.register_forward_hook(
            lambda m, i, o, idx=idx: seen.setdefault(step[0], []).append((idx, o.detach().clone())))
    session = vd.watch(model, every=1)
    for step[0] in range(6):
        late.on = step[0] >= 3
        model(torch.randn(16, 4)).sum().backward()
    rec = session.records()
    session.close()
    classes = [type(m).__name__ for m in model]
    for s in range(6):
        for idx, out in seen[s]:
            row = rec.activations[s, idx, :len(ACTIVATION_STATS)]
            if s == 3 and idx == 0:  # changed in place after its hook, before it was learnt
                assert np.isnan(row).all()
                continue
            np.testing.assert_allclose(row, direct_row(out, classes[idx]), rtol=1e-5, atol=1e-6)
    assert session.hooks.outputs.eager == {0, 3}


def test_a_group_reduced_in_cache_sized_chunks_matches_the_reference():
    """Many equal CPU outputs are stacked and reduced a few at a time (a last chunk
    shorter than the others included)."""
    gen = torch.Generator().manual_seed(2)
    per = stats._CHUNK_BYTES // (128 * 64 * 4)
    xs = [torch.randn(128, 64, generator=gen) * (i + 1) for i in range(2 * per + 3)]
    xs[per][:, 5] = 0.0  # a dead unit in the second chunk
    xs[-1][7, 3] = float("nan")  # a NaN in the last one
    rows = group_rows([sample_outputs(xs, 1)], ["Linear"] * len(xs))
    for x, got in zip(xs, rows):
        np.testing.assert_allclose(got, direct_row(x, "Linear"), rtol=1e-5, atol=1e-6,
                                   equal_nan=True)



class ReluCases(nn.Module):
    """ReLUs of a kept output (after a Linear, a LayerNorm, a Conv2d, a Conv1d: the last
    with another unit axis than its input), of an input changed in place before and after
    the ReLU read it, of an input no hook kept, in place, and with a user hook."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.conv1 = nn.Conv2d(1, 4, 3, padding=1), nn.Conv1d(4, 4, 3, padding=1)
        self.lin = nn.Linear(4 * 36, 16)
        self.norms = nn.ModuleList(nn.LayerNorm(16) for _ in range(3))
        self.mid = nn.ModuleList(nn.Linear(16, 16) for _ in range(6))
        self.relus = nn.ModuleList(nn.ReLU() for _ in range(10))
        self.inplace, self.hooked = nn.ReLU(inplace=True), nn.ReLU()
        self.hooked.register_forward_hook(lambda m, i, o: o - 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r = self.relus
        c = r[0](self.conv(x))
        seq = r[1](self.conv1(c.flatten(2)))  # (8, 4, 36): units along 1, ReLU's along 2
        h = r[2](self.lin(seq.flatten(1)))
        h = r[3](self.norms[0](self.mid[0](h)))
        changed_before = self.mid[1](h)
        changed_before.mul_(2.0)  # changed before the ReLU read it
        h = r[4](changed_before)
        changed_after = self.mid[2](h)
        h = r[5](changed_after)
        changed_after.add_(1.0)  # changed after the ReLU read it
        h = r[6](self.mid[3](h) * 2.0)  # its input was not kept
        h = self.inplace(self.mid[4](h))
        h = self.hooked(self.norms[1](h))
        return r[7](self.norms[2](self.mid[5](h)))


def _relu_case_rows(derive: bool, monkeypatch) -> tuple[np.ndarray, int]:
    from vizdebug.collect.hooks import outputs as outputs_module

    derived = [0]
    real = outputs_module.sample_with_relus

    def spy(*args):
        derived[0] += args[2]
        return real(*args)

    monkeypatch.setattr(outputs_module, "sample_with_relus", spy)
    monkeypatch.setattr(outputs_module, "_global_forward_hooks", lambda: not derive)
    torch.manual_seed(0)
    model = ReluCases()
    session = vd.watch(model, every=1)
    _train_with_a_nan(model, 5, nan_at=3, gen=torch.Generator().manual_seed(3))
    rec = session.records()
    session.close()
    return rec.activations, derived[0]


def test_a_relu_of_a_kept_output_takes_its_sample_from_it_with_the_same_rows(monkeypatch):
    """The derived ReLU samples give exactly the rows the ReLUs' own reductions give; only
    the ReLUs of an unchanged kept output are derived (first pass: in their hooks)."""
    plain, none = _relu_case_rows(False, monkeypatch)
    fast, derived = _relu_case_rows(True, monkeypatch)
    assert none == 0
    # relus 0-3 and 7, on each step after the first (4: its input changed before the ReLU
    # read it, 5: after; 6: its input was not kept; the in-place and the hooked ones)
    assert derived == 5 * 4
    np.testing.assert_array_equal(fast, plain)


def test_derived_relu_rows_match_the_reference(monkeypatch):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 32), nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 32),
                          nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
    seen: list = []
    for idx, module in enumerate(model):
        module.register_forward_hook(lambda m, i, o, idx=idx: seen.append((idx, o.detach())))
    session = vd.watch(model, every=1)
    for _ in range(4):
        seen.clear()
        model(torch.randn(16, 4))
    rec = session.records()
    session.close()
    for idx, out in seen:
        np.testing.assert_allclose(rec.activations[3, idx, :len(ACTIVATION_STATS)],
                                   direct_row(out, type(model[idx]).__name__), rtol=1e-5,
                                   atol=1e-6)


def test_relu_samples_derived_from_their_inputs_give_the_relus_own_rows():
    """On every path (numpy alone, stacked in chunks, torch: half, channels last, not
    contiguous, integers), with NaN, -inf and -0.0 in the inputs."""
    from vizdebug.collect.hooks.outputs import _derivable

    for x, cls in outputs():
        if not _derivable(x):
            continue
        axis, relu_axis = output_key(x, cls)[3], output_key(x, "ReLU")[3]
        for group, relus in (([x], 1), ([x, x * 2, x], 2)):
            own = sample_outputs([t.relu() for t in group[:relus]], relu_axis)
            _, derived = stats.sample_with_relus(group, axis, relus, relu_axis)
            classes = ["ReLU"] * relus
            np.testing.assert_array_equal(group_rows([derived], classes),
                                          group_rows([own], classes))


def test_row_counts_match_count_nonzero():
    gen = np.random.default_rng(4)
    for width in (0, 8, 16, 1024, 2040, 2048, 12):
        mask = gen.random((7, width)) < gen.random((7, 1))
        mask[0], mask[-1] = True, False
        assert rows._count(mask).tolist() == np.count_nonzero(mask, axis=1).tolist()


def test_a_global_forward_hook_turns_the_relu_shortcut_off_against_the_pinned_torch():
    """The shortcut reads torch's private dict of global forward hooks (no public way to
    ask): checked here on the installed torch, with a global hook that really replaces a
    ReLU's output, whose rows must describe what the ReLU's hook saw, not relu(input)."""
    from torch.nn.modules.module import register_module_forward_hook

    from vizdebug.collect.hooks.outputs import _global_forward_hooks

    assert not _global_forward_hooks()

    def double_relus(module, args, output):
        return output * 2 + 5 if isinstance(module, torch.nn.ReLU) else None

    handle = register_module_forward_hook(double_relus)
    try:
        assert _global_forward_hooks()
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
        session = vd.watch(model, every=1)
        for _ in range(3):
            model(torch.randn(32, 4)).sum().backward()
        rec = session.records()
        session.close()
    finally:
        handle.remove()
    assert not _global_forward_hooks()
    zero = rec.activations[-1, 1, 2]  # the ReLU's share of exact zeros: none, all are >= 5
    assert zero == 0.0


@pytest.mark.parametrize("block_bytes", [1, 3 * 4 * 8, 1 << 22])
def test_rows_read_in_blocks_match_the_reference_across_block_edges(monkeypatch, block_bytes):
    """A read reduces its subsamples in blocks of rows through one buffer: samples cut at
    any row, float32 and float64 ones of one width kept apart, give the reference rows."""
    monkeypatch.setattr(rows, "_BLOCK_BYTES", block_bytes)
    cases = outputs()
    gen = torch.Generator().manual_seed(5)
    samples, classes, want = [], [], []
    for trial in range(30):
        x, cls = cases[trial % len(cases)]
        group = [x * float(torch.rand(1, generator=gen) * 3) for _ in range(1 + trial % 4)]
        samples.append(sample(group, cls, "numpy" if trial % 3 else "torch"))
        classes += [cls] * len(group)
        want += [direct_row(t, cls) for t in group]
    np.testing.assert_allclose(group_rows(samples, classes), np.array(want), rtol=1e-5,
                               atol=1e-6, equal_nan=True)
