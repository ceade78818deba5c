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
import threading
from typing import Callable, Union

import numpy as np

from ..backends.llvm import csv as compiled_csv

Buffer = Union[bytes, memoryview]
#: what the parse gives, in order: columns, or a piece it declined
Parsed = Union[compiled_csv.Appender, bytes]

#: received bytes handed to the parse at a time: at CopyDone at most this
#: much (and what came after it) is still to parse
PARSE_STEP = 512 << 10
#: rows of one batch, as bytes of the shortest rows (a larger COPY is staged
#: in batches of about this size while it arrives, bounding its memory)
BATCH_BYTES = 8 << 20
#: bytes handed over and not yet parsed, before the COPY's thread waits
MAX_QUEUED = 32 << 20
#: a slab: received payloads copied out of the server's read buffer, handed
#: to the parse every ``PARSE_STEP`` bytes (see ``CopySink.feed_spans``)
SLAB_BYTES = 2 * PARSE_STEP
#: slabs kept for reuse once parsed: a fresh one would be fresh pages
#: (first-touch page faults cost as much as the copy)
_SLABS_KEPT = 8
_slabs: list[bytearray] = []
_slabs_lock = threading.Lock()


def take_slab() -> bytearray:
    """A slab of ``SLAB_BYTES``, reused when one is free (a new one is zeroed once)."""
    with _slabs_lock:
        if _slabs:
            return _slabs.pop()
    return bytearray(SLAB_BYTES)


def give_slab(slab: bytearray) -> None:
    """``slab`` is parsed (nothing points into it): it may be reused."""
    with _slabs_lock:
        if len(_slabs) < _SLABS_KEPT:
            _slabs.append(slab)


#: rows the last COPYs into a relation parsed (by oid): the next one's first
#: batch is sized from it (a batch is one allocation, never grown)
_rows_seen: dict[int, int] = {}
_ROWS_SEEN_KEPT = 1024


