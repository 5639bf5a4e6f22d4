"""Parquet paths and arrow data as drift sources: recognised, opened (a damaged file, a
folder without Parquet files or files whose schemas disagree are refused by name), and
their columns' kinds read from the arrow schema. Streamed by
:mod:`vizdebug.analysis.drift.streaming`; pyarrow is imported inside the functions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import VizdebugError

SCHEMA_FILES_CHECKED = 10_000  # footers read to check that a folder's files agree


def is_stream_source(obj: Any) -> bool:
    """True for a Parquet path (file or directory), a pyarrow dataset, Table or RecordBatch.

    >>> is_stream_source("data.parquet"), is_stream_source({"x": [1]})
    (True, False)
    """
    if isinstance(obj, (str, Path)):
        p = Path(obj)
        return p.suffix == ".parquet" or (p.is_dir() and any(parquet_files(p)))
    if not type(obj).__module__.startswith("pyarrow") or not hasattr(obj, "schema"):
        return False
    return hasattr(obj, "to_batches") or type(obj).__name__ == "RecordBatch"


def parquet_files(folder: Path) -> list[Path]:
    """The Parquet files under ``folder``, sorted; hidden and ``_``-prefixed entries (Spark's
    ``_SUCCESS``, ``.crc`` files) and files of other types are left out."""
    return sorted(p for p in folder.rglob("*.parquet") if p.is_file()
                  and not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts))


def arrow_dataset(obj: Any) -> Any:
    """A pyarrow dataset over a Parquet path, a dataset as given, or in-memory data (an
    arrow Table or RecordBatch, or anything pandas reads as a DataFrame)."""
    try:
        import pyarrow.dataset as ds
    except ImportError as exc:  # pragma: no cover - pyarrow is a dependency
        raise ImportError("streaming Parquet needs pyarrow: pip install pyarrow") from exc
    if isinstance(obj, (str, Path)):
        return _path_dataset(Path(obj))
    if isinstance(obj, ds.Dataset):
        return obj
    import pyarrow as pa

    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return ds.dataset(obj)
    import pandas as pd

    frame = obj if isinstance(obj, pd.DataFrame) else pd.DataFrame(obj)
    try:
        return ds.dataset(pa.Table.from_pandas(frame, preserve_index=False))
    except (ValueError, TypeError, pa.ArrowException) as exc:  # duplicate names, mixed types
        raise VizdebugError(
            f"the other side is streamed (Parquet, arrow, Dask or Spark data), so this one "
            f"({type(obj).__name__}) must "
            f"convert to an arrow table, which failed: {str(exc)[:200]}; give its columns "
            "unique names and one type each, or pass both sides as pandas DataFrames") from None


def _path_dataset(path: Path) -> Any:
    import pyarrow as pa
    import pyarrow.dataset as ds

    if not path.exists():
        raise VizdebugError(f"no Parquet data at {str(path)!r}")
    files = parquet_files(path) if path.is_dir() else [path]
    if not files:
        raise VizdebugError(f"the folder {str(path)!r} holds no .parquet files")
    try:
        schema = _common_schema(path, files)
        return ds.dataset([str(f) for f in files], schema=schema, format="parquet")
    except (OSError, pa.ArrowException) as exc:  # a damaged or non-Parquet file
        raise VizdebugError(f"cannot read {str(path)!r} as Parquet: {str(exc)[:200]}") from None


def _common_schema(path: Path, files: list[Path]) -> Any:
    """The one schema of the files (integers and floats widened), or an error naming the
    column and the two files that disagree."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    first = pq.read_schema(files[0])
    schema = first
    for f in files[1:SCHEMA_FILES_CHECKED]:
        other = pq.read_schema(f)
        try:
            schema = pa.unify_schemas([schema, other], promote_options="permissive")
        except (pa.ArrowTypeError, pa.ArrowInvalid):
            raise VizdebugError(_conflict(path, files[0], first, f, other)) from None
    return schema


def _conflict(path: Path, a: Path, sa: Any, b: Path, sb: Any) -> str:
    clash = [n for n in sa.names if n in sb.names and sa.field(n).type != sb.field(n).type]
    what = (f"column {clash[0]!r} is {sa.field(clash[0]).type} in {a.name} but "
            f"{sb.field(clash[0]).type} in {b.name}" if clash else f"{a.name} and {b.name} disagree")
    return (f"the Parquet files under {str(path)!r} have conflicting schemas: {what}; rewrite "
            "them with one type per column, or pass the files that agree")


def arrow_kind(arrow_type: Any) -> str | None:
    """The feature kind of a Parquet column from its arrow type; None for nested values
    (lists, structs, maps), which have no distribution to compare."""
    import pyarrow.types as pt

    if pt.is_nested(arrow_type):
        return None
    if pt.is_boolean(arrow_type):
        return "boolean"
    if pt.is_timestamp(arrow_type) or pt.is_date(arrow_type):
        return "datetime"
    if pt.is_integer(arrow_type) or pt.is_floating(arrow_type) or pt.is_decimal(arrow_type):
        return "numeric"
    return "categorical"
