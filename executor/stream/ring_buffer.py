"""Columnar ring buffer: the caching layer of a stream relation (thesis ch. 3.2.2).

A stream is not transactional and not durable; the server only *caches* the most
recent ``capacity`` tuples so scans can pick them up morsel-wise and so short
insert spikes are absorbed.  Every tuple gets a monotonically increasing tuple id
(tid, 0-based); tid ``t`` lives in slot ``t % capacity`` of the current *run*
``t // capacity`` through the ring.

Layout (Figure 3.4, adapted to numpy):

* fixed-width columns (bool, ints, floats, datetime64, ...) are preallocated numpy
  arrays of ``capacity`` slots, so a batch write or a scan copy is at most two
  slice copies (one if the range does not wrap);
* variable-length columns (numpy ``object`` dtype) keep only fixed-size metadata
  per slot (``offset`` int64, ``length`` int32) in the ring.  The bytes live in one
  of TWO string buffers, chosen by run parity, so a slot that is rewritten in run
  ``r + 1`` never tramples string bytes still referenced by run ``r`` slots;
* each column has a null mask (``True`` = SQL NULL), allocated only when the
  column first receives a NULL: a stream whose rows carry no NULLs holds
  exactly ``capacity`` x its row width (plus live string bytes), nothing else.

String storage choices (documented because they differ from Umbra):

* ``str`` values are stored as UTF-8 in a growing ``bytearray`` per run buffer.
  We do *not* inline short strings (<= 12 bytes): in Python every scan has to
  build a ``str`` object anyway, so inlining would only add a branch per row.
* other objects (``bytes``, ``Decimal``, ``UUID``, lists, ...) are kept as
  references in a Python list per run buffer; their slot length is ``-1`` and the
  offset is the list index.  Length ``-2`` means "the column default" (used by
  :meth:`RingBuffer.add_column` for slots written before the column existed).
* a run buffer is "cleared" lazily by the first writer of a newer run with the
  same parity (a generation check).  Clearing *replaces* the bytearray/list with
  new objects instead of truncating them, so a scan that took a reference keeps
  reading consistent memory and the old region is freed by reference counting
  when the last scan drops it -- the thesis' "last scan frees the buffer".

Concurrency (Algorithm 3.1):

* tids are claimed under a small lock (the fetch-add); data is written outside it;
* a batch only becomes visible once every earlier tid is visible (a Condition);
* additionally a writer waits until the tuples that previously occupied its slots
  (tid - capacity) are fully written.  Algorithm 3.1 omits this; without it a slow
  writer could overwrite a slot *after* a faster writer of the next run, and a
  scan would return a row whose content belongs to a different tid.  In practice
  the wait never triggers unless writers lap the ring inside one batch time.

Scans (Figure 3.5): locate the range by tids (1), copy fixed data and string
metadata to fresh arrays (2), re-read the write horizon and drop every slot that
a concurrent writer may have touched meanwhile (3), then rebuild the string
column values of the surviving rows (4).  Overwritten tuples are reported as
``skipped``, never returned.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

__all__ = ["RingBuffer", "ScanResult"]

# Slot length markers for object columns.
_OBJ_REF = -1  # value is a Python object in the run buffer's object list
_DEFAULT = -2  # value is the column default (slot predates ADD COLUMN)

# How often a scan retries when its whole range was overwritten while copying.
_MAX_SCAN_ATTEMPTS = 16


@dataclass
class ScanResult:
    """Rows ``[first_tid, end_tid)`` copied out of the ring.

    ``skipped`` counts tuples between the requested ``from_tid`` and ``first_tid``
    that were lost because they were overwritten before they could be read, so
    ``num_rows + skipped == end_tid - from_tid`` always holds.  ``nulls[i]`` is
    ``None`` when column ``i`` has no NULL in the returned rows.
    """

    columns: list[np.ndarray]
    nulls: list[np.ndarray | None]
    first_tid: int
    end_tid: int
    skipped: int
    names: list[str] = field(default_factory=list)

    @property
    def num_rows(self) -> int:
        """Number of returned rows (``end_tid - first_tid``)."""
        return self.end_tid - self.first_tid

    def __len__(self) -> int:
        return self.num_rows


class _RunBuffer:
    """One of the two alternating variable-length stores of an object column.

    ``generation`` is the run number whose values are currently stored.  Writers
    reserve space under ``lock``; readers only take a consistent snapshot of
    ``(generation, data, objs)`` and may read it later without the lock, because
    within a generation both containers are append-only and a new generation
    gets fresh containers.
    """

    __slots__ = ("lock", "generation", "data", "objs")

    def __init__(self, parity: int) -> None:
        self.lock = threading.Lock()
        self.generation = parity - 2  # "older than run 0/1": first writer clears
        self.data = bytearray()
        self.objs: list[Any] = []

    def reserve(self, run: int, blob: memoryview, objs: Sequence[Any]) -> tuple[int, int] | None:
        """Append ``blob``/``objs`` for run ``run``; return their base offsets.

        Returns ``None`` if a newer run already owns the buffer (the data would
        be dead on arrival; cannot happen with the writer lap-wait, kept as a
        guard).
        """
        with self.lock:
            if self.generation < run:
                self.generation = run
                self.data = bytearray()
                self.objs = []
            elif self.generation > run:
                return None
            base_b = len(self.data)
            base_o = len(self.objs)
            if len(blob):
                self.data += blob
            if objs:
                self.objs.extend(objs)
            return base_b, base_o

    def snapshot(self) -> tuple[int, bytearray, list[Any]]:
        with self.lock:
            return self.generation, self.data, self.objs

    def nbytes(self) -> int:
        # object references counted as one pointer each; the objects themselves
        # are shared with the inserting statement and not owned by the ring.
        return len(self.data) + 8 * len(self.objs)


class _Column:
    """Storage of one column: values (or string metadata) plus the null mask."""

    def __init__(self, name: str, dtype: np.dtype, capacity: int, default: Any = None,
                 unwritten_null: bool = False) -> None:
        self.name = name
        self.dtype = np.dtype(dtype)
        self.is_object = self.dtype == np.dtype(object)
        self.default = default
        self.capacity = capacity
        self._null_lock = threading.Lock()
        # None: no slot is NULL.  A column added to a ring that already holds rows
        # starts all-NULL (unless it has a default): those slots predate it.
        self.null: np.ndarray | None = np.ones(capacity, dtype=bool) if unwritten_null and default is None else None
        # values for fixed-width columns; off, len and runs for object (string) columns
        self.values: np.ndarray | None
        self.off: np.ndarray | None
        self.len: np.ndarray | None
        self.runs: tuple[_RunBuffer, _RunBuffer] | None
        if self.is_object:
            self.values = None
            self.off = np.zeros(capacity, dtype=np.int64)
            self.len = np.full(capacity, _DEFAULT, dtype=np.int32)
            self.runs = (_RunBuffer(0), _RunBuffer(1))
        else:
            self.values = np.zeros(capacity, dtype=self.dtype)
            self.off = self.len = None
            self.runs = None
        if default is not None and self.values is not None:  # not is_object
            self.values[:] = default

    def null_mask(self) -> np.ndarray:
        """The NULL flags, allocated (all false) on the first NULL written."""
        if self.null is None:
            with self._null_lock:
                if self.null is None:
                    self.null = np.zeros(self.capacity, dtype=bool)
        return self.null

    def slot_width(self) -> int:
        """Bytes per slot for the declared type: the value, or a string's offset and length."""
        if self.is_object:
            assert self.off is not None and self.len is not None
            return self.off.itemsize + self.len.itemsize
        assert self.values is not None
        return self.values.itemsize

    def string_bytes(self) -> int:
        return sum(r.nbytes() for r in self.runs) if self.runs is not None else 0  # runs: is_object

    def nbytes(self) -> int:
        total = self.null.nbytes if self.null is not None else 0
        if self.is_object:
            assert self.off is not None and self.len is not None and self.runs is not None
            total += self.off.nbytes + self.len.nbytes + sum(r.nbytes() for r in self.runs)
        else:
            assert self.values is not None
            total += self.values.nbytes
        return total


