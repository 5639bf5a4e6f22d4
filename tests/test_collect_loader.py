"""The loader tap: timing, batch statistics, captured batches, num_workers > 0."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

import vizdebug as vd
from vizdebug.collect.taps.loader import LoaderTap
from vizdebug.errors import VizdebugTypeError


class FakeClock:
    """Advances by a scripted amount on each call."""

    def __init__(self, steps):
        self.t = 0.0
        self.steps = itertools.cycle(steps)

    def __call__(self) -> float:
        self.t += next(self.steps)
        return self.t


class Squares(Dataset):
    def __len__(self) -> int:
        return 40

    def __getitem__(self, i: int):
        return torch.full((1, 4, 4), float(i)), i % 3


def test_wait_and_compute_are_split_with_a_fake_clock():
    # next() starts at +1, returns at +0.5 (wait 0.5); loop body until next call: +1.0
    tap = LoaderTap(every=1, clock=FakeClock([1.0, 0.5]))
    for _ in tap.wrap(iter(range(5))):
        pass
    t = tap.timing()
    assert t["batches"] == 5
    assert t["wait"].tolist() == pytest.approx([0.5] * 5)
    assert t["compute"].tolist() == pytest.approx([1.0] * 5)  # the last ends at StopIteration


def test_dataloader_is_tapped_in_the_users_own_loop_and_restored_on_close():
    loader = DataLoader(Squares(), batch_size=8)
    cls = type(loader)
    model = torch.nn.Linear(16, 3)
    session = vd.watch(model, loader=loader, every=2)
    assert isinstance(loader, DataLoader) and len(loader) == 5
    for x, _ in loader:
        model(x.flatten(1))
    rec = session.records()
    assert rec.loader.batches == 5
    # every batch is timed; batch statistics every 10th batch (TAP_EVERY): batch 0
    assert rec.loader.shapes == {"(8, 1, 4, 4)": 1}
    assert rec.loader.dtypes == {"float32": 1}
    stats = rec.loader.batch_stats
    assert stats[0, :2].tolist() == [0.0, 7.0]  # min and max of the first batch
    x, y = session.captured_batches()[0]
    assert x.shape == (8, 1, 4, 4) and y.shape == (8,)
    session.close()
    assert type(loader) is cls
    assert not hasattr(iter(loader), "_tap")


def test_works_with_worker_processes():
    loader = DataLoader(Squares(), batch_size=10, num_workers=2)
    session = vd.watch(torch.nn.Linear(2, 2), loader=loader, every=1)
    seen = [int(x[:, 0, 0, 0].sum()) for x, _ in loader]
    assert sum(seen) == sum(range(40))
    assert session.records().loader.batches == 4
    session.close()


def test_nonfinite_input_batches_are_found():
    data = torch.zeros(20, 3)
    data[13, 1] = float("nan")
    loader = DataLoader(TensorDataset(data), batch_size=5)
    with vd.watch(torch.nn.Linear(3, 1), loader=loader, every=1) as session:
        for _ in loader:
            pass
    found = session.findings()
    f = [f for f in found if f.code == "input-nonfinite"][0]
    assert f.where == "batch 2" and f.severity == "error"


def test_plain_iterables_are_refused_with_the_way_out():
    with pytest.raises(VizdebugTypeError, match="session.tap_loader"):
        vd.watch(torch.nn.Linear(2, 2), loader=[1, 2, 3])


def test_tap_loader_wraps_any_iterable():
    session = vd.watch(torch.nn.Linear(2, 2), every=1)
    batches = [np.ones((2, 3)), np.full((2, 3), np.inf)]
    assert len(list(session.tap_loader(batches))) == 2
    assert session.records().loader.nonfinite_batches == [1]
    session.close()


def test_broken_batch_description_never_reaches_the_loop():
    class Weird:
        shape = property(lambda self: 1 / 0)

    session = vd.watch(torch.nn.Linear(2, 2), every=1)
    assert len(list(session.tap_loader([Weird(), Weird()]))) == 2
    assert "collector-error" in session.findings().codes
    session.close()


def test_tensor_batch_summary_matches_direct_computation():
    from vizdebug.collect.taps.loader import batch_summary

    torch.manual_seed(0)
    x = torch.randn(64, 1, 8, 8) * 3 + 1
    values = batch_summary(x)[2]
    a = x.double().numpy().ravel()
    np.testing.assert_allclose(values, [a.min(), a.max(), a.mean(), a.std(), 0, a.size],
                               rtol=1e-9)
    x[0, 0, 0, 0], x[1, 0, 2, 3] = float("inf"), float("nan")
    values = batch_summary(x)[2]
    finite = x.double().numpy().ravel()
    finite = finite[np.isfinite(finite)]
    np.testing.assert_allclose(values, [finite.min(), finite.max(), finite.mean(), finite.std(),
                                        2, x.numel()], rtol=1e-9)
    assert batch_summary(torch.arange(5))[2].tolist() == [0.0, 4.0, 2.0, 2.0 ** 0.5, 0.0, 5.0]
    for x in (torch.randn(9, 7, dtype=torch.float64).t() * 5, torch.randn(3, 4).half()):
        a = x.double().numpy().ravel()  # float64 non-contiguous, float16 (torch path)
        np.testing.assert_allclose(batch_summary(x)[2],
                                   [a.min(), a.max(), a.mean(), a.std(), 0, a.size], rtol=1e-3)


class LabelFirstDicts(Dataset):
    """Items as dicts whose first key is the label (as many Hugging Face style datasets)."""

    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int):
        return {"label": i % 2, "image": torch.full((1, 4, 4), float(i) / 16)}


def test_a_dict_batch_with_the_label_key_first_is_read_by_one_rule(tmp_path):
    """The tap describes, and the run stores, the images, as show_batch shows them (the
    tap used to take the dict's first value: the labels)."""
    loader = DataLoader(LabelFirstDicts(), batch_size=8)
    model = torch.nn.Linear(16, 2)
    path = tmp_path / "dicts.sqlite"
    with vd.watch(model, loader=loader, every=1, store=path) as session:
        for batch in loader:
            model(batch["image"].flatten(1)).sum().backward()
    assert session.records().loader.shapes == {"(8, 1, 4, 4)": 1}  # the first batch
    stored = vd.open_run(path).captured_batches()[-1]
    assert stored[0].shape == (8, 1, 4, 4) and stored[1].tolist() == [0, 1] * 4
    view = vd.show_batch(next(iter(loader)))
    assert view.pages[0].n_items == 8 and "layout NCHW" in view.to_html()


@pytest.mark.parametrize(("batch", "input_shape", "target"), [
    ({"label": np.arange(3), "image": np.zeros((3, 2))}, (3, 2), [0, 1, 2]),
    ({"labels": np.arange(3), "input_ids": np.zeros((3, 7))}, (3, 7), [0, 1, 2]),
    ((np.zeros((3, 1, 4, 4)), np.zeros((3, 1, 8, 8))), (3, 1, 4, 4), None),  # (lo-res, hi-res)
    ([np.zeros((3, 5))], (3, 5), None),  # a TensorDataset of inputs only
    ((np.zeros((3, 5)), np.arange(3), "meta"), (3, 5), [0, 1, 2]),
])
def test_split_batch_names_the_input_and_the_target(batch, input_shape, target):
    from vizdebug.data.batch import batch_arrays, split_batch

    parts = split_batch(batch)
    assert parts.input.shape == input_shape
    if target is not None:
        assert parts.target.tolist() == target
    assert batch_arrays(batch, 1 << 20)[0].shape == input_shape


def test_split_batch_reads_an_object_with_named_parts():
    from vizdebug.data.batch import split_batch

    class Sample:
        def __init__(self) -> None:
            self.image, self.label = np.zeros((2, 3, 4, 4)), np.array([1, 0])

    parts = split_batch(Sample())
    assert parts.input.shape == (2, 3, 4, 4) and parts.target.tolist() == [1, 0]


def test_the_last_batch_of_an_epoch_counts_its_compute():
    """A full-batch loop (one batch per epoch) computes after every batch: the tap used to
    see only the waits and reported 100% waiting."""
    tap = LoaderTap(every=1, clock=FakeClock([1.0]))  # each clock read: one second later
    for _epoch in range(3):
        for _ in tap.wrap(iter(range(1))):
            pass
    t = tap.timing()
    assert t["batches"] == 3
    assert t["total_wait"] == pytest.approx(3.0) and t["total_compute"] == pytest.approx(3.0)


def test_one_loader_watched_by_two_sessions_feeds_both():
    """Issue 10: the second watch() used to take the loader from the first, silently."""
    loader = DataLoader(TensorDataset(torch.rand(64, 3), torch.arange(64)), batch_size=16)
    first = vd.watch(torch.nn.Linear(3, 2), loader=loader)
    second = vd.watch(torch.nn.Linear(3, 2), loader=loader)
    for _ in loader:
        pass
    assert first.tap.batches == second.tap.batches == 4
    first.close()
    for _ in loader:
        pass
    assert (first.tap.batches, second.tap.batches) == (4, 8)
    assert type(loader) is not DataLoader  # still tapped for the second
    second.close()
    second.close()
    assert type(loader) is DataLoader


def test_show_batch_mid_epoch_leaves_a_persistent_workers_loader_alone():
    """Issue 10: iter() on a persistent_workers loader resets its one iterator, so a look
    at a batch mid-epoch restarted the user's epoch (80 samples instead of 64)."""
    x = torch.arange(64.0).reshape(64, 1, 1, 1).expand(64, 1, 4, 4).contiguous()
    loader = DataLoader(TensorDataset(x, torch.arange(64)), batch_size=16, num_workers=1,
                        persistent_workers=True)
    for _ in range(2):
        seen = []
        for k, (_, y) in enumerate(loader):
            seen += y.tolist()
            if k == 1:
                assert vd.show_batch(loader).pages[0].n_items == 16
        assert seen == list(range(64))
