"""Issue 25 ("hurts training"): vizdebug's hooks must never change what the program runs.

A ``torch.compile``'d model stays one graph with vizdebug attached (before or after
compiling), sparse gradients give gradient statistics, lazy modules, TorchScript modules
and the meta device are watched without raising.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import vizdebug as vd


class Net(nn.Module):
    """A user-written model (dynamo compiles its forward frame, below the module's hooks)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


def _sequential() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                         nn.Linear(16, 1))


class _Counter:
    """A dynamo backend that counts the graphs it is handed and runs them eagerly."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: torch.fx.GraphModule, example: list) -> object:
        self.graphs += 1
        return gm.forward


def _train_compiled(make, how: str, watched: bool, every: object = 1, steps: int = 12):
    """(graphs, graph breaks, session) of a short compiled training run."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    model, backend = make(), _Counter()
    session = None
    if how == "watch-then-compile":
        session = vd.watch(model, every=every) if watched else None
        run = torch.compile(model, backend=backend)
    elif how == "method":
        model.compile(backend=backend)
        run = model
        session = vd.watch(model, every=every) if watched else None
    else:  # vd.watch(torch.compile(model))
        run = torch.compile(model, backend=backend)
        session = vd.watch(run, every=every) if watched else None
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        loss = run(torch.randn(16, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if session is not None:
            session.log(loss=loss)
    breaks = sum(counters["graph_break"].values())
    return backend.graphs, breaks, session


@pytest.mark.parametrize("how", ["compile-then-watch", "watch-then-compile", "method"])
@pytest.mark.parametrize("make", [Net, _sequential], ids=["Net", "Sequential"])
@pytest.mark.parametrize("every", [1, "auto"])
def test_a_compiled_model_stays_compiled_with_vizdebug_attached(how, make, every):
    """Issue 25: a hook traced by dynamo (``ndarray.flags``) gave 19 graphs and 11 breaks
    instead of 1 and 0; now the graph count is the one without vizdebug, no break."""
    if how == "method" and make is _sequential:
        pytest.skip("torch compiles nothing for a torch.nn container's own .compile()")
    plain, plain_breaks, _ = _train_compiled(make, how, watched=False)
    graphs, breaks, session = _train_compiled(make, how, watched=True, every=every)
    assert (plain, plain_breaks) == (1, 0)
    if how == "watch-then-compile" and every == "auto":
        # compiled after watch(): vizdebug cannot know that the modules run compiled, and
        # dynamo guards on their hook counts: a recompile when the first sample's hooks
        # come or go (and for a torch.nn container, when the root's go), then the graphs
        # are cached; never a graph break (a known limit: watch the compiled model)
        assert graphs <= plain + 2 and breaks == 0
    else:
        assert (graphs, breaks) == (plain, plain_breaks)
    records = session.records()
    assert records.grads.shape[0] >= 1  # gradients are still read on sampled steps
    assert not session.collector_errors()
    session.close()


def test_a_compiled_model_says_what_is_not_collected():
    """Collect fewer statistics inside compiled code, and say so as an info finding."""
    _, _, session = _train_compiled(Net, "compile-then-watch", watched=True)
    found = session.findings()
    compiled = [f for f in found if f.code == "compiled-model"]
    assert [f.severity for f in compiled] == ["info"]
    assert "_orig_mod" in compiled[0].message
    assert not found.at_least("warning")
    assert session.records().program.compiled == ["_orig_mod"]
    session.close()


def test_training_with_a_compiled_model_is_unchanged_by_watching():
    """The compiled model's weights after training are bitwise those without vizdebug."""
    def weights(watched: bool) -> list[torch.Tensor]:
        torch.manual_seed(1)
        model = Net()
        run = torch.compile(model, backend="eager")
        session = vd.watch(run, every=1) if watched else None
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        g = torch.Generator().manual_seed(2)
        for _ in range(6):
            loss = run(torch.randn(16, 8, generator=g)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if session is not None:
            session.close()
        return [p.detach().clone() for p in model.parameters()]

    for a, b in zip(weights(False), weights(True)):
        assert torch.equal(a, b)


def test_sparse_gradients_give_gradient_statistics():
    """Issue 25: ``nn.Embedding(sparse=True)`` gave collector-error warnings
    (``linalg_vector_norm`` on a sparse tensor) instead of gradient norms."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(10, 4, sparse=True), nn.Flatten(), nn.Linear(8, 1))
    session = vd.watch(model, every=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tokens = torch.tensor([[1, 1], [2, 3], [1, 4], [5, 1]])  # token 1 repeated: coalesced
    for _ in range(3):
        opt.zero_grad()
        model(tokens).pow(2).mean().backward()
        opt.step()
    emb_grad = model[0].weight.grad.coalesce().values().norm().item()
    records = session.records()
    assert not session.collector_errors()
    assert "collector-error" not in session.findings().codes
    assert records.grads.shape == (3, 3, 3)
    last = records.grads[-1]
    assert last[0, 0] == pytest.approx(emb_grad, rel=1e-5)  # the embedding's gradient norm
    assert (last[:, 1] > 0).all()  # weight norms
    session.close()


def test_lazy_modules_are_watched_before_their_first_forward():
    """Lazy modules are valid programs: watched before the first forward, with their
    optimizer built before it too, their parameters get statistics once they exist."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's own "lazy modules are new" warning
        session = vd.watch(model, every=1)
        session.findings()  # before any forward
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            loss = model(torch.randn(16, 5)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            session.log(loss=loss)
    records = session.records()
    assert records.param_numel == [40, 8, 8, 1]
    assert records.grads.shape[0] == 3 and records.activations.shape[0] == 3
    assert not session.collector_errors()
    session.close()


def test_a_torchscript_module_is_watched_for_what_can_be_watched():
    """Issue 25: ``watch(torch.jit.script(m))`` raised torch's RuntimeError
    (``register_forward_pre_hook is not supported on ScriptModules``); now its gradients,
    losses and steps are watched, and an info finding says activations are not."""
    torch.manual_seed(0)
    scripted = torch.jit.script(_sequential())
    session = vd.watch(scripted, every=1)
    opt = torch.optim.SGD(scripted.parameters(), lr=0.1)
    for _ in range(3):
        loss = scripted(torch.randn(16, 8)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        session.log(loss=loss)
    found = session.findings()
    assert "compiled-model" in found.codes and not found.at_least("warning")
    # (steps are counted from the optimizer's first step: no root hook on a ScriptModule)
    assert session.records().grads.shape[0] == 2
    assert not session.collector_errors()
    session.close()


@pytest.mark.parametrize("every", [1, "auto"])
def test_findings_after_a_forward_on_the_meta_device(every):
    """Issue 25: ``findings()`` after a forward on the meta device raised
    ``NotImplementedError: Cannot copy out of meta tensor``."""
    model = _sequential().to("meta")
    session = vd.watch(model, every=every)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(4, 8, device="meta")).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    found = session.findings()
    assert not found.at_least("warning")
    assert not session.collector_errors()
    session.close()


def test_a_failed_read_is_a_collector_error_not_an_exception(monkeypatch):
    """A sampled step that cannot be read is reported, never raised from findings()."""
    from vizdebug.collect.hooks import pending

    def broken(*args: object) -> None:
        raise RuntimeError("unreadable")

    monkeypatch.setattr(pending, "group_rows", broken)
    model = _sequential()
    session = vd.watch(model, every=1)
    model(torch.randn(4, 8)).sum().backward()
    found = session.findings()
    assert "collector-error" in found.codes
    assert any("unreadable" in m for _, m, _ in session.collector_errors())
    session.close()
