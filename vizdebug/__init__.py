"""vizdebug: visual debugging for models trained in notebooks.

The public face only re-exports; heavy imports (torch, plotly, umap) happen inside the
functions that need them.
"""

from __future__ import annotations

from .analysis.input_checks import check_batch, check_dataset
from .errors import AnomalyError, VizdebugError, VizdebugTypeError
from .findings import Finding, Findings
from .report import report
from .views.batch import BatchView, show_batch

__version__ = "0.1.0"

__all__ = [
    "AnomalyError",
    "BatchView",
    "Finding",
    "Findings",
    "VizdebugError",
    "VizdebugTypeError",
    "check_batch",
    "check_dataset",
    "report",
    "show_batch",
]
