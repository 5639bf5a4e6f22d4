"""show_top_losses: ranking on a real digits CNN with flipped labels, side effects on the
model/loader/RNG, tabular inputs, loss functions without ``reduction``, bad input, escaping."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

import vizdebug as vd
from tests.digits_runs import Digits, SmallCNN
from vizdebug import _env
from vizdebug.analysis.datasets.top_losses import top_losses
from vizdebug.errors import VizdebugError, VizdebugTypeError

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def noisy():
    """A small CNN trained briefly on digits whose labels are 5% flipped."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = (x - x.mean()) / x.std()
    rng = np.random.default_rng(0)
    flipped = rng.choice(len(y), size=int(0.05 * len(y)), replace=False)
    noisy_y = y.copy()
    noisy_y[flipped] = (y[flipped] + rng.integers(1, 10, len(flipped))) % 10
    torch.manual_seed(0)
    ds = Digits(x, noisy_y)
    model = SmallCNN(8)
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    for _ in range(2):
        for xb, yb in DataLoader(ds, batch_size=64, shuffle=True):
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
    return model, ds, flipped


def test_top_losses_enriched_in_flipped_labels(noisy):
    model, ds, flipped = noisy
    loader = DataLoader(ds, batch_size=64, shuffle=True)
    view = vd.show_top_losses(model, loader, nn.CrossEntropyLoss(), k=len(flipped),
                              classes=[f"digit {i}" for i in range(10)])
    res = view.result
    precision = np.isin(res.indices, flipped).mean()
    base = len(flipped) / len(ds)
    print(f"flipped among the top {len(flipped)} losses: {precision:.2f} (base rate {base:.3f})")
    assert precision >= 0.5 and precision >= 8 * base
    assert res.n_read == len(ds) and res.task == "multiclass" and not res.truncated
    assert np.all(np.diff(res.losses) <= 0)
    # indices are dataset indices even though the loader shuffles
    ce = nn.functional.cross_entropy(model.eval()(ds.x[res.indices]), ds.y[res.indices],
                                     reduction="none")
    np.testing.assert_allclose(ce.detach().numpy(), res.losses, rtol=1e-4, atol=1e-5)
    html = view.pages[0].html
    assert html.count('class="vd-cell') == 64 and view.more  # 89 shown over two pages
    assert "digit" in html and "\u2192" in html and f"of {len(ds)} samples" in html


def test_model_loader_and_rng_untouched(noisy):
    model, ds, _ = noisy
    model.train()
    model.features[0].eval()  # a frozen submodule stays frozen
    modes = [m.training for m in model.modules()]
    params = [p.detach().clone() for p in model.parameters()]
    gen = torch.Generator().manual_seed(5)
    loader = DataLoader(ds, batch_size=64, shuffle=True, generator=gen)
    it = iter(loader)
    next(it)
    expected_next = _replay_second_batch(ds)
    torch.manual_seed(3)
    np.random.seed(3)
    random.seed(3)
    states = (torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate(),
              gen.get_state())
    loss = nn.CrossEntropyLoss()
    vd.show_top_losses(model, loader, loss, k=8)
    assert [m.training for m in model.modules()] == modes
    assert all(torch.equal(a, b) for a, b in zip(params, model.parameters()))
    assert torch.equal(states[0], torch.get_rng_state())
    assert np.array_equal(states[1], np.random.get_state()[1]) and states[2] == random.getstate()
    assert torch.equal(states[3], gen.get_state())
    assert loss.reduction == "mean"  # the user's module is not changed
    assert torch.equal(next(it)[1], expected_next)  # the user's epoch goes on as it would


def _replay_second_batch(ds):
    loader = DataLoader(ds, batch_size=64, shuffle=True,
                        generator=torch.Generator().manual_seed(5))
    it = iter(loader)
    next(it)
    return next(it)[1]


def test_dataset_pair_and_iterable_agree(noisy):
    model, ds, _ = noisy
    loss = nn.CrossEntropyLoss()
    a = top_losses(model, ds, loss, k=10)
    b = top_losses(model, (ds.x, ds.y), loss, k=10)
    c = top_losses(model, [(ds.x[:900], ds.y[:900]), (ds.x[900:], ds.y[900:])], loss, k=10)
    assert a.indices == b.indices == c.indices
    np.testing.assert_allclose(a.all_losses, b.all_losses, rtol=1e-5)


def test_max_samples_cuts_with_a_note(noisy):
    model, ds, _ = noisy
    view = vd.show_top_losses(model, DataLoader(ds, batch_size=64), nn.CrossEntropyLoss(),
                              k=5, max_samples=100)
    assert view.result.n_read == 100 and view.result.truncated
    assert max(view.result.indices) < 100
    assert "the first 100 samples only" in view.pages[0].html


def test_loss_without_reduction_is_called_per_sample(noisy):
    model, ds, _ = noisy
    ref = top_losses(model, (ds.x[:200], ds.y[:200]), nn.functional.cross_entropy, k=5)
    view = vd.show_top_losses(model, (ds.x[:200], ds.y[:200]),
                              lambda out, t: nn.functional.cross_entropy(out, t), k=5)
    assert view.result.per_sample_calls and not ref.per_sample_calls
    assert view.result.indices == ref.indices
    np.testing.assert_allclose(view.result.all_losses, ref.all_losses, rtol=1e-5)
    assert "called once per sample" in view.pages[0].html


