"""A large stream batch starts its WAL fsync before the views take it.

The fsync of a 100k-row COPY took as long as a third of its view
maintenance; overlapping the two must not weaken durability: the insert
returns only once its record is synced.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from splitstream.catalog.storage.database import EARLY_SYNC_ROWS, Database


def test_fsync_overlaps_apply_and_completes_before_return(tmp_path, monkeypatch):
    db = Database(tmp_path / "d", fsync=True)
    db.open()
    started = threading.Event()
    real_fsync = os.fsync
    synced_threads: list[str] = []

    def fsync(fd):
        synced_threads.append(threading.current_thread().name)
        started.set()
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    seen: list[bool] = []

    def apply(seq):  # the views' work: the fsync must already be under way
        seen.append(started.wait(10))

    n = EARLY_SYNC_ROWS
    cols = [(np.arange(n, dtype=np.int64), None)]
    db.ingest_stream(1, cols, apply, sync=True)
    assert seen == [True]
    assert "wal-sync" in synced_threads
    assert db.wal.synced >= db.wal.written     # durable before the insert returned
    db.wal.close()


def test_small_batches_sync_in_the_caller(tmp_path, monkeypatch):
    db = Database(tmp_path / "d", fsync=True)
    db.open()
    names: list[str] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (names.append(threading.current_thread().name), real_fsync(fd))[1])
    db.ingest_stream(1, [(np.arange(10, dtype=np.int64), None)], lambda seq: None, sync=True)
    assert names and "wal-sync" not in names
    assert db.wal.synced >= db.wal.written
    db.wal.close()


def test_sync_after_a_checkpoint_closed_the_segment(tmp_path):
    """A committer that picked up the segment a checkpoint then closed (the
    close fsynced it) must not fail its commit."""
    from splitstream.catalog.storage.wal import Wal, encode

    wal = Wal(tmp_path / "wal")
    wal.open_segment(1)
    wal.append_record(*encode([("setval", 1, 1)]))
    wal._f.close()              # closed under the committer, as Wal.close does after its fsync
    wal.sync()
    assert wal.synced >= wal.written


def test_short_writes_are_finished(tmp_path):
    import os

    from splitstream.catalog.storage import fileio

    class Trickle(fileio.FileLayer):
        def write(self, fd, data, path):
            return os.write(fd, data[:3])

    path = tmp_path / "f"
    old = fileio.use(Trickle())
    try:
        with open(path, "wb", buffering=0) as f:
            fileio.write_fully(f.fileno(), b"0123456789", path)
    finally:
        fileio.use(old)
    assert path.read_bytes() == b"0123456789"
