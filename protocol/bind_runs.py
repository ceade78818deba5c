"""Runs of identical-shape Bind/[Describe]/Execute cycles (sans-IO).

pgjdbc's ``executeBatch`` (Spark's ``df.write.jdbc``), asyncpg's and
psycopg's pipelined ``executemany`` send one Bind/[Describe portal]/Execute
per row of one prepared statement, ~256 of them before each Sync.  Parsing
each as three ``Message`` objects and decoding each Bind's parameters into
Python values costs ~15 us a row, more than the rest of the ingest.

Consecutive cycles of one statement and unnamed portal, with the same
format codes, are read as one :class:`BindRun`.  When they also have the
same byte layout (fixed-width binary values: int4, int8, float8,
timestamp, ...) the run is found as one ``(count, stride)`` byte matrix
compared at once; otherwise (text values, NULLs here and there) cycle by
cycle, reading only the lengths.  Either way a fixed-width binary
parameter then decodes as one numpy gather (:func:`binary_values`).
Anything else (a named portal, another statement, other format codes)
ends the run; the messages after it are read one by one as before.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from . import oids

#: A run shorter than this is left to the per-message path.
MIN_RUN = 8
#: At most this many cycles per run (bounds one decode's memory and latency).
MAX_RUN = 8192

_HDR = struct.Struct("!ci")
_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")
_DESCRIBE_UNNAMED_PORTAL = b"P\0"

#: Message kinds of a run: what the session dispatches it under.
RUN_KIND = "B*"


@dataclass
class BindRun:
    """``count`` Bind/[Describe]/Execute cycles of the unnamed portal of
    statement ``statement``, identical but for the parameter values:
    ``offsets[i, j]`` and ``lengths[i, j]`` locate parameter ``j`` of cycle
    ``i`` in ``raw`` (length -1: NULL)."""

    statement: str
    count: int
    described: bool
    max_rows: int
    formats: list[int]
    offsets: np.ndarray
    lengths: np.ndarray
    result_formats: list[int]
    raw: bytes

    @property
    def n_params(self) -> int:
        return int(self.offsets.shape[1])

    def nulls(self, j: int) -> np.ndarray | None:
        """Which cycles' parameter ``j`` is NULL (None: none is)."""
        mask: np.ndarray = self.lengths[:, j] < 0
        return mask if mask.any() else None

    def all_null(self, j: int) -> bool:
        return bool((self.lengths[:, j] < 0).all())

    def fixed_bytes(self, j: int, size: int) -> np.ndarray | None:
        """Parameter ``j``'s value bytes, ``(count, size)`` uint8 (zeros where
        NULL); None unless every non-NULL value is ``size`` bytes long."""
        ln = self.lengths[:, j]
        if ((ln != size) & (ln >= 0)).any():
            return None
        idx = np.where(ln >= 0, self.offsets[:, j], 0)[:, None] + np.arange(size)
        out: np.ndarray = np.frombuffer(self.raw, np.uint8)[idx]
        out[ln < 0] = 0         # a NULL's slot holds zero (the epoch), never garbage a reader might format
        return out

    def values(self, j: int) -> list[bytes | None]:
        """Parameter ``j`` of every cycle as bytes (None: NULL)."""
        raw = self.raw
        return [None if ln < 0 else raw[o:o + ln]
                for o, ln in zip(self.offsets[:, j].tolist(), self.lengths[:, j].tolist())]

    def cycles(self) -> list[tuple[str, bytes]]:
        """The run as ordinary messages (kind, body), for the per-message path."""
        out: list[tuple[str, bytes]] = []
        raw = self.raw
        pos = 0
        end = len(raw)
        while pos < end:
            kind, length = _HDR.unpack_from(raw, pos)
            out.append((kind.decode("latin-1"), raw[pos + 5:pos + 1 + length]))
            pos += 1 + length
        return out


_Layout = tuple[str, list[int], list[tuple[int, int] | None], list[int], int, int]


