from __future__ import annotations

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.errors import VizdebugError


def test_clean_standardised_batch_is_quiet(digits_std):
    x, y = digits_std
    assert vd.check_batch((torch.tensor(x[:64]), torch.tensor(y[:64]))).at_least("warning") == []
    assert vd.check_batch(torch.rand(32, 3, 16, 16)).at_least("warning") == []


def test_each_problem_named_with_indices(digits_std):
    x, y = digits_std
    bad = torch.tensor(x[:64]).clone()
    bad[4] = 0.0
    bad[9, 0, 3, 3] = float("nan")
    fs = vd.check_batch((bad, torch.tensor(y[:64])))
    by_code = {f.code: f for f in fs}
    assert by_code["blank-images"].evidence["indices"] == [4]
    assert by_code["input-nonfinite"].evidence["indices"] == [9]
    assert by_code["input-nonfinite"].severity == "error"
    assert "crop" in by_code["blank-images"].hint


def test_unnormalised_raw_digits(digits):
    f = vd.check_batch(torch.tensor(digits[0][:64]))
    assert f.codes == ["input-not-normalized"]
    assert "16" in f[0].message and "Normalize" in f[0].hint


def test_uint8_batches_are_named_at_info():
    """A fact about the data: whether it hurts depends on the model (a forward may scale
    its input itself); vd.watch judges that (tests/test_input_relations.py)."""
    x = (np.random.rand(8, 3, 16, 16) * 255).astype(np.uint8)
    for batch in (torch.from_numpy(x), x):
        found = vd.check_batch(batch)
        assert found.codes == ["input-not-normalized"] and found.warnings == []


def test_channels_last_tensor():
    f = vd.check_batch(torch.rand(16, 28, 28, 3))
    assert f.codes == ["layout-channels-last"]
    # info: a model may permute its input itself; vd.watch checks what the convolution gets
    assert "permute(0, 3, 1, 2)" in f[0].hint and f[0].severity == "info"


def test_mean_std_given_means_saturation_is_real():
    x = torch.rand(8, 3, 16, 16)
    mean, std = [0.5] * 3, [0.25] * 3
    normed = (x - 0.5) / 0.25
    assert vd.check_batch(normed, mean=mean, std=std).codes == []
    blown = (torch.clamp(x * 4, 0, 1) - 0.5) / 0.25
    assert vd.check_batch(blown, mean=mean, std=std).codes == ["saturated-images"]


def test_unshuffled_loader_batch_of_one_class(digits_std):
    x, y = digits_std
    order = np.argsort(y, kind="stable")
    f = vd.check_batch((torch.tensor(x[order][:32]), torch.tensor(y[order][:32])))
    assert f.codes == ["label-imbalance"] and "shuffle=True" in f[0].hint


class _Digits(torch.utils.data.Dataset):
    def __init__(self, x, y, broken=()):
        self.x, self.y, self.broken = x, y, set(broken)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if i in self.broken:
            return None  # the classic: a branch that forgot to return
        return torch.tensor(self.x[i]), int(self.y[i])


def test_check_dataset_clean_is_quiet(digits_std):
    assert vd.check_dataset(_Digits(*digits_std)).at_least("warning") == []


def test_check_dataset_names_none_nan_shape(digits_std):
    x, y = digits_std
    x = x.copy()
    x[11, 0, 0, 0] = np.inf
    ds = _Digits(x, y, broken=[3, 500])
    items = [ds[i] for i in range(len(ds))]
    items[20] = (torch.zeros(1, 9, 9), 1)
    fs = vd.check_dataset(items, sample=5000)
    by = {f.code: f for f in fs}
    assert by["input-none"].evidence["indices"] == [3, 500]
    assert by["input-nonfinite"].evidence["indices"] == [11]
    assert by["shape-inconsistent"].evidence["indices"] == [20]


def test_check_dataset_through_a_loader_and_sampling(digits_std):
    loader = torch.utils.data.DataLoader(_Digits(*digits_std, broken=[7]), batch_size=32)
    fs = vd.check_dataset(loader, sample=2000)
    assert fs.codes == ["input-none"]
    small = vd.check_dataset(_Digits(*digits_std, broken=range(0, 1797, 2)), sample=100)
    assert 30 < small[0].evidence["indices"].__len__() < 70


def test_check_dataset_label_imbalance(digits_std):
    x, y = digits_std
    keep = np.concatenate([np.flatnonzero(y == 0), np.flatnonzero(y == 1)[:10]])
    fs = vd.check_dataset((x[keep], y[keep]))
    assert fs.codes == ["label-imbalance"] and fs[0].severity == "warning"
    assert "balanced accuracy" in fs[0].hint


