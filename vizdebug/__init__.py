"""vizdebug: visual debugging for models trained in notebooks.

The public face only re-exports; heavy imports (torch, plotly, umap) happen inside the
functions that need them. The data and drift side runs on numpy alone; the training side
(``watch``, ``show_top_losses``, the demo) needs torch, the ``vizdebug[torch]`` extra, and
says so with the ``pip install`` line when torch is missing.
"""

from __future__ import annotations

from ._version import __version__ as __version__
from .analysis.datasets.input_checks import check_batch
from .analysis.datasets.predictions import check_predictions
from .analysis.datasets.scan import check_dataset
from .analysis.datasets.splits import check_split
from .collect.session.core import Session
from .collect.session.watch import watch
from .errors import AnomalyError, VizdebugError, VizdebugTypeError
from .findings import Finding, Findings
from .report import report
from .reproducibility import environment, set_seed
from .store import Run, open_run
from .views.batch import BatchView, show_batch
from .views.compare import CompareRuns, compare_runs
from .views.drift import DriftView, compare_distributions
from .views.embedding_timeline import EmbeddingTimelineView, show_embedding_frames
from .views.embeddings import EmbeddingView, show_embeddings
from .views.lr_find import LRFinderView, lr_find
from .views.predictions import PredictionView, show_predictions
from .views.ranks import RanksView, show_ranks
from .views.top_losses import show_top_losses

__all__ = [
    "AnomalyError",
    "BatchView",
    "CompareRuns",
    "DriftView",
    "EmbeddingTimelineView",
    "EmbeddingView",
    "Finding",
    "Findings",
    "LRFinderView",
    "PredictionView",
    "RanksView",
    "Run",
    "Session",
    "VizdebugError",
    "VizdebugTypeError",
    "check_batch",
    "check_dataset",
    "check_predictions",
    "check_split",
    "compare_runs",
    "compare_distributions",
    "environment",
    "lr_find",
    "open_run",
    "report",
    "set_seed",
    "show_batch",
    "show_embedding_frames",
    "show_embeddings",
    "show_predictions",
    "show_ranks",
    "show_top_losses",
    "watch",
]
