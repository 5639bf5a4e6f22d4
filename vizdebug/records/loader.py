"""The loader tap's record: how long the loop waited for data and computed, and the
statistics of the sampled batches' inputs. One typed record for the session, the store
and the rules; empty (falsy) before the first batch."""

from __future__ import annotations

from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Any

import numpy as np

#: The record's array parts (stored as ``.npy``) and their dimensions.
LOADER_ARRAYS = {"wait": 1, "compute": 1, "batch_steps": 1, "batch_stats": 2}


def _empty(ndim: int) -> Any:
    return lambda: np.empty((0,) * ndim if ndim == 1 else (0, 6))


@dataclass
class LoaderRecord:
    """What the loader tap saw.

    ``wait``/``compute`` are the recent batches' seconds waiting for data and computing,
    ``total_*`` their sums over every batch; ``batch_steps`` the sampled batches' numbers
    and ``batch_stats`` their input statistics (columns :data:`~.training.BATCH_FIELDS`);
    ``nonfinite_batches`` the sampled batches holding NaN/inf; ``shapes``/``dtypes`` how
    often each input shape and dtype came (as text).

    Examples
    --------
    >>> rec = LoaderRecord(batches=3, total_wait=0.5)
    >>> bool(rec), bool(LoaderRecord())
    (True, False)
    >>> plain, arrays = rec.parts()
    >>> LoaderRecord.from_parts(plain, arrays).total_wait
    0.5
    """

    batches: int = 0
    wait: np.ndarray = field(default_factory=_empty(1))
    compute: np.ndarray = field(default_factory=_empty(1))
    total_wait: float = 0.0
    total_compute: float = 0.0
    batch_steps: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    batch_stats: np.ndarray = field(default_factory=_empty(2))
    nonfinite_batches: list[int] = field(default_factory=list)
    shapes: dict[str, int] = field(default_factory=dict)
    dtypes: dict[str, int] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.batches > 0

    def parts(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The JSON-able part and the arrays, as the store writes them."""
        arrays = {k: np.asarray(getattr(self, k)) for k in LOADER_ARRAYS}
        plain = {"batches": self.batches, "total_wait": self.total_wait,
                 "total_compute": self.total_compute,
                 "nonfinite_batches": list(self.nonfinite_batches),
                 "shapes": dict(self.shapes), "dtypes": dict(self.dtypes)}
        return plain, arrays

    @classmethod
    def from_parts(cls, plain: dict[str, Any], arrays: dict[str, np.ndarray]) -> LoaderRecord:
        """Rebuild from :meth:`parts`; ``ValueError`` when a part is not what it must be
        (the store's reader names the damage)."""
        for key, ndim in LOADER_ARRAYS.items():
            value = arrays.get(key)
            if value is not None and not (isinstance(value, np.ndarray) and value.ndim == ndim):
                raise ValueError(f"the loader {key} is not a {ndim}-d array")
        bad = plain.get("nonfinite_batches", [])
        if not (isinstance(bad, list) and all(is_int(b) for b in bad)):
            raise ValueError("the loader nonfinite_batches are not steps")
        for key in ("shapes", "dtypes"):
            if not isinstance(plain.get(key, {}), dict):
                raise ValueError(f"the loader {key} is not a mapping")
        for key in ("batches", "total_wait", "total_compute"):
            if not is_number(plain.get(key, 0)):
                raise ValueError(f"the loader {key} is not a number")
        base = cls()
        return cls(batches=int(plain.get("batches", 0)),
                   total_wait=float(plain.get("total_wait", 0.0)),
                   total_compute=float(plain.get("total_compute", 0.0)),
                   nonfinite_batches=[int(b) for b in bad],
                   shapes=dict(plain.get("shapes", {})), dtypes=dict(plain.get("dtypes", {})),
                   **{k: arrays.get(k, getattr(base, k)) for k in LOADER_ARRAYS})


def is_int(value: Any) -> bool:
    """An integer, Python's or numpy's, that is not a bool (what a stored count must be)."""
    return isinstance(value, Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A real number, Python's or numpy's, that is not a bool."""
    return isinstance(value, Real) and not isinstance(value, bool)
