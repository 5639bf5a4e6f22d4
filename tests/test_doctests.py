"""The Examples sections of the docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "vizdebug.findings", "vizdebug.views.batch", "vizdebug.analysis.datasets.input_checks",
    "vizdebug.analysis.datasets.images", "vizdebug.report", "vizdebug.data.batch",
    "vizdebug.data.layout", "vizdebug.data.arrays",
    "vizdebug.collect.checks.anomaly", "vizdebug.collect.hooks.fused", "vizdebug.collect.hooks.engine",
    "vizdebug.collect.hooks.clock", "vizdebug.collect.checks.crash", "vizdebug.collect.hooks.gradients",
    "vizdebug.collect.hooks.outputs", "vizdebug.collect.hooks.pending", "vizdebug.analysis.training.activations",
    "vizdebug.collect.taps.loader", "vizdebug.collect.hooks.samples", "vizdebug.collect.hooks.sampling",
    "vizdebug.collect.taps.scalars", "vizdebug.collect.session.core", "vizdebug.collect.session.watch", "vizdebug.collect.taps.program", "vizdebug.collect.taps.axes", "vizdebug.collect.hooks.stats",
    "vizdebug.collect.taps.system", "vizdebug.analysis.curves", "vizdebug.analysis.training.diagnose",
    "vizdebug.records.training", "vizdebug.records.program", "vizdebug.records.series",
    "vizdebug.records.delta", "vizdebug.analysis.training.profile", "vizdebug.analysis.training.events", "vizdebug.records.events", "vizdebug.records.loader", "vizdebug.analysis.datasets.scan", "vizdebug.views._dashboard_figure",
    "vizdebug.views._dashboard_curves", "vizdebug.views._dashboard_delta",
    "vizdebug.analysis.drift.stats", "vizdebug.data.tables", "vizdebug.data.parquet",
    "vizdebug.analysis.drift.findings",
    "vizdebug.analysis.drift.compare", "vizdebug.analysis.drift.windows",
    "vizdebug.analysis.drift.sketches", "vizdebug.analysis.drift.streaming", "vizdebug.views.drift",
    "vizdebug.analysis.datasets.splits", "vizdebug.analysis.datasets.predictions", "vizdebug.views.predictions",
    "vizdebug.reproducibility", "vizdebug.analysis.training.loss_checks",
    "vizdebug.analysis.embeddings.project", "vizdebug.analysis.embeddings.quality",
    "vizdebug.analysis.embeddings.findings", "vizdebug.views.embeddings",
    "vizdebug.views.embeddings_data", "vizdebug.analysis.datasets.top_losses",
    "vizdebug.views.top_losses",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
