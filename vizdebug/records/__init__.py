"""Record types and field tuples shared by every layer: the bottom of the package.

Collectors (``collect/``) produce these records, the store (``store/``) writes and reads
them back, the rules (``analysis/``) read them, the views read a :class:`TrainingSource`.
One module per concern: ``training`` (the field tuples, :class:`TrainingRecords`),
``program`` (:class:`ProgramFacts`: the program's shape, for the training profile),
``series`` (the bounded scalar :class:`Series`), ``source`` (the :class:`TrainingSource`
protocol: a live Session or a stored Run) and ``delta`` (:class:`RunDelta`, what a Session
hands its run store at each write and what a whole run's collectors fold to, turned into
records by :func:`records_from_delta`). Nothing here imports another vizdebug module, so
every layer can import it without a cycle. Pure numpy.
"""

from .delta import (
    MAX_EMBEDDING_DIM,
    MAX_PROBE,
    MAX_THUMB_SIDE,
    EmbeddingFrame,
    EmbeddingProbe,
    RunDelta,
    ScalarChunk,
    records_from_delta,
    scalar_series,
)
from .events import AnomalyEvent
from .loader import LOADER_ARRAYS, LoaderRecord
from .program import (
    MAX_FACT_PATHS,
    MAX_LOSS_FUNCTIONS,
    MAX_OPTIMIZERS,
    OptimizerFacts,
    ProgramFacts,
)
from .series import Series, extreme_indices
from .source import ArraySource, TrainingSource
from .training import (
    ACTIVATION_FIELDS,
    ACTIVATION_STATS,
    BATCH_FIELDS,
    EVAL_PREFIXES,
    GRAD_FIELDS,
    TrainingRecords,
)

__all__ = [
    "ACTIVATION_FIELDS", "ACTIVATION_STATS", "BATCH_FIELDS", "EVAL_PREFIXES", "GRAD_FIELDS",
    "MAX_EMBEDDING_DIM", "MAX_FACT_PATHS", "MAX_LOSS_FUNCTIONS", "MAX_OPTIMIZERS", "MAX_PROBE", "MAX_THUMB_SIDE",
    "AnomalyEvent", "ArraySource", "EmbeddingFrame", "EmbeddingProbe", "LOADER_ARRAYS", "LoaderRecord", "OptimizerFacts", "ProgramFacts",
    "RunDelta", "ScalarChunk", "Series", "TrainingRecords", "TrainingSource", "extreme_indices",
    "records_from_delta", "scalar_series",
]
