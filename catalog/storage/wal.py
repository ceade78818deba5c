"""Write-ahead log: an append-only sequence of framed, checksummed records.

A segment starts with a file header (magic number and format version,
:mod:`catalog.records`); then each record is ``len:u32 crc32:u32 body``
where body is the list of the transaction's operations, each encoded as a
named record type (:mod:`catalog.wal_records`).  A torn or corrupt
*last* record is cut off at replay (logged): a crash tore its write, and it
was never acknowledged, because a commit is acknowledged only after its
record is written (and fsynced when synchronous_commit is on).  A damaged
record with an intact one after it is corruption, not a crash: replay
refuses (:class:`WalCorruption`, naming the file and byte offset) and
``splitstream recover`` salvages what precedes it (:mod:`.wal_scan`).
Segments are numbered; a checkpoint names the first segment to replay.

Segments are preallocated: :data:`PREALLOC` bytes of zeros are written and
synced ahead of the writer, so a commit overwrites allocated blocks and its
``fdatasync`` journals no size or extent change (PostgreSQL's WAL does the
same).  The log of a segment ends at the first frame header of zeros
(:func:`.wal_scan.log_end`); a record torn inside the zeros is a torn tail.

Writes and fsyncs go through :mod:`.fileio`.  A failed write cuts the file
back to the record's start before the error (53100/58030) is raised; a
failed fsync cuts it back to what the last good fsync covered, and every
record in between is lost to its writer: no later append ever follows
bytes that were not known good.
"""
from __future__ import annotations

import logging
import os
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterator, Union

from splitstream.protocol.errors import PgError

from . import fileio, records
from .checkpoint_files import fsync_dir
from .wal_records import op_from_record, put_ops
from .wal_scan import Damage, WalCorruption, count_intact, damage_is_tail, frame_end, log_end, segment_records

log = logging.getLogger("splitstream.wal")

_HDR = struct.Struct("!II")

#: zeros written ahead of the writer at a time
PREALLOC = 4 << 20
#: a record this large or larger is written past the zeros instead (appended):
#: a COPY's slabs are not written twice, and the size change a later fdatasync
#: journals is paid once per large write rather than per small commit
APPEND_FROM = 64 << 10

#: The magic number of a WAL segment.
MAGIC = b"SSWAL"


#: parts of a body smaller than this are joined; larger ones (column arrays) stay views
JOIN_BELOW = 16 << 10

Body = Union[bytes, "list[bytes | memoryview]"]
"""A record's body: bytes, or (:func:`dumps_parts`) the buffers it is made of, in order."""


def dumps(ops: list[Any]) -> bytes:
    """The body of a record holding ``ops``."""
    parts: list[bytes | memoryview] = []
    put_ops(parts, ops)
    return b"".join(parts)


def dumps_parts(ops: list[Any]) -> list[bytes | memoryview]:
    """:func:`dumps` as the buffers of the body, the column arrays not copied:
    a COPY slab's record is written (``os.writev``) and checksummed straight
    from the decoded columns, which the views hold anyway.  The arrays must
    not change until the record is written."""
    parts: list[bytes | memoryview] = []
    put_ops(parts, ops)
    out: list[bytes | memoryview] = []
    small: list[bytes | memoryview] = []
    for p in parts:
        if len(p) < JOIN_BELOW:
            small.append(p)
            continue
        if small:
            out.append(b"".join(small))
            small = []
        out.append(p)
    if small:
        out.append(b"".join(small))
    return out


def body_len(body: Body) -> int:
    return len(body) if isinstance(body, (bytes, bytearray, memoryview)) else sum(len(p) for p in body)


def encode(ops: list[Any], crc32: Callable[..., int] = zlib.crc32) -> tuple[bytes, bytes]:
    """A record's frame header and body, ready for :meth:`Wal.append_record`:
    a COPY encodes its slabs while the data still arrives, not at CopyDone.
    ``crc32``: as for :func:`frame`."""
    body = dumps(ops)
    return frame(body, crc32), body