def _bind_layout(buf: bytearray, pos: int, length: int) -> _Layout | None:
    """Parse the Bind at ``pos``: (statement, formats expanded to one per
    parameter, each value's (offset, length) or None for NULL, result
    formats, where the parameters start and end) for an unnamed portal,
    else None.  Offsets count from ``pos``."""
    body = pos + 5
    end = pos + 1 + length
    if buf[body] != 0:                       # a named portal: not a run
        return None
    s_end = buf.find(b"\0", body + 1, end)
    if s_end < 0:
        return None
    try:
        statement = bytes(buf[body + 1:s_end]).decode("utf-8")
    except UnicodeDecodeError:
        return None
    p = s_end + 1
    (nf,) = _I16.unpack_from(buf, p)
    if nf < 0 or p + 2 + 2 * nf > end:
        return None
    formats = list(struct.unpack_from(f"!{nf}h", buf, p + 2)) if nf else []
    p += 2 + 2 * nf
    (np_,) = _I16.unpack_from(buf, p)
    p += 2
    if np_ < 0 or (nf > 1 and nf != np_) or any(f not in (0, 1) for f in formats):
        return None
    params_start = p - pos
    spans = value_spans(buf, p, np_, end)
    if spans is None:
        return None
    values, p = spans
    fields = [None if v is None else (v[0] - pos, v[1]) for v in values]
    if p + 2 > end:
        return None
    (nr,) = _I16.unpack_from(buf, p)
    if nr < 0 or p + 2 + 2 * nr != end:
        return None
    result_formats = list(struct.unpack_from(f"!{nr}h", buf, p + 2)) if nr else []
    expanded = formats * np_ if nf == 1 else formats if nf else [0] * np_
    return statement, expanded, fields, result_formats, params_start, p - pos


def value_spans(buf: bytes | bytearray, p: int, count: int,
                end: int) -> tuple[list[tuple[int, int] | None], int] | None:
    """(start, length) of each of a Bind's ``count`` length-prefixed
    parameter values from ``p`` (None for a NULL), and where they end;
    None when one runs past ``end`` (a malformed Bind, left to the reader)."""
    out: list[tuple[int, int] | None] = []
    for _ in range(count):
        if p + 4 > end:
            return None
        (ln,) = _I32.unpack_from(buf, p)
        p += 4
        if ln == -1:
            out.append(None)
            continue
        if ln < 0 or p + ln > end:
            return None
        out.append((p, ln))
        p += ln
    return out, p


def scan(buf: bytearray, pos: int, avail: int, max_message: int) -> tuple[BindRun, int] | None:
    """A run of at least :data:`MIN_RUN` cycles starting with the Bind at
    ``pos`` (``avail`` bytes buffered from there), and its length in bytes;
    None when there is none (cheap: two header reads for a lone cycle)."""
    kind, b_len = _HDR.unpack_from(buf, pos)
    if kind != b"B" or b_len < 4 or b_len > max_message:
        return None
    q = pos + 1 + b_len
    if q + 5 > pos + avail:
        return None
    kind, length = _HDR.unpack_from(buf, q)
    described = False
    if kind == b"D":
        if length != 4 + len(_DESCRIBE_UNNAMED_PORTAL) or buf[q + 5:q + 7] != _DESCRIBE_UNNAMED_PORTAL:
            return None
        described = True
        q += 1 + length
        if q + 5 > pos + avail:
            return None
        kind, length = _HDR.unpack_from(buf, q)
    if kind != b"E" or length != 9 or buf[q + 5] != 0:
        return None
    (max_rows,) = _I32.unpack_from(buf, q + 6)
    stride = q + 10 - pos
    if avail < stride * MIN_RUN or buf[pos + stride] != 0x42:
        return None
    layout = _bind_layout(buf, pos, b_len)
    if layout is None:
        return None
    statement, formats, fields, result_formats, params_start, params_end = layout
    found = _fixed_run(buf, pos, avail, stride, fields)
    if found is None:
        found = _varying_run(buf, pos, avail, max_message, (b_len, stride, params_start, params_end), len(fields))
    if found is None:
        return None
    size, offsets, lengths = found
    run = BindRun(statement, len(offsets), described, max_rows, formats, offsets, lengths, result_formats,
                  bytes(buf[pos:pos + size]))
    return run, size


