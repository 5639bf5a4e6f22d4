"""Which file a run store writes, and the claim that makes its writer the only one.

A writer holds an exclusive ``flock`` on its run file for as long as it writes. The kernel
drops it when the process dies, however it dies, so a reader tells a dead writer from a
slow one at once (:func:`writer_alive`) instead of waiting for missed heartbeats.

A second writer on a live run file (another process, another session of this one) gets a
clear :class:`~vizdebug.errors.VizdebugError` naming the path and the live writer. It does
not get a file of its own: a run silently written under another name is a run nobody finds
(``open_run`` of the path you passed would show the other run). The message says how to
get one file per run (``store=`` a folder).

Nothing that is not a vizdebug run is ever removed or replaced: an existing file that is
not a run, a folder, a FIFO, a device node or a socket is refused before it is opened. A
run file nobody writes any more (a finished run, a re-run cell) is replaced, as before; an
empty regular file is used in place (it holds nothing to lose).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import stat
import time
from pathlib import Path

from ..errors import VizdebugError, VizdebugTypeError, describe
from .schema import is_run_file, rank_path

try:  # POSIX; elsewhere runs are written without a lock (and readers use heartbeats)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

CLAIM_TRIES = 8        # races with another writer creating or replacing the same path
LOCK_PATIENCE = 0.3    # seconds to wait out a reader probing the lock (microseconds each)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
SIDECAR = "-journal"  # the longest of SQLite's files beside a database (-wal, -shm)
_KINDS = {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder",
          stat.S_IFLNK: "a symbolic link"}


def store_path(store: object, rank: int = 0) -> Path:
    """The file a session writes to: ``store`` itself, a new file in a directory, or, for
    rank ``k > 0`` of a multi-process job, ``<name>.rank<k><suffix>`` beside it.

    Examples
    --------
    >>> store_path("runs/exp1.sqlite", rank=1).name
    'exp1.rank1.sqlite'
    """
    if isinstance(store, bool) or not isinstance(store, (str, os.PathLike)):
        raise VizdebugTypeError(
            f"store takes a file path (or a directory for one new file per run), got "
            f"{describe(store)}; e.g. vd.watch(model, store='runs/exp1.sqlite')")
    text = os.fspath(store)
    if not text:
        raise VizdebugError("store is an empty path; pass e.g. store='runs/exp1.sqlite'")
    path = Path(text).expanduser()
    folder = text.endswith(("/", os.sep))
    _check_lengths(path, [] if folder else [path.name])  # (before the first look at it)
    if path.is_dir() or folder:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        name, n = f"run-{stamp}-{os.getpid()}", 1
        while (path / f"{name}.sqlite").exists():  # two runs in one second: never replace
            n += 1
            name = f"run-{stamp}-{os.getpid()}-{n}"
        path = path / f"{name}.sqlite"
    path = rank_path(path, rank)
    _check_lengths(path, [path.name])
    return path


def _name_max(path: Path) -> int:
    """The longest name, in bytes, the file system under ``path`` takes (255 where it
    cannot say)."""
    for folder in [path, *path.parents]:
        try:
            return int(os.pathconf(folder, "PC_NAME_MAX"))
        except (OSError, ValueError, AttributeError):
            continue
    return 255


def _check_lengths(path: Path, files: list[str]) -> None:
    """Refuse a name longer than the file system takes, naming the limit: each folder's,
    and the file's with room for SQLite's ``-journal`` beside it (else the run file is
    created, then fails to open)."""
    limit = _name_max(path)
    folders = path.parts[:-1] if files else path.parts
    names = [(part, limit, f"the folder name {part[:24]!r}...", "") for part in folders]
    names += [(name, limit - len(SIDECAR), "the file name",
               f" (the file system's {limit}, less {len(SIDECAR)} for SQLite's {SIDECAR} "
               "file beside it)") for name in files]
    for part, room, what, why in names:
        size = len(os.fsencode(part))
        if size > room:
            shown = repr(str(path)) if len(str(path)) <= 80 else repr(str(path)[:80]) + "..."
            raise VizdebugError(
                f"store={shown} is too long: {what} has {size} bytes, and at most {room} "
                f"bytes fit here{why}. Pass a shorter name, or a folder (store='runs/') for "
                "one new file with a short name per run")


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def _refuse(path: Path, why: str) -> VizdebugError:
    return VizdebugError(
        f"store={str(path)!r} {why}; vizdebug never removes or replaces what is not a run "
        "of its own. Pass a new file name, or a folder (store='runs/') for one new file "
        "per run")


def _open_existing(path: Path, st: os.stat_result) -> int:
    """Open an existing regular file for writing, refusing anything else unopened."""
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, f"is {_kind(st.st_mode)}")
    try:  # O_NONBLOCK: a FIFO swapped in since lstat must not hang the open
        fd = os.open(path, os.O_RDWR | _NOFOLLOW | _NONBLOCK | _CLOEXEC)
    except OSError as exc:
        raise VizdebugError(f"cannot write store={str(path)!r}: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refuse(path, f"is {_kind(mode)}")
    return fd


def _open(path: Path) -> int | None:
    """A descriptor of ``path`` (created when missing), or None when another writer
    created it between our look and our open (try again)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o666)
        except FileExistsError:
            return None
        except OSError as exc:
            raise VizdebugError(f"cannot create store={str(path)!r}: {exc.strerror}") from None
    return _open_existing(path, st)


