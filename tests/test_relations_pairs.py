"""Inputs and targets out of step: image/mask pairs (edge lift against the shuffled
pairings) and class labels (nearest-neighbour / nearest-mean probes against permutations)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.ndimage import gaussian_filter
from sklearn.datasets import load_digits

import vizdebug as vd
from tests.corpus.public_c import _Shapes
from vizdebug.analysis.datasets.label_probe import label_findings
from vizdebug.analysis.datasets.pair_edges import pair_arrays
from vizdebug.analysis.datasets.pairs import judge_pairs, pair_findings

EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def shapes():
    ds = _Shapes(64, seed=0)  # public/unet-segmentation-shapes' data: correct masks
    return ds.imgs.numpy(), ds.masks.numpy()


def _codes(images, target):
    return [f.code for f in pair_findings(images, target, list(range(len(images))))[0]]


def test_correct_masks_of_every_kind_are_clean(shapes):
    x, m = shapes
    soft = np.stack([gaussian_filter((k > 0).astype(float), 1.0) for k in m])[:, None]
    onehot = np.eye(3)[m].transpose(0, 3, 1, 2).astype(np.float32)
    big = np.repeat(np.kron(x, np.ones((1, 1, 8, 8))), 3, 1).astype(np.float32)
    for images, target in [(x, m), (x, m[:, None].astype(np.float32)),  # (N, 1, H, W) float
                           (x, (m[:, None] > 0).astype(np.float32)), (x, soft), (x, onehot),
                           (x, (m == 1).astype(np.int64)),  # one class of two marked
                           (big, np.kron(m, np.ones((1, 8, 8), np.int64)))]:
        assert _codes(images, target) == []


def test_weak_evidence_stays_quiet(shapes):
    x, m = shapes
    rng = np.random.default_rng(0)
    other = _Shapes(64, seed=5).masks.numpy()
    weak = (m[:, None] > 0) * 0.05 + rng.normal(0, 0.1, x.shape)  # edges lost in noise
    texture = rng.normal(0, 1, x.shape) * np.where(m[:, None] > 0, 0.3, 1.0)
    assert _codes(weak, m) == [] and _codes(weak, other) == []
    assert _codes(texture, m) == []
    assert _codes(x, np.zeros_like(m)) == []  # all background: no boundary to compare
    assert _codes(x[:5], m[::-1][:5].copy()) == []  # too few pairs
    assert pair_arrays(x, np.arange(64)) is None  # class labels are no spatial target


def test_loose_box_masks_are_not_called_shuffled(shapes):
    x, m = shapes
    box = np.zeros_like(m)
    for i in range(len(m)):  # the disc's bounding box, 2 px wider: misses the edges
        rr, cc = np.nonzero(m[i] == 2)
        box[i, max(rr.min() - 2, 0):rr.max() + 3, max(cc.min() - 2, 0):cc.max() + 3] = 1
    assert _codes(x, box) == []
    assert _codes(x, np.roll(box, 1, axis=0)) == ["pairs-misaligned"]


def test_flipped_masks_are_named_with_the_transform(shapes):
    x, m = shapes
    flip = np.random.default_rng(1).random(len(m)) < 0.5
    moved = m.copy()
    moved[flip] = m[flip][:, :, ::-1]
    found, flagged = pair_findings(x, moved, list(range(100, 164)))
    assert [f.code for f in found] == ["pairs-misaligned"]
    assert "flip" in found[0].message and found[0].severity == "warning"
    assert set(flagged) <= set(np.flatnonzero(flip)) and len(flagged) >= flip.sum() // 2
    assert found[0].evidence["indices"][0] >= 100  # the batch's own indices


def test_shuffled_masks_name_the_matching_item(shapes):
    x, m = shapes
    perm = np.random.default_rng(2).permutation(len(m))
    found, _ = pair_findings(x, m[perm], list(range(len(m))))
    verdict = judge_pairs(*pair_arrays(x, m[perm]))
    assert len(verdict.misaligned) > 50 and "another item" in found[0].message
    k = verdict.misaligned[0]
    assert verdict.explained_by[k] == f"item {int(np.flatnonzero(perm == k)[0])}"


def test_masks_from_elsewhere_at_chance_are_named(shapes):
    x, _ = shapes
    other = _Shapes(64, seed=5).masks.numpy()  # the true masks are not in the batch
    found, flagged = pair_findings(x, other, list(range(64)))
    assert [f.code for f in found] == ["pairs-misaligned"] and flagged == []
    assert "no more than on other images' masks" in found[0].message


def test_image_targets_out_of_step(shapes):
    x, _ = shapes
    noisy = x + np.random.default_rng(3).normal(0, 0.1, x.shape).astype(np.float32)
    assert _codes(noisy, x) == []
    assert _codes(noisy, x[::-1].copy()) == ["pairs-misaligned"]


def test_check_batch_check_dataset_and_show_batch(shapes):
    x, m = shapes
    good = {"image": torch.as_tensor(x), "mask": torch.as_tensor(m)}
    bad = {"image": good["image"], "mask": good["mask"].flip(-1)}
    assert "pairs-misaligned" not in vd.check_batch(good).codes
    assert "pairs-misaligned" in vd.check_batch(bad).codes
    ds = _Shapes(200, seed=0)
    assert "pairs-misaligned" not in vd.check_dataset(ds).codes
    shuffled = [(ds.imgs[i], ds.masks[(7 * i + 3) % 200]) for i in range(200)]
    found = vd.check_dataset(shuffled)
    assert "pairs-misaligned" in found.codes
    view = vd.show_batch(bad)
    assert "pairs-misaligned" in view.findings.codes
    assert any("misaligned" in f for f in view.pages[0].flags)
    assert 'vd-flag-misaligned' in view._static_html() and "vd-mask" in view.pages[0].html
    clean = vd.show_batch(good, classes=[EVIL, "a", "b"])
    assert "misaligned" not in clean.pages[0].html and EVIL not in clean.pages[0].html


@pytest.fixture(scope="module")
def digits():
    d = load_digits()
    return d.images.reshape(len(d.images), -1), d.target


def test_labels_probe_against_chance(digits):
    x, y = digits
    assert label_findings(x[:600], y[:600].tolist()) == []
    shuffled = np.random.default_rng(0).permutation(y[:600])
    found = label_findings(x[:600], shuffled.tolist())
    assert [f.code for f in found] == ["labels-shuffled"] and found[0].severity == "warning"
    assert found[0].evidence["nn_agreement"] < 0.2
    assert label_findings(x[:100], shuffled[:100].tolist()) == []  # too few to say
    assert label_findings(x[:600], (y[:600] + 0.5).tolist()) == []  # regression values


def test_labels_probe_sees_a_weak_linear_signal():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    x = rng.normal(0, 1, (500, 256)) + 0.15 * y[:, None] * np.linspace(-1, 1, 256)[None]
    assert label_findings(x, y.tolist()) == []  # 1-NN misses it, the class means do not


def test_check_dataset_names_shuffled_labels(digits):
    x, y = digits
    images = torch.as_tensor(x.reshape(-1, 1, 8, 8), dtype=torch.float32)
    ok = torch.utils.data.TensorDataset(images, torch.as_tensor(y))
    bad = torch.utils.data.TensorDataset(images, torch.as_tensor(np.random.default_rng(1)
                                                                 .permutation(y)))
    assert "labels-shuffled" not in vd.check_dataset(ok).codes
    assert "labels-shuffled" in vd.check_dataset(bad).codes
    assert "labels-shuffled" not in vd.check_batch((images[:64], torch.as_tensor(y[:64]))).codes
