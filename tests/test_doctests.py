"""The Examples sections of the public docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "vizdebug.findings", "vizdebug.views.batch", "vizdebug.analysis.input_checks",
    "vizdebug.analysis.images", "vizdebug.report", "vizdebug.data.batch",
    "vizdebug.data.layout", "vizdebug.data.arrays",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