@dataclass
class _EncodedObjects:
    """A batch of object-column values encoded before the tid is claimed.

    ``lens[i]`` is the UTF-8 length for str rows, ``-1`` for object rows and ``0``
    for NULL rows.  ``bcum``/``ocum`` are exclusive prefix sums (length n + 1) of
    the byte sizes and object counts, so any row range maps to one contiguous
    byte range and one contiguous object range.
    """

    lens: np.ndarray
    null: np.ndarray | None
    blob: bytes
    objs: list[Any]
    bcum: np.ndarray
    ocum: np.ndarray | None  # None: no object rows (pure string fast path)


def _prefix(sizes: np.ndarray) -> np.ndarray:
    out = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=out[1:])
    return out


def _encode_objects(values: Any, null: np.ndarray | None) -> _EncodedObjects:
    """Encode one object column batch; the common all-``str`` case is vectorised.

    Fast path: one ``''.join`` + one ``encode`` for ASCII text (char length ==
    byte length), else one ``encode`` per value.  Anything that is not a ``str``
    (None, bytes, Decimal, ...) falls back to a per-row loop.
    """
    vals = values.tolist() if isinstance(values, np.ndarray) else list(values)
    n = len(vals)
    if null is not None:
        if null.any():
            for i in np.flatnonzero(null).tolist():
                vals[i] = ""
        else:
            null = None
    try:
        joined = "".join(vals)
    except TypeError:
        return _encode_objects_generic(vals, null)
    if joined.isascii():
        blob = joined.encode("ascii")
        lens = np.fromiter(map(len, vals), dtype=np.int32, count=n)
    else:
        encs = [v.encode("utf-8", "surrogatepass") for v in vals]
        blob = b"".join(encs)
        lens = np.fromiter(map(len, encs), dtype=np.int32, count=n)
    return _EncodedObjects(lens, null, blob, [], _prefix(lens), None)


