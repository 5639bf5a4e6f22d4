"""Session.track_embeddings: training stays bitwise identical, the model's mode and the RNGs
are untouched, frames come at the due points, and a stored run gives them back (a damaged
frame refused)."""

from __future__ import annotations

import random
import re
import sqlite3

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import vizdebug as vd
from vizdebug.errors import VizdebugError, VizdebugTypeError
from vizdebug.records import MAX_PROBE


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny layers: threads only contend on a shared machine
    yield
    torch.set_num_threads(before)


class Net(nn.Module):
    """Conv + BatchNorm + Dropout: a probe pass in train mode would change BN's statistics
    and draw dropout masks; so does ``noise`` in any mode (a forward that draws RNG)."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8),
                                      nn.ReLU(), nn.MaxPool2d(2))
        self.fc1 = nn.Linear(8 * 16, 32)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x).flatten(1)
        h = torch.relu(self.fc1(h)) + 0.0 * torch.rand(1)  # draws from torch's RNG
        return self.fc2(self.drop(h))


def _data(n: int = 240, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 10, (n,), generator=g)
    x = torch.randn(n, 1, 8, 8, generator=g) + y[:, None, None, None] * 0.3
    return x, y


def _train(track: bool, *, epochs: int = 2, every: int | str = "epoch", store=None):
    torch.manual_seed(0)
    model = Net()
    x, y = _data()
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
                        generator=torch.Generator().manual_seed(1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    session = vd.watch(model, loader=loader, every=2, store=store)
    if track:
        px, py = _data(100, seed=5)
        session.track_embeddings("fc1", px, labels=py, images=px, every=every)
        session.track_embeddings("features", (px, py), every=3)
    for _ in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            session.log(loss=loss)
    session.close()
    return model, session


def test_training_is_bitwise_identical_and_the_collectors_never_see_the_probe():
    plain, s0 = _train(False)
    tracked, s1 = _train(True)
    for (name, a), (_, b) in zip([*plain.named_parameters(), *plain.named_buffers()],
                                 [*tracked.named_parameters(), *tracked.named_buffers()]):
        assert torch.equal(a, b), name
    r0, r1 = s0.records(), s1.records()
    assert s0.hooks.steps == s1.hooks.steps == 16
    assert np.array_equal(r0.act_steps, r1.act_steps)
    assert np.array_equal(r0.activations, r1.activations, equal_nan=True)
    assert [e["kind"] for e in r0.events] == [e["kind"] for e in r1.events]
    assert s1.collector_errors() == []
    codes0 = sorted(f.code for f in s0.findings())
    assert sorted(f.code for f in s1.findings()) == codes0


def test_mode_and_rng_are_untouched():
    torch.manual_seed(0)
    model = Net().train()
    model.drop.eval()  # a mixed state must come back as it was
    session = vd.watch(model)
    probe = torch.randn(50, 1, 8, 8)
    random.seed(3)
    np.random.seed(3)
    torch.manual_seed(3)
    states = (random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state())
    session.track_embeddings("fc1", probe)
    assert random.getstate() == states[0]
    assert np.array_equal(np.random.get_state()[1], states[1])
    assert torch.equal(torch.get_rng_state(), states[2])
    assert model.training and model.fc1.training and not model.drop.training
    assert all(p.grad is None for p in model.parameters())
    assert session.hooks.steps == 0
    frame = session.embedding_frames()[0]
    assert frame.features.dtype == np.float32 and frame.features.shape == (50, 32)
    session.close()


def test_due_points_every_n_steps_every_epoch_and_logged_epochs():
    _, session = _train(True, epochs=2, every=4)
    fc1 = session.embedding_frames("fc1")
    assert [f.step for f in fc1] == [0, 4, 8, 12, 16]
    assert [f.epoch for f in fc1] == [0, 0, 1, 1, 2]  # epochs ended (step 8 ends the first)
    pooled = session.embedding_frames("features")
    assert [f.step for f in pooled] == [0, 3, 6, 9, 12, 15, 16]
    assert pooled[0].features.shape == (100, 8)  # N x C x H x W averaged over H x W
    _, by_epoch = _train(True, epochs=3)
    assert [(f.step, f.epoch) for f in by_epoch.embedding_frames()] == [
        (0, 0), (8, 1), (16, 2), (24, 3)]
    # no loader watched: a logged epoch ends one (the loop logs it after validation)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model)
    session.track_embeddings("1", torch.randn(20, 4))
    for epoch in range(2):
        for _ in range(5):
            opt.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            opt.step()
        session.log(val_loss=0.5, epoch=epoch)
        session.log(epoch=epoch)  # twice: no step between, no new frame
    session.close()
    assert [(f.step, f.epoch) for f in session.embedding_frames()] == [(0, None), (5, 1), (10, 2)]


def test_a_running_sessions_view_follows_new_frames():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model)
    session.track_embeddings("1", torch.randn(30, 4), labels=np.arange(30) % 3, every=2)

    def steps(n: int) -> None:
        for _ in range(n):
            opt.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            opt.step()

    steps(2)
    view = session.embeddings(method="pca")
    assert view.steps == [0, 2]
    steps(3)
    assert view.steps == [0, 2, 4]  # appended as it was taken, the slider grows
    session.close()
    assert view.steps == [0, 2, 4, 5] and session.collector_errors() == []


def test_a_run_still_being_written_gives_its_frames_so_far(tmp_path):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model, store=tmp_path / "live.sqlite")
    session.track_embeddings("1", torch.randn(30, 4), labels=["a", "b", "c"] * 10, every=2)
    run = vd.open_run(tmp_path / "live.sqlite")
    for expected in ([0, 2], [0, 2, 4]):
        for _ in range(2):
            opt.zero_grad()
            model(torch.randn(8, 4)).pow(2).mean().backward()
            opt.step()
        session.store.tick()  # the writer's next write, now
        assert run.state == "running" and [f.step for f in run.embedding_frames()] == expected
    assert run.embedding_probe().labels == ["a", "b", "c"] * 10  # text labels, as JSON
    session.close()


def test_unknown_layer_lists_valid_names_closest_first():
    model = Net()
    session = vd.watch(model)
    with pytest.raises(VizdebugError) as err:
        session.track_embeddings("fcl1", torch.randn(4, 1, 8, 8))
    text = str(err.value)
    assert "no module named 'fcl1'" in text and "did you mean 'fc1'" in text
    assert text.index("'fc1'") < text.index("'features.0'") and "'drop'" in text
    with pytest.raises(VizdebugTypeError, match="module path"):
        session.track_embeddings(3, torch.randn(4, 1, 8, 8))
    session.close()


def test_probe_bounds_and_bad_input():
    model = Net()
    session = vd.watch(model)
    with pytest.raises(VizdebugError, match="10,000"):
        session.track_embeddings("fc1", torch.zeros(MAX_PROBE + 1, 1, 8, 8))
    with pytest.raises(VizdebugError, match="MiB"):  # 5.6 GiB claimed, nothing allocated
        session.track_embeddings("fc1", torch.zeros(1, 3, 224, 224).expand(10_000, -1, -1, -1))
    read = []

    class Endless(torch.utils.data.IterableDataset):
        def __iter__(self):
            while True:
                read.append(1)
                yield torch.zeros(1, 8, 8)

    with pytest.raises(VizdebugError, match="more than 10,000"):
        session.track_embeddings("fc1", DataLoader(Endless(), batch_size=500))
    assert len(read) <= MAX_PROBE + 1000  # refused as soon as it was too long
    with pytest.raises(VizdebugError, match="one label per probe sample"):
        session.track_embeddings("fc1", torch.zeros(10, 1, 8, 8), labels=[1, 2])
    with pytest.raises(VizdebugTypeError, match="every must be"):
        session.track_embeddings("fc1", torch.zeros(10, 1, 8, 8), every=0)
    with pytest.raises(VizdebugError, match="model failed on the probe"):
        session.track_embeddings("fc1", torch.zeros(10, 3))
    assert session.embedding_layers() == []
    wide = nn.Sequential(nn.Flatten(), nn.Linear(64, 5000))
    with pytest.raises(VizdebugError, match="5,000 features"):
        vd.watch(wide).track_embeddings("1", torch.zeros(4, 64))
    # a Dataset probe: its targets become the labels; images become thumbnails
    x, y = _data(40)
    session.track_embeddings("fc1", TensorDataset(x, y), images=x[:, 0])
    probe = session.embedding_probe("fc1")
    assert probe.n == 40 and probe.labels.tolist() == y.tolist()
    assert probe.images.shape == (40, 8, 8) and probe.images.dtype == np.uint8
    with pytest.raises(VizdebugError, match="already tracked"):
        session.track_embeddings("fc1", x)
    session.close()


def test_an_error_during_training_is_reported_not_raised():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    session = vd.watch(model)
    session.track_embeddings("1", torch.randn(20, 4), every=2)
    session._trackers["1"].probe.inputs = torch.randn(20, 3)  # the model now fails on it
    for _ in range(4):
        opt.zero_grad()
        model(torch.randn(8, 4)).pow(2).mean().backward()
        opt.step()
    session.close()
    errors = session.collector_errors()
    assert errors and errors[0][0] == "the embedding tracker on '1'"
    assert len(session.embedding_frames()) == 1


def test_stored_frames_round_trip_and_a_damaged_frame_is_refused(tmp_path):
    path = tmp_path / "run.sqlite"
    _, session = _train(True, epochs=2, store=path)
    run = vd.open_run(path)
    assert run.embedding_layers() == ["fc1", "features"]
    live, stored = session.embedding_frames(), run.embedding_frames()
    assert [(f.step, f.epoch) for f in stored] == [(f.step, f.epoch) for f in live]
    assert all(np.array_equal(a.features, b.features) for a, b in zip(live, stored))
    assert run.embedding_probe().labels.tolist() == _data(100, seed=5)[1].tolist()
    from vizdebug.report import _embedding_sections

    page = "".join(_embedding_sections(run))  # what vd.report adds
    assert page.count("Tracked embeddings: ") == 2 and page.count("<img") >= 2
    assert run.embeddings(method="pca").steps == [f.step for f in live]  # the timeline view
    conn = sqlite3.connect(path)
    conn.execute("UPDATE embeddings SET data=substr(data, 1, 100) WHERE layer='fc1' AND step=8")
    conn.execute("UPDATE embeddings SET n=100000000 WHERE layer='features' AND step=3")
    conn.commit()
    damaged = vd.open_run(path)
    assert [f.step for f in damaged.embedding_frames()] == [0, 16]
    assert "fc1" in damaged.damage["embeddings"] and "bytes" in damaged.damage["embeddings"]
    pooled = [f.step for f in session.embedding_frames("features")]
    assert [f.step for f in damaged.embedding_frames("features")] == pooled[:1] + pooled[2:]
    assert any(f.code == "collector-error" for f in damaged.findings())
    assert damaged.embedding_probe().images.shape == (100, 8, 8)
    conn.execute("UPDATE embedding_probes SET images=zeroblob(50000000)")
    conn.commit()
    with pytest.raises(VizdebugError, match=f"{re.escape(str(path))}.*embedding_probes.*thumbn"):
        vd.open_run(path).embedding_probe()
    conn.execute("UPDATE embeddings SET data=x'00'")
    conn.commit()
    with pytest.raises(VizdebugError, match=f"{re.escape(str(path))}.*damaged.*no frame of 'fc1'"):
        vd.open_run(path).embedding_frames()
    # a run of format version 1 (no embedding tables) still opens, with no tracked layer
    conn.execute("DROP TABLE embeddings")
    conn.execute("UPDATE meta SET value='1' WHERE key='format_version'")
    conn.commit()
    conn.close()
    old = vd.open_run(path)
    assert old.embedding_layers() == [] and old.records().scalars["loss"][0].size == 16
    with pytest.raises(VizdebugError, match="no layer is tracked"):
        old.embedding_frames()
