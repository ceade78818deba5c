"""A compiled COPY decoder (CSV and text format) for rows of plain numbers.

Stream ingest (the AIM events, TPC-H lineitem deltas) is CSV of integers,
short decimals and booleans, and decoding it with pyarrow costs more than
maintaining six continuous views.  For a column layout of int2/int4/int8,
float8 and bool this module compiles one single-pass parser per layout (one
loop over the bytes, no intermediate strings) that writes the numpy columns
and NULL masks directly.

It only *accepts* spellings whose meaning is certain and identical to
PostgreSQL's input functions; anything else (quotes, escapes, whitespace,
signs other than '-', exponents, more than 15 significant digits, hex,
``inf``/``NaN``, a wrong number of fields, ``\\r``) makes the kernel return
-1 and the caller decodes the chunk on the exact general path (which also
produces PostgreSQL's error for a bad row).  Floats: with at most 15 digits
the mantissa is an exact double and 10^k (k <= 15) is exact, so one IEEE
division is the correctly rounded value, the same double strtod (float8in)
gives (Clinger's fast path).

Kernel: ``i64 parse(i8* data, i64 len, i64* outs)``; ``outs`` holds, per
column, the data pointer and the NULL-mask pointer, then one NULL counter
per column, then the most rows to write and, written back, where the
kernel stopped.  ``data`` must end with a newline.  Returns the row count,
or -1 to decline.  ctypes releases the GIL during the call.
"""
from __future__ import annotations

import contextlib
import ctypes
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable, Iterator, TypeVar

from llvmlite import ir

import numpy as np

from splitstream.protocol import oids as type_oids

from . import csv_temporal, jit

_T = TypeVar("_T")

PARSE_T = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p)

# oid -> (kind, numpy dtype, max digits that cannot overflow)
_KINDS = {
    type_oids.INT2: ("int", np.int16, 4),
    type_oids.INT4: ("int", np.int32, 9),
    type_oids.INT8: ("int", np.int64, 18),
    type_oids.FLOAT8: ("float", np.float64, 15),
    type_oids.BOOL: ("bool", np.bool_, 0),
    type_oids.DATE: ("date", np.int64, 0),
    type_oids.TIMESTAMP: ("ts", np.int64, 0),
    type_oids.TIMESTAMPTZ: ("tstz", np.int64, 0),
}
_DTYPES = {o: np.dtype(k[1]) for o, k in _KINDS.items()}
#: the fewest bytes a non-NULL value of the kind takes (rows are sized by them)
_SHORTEST = {"int": 1, "float": 1, "bool": 1, "date": 10, "ts": 19, "tstz": 19}
#: the engine's dtype of a temporal column (the kernel writes its int64 ticks)
_VIEWS = {type_oids.DATE: "datetime64[D]", type_oids.TIMESTAMP: "datetime64[us]",
          type_oids.TIMESTAMPTZ: "datetime64[us]"}
_VIEW_DTYPES = {o: np.dtype(v) for o, v in _VIEWS.items()}      # parsing "datetime64[us]" costs 0.6 us a call
#: characters a date or timestamp may hold: never a delimiter of a temporal layout
_TEMPORAL_CHARS = " T:+Z"
MIN_BYTES = 8 << 10            # smaller chunks: the general path's fixed cost does not matter

_lock = threading.Lock()
_cache: dict[tuple, object] = {}
_failed: set[tuple] = set()
_pending: dict[tuple, Future[None]] = {}
_engines: list = []            # the execution engines of the cached parsers (kept alive with them)


def supported(oids) -> bool:
    return bool(oids) and all(o in _KINDS for o in oids)


def usable(options, oids=()) -> bool:
    """CSV with NULL as the empty unquoted field, or text format with NULL as
    ``\\N``; a single-byte delimiter that cannot start a number.  (In text
    format an empty field is an empty string, never NULL, and ``\\N`` makes
    the kernel bail: :func:`decode` declines any chunk with a NULL.)"""
    if options.format == "csv":
        plain = options.null == "" and not options.force_null and not options.force_not_null
    else:
        plain = options.format == "text" and options.null == "\\N"
    temporal = any(o in _VIEWS for o in oids)
    return plain and len(options.delimiter.encode()) == 1 \
        and options.delimiter not in "\n\r\"\\0123456789.-tfrueals" \
        and not (temporal and options.delimiter in _TEMPORAL_CHARS)