def _encode_objects_generic(vals: list[Any], null: np.ndarray | None) -> _EncodedObjects:
    """Per-row encoding for mixed batches: None -> NULL, str -> bytes, else ref."""
    n = len(vals)
    lens = np.zeros(n, dtype=np.int32)
    nmask = np.zeros(n, dtype=bool) if null is None else null.copy()
    parts: list[bytes] = []
    objs: list[Any] = []
    for i, v in enumerate(vals):
        if nmask[i] or v is None:
            nmask[i] = True
        elif isinstance(v, str):
            b = v.encode("utf-8", "surrogatepass")
            parts.append(b)
            lens[i] = len(b)
        else:
            objs.append(v)
            lens[i] = _OBJ_REF
    is_obj = lens == _OBJ_REF
    return _EncodedObjects(
        lens,
        nmask if nmask.any() else None,
        b"".join(parts),
        objs,
        _prefix(np.where(is_obj, 0, lens)),
        _prefix(is_obj.astype(np.int64)),
    )


class RingBuffer:
    """Fixed-capacity columnar ring buffer with tid-based scans (see module doc)."""

    def __init__(self, columns: list[tuple[str, np.dtype]], capacity: int) -> None:
        if capacity <= 0:
            raise ValueError("capacity must be positive")
        self._capacity = int(capacity)
        self._cols: list[_Column] = [_Column(n, d, self._capacity) for n, d in columns]
        self._claim_lock = threading.Lock()
        self._cond = threading.Condition(threading.Lock())
        self._write_tid = 0
        self._visible_end = 0

    # ------------------------------------------------------------------ props
    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def write_tid(self) -> int:
        """Number of tids claimed so far (some may still be being written)."""
        return self._write_tid

    @property
    def visible_end(self) -> int:
        """Number of tuples visible to scans; tids ``< visible_end`` are complete."""
        return self._visible_end

    @property
    def overwritten(self) -> int:
        """Tuples no longer cached: ``max(0, visible_end - capacity)``."""
        return max(0, self._visible_end - self._capacity)

    @property
    def oldest_tid(self) -> int:
        """Lowest tid a scan may still find intact right now."""
        return max(0, self._write_tid - self._capacity)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self._cols]

    @property
    def dtypes(self) -> list[np.dtype]:
        return [c.dtype for c in self._cols]

    def memory_bytes(self) -> int:
        """Bytes held: fixed arrays, masks, string metadata and live run buffers."""
        return sum(c.nbytes() for c in self._cols)

    def row_width(self) -> int:
        """Declared bytes per slot: fixed values plus 12 per string (offset, length)."""
        return sum(c.slot_width() for c in self._cols)

    def null_flag_bytes(self) -> int:
        """Bytes of NULL flags: ``capacity`` per column that has held a NULL."""
        return sum(c.null.nbytes for c in self._cols if c.null is not None)

    def string_bytes(self) -> int:
        """Live string bytes (both run buffers) plus one pointer per non-string object."""
        return sum(c.string_bytes() for c in self._cols)

    # ------------------------------------------------------------ add column
    def add_column(self, name: str, dtype: np.dtype, default: Any = None) -> None:
        """ALTER FOREIGN TABLE ADD COLUMN: existing slots read as NULL or ``default``.

        Taken under the claim lock so every batch claimed afterwards must supply
        the new column.  Batches claimed earlier leave it untouched, which is
        correct: their slots were last written by even older (pre-column) tids,
        so they still hold the initial NULL/default.
        """
        if any(c.name == name for c in self._cols):
            raise ValueError(f"column {name!r} already exists")
        col = _Column(name, dtype, self._capacity, default, unwritten_null=True)
        with self._claim_lock:
            self._cols = self._cols + [col]

    # ----------------------------------------------------------------- append
    def append(
        self, columns: list[np.ndarray], nulls: list[np.ndarray | None] | None = None
    ) -> tuple[int, int]:
        """Append a batch; returns ``(first_tid, end_tid)``, end exclusive.

        All columns must have the same length ``n``.  If ``n > capacity`` only
        the last ``capacity`` rows are stored, but ``n`` tids are consumed.
        ``nulls[i]`` is a bool mask (``True`` = NULL) or ``None``; ``None``
        values in object columns are NULL as well.

        Everything that can fail (dtype conversion, string encoding) happens
        before the tids are claimed: once claimed, the batch *must* be published
        or every later writer would wait forever.
        """
        cols = self._cols
        if len(columns) != len(cols):
            raise ValueError(f"expected {len(cols)} columns, got {len(columns)}")
        if nulls is None:
            nulls = [None] * len(cols)
        elif len(nulls) != len(cols):
            raise ValueError(f"expected {len(cols)} null masks, got {len(nulls)}")
        n = len(columns[0]) if columns else 0
        if n == 0:
            t = self._write_tid
            return t, t
        cap = self._capacity
        m = min(n, cap)
        prepared: list[Any] = []
        masks: list[np.ndarray | None] = []
        for col, values, mask in zip(cols, columns, nulls):
            if len(values) != n:
                raise ValueError("all columns of a batch must have the same length")
            if mask is not None:
                mask = np.asarray(mask, dtype=bool)
                if mask.shape != (n,):
                    raise ValueError("null mask length differs from column length")
                mask = mask[n - m:]
                if not mask.any():
                    mask = None
            if col.is_object:
                tail = values[n - m:]
                enc = _encode_objects(tail, mask)
                prepared.append(enc)
                masks.append(enc.null)
            else:
                arr = np.asarray(values)
                if arr.dtype != col.dtype:
                    arr = arr.astype(col.dtype)
                prepared.append(arr[n - m:])
                masks.append(mask)

        with self._claim_lock:
            if self._cols is not cols:  # ADD COLUMN raced with us: re-validate
                raise ValueError("schema changed during append; retry with new columns")
            first = self._write_tid
            end = first + n
            self._write_tid = end
        try:
            self._wait_lap(min(first, end - cap))
            self._write(cols, prepared, masks, end - m, m)
        finally:
            self._publish(first, end)
        return first, end

    def _wait_lap(self, needed: int) -> None:
        """Wait until tids ``< needed`` are complete, so our slots are free."""
        if self._visible_end >= needed:
            return
        with self._cond:
            while self._visible_end < needed:
                self._cond.wait()

    def _publish(self, first: int, end: int) -> None:
        """Algorithm 3.1 lines 17-19: become visible after all predecessors."""
        with self._cond:
            while self._visible_end != first:
                self._cond.wait()
            self._visible_end = end
            self._cond.notify_all()

    def _write(
        self, cols: list[_Column], prepared: list[Any], masks: list[np.ndarray | None], k: int, m: int
    ) -> None:
        """Write ``m`` rows for tids ``[k, k + m)``: at most two slot segments."""
        cap = self._capacity
        s = k % cap
        run = k // cap
        n1 = min(m, cap - s)
        segments = [(s, 0, n1, run)]
        if n1 < m:
            segments.append((0, n1, m, run + 1))
        for col, data, mask in zip(cols, prepared, masks):
            for slot, r0, r1, seg_run in segments:
                slot_end = slot + (r1 - r0)
                if mask is None:
                    if col.null is not None:
                        col.null[slot:slot_end] = False
                else:
                    col.null_mask()[slot:slot_end] = mask[r0:r1]
                if col.is_object:
                    self._write_objects(col, data, slot, slot_end, r0, r1, seg_run)
                else:
                    assert col.values is not None
                    col.values[slot:slot_end] = data[r0:r1]

    @staticmethod
    def _write_objects(
        col: _Column, enc: _EncodedObjects, slot: int, slot_end: int, r0: int, r1: int, run: int
    ) -> None:
        assert col.runs is not None and col.off is not None and col.len is not None
        b0, b1 = int(enc.bcum[r0]), int(enc.bcum[r1])
        if enc.ocum is None:
            o0 = o1 = 0
        else:
            o0, o1 = int(enc.ocum[r0]), int(enc.ocum[r1])
        bases = col.runs[run & 1].reserve(run, memoryview(enc.blob)[b0:b1], enc.objs[o0:o1])
        lens = enc.lens[r0:r1]
        col.len[slot:slot_end] = lens
        if bases is None:  # buffer already owned by a newer run: data is dead anyway
            return
        base_b, base_o = bases
        if enc.ocum is None:
            col.off[slot:slot_end] = enc.bcum[r0:r1] + (base_b - b0)
        else:
            col.off[slot:slot_end] = np.where(
                lens == _OBJ_REF,
                enc.ocum[r0:r1] + (base_o - o0),
                enc.bcum[r0:r1] + (base_b - b0),
            )

    # ------------------------------------------------------------------- scan
    def wait_for(self, tid: int, timeout: float) -> bool:
        """Block until ``visible_end > tid`` or ``timeout`` seconds passed.

        Returns whether the data arrived; session-window scans (Algorithm 3.2)
        treat ``False`` as "stream depleted".
        """
        if self._visible_end > tid:
            return True
        with self._cond:
            return self._cond.wait_for(lambda: self._visible_end > tid, timeout)

    def scan(self, from_tid: int, max_rows: int | None = None) -> ScanResult:
        """Copy rows ``[max(from_tid, oldest), visible_end)`` (capped at max_rows).

        Never returns overwritten data: after copying, rows a writer may have
        touched meanwhile are dropped and counted in ``skipped``.  If the whole
        range was lost, the scan retries on newer data.  ``end_tid`` never
        exceeds ``visible_end`` and is where the next scan should start.
        """
        from_tid = max(0, int(from_tid))
        cols = self._cols
        cap = self._capacity
        start = from_tid
        for _ in range(_MAX_SCAN_ATTEMPTS):
            vis = self._visible_end  # read before write_tid: vis <= w0
            w0 = self._write_tid
            if start >= vis:
                return self._empty(cols, from_tid, max(start, from_tid))
            lo = min(max(start, w0 - cap), vis)
            hi = vis if max_rows is None else min(vis, lo + max(0, int(max_rows)))
            if lo >= hi:
                return self._empty(cols, from_tid, lo)
            snaps = [(c.runs[0].snapshot(), c.runs[1].snapshot()) if c.runs is not None else None for c in cols]  # runs: is_object
            segs = self._segments(lo, hi)
            copied = [self._copy_column(c, segs) for c in cols]
            w1 = self._write_tid  # phase 3: who may have written meanwhile?
            valid_lo = max(lo, w1 - cap)
            if valid_lo >= hi:
                start = hi  # whole range overwritten while copying: retry on newer data
                continue
            cut = valid_lo - lo
            out_cols: list[np.ndarray] = []
            out_nulls: list[np.ndarray | None] = []
            ok = True
            for c, (vals, null), snap in zip(cols, copied, snaps):
                null = null[cut:] if null is not None else None
                if c.is_object:
                    assert snap is not None
                    vals = self._materialize(c, vals, null, valid_lo, hi, snap)
                    if vals is None:
                        ok = False
                        break
                else:
                    vals = vals[cut:]
                out_cols.append(vals)
                out_nulls.append(null if null is not None and null.any() else None)
            if not ok:  # defensive: cannot happen if phase 3 is right
                continue
            return ScanResult(out_cols, out_nulls, valid_lo, hi, valid_lo - from_tid, [c.name for c in cols])
        return self._empty(cols, from_tid, start)

    def _empty(self, cols: list[_Column], from_tid: int, end: int) -> ScanResult:
        empty_cols = [np.empty(0, dtype=c.dtype) for c in cols]
        return ScanResult(
            empty_cols, [None] * len(cols), end, end, end - from_tid, [c.name for c in cols]
        )

    def _segments(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Slot ranges for tids ``[lo, hi)`` (``hi - lo <= capacity``)."""
        cap = self._capacity
        s = lo % cap
        n = hi - lo
        if s + n <= cap:
            return [(s, s + n)]
        return [(s, cap), (0, s + n - cap)]

    @staticmethod
    def _take(arr: np.ndarray, segs: list[tuple[int, int]]) -> np.ndarray:
        if len(segs) == 1:
            a, b = segs[0]
            return arr[a:b].copy()
        return np.concatenate([arr[a:b] for a, b in segs])

    def _copy_column(self, col: _Column, segs: list[tuple[int, int]]) -> tuple[Any, np.ndarray | None]:
        """Phase 2: copy fixed values, or (offset, length) metadata, plus nulls."""
        null = self._take(col.null, segs) if col.null is not None else None
        if col.is_object:
            assert col.off is not None and col.len is not None
            return (self._take(col.off, segs), self._take(col.len, segs)), null
        assert col.values is not None
        return self._take(col.values, segs), null

    def _materialize(
        self,
        col: _Column,
        meta: tuple[np.ndarray, np.ndarray],
        null: np.ndarray | None,
        lo: int,
        hi: int,
        snap: tuple[tuple[int, bytearray, list[Any]], tuple[int, bytearray, list[Any]]],
    ) -> np.ndarray | None:
        """Phase 4: rebuild Python values for validated rows ``[lo, hi)``.

        The snapshot taken before phase 2 must own the run of every row; rows
        survive phase 3 only if that holds, so a mismatch (returns ``None``)
        means a logic error and makes the scan retry.
        """
        off_all, len_all = meta
        n = hi - lo
        cut = len(off_all) - n
        off = off_all[cut:]
        lens = len_all[cut:]
        out = np.empty(n, dtype=object)
        cap = self._capacity
        # rows of the validated range belong to at most two consecutive runs
        boundary = min(hi, (lo // cap + 1) * cap)
        for run, a, b in ((lo // cap, lo, boundary), (lo // cap + 1, boundary, hi)):
            if a >= b:
                continue
            i0, i1 = a - lo, b - lo
            gen, data, objs = snap[run & 1]
            seg_lens = lens[i0:i1]
            o = off[i0:i1]
            dec = seg_lens >= 0  # str rows; NULL rows written by append have length 0
            obj_rows = seg_lens == _OBJ_REF
            if (dec.any() or obj_rows.any()) and gen != run:
                return None
            seg = out[i0:i1]
            if dec.all():
                seg[:] = _decode(data, o, seg_lens)
            elif dec.any():
                idx = np.flatnonzero(dec)
                seg[idx] = np.fromiter(_decode(data, o[idx], seg_lens[idx]), dtype=object, count=len(idx))
            if obj_rows.any():
                idx = np.flatnonzero(obj_rows)
                seg[idx] = np.fromiter((objs[k] for k in o[idx].tolist()), dtype=object, count=len(idx))
            dflt = seg_lens == _DEFAULT
            for j in np.flatnonzero(dflt).tolist():  # rare: slots older than the column
                seg[j] = col.default
        if null is not None:
            out[null] = None
        return out


def _decode(data: bytearray, off: np.ndarray, lens: np.ndarray) -> list[str]:
    """Decode UTF-8 values; one contiguous region copy, then per-row slicing.

    The region is copied once (``bytes(data[lo:hi])``); if it is pure ASCII it
    is decoded once and the rows are ``str`` slices (byte offsets == character
    offsets), otherwise each row is decoded separately.
    """
    if len(off) == 0:
        return []
    ends = off + lens
    lo = int(off.min())
    hi = int(ends.max())
    region = bytes(data[lo:hi])
    starts = (off - lo).tolist()
    stops = (ends - lo).tolist()
    if region.isascii():
        text = region.decode("ascii")
        return [text[a:b] for a, b in zip(starts, stops)]
    return [region[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts, stops)]


# ---------------------------------------------------------------- benchmark
def _bench() -> None:
    """Print single-thread append (and scan) throughput for the README targets."""
    rng = np.random.default_rng(0)
    batch = 10_000
    n_batches = 500
    cols6 = [rng.integers(0, 1 << 40, batch) for _ in range(6)]
    rb = RingBuffer([(f"c{i}", np.dtype(np.int64)) for i in range(6)], 1 << 20)
    nulls6: list[np.ndarray | None] = [None] * 6
    for _ in range(10):
        rb.append(cols6, nulls6)
    t0 = time.perf_counter()
    for _ in range(n_batches):
        rb.append(cols6, nulls6)
    dt = time.perf_counter() - t0
    print(f"append 6 x int64, batch {batch}: {n_batches * batch / dt / 1e6:.1f} M rows/s")

    t0 = time.perf_counter()
    rows = 0
    tid = rb.visible_end - rb.capacity
    while tid < rb.visible_end:
        r = rb.scan(tid, 65_536)
        rows += r.num_rows
        tid = r.end_tid
    dt = time.perf_counter() - t0
    print(f"scan   6 x int64, morsel 65536: {rows / dt / 1e6:.1f} M rows/s")

    strs = np.array([f"user-{i}-{i * 7919 % 100_000}" for i in range(batch)], dtype=object)
    ints = cols6[0]
    rb2 = RingBuffer([("id", np.dtype(np.int64)), ("name", np.dtype(object))], 1 << 18)
    n_batches = 100
    t0 = time.perf_counter()
    for _ in range(n_batches):
        rb2.append([ints, strs], [None, None])
    dt = time.perf_counter() - t0
    print(f"append int64 + str(~16B), batch {batch}: {n_batches * batch / dt / 1e6:.2f} M rows/s")

    t0 = time.perf_counter()
    rows = 0
    tid = rb2.visible_end - rb2.capacity
    while tid < rb2.visible_end:
        r = rb2.scan(tid, 65_536)
        rows += r.num_rows
        tid = r.end_tid
    dt = time.perf_counter() - t0
    print(f"scan   int64 + str(~16B), morsel 65536: {rows / dt / 1e6:.2f} M rows/s")
    print(f"memory_bytes (int64+str ring, cap {rb2.capacity}): {rb2.memory_bytes() / 1e6:.1f} MB")


if __name__ == "__main__":
    _bench()
