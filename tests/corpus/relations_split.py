"""Faults that are relations: leakage beyond exact copies (oversampling before the split, overlapping windows in both splits, test times inside the training range, identifier columns, groups in both splits). Each from a public report, with its fixed twin;
``fixed=False`` runs the code as reported, ``True`` the fix."""

from __future__ import annotations

from . import Fault

FAULTS: list[Fault] = []