def decode(data: bytes | bytearray | np.ndarray, options, oids, wait: bool = False,
           naive_utc: bool = True) -> list[tuple[np.ndarray, np.ndarray | None]] | None:
    """The columns of ``data`` (complete lines, no header, no end marker
    line; bytes, or uint8 as :func:`gather` joins them), or None to decline.
    A large chunk is cut at a line end and its halves parsed on two threads
    (ctypes releases the GIL).  ``wait``: compile now rather than decline
    while the parser compiles (tests).  ``naive_utc``: the session's
    TimeZone is UTC, so a timestamptz without an offset is UTC (otherwise
    such a value declines the chunk)."""
    if len(data) < (1 if wait else MIN_BYTES) or data[-1] != 10 or not supported(oids) \
            or not usable(options, oids):
        return None
    fn = _kernel(tuple(oids), options.delimiter, wait, naive_utc and type_oids.TIMESTAMPTZ in oids)
    if fn is None:
        return None
    base = np.frombuffer(data, np.uint8).ctypes.data
    mid = _line_end(data, len(data) // 2) if len(data) >= PARALLEL_BYTES else 0
    if 0 < mid < len(data):
        later = _pool().submit(_run, fn, base + mid, len(data) - mid, oids)
        first, second = _run(fn, base, mid, oids), later.result()
        if first is None or second is None:
            return None
        parts = [(np.concatenate([a, b]), _join_masks(am, bm, len(a), len(b)))
                 for (a, am), (b, bm) in zip(first, second)]
    else:
        whole = _run(fn, base, len(data), oids)
        if whole is None:
            return None
        parts = whole
    if options.format == "text" and any(m is not None for _, m in parts):
        return None          # an empty field: an empty string to PostgreSQL, an error for a number
    return parts


def _line_end(data: bytes | bytearray | np.ndarray, start: int) -> int:
    """Where the line holding ``data[start]`` ends (after its newline); 0: no newline."""
    if not isinstance(data, np.ndarray):
        return data.find(b"\n", start) + 1
    hits = np.flatnonzero(data[start:] == 10)
    return start + int(hits[0]) + 1 if len(hits) else 0


def warm(options, oids, naive_utc: bool = True, wait: bool = False) -> None:
    """Start compiling the reader for this layout (in the background) when a
    COPY begins, so that it is ready by the first slab rather than declining it
    (``wait``: until it is built; tests)."""
    if supported(oids) and usable(options, oids):
        _kernel(tuple(oids), options.delimiter, wait, naive_utc and type_oids.TIMESTAMPTZ in oids)


#: chunks from this size are parsed by two threads
PARALLEL_BYTES = 4 << 20
_threads = None
_ahead = None


def decode_ahead(data: bytes, options, oids, naive_utc: bool = True) -> Future:
    """:func:`decode` of ``data`` on a decode thread: a COPY hands over each
    slab as it arrives and takes the columns in order later, so parsing (the
    kernel releases the GIL) overlaps receiving and staging the slabs before
    it.  The future's result is None where :func:`decode` declines."""
    return run_ahead(decode, data, options, oids, False, naive_utc)


def run_ahead(fn: Callable[..., _T], *args: Any) -> Future[_T]:
    """``fn(*args)`` on a decode thread (work of a COPY that releases the GIL)."""
    global _ahead
    if _ahead is None:
        with _lock:
            if _ahead is None:
                _ahead = ThreadPoolExecutor(2, thread_name_prefix="copy-decode")
    return _ahead.submit(fn, *args)


@contextlib.contextmanager
def lent_scratch() -> Iterator[np.ndarray]:
    """A scratch buffer borrowed from a small shared pool, for a COPY's own
    thread (its last piece): that thread is one of many session threads,
    which should not each keep one as the decode threads do (:func:`scratch`)."""
    with _lock:
        buf = _spare.pop() if _spare else None
    if buf is None:
        buf = np.empty(SCRATCH_BYTES, np.uint8)
    try:
        yield buf
    finally:
        with _lock:
            if len(_spare) < SPARE_BUFFERS:
                _spare.append(buf)


#: a decode thread joins a slab into its own reused buffer up to this size
SCRATCH_BYTES = 4 << 20
_local = threading.local()
#: scratch buffers lent to COPY threads (:func:`lent_scratch`), at most this many kept
SPARE_BUFFERS = 2
_spare: list[np.ndarray] = []


def scratch() -> np.ndarray:
    """This thread's buffer for joining slabs: the columns decoded from a
    slab never point into it, so it is reused for the next one, warm in the
    cache.  With a fresh buffer per slab, joining took 60% as long as
    parsing in the server (py-spy; page faults and cache misses on the
    newly written memory)."""
    buf = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = np.empty(SCRATCH_BYTES, np.uint8)
    return buf


def gather(pieces: list[bytes | memoryview], scratch: np.ndarray | None = None) -> bytes | memoryview | np.ndarray:
    """The pieces as one buffer (one piece as it is, else uint8), copied by
    numpy (which releases the GIL for a large copy), so a decode thread joins
    a slab while the COPY's thread runs Python.  Into ``scratch`` when they
    fit (the result is then a view of it, valid until the next gather into
    it), else an uninitialised array: not a bytearray, which is zero-filled
    first (a memset as long as the copy)."""
    if len(pieces) == 1:
        return pieces[0]
    n = sum(map(len, pieces))
    out = scratch[:n] if scratch is not None and n <= len(scratch) else np.empty(n, np.uint8)
    pos = 0
    for p in pieces:
        src = np.frombuffer(p, np.uint8)
        out[pos:pos + len(src)] = src
        pos += len(src)
    return out


def _pool():
    global _threads
    if _threads is None:
        _threads = ThreadPoolExecutor(1, thread_name_prefix="csv-parse")
    return _threads


def _run(fn, addr: int, nbytes: int, oids) -> list[tuple[np.ndarray, np.ndarray | None]] | None:
    """The kernel over ``nbytes`` at ``addr``: its columns, or None (declined).

    The columns are sized for rows of non-NULL values of the shortest
    spelling (a YSB row: 26 of its 37 bytes), not for rows of empty fields
    (a fifth of that for 4 columns): the kernel stops when they are full, and
    the rest (rows of NULLs) is read by another call and appended.  Sized
    for empty fields, every slab's columns took 8 times the memory they
    held, pinned by the batches until the COPY ended."""
    n = len(oids)
    first = _call(fn, addr, nbytes, oids, nbytes // shortest_row(oids) + 1)
    if first is None:
        return None
    parts, stop = first
    if stop >= nbytes:
        return parts
    rest = _call(fn, addr + stop, nbytes - stop, oids, (nbytes - stop) // n + 1)   # room for any rows
    if rest is None:
        return None
    return [(np.concatenate([a, b]), _join_masks(am, bm, len(a), len(b)))
            for (a, am), (b, bm) in zip(parts, rest[0])]


def _call(fn, addr: int, nbytes: int, oids, cap: int):
    """One kernel call writing at most ``cap`` rows: (columns, bytes read), or None."""
    out = Appender(fn, oids, cap)
    read = out.parse(addr, nbytes)
    return None if read < 0 else (out.columns(), read)


class Appender:
    """Columns that successive kernel calls append rows to: a COPY parses
    each piece of its data as it arrives, in order, into one set of column
    buffers, so its rows are staged (views, WAL) as one batch however many
    pieces they came in, instead of once per slab.  Sized for ``cap`` rows
    (:meth:`parse` reports when it is full).

    The columns and NULL masks are cut from one allocation and ``outs`` is
    a ctypes array: eight arrays and their ``.ctypes.data`` cost 17 us of
    Python per call, under the GIL.  A block of a steady size is also what
    glibc reuses: arrays shrunk after use kept its mmap threshold low, and
    every COPY's columns were fresh pages (4x the page faults)."""

    def __init__(self, fn, oids, cap: int, empty_is_null: bool = True) -> None:
        self.fn, self.oids, self.cap, self.rows = fn, list(oids), cap, 0
        self.empty_is_null = empty_is_null      # text format: an empty field is no NULL (declined)
        n = len(oids)
        self.dtypes = [_DTYPES[o] for o in oids]
        spans = [-(-cap * dt.itemsize // 64) * 64 for dt in self.dtypes]      # each column 64-byte aligned
        mask_span = -(-cap // 64) * 64
        self.block = np.empty(sum(spans) + n * mask_span + 64, np.uint8)
        self.base = self.block.ctypes.data
        at = -self.base % 64
        self.starts: list[int] = []
        for span in spans + [mask_span] * n:
            self.starts.append(at)
            at += span
        self.outs = (ctypes.c_int64 * (3 * n + 2))()

    def parse(self, addr: int, nbytes: int) -> int:
        """Parse up to ``nbytes`` (whole lines) at ``addr`` onto the rows held:
        the bytes read (fewer when full), or -1 where the kernel declines,
        the rows held then unchanged."""
        n, outs, rows, base, starts = len(self.oids), self.outs, self.rows, self.base, self.starts
        for j, dt in enumerate(self.dtypes):
            outs[2 * j] = base + starts[j] + rows * dt.itemsize
            outs[2 * j + 1] = base + starts[n + j] + rows
        nulls: list = outs[2 * n:3 * n]
        outs[3 * n] = self.cap - rows
        got = self.fn(addr, nbytes, ctypes.addressof(outs))
        if got < 0 or (not self.empty_is_null and outs[2 * n:3 * n] != nulls):
            outs[2 * n:3 * n] = nulls       # the rows it wrote before declining are not kept
            return -1
        self.rows += got
        return outs[3 * n + 1]

    def full(self) -> bool:
        return self.rows >= self.cap

    def extend(self, other: "Appender") -> bool:
        """Copy ``other``'s rows (same layout) after these, if they fit:
        rows parsed apart, on another thread, join the batch they follow.
        False (nothing copied) if they do not fit."""
        n, rows, m = len(self.oids), self.rows, other.rows
        if m > self.cap - rows or other.oids != self.oids:
            return False
        mine, theirs = self.block, other.block
        for j, dt in enumerate(self.dtypes):
            w = dt.itemsize
            mine[self.starts[j] + rows * w:self.starts[j] + (rows + m) * w] = \
                theirs[other.starts[j]:other.starts[j] + m * w]
            mine[self.starts[n + j] + rows:self.starts[n + j] + rows + m] = \
                theirs[other.starts[n + j]:other.starts[n + j] + m]
            self.outs[2 * n + j] += other.outs[2 * n + j]
        self.rows += m
        return True

    def columns(self) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """The rows held as engine columns (views of the one block)."""
        n, rows, block, starts = len(self.oids), self.rows, self.block, self.starts
        out = []
        for j, dt in enumerate(self.dtypes):
            col = block[starts[j]:starts[j] + rows * dt.itemsize].view(dt)
            mask = block[starts[n + j]:starts[n + j] + rows].view(np.bool_) if self.outs[2 * n + j] else None
            out.append((_as_engine(col, self.oids[j]), mask))
        return out


def appender(oids, options, rows: int, naive_utc: bool = True) -> Appender | None:
    """An :class:`Appender` for this layout with room for ``rows`` rows, or
    None while the kernel compiles or where it is unavailable."""
    if not supported(oids) or not usable(options, oids):
        return None
    fn = _kernel(tuple(oids), options.delimiter, False, naive_utc and type_oids.TIMESTAMPTZ in oids)
    if fn is None:
        return None
    return Appender(fn, oids, rows, options.format == "csv")


def shortest_row(oids) -> int:
    """The fewest bytes a row of non-NULL values of this layout takes (its delimiters and newline included)."""
    return len(oids) + sum(_SHORTEST[_KINDS[o][0]] for o in oids)


def _as_engine(col: np.ndarray, oid: int) -> np.ndarray:
    view = _VIEW_DTYPES.get(oid)
    return col if view is None else col.view(view)


def _join_masks(a: np.ndarray | None, b: np.ndarray | None, na: int, nb: int) -> np.ndarray | None:
    if a is None and b is None:
        return None
    return np.concatenate([np.zeros(na, bool) if a is None else a, np.zeros(nb, bool) if b is None else b])


def _kernel(oids: tuple, delim: str, wait: bool = False, naive_utc: bool = False):
    """The parser for this layout; the first request compiles it in the
    background (about 0.1 s of LLVM -O3) and declines meanwhile, so no
    COPY waits for the compiler."""
    key = (oids, delim, naive_utc)
    fn = _cache.get(key)
    if fn is not None or key in _failed:
        return fn
    with _lock:
        fut = _pending.get(key)
        if fut is None:

            fut = _pending[key] = jit._bg.submit(_build_and_cache, key)
    if wait:
        fut.result()
    return _cache.get(key)


def _build_and_cache(key: tuple) -> None:
    try:
        _cache[key] = _compile(key[0], ord(key[1]), key[2])
    except Exception:          # never let the fast path break COPY: the general path decodes
        _failed.add(key)


def _compile(oids: tuple, delim: int, naive_utc: bool = False):

    ir_text = str(_build(oids, delim, naive_utc))
    with jit._llvm_lock:
        # measured: level 3 code is ~25% faster than level 2 at the same compile time (~0.1 s CPU)
        ee = jit._compile(ir_text, 2, verify=True, speed_level=3)
    fn = PARSE_T(ee.get_function_address("csv_parse"))
    _engines.append(ee)               # keep the machine code alive with the function
    return fn


# ------------------------------------------------------------------ IR

def _build(oids: tuple, delim: int, naive_utc: bool = False):
    i8, i64, f64 = ir.IntType(8), ir.IntType(64), ir.DoubleType()
    mod = ir.Module(name="csv")
    pow10 = ir.GlobalVariable(mod, ir.ArrayType(f64, 16), "pow10")
    pow10.initializer = ir.Constant(ir.ArrayType(f64, 16), [float(10 ** k) for k in range(16)])
    pow10.global_constant = True
    fnty = ir.FunctionType(i64, [i8.as_pointer(), i64, i64.as_pointer()])
    fn = ir.Function(mod, fnty, "csv_parse")
    data, length, outs = fn.args
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    c = lambda v, t=i64: ir.Constant(t, v)     # noqa: E731
    n = len(oids)

    pos = b.alloca(i64, name="pos")
    row = b.alloca(i64, name="row")
    acc = b.alloca(i64, name="acc")
    nd = b.alloca(i64, name="nd")
    frac = b.alloca(i64, name="frac")
    b.store(c(0), pos)
    b.store(c(0), row)
    colp, maskp, nullc = [], [], []
    for j, o in enumerate(oids):
        kind, dt, _ = _KINDS[o]
        ty = {np.int16: ir.IntType(16), np.int32: ir.IntType(32), np.int64: i64, np.float64: f64,
              np.bool_: i8}[dt]
        colp.append(b.inttoptr(b.load(b.gep(outs, [c(2 * j)])), ty.as_pointer()))
        maskp.append(b.inttoptr(b.load(b.gep(outs, [c(2 * j + 1)])), i8.as_pointer()))
        nullc.append(b.gep(outs, [c(2 * n + j)]))

    cap = b.load(b.gep(outs, [c(3 * n)]))
    bail = fn.append_basic_block("bail")
    done = fn.append_basic_block("done")
    rowhead = fn.append_basic_block("row")
    b.branch(rowhead)
    b.position_at_end(bail)
    b.ret(c(-1))
    b.position_at_end(done)
    b.store(b.load(pos), b.gep(outs, [c(3 * n + 1)]))
    b.ret(b.load(row))

    b.position_at_end(rowhead)
    b.cbranch(b.or_(b.icmp_signed(">=", b.load(pos), length), b.icmp_signed(">=", b.load(row), cap)),
              done, fn.append_basic_block("row_body"))
    b.position_at_end(fn.basic_blocks[-1])

    def byte_at(p):
        return b.load(b.gep(data, [p]))

    for j, o in enumerate(oids):
        kind, dt, maxd = _KINDS[o]
        term = c(delim if j < n - 1 else 10, i8)
        r = b.load(row)
        p = b.load(pos)
        ch = byte_at(p)
        isnull = fn.append_basic_block(f"c{j}_null")
        val = fn.append_basic_block(f"c{j}_val")
        nxt = fn.append_basic_block(f"c{j}_next")
        b.cbranch(b.icmp_unsigned("==", ch, term), isnull, val)
        # NULL: the empty unquoted field
        b.position_at_end(isnull)
        b.store(c(1, i8), b.gep(maskp[j], [r]))
        b.store(ir.Constant(colp[j].type.pointee, 0 if kind != "float" else 0.0), b.gep(colp[j], [r]))
        b.store(b.add(b.load(nullc[j]), c(1)), nullc[j])
        b.store(b.add(p, c(1)), pos)
        b.branch(nxt)
        b.position_at_end(val)
        b.store(c(0, i8), b.gep(maskp[j], [r]))
        if kind == "bool":
            _emit_bool(b, fn, j, data, pos, colp[j], r, term, bail, nxt, c, i8)
        elif kind in ("date", "ts", "tstz"):
            csv_temporal.emit(csv_temporal.Emitter(b, fn, f"c{j}", data, bail, term, length),
                              kind, pos, colp[j], r, nxt, naive_utc)
        else:
            _emit_number(b, fn, j, kind, maxd, data, pos, acc, nd, frac, pow10, colp[j], r, term, bail, nxt, c, i8,
                         f64)
        b.position_at_end(nxt)
    b.store(b.add(b.load(row), c(1)), row)
    b.branch(rowhead)
    return mod


def _emit_number(b, fn, j, kind, maxd, data, pos, acc, nd, frac, pow10, col, r, term, bail, nxt, c, i8, f64):
    """[-]digits (int) or [-]digits[.digits] (float) up to the terminator.
    The sign is branched on, and the digits read by one copy of the loop per
    sign: a position selected from the loaded byte would chain each field's
    loads to the one before (measured: 35% of an integer row's time), where
    a predicted branch lets the CPU run ahead."""
    p0 = b.load(pos)
    minus, plus = fn.append_basic_block(f"c{j}_minus"), fn.append_basic_block(f"c{j}_plus")
    b.cbranch(b.icmp_unsigned("==", b.load(b.gep(data, [p0])), c(ord("-"), i8)), minus, plus)
    for neg, block in ((True, minus), (False, plus)):
        b.position_at_end(block)
        b.store(b.add(p0, c(1)) if neg else p0, pos)
        _emit_digits(b, fn, f"c{j}{'n' if neg else 'p'}", kind, maxd, data, pos, acc, nd, frac, pow10, col, r, term,
                     bail, nxt, neg, c, i8, f64)


def _emit_digits(b, fn, tag, kind, maxd, data, pos, acc, nd, frac, pow10, col, r, term, bail, nxt, neg, c, i8, f64):
    """The digits of one sign from ``pos``, stored (negated if ``neg``), then on to ``nxt``."""
    b.store(c(0), acc)
    b.store(c(0), nd)
    b.store(c(0), frac)
    ipart = fn.append_basic_block(f"{tag}_int")
    iend = fn.append_basic_block(f"{tag}_int_end")
    b.branch(ipart)
    b.position_at_end(ipart)
    p = b.load(pos)
    d = b.sub(b.zext(b.load(b.gep(data, [p])), ir.IntType(64)), c(ord("0")))
    more = fn.append_basic_block(f"{tag}_int_digit")
    b.cbranch(b.icmp_unsigned("<", d, c(10)), more, iend)
    b.position_at_end(more)
    b.store(b.add(b.mul(b.load(acc), c(10)), d), acc)
    b.store(b.add(b.load(nd), c(1)), nd)
    b.store(b.add(p, c(1)), pos)
    b.branch(ipart)
    b.position_at_end(iend)
    if kind == "float":
        dot = fn.append_basic_block(f"{tag}_dot")
        fpart = fn.append_basic_block(f"{tag}_frac")
        fdig = fn.append_basic_block(f"{tag}_frac_digit")
        fend = fn.append_basic_block(f"{tag}_frac_end")
        p = b.load(pos)
        b.cbranch(b.icmp_unsigned("==", b.load(b.gep(data, [p])), c(ord("."), i8)), dot, fend)
        b.position_at_end(dot)
        b.store(b.add(p, c(1)), pos)
        b.branch(fpart)
        b.position_at_end(fpart)
        p = b.load(pos)
        d = b.sub(b.zext(b.load(b.gep(data, [p])), ir.IntType(64)), c(ord("0")))
        b.cbranch(b.icmp_unsigned("<", d, c(10)), fdig, fend)
        b.position_at_end(fdig)
        b.store(b.add(b.mul(b.load(acc), c(10)), d), acc)
        b.store(b.add(b.load(nd), c(1)), nd)
        b.store(b.add(b.load(frac), c(1)), frac)
        b.store(b.add(p, c(1)), pos)
        b.branch(fpart)
        b.position_at_end(fend)
    # at least one digit, no more than can be exact, and the terminator right after
    p = b.load(pos)
    k = b.load(nd)
    ok = b.and_(b.icmp_unsigned(">=", k, c(1)), b.icmp_unsigned("<=", k, c(maxd)))
    ok = b.and_(ok, b.icmp_unsigned("==", b.load(b.gep(data, [p])), term))
    store = fn.append_basic_block(f"{tag}_store")
    b.cbranch(ok, store, bail)
    b.position_at_end(store)
    v = b.load(acc)
    if kind == "float":
        fv = b.fdiv(b.sitofp(v, f64), b.load(b.gep(pow10, [c(0), b.load(frac)])))
        b.store(b.fneg(fv) if neg else fv, b.gep(col, [r]))
    else:
        v = b.sub(c(0), v) if neg else v
        ty = col.type.pointee
        b.store(v if ty.width == 64 else b.trunc(v, ty), b.gep(col, [r]))
    b.store(b.add(p, c(1)), pos)
    b.branch(nxt)


def _emit_bool(b, fn, j, data, pos, col, r, term, bail, nxt, c, i8):
    """t, true, f, false (what a client writes; other spellings decline)."""
    def expect(p, s: bytes, ok_block):
        """Branch to ok_block if the bytes from p are s, else bail (short-circuit: never reads past a mismatch)."""
        for i, ch in enumerate(s):
            nb = ok_block if i == len(s) - 1 else fn.append_basic_block(f"c{j}_b{ch}_{i}")
            b.cbranch(b.icmp_unsigned("==", b.load(b.gep(data, [b.add(p, c(i))])), c(ch, i8)), nb, bail)
            b.position_at_end(nb)

    p = b.load(pos)
    ch = b.load(b.gep(data, [p]))
    tb, fb, end = (fn.append_basic_block(f"c{j}_{s}") for s in ("t", "f", "end"))
    sw = b.switch(ch, bail)
    sw.add_case(c(ord("t"), i8), tb)
    sw.add_case(c(ord("f"), i8), fb)
    for block, word, value in ((tb, b"true", 1), (fb, b"false", 0)):
        b.position_at_end(block)
        b.store(c(value, i8), b.gep(col, [r]))
        p1 = b.add(p, c(1))
        nx = b.load(b.gep(data, [p1]))
        short, long_ = fn.append_basic_block(f"c{j}_{value}_short"), fn.append_basic_block(f"c{j}_{value}_long")
        b.cbranch(b.icmp_unsigned("==", nx, term), short, long_)
        b.position_at_end(short)
        b.store(b.add(p1, c(1)), pos)
        b.branch(nxt)
        b.position_at_end(long_)
        fin = fn.append_basic_block(f"c{j}_{value}_fin")
        expect(p1, word[1:] + bytes([term.constant]), fin)
        b.store(b.add(p1, c(len(word))), pos)
        b.branch(nxt)
    b.position_at_end(end)
    b.unreachable()
