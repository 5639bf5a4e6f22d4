"""Opening a run file for reading when it may come from anywhere.

Every read of a run file goes through :func:`open_read`: a read-only connection that

- holds only what vizdebug writes: tables and their indexes, no view, trigger, virtual
  table or generated column. Those are code that SQLite runs on every read (a view over an
  endless recursive ``WITH``, a column computed as ``zeroblob(900000000)``), so a file
  of a few kB could hang the reader or make it allocate gigabytes;
- has a budget of SQLite VM steps proportional to the file's size (a progress handler;
  ``SIGALRM`` cannot interrupt a call inside SQLite). Reading an honest run whole (its
  diagnosis, its report) takes about 2 steps per byte on one connection, the budget 400
  (``tests/test_store_crafted.py`` checks the margin), so it only stops what no run file
  of that size can need, and an endless query on a 60 kB file within a second or two;
- refuses any single value longer than twice the file (and at least 64 MiB:
  ``SQLITE_LIMIT_LENGTH``): no value is allocated that the bytes on disk do not back.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import urllib.parse
from pathlib import Path

from ..errors import VizdebugError

STEPS_PER_BYTE = 400      # VM steps a connection may take per byte of the file and its WAL
BASE_STEPS = 20_000_000   # and on top of that, whatever its size (about 0.1 s of SQLite)
CHECK_EVERY = 10_000      # VM steps between two looks at the budget
MIN_VALUE_LIMIT = 64 << 20  # the longest value a read accepts is at least this (bytes)
MAX_SCHEMA = 100          # schema objects of a run file (vizdebug writes 12)


class UnsafeRun(VizdebugError):
    """A file that holds what a vizdebug run never holds (a view, a trigger, ...);
    ``run_like``: it has a ``meta`` table or view, as a run (a crafted one) has."""

    def __init__(self, message: str, run_like: bool = True) -> None:
        super().__init__(message)
        self.run_like = run_like


class ReadBudget:
    """The progress handler of one connection: stops it after ``steps`` VM steps."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.used = 0

    def __call__(self) -> int:
        self.used += CHECK_EVERY
        return int(self.used > self.steps)  # non-zero: SQLite interrupts the statement

    @property
    def spent(self) -> bool:
        """True once the budget stopped a statement."""
        return self.used > self.steps


class ReadConnection(sqlite3.Connection):
    """A read-only connection to a run file that knows its :class:`ReadBudget`."""

    budget: ReadBudget


def ro_uri(path: Path) -> str:
    """The SQLite URI that opens ``path`` read-only; ``#``, ``?`` and ``%`` in a folder
    name are escaped (unescaped, SQLite reads them as the URI's query or fragment and
    opens, or creates, another file), and a name that is not UTF-8 is given byte for byte.

    >>> ro_uri(Path("/runs/a#1/r?.sqlite"))
    'file:/runs/a%231/r%3F.sqlite?mode=ro'
    """
    return f"file:{urllib.parse.quote(os.fsencode(os.path.abspath(path)))}?mode=ro"


def file_bytes(path: Path) -> int:
    """Bytes of the run file and of the WAL beside it (what a read can look at)."""
    total = 0
    for part in (path, Path(f"{os.fspath(path)}-wal")):
        with contextlib.suppress(OSError):  # no WAL: the file alone
            total += os.stat(part).st_size
    return total


def read_budget(size: int) -> int:
    """VM steps a connection to a file of ``size`` bytes may take.

    >>> read_budget(0) == BASE_STEPS
    True
    """
    return BASE_STEPS + STEPS_PER_BYTE * size


def schema_problem(conn: sqlite3.Connection) -> str | None:
    """What the file holds that a vizdebug run never does, or None."""
    rows = conn.execute("SELECT type, name, sql FROM sqlite_master LIMIT ?",
                        (MAX_SCHEMA + 1,)).fetchall()
    if len(rows) > MAX_SCHEMA:
        return f"it holds more than {MAX_SCHEMA} schema objects"
    for kind, name, sql in rows:
        if kind not in ("table", "index"):
            return f"it holds a {str(kind)[:20]} {str(name)[:60]!r}"
        if kind == "table" and str(sql or "").lstrip()[:14].upper() == "CREATE VIRTUAL":
            return f"it holds a virtual table {str(name)[:60]!r}"
    computed = conn.execute(
        "SELECT m.name, x.name FROM sqlite_master AS m, pragma_table_xinfo(m.name) AS x "
        "WHERE m.type = 'table' AND x.hidden != 0 LIMIT 1").fetchone()
    if computed is not None:
        return f"the column {str(computed[1])[:60]!r} of table {str(computed[0])[:60]!r} is computed"
    return None


def open_read(path: Path, *, timeout: float = 2.0) -> ReadConnection:
    """A read-only connection to the run file ``path``, bounded as the module says.

    Raises :class:`UnsafeRun` for a file that holds a view, a trigger, a virtual table or
    a generated column, and ``sqlite3.Error`` when SQLite cannot open it.
    """
    conn = sqlite3.connect(ro_uri(path), uri=True, timeout=timeout, factory=ReadConnection)
    try:
        size = file_bytes(path)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max(MIN_VALUE_LIMIT, 2 * size))
        conn.budget = ReadBudget(read_budget(size))
        conn.set_progress_handler(conn.budget, CHECK_EVERY)
        conn.execute("PRAGMA query_only=1")
        problem = schema_problem(conn)
    except BaseException:
        conn.close()
        raise
    if problem is None:
        return conn
    try:
        run_like = conn.execute("SELECT 1 FROM sqlite_master WHERE name='meta'").fetchone()
    finally:
        conn.close()
    raise UnsafeRun(f"{str(path)!r} is not read: {problem}, which a vizdebug run never "
                    "holds (SQLite would run it on every read); the file was crafted or "
                    "changed after vizdebug wrote it", run_like is not None)


def explain(conn: sqlite3.Connection, exc: sqlite3.Error) -> str:
    """``exc`` in words; a statement the budget stopped says so."""
    budget = getattr(conn, "budget", None)
    if isinstance(budget, ReadBudget) and budget.spent:
        return (f"reading it took more than {budget.steps:,} SQLite steps, more than a run "
                "file of this size can need (crafted or damaged); stopped")
    return str(exc)
