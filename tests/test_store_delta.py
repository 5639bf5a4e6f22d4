"""The store writes what it is handed (RunDelta) and knows nothing of collect/."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import torch

import vizdebug as vd
from vizdebug.records import (
    ACTIVATION_FIELDS,
    AnomalyEvent,
    LoaderRecord,
    RunDelta,
    TrainingSource,
)
from vizdebug.store import writer as store_writer

PACKAGE = Path(vd.__file__).resolve().parent


def _imports(path: Path) -> set[str]:
    """Every module a file imports (relative ones resolved), at any depth of the file."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = list(parts[:len(parts) - node.level]) if node.level else []
            name = ".".join([*base, node.module] if node.module else base)
            out.add(name)
            out.update(f"{name}.{alias.name}" for alias in node.names)
    return out


def test_the_store_imports_neither_collect_nor_views_nor_the_package_face():
    for path in (PACKAGE / "store").glob("*.py"):
        imported = _imports(path)
        assert not [m for m in imported if m.startswith(("vizdebug.collect", "vizdebug.views"))], path
        assert "vizdebug.__version__" not in imported, path
    for path in (PACKAGE / "records").glob("*.py"):  # the bottom: imports only itself
        imported = _imports(path)
        assert not [m for m in imported if m.startswith("vizdebug")
                    and not m.startswith("vizdebug.records")], path


def test_a_writer_writes_a_hand_fed_delta_without_a_session(tmp_path):
    path = tmp_path / "hand.sqlite"
    meta = {"module_paths": ["fc"], "module_classes": ["Linear"], "param_paths": ["fc.weight"],
            "param_numel": [6], "every": 1, "vizdebug_version": "9.9"}
    writer = store_writer.RunWriter(path, RunDelta(meta=meta))
    rows = np.random.default_rng(0).random((2, 1, len(ACTIVATION_FIELDS)))
    writer.hand(RunDelta(
        scalars=[(np.array([0, 1]), ("loss", "loss"), np.array([0.5, np.nan]), np.zeros(2))],
        samples=[("activations", np.array([0, 1]), rows)],
        system=[(1.0, 50.0, 100.0, np.nan)],
        events=[AnomalyEvent(kind="nonfinite-activation", step=1, module_path="fc",
                             module_class="Linear", message="NaN in fc")],
        errors=[("the loader tap", "boom", 2)],
        loader=LoaderRecord(batches=3, batch_steps=np.arange(3)),
        batch=[np.zeros((4, 1, 2, 2)), np.arange(4)]))
    writer.close()
    run = vd.open_run(path)
    rec = run.records()
    assert run.state == "closed" and run.meta["vizdebug_version"] == "9.9"
    assert rec.scalars["loss"][0].tolist() == [0, 1] and np.isnan(rec.scalars["loss"][1][1])
    np.testing.assert_array_equal(rec.act_steps, [0, 1])
    np.testing.assert_allclose(rec.activations, rows.astype(rec.activations.dtype))
    assert rec.errors == [("the loader tap", "boom", 2)] and rec.events[0].kind == "nonfinite-activation"
    assert rec.loader.batches == 3 and rec.loader.batch_steps.tolist() == [0, 1, 2]
    x, y = run.captured_batches()[0]
    assert x.shape == (4, 1, 2, 2) and y.tolist() == [0, 1, 2, 3]
    assert run.system.array().shape == (1, 4)


def test_what_a_failed_write_was_handed_goes_again_with_the_next(tmp_path, monkeypatch):
    path = tmp_path / "retry.sqlite"
    failed = []
    original = store_writer.RunWriter._write_samples

    def flaky(self, conn, samples):
        if samples and not failed:  # the first write that holds sampled rows
            failed.append(len(samples))
            raise OSError("disk full (injected)")
        return original(self, conn, samples)

    monkeypatch.setattr(store_writer.RunWriter, "_write_samples", flaky)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU())
    with vd.watch(model, store=path, every=1) as session:
        for _ in range(4):
            model(torch.randn(8, 3)).sum().backward()
            session.log(loss=1.0)
        session.store.tick()  # fails: the rows it took must not be lost
        session.store.tick()
    live, stored = session.records(), vd.open_run(path).records()
    assert failed and any("disk full" in e[1] for e in live.errors)
    np.testing.assert_array_equal(stored.act_steps, live.act_steps)
    np.testing.assert_array_equal(stored.activations, live.activations)


def test_a_dict_batch_with_the_label_first_is_stored_input_first(tmp_path):
    class Digits(torch.utils.data.Dataset):
        def __len__(self):
            return 64

        def __getitem__(self, i):
            return {"label": i % 10, "image": torch.full((1, 4, 4), float(i))}

    path = tmp_path / "dict.sqlite"
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 10))
    loader = torch.utils.data.DataLoader(Digits(), batch_size=16)
    with vd.watch(model, loader=loader, store=path) as session:
        for batch in loader:
            loss = torch.nn.functional.cross_entropy(model(batch["image"]), batch["label"])
            loss.backward()
            session.log(loss=loss)
    x, y = vd.open_run(path).captured_batches()[-1]
    assert x.shape == (16, 1, 4, 4) and y.shape == (16,) and y.dtype == np.int64


def test_a_session_and_a_stored_run_are_training_sources(tmp_path):
    path = tmp_path / "src.sqlite"
    model = torch.nn.Linear(3, 1)
    with vd.watch(model, store=path) as session:
        session.log(loss=1.0)
    assert isinstance(session, TrainingSource)
    assert isinstance(vd.open_run(path), TrainingSource)