def _mlp(n_in: int, n_out: int) -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(n_in, 16), nn.ReLU(), nn.Linear(16, n_out))


def test_tabular_multiclass_table_with_columns():
    from sklearn.datasets import load_wine

    x, y = load_wine(return_X_y=True)
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    view = vd.show_top_losses(_mlp(13, 3), (x, y), nn.CrossEntropyLoss(), k=7,
                              classes=["a", "b", EVIL])
    html = view.pages[0].html
    assert "vd-tabular" in html and view.pages[0].n_items == 7
    for col in ("<th>target</th>", "<th>prediction</th>", "<th>probability</th>",
                "<th>loss</th>", "<th>f12</th>"):
        assert col in html
    assert EVIL not in html and "&lt;script&gt;" in html
    assert view.findings.codes == []  # the annotation columns are not checked as inputs


def test_tabular_binary_sigmoid_and_regression():
    from sklearn.datasets import load_breast_cancer

    x, y = load_breast_cancer(return_X_y=True)
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    yt = torch.tensor(y, dtype=torch.float32)[:, None]
    res = vd.show_top_losses(_mlp(30, 1), (torch.tensor(x), yt), nn.BCEWithLogitsLoss(),
                             k=4).result
    assert res.task == "binary" and set(res.predictions) <= {0, 1}
    assert np.all((res.probabilities >= 0.5) & (res.probabilities <= 1))
    reg = top_losses(_mlp(30, 1), (x, yt * 3.5), nn.MSELoss(), k=4)
    assert reg.task == "regression" and np.isnan(reg.probabilities).all()


def test_nan_loss_ranks_first():
    x = torch.randn(30, 4)
    x[7, 2] = float("nan")
    view = vd.show_top_losses(_mlp(4, 3), (x, torch.randint(0, 3, (30,))),
                              nn.CrossEntropyLoss(), k=3)
    assert view.result.indices[0] == 7 and np.isnan(view.result.losses[0])
    assert "1 samples have a non-finite loss" in view.pages[0].html


def test_class_names_escaped_in_the_grid(noisy):
    model, ds, _ = noisy
    names = [EVIL if i % 2 else f'q"z{i}' for i in range(10)]
    view = vd.show_top_losses(model, ds, nn.CrossEntropyLoss(), k=10, classes=names)
    try:
        _env.set_renderer("html")
        page = view._repr_mimebundle_()["text/html"]
    finally:
        _env.set_renderer(None)
    assert EVIL not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'q"z' not in page and "q&quot;z" in page  # quotes escaped in title attributes


class _NoneDataset(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return None if i == 2 else (torch.zeros(4), 0)


def test_bad_input_named():
    model, x, y = _mlp(4, 3), torch.randn(10, 4), torch.randint(0, 3, (10,))
    loss = nn.CrossEntropyLoss()
    with pytest.raises(VizdebugTypeError, match="nn.Module.*function"):
        vd.show_top_losses(lambda t: t, (x, y), loss)
    with pytest.raises(VizdebugError, match="batch 1 .* is None"):
        vd.show_top_losses(model, [(x, y), None], loss)
    with pytest.raises(VizdebugError, match=r"dataset\[2\] is None"):
        vd.show_top_losses(model, _NoneDataset(), loss)
    with pytest.raises(VizdebugError, match="failed with TypeError"):
        vd.show_top_losses(model, DataLoader(_NoneDataset(), batch_size=4), loss)
    for k in (0, -3):
        with pytest.raises(VizdebugError, match=f"k={k}"):
            vd.show_top_losses(model, (x, y), loss, k=k)
    for k in (1.5, True, "3"):
        with pytest.raises(VizdebugTypeError, match="k must be a whole number"):
            vd.show_top_losses(model, (x, y), loss, k=k)
    with pytest.raises(VizdebugTypeError, match="loss_fn must be callable.*str"):
        vd.show_top_losses(model, (x, y), "ce")
    with pytest.raises(VizdebugTypeError, match="None"):
        vd.show_top_losses(model, None, loss)
    with pytest.raises(VizdebugError, match="top losses need"):
        vd.show_top_losses(model, [x], loss)
    with pytest.raises(VizdebugTypeError, match="classes must be"):
        vd.show_top_losses(model, (x, y), loss, classes="abc")


def test_failing_loss_and_model_restore_mode():
    model, x, y = _mlp(4, 3), torch.randn(10, 4), torch.randint(0, 3, (10,))
    model.train()

    def broken(out, target, reduction="mean"):
        raise RuntimeError("shape trouble")

    with pytest.raises(VizdebugError, match="loss_fn .*broken.*RuntimeError: shape trouble"):
        vd.show_top_losses(model, (x, y), broken)
    assert model.training
    with pytest.raises(VizdebugError, match=r"model\(x\) raised RuntimeError"):
        vd.show_top_losses(model, (torch.randn(10, 5), y), nn.CrossEntropyLoss())
    assert model.training


def test_k_larger_than_data_and_repr():
    model, x, y = _mlp(4, 3), torch.randn(6, 4), torch.randint(0, 3, (6,))
    view = vd.show_top_losses(model, (x, y), nn.CrossEntropyLoss(), k=50)
    assert len(view.result.indices) == 6 and "k=50 but only 6" in view.pages[0].html
    assert repr(view).startswith("TopLossesView(") and isinstance(view, vd.BatchView)
