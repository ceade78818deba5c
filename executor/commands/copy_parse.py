"""A COPY's plain CSV parsed while it arrives, in order, on one decode thread.

Plain data (no quote, no backslash: a row is a line) in a layout the
compiled reader takes is handed over in pieces of ``PARSE_STEP`` bytes as it
is received.  One decode thread at a time parses them, oldest first, into
:class:`~splitstream.executor.backends.llvm.csv.Appender` columns, so that
at CopyDone only the last piece is left to parse, and the COPY's rows are
staged as one batch (one pass through the views, one WAL part) rather than
one per slab.  A piece the reader declines is kept as bytes, in its place,
for the general decoder (which words PostgreSQL's error for a bad row).
"""
from __future__ import annotations

import collections
import ctypes
import threading
from dataclasses import dataclass
from typing import Callable, Union

import numpy as np

from ..backends.llvm import csv as compiled_csv

Buffer = Union[bytes, memoryview]


@dataclass
class Rows:
    """Rows ``first`` to ``end`` of a batch, parsed (final)."""
    batch: compiled_csv.Appender
    first: int
    end: int

    @property
    def n(self) -> int:
        return self.end - self.first

    def columns(self) -> list[tuple[np.ndarray, np.ndarray | None]]:
        return self.batch.columns(self.first, self.end)


#: what the parse gives, in order: rows of columns, or a piece it declined
Parsed = Union[Rows, bytes]

#: received bytes handed to the parse at a time: at CopyDone at most this
#: much (and what came after it) is still to parse
PARSE_STEP = 512 << 10
#: rows of one batch, as bytes of the shortest rows (a larger COPY is staged
#: in batches of about this size while it arrives, bounding its memory)
BATCH_BYTES = 8 << 20
#: bytes handed over and not yet parsed, before the COPY's thread waits
MAX_QUEUED = 32 << 20
#: rows the last COPYs into a relation parsed (by oid): the next one's first
#: batch is sized from it (a batch is one allocation, never grown)
_rows_seen: dict[int, int] = {}
_ROWS_SEEN_KEPT = 1024


