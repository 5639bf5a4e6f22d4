"""Faults that are relations: normalisation over the wrong axis (a softmax/log_softmax over the batch into a classification or custom loss). Each from a public report, with its fixed twin;
``fixed=False`` runs the code as reported, ``True`` the fix."""

from __future__ import annotations

from . import Fault

FAULTS: list[Fault] = []
