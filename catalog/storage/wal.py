"""Write-ahead log: an append-only sequence of framed, checksummed records.

A segment starts with a file header (magic number and format version,
:mod:`catalog.records`); then each record is ``len:u32 crc32:u32 body``
where body is the list of the transaction's operations, each encoded as a
named record type (:mod:`catalog.wal_records`).  Replay stops at the first
torn or corrupt record: anything after it was never acknowledged, because a
commit is acknowledged only after its record is written (and fsynced when
synchronous_commit is on).  Segments are numbered; a checkpoint names the
first segment to replay.
"""
from __future__ import annotations

import os
import struct
import threading
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from . import records
from .wal_records import op_from_record, put_ops

_HDR = struct.Struct("!II")

#: The magic number of a WAL segment.
MAGIC = b"SSWAL"


def dumps(ops: list[Any]) -> bytes:
    """The body of a record holding ``ops``."""
    parts: list[bytes | memoryview] = []
    put_ops(parts, ops)
    return b"".join(parts)


def encode(ops: list[Any]) -> tuple[bytes, bytes]:
    """A record's frame header and body, ready for :meth:`Wal.append_record`:
    a COPY encodes its slabs while the data still arrives, not at CopyDone."""
    body = dumps(ops)
    return _HDR.pack(len(body), zlib.crc32(body)), body


def decode_body(body: bytes) -> list[Any]:
    """The op list of a record body made by :func:`encode`."""
    recs = records.loads(body)
    if not isinstance(recs, list):
        raise records.FormatError("a WAL record body is not a list of operations")
    return [op_from_record(r) for r in recs]


HEADER_SIZE = _HDR.size


def body_size(head: bytes) -> int:
    return int(_HDR.unpack(head)[0])


def check_segment(path: Path) -> None:
    """Raise :class:`records.FormatVersionError` (or FormatError) unless the
    segment at ``path`` is of this format (an empty or torn-header one is)."""
    with open(path, "rb") as f:
        head = f.read(records.HEADER_SIZE)
    if len(head) < records.HEADER_SIZE and records.file_header(MAGIC).startswith(head):
        return
    records.check_header(head, MAGIC, str(path))


def _write_fully(f: BinaryIO, data: bytes) -> None:
    """An unbuffered file's write may be short (a signal, a full disk): finish it."""
    mv = memoryview(data)
    while mv.nbytes:
        mv = mv[f.write(mv):]


class Wal:
    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self._sync_cond = threading.Condition()
        self._syncing = False
        self.written = 0      # records appended
        self.synced = 0       # records known to be on disk
        self._f: BinaryIO | None = None
        self.gen = 0
        self.size = 0

    def segments(self) -> list[int]:
        gens = []
        for p in self.dir.glob("wal.*"):
            try:
                gens.append(int(p.suffix[1:]))
            except ValueError:
                pass
        return sorted(gens)

    def path(self, gen: int) -> Path:
        return self.dir / f"wal.{gen:08d}"

    def replay(self, from_gen: int) -> Iterator[list[Any]]:
        """Yield the op lists of every intact record in segments >= from_gen."""
        for gen in self.segments():
            if gen < from_gen:
                continue
            data = self.path(gen).read_bytes()
            if len(data) < records.HEADER_SIZE:
                good = 0             # torn while its header was written: nothing was logged in it
            else:
                good = pos = records.check_header(data, MAGIC, str(self.path(gen)))
            while good and pos + _HDR.size <= len(data):
                ln, crc = _HDR.unpack_from(data, pos)
                body = data[pos + _HDR.size : pos + _HDR.size + ln]
                if len(body) < ln or zlib.crc32(body) != crc:
                    break
                yield decode_body(body)
                pos += _HDR.size + ln
                good = pos
            if good < len(data):
                # Torn tail: cut it so later appends are not hidden behind garbage.
                with open(self.path(gen), "r+b") as f:
                    f.truncate(good)

    def open_segment(self, gen: int) -> None:
        if self._f is not None:
            self._f.close()
        self.gen = gen
        self._f = open(self.path(gen), "ab", buffering=0)
        self.size = self._f.tell()
        if self.size == 0:
            _write_fully(self._f, records.file_header(MAGIC))
            self.size = records.HEADER_SIZE

    def append(self, ops: list[Any], sync: bool) -> None:
        head, body = encode(ops)
        self.append_record(head, body, sync)

    def append_record(self, head: bytes, body: bytes, sync: bool = False) -> None:
        """Append a record encoded by :func:`encode`."""
        with self.lock:
            # two writes, no copy of a multi-megabyte body; a tear between them
            # is a torn tail like any other (length and CRC checked at replay)
            f = self._f
            assert f is not None, "append before open_segment"
            _write_fully(f, head)
            _write_fully(f, body)
            self.size += len(head) + len(body)
            self.written += 1
            mine = self.written
        if sync:
            self.sync_upto(mine)

    def sync_upto(self, record: int) -> None:
        """Group commit: one fsync covers every record written before it, so
        concurrent committers wait for a leader instead of each syncing."""
        with self._sync_cond:
            while self.synced < record:
                if not self._syncing:
                    self._syncing = True
                    target = self.written
                    f = self._f
                    self._sync_cond.release()
                    try:
                        if f is not None:
                            try:
                                fd = f.fileno()
                            except ValueError:
                                fd = None      # closed by a checkpoint, which fsynced it first
                            if fd is not None:
                                os.fsync(fd)
                    finally:
                        self._sync_cond.acquire()
                        self._syncing = False
                    self.synced = max(self.synced, target)
                    self._sync_cond.notify_all()
                else:
                    self._sync_cond.wait()

    def sync(self) -> None:
        with self.lock:
            mine = self.written
        self.sync_upto(mine)

    def sync_in_background(self) -> None:
        """Start an fsync of what is written so far on a helper thread; a
        later :meth:`sync` waits for it (group commit) instead of starting over."""
        threading.Thread(target=self._sync_quietly, name="wal-sync", daemon=True).start()

    def _sync_quietly(self) -> None:
        try:
            self.sync()
        except OSError:
            pass   # the caller's own sync reports real failures

    def remove_before(self, gen: int) -> None:
        for g in self.segments():
            if g < gen:
                try:
                    self.path(g).unlink()
                except FileNotFoundError:
                    pass

    def close(self) -> None:
        with self.lock:
            if self._f is not None:
                os.fsync(self._f.fileno())
                self._f.close()
                self._f = None