def _fixed_run(buf: bytearray, pos: int, avail: int, stride: int,
               fields: list[tuple[int, int] | None]) -> tuple[int, np.ndarray, np.ndarray] | None:
    """Cycles of exactly the first one's layout (the common case: fixed-width
    binary values), compared as one ``(k, stride)`` byte matrix: (bytes,
    offsets, lengths) of the run, or None when fewer than MIN_RUN match."""
    k_max = min(avail // stride, MAX_RUN)
    if buf[pos + stride:pos + stride + 5] != buf[pos:pos + 5]:
        return None
    m = np.frombuffer(bytes(buf[pos:pos + k_max * stride]), np.uint8).reshape(k_max, stride)
    template = np.ones(stride, bool)
    for f in fields:
        if f is not None:
            template[f[0]:f[0] + f[1]] = False
    same = (m[:, template] == m[0, template]).all(axis=1)
    count = k_max if same.all() else int(np.argmin(same))
    if count < MIN_RUN:
        return None
    first_off = np.array([f[0] if f is not None else 0 for f in fields], np.int64)
    first_len = np.array([f[1] if f is not None else -1 for f in fields], np.int64)
    offsets = np.arange(count, dtype=np.int64)[:, None] * stride + first_off[None, :]
    lengths = np.broadcast_to(first_len, (count, len(fields)))
    return count * stride, offsets, lengths


def _varying_run(buf: bytearray, pos: int, avail: int, max_message: int, shape: tuple[int, int, int, int],
                 n: int) -> tuple[int, np.ndarray, np.ndarray] | None:
    """Cycles that differ from the first in their parameters' lengths
    (text, NULLs here and there): walked cycle by cycle, each checked to
    have the first's Bind prefix (names, formats, count), ``n`` parameters,
    its result formats and its Describe/Execute.  ``shape``: the first
    cycle's Bind length, its whole length, where its parameters start and end."""
    b_len, stride, head_end, params_end = shape
    prefix = bytes(buf[pos + 5:pos + head_end])
    suffix = bytes(buf[pos + params_end:pos + 1 + b_len])
    tail = bytes(buf[pos + 1 + b_len:pos + stride])
    end = pos + avail
    offs: list[int] = []
    lens: list[int] = []
    p = pos
    count = 0
    unpack = _I32.unpack_from
    while count < MAX_RUN and p + 5 <= end and buf[p] == 0x42:
        (blen,) = unpack(buf, p + 1)
        q = p + 1 + blen
        if blen < 4 or blen > max_message or q + len(tail) > end or buf[p + 5:p + head_end] != prefix:
            break
        v = p + head_end
        row_o: list[int] = []
        row_l: list[int] = []
        for _ in range(n):
            if v + 4 > q:
                break
            (ln,) = unpack(buf, v)
            v += 4
            if ln < -1 or v + max(ln, 0) > q:
                break
            row_o.append(v - pos)
            row_l.append(ln)
            v += max(ln, 0)
        if len(row_l) != n or buf[v:q] != suffix or buf[q:q + len(tail)] != tail:
            break
        offs.extend(row_o)
        lens.extend(row_l)
        p = q + len(tail)
        count += 1
    if count < MIN_RUN:
        return None
    return p - pos, np.array(offs, np.int64).reshape(count, n), np.array(lens, np.int64).reshape(count, n)


#: Binary wire layout of the fixed-width types a run decodes as a whole:
#: value length and big-endian dtype.  Others go value by value.
_FIXED = {
    oids.INT2: (2, ">i2"), oids.INT4: (4, ">i4"), oids.INT8: (8, ">i8"),
    oids.FLOAT4: (4, ">f4"), oids.FLOAT8: (8, ">f8"), oids.BOOL: (1, "u1"),
    oids.DATE: (4, ">i4"), oids.TIMESTAMP: (8, ">i8"), oids.TIMESTAMPTZ: (8, ">i8"),
}
#: PostgreSQL's epoch (2000-01-01) in the column epoch's (1970-01-01) days and microseconds.
_PG_EPOCH_DAYS = 10957
_PG_EPOCH_US = _PG_EPOCH_DAYS * 86_400_000_000
#: Values decoded here (from PostgreSQL's epoch): years 1 to 9999, what the
#: per-value path turns into Python dates and datetimes; infinities and
#: anything else go that way and get its answer.
_DATE_RANGE = (-730119, 2921939)
_TIMESTAMP_RANGE = (-63082281600000000, 252455615999999999)


def binary_values(run: BindRun, j: int, oid: int) -> np.ndarray | None:
    """Parameter ``j`` of every cycle of ``run`` (binary format, type
    ``oid``) as a numpy column of the type's native dtype, what
    ``types.decode_binary`` gives value by value (zero where NULL: see
    :meth:`BindRun.nulls`).  None: this type or value (a date or timestamp
    out of the years 1 to 9999, an infinity) is left to that per-value path."""
    spec = _FIXED.get(oid)
    if spec is None:
        return None
    size, dtype = spec
    cells = run.fixed_bytes(j, size)
    if cells is None:
        return None
    raw = np.ascontiguousarray(cells).view(dtype).ravel()
    if oid == oids.BOOL:
        truth: np.ndarray = raw != 0
        return truth
    if oid in (oids.DATE, oids.TIMESTAMP, oids.TIMESTAMPTZ):
        lo, hi = _DATE_RANGE if oid == oids.DATE else _TIMESTAMP_RANGE
        nulls = run.nulls(j)
        valid = raw if nulls is None else raw[~nulls]
        if len(valid) and (valid.min() < lo or valid.max() > hi):
            return None
        if oid == oids.DATE:
            return (raw.astype(np.int64) + _PG_EPOCH_DAYS).astype("datetime64[D]")
        return (raw.astype(np.int64) + _PG_EPOCH_US).view("datetime64[us]")
    native: np.ndarray = raw.astype(raw.dtype.newbyteorder("="))
    return native
