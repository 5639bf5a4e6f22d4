"""Working public programs ported small (part b): each cited with its repository,
path and commit or URL, keeping its own loop idioms. vizdebug must give none of them a
warning or an error."""

from __future__ import annotations

from . import Control

CONTROLS: list[Control] = []