def test_check_dataset_errors_from_getitem_become_findings():
    class Flaky:
        def __len__(self):
            return 10

        def __getitem__(self, i):
            if i == 4:
                raise OSError("cannot read img_4.png")
            return np.random.rand(1, 8, 8), 0

    fs = vd.check_dataset(Flaky())
    assert fs.codes == ["dataset-error"] and "img_4.png" in fs[0].message


@pytest.mark.parametrize(("bad", "pattern"), [
    (None, "got None"), (42, "indexable"), ([], "empty"),
    ((np.zeros((3, 2)), np.zeros(2)), "3 rows but labels 2"),
])
def test_check_dataset_bad_input(bad, pattern):
    with pytest.raises(VizdebugError, match=pattern):
        vd.check_dataset(bad)
    with pytest.raises(VizdebugError, match="positive"):
        vd.check_dataset([1, 2], sample=0)


# Target shapes that working programs use (binary and regression heads, one-hot targets,
# image-to-image pairs): none of them is a fault, so none may draw a warning.
_G = torch.Generator().manual_seed(0)
_X = torch.randn(64, 5, generator=_G)
_BINARY = (torch.arange(64) % 2).float()


@pytest.mark.parametrize("batch", [
    (_X, _BINARY[:, None]),                               # BCEWithLogits head, (N, 1) targets
    (_X, torch.randn(64, 1, generator=_G)),               # regression, (N, 1) targets
    (_X, torch.randn(64, 3, generator=_G)),               # multi-output regression
    (_X, (torch.rand(64, 4, generator=_G) > 0.5).float()),  # multi-label targets
    (torch.rand(8, 1, 8, 8), torch.rand(8, 1, 16, 16)),   # super-resolution pairs
    (torch.rand(8, 3, 8, 8), torch.rand(8, 3, 8, 8)),     # denoising / autoencoder pairs
    (torch.rand(8, 3, 8, 8), torch.randint(0, 4, (8, 8, 8))),  # segmentation masks
], ids=["binary-n1", "regression-n1", "regression-n3", "multilabel", "superres", "denoise",
        "segmentation"])
def test_working_target_shapes_draw_no_warning(batch):
    assert vd.check_batch(batch).at_least("warning") == []


@pytest.mark.parametrize("targets", [
    torch.nn.functional.one_hot(torch.arange(64) % 4).float(),  # one-hot rows
    _BINARY[:, None],                                            # (1,) per item
    torch.randn(64, generator=_G),                               # regression values
    torch.randn(64, 1, generator=_G),
])
def test_working_tensor_datasets_draw_no_warning(targets):
    from torch.utils.data import TensorDataset

    assert vd.check_dataset(TensorDataset(_X, targets)).at_least("warning") == []


def test_one_hot_and_n1_targets_are_read_as_classes():
    from torch.utils.data import TensorDataset

    skewed = torch.tensor([0] * 95 + [1] * 5)
    found = vd.check_dataset(TensorDataset(torch.randn(100, 3), skewed.float()[:, None]))
    assert found.codes == ["label-imbalance"]
    assert found[0].evidence["counts"] == {"0": 95, "1": 5}
    onehot = torch.nn.functional.one_hot(skewed).float()
    assert vd.check_dataset(TensorDataset(torch.randn(100, 3), onehot))[0].evidence["ratio"] == 19


def test_labels_collapsed_to_one_class_are_named():
    """A labelling step that maps every class to one (the reporter divided the label masks
    by 255 along with the images) leaves a dataset that cannot be learned."""
    from torch.utils.data import TensorDataset

    labels = torch.div(torch.arange(64) % 10, 255, rounding_mode="floor")
    found = vd.check_dataset(TensorDataset(torch.rand(64, 1, 8, 8), labels))
    assert found.codes == ["label-imbalance"] and found[0].severity == "warning"
    assert "every one of the 64 sampled labels is 0" in found[0].message


def test_nonfinite_targets_are_named():
    y = torch.randn(32)
    y[[3, 7]] = float("nan")
    found = vd.check_batch((torch.randn(32, 4), y))
    assert found.codes == ["input-nonfinite"]
    assert found[0].evidence == {"indices": [3, 7], "part": "target"}


# -- issue 10: check_dataset arguments and items that are not images ---------------------------

