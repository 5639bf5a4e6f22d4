"""False alarms and crashes measured on working public programs: what reaches the loss,
``None`` inputs that a module takes, lazy modules, and loss verdicts worded by analysis/.

Each test is a small real training program (or call) that vizdebug accused or crashed on
before: a plain regression whose untrained head starts in [0, 1], an RNN fed ``hx=None``,
attention fed ``key_padding_mask=None`` positionally, a model of ``nn.Lazy*`` layers
watched before its first forward.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import vizdebug as vd
from vizdebug.collect.checks.anomaly import AnomalyWarning


def loud(findings) -> list[str]:
    return [f"{f.severity} {f.code} [{f.where}]" for f in findings
            if f.severity in ("warning", "error")]


# -- 1. the regression branch decides from the op that made the output ------------------
def _diabetes() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_diabetes

    x, y = load_diabetes(return_X_y=True)  # features already centred and scaled
    y = (y - y.mean()) / y.std()  # standardised targets: -1.7 to 2.6
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)[:, None]


def _regress(loss_fn, head: nn.Module | None = None, epochs: int = 30):
    """A plain MLP regression (the pytorch regression tutorials' shape): its untrained
    Linear head outputs 0.09-0.11 at the first step, inside [0, 1]."""
    x, y = _diabetes()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1), *filter(None, [head]))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=32,
                                         shuffle=True,
                                         generator=torch.Generator().manual_seed(0))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    session = vd.watch(model, loader=loader)
    first = None
    for _ in range(epochs):
        for xb, yb in loader:
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
            first = loss.item() if first is None else first
    with torch.no_grad():
        final = float(loss_fn(model(x), y))
    found = session.findings()
    session.close()
    return found, first, final


@pytest.mark.parametrize("loss_fn", [nn.MSELoss(), nn.L1Loss(), nn.SmoothL1Loss()],
                         ids=["mse", "l1", "smooth-l1"])
def test_a_plain_regression_whose_head_starts_in_0_1_is_not_called_a_sigmoid(loss_fn):
    found, first, final = _regress(loss_fn)
    assert final < 0.75 * first  # it trains
    assert "loss-output-mismatch" not in found.codes, loud(found)


def test_a_sigmoid_or_relu_head_on_targets_it_cannot_reach_is_still_named():
    found, _, _ = _regress(nn.MSELoss(), nn.Sigmoid(), epochs=2)
    sigmoid = [f for f in found if f.code == "loss-output-mismatch"]
    assert sigmoid and "sigmoid" in sigmoid[0].message and sigmoid[0].severity == "warning"


@pytest.mark.parametrize("act", [torch.sigmoid, F.relu], ids=["sigmoid", "relu"])
def test_the_op_is_read_through_reshapes_after_forward(act):
    """An activation applied after forward and reshaped (``.squeeze(1)``): no graph, so
    the function mode's record of what it made tells the op."""
    from vizdebug.collect.checks.losses import LossWatch

    events = []
    watch = LossWatch(events.append, lambda where, exc: None)
    out = torch.linspace(-2, 2, 32)[:, None]
    watch.arm(0)
    try:
        F.mse_loss(act(out).squeeze(1), torch.linspace(-3, 40, 32))
        F.mse_loss(torch.linspace(0.1, 0.2, 32), torch.linspace(-3, 40, 32))  # no op: quiet
    finally:
        watch.disarm()
    assert [(e.kind, e.detail["seen"]["output_op"]) for e in events] == [
        ("loss-output-mismatch", act.__name__)]


def test_bce_with_logits_on_an_untrained_head_in_0_1_is_not_called_a_sigmoid():
    """The same range guess in BCEWithLogitsLoss: raw logits that happen to lie in [0, 1]."""
    from vizdebug.collect.checks.loss_rules import check_loss_call

    logits = torch.linspace(0.05, 0.3, 32, requires_grad=True)[:, None] * 1.0
    targets = (torch.arange(32) % 2).float()[:, None]
    assert check_loss_call("binary_cross_entropy_with_logits", (logits, targets), {}) == []
    codes = [c for c, _ in check_loss_call("binary_cross_entropy_with_logits",
                                           (logits.sigmoid(), targets), {})]
    assert codes == ["loss-output-mismatch"]


# -- 2. None where the module takes it ----------------------------------------------------
class RNNModel(nn.Module):
    """d2l's ``RNNModel`` (d2l-en, chapter_recurrent-neural-networks/rnn-concise): the
    state is ``None`` until the first batch, and is handed on positionally."""

    def __init__(self, rnn: nn.Module, vocab: int) -> None:
        super().__init__()
        self.rnn, self.vocab = rnn, vocab
        self.linear = nn.Linear(rnn.hidden_size, vocab)

    def forward(self, inputs: torch.Tensor, state: torch.Tensor | None) -> tuple:
        x = F.one_hot(inputs.T.long(), self.vocab).float()
        y, state = self.rnn(x, state)
        return self.linear(y.reshape(-1, y.shape[-1])), state


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        out = self.fc(x)
        return out if mask is None else out.masked_fill(mask, 0.0)


class Attend(nn.Module):
    """Attention with ``key_padding_mask=None`` passed positionally, an LSTM with
    ``hx=None``, a custom block's ``mask=None`` (all as public programs write them)."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.lstm = nn.LSTM(8, 8, batch_first=True)
        self.block = Masked()
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, _ = self.attn(x, x, x, None)
        h, _ = self.lstm(a, None)
        return self.head(self.block(h, None)[:, -1])


def test_none_that_a_module_takes_is_no_fault():
    torch.manual_seed(0)
    model = Attend()
    x, y = torch.randn(64, 5, 8), torch.randint(0, 3, (64,))
    y = (x[:, :, 0].sum(1) > 0).long() + (x[:, :, 1].sum(1) > 1).long()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnomalyWarning)  # nothing to warn about
        session = vd.watch(model, every=1)
        for _ in range(40):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
    assert loss.item() < 0.5
    assert "input-none" not in session.findings().codes
    session.close()


@pytest.mark.parametrize("cell", [nn.RNN, nn.GRU, nn.LSTM])
def test_d2l_rnn_model_with_state_none_is_no_fault(cell):
    torch.manual_seed(0)
    vocab, steps = 6, 8
    text = torch.arange(400) % vocab  # a periodic "corpus": the next token is learnable
    model = RNNModel(cell(vocab, 16), vocab)
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    session = vd.watch(model, every=1)
    state = None
    for i in range(0, 300, steps * 4):
        xb = text[i:i + steps * 4].reshape(4, steps)
        yb = text[i + 1:i + 1 + steps * 4].reshape(4, steps)
        out, state = model(xb, None if i == 0 else state)
        state = tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()
        loss = F.cross_entropy(out, yb.T.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        session.log(loss=loss)
    assert "input-none" not in session.findings().codes, loud(session.findings())
    session.close()


def test_none_as_the_data_or_where_forward_does_not_take_it_is_still_named():
    class Pair(nn.Module):
        def forward(self, x, y):  # y is not optional
            return x

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc, self.pair, self.masked = nn.Linear(3, 3), Pair(), Masked()

        def forward(self, x):
            return self.pair(self.fc(x), None)

    model = Net()
    session = vd.watch(model, every=1, on_anomaly="ignore")
    model(torch.randn(2, 3))
    events = [(e.module_path, e.detail["position"]) for e in session.policy.events]
    assert events == [("pair", 1)]
    with pytest.raises(TypeError):  # a custom module fed None as its data
        model.masked(None, None)
    session.close()


def test_a_custom_module_that_raises_after_an_optional_none_is_named():
    class Strict(nn.Module):
        def forward(self, x, mask=None):
            return x.masked_fill(mask, 0.0)  # takes None by signature, then fails on it

    model = nn.Sequential(nn.Linear(3, 3))
    strict = Strict()
    model.add_module("strict", strict)
    model.forward = lambda x: strict(model[0](x), None)  # type: ignore[method-assign]
    session = vd.watch(model, every=50, on_anomaly="ignore")
    with pytest.raises(TypeError):
        model(torch.randn(2, 3))
    found = [f for f in session.findings() if f.code == "input-none"]
    assert [f.where for f in found] == ["strict"]
    session.close()


# -- 3. lazy modules ---------------------------------------------------------------------
def _lazy_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.LazyConv2d(8, 3, padding=1), nn.ReLU(), nn.Flatten(),
                         nn.LazyLinear(32), nn.LazyBatchNorm1d(), nn.ReLU(), nn.LazyLinear(10))


def _digits_loader():
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor((d.images - 4.88) / 6.02, dtype=torch.float32)[:, None]
    y = torch.tensor(d.target)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=64,
                                       shuffle=True, generator=torch.Generator().manual_seed(0))


def _train_lazy(watch_every, dry_run: bool, epochs: int = 2):
    """Watched as a user would, before the first forward; the optimizer is built after a
    dry-run forward (the lazy-module idiom) or after the first real batch."""
    model, loader = _lazy_model(), _digits_loader()
    session = vd.watch(model, loader=loader, every=watch_every) if watch_every else None
    opt = None
    if dry_run:
        model(torch.zeros(2, 1, 8, 8))
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(epochs):
        for xb, yb in loader:
            out = model(xb)
            if opt is None:
                opt = torch.optim.Adam(model.parameters(), lr=3e-3)
            loss = F.cross_entropy(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if session is not None:
                session.log(loss=loss)
    return model, session, loss.item()


@pytest.mark.parametrize("every", [1, "auto"])
@pytest.mark.parametrize("dry_run", [False, True], ids=["first-batch", "dry-run"])
def test_watch_before_a_lazy_model_s_first_forward_trains_bitwise_the_same(every, dry_run):
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnomalyWarning)
        watched, session, last = _train_lazy(every, dry_run)
    plain, _, _ = _train_lazy(None, dry_run)
    assert all(torch.equal(a, b) for a, b in zip(watched.state_dict().values(),
                                                  plain.state_dict().values()))
    assert last < 0.5
    rec = session.records()
    assert loud(session.findings()) == []
    assert rec.param_numel == [p.numel() for p in watched.parameters()]
    assert rec.module_classes[0] == "Conv2d" and rec.module_classes[3] == "Linear"
    # every parameter, lazy ones too, has its gradient norm at every sampled step
    assert rec.grads.shape[0] > 0 and torch.isfinite(torch.tensor(rec.grad("grad_norm"))).all()
    session.close()


def test_a_stored_lazy_run_keeps_its_parameter_sizes(tmp_path):
    model, loader = _lazy_model(), _digits_loader()
    with vd.watch(model, loader=loader, store=tmp_path / "lazy.sqlite") as session:
        opt = None
        for xb, yb in loader:
            out = model(xb)
            opt = opt or torch.optim.Adam(model.parameters(), lr=3e-3)
            loss = F.cross_entropy(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
    run = vd.open_run(tmp_path / "lazy.sqlite")
    assert run.records().param_numel == [p.numel() for p in model.parameters()]


# -- 4. the loss checks observe; analysis/ words the verdict ------------------------------
def _softmax_run(store=None):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4), nn.Softmax(1))
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AnomalyWarning)
        session = vd.watch(model, every=1, store=store)
        for step in range(6):
            x, y = torch.randn(64, 10), torch.randint(0, 4, (64,))
            loss = nn.CrossEntropyLoss()(model(x), y)
            if step % 2:
                loss = torch.tensor(loss.item(), requires_grad=True)  # rebuilt from a number
            opt.zero_grad()
            loss.backward()
            opt.step()
    return session


def test_loss_events_hold_observations_and_stored_runs_give_the_same_findings(tmp_path):
    session = _softmax_run(tmp_path / "r.sqlite")
    for ev in session.policy.events:
        assert "severity" not in ev.detail and "hint" not in ev.detail
    session.close()
    live = [(f.code, f.severity, f.message, f.where, f.hint) for f in session.findings()]
    stored = [(f.code, f.severity, f.message, f.where, f.hint)
              for f in vd.open_run(tmp_path / "r.sqlite").findings()]
    assert stored == live
    codes = [c for c, *_ in live]
    assert "loss-output-mismatch" in codes and "zero-gradients" in codes
    mismatch = next(f for f in live if f[0] == "loss-output-mismatch")
    assert "probabilities" in mismatch[2] and "raw logits" in mismatch[4]


def test_an_older_stored_event_with_its_own_verdict_still_reads():
    from vizdebug.analysis.training.events import rule_events
    from vizdebug.records import AnomalyEvent, TrainingRecords

    old = {"kind": "loss-output-mismatch", "step": 2, "module_path": "loss (mse_loss)",
           "module_class": "mse_loss", "message": "mse_loss: the output stays in [0, 1]",
           "detail": {"severity": "warning", "hint": "drop the sigmoid", "function": "mse_loss"}}
    found = rule_events(TrainingRecords(events=[AnomalyEvent.from_json(old)]))
    assert [(f.code, f.severity, f.hint) for f in found] == [
        ("loss-output-mismatch", "warning", "drop the sigmoid")]
