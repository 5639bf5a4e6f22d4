"""DataFrames of cluster engines (Dask, PySpark) as drift sources: recognised by the module
of their type, so neither engine is imported unless the user passed one of its objects.
Their partitions are sketched where they live by :mod:`vizdebug.analysis.drift.engines`.
"""

from __future__ import annotations

from typing import Any

from ..errors import VizdebugTypeError

_DASK_MODULES = ("dask.", "dask_expr.")
_SPARK_MODULES = ("pyspark.",)
_DASK_HINTS = {
    "Series": "turn it into a one-column frame with series.to_frame()",
    "Index": "turn it into a one-column frame with index.to_frame()",
    "Array": "make it a frame first, e.g. dd.from_dask_array(x, columns=[...])",
    "Bag": "make it a frame first, e.g. bag.to_dataframe()",
}
_SPARK_HINTS = {
    "RDD": "make it a DataFrame first, e.g. spark.createDataFrame(rdd)",
    "Column": "select it into a DataFrame, e.g. df.select(column)",
    "GroupedData": "aggregate it into a DataFrame, e.g. grouped.agg(...)",
}


def engine_of(obj: Any, side: str = "data") -> str | None:
    """``"dask"`` or ``"spark"`` for a DataFrame of that engine, None for anything else.

    Other objects of either engine (a Dask Series or Array, a Spark RDD or Column) are
    refused with a :class:`VizdebugTypeError` saying how to make a DataFrame of them.

    Examples
    --------
    >>> engine_of({"x": [1.0]}) is None
    True
    """
    module, name = type(obj).__module__, type(obj).__name__
    if module.startswith(_DASK_MODULES):
        if name == "DataFrame":
            return "dask"
        raise _refused(side, f"a Dask {name}", _DASK_HINTS.get(name, "pass a Dask DataFrame"), "Dask")
    if module.startswith(_SPARK_MODULES):
        if name == "DataFrame":  # pyspark.sql (classic or connect), or pandas-on-Spark
            return "spark"
        raise _refused(side, f"a Spark {name}", _SPARK_HINTS.get(name, "pass a Spark DataFrame"), "Spark")
    return None


def _refused(side: str, what: str, hint: str, engine: str) -> VizdebugTypeError:
    return VizdebugTypeError(
        f"the {side} data is {what}; compare_distributions takes a whole {engine} DataFrame "
        f"(one column per feature): {hint}")