def frame(body: Body, crc32: Callable[..., int] = zlib.crc32) -> bytes:
    """The frame header of a record ``body``: its length and CRC-32.
    ``crc32``: any function with zlib.crc32's result and signature
    (``crc32(data, value)``; a COPY passes the executor's compiled one),
    chained over the buffers of a body given as parts."""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return _HDR.pack(len(body), crc32(body))
    crc = 0
    for p in body:
        crc = crc32(p, crc)
    return _HDR.pack(body_len(body), crc)


def decode_body(body: bytes) -> list[Any]:
    """The op list of a record body made by :func:`encode`."""
    recs = records.loads(body)
    if not isinstance(recs, list):
        raise records.FormatError("a WAL record body is not a list of operations")
    return [op_from_record(r) for r in recs]


HEADER_SIZE = _HDR.size


def decode_at(path: Path, pos: int, data: bytes, end: int) -> list[Any]:
    """The op list of the intact record at ``pos``; one whose checksum holds
    but whose body does not decode is corruption (:class:`WalCorruption`)."""
    try:
        return decode_body(data[pos + _HDR.size:end])    # a copy: arrays must not pin the segment
    except Exception as e:  # any failure to decode a checksummed body is damage
        why = e.message if isinstance(e, PgError) else f"{type(e).__name__}: {e}"
        raise WalCorruption(Damage(0, path, pos, data, f"undecodable record ({why})"),
                            "its checksum holds, so it was written whole") from e


def body_size(head: bytes) -> int:
    return int(_HDR.unpack(head)[0])


def check_segment(path: Path) -> None:
    """Raise :class:`records.FormatVersionError` (or FormatError) unless the
    segment at ``path`` is of this format (an empty or torn-header one is)."""
    with open(path, "rb") as f:
        head = f.read(records.HEADER_SIZE)
    if len(head) < records.HEADER_SIZE and records.file_header(MAGIC).startswith(head):
        return
    try:
        records.check_header(head, MAGIC, str(path))
    except records.FormatVersionError:
        raise
    except records.FormatError as e:
        raise WalCorruption(Damage(0, path, 0, head, e.message), "a header is never torn this way") from e


def _log_end(path: Path) -> int:
    """Where the log of the segment at ``path`` ends (0: no header yet): a
    segment opened again is appended to there, past its last intact record."""
    data = path.read_bytes()
    if len(data) < records.HEADER_SIZE:
        return 0
    pos = records.HEADER_SIZE
    while end := frame_end(data, pos):
        pos = end
    return pos


@dataclass
class Salvage:
    """What ``splitstream recover`` dropped: the damage it cut at (None: the
    WAL was intact), the intact records and bytes after it, and the later
    segment files removed."""

    damage: Damage | None
    records: int
    bytes: int
    files: list[Path]

    def report(self) -> str:
        d = self.damage
        if d is None:
            return "the WAL is intact; nothing was dropped"
        files = f" ({', '.join(p.name for p in self.files)})" if self.files else ""
        return (f'WAL damaged in file "{d.path}" at byte offset {d.offset}: {d.why()}\n'
                f"kept every record before it; dropped the rest: {self.records} intact record(s), "
                f"{self.bytes} byte(s) in all, and {len(self.files)} later WAL file(s){files}")


class _Lost:
    """Record numbers a failed fsync dropped, and the error their writers get."""

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int, PgError]] = []     # records lo < n <= hi

    def add(self, lo: int, hi: int, err: PgError) -> None:
        if hi > lo:
            self.ranges.append((lo, hi, err))

    def error(self, first: int, last: int) -> PgError | None:
        """The error of a lost record numbered ``first`` .. ``last``, if any."""
        for lo, hi, err in self.ranges:
            if first <= hi and last > lo:
                return PgError(err.sqlstate, err.message)
        return None


