"""``vd.lr_find``: the LR range test, its exact restore, its suggestion and its finding."""

from __future__ import annotations

import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import vizdebug as vd  # noqa: E402
from vizdebug.analysis.training.lr_range import (  # noqa: E402
    Smoother,
    divergence_lr,
    lr_schedule,
    read_curve,
    smooth,
    valley_index,
)


class Net(nn.Module):
    """BatchNorm (running stats, a step counter), dropout (draws from the RNG), a frozen-mode
    submodule and tied weights: everything a restore can miss."""

    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.bn = nn.BatchNorm1d(16)
        self.drop = nn.Dropout(0.3)
        self.mid = nn.Linear(16, 16)
        self.out = nn.Linear(16, 3)
        self.register_buffer("calls", torch.zeros(()), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1  # a non-persistent buffer the forward pass changes
        return self.out(self.drop(torch.relu(self.mid(torch.relu(self.bn(self.inp(x)))))))


def _data(n: int = 256, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    return x, y


def _loader(seed: int = 0, batch_size: int = 32):
    x, y = _data()
    gen = torch.Generator().manual_seed(seed)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y),
                                       batch_size=batch_size, shuffle=True, generator=gen)


def _train(model, loader, opt, steps: int) -> None:
    loss_fn = nn.CrossEntropyLoss()
    done = 0
    while done < steps:
        for x, y in loader:
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            done += 1
            if done == steps:
                return


def _state(model, opt, loader):
    return {
        "tensors": [t.detach().clone() for t in [*model.parameters(), *model.buffers()]],
        "grads": [None if p.grad is None else p.grad.clone() for p in model.parameters()],
        "modes": [m.training for m in model.modules()],
        "opt": {i: {k: v.clone() if torch.is_tensor(v) else v for k, v in s.items()}
                for i, s in enumerate(opt.state.values())},
        "groups": [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups],
        "torch": torch.get_rng_state().clone(), "numpy": np.random.get_state()[1].copy(),
        "python": random.getstate(), "gen": loader.generator.get_state().clone(),
    }


def _same(a, b) -> None:
    assert len(a["tensors"]) == len(b["tensors"])
    for s, t in zip(a["tensors"], b["tensors"]):
        assert s.dtype == t.dtype and torch.equal(s, t)
    for s, t in zip(a["grads"], b["grads"]):
        assert (s is None and t is None) or torch.equal(s, t)
    assert a["modes"] == b["modes"]
    assert a["opt"].keys() == b["opt"].keys()
    for i in a["opt"]:
        for k, v in a["opt"][i].items():
            w = b["opt"][i][k]
            assert torch.equal(v, w) if torch.is_tensor(v) else v == w
    assert a["groups"] == b["groups"]
    assert torch.equal(a["torch"], b["torch"]) and np.array_equal(a["numpy"], b["numpy"])
    assert a["python"] == b["python"] and torch.equal(a["gen"], b["gen"])


@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4),
    lambda p: torch.optim.Adam(p, lr=1e-3),
    lambda p: torch.optim.AdamW([{"params": p[:2], "lr": 1e-3}, {"params": p[2:], "lr": 3e-4}]),
], ids=["sgd-momentum", "adam", "adamw-two-groups"])
def test_restores_model_optimizer_and_rng_bitwise(make_opt):
    torch.manual_seed(0)
    model = Net()
    opt = make_opt(list(model.parameters()))
    loader = _loader()
    _train(model, loader, opt, 3)  # momentum buffers and Adam moments exist
    model.mid.eval()  # a submodule in another mode than its parent
    np.random.seed(3)
    random.seed(4)
    before = _state(model, opt, loader)
    groups = list(opt.param_groups)
    view = vd.lr_find(model, loader, nn.CrossEntropyLoss(), opt, num_steps=40, end_lr=1.0)
    assert len(view.lrs) >= 5
    _same(before, _state(model, opt, loader))
    assert all(g is h for g, h in zip(groups, opt.param_groups))  # the same dicts, held by schedulers


def test_training_after_the_test_is_bitwise_the_same_as_without_it():
    def run(with_test: bool):
        torch.manual_seed(1)
        np.random.seed(1)
        random.seed(1)
        model = Net()
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        loader = _loader(seed=1)
        _train(model, loader, opt, 2)
        if with_test:
            vd.lr_find(model, loader, nn.CrossEntropyLoss(), opt, num_steps=30, end_lr=10.0)
        _train(model, loader, opt, 12)  # shuffling and dropout draw from the restored RNGs
        return [t.detach().clone() for t in [*model.parameters(), *model.buffers()]]

    for a, b in zip(run(True), run(False)):
        assert torch.equal(a, b)


