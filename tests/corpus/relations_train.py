"""Faults that are relations: training-protocol relations (gradient cuts, BatchNorm modes, GAN data ranges and discriminators that win at once). Each from a public report, with its fixed twin;
``fixed=False`` runs the code as reported, ``True`` the fix."""

from __future__ import annotations

from . import Fault

FAULTS: list[Fault] = []
