"""Stored run files as untrusted input and odd places: truncated, bit-flipped and crafted
files give clear errors naming the file and the table while the rest is still shown;
paths with odd characters, special files, symlinks, empty files, unwritable and read-only
places. Every case is bounded in time."""

from __future__ import annotations

import os
import socket
import sqlite3
import stat
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import vizdebug as vd
from vizdebug.errors import VizdebugError
from vizdebug.store.schema import is_run_file, to_npy


# -- damaged and crafted files --------------------------------------------------------------
@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("good") / "good.sqlite"
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(32, 4)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(x, torch.randint(0, 2, (32,))), batch_size=8)
    with vd.watch(model, loader=loader, store=path, every=1) as session:
        for _ in range(3):
            for xb, yb in loader:
                loss = torch.nn.functional.cross_entropy(model(xb), yb)
                loss.backward()
                session.log(loss=loss)
    assert not Path(f"{path}-wal").exists()
    return path.read_bytes()


def _exercise(path: Path) -> str:
    """Everything a user does with a run; only a VizdebugError may come out."""
    try:
        run = vd.open_run(path)
    except VizdebugError as exc:
        assert str(path) in str(exc)
        return "refused"
    for call in (run.records, run.findings, run.captured_batches, run.scalars, run.to_html,
                 lambda: repr(run), lambda: run.state):
        try:
            call()
        except VizdebugError as exc:
            assert str(path) in str(exc) and "table" in str(exc) or "cannot read" in str(exc)
    return "opened"