class PlainParse:
    """The ordered parse of one COPY's plain pieces (see the module)."""

    def __init__(self, new_columns: Callable[[int], compiled_csv.Appender | None], row_bytes: int,
                 key: int) -> None:
        self.new_columns = new_columns     # an Appender for so many rows, or None (the kernel compiles)
        self.max_rows = BATCH_BYTES // row_bytes + 1
        self.min_rows = min(self.max_rows, 2 * PARSE_STEP // row_bytes + 1)
        self.key = key
        self.rows = 0              # parsed into batches so far
        self.lock = threading.Condition()
        self.queue: collections.deque[list[Buffer]] = collections.deque()
        self.queued = 0
        self.running = False
        self.closed = False          # the COPY ended or failed: pieces still queued are dropped
        self.ready: list[Parsed] = []     # parsed, in order: rows of a full batch, declined pieces
        self.current: compiled_csv.Appender | None = None    # the batch being filled

    def add(self, pieces: list[Buffer]) -> None:
        """Parse these pieces (whole lines, in order) after the ones before."""
        size = sum(map(len, pieces))
        with self.lock:
            while self.queued > MAX_QUEUED and self.running:
                self.lock.wait()
            self.queue.append(pieces)
            self.queued += size
            if self.running:
                return
            self.running = True
        compiled_csv.run_ahead(self._drain)

    def last(self, pieces: list[Buffer]) -> list[Parsed]:
        """Everything, in order, with ``pieces`` (the COPY's last) parsed on
        the calling thread once those before are: at CopyDone the client
        waits, and a hand-over to a decode thread would only add a wake-up."""
        with self.lock:
            while self.running:
                self.lock.wait()
            self.running = True         # this thread appends now
        try:
            with compiled_csv.lent_scratch() as buf:
                self._parse(pieces, buf)
        finally:
            with self.lock:
                self.running = False
        return self.finish()

    def light(self, nbytes: int) -> bool:
        """Nothing is ready to stage, and ``nbytes`` more would not make :meth:`add` wait."""
        return not self.ready and self.queued + nbytes + PARSE_STEP <= MAX_QUEUED

    def has_ready(self) -> bool:
        return bool(self.ready)

    def take_ready(self) -> list[Parsed]:
        """The batches parsed and full, and declined pieces, oldest first."""
        with self.lock:
            out, self.ready = self.ready, []
        return out

    def take_parsed(self, least: int) -> list[Parsed]:
        """What is ready, and the rows of the batch being filled parsed so
        far if there are ``least`` of them, while the parse goes on: at
        CopyDone these are staged and logged while the rest is parsed."""
        with self.lock:
            out, self.ready = self.ready, []
            cur = self.current
            if cur is not None and cur.rows - cur.taken >= least:
                out.append(_rest(cur))
        return out

    def finish(self) -> list[Parsed]:
        """Everything, in order, once every piece given is parsed."""
        with self.lock:
            while self.running:
                self.lock.wait()
            if self.current is not None:
                self.rows += self.current.rows
                if self.current.rows > self.current.taken:
                    self.ready.append(_rest(self.current))
            self.current = None
            out, self.ready = self.ready, []
            if self.rows and not self.closed:
                if len(_rows_seen) >= _ROWS_SEEN_KEPT:
                    _rows_seen.clear()
                _rows_seen[self.key] = self.rows
        return out

    def _batch_rows(self) -> int:
        """Room for the next batch: the first sized like the last COPY into
        the relation (a quarter more), later ones (a large COPY) the most."""
        if self.rows:
            return self.max_rows
        seen = _rows_seen.get(self.key)
        return self.max_rows if seen is None else max(self.min_rows, min(self.max_rows, seen + seen // 4))

    def close(self) -> None:
        """The COPY failed: pieces not yet parsed are dropped."""
        with self.lock:
            self.closed = True
            self.queue.clear()
            self.ready, self.current = [], None

    def _drain(self) -> None:
        while True:
            with self.lock:
                if not self.queue or self.closed:
                    self.running = False
                    self.queued = 0
                    self.lock.notify_all()
                    return
                pieces = self.queue.popleft()
                size = sum(map(len, pieces))
            try:
                self._parse(pieces)
            finally:
                with self.lock:
                    self.queued -= size
                    self.lock.notify_all()

    def _parse(self, pieces: list[Buffer], scratch: np.ndarray | None = None) -> None:
        """Append the rows of ``pieces`` to the current batch, starting a new
        one when it is full; a part the kernel declines is kept as bytes."""
        done: list = []           # batches sealed (their rows not taken yet) and declined pieces
        cur = self.current
        for region in _regions(pieces, compiled_csv.scratch() if scratch is None else scratch):
            cur = self._append(region, cur, done)
        with self.lock:
            if not self.closed:
                self.ready.extend(_rest(p) if isinstance(p, compiled_csv.Appender) else p for p in done
                                  if not isinstance(p, compiled_csv.Appender) or p.rows > p.taken)
                self.current = cur

    def _append(self, data: Buffer | np.ndarray, cur: compiled_csv.Appender | None,
                done: list) -> compiled_csv.Appender | None:
        """Parse one region of whole lines onto ``cur`` (the batch being
        filled; a new one when full), adding what is finished to ``done``;
        returns the batch being filled now."""
        addr = np.frombuffer(data, np.uint8).ctypes.data
        pos, n = 0, len(data)
        while pos < n:
            if cur is None:
                cur = self.new_columns(self._batch_rows())
                if cur is None:          # the kernel is still compiling: the general path decodes
                    done.append(bytes(data[pos:]))
                    return None
            try:
                read = cur.parse(addr + pos, n - pos)
            except Exception:  # noqa: BLE001 - as a declined piece: the general decoder is exact
                read = -1
            if read < 0:
                self.rows += cur.rows
                if cur.rows:
                    done.append(cur)
                done.append(bytes(data[pos:]))
                return None
            pos += read
            if cur.full():
                self.rows += cur.rows
                done.append(cur)
                cur = None
        return cur


def _rest(batch: compiled_csv.Appender) -> Rows:
    """The rows of ``batch`` not taken yet, taken now (under the parse's lock)."""
    rows = Rows(batch, batch.taken, batch.rows)
    batch.taken = rows.end
    return rows


#: a received piece this large is parsed where it lies; smaller ones (psql
#: sends 8 kB CopyData) are joined first, as are the lines that straddle pieces
IN_PLACE_BYTES = 32 << 10


def _regions(pieces: list[Buffer], scratch: np.ndarray):
    """``pieces`` (whole lines together, cut anywhere between them) as
    buffers of whole lines, in order: the lines inside a large piece where
    they lie (no copy: joining every piece first cost a quarter of the
    parse), the rest joined in ``scratch`` (each region is parsed before
    the next is made, so one scratch serves them all)."""
    pending: list[Buffer] = []     # to be joined: small pieces, a partial line
    for p in pieces:
        if len(p) < IN_PLACE_BYTES:
            pending.append(p)
            continue
        first, last = _newline(p, False), _newline(p, True)
        if first < 0:
            pending.append(p)        # one line longer than the piece
            continue
        start = 0
        if pending:
            pending.append(memoryview(p)[:first + 1])
            yield compiled_csv.gather(pending, scratch)
            pending = []
            start = first + 1
        if last + 1 > start:
            yield memoryview(p)[start:last + 1]
        if last + 1 < len(p):
            pending.append(memoryview(p)[last + 1:])
    if pending:
        yield compiled_csv.gather(pending, scratch)


def _newline(p: Buffer, last: bool) -> int:
    """Where the first (``last``: the last) newline of ``p`` is; -1: none.
    memchr / memrchr for a memoryview, which has no find."""
    if isinstance(p, (bytes, bytearray)):
        return p.rfind(b"\n") if last else p.find(b"\n")
    addr = np.frombuffer(p, np.uint8).ctypes.data
    hit = (_memrchr if last else _memchr)(addr, 10, len(p))
    return -1 if hit is None else hit - addr


_libc = ctypes.CDLL(None)
_memchr, _memrchr = _libc.memchr, _libc.memrchr
for _f in (_memchr, _memrchr):
    _f.restype = ctypes.c_void_p
    _f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
