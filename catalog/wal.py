"""Write-ahead log: an append-only sequence of framed, checksummed records.

Each record is ``len:u32 crc32:u32 payload`` where payload is a pickled list
of operations.  Records with large array buffers (stream batches) set the
top bit of ``len`` and keep the buffers out of the pickle: the payload is
``nbufs:u32 meta_len:u64 buf_len:u64*nbufs meta buf*``, written with one
writev straight from the arrays (no copy of the batch into a pickle), the
CRC covering all of it.  Replay stops at the first torn or corrupt record: anything
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
_OOB = 0x80000000           # length flag: out-of-band buffer record
_OOB_MIN = 1 << 16          # pickles whose buffers total less than this stay in-band


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


class _WalPickler(pickle.Pickler):
    def reducer_override(self, obj):
        if type(obj) is np.ndarray and obj.dtype == object and obj.ndim == 1 and len(obj) > 32:
            packed = _pack_objects(obj)
            if packed is not None:
                return _unpack_objects, packed
        return NotImplemented


def dumps(ops: list) -> bytes:
    buf = io.BytesIO()
    _WalPickler(buf, protocol=5).dump(ops)
    return buf.getvalue()


def dumps_parts(ops: list) -> list:
    """The record payload as a list of byte-like parts: one in-band pickle,
    or, when the ops carry large contiguous arrays, the out-of-band layout
    (module docstring) whose array parts are the arrays' own memory."""
    bufs: list = []
    buf = io.BytesIO()
    _WalPickler(buf, protocol=5, buffer_callback=bufs.append).dump(ops)
    meta = buf.getvalue()
    if not bufs:
        return [meta]
    raws = [b.raw() for b in bufs]
    if sum(r.nbytes for r in raws) < _OOB_MIN:
        return [dumps(ops)]
    head = struct.pack(f"<IQ{len(raws)}Q", len(raws), len(meta), *(r.nbytes for r in raws))
    return [head, meta, *raws]


def _loads_oob(body) -> list:
    """Inverse of the out-of-band layout; the arrays come back writable (own copies)."""
    n, mlen = struct.unpack_from("<IQ", body, 0)
    lens = struct.unpack_from(f"<{n}Q", body, 12)
    pos = 12 + 8 * n
    meta = body[pos:pos + mlen]
    pos += mlen
    bufs = []
    for ln in lens:
        bufs.append(bytearray(body[pos:pos + ln]))
        pos += ln
    return pickle.loads(meta, buffers=bufs)


def _write_all(f, parts: list) -> None:
    fd = f.fileno()
    total = sum(memoryview(p).nbytes for p in parts)
    done = os.writev(fd, parts)
    if done == total:
        return
    flat = [memoryview(p).cast("B") for p in parts]
    for mv in flat:
        n = mv.nbytes
        if done >= n:
            done -= n
            continue
        mv = mv[done:]
        done = 0
        while mv.nbytes:
            k = os.write(fd, mv)
            mv = mv[k:]


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
            view = memoryview(data)
            while pos + _HDR.size <= len(data):
                ln, crc = _HDR.unpack_from(data, pos)
                oob = bool(ln & _OOB)
                ln &= ~_OOB
                body = view[pos + _HDR.size : pos + _HDR.size + ln]
                if len(body) < ln or zlib.crc32(body) != crc:
                    break
                yield _loads_oob(body) if oob else pickle.loads(body)
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

    def append(self, ops: list, sync: bool) -> int:
        """Write one record (and fsync it when ``sync``); returns its number for :meth:`sync_upto`."""
        return self.write(self.encode(ops), sync)

    @staticmethod
    def encode(ops: list) -> list:
        """The record's payload parts (the pickling: Python work, under the GIL)."""
        return dumps_parts(ops)

    def write(self, parts: list, sync: bool) -> int:
        """Append an encoded record: CRC, writev and fsync, which release the
        GIL, so a helper thread can do this while the caller goes on."""
        crc, size = 0, 0
        for p in parts:
            crc = zlib.crc32(p, crc)
            size += memoryview(p).nbytes
        if size & _OOB:
            raise ValueError("WAL record too large")
        head = _HDR.pack(size | (_OOB if len(parts) > 1 else 0), crc)
        with self.lock:
            # one writev, no copy of a multi-megabyte body; a short write is
            # finished with plain writes, and a tear anywhere is a torn tail
            # like any other (length and CRC checked at replay)
            _write_all(self._f, [head, *parts])
            self.size += len(head) + size
            self.written += 1
            mine = self.written
        if sync:
            self.sync_upto(mine)
        return mine

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
