"""Session.log storage: cheap appends, lazy tensor reads, bounded memory, clear errors."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest
import torch

from vizdebug.collect.taps.scalars import ScalarLog
from vizdebug.errors import VizdebugError, VizdebugTypeError
from vizdebug.records import Series


def test_steps_count_themselves_and_eval_metrics_join_the_last_step():
    log = ScalarLog()
    for v in (1.0, 0.5, 0.25):
        log.log(loss=v)
    log.log(val_loss=0.4, val_acc=0.9, epoch=0)
    log.log(loss=0.2)
    assert log.series("loss")[0].tolist() == [0, 1, 2, 3]
    assert log.series("val_loss")[0].tolist() == [2]
    assert log.series("epoch")[0].tolist() == [2]


def test_explicit_step_moves_the_counter():
    log = ScalarLog()
    log.log(10, loss=1.0)
    log.log(loss=2.0)
    assert log.series("loss")[0].tolist() == [10, 11]


def test_tensors_are_detached_and_read_in_one_batch():
    log = ScalarLog(chunk=10_000)
    w = torch.ones(3, requires_grad=True)
    loss = (w * 2).sum()
    log.log(loss=loss, acc=torch.tensor(0.5), n=torch.tensor(7))
    pending = list(log._pending)
    assert all(not getattr(v, "requires_grad", False) for _, _, v, _ in pending)
    assert log.series("loss")[1].tolist() == [6.0]
    assert log.series("n")[1].tolist() == [7.0]


def test_tensor_batches_of_mixed_dtypes_and_shapes_are_read_exactly():
    log = ScalarLog(chunk=10_000)
    big = 2**40 + 1  # not exact in float32: int64 tensors must not be stacked with floats
    for i in range(3):
        log.log(loss=torch.tensor(0.25 * i), count=torch.tensor(big + i),
                one=torch.tensor([1.5 + i]), half=torch.tensor(0.5, dtype=torch.float16))
    assert log.series("loss")[1].tolist() == [0.0, 0.25, 0.5]
    assert log.series("count")[1].tolist() == [float(big), float(big + 1), float(big + 2)]
    assert log.series("one")[1].tolist() == [1.5, 2.5, 3.5]
    assert log.series("half")[1].tolist() == [0.5, 0.5, 0.5]
    only = ScalarLog(chunk=10_000)
    for i in range(5):  # one dtype: the single-stack path
        only.log(loss=torch.tensor(float(i)) / 4)
    assert only.series("loss")[1].tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    shapes = ScalarLog(chunk=10_000)
    for value in (torch.tensor(1.0), torch.tensor([2.0]), torch.ones(1, 1)):
        shapes.log(a=value)
    assert shapes.series("a")[1].tolist() == [1.0, 2.0, 1.0]


class _OnDevice(torch.Tensor):
    """A stand-in for a GPU tensor on a CPU-only machine (a meta tensor, which has no value
    to read later, is refused at the call)."""

    @property
    def is_cpu(self) -> bool:
        return False


def test_a_cpu_tensor_is_read_at_once_and_a_device_tensor_is_kept_unread():
    log = ScalarLog(chunk=10_000)
    w = torch.tensor(0.1, requires_grad=True)
    for value in (torch.tensor(0.75), w * 3, torch.tensor([2**40 + 1]),
                  torch.tensor(0.1, dtype=torch.bfloat16), torch.tensor(1.5 + 2j)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # item() on a tensor with a graph: no warning
            log.log(acc=value)
    pending = [v for _, _, v, _ in log._pending]
    assert all(type(v) in (float, int) for v in pending)  # nothing of a tensor is kept
    assert pending == [0.75, (w * 3).item(), 2**40 + 1, 0.10009765625, 1.5]
    on_device = torch.tensor(0.5).as_subclass(_OnDevice)  # not the CPU: never read in log()
    graph = torch.tensor(0.5, requires_grad=True).as_subclass(_OnDevice) * 2
    log.log(acc=on_device)
    log.log(acc=graph)
    assert log._pending[-2][2] is on_device  # no new tensor object per call
    assert log._pending[-1][2] is not graph and not log._pending[-1][2].requires_grad


def test_logged_tensor_does_not_keep_the_autograd_graph_alive():
    log = ScalarLog(chunk=10_000)
    x = torch.randn(4, requires_grad=True)
    hidden = x * 3
    saved = hidden * hidden  # the graph saves `hidden` for backward
    ref = weakref.ref(hidden)
    log.log(loss=saved.sum())
    del hidden, saved
    gc.collect()
    assert ref() is None  # only a detached value was kept


def test_nan_and_inf_are_recorded_not_rejected():
    log = ScalarLog()
    log.log(loss=float("nan"))
    log.log(loss=torch.tensor(float("inf")))
    log.log(loss=np.float32(1.5))
    values = log.series("loss")[1]
    assert np.isnan(values[0]) and np.isinf(values[1]) and values[2] == 1.5


@pytest.mark.parametrize("bad, pattern", [
    ("abc", "got str"),
    ([1.0, 2.0], "got list"),
    (None, "got NoneType"),
    (torch.ones(3), "shape \\(3,\\)"),
    (np.array(["x"]), "got numpy.ndarray"),
])
def test_bad_values_raise_clear_errors(bad, pattern):
    log = ScalarLog()
    with pytest.raises(VizdebugError, match=pattern) as info:
        log.log(loss=bad)
    assert "loss" in str(info.value)


def test_bad_step_is_a_type_error():
    with pytest.raises(VizdebugTypeError, match="step must be an int"):
        ScalarLog().log("3", loss=1.0)


def test_unknown_metric_lists_what_was_logged():
    log = ScalarLog()
    log.log(loss=1.0)
    with pytest.raises(VizdebugError, match="logged: loss"):
        log.series("acc")


def test_a_million_steps_stay_bounded_and_keep_extremes():
    log = ScalarLog(capacity=2000, chunk=4096)
    spike_at, nan_at = 400_000, 900_000
    for step in range(1_000_000):
        if step == spike_at:
            log.log(loss=1e6)
        elif step == nan_at:
            log.log(loss=float("nan"))
        else:
            log.log(loss=1.0 / (1 + step))
    assert log.stored_points() <= 2000 + 4096
    steps, values, _ = log.series("loss")
    assert steps.size <= 2000
    assert np.nanmax(values) == 1e6 and spike_at in steps
    assert nan_at in steps[np.isnan(values)]
    assert steps[0] == 0 and steps[-1] == 999_999
    assert log._series["loss"].total == 1_000_000


def test_series_compaction_halves_and_keeps_order():
    s = Series(8)
    s.extend(np.arange(20), np.arange(20.0), np.zeros(20))
    step, value, _ = s.arrays()
    assert step.size <= 8 and np.all(np.diff(step) > 0) and step[-1] == 19


@pytest.mark.parametrize("kwargs, pattern", [
    ({"loss": 10**400}, "loss=.*int of 1329 bits.*does not fit in a float"),
    ({"loss": torch.empty((), device="meta")}, "loss=.*meta tensor"),
    ({"step": 2**70, "loss": 1.0}, "step=an int of 71 bits is out of range"),
    ({"step": 1.5, "loss": 1.0}, "step must be an int or None, got float"),
    ({"loss": np.zeros(3)}, "loss=.*shape \\(3,\\).*reduce it first"),
    ({"loss": object()}, "loss=.*takes a number"),
    ({"loss": 1 + 2j}, "loss=.*takes a number"),
    ({"loss": torch.tensor(1 + 2j)}, "loss=.*takes a real number.*abs\\(\\)"),
])
def test_a_value_that_could_not_be_stored_later_is_refused_at_the_call(kwargs, pattern):
    """Issue 10 item 1: accepted values never crash a later log() (which used to raise
    OverflowError from the pending chunk and lose it); a refused call logs nothing."""
    log = ScalarLog(chunk=4)
    log.log(loss=0.5)
    with pytest.raises(VizdebugError, match=pattern):
        log.log(**kwargs)
    with pytest.raises(VizdebugError, match=pattern):
        log.log(acc=1.0, **kwargs)  # the valid value before the refused one goes too
    assert log.next_step == 1 and "acc" not in log.names()
    for _ in range(10):
        log.log(loss=0.25)  # the chunk resolves: nothing raises, nothing is lost
    steps, values, _ = log.series("loss")
    assert steps.tolist() == list(range(11)) and values[0] == 0.5


def test_numbers_of_every_kind_that_fit_are_accepted():
    log = ScalarLog(chunk=3)
    from fractions import Fraction

    for value in (np.array([1.0]), np.array([[2]]), np.float32(3), Fraction(1, 4), True, 2**900,
                  float("inf"), np.uint64(2**64 - 1)):
        log.log(loss=value)
    log.log(step=np.int64(20), loss=1.0)
    log.log(step=torch.tensor(21), loss=1.0)
    steps, values, _ = log.series("loss")
    assert values[:4].tolist() == [1.0, 2.0, 3.0, 0.25] and values[5] == 2.0**900
    assert steps[-2:].tolist() == [20, 21]


def test_a_value_that_cannot_be_read_any_more_loses_only_itself():
    log = ScalarLog(chunk=10_000)
    log.log(loss=1.0)
    log._pending.append((1, "loss", torch.empty((), device="meta"), 0.0))  # unreadable now
    log.log(loss=3.0)
    _, values, _ = log.series("loss")
    assert values[0] == 1.0 and np.isnan(values[1]) and values[2] == 3.0


def test_many_distinct_metric_names_stay_fast():
    import time

    import torch.nn as nn

    import vizdebug as vd

    session = vd.watch(nn.Linear(2, 2))
    start = time.perf_counter()
    for i in range(5000):
        session.log(**{f"m{i}": float(i)})
    frame = session.scalars()
    session.close()
    assert len(frame) == 5000 and set(frame.columns) == {"step", "name", "value", "time", "rank"}
    assert frame.loc[frame["name"] == "m4999", "value"].item() == 4999.0
    assert time.perf_counter() - start < 5  # was O(names^2) in log() and a frame per name


def test_a_metric_may_be_called_self():
    """Found by the property tests: log(self=...) collided with the method's own name."""
    log = ScalarLog()
    log.log(self=1.0)
    log.log(step=5, loss=2.0)
    assert log.series("self")[1].tolist() == [1.0] and log.series("loss")[0].tolist() == [5]