class Wal:
    def __init__(self, directory: Path, preallocate: bool = True) -> None:
        """``preallocate=False`` (``--fsync off``): no zeros ahead, since no
        commit waits for an fdatasync they would make cheaper."""
        self.dir = directory
        self.preallocate = preallocate
        self.dir.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self._sync_cond = threading.Condition()
        self._syncing = False
        self.written = 0      # records appended
        self.synced = 0       # records known to be on disk (or lost: see _lost)
        self._f: BinaryIO | None = None
        self.gen = 0
        self._path = self.path(0)
        self.size = 0
        #: the segment's length on disk: zeros past ``size`` up to here
        self._alloc = 0
        #: the offset in the current segment that the last good fsync covers
        self.synced_size = 0
        #: a failed write or fsync left bytes past this offset that could not
        #: be cut off yet: the next append cuts them first
        self._repair_to: int | None = None
        self._lost = _Lost()
        #: per thread: the first and last records it wrote since its last
        #: :meth:`sync`, and the error of one of them a failed fsync lost
        self._mine = threading.local()

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

    # ---------------------------------------------------------- replay
    def replay(self, from_gen: int) -> Iterator[tuple[str, list[Any]]]:
        """Yield where each record in segments >= from_gen is (file and
        byte offset, for messages) and its op list.

        A damaged record is cut off when nothing intact follows it (a torn
        tail, logged); otherwise :class:`WalCorruption` is raised."""
        gens = [g for g in self.segments() if g >= from_gen]
        for i, gen in enumerate(gens):
            path = self.path(gen)
            data = path.read_bytes()
            if len(data) < records.HEADER_SIZE:
                continue             # torn while its header was written: nothing was logged in it
            pos = records.check_header(data, MAGIC, str(path))
            while pos < len(data):
                end = frame_end(data, pos)
                if not end:
                    if log_end(data, pos):
                        break        # the preallocated zeros after the last record
                    self._damaged(Damage(gen, path, pos, data), gens[i + 1:])
                    break
                yield f'"{path}" at byte offset {pos}', decode_at(path, pos, data, end)
                pos = end

    def _damaged(self, damage: Damage, later: list[int]) -> None:
        """Cut off a torn tail; refuse damage that intact records follow."""
        if not damage_is_tail(damage, [self.path(g) for g in later]):
            raise WalCorruption(damage)
        log.warning("WAL file \"%s\": %s at byte offset %d, the end of the log (a write torn by a crash); "
                    "truncating the last %d bytes, which were never acknowledged",
                    damage.path, damage.why(), damage.offset, len(damage.data) - damage.offset)
        # cut it so later appends are not hidden behind garbage
        with open(damage.path, "r+b") as f:
            f.truncate(damage.offset)

    def salvage(self, from_gen: int) -> "Salvage":
        """``splitstream recover``: find the first damaged record in segments
        >= from_gen, cut the WAL there (dropping later segments), and report
        what was dropped.  Every record before it is kept."""
        gens = [g for g in self.segments() if g >= from_gen]
        for i, gen in enumerate(gens):
            damage = self._first_damage(gen)
            if damage is None:
                continue
            later = [self.path(g) for g in gens[i + 1:]]
            report = Salvage(damage, *count_intact(damage.data, damage.offset), later)
            for path in later:
                data = path.read_bytes()
                pos = segment_records(data)
                n, used = count_intact(data, pos) if pos is not None else (0, 0)
                report.records += n
                report.bytes += used + (pos or len(data))
            with open(damage.path, "r+b") as f:
                f.truncate(damage.offset)
                os.fsync(f.fileno())
            for path in later:
                path.unlink()
            fsync_dir(self.dir)
            return report
        return Salvage(None, 0, 0, [])

    def _first_damage(self, gen: int) -> Damage | None:
        path = self.path(gen)
        data = path.read_bytes()
        pos = segment_records(data)
        if pos is None:
            return None
        try:
            records.check_header(data, MAGIC, str(path))
        except records.FormatVersionError:
            raise                    # another format, not damage: refused, never cut
        except records.FormatError as e:
            return Damage(gen, path, 0, data, e.message)
        while pos < len(data):
            end = frame_end(data, pos)
            if not end:
                return None if log_end(data, pos) else Damage(gen, path, pos, data)
            try:
                decode_at(path, pos, data, end)
            except WalCorruption as e:
                return e.damage
            pos = end
        return None

    # ---------------------------------------------------------- writing
    def open_segment(self, gen: int) -> None:
        """Make segment ``gen`` the one appended to.  If it cannot be opened
        or its header written (a full disk), the error is raised and the
        next append tries again."""
        if self._f is not None:
            self._f.close()
            self._f = None
        self.gen = gen
        self._path = self.path(gen)
        self._open_current()

    def _open_current(self) -> BinaryIO:
        if self._f is None:
            try:
                self._f = os.fdopen(os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644), "r+b", buffering=0)
            except OSError as e:
                raise fileio.storage_error(e, "open", self._path) from e
            self.size = self.synced_size = _log_end(self._path)
            self._alloc = os.fstat(self._f.fileno()).st_size
            # a new segment's header is written now, or with the next append after a failure;
            # what follows the log of a segment opened again is cut (then preallocated again)
            self._repair_to = 0 if self.size == 0 else self.size if self._alloc > self.size else None
        self._repair(self._f)
        return self._f

    def append(self, ops: list[Any], sync: bool) -> int:
        head, body = encode(ops)
        return self.append_record(head, body, sync)

    def append_record(self, head: bytes, body: Body, sync: bool = False) -> int:
        """Append a record encoded by :func:`encode`; its number (for
        :meth:`sync_upto`).  A failed write leaves no byte of it behind."""
        with self.lock:
            # a small record in one write (one syscall per lean-insert group); a large
            # one in two, no copy of a multi-megabyte body; a tear between them is a
            # torn tail like any other (length and CRC checked at replay)
            f = self._open_current()
            start = self.size
            size = body_len(body)
            try:
                self._reserve(f, start + len(head) + size)
                if not isinstance(body, (bytes, bytearray, memoryview)):
                    fileio.writev_fully(f.fileno(), [head, *body], self._path)
                elif size < APPEND_FROM:
                    fileio.write_fully(f.fileno(), head + body, self._path)
                else:
                    fileio.write_fully(f.fileno(), head, self._path)
                    fileio.write_fully(f.fileno(), body, self._path)
            except (OSError, PgError) as e:
                self._cut(f, start)
                if isinstance(e, PgError):
                    raise
                raise fileio.storage_error(e, "write to", self._path) from e
            self.size += len(head) + size
            self._alloc = max(self._alloc, self.size)
            self.written += 1
            mine = self.written
            self._note_mine(mine)
        if sync:
            self.sync_upto(mine)
        return mine

    def _reserve(self, f: BinaryIO, end: int) -> None:
        """Make sure zeros are allocated (written and synced) up to ``end``,
        and :data:`PREALLOC` beyond, unless the record is :data:`APPEND_FROM` or larger
        (under ``lock``; the file position stays at ``size``)."""
        if not self.preallocate or end <= self._alloc or end - self.size >= APPEND_FROM:
            return
        fd, new = f.fileno(), end + PREALLOC
        os.lseek(fd, self._alloc, os.SEEK_SET)
        fileio.write_fully(fd, bytes(new - self._alloc), self._path)
        try:
            fileio.datasync(fd, self._path)
        except OSError as e:
            raise fileio.storage_error(e, "fsync", self._path) from e
        os.lseek(fd, self.size, os.SEEK_SET)
        self._alloc = new

    def _repair(self, f: BinaryIO) -> None:
        """Cut what a failed write or fsync left behind (under ``lock``), and
        write the segment header if the segment has none yet."""
        if self._repair_to is None:
            return
        path = self._path
        try:
            fileio.layer().truncate(f.fileno(), self._repair_to, path)
            self._alloc = self._repair_to
            os.lseek(f.fileno(), self._repair_to, os.SEEK_SET)
            if self._repair_to == 0:
                fileio.write_fully(f.fileno(), records.file_header(MAGIC), path)
                self.size = self._alloc = records.HEADER_SIZE
        except OSError as e:
            raise fileio.storage_error(e, "write to", path) from e
        self._repair_to = None

    def _cut(self, f: BinaryIO, size: int) -> None:
        """Cut the segment back to ``size`` (under ``lock``); if even that
        fails, the next append does it first."""
        self.size = size
        self._repair_to = size
        try:
            self._repair(f)
        except PgError as e:
            log.error("%s; the WAL is cut back before the next write", e.message)

    def _note_mine(self, record: int) -> None:
        """Remember the records this thread wrote since it last synced
        (:meth:`sync` fails if a failed fsync lost any of them)."""
        mine = self._mine
        low, last = getattr(mine, "low", None), getattr(mine, "last", 0)
        if low is not None and last <= self.synced:
            # all decided: durable, or lost (kept to fail its next sync)
            mine.err = getattr(mine, "err", None) or self._lost.error(low, last)
            low = None
        mine.low = record if low is None else low
        mine.last = record

    # ---------------------------------------------------------- fsync
    def sync_upto(self, record: int, first: int | None = None) -> None:
        """Group commit: one fsync covers every record written before it, so
        concurrent committers wait for a leader instead of each syncing.
        Raises 53100/58030 if a failed fsync lost a record ``first`` ..
        ``record`` (default: just ``record``)."""
        first = record if first is None else first
        with self._sync_cond:
            while True:
                err = self._lost.error(first, record)
                if err is not None:
                    raise err
                if self.synced >= record:
                    return
                if self._syncing:
                    self._sync_cond.wait()
                    continue
                self._syncing = True
                self._sync_cond.release()
                try:
                    self._lead_sync()
                finally:
                    self._sync_cond.acquire()
                    self._syncing = False
                    self._sync_cond.notify_all()

    def _lead_sync(self) -> PgError | None:
        """One fsync of everything written so far (the leader of a group);
        the error if it failed (its records are then lost)."""
        with self.lock:
            f, gen, target, target_size = self._f, self.gen, self.written, self.size
        fd: int | None = None
        if f is not None:
            try:
                fd = f.fileno()
            except ValueError:
                fd = None      # closed by a checkpoint, which fsynced it first
        try:
            if fd is not None:
                fileio.datasync(fd, self.path(gen))
        except OSError as e:
            return self._sync_failed(e, gen)
        with self.lock:
            self.synced = max(self.synced, target)
            if self.gen == gen:
                self.synced_size = max(self.synced_size, target_size)
        return None

    def _sync_failed(self, e: OSError, gen: int) -> PgError:
        """A failed fsync: what it covered may or may not be on disk, and a
        retried fsync cannot tell.  Cut the segment back to the last good
        fsync; every record after it is lost to its writer (its statement
        fails), and none is ever acknowledged."""
        err = fileio.storage_error(e, "fsync", self.path(gen))
        log.error("%s; the WAL is cut back to the last synced record", err.message)
        with self.lock:
            self._lost.add(self.synced, self.written, err)
            self.synced = self.written
            if self.gen == gen and self._f is not None:
                self._cut(self._f, self.synced_size)
        return err

    def sync(self) -> None:
        """Make every record this thread wrote since its last call durable
        (a COPY syncs once for all its slabs); raises 53100/58030 if a failed
        fsync lost any of them.  A record of an asynchronous commit lost that
        way fails its thread's next call too (conservatively)."""
        mine = self._mine
        low, last, err = getattr(mine, "low", None), getattr(mine, "last", 0), getattr(mine, "err", None)
        mine.low, mine.err = None, None
        if err is not None:
            raise err
        if low is not None:
            self.sync_upto(last, low)

    def sync_in_background(self) -> None:
        """Start an fsync of what is written so far on a helper thread; a
        later :meth:`sync` waits for it (group commit) instead of starting over."""
        threading.Thread(target=self._sync_quietly, name="wal-sync", daemon=True).start()

    def _sync_quietly(self) -> None:
        try:
            with self.lock:
                mine = self.written
            self.sync_upto(mine)
        except PgError:
            pass   # the writers' own syncs report real failures

    def remove_before(self, gen: int) -> None:
        for g in self.segments():
            if g < gen:
                try:
                    self.path(g).unlink()
                except FileNotFoundError:
                    pass

    def close(self) -> None:
        """Fsync and close the current segment (a checkpoint then opens the
        next); raises 53100/58030 and keeps it open if the fsync fails."""
        with self._sync_cond:
            while self._syncing:
                self._sync_cond.wait()
            self._syncing = True
        try:
            err = self._lead_sync()
        finally:
            with self._sync_cond:
                self._syncing = False
                self._sync_cond.notify_all()
        if err is not None:
            raise err
        with self.lock:
            if self._f is not None:
                self._f.close()
                self._f = None
