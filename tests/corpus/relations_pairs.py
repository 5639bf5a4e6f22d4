"""Faults that are relations: inputs and targets out of step (image and mask lists from an unsorted glob, an augmentation applied to the image and not its mask, labels shuffled apart from their inputs). Each from a public report, with its fixed twin;
``fixed=False`` runs the code as reported, ``True`` the fix."""

from __future__ import annotations

from . import Fault

FAULTS: list[Fault] = []
