"""Checkpoint files: the snapshot itself, and large tables in files of their own.

A checkpoint used to pickle every table into one file each time.  With a
10-million-row dimension table beside a stream, that meant seconds of
pickling (holding the GIL against ingest) for data that had not changed
since the last checkpoint.  Tables are snapshots (a write publishes a new
:class:`TableVersion`), so "unchanged" is object identity: a large table's
file is written once per version and referenced by later checkpoints until
the table changes.

Both kinds of file start with a magic number and the format version and
hold :mod:`catalog.records` values: a table is a "table" record of column
arrays, never a pickled :class:`TableVersion`.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import fileio, records
from .tables import TableVersion
from .wal_records import ColumnArrays, columns_in, columns_out

#: Magic numbers of a checkpoint and of a table file.
CHECKPOINT_MAGIC = b"SSCKPT"
TABLE_MAGIC = b"SSTABLE"

records.register("table", 1, ("type_oids", "columns", "rows"))

#: Tables with fewer rows stay inside the checkpoint file (a file per small
#: table would cost more than pickling it again).
INLINE_ROWS = 50_000


def fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            fileio.fsync(fd, path)
        finally:
            os.close(fd)
    except OSError as e:
        raise fileio.storage_error(e, "fsync", path) from e


def write_durably(path: Path, magic: bytes, value: Any, *, sync_dir: bool = True) -> None:
    """Write ``value`` to ``path`` atomically (a temporary file, fsync,
    rename), after the header of a file of kind ``magic``.  A failed write
    or fsync (through :mod:`fileio`) leaves ``path`` as it was, removes the
    temporary file and raises 53100/58030."""
    tmp = path.with_name(path.name + ".tmp")
    parts: list[bytes | memoryview] = [records.file_header(magic)]
    records.dump_parts(value, parts)
    action = "write to"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            out = fileio.ChunkedWriter(fd, tmp)
            for part in parts:
                out.write(part)
            out.flush()
            action = "fsync"
            fileio.fsync(fd, tmp)
        finally:
            os.close(fd)
        action = "rename"
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise fileio.storage_error(e, action, tmp) from e
    if sync_dir:
        fsync_dir(path.parent)


def read_file(path: Path, magic: bytes) -> Any:
    """The value of a file written by :func:`write_durably`."""
    data = path.read_bytes()
    return records.loads(data, records.check_header(data, magic, str(path)))


def check_file(path: Path, magic: bytes) -> None:
    """Raise unless ``path`` is a file of kind ``magic`` in this format version."""
    with open(path, "rb") as f:
        records.check_header(f.read(records.HEADER_SIZE), magic, str(path))


def table_record(tv: TableVersion) -> records.Record:
    """A table's live rows, compacted, as a record of column arrays."""
    batch, _ = tv.compacted().scan()
    cols: list[ColumnArrays] = [(c.data, c.null_mask()) for c in batch.cols]
    return records.Record("table", {"type_oids": list(tv.oids), "columns": columns_out(cols), "rows": batch.n})


def table_from_record(rec: records.Record) -> TableVersion:
    f = rec.fields
    tv = TableVersion(f["type_oids"])
    return tv.append_arrays(columns_in(f["columns"])) if f["rows"] else tv


class TableFiles:
    """The table files of the current checkpoint (one checkpoint at a time)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._written: dict[int, tuple[TableVersion, str]] = {}

    def write(self, state: Any, gen: int) -> dict[int, str]:
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
                write_durably(self.dir / prev[1], TABLE_MAGIC, table_record(tv), sync_dir=False)
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

    def check(self, files: dict[int, str]) -> None:
        for name in files.values():
            check_file(self.dir / name, TABLE_MAGIC)

    def load(self, state: Any, files: dict[int, str]) -> None:
        for oid, name in files.items():
            tv = table_from_record(read_file(self.dir / name, TABLE_MAGIC))
            state.data[oid] = tv
            self._written[oid] = (tv, name)