def test_restores_when_the_users_loss_raises():
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = _loader()
    before = _state(model, opt, loader)
    calls = []

    def loss_fn(out, y):
        calls.append(1)
        if len(calls) == 7:
            raise RuntimeError("the user's own bug")
        return nn.functional.cross_entropy(out, y)

    with pytest.raises(RuntimeError, match="the user's own bug"):
        vd.lr_find(model, loader, loss_fn, opt, num_steps=20)
    _same(before, _state(model, opt, loader))


def test_dict_batches_batch_fn_forward_and_default_optimizer():
    x, y = _data()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    first = [p.detach().clone() for p in model.parameters()]
    known = [{"inputs": x[i:i + 32], "labels": y[i:i + 32]} for i in range(0, 256, 32)]
    view = vd.lr_find(model, known, nn.CrossEntropyLoss(), num_steps=20, end_lr=1.0)
    assert view.optimizer == "Adam" and view.train_lr is None and len(view.lrs) > 5
    odd = [{"feats": x[i:i + 32], "cls": y[i:i + 32]} for i in range(0, 256, 32)]
    with pytest.raises(vd.VizdebugError, match="batch_fn"):
        vd.lr_find(model, odd, nn.CrossEntropyLoss(), num_steps=20)
    view = vd.lr_find(model, odd, nn.CrossEntropyLoss(), num_steps=20,
                      batch_fn=lambda b: (b["feats"], b["cls"]))
    assert len(view.lrs) > 5
    view = vd.lr_find(model, odd, forward=lambda m, b: nn.functional.cross_entropy(
        m(b["feats"]), b["cls"]), num_steps=20)
    assert len(view.lrs) > 5
    for p, q in zip(model.parameters(), first):
        assert torch.equal(p, q)


def test_lbfgs_and_a_loader_shorter_than_the_test():
    x, y = _data(64)
    model = nn.Linear(8, 3)
    opt = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=2)
    view = vd.lr_find(model, [(x, y)], nn.CrossEntropyLoss(), opt, num_steps=12, end_lr=1.0)
    assert len(view.lrs) >= 5  # one batch, read again at every step


def test_a_non_finite_loss_stops_the_test():
    x, y = _data(64)
    model = nn.Linear(8, 1)
    view = vd.lr_find(model, [(x, y.float()[:, None] * 1e3)], nn.MSELoss(),
                      torch.optim.SGD(model.parameters(), lr=0.1), start_lr=1e-3, end_lr=1e6,
                      num_steps=60)
    assert view.curve.stopped in ("non-finite", "diverged") and len(view.lrs) < 60
    assert "<svg" in view.to_html()


@pytest.mark.parametrize("args, kwargs, match", [
    (("not a model", [1], nn.MSELoss()), {}, "torch.nn.Module"),
    ((nn.Linear(2, 1), [], nn.MSELoss()), {}, "no batches"),
    ((nn.Linear(2, 1), iter([(torch.ones(2, 2), torch.ones(2, 1))]), nn.MSELoss()), {}, "iterator"),
    ((nn.Linear(2, 1), [(torch.ones(2, 2), torch.ones(2, 1))], nn.MSELoss()),
     {"start_lr": 1.0, "end_lr": 0.1}, "start_lr"),
    ((nn.Linear(2, 1), [(torch.ones(2, 2), torch.ones(2, 1))], nn.MSELoss()),
     {"num_steps": 4}, "num_steps"),
    ((nn.Linear(2, 1), [(torch.ones(2, 2), torch.ones(2, 1))], nn.MSELoss(reduction="none")),
     {}, "one number"),
    ((nn.Linear(2, 1), [(torch.ones(2, 2), torch.ones(2, 1))], "mse"), {}, "loss_fn"),
    ((nn.Linear(2, 1), [(torch.ones(2, 2), torch.ones(2, 1))], nn.MSELoss(), "sgd"), {},
     "optimizer"),
    ((nn.Linear(2, 1), [(torch.ones(2, 2), torch.ones(2, 1))], nn.MSELoss()),
     {"rule": "fastest"}, "rule"),
])
def test_bad_input_names_what_was_passed(args, kwargs, match):
    with pytest.raises(vd.VizdebugError, match=match):
        vd.lr_find(*args, **kwargs)


