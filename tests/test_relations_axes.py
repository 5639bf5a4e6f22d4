"""Axis order: what RNN/transformer layers and the first convolution receive, against the
loader's batch size and the model input (collect/taps/program.py ``AxisWatch``, the rule in
analysis/training/axes.py)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd
from vizdebug.collect.taps.axes import AxisWatch, axes_keeping_order
from vizdebug.collect.taps.program import ProgramTap
from vizdebug.records import ProgramFacts
from vizdebug.records.program import MAX_AXIS_FACTS, AxisFacts


class _Seq(nn.Module):
    """An RNN-family or attention module between a linear read-in and a head."""

    def __init__(self, kind: str = "LSTM", batch_first: bool = False, arrange=None,
                 pool: int = 1) -> None:
        super().__init__()
        self.inp = nn.Linear(3, 8)
        if kind == "MHA":
            self.rnn = nn.MultiheadAttention(8, 2, batch_first=batch_first)
        elif kind == "Encoder":
            layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=batch_first)
            self.rnn = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        else:
            self.rnn = getattr(nn, kind)(8, 8, batch_first=batch_first)
        self.head = nn.Linear(8, 2)
        self.arrange = arrange or (lambda h: h)
        self.pool = pool  # the module output's time axis

    def forward(self, x):
        h = self.arrange(self.inp(x))
        if isinstance(self.rnn, nn.MultiheadAttention):
            out = self.rnn(h, h, h)[0]
        elif isinstance(self.rnn, nn.TransformerEncoder):
            out = self.rnn(h)
        else:
            out = self.rnn(h)[0]
        return self.head(out.mean(self.pool))


def _train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int = 16,
           use_loader: bool = True, **loader_args) -> vd.Findings:
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch, **loader_args)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with vd.watch(model, loader=loader if use_loader else None) as session:
        for _ in range(2):
            for xb, yb in loader:
                opt.zero_grad()
                out = model(xb)
                loss = nn.functional.cross_entropy(out.reshape(-1, 2), yb.reshape(-1))
                loss.backward()
                opt.step()
                session.log(loss=loss)
        return session.findings()


def _sequences(n: int = 64, t: int = 5):
    torch.manual_seed(1)
    return torch.randn(n, t, 3), torch.randint(0, 2, (n,))


def _axis(found: vd.Findings) -> list:
    return [f for f in found if f.code in ("axis-order", "layout-channels-last")]


# -- the relation: keeping axes ---------------------------------------------------------
@pytest.mark.parametrize("src, dst, order", [
    ((32, 8, 8, 3), (32, 3, 8, 8), [0, 3, 1, 2]),       # NHWC reshaped to NCHW
    ((4, 3, 5, 8, 8), (20, 3, 8, 8), [0, 2, 1, 3, 4]),   # (b, c, t, h, w) -> (b*t, c, h, w)
    ((32, 3, 8, 8), (32, 3, 8, 8), None),                # the input itself
    ((32, 192), (32, 3, 8, 8), None),                    # a flat row split: nothing moved
    ((32, 8, 8, 1), (32, 1, 8, 8), None),                # one channel: both readings agree
    ((4, 5, 3, 8, 8), (20, 3, 8, 8), None),              # (b, t, c, h, w): a merge
])
def test_axes_keeping_order(src, dst, order):
    assert axes_keeping_order(src, dst) == order


def test_axis_facts_round_trip_and_bounds():
    facts = ProgramFacts(loader_batch_size=16, axes=[
        AxisFacts("rnn", "LSTM", "sequence", [16, 5, 8], False, [16, 5, 3]),
        AxisFacts("conv", "Conv2d", "conv", [4, 3, 8, 8], None, [4, 8, 8, 3], True, False,
                  [0, 3, 1, 2])])
    assert ProgramFacts.from_json(facts.to_json()) == facts
    many = facts.to_json()
    many["axes"] = many["axes"][:1] * (MAX_AXIS_FACTS + 10)
    assert len(ProgramFacts.from_json(many).axes) == MAX_AXIS_FACTS
    assert ProgramFacts.from_json({"batch_sizes": [3]}).axes == []  # an older run's facts


# -- the collector ------------------------------------------------------------------------
def test_hooks_go_after_the_first_training_forwards_and_eval_is_not_counted():
    model = _Seq()
    tap = ProgramTap(model)
    model.eval()
    model(torch.randn(4, 5, 3))
    assert tap.facts().axes == [] and model.rnn._forward_pre_hooks
    model.train()
    for _ in range(5):
        model(torch.randn(4, 5, 3))
    assert [a.shape for a in tap.facts().axes] == [[4, 5, 8]]
    assert not model.rnn._forward_pre_hooks and not model._forward_pre_hooks
    tap.remove()
    tap.remove()  # harmless twice


def test_watching_leaves_training_bitwise_identical():
    def run(watch: bool) -> torch.Tensor:
        torch.manual_seed(0)
        model = _Seq("GRU")
        tap = ProgramTap(model) if watch else None
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(8, 5, 3)
        for _ in range(4):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
        if tap is not None:
            tap.remove()
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    assert torch.equal(run(True), run(False))


def test_an_error_in_the_collector_is_reported_not_raised(monkeypatch):
    model = _Seq()
    watch = AxisWatch(model, changed=lambda: None)
    errors = []
    watch.on_error = lambda where, exc: errors.append((where, exc))
    monkeypatch.setattr(watch, "_observe_sequence", lambda *a: 1 / 0)
    model(torch.randn(4, 5, 3))
    assert errors and "rnn" in errors[0][0]
    watch.remove()


def test_the_session_reports_and_removes_its_hooks():
    model = _Seq()
    with vd.watch(model):
        pass
    assert not model.rnn._forward_pre_hooks


# -- (a)/(c): the batch on the axis the module reads as time ------------------------------
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN", "MHA", "Encoder"])
def test_batch_first_false_fed_batch_first_is_named(kind):
    x, y = _sequences()
    found = _axis(_train(_Seq(kind), x, y))
    assert [(f.code, f.severity, f.where) for f in found] == [("axis-order", "warning", "rnn")]
    assert "16" in found[0].message and "batch_first=True" in found[0].hint


@pytest.mark.parametrize("kind", ["LSTM", "MHA", "Encoder"])
def test_the_fixed_twins_are_quiet(kind):
    x, y = _sequences()
    assert _axis(_train(_Seq(kind, batch_first=True), x, y)) == []
    transposed = _Seq(kind, arrange=lambda h: h.transpose(0, 1), pool=0)  # it permutes
    assert _axis(_train(transposed, x, y)) == []


def test_batch_first_true_fed_seq_first_is_named():
    x, y = _sequences()
    model = _Seq("GRU", batch_first=True, arrange=lambda h: h.transpose(0, 1), pool=0)
    found = _axis(_train(model, x, y))
    assert [f.where for f in found] == ["rnn"] and "batch_first=False" in found[0].hint


def test_seq_first_batches_from_the_loader_are_quiet():
    """A collate that pads to (time, batch) (pad_sequence's default): axis 1 is the batch."""
    x, y = _sequences()
    loader = DataLoader(TensorDataset(x, y), batch_size=16,
                        collate_fn=lambda items: (torch.stack([a for a, _ in items], 1),
                                                  torch.stack([b for _, b in items])))
    model = _Seq(pool=0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with vd.watch(model, loader=loader) as session:
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
        assert _axis(session.findings()) == []


@pytest.mark.parametrize("case", ["no-loader", "ambiguous", "one-sequence"])
def test_where_the_batch_axis_is_ambiguous_it_stays_quiet(case):
    x, y = _sequences(t=16 if case == "ambiguous" else 5)  # time steps == batch size
    if case == "one-sequence":  # the whole batch one sequence on purpose (BatchFormer)
        model = _Seq("Encoder", arrange=lambda h: h[:, :1].reshape(len(h), 1, -1))
    else:
        model = _Seq()
    assert _axis(_train(model, x, y, use_loader=case != "no-loader")) == []


# -- (b): reshaped, not permuted, before the first convolution ----------------------------
class _Conv(nn.Module):
    def __init__(self, arrange, channels: int = 3) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, 4, 3, padding=1)
        self.head = nn.Linear(4 * 64, 2)
        self.arrange = arrange

    def forward(self, x):
        return self.head(torch.relu(self.conv(self.arrange(x))).flatten(1))


@pytest.mark.parametrize("arrange, code", [
    (lambda x: x.view(-1, 3, 8, 8), "layout-channels-last"),
    (lambda x: (x.reshape(len(x), 3, 8, 8) - 0.5) / torch.tensor([0.2, 0.3, 0.4]).view(3, 1, 1),
     "layout-channels-last"),  # normalised after the reshape: still its values, scrambled
    (lambda x: x.permute(0, 3, 1, 2), None),
    (lambda x: ((x - 0.5) / 0.25).permute(0, 3, 1, 2).contiguous(), None),
])
def test_nhwc_images_reshaped_instead_of_permuted(arrange, code):
    torch.manual_seed(2)
    x, y = torch.rand(48, 8, 8, 3), torch.randint(0, 2, (48,))
    found = _axis(_train(_Conv(arrange), x, y))
    assert [(f.code, f.where) for f in found] == ([(code, "conv")] if code else [])
    if code:
        assert "permute(0, 3, 1, 2)" in found[0].message and found[0].severity == "warning"


@pytest.mark.parametrize("shape, arrange, channels", [
    ((48, 8, 8, 1), lambda x: x.view(-1, 1, 8, 8), 1),   # one channel: both readings agree
    ((48, 192), lambda x: x.view(-1, 3, 8, 8), 3),       # flat rows (CIFAR's CHW order)
    ((48, 3, 8, 8), lambda x: x, 3),                     # already NCHW
])
def test_reshapes_that_move_no_axis_are_quiet(shape, arrange, channels):
    torch.manual_seed(3)
    x, y = torch.rand(*shape), torch.randint(0, 2, (48,))
    assert _axis(_train(_Conv(arrange, channels), x, y)) == []


def test_nhwc_fed_as_is_is_named_before_the_convolution_fails():
    torch.manual_seed(4)
    x = torch.rand(16, 8, 8, 3)
    model = _Conv(lambda x: x)
    with vd.watch(model) as session:
        with pytest.raises(RuntimeError):
            model(x)
        found = _axis(session.findings())
    assert [(f.code, f.severity, f.where) for f in found] == [
        ("layout-channels-last", "warning", "conv")]
    assert "expects 3 channels on axis 1" in found[0].message


def test_the_verdict_survives_the_store(tmp_path):
    x, y = _sequences()
    loader = DataLoader(TensorDataset(x, y), batch_size=16)
    model = _Seq()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    path = tmp_path / "run.sqlite"
    with vd.watch(model, loader=loader, store=path) as session:
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
            session.log(loss=1.0)
        live = session.records().program
    run = vd.open_run(path)
    assert run.records().program == live
    assert [f.where for f in _axis(run.findings())] == ["rnn"]
