"""Where a streamed side is read: in this process, on a Dask cluster, or in a Spark session.

Every source answers the same few questions of :mod:`.streaming` - its arrow schema, its row
count, the span of its time column, and the two sketch passes - so one comparison runs over
any mix of them (a Dask reference against a Parquet current, say). :class:`LocalSource`
streams an arrow dataset here. :class:`DaskSource` and :class:`SparkSource` run each pass
once per partition on the engine's workers (Dask: a task per partition of the projected
frame; Spark: ``mapInArrow``), each returning its partition's sketches as bytes
(:mod:`.partials`) that are merged here. A partition knows its first row's position in the
side, so it samples the very rows a single stream would (:mod:`.sampling`): the statistics
are the ones the Parquet path computes. dask and pyspark are imported only for their frames.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ...data.frames import engine_of
from ...data.parquet import arrow_dataset
from ...errors import VizdebugError
from .partials import side_from_bytes, side_to_bytes
from .sides import NumericStream, StreamSide
from .windows import StreamTime, time_spans

Spans = tuple[tuple[float, float], tuple[float, float]]


@dataclass
class LocalSource:
    """An arrow dataset (a Parquet path, arrow or pandas data) streamed in this process."""

    dataset: Any
    side: str = "data"

    @property
    def schema(self) -> Any:
        return self.dataset.schema

    def rows(self) -> int:
        return int(self.dataset.count_rows())

    def time_spans(self, probe: StreamTime) -> Spans:
        return time_spans(self.dataset, probe)

    def first_pass(self, side: StreamSide) -> None:
        side.dataset = self.dataset
        side.first_pass()

    def second_pass(self, side: StreamSide, grids: dict, sketched: dict) -> None:
        side.second_pass(grids, sketched)


def part_pass(job: dict[str, Any], dataset: Any, offset: int) -> bytes:
    """One pass of one partition (run on a worker): its sketches as bytes."""
    side = StreamSide(dataset, job["columns"], job["clock"], offset=offset, seed=job["seed"],
                      below=job["below"], batch_rows=job["batch_rows"])
    if job["grids"] is None:
        side.first_pass()
    else:
        side.nums = {c: NumericStream() for c, k in side.columns.items() if k in ("numeric", "datetime")}
        side.second_pass(job["grids"], job["sketched"])
    return side_to_bytes(side)


def part_spans(probe: StreamTime, dataset: Any, offset: int) -> bytes:
    """The time spans of one partition (run on a worker), as four float64 values."""
    (a, b), (c, d) = time_spans(dataset, probe)
    return np.array([a, b, c, d], dtype=np.float64).tobytes()


@dataclass
class EngineSource(ABC):
    """A DataFrame of a cluster engine, sketched partition by partition where it lives."""

    frame: Any
    side: str = "data"
    _rows: int | None = field(default=None, repr=False)

    @property
    @abstractmethod
    def schema(self) -> Any:
        """The frame's columns as an arrow schema."""

    @abstractmethod
    def rows(self) -> int:
        """The frame's row count."""

    @abstractmethod
    def each(self, task: Callable[[Any, int], bytes], names: list[str], positions: bool = False) -> list[bytes]:
        """``task(the partition's columns `names` as an arrow dataset, its first row's
        position)`` on every partition, where it lives; the results in partition order.
        The positions (0 unless asked for) are counted on the very partitions the task
        reads: an engine may cut a frame projected on fewer columns into other partitions."""

    def check(self) -> EngineSource:
        """This source, or a VizdebugError for a frame without columns or rows."""
        engine = type(self).__name__.removesuffix("Source")
        if not len(self.schema.names):
            raise VizdebugError(f"the {self.side} {engine} DataFrame has no columns; pass one "
                                "column per feature")
        if self.rows() == 0:
            raise VizdebugError(f"the {self.side} {engine} DataFrame has no rows; pass data with rows")
        return self

    def time_spans(self, probe: StreamTime) -> Spans:
        parts = [np.frombuffer(b, dtype=np.float64) for b in self.each(partial(part_spans, probe), [probe.name])]
        spans = np.array(parts).reshape(-1, 4)
        return ((float(spans[:, 0].min(initial=np.inf)), float(spans[:, 1].max(initial=-np.inf))),
                (float(spans[:, 2].min(initial=np.inf)), float(spans[:, 3].max(initial=-np.inf))))

    def first_pass(self, side: StreamSide) -> None:
        self._merge(side, self._job(side, None, None))

    def second_pass(self, side: StreamSide, grids: dict, sketched: dict) -> None:
        self._merge(side, self._job(side, grids, sketched))

    def _job(self, side: StreamSide, grids: dict | None, sketched: dict | None) -> dict[str, Any]:
        return {"columns": side.columns, "clock": side.clock, "seed": side.seed, "below": side.below,
                "batch_rows": side.batch_rows, "grids": grids, "sketched": sketched}

    def _merge(self, side: StreamSide, job: dict[str, Any]) -> None:
        names = list(side.columns) if job["grids"] is None else [
            c for c, k in side.columns.items() if k in ("numeric", "datetime") or c in (job["sketched"] or {})]
        if side.clock is not None and side.clock.name not in names:
            names.append(side.clock.name)
        if not names:
            return
        for data in self.each(partial(part_pass, job), names, positions=job["grids"] is None):
            side.merge(side_from_bytes(data, side.columns))
        if side.bar is not None:
            side.bar.update(self.rows())