class PlainParse:
    """The ordered parse of one COPY's plain pieces (see the module)."""

    def __init__(self, new_columns: Callable[[int], compiled_csv.Appender | None], row_bytes: int,
                 key: int) -> None:
        self.new_columns = new_columns     # an Appender for so many rows, or None (the kernel compiles)
        self.row_bytes = row_bytes
        self.max_rows = BATCH_BYTES // row_bytes + 1
        self.min_rows = min(self.max_rows, 2 * PARSE_STEP // row_bytes + 1)
        self.key = key
        self.rows = 0              # parsed into batches so far
        self.lock = threading.Condition()
        #: pieces to parse, in order, and what to call once they are (a slab given back)
        self.queue: collections.deque[tuple[list[Buffer], Callable[[], None] | None]] = collections.deque()
        self.queued = 0
        self.running = False
        self.closed = False          # the COPY ended or failed: pieces still queued are dropped
        self.ready: list[Parsed] = []     # parsed, in order, whole (a full batch or a declined piece)
        self.current: compiled_csv.Appender | None = None    # the batch being filled
        self.failure: BaseException | None = None    # the parse failed (not a declined piece): raised here

    def add(self, pieces: list[Buffer], parsed: Callable[[], None] | None = None) -> None:
        """Parse these pieces (whole lines, in order) after the ones before,
        then call ``parsed`` (nothing points into the pieces any more)."""
        size = sum(map(len, pieces))
        with self.lock:
            while self.queued > MAX_QUEUED and self.running:
                self.lock.wait()
            self._raise_failure()
            self.queue.append((pieces, parsed))
            self.queued += size
            if self.running:
                return
            self.running = True
        compiled_csv.run_ahead(self._drain)

    def last(self, pieces: list[Buffer]) -> list[Parsed]:
        """Everything, in order, with ``pieces`` (the COPY's last) parsed on
        the calling thread: at CopyDone the client waits, and a hand-over to
        a decode thread would only add a wake-up.  If the decode thread is
        still busy, this thread does not wait idle for it: it takes the
        later part of what is queued (:meth:`_steal`) and parses that and
        ``pieces`` into columns of its own meanwhile, appended after the
        decode thread's once it is done (:meth:`_join`)."""
        with self.lock:
            self._raise_failure()
            stolen = self._steal(sum(map(len, pieces))) if self.running else None
            if stolen is None:
                self.running = True         # this thread appends now
        if stolen is None:
            try:
                with compiled_csv.lent_scratch() as buf:
                    self._parse(pieces, buf)
            finally:
                with self.lock:
                    self.running = False
            return self.finish()
        done: list[Parsed] = []
        cur = None
        work = [*stolen, (pieces, None)]
        room = self._tail_rows(sum(len(b) for part, _ in work for b in part))
        with compiled_csv.lent_scratch() as buf:
            for part, parsed in work:
                cur = self._run(part, cur, done, buf, room)
                if parsed is not None:
                    parsed()
        with self.lock:
            while self.running:
                self.lock.wait()
            self._raise_failure()
            self._join(done + ([cur] if cur is not None and cur.rows else []))
        return self.finish()

    def _steal(self, nbytes: int) -> list[tuple[list[Buffer], Callable[[], None] | None]]:
        """The queued entries from the newest back, as long as they and the
        last ``nbytes`` are at most half of what is left to parse (the
        decode thread goes on with the older ones; the lock is held)."""
        left = self.queued + nbytes
        out: list[tuple[list[Buffer], Callable[[], None] | None]] = []
        mine = nbytes
        while self.queue:
            size = sum(map(len, self.queue[-1][0]))
            if 2 * (mine + size) > left:
                break
            out.append(self.queue.pop())
            mine += size
            self.queued -= size
        out.reverse()
        return out

    def _tail_rows(self, nbytes: int) -> int:
        """Room for the rows of ``nbytes`` parsed apart from the current batch: as many as could be in them."""
        return min(self.max_rows, nbytes // self.row_bytes + 1)

    def _join(self, tail: list[Parsed]) -> None:
        """Put what this thread parsed after what the decode thread did
        (the lock is held): its first columns are copied onto the current
        batch when they fit there (one batch to stage, as without the
        split), else they follow it."""
        cur = self.current
        if tail and cur is not None and isinstance(tail[0], compiled_csv.Appender) and cur.extend(tail[0]):
            tail = tail[1:]
        if tail:
            self.current = None
            head: list[Parsed] = [cur] if cur is not None and cur.rows else []
            self._keep(head + tail)

    def _keep(self, parsed: list[Parsed]) -> None:
        """Parts done (full batches, declined pieces) join ``ready`` in order, their rows counted (the lock is held)."""
        self.rows += sum(p.rows for p in parsed if not isinstance(p, bytes))
        self.ready.extend(parsed)

    def light(self, nbytes: int) -> bool:
        """Nothing is ready to stage, and ``nbytes`` more would not make :meth:`add` wait."""
        return not self.ready and self.queued + nbytes + PARSE_STEP <= MAX_QUEUED

    def take_ready(self) -> list[Parsed]:
        """The batches parsed and full, and declined pieces, oldest first."""
        with self.lock:
            out, self.ready = self.ready, []
        return out

    def finish(self) -> list[Parsed]:
        """Everything, in order, once every piece given is parsed."""
        with self.lock:
            while self.running:
                self.lock.wait()
            self._raise_failure()
            if self.current is not None and self.current.rows:
                self._keep([self.current])
            self.current = None
            out, self.ready = self.ready, []
            if self.rows and not self.closed:
                if len(_rows_seen) >= _ROWS_SEEN_KEPT:
                    _rows_seen.clear()
                _rows_seen[self.key] = self.rows
        return out

    def _raise_failure(self) -> None:
        if self.failure is not None:
            raise self.failure

    def _batch_rows(self, done: list[Parsed]) -> int:
        """Room for the next batch: the first sized like the last COPY into
        the relation (a quarter more), later ones (a large COPY) the most."""
        if self.rows or any(not isinstance(p, bytes) for p in done):
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
                pieces, parsed = self.queue.popleft()
                size = sum(map(len, pieces))
            try:
                self._parse(pieces)
                if parsed is not None:
                    parsed()
            except BaseException as e:  # noqa: BLE001 - e.g. MemoryError: the COPY fails with it, never hangs
                with self.lock:
                    self.failure = e
                    self.queue.clear()
                    self.running = False
                    self.queued = 0
                    self.lock.notify_all()
                return
            finally:
                with self.lock:
                    self.queued = max(0, self.queued - size)
                    self.lock.notify_all()

    def _parse(self, pieces: list[Buffer], scratch: np.ndarray | None = None) -> None:
        """Append the rows of ``pieces`` to the current batch, starting a new
        one when it is full; a part the kernel declines is kept as bytes."""
        done: list[Parsed] = []
        cur = self._run(pieces, self.current, done, scratch, None)
        with self.lock:
            if not self.closed:
                self._keep(done)
                self.current = cur

    def _run(self, pieces: list[Buffer], cur: compiled_csv.Appender | None, done: list[Parsed],
             scratch: np.ndarray | None, rows: int | None) -> compiled_csv.Appender | None:
        """Parse ``pieces`` onto ``cur``: batches filled, and parts declined
        (as bytes), go to ``done`` in order; returns the batch being
        filled.  A new batch has room for ``rows`` (None: :meth:`_batch_rows`)."""
        data = compiled_csv.gather(pieces, compiled_csv.scratch() if scratch is None else scratch)
        addr = np.frombuffer(data, np.uint8).ctypes.data
        pos, n = 0, len(data)
        while pos < n:
            if cur is None:
                cur = self.new_columns(self._batch_rows(done) if rows is None else rows)
                if cur is None:          # the kernel is still compiling: the general path decodes
                    done.append(bytes(data[pos:]))
                    break
            try:
                read = cur.parse(addr + pos, n - pos)
            except Exception:  # noqa: BLE001 - as a declined piece: the general decoder is exact
                read = -1
            if read < 0:
                if cur.rows:
                    done.append(cur)
                cur = None
                done.append(bytes(data[pos:]))
                break
            pos += read
            if cur.full():
                done.append(cur)
                cur = None
        return cur
