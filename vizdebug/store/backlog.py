"""The logged points a run writer holds until they are committed, and their bounds.

Points arrive in chunks ``(steps, names, values, times)``: one resolved batch of the
scalar log each (about a thousand points). The writer commits them oldest first, in
transactions of at most :data:`MAX_COMMIT` points, so that a commit stays short however
far behind it is, and a nearly full disk takes the next piece as soon as a little space is
free. Two bounds keep what a kill can lose to about a second:

- **memory**: while the file cannot be written at all (another process holds it locked, the
  disk is full) at most :data:`MAX_BACKLOG` points are held; then the oldest go;
- **time**: when logging outpaces what the writer commits (measured in points per second of
  writing, a writer starved of the GIL included), a write first keeps only the newest
  points it can commit in one write interval. The file then stays about a second behind
  the training at most, instead of falling further behind at every write, and the oldest
  points not yet written are dropped.

What is dropped is counted by cause (:data:`DROP_REASONS`); the writer reports it as a
:class:`StoreDropped` (a ``store-dropped`` finding) and keeps the count in the file.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence

import numpy as np

from ..errors import VizdebugError
from ..records import ScalarChunk
from .names import storable_name

MAX_COMMIT = 20_000     # points per transaction (a few tens of ms of SQLite work)
MAX_BACKLOG = 1_000_000  # points held while nothing can be written (~32 MB; then the oldest go)
RATE_POINTS = 1000      # a commit of at least this many points measures the writing rate

DROP_REASONS = {
    "full": "the run file could not be written for a while (locked by another process, or a "
            "full disk) and the points held for it reached their bound: the oldest logged "
            "points were dropped",
    "overload": "logging outpaced the run file's writer: the oldest points not yet written "
                "were dropped, so that the file stays within about a second of the training "
                "(what a kill can lose)",
    "closing": "close() writes for a bounded time: the points it could not write in that "
               "time were dropped",
}

__all__ = ["DROP_REASONS", "MAX_BACKLOG", "MAX_COMMIT", "Backlog", "StoreDropped",
           "dropped_message"]


class StoreDropped(VizdebugError):
    """Logged points the run store dropped (reported, never raised; the rules read its
    name: ``StoreDropped: ...`` becomes a ``store-dropped`` finding)."""


def dropped_message(meta: dict) -> str | None:
    """What a run file's settings say its writer dropped, in words (None: nothing; the
    settings are untrusted: anything unexpected counts as no reason given).

    >>> dropped_message({"dropped_points": 1200, "dropped_why": ["closing"]})[:34]
    '1,200 logged points were dropped: '
    """
    points = meta.get("dropped_points")
    if type(points) is not int or not 0 < points < 1 << 63:
        return None
    why = meta.get("dropped_why")
    keys = [k for k in why[:8] if isinstance(k, str) and k in DROP_REASONS] \
        if isinstance(why, list) else []
    # (a file of an older writer names no reason: it dropped only from a full queue)
    return f"{points:,} logged points were dropped: " + "; ".join(
        DROP_REASONS[k] for k in keys or ["full"])


def _size(chunk: ScalarChunk) -> int:
    return len(chunk[0])


def _tail(chunk: ScalarChunk, start: int) -> ScalarChunk:
    steps, names, values, times = chunk
    return steps[start:], names[start:], values[start:], times[start:]


def _head(chunk: ScalarChunk, stop: int) -> ScalarChunk:
    steps, names, values, times = chunk
    return steps[:stop], names[:stop], values[:stop], times[:stop]


class Backlog:
    """The chunks a writer holds, oldest first (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> backlog = Backlog()
    >>> backlog.held.append((np.arange(5), ("loss",) * 5, np.ones(5), np.zeros(5)))
    >>> backlog.piece(3), backlog.points()   # the first chunk is split at 3 points
    (1, 5)
    """

    def __init__(self) -> None:
        self.held: list[ScalarChunk] = []
        self.rate: float | None = None  # points committed per second of writing, recently
        self._good: set[str] = set()    # names known to be storable as they are
        self._fixed: dict[str, str] = {}  # names stored in another form

    def points(self, chunks: int | None = None) -> int:
        """Points held (in the first ``chunks`` chunks)."""
        return sum(_size(chunk) for chunk in self.held[:chunks])

    def take(self, queue: deque, max_chunks: int) -> int:
        """Move the queue's chunks behind those held, keeping at most ``max_chunks`` chunks
        and :data:`MAX_BACKLOG` points (the oldest go); returns the points dropped."""
        held = self.held
        while queue:
            held.append(queue.popleft())
        over = len(held) - max_chunks
        dropped = self.points(over) if over > 0 else 0
        if over > 0:
            del held[:over]
        return dropped + self.keep_newest(MAX_BACKLOG)

    def bound(self, seconds: float) -> int:
        """When the writing rate is known: keep only the newest points it commits in
        ``seconds`` (never fewer than :data:`MAX_COMMIT`); returns the points dropped."""
        if self.rate is None:
            return 0
        return self.keep_newest(max(MAX_COMMIT, int(self.rate * seconds)))

    def keep_newest(self, limit: int) -> int:
        """Drop the oldest points beyond ``limit``; returns how many went."""
        excess = self.points() - limit
        if excess <= 0:
            return 0
        held, dropped = self.held, excess
        while held and _size(held[0]) <= excess:
            excess -= _size(held.pop(0))
        if excess > 0:
            held[0] = _tail(held[0], excess)
        return dropped

    def drop_all(self) -> int:
        """Drop everything held; returns how many points went."""
        dropped = self.points()
        self.held.clear()
        return dropped

    def piece(self, limit: int | None = None) -> int:
        """How many chunks from the front hold at most ``limit`` points (by default
        :data:`MAX_COMMIT`; the chunk across the limit is split there)."""
        limit = MAX_COMMIT if limit is None else limit
        total = 0
        for k, chunk in enumerate(self.held):
            size = _size(chunk)
            if total + size > limit:
                cut = limit - total
                if cut <= 0:
                    return k
                self.held[k:k + 1] = [_head(chunk, cut), _tail(chunk, cut)]
                return k + 1
            total += size
        return len(self.held)

    def rows(self, chunks: int) -> Iterator[tuple]:
        """The rows of the first ``chunks`` chunks, streamed (a long backlog never becomes
        one big list), their names in storable form."""
        for steps, names, values, times in self.held[:chunks]:
            yield from zip(steps.tolist(), self._names(names), values.tolist(), times.tolist())

    def columns(self, chunks: int) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
        """The first ``chunks`` chunks as four columns (``step, name, value, time``), the
        names in storable form: what the run's envelope is built from."""
        held = self.held[:chunks]
        names: list[str] = []
        for chunk in held:
            names.extend(self._names(chunk[1]))
        if not held:
            return np.empty(0, np.int64), names, np.empty(0), np.empty(0)
        return (np.concatenate([np.asarray(c[0], dtype=np.int64) for c in held]), names,
                np.concatenate([np.asarray(c[2], dtype=float) for c in held]),
                np.concatenate([np.asarray(c[3], dtype=float) for c in held]))

    def done(self, chunks: int, seconds: float) -> None:
        """The first ``chunks`` chunks were committed in ``seconds``: let them go and
        update the writing rate."""
        points = self.points(chunks)
        del self.held[:chunks]
        if points >= RATE_POINTS and seconds > 0:
            rate = points / seconds
            self.rate = rate if self.rate is None else (self.rate + rate) / 2

    def _names(self, names: Sequence[str]) -> Sequence[str]:
        """``names``, or a copy with those SQLite cannot store (lone surrogates) in their
        storable form (checked once per distinct name)."""
        unique = set(names)
        if unique <= self._good:
            return names
        for name in unique - self._good - self._fixed.keys():
            fixed = storable_name(name)
            if fixed == name:
                self._good.add(name)
            else:
                self._fixed[name] = fixed
        if self._fixed.keys().isdisjoint(unique):
            return names
        return [self._fixed.get(name, name) for name in names]