def test_check_dataset_of_plain_numbers_and_every_item():
    assert vd.check_dataset([1, 2, 3]).codes == []
    items = [(np.random.rand(1, 8, 8), i % 2) for i in range(30)]
    items[25] = (np.full((1, 8, 8), np.nan), 1)
    assert "input-nonfinite" not in vd.check_dataset(items, sample=5).codes
    assert "input-nonfinite" in vd.check_dataset(items, sample=None).codes


@pytest.mark.parametrize("kwargs, pattern", [
    ({"sample": 1.5}, "sample must be a whole number or None"),
    ({"sample": True}, "sample must be a whole number"),
    ({"sample": -1}, "positive"),
    ({"seed": None}, "seed must be a whole number"),
])
def test_check_dataset_arguments_are_named(kwargs, pattern):
    with pytest.raises(VizdebugError, match=pattern):
        vd.check_dataset([(np.zeros((1, 8, 8)), 1)], **kwargs)


def test_check_dataset_memory_stays_near_one_copy_of_the_sample():
    """224 px float images: 1000 of them are 574 MB; the scan used to hold them twice and
    copy the finite values once more (1.3 GB); now one copy (traced by tracemalloc)."""
    import tracemalloc

    class Photos:
        def __len__(self):
            return 200

        def __getitem__(self, i):
            return np.random.default_rng(i).random((3, 224, 224), dtype=np.float32) * 300, i % 4

    tracemalloc.start()
    try:
        codes = vd.check_dataset(Photos()).codes
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    one_copy = 200 * 3 * 224 * 224 * 4
    assert "input-not-normalized" in codes
    assert peak < 2.3 * one_copy  # the items, their stacked copy as it fills, small change


def test_segmentation_and_multi_label_datasets_are_read_as_such():
    g = torch.Generator().manual_seed(1)
    seg = [(torch.rand(3, 16, 16, generator=g), torch.randint(0, 3, (16, 16), generator=g))
           for _ in range(40)]
    assert vd.check_dataset(seg).codes == []
    seg[7] = (torch.full((3, 16, 16), float("nan")), seg[7][1])
    found = vd.check_dataset(seg)
    assert found.codes == ["input-nonfinite"] and "7" in found[0].where
    multi = [(torch.rand(3, 8, 8, generator=g), torch.tensor([1.0, 0.0, 1.0])) for _ in range(40)]
    assert vd.check_dataset(multi).codes == []  # no "every label is the same" on sets


def test_table_columns_on_very_different_scales_are_named():
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    x, y = load_breast_cancer(return_X_y=True, as_frame=True)
    found = vd.check_batch((x.iloc[:64], y.iloc[:64]))
    assert found.codes == ["input-not-normalized"] and found[0].where == "worst area"
    scaled = StandardScaler().fit_transform(x)
    assert vd.check_batch((torch.tensor(scaled[:64]), torch.tensor(y.values[:64]))) == []
    flags = np.column_stack([np.random.default_rng(0).normal(size=64), np.arange(64) % 2 * 1000])
    assert vd.check_batch(flags) == []  # a 0/1000 flag column is not a scale


def test_check_dataset_says_a_sample_may_miss_more(digits_std):
    """Counts from a sample say that the whole dataset may hold more; a full scan does not."""
    x, y = digits_std
    x = x.copy()
    x[::40, 0, 0, 0] = np.nan
    ds = _Digits(x, y, broken=range(1, 1797, 50))
    by = {f.code: f for f in vd.check_dataset(ds, sample=1000)}
    none = by["input-none"].message
    assert " of 1,000 sampled items are None (the dataset has 1,797; more may be)" in none
    assert "the dataset has 1,797, more may be" in by["input-nonfinite"].message
    assert by["input-nonfinite"].evidence["dataset_size"] == 1797
    full = {f.code: f for f in vd.check_dataset(ds, sample=None)}
    assert full["input-none"].message.startswith("36 of 1,797 items are None: indices")
    assert "sampled" not in full["input-nonfinite"].message


def test_an_infinite_label_is_no_traceback():
    """Found by the property test: a dataset whose label is inf made the class checks
    raise OverflowError from round(); such a label is no class, the checks go on."""
    items = [(np.random.rand(1, 8, 8).astype(np.float32), float(v))
             for v in [0.0, 1.0, float("inf"), 1.0, float("-inf"), 0.0] * 4]
    found = vd.check_dataset(items)
    assert isinstance(found, vd.Findings)
    found_batch = vd.check_batch((np.random.rand(6, 1, 8, 8), np.array([1.0, np.inf] * 3)))
    assert isinstance(found_batch, vd.Findings)
