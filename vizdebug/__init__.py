"""vizdebug: visual debugging for models trained in notebooks.

The public face only re-exports; heavy imports (torch, plotly, umap) happen inside the
functions that need them.
"""

from __future__ import annotations

from ._version import __version__ as __version__
from .analysis.dataset_scan import check_dataset
from .analysis.input_checks import check_batch
from .collect.session import Session, watch
from .errors import AnomalyError, VizdebugError, VizdebugTypeError
from .findings import Finding, Findings
from .report import report
from .store import Run, open_run
from .views.batch import BatchView, show_batch
from .views.drift import DriftView, compare_distributions

__all__ = [
    "AnomalyError",
    "BatchView",
    "DriftView",
    "Finding",
    "Findings",
    "Run",
    "Session",
    "VizdebugError",
    "VizdebugTypeError",
    "check_batch",
    "check_dataset",
    "compare_distributions",
    "open_run",
    "report",
    "show_batch",
    "watch",
]
