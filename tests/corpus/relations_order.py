"""Faults that are relations: axis order (an RNN with batch_first=False fed (batch, time, feature); view/reshape instead of permute; a transformer fed (batch, seq, embed) when it expects (seq, batch, embed)). Each from a public report, with its fixed twin;
``fixed=False`` runs the code as reported, ``True`` the fix."""

from __future__ import annotations

from . import Fault

FAULTS: list[Fault] = []
