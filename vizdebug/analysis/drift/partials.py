"""A partition's sketches as bytes: what a Dask or Spark worker sends back to be merged.

The format is an ``.npz`` archive (read with ``allow_pickle=False``): one JSON header with
the moments, category counts and missing counts, and one array per sample, bin count and
time-bucket table. Nothing is pickled, so the bytes are the same whichever engine carries
them (Spark's ``mapInArrow`` returns them as a binary column).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from typing import Any

import numpy as np

from .sides import NumericStream, StreamSide

_MOMENTS = ("n", "missing", "total", "total_sq", "lo", "hi")
_ARRAYS = (("f", "fine"), ("d", "display"), ("b", "buckets"))


def side_to_bytes(side: StreamSide) -> bytes:
    """The sketches of ``side`` (not its data source) as bytes.

    Examples
    --------
    >>> s = StreamSide(None, {"x": "numeric"})
    >>> s.nums["x"] = NumericStream(n=2, total=3.0, samples=[np.array([1.0, 2.0])])
    >>> side_from_bytes(side_to_bytes(s)).nums["x"].samples[0].tolist()
    [1.0, 2.0]
    """
    arrays: dict[str, np.ndarray] = {}
    nums = []
    for i, (name, stream) in enumerate(side.nums.items()):
        nums.append([name] + [getattr(stream, m) for m in _MOMENTS])
        arrays[f"s{i}"] = np.concatenate(stream.samples) if stream.samples else np.zeros(0)
        for key, attr in _ARRAYS:
            if getattr(stream, attr) is not None:
                arrays[f"{key}{i}"] = np.asarray(getattr(stream, attr))
    buckets = list(side.bucket_counts)
    for j, name in enumerate(buckets):
        arrays[f"c{j}"] = np.asarray(side.bucket_counts[name])
    header = {"nums": nums, "counts": {k: dict(v) for k, v in side.counts.items()},
              "missing": dict(side.missing), "bucket_counts": buckets}
    arrays["header"] = np.frombuffer(json.dumps(header).encode("utf-8"), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def side_from_bytes(data: bytes, columns: dict[str, str] | None = None) -> StreamSide:
    """A :class:`StreamSide` (without a data source) holding the sketches in ``data``."""
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        header: dict[str, Any] = json.loads(arrays["header"].tobytes().decode("utf-8"))
        side = StreamSide(None, dict(columns or {}))
        for i, (name, *moments) in enumerate(header["nums"]):
            stream = NumericStream(**dict(zip(_MOMENTS, moments)), samples=[arrays[f"s{i}"]])
            for key, attr in _ARRAYS:
                if f"{key}{i}" in arrays:
                    setattr(stream, attr, arrays[f"{key}{i}"])
            side.nums[name] = stream
        side.counts = {k: Counter(v) for k, v in header["counts"].items()}
        side.missing = Counter(header["missing"])
        side.bucket_counts = {name: arrays[f"c{j}"] for j, name in enumerate(header["bucket_counts"])}
    return side
