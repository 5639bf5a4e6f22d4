"""What reaches the loss: the LossWatch mode and the rules it applies."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from vizdebug.collect.checks.losses import LossWatch, _stack_depth

torch.manual_seed(0)
X = torch.randn(32, 5)
Y = torch.randint(0, 5, (32,))
B = torch.randn(32, 1)
BT = torch.randint(0, 2, (32, 1)).float()
R = torch.randn(32, 1)
RT = torch.randn(32)


def watched(call) -> list:
    """The events of one loss call made while a LossWatch is armed."""
    events, errors = [], []
    watch = LossWatch(events.append, lambda where, exc: errors.append(exc))
    watch.arm(7)
    try:
        call()
    except (IndexError, RuntimeError):  # torch's own refusal comes after the check
        pass
    finally:
        watch.disarm()
    assert not watch.armed and errors == []
    return events


CASES = {
    # name: (call, expected code or None)
    "ce-logits": (lambda: nn.CrossEntropyLoss()(X, Y), None),
    "ce-log-softmax": (lambda: F.cross_entropy(X.log_softmax(1), Y), "loss-output-mismatch"),
    "ce-ignore-index": (lambda: nn.CrossEntropyLoss(ignore_index=-1)(X, torch.where(Y > 2, Y, -1)), None),
    "ce-segmentation": (lambda: F.cross_entropy(torch.randn(2, 3, 8, 8), torch.randint(0, 3, (2, 8, 8))), None),
    "ce-soft-labels": (lambda: F.cross_entropy(X, X.softmax(1)), None),
    "nll-log-softmax": (lambda: F.nll_loss(X.log_softmax(1), Y), None),
    "bce-sigmoid": (lambda: F.binary_cross_entropy(B.sigmoid(), BT), None),
    "bce-logits": (lambda: nn.BCEWithLogitsLoss()(B, BT), None),
    "mse-same-shape": (lambda: nn.MSELoss()(R.squeeze(1), RT), None),
    "l1-same-shape": (lambda: F.l1_loss(R, RT[:, None]), None),
    "ce-softmax": (lambda: nn.CrossEntropyLoss()(X.softmax(1), Y), "loss-output-mismatch"),
    "ce-relu": (lambda: F.cross_entropy(X.relu(), Y), "loss-output-mismatch"),
    "ce-one-class": (lambda: F.cross_entropy(X[:, :1], torch.zeros(32, dtype=torch.long)),
                     "loss-output-mismatch"),
    "ce-one-based": (lambda: F.cross_entropy(X, Y + 1), "labels-out-of-range"),
    "ce-negative-ids": (lambda: F.cross_entropy(X, Y - 1), "labels-out-of-range"),
    "nll-probabilities": (lambda: nn.NLLLoss()(X.softmax(1), Y), "loss-output-mismatch"),
    "nll-raw-scores": (lambda: F.nll_loss(X, Y), "loss-output-mismatch"),
    "bce-no-sigmoid": (lambda: nn.BCELoss()(B, BT), "loss-output-mismatch"),
    "bce-logits-after-sigmoid": (lambda: nn.BCEWithLogitsLoss()(B.sigmoid(), BT),
                                 "loss-output-mismatch"),
    "softmax-one-unit": (lambda: F.binary_cross_entropy(B.softmax(1), BT), "loss-output-mismatch"),
    "bce-targets-255": (lambda: nn.BCEWithLogitsLoss()(B, BT * 255), "labels-out-of-range"),
    "mse-broadcast": (lambda: nn.MSELoss()(R, RT), "target-shape-broadcast"),
    "mse-sigmoid-wide-targets": (lambda: F.mse_loss(R.sigmoid().squeeze(1), RT * 50 + 50),
                                 "loss-output-mismatch"),
    "mse-relu-negative-targets": (lambda: F.mse_loss(R.relu().squeeze(1), RT),
                                  "loss-output-mismatch"),
}


@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_loss_call_is_judged(name):
    call, expected = CASES[name]
    codes = [e.kind for e in watched(call)]
    assert codes == ([expected] if expected else [])


def _finding(event):
    from vizdebug.analysis.training.loss_verdicts import loss_event_finding

    return loss_event_finding(event)


def test_log_probabilities_into_cross_entropy_are_only_an_info():
    assert _finding(watched(lambda: F.cross_entropy(X.log_softmax(1), Y))[0]).severity == "info"


def test_an_event_carries_what_was_seen_and_the_analysis_words_the_verdict():
    event = watched(lambda: F.cross_entropy(X, Y + 1))[0]
    assert event.step == 7 and event.module_path == "loss (cross_entropy)"
    assert "severity" not in event.detail and "hint" not in event.detail
    assert event.detail["seen"]["t_max"] == 5 and event.detail["seen"]["n_classes"] == 5
    found = _finding(event)
    assert found.severity == "error" and "0..C-1" in found.hint
    assert found.where == "loss (cross_entropy)" and found.evidence["step"] == 7


def test_the_mode_leaves_the_stack_as_it_found_it_and_never_pops_another_mode():
    from torch.overrides import TorchFunctionMode

    depth = _stack_depth()
    watch = LossWatch(lambda e: None, lambda w, e: None)
    watch.arm(0)
    assert _stack_depth() == depth + 1  # the private depth getter works on this torch
    other = TorchFunctionMode()
    other.__enter__()
    watch.disarm()  # another mode on top: ours stays until it is on top again
    assert watch.armed and _stack_depth() == depth + 2
    other.__exit__(None, None, None)
    watch.disarm()
    assert not watch.armed and _stack_depth() == depth


def test_a_check_that_fails_is_reported_not_raised(monkeypatch):
    import vizdebug.collect.checks.losses as losses

    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(losses, "check_loss_call", broken)
    errors = []
    watch = LossWatch(lambda e: None, lambda where, exc: errors.append((where, str(exc))))
    watch.arm(0)
    try:
        loss = F.cross_entropy(X, Y)
    finally:
        watch.disarm()
    assert torch.isfinite(loss) and errors == [("the loss check", "boom")]


def _train(model: nn.Module, session_every, steps: int = 30, shift: int = 0):
    import vizdebug as vd

    torch.manual_seed(1)
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    session = vd.watch(model, every=session_every) if session_every else None
    try:
        for _ in range(steps):
            x, y = torch.randn(64, 10), torch.randint(0, 4, (64,)) + shift
            loss = nn.CrossEntropyLoss()(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        found = session.findings() if session else None
        if session:
            session.close()
    return found


def _model(softmax: bool) -> nn.Module:
    torch.manual_seed(0)
    layers = [nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4)]
    return nn.Sequential(*layers, *([nn.Softmax(1)] if softmax else []))


@pytest.mark.parametrize("every", [1, "auto"])
def test_watch_names_a_softmax_before_cross_entropy_and_trains_bitwise_the_same(every):
    depth = _stack_depth()
    found = _train(_model(True), every)
    assert [(f.code, f.where) for f in found] == [("loss-output-mismatch", "loss (cross_entropy)")]
    assert _stack_depth() == depth
    assert _train(_model(False), every) == []
    watched, plain = _model(True), _model(True)
    _train(watched, every)
    _train(plain, None)
    assert all(torch.equal(a, b) for a, b in zip(watched.parameters(), plain.parameters()))


def test_labels_out_of_range_are_named_before_torch_refuses_them():
    with pytest.raises(IndexError):
        _train(_model(False), "auto", shift=1)
    import vizdebug as vd

    model = _model(False)
    session = vd.watch(model)
    with pytest.raises(IndexError):
        nn.CrossEntropyLoss()(model(torch.randn(8, 10)), torch.arange(8) + 1)
    found = session.findings()
    session.close()
    assert found.codes == ["labels-out-of-range"] and found[0].severity == "error"
    assert _stack_depth() == 0


def test_a_softmax_applied_twice_after_forward_is_named():
    """log_softmax(softmax(x)) then nll_loss: the loss input is valid log-probabilities,
    so only where it came from shows the fault (lightning-bolts#654)."""
    events = watched(lambda: F.nll_loss(F.log_softmax(F.softmax(X, dim=1), dim=1), Y))
    assert [e.kind for e in events] == ["loss-output-mismatch"]
    assert "log_softmax was applied to the output of softmax" in events[0].message
    assert watched(lambda: F.nll_loss(F.log_softmax(X, dim=1), Y)) == []


@pytest.mark.parametrize("name", ["ce-softmax", "ce-one-based", "nll-raw-scores", "mse-broadcast",
                                  "bce-targets-255", "ce-ignore-index"])
def test_the_numpy_summary_matches_the_torch_one(name, monkeypatch):
    import vizdebug.collect.checks.loss_rules as rules

    captured = {}
    real = rules.summarize

    def spy(fname, args, kwargs):
        captured["call"] = (fname, args, kwargs)
        return real(fname, args, kwargs)

    monkeypatch.setattr(rules, "summarize", spy)
    watched(CASES[name][0])
    fname, args, kwargs = captured["call"]
    fast = real(fname, args, kwargs)
    monkeypatch.setattr(rules, "_numpy_ready", lambda t: False)
    slow = real(fname, args, kwargs)
    assert fast.keys() == slow.keys()
    for key, value in fast.items():
        assert value == (pytest.approx(slow[key], rel=1e-5, abs=1e-5)
                         if isinstance(value, float) else slow[key])


def test_checks_thin_out_after_the_first_sampled_steps():
    from vizdebug.collect.checks.losses import CHECK_EVERY, FULL_CHECKS

    watch = LossWatch(lambda e: None, lambda w, e: None)
    armed = []
    for step in range(FULL_CHECKS + 4 * CHECK_EVERY):
        watch.arm(step)
        armed.append(watch.armed)
        watch.disarm()
    assert all(armed[:FULL_CHECKS]) and sum(armed[FULL_CHECKS:]) == 4
