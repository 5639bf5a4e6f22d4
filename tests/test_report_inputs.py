"""report() meets odd containers with a clear error, never a RecursionError (issue 25)."""

from __future__ import annotations

import numpy as np
import pytest

import vizdebug as vd
from vizdebug.errors import VizdebugTypeError


def _deep(n: int) -> list:
    top = cur = []
    for _ in range(n):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    return top


def test_a_list_that_contains_itself_is_refused(tmp_path):
    parts: list = [vd.Findings()]
    parts.append(parts)
    with pytest.raises(VizdebugTypeError, match="contains itself"):
        vd.report(parts, tmp_path / "r.html", progress=False)
    assert not (tmp_path / "r.html").exists()


def test_lists_nested_a_thousand_deep_are_refused(tmp_path):
    with pytest.raises(VizdebugTypeError, match="nested more than"):
        vd.report(_deep(1000), tmp_path / "r.html", progress=False)


def test_a_class_is_refused_with_what_to_pass(tmp_path):
    with pytest.raises(VizdebugTypeError, match="the class Session itself"):
        vd.report(vd.Session, tmp_path / "r.html", progress=False)


def test_the_same_view_twice_and_a_little_nesting_still_report(tmp_path):
    view = vd.show_batch(np.random.default_rng(0).random((4, 1, 8, 8)))
    out = vd.report([view, [view, (vd.Findings(),)]], tmp_path / "r.html", progress=False)
    assert out.read_text(encoding="utf-8").count("<section>") == 3
