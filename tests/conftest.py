from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("VIZDEBUG_RENDERER", "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the browser tests, naming what is missing, where Chromium is not installed (a
    plain ``pip install -e ".[test]"``); ``VIZDEBUG_REQUIRE_BROWSER=1`` (CI) runs them
    anyway, so that a missing browser fails instead of passing unseen."""
    chromium = os.environ.get("VIZDEBUG_CHROMIUM", "/usr/bin/chromium")
    if os.access(chromium, os.X_OK) or os.environ.get("VIZDEBUG_REQUIRE_BROWSER") == "1":
        return
    skip = pytest.mark.skip(reason=f"{chromium} not found: apt-get install chromium, or set "
                                   "VIZDEBUG_CHROMIUM to a Chromium binary")
    for item in items:
        if item.get_closest_marker("browser") is not None:
            item.add_marker(skip)


@pytest.fixture
def digits():
    """Digits as (images N x 1 x 8 x 8 float32 in 0-16, labels)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return d.images.astype(np.float32)[:, None], d.target


@pytest.fixture
def digits_std(digits):
    """Digits standardised, as a clean pipeline feeds them."""
    x, y = digits
    return (x - 4.88) / 6.02, y
