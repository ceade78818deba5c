"""The WAL's writes and fsyncs: a segment closed under a committer, and
short writes finished (the file layer may write less than asked)."""
from __future__ import annotations

import os

from splitstream.catalog.storage import fileio
from splitstream.catalog.storage.wal import Wal, encode


def test_sync_after_a_checkpoint_closed_the_segment(tmp_path):
    """A committer that picked up the segment a checkpoint then closed (the
    close fsynced it) must not fail its commit."""
    wal = Wal(tmp_path / "wal")
    wal.open_segment(1)
    wal.append_record(*encode([("setval", 1, 1)]))
    wal._f.close()              # closed under the committer, as Wal.close does after its fsync
    wal.sync()
    assert wal.synced >= wal.written


def test_short_writes_are_finished(tmp_path):
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
