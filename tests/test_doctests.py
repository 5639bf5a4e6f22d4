"""The Examples sections of the docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "vizdebug.findings", "vizdebug.views.batch", "vizdebug.analysis.input_checks",
    "vizdebug.analysis.images", "vizdebug.report", "vizdebug.data.batch",
    "vizdebug.data.layout", "vizdebug.data.arrays",
    "vizdebug.collect.anomaly", "vizdebug.collect.fused", "vizdebug.collect.hooks",
    "vizdebug.collect.clock", "vizdebug.collect.crash", "vizdebug.collect.gradients",
    "vizdebug.collect.outputs", "vizdebug.collect.pending", "vizdebug.analysis.activations",
    "vizdebug.collect.loader", "vizdebug.collect.samples", "vizdebug.collect.sampling",
    "vizdebug.collect.scalars", "vizdebug.collect.session", "vizdebug.collect.stats",
    "vizdebug.collect.system", "vizdebug.analysis.curves", "vizdebug.analysis.training",
    "vizdebug.records", "vizdebug.analysis.dataset_scan", "vizdebug.views._dashboard_figure",
    "vizdebug.views._dashboard_curves", "vizdebug.views._dashboard_delta",
    "vizdebug.analysis.drift", "vizdebug.data.tables", "vizdebug.data.parquet",
    "vizdebug.analysis.drift_findings",
    "vizdebug.analysis.drift_compare", "vizdebug.analysis.drift_time",
    "vizdebug.analysis.sketches", "vizdebug.analysis.streaming", "vizdebug.views.drift",
    "vizdebug.analysis.splits", "vizdebug.analysis.predictions", "vizdebug.views.predictions",
    "vizdebug.reproducibility", "vizdebug.analysis.loss_checks",
    "vizdebug.analysis.embeddings", "vizdebug.analysis.embeddings_quality",
    "vizdebug.analysis.embeddings_findings", "vizdebug.views.embeddings",
    "vizdebug.views.embeddings_data", "vizdebug.analysis.top_losses",
    "vizdebug.views.top_losses",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