@pytest.mark.slow
def test_truncated_and_bit_flipped_files_give_clear_errors(tmp_path, finished_run):
    rng = np.random.default_rng(6)
    size = len(finished_run)
    cases = [finished_run[:n] for n in (16, 100, 4096, size // 2, size - 1)]
    for _ in range(40):
        data = bytearray(finished_run)
        for at in rng.integers(0, size, size=int(rng.integers(1, 8))):
            data[at] ^= 1 << int(rng.integers(0, 8))
        cases.append(bytes(data))
    outcomes = []
    for i, data in enumerate(cases):
        path = tmp_path / f"bad{i}.sqlite"
        path.write_bytes(data)
        start = time.monotonic()
        outcomes.append(_exercise(path))
        assert time.monotonic() - start < 10
    assert "refused" in outcomes and "opened" in outcomes


def _crafted(tmp_path: Path, good: bytes, name: str, *sql: tuple) -> Path:
    """A copy of ``good`` changed by the SQL statements ``sql``."""
    path = tmp_path / f"{name}.sqlite"
    path.write_bytes(good)
    with sqlite3.connect(path) as conn:
        for statement in sql:
            conn.execute(*statement)
    return path


def _npy_claiming(shape: tuple[int, ...]) -> bytes:
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': " + repr(shape) + ", }"
    header += " " * (63 - len(header) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 64


CRAFTED = {
    "huge-npy-rows": ("UPDATE samples SET rows=?", (_npy_claiming((1 << 20, 1 << 20, 8)),)),
    "huge-npy-loader": ("UPDATE blobs SET data=? WHERE name LIKE 'loader.%'",
                        (_npy_claiming((1 << 43,)),)),
    "npy-not-npy": ("UPDATE samples SET steps=?", (b"\x93NUMPY garbage",)),
    "wrong-width": ("UPDATE samples SET rows=?", (to_npy(np.zeros((1, 2, 3))),)),
    "text-steps": ("UPDATE scalars SET step='x' WHERE rowid % 2 = 0",),
    "blob-values": ("UPDATE system SET cpu_percent=x'00'",),
    "meta-types": ("UPDATE meta SET value='\"x\"' WHERE key IN ('interval', 'heartbeat', "
                   "'module_paths', 'every', 'world_size', 'param_numel')",),
    "meta-json": ("UPDATE meta SET value='[[[[' WHERE key='module_paths'",),
    "deep-json": ("UPDATE blobs SET data=? WHERE name='loader'", ("[" * 100_000,)),
    "events": ("INSERT OR REPLACE INTO blobs VALUES ('events', 'json', '[1, {\"kind\": 2}]')",),
    "errors": ("INSERT OR REPLACE INTO blobs VALUES ('errors', 'json', '{\"a\": 1}')",),
    "loader": ("UPDATE blobs SET data='{\"batches\": \"many\"}' WHERE name='loader'",),
    "batches": ("UPDATE blobs SET data=x'00' WHERE name LIKE 'batch.%'",),
    "batch-name": ("INSERT INTO blobs VALUES ('batch.x.y', 'npy', x'00')",),
    "world": ("UPDATE meta SET value='1000000000' WHERE key='world_size'",),
    "version": ("UPDATE meta SET value='\"2\"' WHERE key='format_version'",),
    "no-table": ("DROP TABLE samples",),
}


@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_crafted_files_give_clear_errors_and_show_the_rest(tmp_path, finished_run, name):
    statement = CRAFTED[name]
    path = _crafted(tmp_path, finished_run, name, statement)
    start = time.monotonic()
    outcome = _exercise(path)
    assert time.monotonic() - start < 10
    if outcome == "refused" or name in ("batches", "batch-name"):
        return
    run = vd.open_run(path)
    rec = run.records()  # what can be read is still shown
    if name not in ("text-steps", "meta-json"):
        assert rec.scalars["loss"][0].size == 12
    damage = [f for f in run.findings() if f.code == "collector-error"]
    assert damage and all(str(path) in f.where and "table" in f.where for f in damage)


def test_a_huge_npy_header_is_refused_before_allocating(tmp_path, finished_run):
    path = _crafted(tmp_path, finished_run, "65tib",
                    ("UPDATE blobs SET data=? WHERE name LIKE 'batch.%.0'",
                     (_npy_claiming((1 << 43,)),)))  # 64 TiB of float64
    with pytest.raises(VizdebugError, match=r"table 'blobs'.*claims shape \(8796093022208,\)"):
        vd.open_run(path).captured_batches()


# -- read-only and odd paths ----------------------------------------------------------------
@pytest.mark.parametrize("folder", ["a#b", "q?x", "p%41c", "sp ace", "ünï"])
def test_odd_characters_in_paths_round_trip_without_stray_files(tmp_path, folder):
    where = tmp_path / folder
    with vd.watch(torch.nn.Linear(3, 1), store=where / f"r{folder}.sqlite") as session:
        session.log(loss=2.0)
    run = vd.open_run(where / f"r{folder}.sqlite")
    assert run.state == "closed" and run.scalars()["value"].tolist() == [2.0]
    assert run.findings().codes == []
    assert os.listdir(tmp_path) == [folder] and os.listdir(where) == [f"r{folder}.sqlite"]


def test_special_files_are_refused_and_left_alone(tmp_path):
    model = torch.nn.Linear(3, 1)
    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo)
    devnull = tmp_path / "null.sqlite"
    devnull.symlink_to("/dev/null")
    sock_path = tmp_path / "s.sqlite"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    before = os.stat("/dev/null")
    try:
        for path, kind in ((fifo, "FIFO"), (devnull, "character device"),
                           (Path("/dev/null"), "character device"), (sock_path, "socket")):
            with pytest.raises(VizdebugError, match=f"is a {kind}.*never removes or replaces"):
                vd.watch(model, store=path)
            with pytest.raises(VizdebugError):
                vd.open_run(path)  # refused, never opened (a FIFO would hang)
    finally:
        sock.close()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert not model._forward_hooks


def test_empty_files_symlinks_and_leftovers(tmp_path):
    model = torch.nn.Linear(3, 1)
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    inode = empty.stat().st_ino
    with vd.watch(model, store=empty) as session:  # nothing to lose: used in place
        session.log(loss=1.0)
    assert empty.stat().st_ino == inode and is_run_file(empty)
    link = tmp_path / "latest.sqlite"
    link.symlink_to(empty)
    with vd.watch(model, store=link) as session:  # writes where the link points
        session.log(loss=3.0)
    assert link.is_symlink() and vd.open_run(link).scalars()["value"].tolist() == [3.0]
    stale = tmp_path / "stale.sqlite"
    stale.touch()
    Path(f"{stale}-wal").write_bytes(b"x" * 100)
    with pytest.raises(VizdebugError, match="empty but has SQLite -wal"):
        vd.watch(model, store=stale)
    assert Path(f"{stale}-wal").read_bytes() == b"x" * 100


def test_unwritable_places_give_clear_errors(tmp_path):
    model = torch.nn.Linear(3, 1)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(VizdebugError, match="cannot create the folder"):
        vd.watch(model, store=blocker / "r.sqlite")
    if os.geteuid() == 0:
        return  # root writes through permissions
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(VizdebugError, match="cannot create store"):
            vd.watch(model, store=ro / "r.sqlite")
    finally:
        ro.chmod(0o700)


def test_a_finished_run_reads_from_a_read_only_place(tmp_path):
    path = tmp_path / "ro" / "r.sqlite"
    with vd.watch(torch.nn.Linear(3, 1), store=path) as session:
        session.log(loss=1.0)
    path.chmod(0o400)
    path.parent.chmod(0o500)
    try:
        run = vd.open_run(path)
        assert run.state == "closed" and run.scalars()["value"].tolist() == [1.0]
        assert os.listdir(path.parent) == ["r.sqlite"]
    finally:
        path.parent.chmod(0o700)


def test_without_a_lock_to_ask_heartbeats_decide(tmp_path, finished_run):
    """A run from another machine (or an older vizdebug): no lock can be asked, so a
    'running' run is interrupted after 4 missed writes and a second."""
    path = _crafted(tmp_path, finished_run, "elsewhere",
                    ("UPDATE meta SET value='\"running\"' WHERE key='state'",),
                    ("UPDATE meta SET value='\"another-host\"' WHERE key='host'",),
                    ("UPDATE meta SET value=? WHERE key='heartbeat'", (str(time.time()),)))
    run = vd.open_run(path)
    assert run._writer_alive() is None and run.state == "running"
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value=? WHERE key='heartbeat'", (str(time.time() - 3.1),))
    assert vd.open_run(path).state == "interrupted"