class DaskSource(EngineSource):
    """A Dask DataFrame: one task per partition of the frame projected on the read columns."""

    @property
    def schema(self) -> Any:
        import pyarrow as pa

        meta = getattr(self.frame, "_meta_nonempty", self.frame._meta)
        return pa.Schema.from_pandas(meta, preserve_index=False)

    def rows(self) -> int:
        if self._rows is None:
            self._rows = int(len(self.frame))  # (read_parquet: from the files' metadata)
        return self._rows

    def each(self, task: Callable[[Any, int], bytes], names: list[str], positions: bool = False) -> list[bytes]:
        import dask

        schema = self.schema
        fields = [schema.field(n) for n in names]
        parts = self.frame[names].to_delayed()
        lengths = dask.compute(*[dask.delayed(len)(p) for p in parts]) if positions else [0] * len(parts)
        offsets = np.cumsum([0, *lengths[:-1]]).tolist() if positions else lengths
        jobs = [dask.delayed(_dask_part)(p, task, fields, off, i, self.side)
                for i, (p, off) in enumerate(zip(parts, offsets))]
        return list(dask.compute(*jobs))


def _dask_part(frame: Any, task: Callable[[Any, int], bytes], fields: list, offset: int, number: int,
               side: str) -> bytes:
    import pyarrow as pa

    try:
        table = pa.Table.from_pandas(frame, schema=pa.schema(fields), preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise VizdebugError(
            f"partition {number} of the {side} Dask DataFrame does not hold its declared column "
            f"types ({str(exc)[:200]}); give each column one type, e.g. ddf.astype({{...}})") from None
    return task(_BatchStream(iter(table.to_batches())), offset)


class SparkSource(EngineSource):
    """A Spark DataFrame: ``mapInArrow`` over its partitions, one row of bytes from each."""

    @property
    def frame_sql(self) -> Any:
        frame = self.frame
        return frame.to_spark() if type(frame).__module__.startswith("pyspark.pandas") else frame

    @property
    def schema(self) -> Any:
        from pyspark.sql.pandas.types import to_arrow_schema

        frame = self.frame_sql
        return to_arrow_schema(frame.schema, timezone=frame.sparkSession.conf.get("spark.sql.session.timeZone"))

    def rows(self) -> int:
        if self._rows is None:
            self._rows = int(self.frame_sql.count())
        return self._rows

    def each(self, task: Callable[[Any, int], bytes], names: list[str], positions: bool = False) -> list[bytes]:
        offsets: dict[int, int] = {}
        if positions:
            lengths = self._map(_count_rows, names, "out long")
            order = sorted(lengths)
            offsets = dict(zip(order, np.cumsum([0] + [lengths[i] for i in order[:-1]]).tolist()))
        got = self._map(partial(_spark_task, task, offsets), names, "out binary")
        return [bytes(got[i]) for i in sorted(got)]

    def _map(self, fn: Callable[[Iterator[Any]], Any], names: list[str], out: str) -> dict[int, Any]:
        rows = self.frame_sql.select(*names).mapInArrow(partial(_spark_part, fn), f"pid int, {out}").collect()
        return {r[0]: r[1] for r in rows}


def _spark_part(fn: Callable[[Iterator[Any]], Any], batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa
    from pyspark import TaskContext

    pid = TaskContext.get().partitionId()
    yield pa.RecordBatch.from_pydict({"pid": pa.array([pid], pa.int32()), "out": [fn(pid, batches)]})


def _count_rows(pid: int, batches: Iterator[Any]) -> int:
    return sum(b.num_rows for b in batches)


def _spark_task(task: Callable[[Any, int], bytes], offsets: dict[int, int], pid: int,
                batches: Iterator[Any]) -> bytes:
    return task(_BatchStream(batches), offsets.get(pid, 0))


class _BatchStream:
    """A partition's arrow batches, read once, in the shape of a dataset's ``to_batches``
    (an in-memory partition is not scanned through a dataset: arrow's scanner copes badly
    with the unaligned buffers of frames converted from pandas)."""

    def __init__(self, batches: Iterator[Any]) -> None:
        self._batches = batches

    def to_batches(self, columns: list[str], batch_size: int | None = None) -> Iterator[Any]:
        for batch in self._batches:
            for start in range(0, batch.num_rows, batch_size or batch.num_rows or 1):
                yield batch.slice(start, batch_size).select(columns)


def source_for(obj: Any, side: str) -> LocalSource | EngineSource:
    """The source that reads ``obj``: its engine's for a Dask or Spark DataFrame, else local."""
    if isinstance(obj, (LocalSource, EngineSource)):
        return obj
    engine = engine_of(obj, side)
    if engine == "dask":
        if not all(isinstance(c, str) for c in obj.columns):  # arrow names columns by strings
            obj = obj.rename(columns=str)
        return DaskSource(obj, side).check()
    if engine == "spark":
        return SparkSource(obj, side).check()
    return LocalSource(arrow_dataset(obj), side)
