"""Real ``torch.distributed`` jobs (gloo on the CPU, one spawned process per rank, DDP on a
tiny model with a BatchNorm, each rank watched with a store; see tests/ranks_jobs.py):
a clean 4-rank job gives no warning, and each planted fault is named with its rank. Each
job takes 10-90 s (four spawned interpreters importing torch on 2 busy cores)."""

from __future__ import annotations

import numpy as np
import pytest

import vizdebug as vd
from tests.ranks_jobs import NAN_STEP, SLEEP, run_job
from vizdebug.store.job import Job

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::FutureWarning")]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jobs")
    return folder


def _job(folder, name: str, world: int, fault: str, steps: int = 48) -> Job:
    path = folder / f"{name}.sqlite"
    if not path.exists():
        run_job(str(path), world, fault, steps)
    job = vd.open_run(path)
    assert isinstance(job, Job) and sorted(job.ranks) == list(range(world))
    return job


def test_a_clean_four_rank_job_is_quiet(jobs):
    job = _job(jobs, "clean", 4, "")
    found = job.findings()
    assert found.at_least("warning") == [], found
    df = job.scalars()
    assert sorted(df["rank"].unique()) == [0, 1, 2, 3]
    assert (df.groupby("rank").size() == 48).all()
    data = job.rank_data()
    assert all(d.times is not None and d.replicas is not None for d in data)
    assert [r.straggler for r in vd.show_ranks(job).stragglers] == [False] * 4
    first = data[0].replicas.values  # identical replicas: the same bits on every rank
    assert all(np.array_equal(first, d.replicas.values, equal_nan=True) for d in data[1:])


def test_a_sleeping_rank_and_its_drifting_batchnorm_are_named(jobs):
    """Rank 1 sleeps before each forward pass, and DDP broadcasts no buffers while each
    rank's data has its own mean: the straggler is rank 1, and the BatchNorm's running
    statistics part (its weights stay identical)."""
    job = _job(jobs, "slow_drift", 2, "slow,drift")
    found = {f.code: f for f in job.findings()}
    straggler = found["rank-straggler"]
    assert straggler.where == "rank 1" and straggler.evidence["held_s"] > SLEEP / 2
    drift = found["replica-drift"]
    assert drift.where in ("1.running_mean", "1.running_var") and drift.evidence["ranks"] == [1]
    assert set(drift.evidence["tensors"]) <= {"1.running_mean", "1.running_var"}
    assert "rank-nonfinite" not in found


def test_a_nan_on_one_rank_is_named_with_its_rank_and_step(jobs):
    job = _job(jobs, "nan", 2, "nan", steps=24)
    found = {f.code: f for f in job.findings()}
    first = found["rank-nonfinite"]
    assert first.where == "rank 1: loss" and first.evidence["step"] == NAN_STEP
    assert f"on rank 1 at step {NAN_STEP}" in first.message
    assert first.evidence["first_step_by_rank"]["0"] > NAN_STEP  # rank 0 after the all-reduce
    assert "rank-straggler" not in found and "replica-drift" not in found


def test_the_merged_view_and_report_of_a_real_job(jobs, tmp_path):
    job = _job(jobs, "slow_drift", 2, "slow,drift")
    html = vd.show_ranks(job).to_html()
    assert "2 of 2 ranks" in html and "straggler" in html and "<svg" in html
    page = vd.report(job, tmp_path / "job.html").read_text()
    assert "rank-straggler" in page or "holds the other ranks up" in page


def test_a_parameter_ddp_does_not_synchronise_drifts_and_is_named(jobs):
    """DDP ignores the last layer's weight (``_ddp_params_and_buffers_to_ignore``) and
    nothing else synchronises it: from the first step each rank's copy is its own."""
    job = _job(jobs, "ignored", 2, "ignored", steps=24)
    found = {f.code: f for f in job.findings()}
    drift = found["replica-drift"]
    assert drift.where == "3.weight" and drift.evidence["ranks"] == [1]
    assert drift.evidence["first_step"] == 1  # identical at step 0, apart after one step
    assert "_ddp_params_and_buffers_to_ignore" in drift.hint
    assert "rank-straggler" not in found and "rank-nonfinite" not in found
