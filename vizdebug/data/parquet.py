"""Parquet paths and pyarrow datasets as drift sources: recognised, opened (a damaged file
is refused by name), and their columns' kinds read from the arrow schema. Streamed by
:mod:`vizdebug.analysis.drift.streaming`; pyarrow is imported inside the functions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import VizdebugError


def is_stream_source(obj: Any) -> bool:
    """True for a Parquet path (file or directory) or a pyarrow dataset / ParquetFile."""
    if isinstance(obj, (str, Path)):
        p = Path(obj)
        return p.suffix == ".parquet" or (p.is_dir() and any(p.glob("*.parquet")))
    return type(obj).__module__.startswith("pyarrow") and hasattr(obj, "to_batches") and hasattr(obj, "schema")


def arrow_dataset(obj: Any) -> Any:
    """A pyarrow dataset over a Parquet path, a dataset as given, or an in-memory table."""
    try:
        import pyarrow.dataset as ds
    except ImportError as exc:  # pragma: no cover - pyarrow is a dependency
        raise ImportError("streaming Parquet needs pyarrow: pip install pyarrow") from exc
    if isinstance(obj, (str, Path)):
        if not Path(obj).exists():
            raise VizdebugError(f"no Parquet data at {str(obj)!r}")
        try:
            return ds.dataset(str(obj), format="parquet")
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise VizdebugError(f"cannot read {str(obj)!r} as Parquet: {str(exc)[:200]}") from None
    if is_stream_source(obj):
        return obj
    import pandas as pd
    import pyarrow as pa

    frame = obj if isinstance(obj, pd.DataFrame) else pd.DataFrame(obj)
    return ds.dataset(pa.Table.from_pandas(frame, preserve_index=False))


def arrow_kind(arrow_type: Any) -> str:
    """The feature kind of a Parquet column from its arrow type."""
    import pyarrow.types as pt

    if pt.is_boolean(arrow_type):
        return "boolean"
    if pt.is_timestamp(arrow_type) or pt.is_date(arrow_type):
        return "datetime"
    if pt.is_integer(arrow_type) or pt.is_floating(arrow_type) or pt.is_decimal(arrow_type):
        return "numeric"
    return "categorical"
