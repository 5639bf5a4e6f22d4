"""The form a metric name is kept in: text that every encoder takes.

``log()`` accepts any keyword name, and Python text may hold lone surrogates (what
``os.fsdecode`` makes of bytes that are not UTF-8, e.g. a file name logged as a metric).
SQLite, pyarrow (pandas' strings) and JSON-to-the-browser all refuse them, so such a name
is kept with each lone surrogate written as its escape (``\\udcff``), by the store and by a
live session alike: the name reads the same in both, and nothing downstream fails on it.
"""

from __future__ import annotations

__all__ = ["storable_name"]


def storable_name(name: str) -> str:
    """``name`` unchanged when it is valid UTF-8 text, else with each lone surrogate
    written as its backslash escape.

    Examples
    --------
    >>> storable_name("loss")
    'loss'
    >>> storable_name("val_\\udcff")
    'val_\\\\udcff'
    """
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return name