def _lock(fd: int) -> bool:
    """Take the writer's lock; False when a live writer holds it."""
    if fcntl is None:  # pragma: no cover - Windows
        return True
    end = time.monotonic() + LOCK_PATIENCE
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > end:
                return False
            time.sleep(0.01)
        except OSError:  # a file system without flock: write unlocked, heartbeats tell
            return True


def _still_named(fd: int, path: Path) -> bool:
    """True when ``path`` still names the file behind ``fd`` (not replaced meanwhile)."""
    try:
        a, b = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _in_use(path: Path) -> VizdebugError:
    from .schema import read_meta_quietly

    meta = read_meta_quietly(path)
    if meta.get("pid") == os.getpid():
        who = "another session of this process (close it first: session.close())"
    elif meta.get("pid"):
        who = f"another live run (pid {meta.get('pid')} on {meta.get('host') or '?'})"
    else:
        who = "another live run"
    return VizdebugError(
        f"store={str(path)!r} is being written by {who}; one run file has one writer. "
        "Pass another file name, or a folder (store='runs/') for one new file per run")


def _sidecars(path: Path) -> list[Path]:
    """SQLite's ``-wal``/``-shm`` beside ``path``, refusing any that is not a file."""
    out = []
    for extra in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            st = os.lstat(extra)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(extra, f"is {_kind(st.st_mode)}")
        out.append(extra)
    return out


def _take(path: Path, fd: int) -> bool:
    """Holding the lock on an existing file: True when it is ours to write in place,
    False after removing an earlier run (create anew); refuses anything else."""
    size = os.fstat(fd).st_size
    if size == 0:
        if _sidecars(path):
            raise _refuse(path, "is empty but has SQLite -wal/-shm files beside it")
        return True
    if not is_run_file(path):
        raise _refuse(path, "exists and is not a vizdebug run; refusing to overwrite it")
    for extra in [*_sidecars(path), path]:  # an earlier run nobody writes any more
        with contextlib.suppress(FileNotFoundError):
            extra.unlink()
    return False


def claim(path: Path) -> tuple[Path, int]:
    """Make the folder and take ``path`` for one writer: returns the path written (a
    symbolic link resolved) and the descriptor that holds the writer's lock."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VizdebugError(f"cannot create the folder for store={str(path)!r}: {exc}") from None
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    for _ in range(CLAIM_TRIES):
        fd = _open(path)
        if fd is None:
            continue
        if not _lock(fd):
            os.close(fd)
            raise _in_use(path)
        if _still_named(fd, path):
            try:
                if _take(path, fd):
                    return path, fd
            except BaseException:
                os.close(fd)
                raise
        os.close(fd)
    raise VizdebugError(f"store={str(path)!r} keeps being replaced by another process; "
                        "pass a file name of its own")


class LockProbe:
    """Asks the kernel whether a writer holds the lock of the run file at ``path``.

    One descriptor is kept open (reopened when the file is replaced): closing a
    descriptor of a file drops every POSIX lock this process holds on it, SQLite's too.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def _descriptor(self) -> int | None:
        if self._fd is not None and not _still_named(self._fd, self.path):
            release(self._fd)
            self._fd = None
        if self._fd is None:
            with contextlib.suppress(OSError):
                self._fd = os.open(self.path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
        return self._fd

    def writer_alive(self) -> bool | None:
        """True while a writer holds the lock, False when none does, None when this
        platform or file system cannot tell."""
        fd = self._descriptor() if fcntl is not None else None
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return None
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        return False

    def close(self) -> None:
        release(self._fd)
        self._fd = None

    def __del__(self) -> None:
        self.close()


def release(fd: int | None) -> None:
    """Let go of a writer's lock (harmless twice: pass None after)."""
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
