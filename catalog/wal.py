"""Write-ahead log: an append-only sequence of framed, checksummed records.

Each record is ``len:u32 crc32:u32 payload`` where payload is a pickled list
of operations.  Replay stops at the first torn or corrupt record: anything
after it was never acknowledged, because a commit is acknowledged only after
its record is written (and fsynced when synchronous_commit is on).
Segments are numbered; a checkpoint names the first segment to replay.
"""
from __future__ import annotations

import decimal
import io
import os
import pickle
import struct
import threading
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np

_HDR = struct.Struct("!II")


def _pack_objects(arr: np.ndarray):
    """Object columns of str or Decimal as one joined string: pickling them
    element by element dominated the cost of logging a batch."""
    lst = arr.tolist()
    nones = [i for i, v in enumerate(lst) if v is None]
    kinds = set(map(type, lst))
    kinds.discard(type(None))
    if kinds == {str}:
        vals = lst if not nones else ["" if v is None else v for v in lst]
        if any("\0" in v for v in vals[:0]):
            return None
        blob = "\0".join(vals)
        if blob.count("\0") != len(vals) - 1:
            return None
        return ("s", blob.encode("utf-8", "surrogatepass"), len(vals), nones)
    if kinds == {decimal.Decimal}:
        vals = lst if not nones else [decimal.Decimal(0) if v is None else v for v in lst]
        return ("d", "\0".join(map(str, vals)).encode(), len(vals), nones)
    return None


def _unpack_objects(kind: str, blob: bytes, n: int, nones: list) -> np.ndarray:
    text = blob.decode("utf-8", "surrogatepass")
    vals = text.split("\0") if n else []
    if kind == "d":
        vals = list(map(decimal.Decimal, vals))
    for i in nones:
        vals[i] = None
    out = np.empty(n, dtype=object)
    out[:] = vals
    return out


#: Fixed-width arrays up to this size are logged as (dtype string, bytes):
#: numpy's own reduce pickles a dtype object per array, which made the WAL
#: record of a one-row insert cost ~40 us.  Larger arrays keep numpy's
#: reduce, which does not copy the data an extra time.
SMALL_ARRAY_BYTES = 64 << 10


def _small_array(dtype: str, data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=dtype).copy()      # writable, like an unpickled array


class _WalPickler(pickle.Pickler):
    def reducer_override(self, obj):
        if type(obj) is np.ndarray and obj.ndim == 1:
            if obj.dtype == object:
                if len(obj) > 32:
                    packed = _pack_objects(obj)
                    if packed is not None:
                        return _unpack_objects, packed
            elif obj.nbytes <= SMALL_ARRAY_BYTES and obj.dtype.kind in "biufMm":
                return _small_array, (obj.dtype.str, obj.tobytes())
        return NotImplemented


def dumps(ops: list) -> bytes:
    buf = io.BytesIO()
    _WalPickler(buf, protocol=5).dump(ops)
    return buf.getvalue()


def encode(ops: list) -> tuple[bytes, bytes]:
    """A record's frame header and body, ready for :meth:`Wal.append_record`:
    a COPY encodes its slabs while the data still arrives, not at CopyDone."""
    body = dumps(ops)
    return _HDR.pack(len(body), zlib.crc32(body)), body


def decode_body(body: bytes) -> list:
    """The op list of a record body made by :func:`encode`."""
    return pickle.loads(body)


HEADER_SIZE = _HDR.size


def body_size(head: bytes) -> int:
    return _HDR.unpack(head)[0]


def _write_fully(f, data: bytes) -> None:
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
        self._f = None
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

    def replay(self, from_gen: int) -> Iterator[list]:
        """Yield the op lists of every intact record in segments >= from_gen."""
        for gen in self.segments():
            if gen < from_gen:
                continue
            data = self.path(gen).read_bytes()
            pos = 0
            good = 0
            while pos + _HDR.size <= len(data):
                ln, crc = _HDR.unpack_from(data, pos)
                body = data[pos + _HDR.size : pos + _HDR.size + ln]
                if len(body) < ln or zlib.crc32(body) != crc:
                    break
                yield pickle.loads(body)
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

    def append(self, ops: list, sync: bool) -> None:
        head, body = encode(ops)
        self.append_record(head, body, sync)

    def append_record(self, head: bytes, body: bytes, sync: bool = False) -> None:
        """Append a record encoded by :func:`encode`."""
        with self.lock:
            # two writes, no copy of a multi-megabyte body; a tear between them
            # is a torn tail like any other (length and CRC checked at replay)
            _write_fully(self._f, head)
            _write_fully(self._f, body)
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