def test_the_curve_rules():
    assert np.allclose(smooth(np.arange(10.0)), _running(np.arange(10.0)))
    assert valley_index(np.array([3.0, 9, 8, 7, 6, 5, 4, 9, 9])) == 3
    lrs = lr_schedule(1e-5, 1.0, 50)
    falls = np.r_[np.linspace(2.3, 0.2, 35), np.linspace(0.25, 0.4, 10), np.geomspace(3, 50, 5)]
    curve = read_curve(lrs, falls, "diverged")
    assert set(curve.suggestions) == {"valley", "steepest", "minimum/10"}
    assert lrs[0] < curve.suggestion < curve.best_lr < curve.diverge_lr
    assert curve.diverge_lr == pytest.approx(lrs[47])  # the trailing median passes 2.3 there
    # a spike that comes back down is not a divergence
    assert divergence_lr(lrs, np.r_[np.linspace(2.3, 0.2, 40), [9, 9, 9], np.full(7, 0.3)]) is None
    assert read_curve(lrs[:3], falls[:3], "end").suggestion is None


def _running(values):
    s = Smoother()
    return [s.add(v) for v in values]


def test_view_static_twin_report_and_check_escape(tmp_path):
    lrs = lr_schedule(1e-4, 1.0, 40)
    curve = read_curve(lrs, np.r_[np.linspace(2.3, 0.3, 30), np.geomspace(0.5, 20, 10)], "diverged")
    from vizdebug.views.lr_find import LRFinderView

    view = LRFinderView(curve, "<b>Opt</b>", train_lr=0.9)
    page = view.to_html()
    assert "<svg" in page and "valley" in page and "&lt;b&gt;Opt&lt;/b&gt;" in page
    assert "<b>Opt</b>" not in page and view.findings.codes == ["lr-too-high"]
    assert "lr-too-high" in page and "you train at 0.9" in page
    assert view.check(1e-3).codes == [] and view.check(2.0).codes == ["lr-too-high"]
    frame = view.to_frame()
    assert list(frame.columns) == ["lr", "loss", "smoothed"] and len(frame) == 40
    if __import__("importlib").util.find_spec("plotly") is not None:
        fig = view.figure()
        assert fig.layout.xaxis.type == "log" and list(fig.data[1].y) == frame["smoothed"].tolist()
    out = vd.report([view], tmp_path / "r.html")
    assert "LR range test" in out.read_text()
    with pytest.raises(vd.VizdebugError, match="learning rate"):
        view.check("fast")


def test_check_reads_a_watched_sessions_rate():
    lrs = lr_schedule(1e-4, 1.0, 40)
    curve = read_curve(lrs, np.r_[np.linspace(2.3, 0.3, 30), np.geomspace(0.5, 20, 10)], "diverged")
    from vizdebug.views.lr_find import LRFinderView

    model = nn.Linear(8, 3)
    opt = torch.optim.SGD(model.parameters(), lr=0.95)
    x, y = _data(64)
    with vd.watch(model, on_anomaly="ignore", every=1) as session:
        for _ in range(4):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            session.log(loss=loss)
        assert LRFinderView(curve).check(session).codes == ["lr-too-high"]


def test_a_watching_session_does_not_count_the_tests_steps():
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = _loader()
    with vd.watch(model, loader=loader, every=1, on_anomaly="ignore") as session:
        _train(model, loader, opt, 3)
        steps, batches = session.hooks.step, session.tap.batches
        vd.lr_find(model, loader, nn.CrossEntropyLoss(), opt, num_steps=20)
        assert (session.hooks.step, session.tap.batches) == (steps, batches)
        _train(model, loader, opt, 2)
        assert session.hooks.step == steps + 2  # and it counts the user's steps again
    assert "lr-too-high" not in session.findings().codes


@pytest.mark.slow
@pytest.mark.parametrize("model, optimizer, lr, codes", [
    ("cnn", "adam", 1e-3, []), ("mlp", "sgd", 0.05, []), ("mlp", "adam", 1e-3, []),
    ("mlp", "sgd", 5.0, ["lr-too-high"]),
    ("cnn", "adam", 0.5, ["lr-too-high"]),
])
def test_digits_sane_rates_give_no_finding_and_a_diverging_one_does(model, optimizer, lr, codes):
    from tests.digits_runs import RunConfig, build

    net, train, _, opt = build(RunConfig(model=model, optimizer=optimizer, lr=lr))
    view = vd.lr_find(net, train, nn.CrossEntropyLoss(), opt)
    assert view.findings.codes == codes, view.findings
    assert view.suggestion is not None and view.suggestion < view.curve.diverge_lr
