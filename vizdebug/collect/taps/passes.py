"""One pass over a tapped loader: the time spent waiting for each batch and computing on
it, handed to its :class:`~vizdebug.collect.taps.loader.LoaderTap`, and whose pass it is
when other sessions' taps are on the same loader.

A tap that shares its loader does not know at a pass's first batch whether its model
trains on it (another session's loop may be iterating): that batch is held until the
next ``next()``, and the pass is the tap's when the session's step clock moved in between
(``tap.progress()``), or when no session's did (a loop that trains none of them: each
counts it); otherwise the tap leaves the whole pass alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


class TappedIterator:
    """Times ``next()`` (waiting for data) and the gap between batches (computing)."""

    def __init__(self, inner: Iterator, tap: Any, shared: tuple[Any, ...] = ()) -> None:
        self._inner = inner
        self._tap = tap
        self._last: float | None = None
        # the live taps on the loader that can tell whether their model trains
        self._shared = shared if len(shared) > 1 and tap in shared else ()
        self._mine: bool | None = None if self._shared else True  # (None: not known yet)
        self._held: tuple[Any, float, list] | None = None  # (batch, wait, each one's progress)

    def __iter__(self) -> TappedIterator:
        return self

    def __next__(self) -> Any:
        clock = self._tap.clock
        start = clock()
        try:
            batch = next(self._inner)
        except StopIteration:
            # the last batch's compute ends here: without it a loop of one batch per epoch
            # (full-batch training) looked as if it only ever waited for data
            if self._last is not None and not (self._tap.closed or self._tap.paused) and (
                    self._decide()):
                self._tap.record_compute(start - self._last)
                self._tap.pass_ended()
            self._last = None
            raise
        end = clock()
        computed = None if self._last is None else start - self._last
        self._last = end
        if not (self._tap.closed or self._tap.paused):
            if self._mine is None and self._held is None:  # known at the next batch
                self._held = (batch, end - start, [t.progress() for t in self._shared])
            elif self._decide():
                self._tap.record(batch, end - start, computed)
        return batch

    def _decide(self) -> bool:
        """Whether this pass is the tap's: decided once, by whose models trained while the
        pass's first batch was computed (then that batch is recorded)."""
        if self._mine is None:
            held, self._held = self._held, None
            moved = [t.progress() != m for t, m in zip(self._shared, held[2] if held else [])]
            self._mine = held is not None and (
                moved[self._shared.index(self._tap)] or not any(moved))
            if self._mine:
                self._tap.record(held[0], held[1], None)
        return self._mine

    def __len__(self) -> int:
        return len(self._inner)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
