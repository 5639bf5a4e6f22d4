"""vizdebug: visual debugging for models trained in notebooks.

The public face only re-exports; heavy imports (torch, plotly, umap) happen inside the
functions that need them.
"""

from __future__ import annotations

from .errors import AnomalyError, VizdebugError, VizdebugTypeError
from .findings import Finding, Findings

__version__ = "0.1.0"

__all__ = [
    "AnomalyError",
    "Finding",
    "Findings",
    "VizdebugError",
    "VizdebugTypeError",
]
