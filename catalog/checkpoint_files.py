"""Checkpoint files: the snapshot itself, and large tables in files of their own.

A checkpoint used to pickle every table into one file each time.  With a
10-million-row dimension table beside a stream, that meant seconds of
pickling (holding the GIL against ingest) for data that had not changed
since the last checkpoint.  Tables are snapshots (a write publishes a new
:class:`TableVersion`), so "unchanged" is object identity: a large table's
file is written once per version and referenced by later checkpoints until
the table changes.
"""
from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

from .storage import TableVersion

#: Tables with fewer rows stay inside the checkpoint file (a file per small
#: table would cost more than pickling it again).
INLINE_ROWS = 50_000


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_durably(path: Path, obj: Any, *, sync_dir: bool = True) -> None:
    """Pickle ``obj`` to ``path`` atomically: a temporary file, fsync, rename."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        pickle.dump(obj, f, protocol=5)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    if sync_dir:
        fsync_dir(path.parent)


class TableFiles:
    """The table files of the current checkpoint (one checkpoint at a time)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._written: dict[int, tuple[TableVersion, str]] = {}

    def write(self, state, gen: int) -> dict[int, str]:
        """Move ``state``'s large tables out of it into files (reusing the file
        of a table unchanged since the last checkpoint); returns oid -> file."""
        written: dict[int, tuple[TableVersion, str]] = {}
        fresh = False
        for oid, tv in list(state.data.items()):
            if tv.n_total < INLINE_ROWS:
                continue
            prev = self._written.get(oid)
            if prev is None or prev[0] is not tv:
                self.dir.mkdir(exist_ok=True)
                prev = (tv, f"{oid}.{gen}")
                write_durably(self.dir / prev[1], tv, sync_dir=False)
                fresh = True
            written[oid] = prev
            del state.data[oid]
        if fresh:
            fsync_dir(self.dir)
        self._written = written
        return {oid: name for oid, (_tv, name) in written.items()}

    def remove_unused(self) -> None:
        """Delete files no durable checkpoint refers to any more."""
        if not self.dir.exists():
            return
        keep = {name for _tv, name in self._written.values()}
        for p in self.dir.iterdir():
            if p.name not in keep:
                p.unlink(missing_ok=True)

    def load(self, state, files: dict[int, str]) -> None:
        for oid, name in files.items():
            with open(self.dir / name, "rb") as f:
                tv = pickle.load(f)
            state.data[oid] = tv
            self._written[oid] = (tv, name)
