from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("VIZDEBUG_RENDERER", "")


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
