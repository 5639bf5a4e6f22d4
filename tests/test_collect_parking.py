"""Per-layer hooks parked between sampled steps and put back (collect/hooks/parking.py):
the same state as registering them afresh, the same statistics, and a fresh registration
whenever what they were registered for changed."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import vizdebug as vd
from vizdebug.collect.hooks.parking import ParkedHooks


def _state(model: nn.Module) -> list:
    """Every hook dict of the model and its parameters, as (owner, dict name, ids)."""
    out = []
    for name, m in model.named_modules():
        for attr in ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_always_called"):
            out.append((name, attr, list(getattr(m, attr))))
    for name, p in model.named_parameters():
        out.append((name, "grad", list(p._post_accumulate_grad_hooks or {})))
    return out


def _train(model: nn.Module, steps: int, session=None, seed: int = 1) -> list[float]:
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        x, y = torch.randn(16, 6, generator=gen), torch.randint(0, 3, (16,), generator=gen)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if session is not None:
            session.log(loss=loss)
    return losses


def _mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))


def test_parked_hooks_go_back_as_a_fresh_registration_would_leave_them():
    layer = nn.Linear(2, 2)
    calls = []
    user_before = layer.register_forward_hook(lambda m, i, o: calls.append("user"))
    ours = [layer.register_forward_hook(lambda m, i, o: calls.append("ours"), always_call=True),
            layer.weight.register_post_accumulate_grad_hook(lambda p: calls.append("grad"))]
    registered = _state_of(layer)
    parked = ParkedHooks(ours, key=1)
    assert list(layer._forward_hooks) == [user_before.id]  # as handle.remove() leaves it
    assert not layer._forward_hooks_always_called and not layer.weight._post_accumulate_grad_hooks
    layer(torch.ones(1, 2)).sum().backward()
    assert calls == ["user"]
    assert parked.restore(key=1) == ours
    assert _state_of(layer) == registered  # the same ids, values and order
    calls.clear()
    layer(torch.ones(1, 2)).sum().backward()
    assert calls == ["user", "ours", "grad"]
    for handle in ours:
        handle.remove()
    assert list(layer._forward_hooks) == [user_before.id] and not layer._forward_hooks_always_called


def _state_of(layer: nn.Linear) -> list:
    return [list(layer._forward_hooks.items()), list(layer._forward_hooks_always_called.items()),
            list((layer.weight._post_accumulate_grad_hooks or {}).items())]


def test_restore_refuses_another_key_or_a_dict_that_is_gone():
    layer = nn.Linear(2, 2)
    parked = ParkedHooks([layer.register_forward_hook(lambda *a: None)], key=("a", ()))
    assert parked.restore(key=("b", ())) is None and not layer._forward_hooks
    assert parked.restore(key=("a", ())) is None  # once only
    other = nn.Linear(2, 2)
    parked = ParkedHooks([other.register_forward_hook(lambda *a: None)], key=0)
    del other
    assert parked.restore(key=0) is None  # its module (and so its dict) is gone


def test_sampled_steps_reuse_their_hooks_and_collect_the_same_statistics():
    model, twin = _mlp(), _mlp()
    session = vd.watch(model, every=4)
    ids = []
    original = session.hooks._attach

    def attach():
        original()
        ids.append(sorted(_ids(model)))
    session.hooks._attach = attach
    losses = _train(model, 13, session)
    session.close()
    # every hook off between samples; from the second sample on (the optimizer counts
    # the steps: the root hooks join the sampled steps' hooks) the same registrations back
    assert len(ids) == 4 and ids[1] and all(i == ids[1] for i in ids[2:])
    assert not any(ids for _, _, ids in _state(model))
    # a twin whose hooks are registered afresh at every sample: the same numbers
    fresh = vd.watch(twin, every=4)
    fresh.hooks._parked = None
    detach = fresh.hooks._detach
    fresh.hooks._detach = lambda park=True: detach(park=False)
    assert _train(twin, 13, fresh) == losses  # training itself is untouched
    fresh.close()
    a, b = session.records(), fresh.records()
    assert a.act_steps.tolist() == b.act_steps.tolist() == [0, 4, 8, 12]
    np.testing.assert_array_equal(a.activations, b.activations)
    np.testing.assert_array_equal(a.grads, b.grads)


def _ids(model: nn.Module, root: bool = True) -> list[int]:
    return [i for name, _, ids in _state(model) for i in ids if root or name]


def test_hooks_are_registered_afresh_when_a_lazy_parameter_appears_or_a_dict_changes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Linear(8, 3))
    session = vd.watch(model, every=3)
    _train(model, 7, session)  # the lazy weights exist from the first forward on
    records = session.records()
    assert np.isfinite(records.grads[-1][:, 0]).all()  # their gradients sampled too
    model[2]._forward_hooks = type(model[2]._forward_hooks)()  # a dict replaced
    _train(model, 3, session, seed=2)
    session.close()
    records = session.records()
    assert records.act_steps[-1] == 9 and np.isfinite(records.activations[-1][:, 0]).all()
    assert not _ids(model)


def test_pause_and_resume_park_and_restore_the_hooks_of_a_sampled_step():
    model = _mlp()
    session = vd.watch(model, every=1)
    _train(model, 2, session)
    before = sorted(_ids(model, root=False))  # (the root hooks are registered anew)
    with session.paused():
        assert not _ids(model)
    assert sorted(_ids(model, root=False)) == before
    session.close()
    assert not _ids(model)
