"""Runs of identical-shape Bind/[Describe]/Execute cycles (sans-IO).

pgjdbc's ``executeBatch`` (Spark's ``df.write.jdbc``), asyncpg's and
psycopg's pipelined ``executemany`` send one Bind/[Describe portal]/Execute
per row of one prepared statement, ~256 of them before each Sync.  Parsing
each as three ``Message`` objects and decoding each Bind's parameters into
Python values costs ~15 us a row, more than the rest of the ingest.

When consecutive cycles have the same byte layout (same statement, same
format codes and parameter lengths: fixed-width binary values such as int4,
int8, float8, timestamp, no NULL switching on and off), the whole run is
one ``(count, stride)`` byte matrix: each parameter is a column of it, and
:meth:`BindRun.column` decodes it with one numpy view.  Anything that does
not fit (a varying length, a named portal, another statement) ends the run;
the messages after it are read one by one as before.
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
    """``count`` cycles of ``stride`` bytes each, Bind/[Describe]/Execute of
    the unnamed portal of statement ``statement``, identical but for the
    parameter values.  ``fields``: per parameter, its value's (offset in the
    cycle, length), or None when it is NULL in every cycle."""

    statement: str
    count: int
    stride: int
    described: bool
    max_rows: int
    formats: list[int]
    fields: list[tuple[int, int] | None]
    result_formats: list[int]
    raw: bytes

    def column(self, j: int) -> np.ndarray:
        """Parameter ``j``'s value bytes, one row per cycle (uint8, ``(count, length)``)."""
        f = self.fields[j]
        assert f is not None
        off, ln = f
        m = np.frombuffer(self.raw, np.uint8).reshape(self.count, self.stride)
        return m[:, off:off + ln]

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


_Layout = tuple[str, list[int], list[tuple[int, int] | None], list[int]]


def _bind_layout(buf: bytearray, pos: int, length: int) -> _Layout | None:
    """Parse the Bind at ``pos``: (statement, formats expanded to one per
    parameter, fields, result formats) for an unnamed portal, else None."""
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
    fields: list[tuple[int, int] | None] = []
    for _ in range(np_):
        if p + 4 > end:
            return None
        (ln,) = _I32.unpack_from(buf, p)
        p += 4
        if ln == -1:
            fields.append(None)
            continue
        if ln < 0 or p + ln > end:
            return None
        fields.append((p - pos, ln))
        p += ln
    if p + 2 > end:
        return None
    (nr,) = _I16.unpack_from(buf, p)
    if nr < 0 or p + 2 + 2 * nr != end:
        return None
    result_formats = list(struct.unpack_from(f"!{nr}h", buf, p + 2)) if nr else []
    expanded = formats * np_ if nf == 1 else formats if nf else [0] * np_
    return statement, expanded, fields, result_formats


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
    k_max = min(avail // stride, MAX_RUN)
    if k_max < MIN_RUN or buf[pos + stride:pos + stride + 5] != buf[pos:pos + 5]:
        return None
    layout = _bind_layout(buf, pos, b_len)
    if layout is None:
        return None
    statement, formats, fields, result_formats = layout
    raw = bytes(buf[pos:pos + k_max * stride])
    m = np.frombuffer(raw, np.uint8).reshape(k_max, stride)
    template = np.ones(stride, bool)
    for f in fields:
        if f is not None:
            template[f[0]:f[0] + f[1]] = False
    same = (m[:, template] == m[0, template]).all(axis=1)
    count = k_max if same.all() else int(np.argmin(same))
    if count < MIN_RUN:
        return None
    if count < k_max:
        raw = raw[:count * stride]
    return BindRun(statement, count, stride, described, max_rows, formats, fields, result_formats, raw), count * stride


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
    ``types.decode_binary`` gives value by value.  None: this type or
    value (a date or timestamp infinity) is left to that per-value path."""
    spec = _FIXED.get(oid)
    f = run.fields[j]
    if spec is None or f is None or f[1] != spec[0]:
        return None
    _size, dtype = spec
    raw = np.ascontiguousarray(run.column(j)).view(dtype).ravel()
    if oid == oids.BOOL:
        truth: np.ndarray = raw != 0
        return truth
    if oid in (oids.DATE, oids.TIMESTAMP, oids.TIMESTAMPTZ):
        lo, hi = _DATE_RANGE if oid == oids.DATE else _TIMESTAMP_RANGE
        if raw.min() < lo or raw.max() > hi:
            return None
        if oid == oids.DATE:
            return (raw.astype(np.int64) + _PG_EPOCH_DAYS).astype("datetime64[D]")
        return (raw.astype(np.int64) + _PG_EPOCH_US).view("datetime64[us]")
    native: np.ndarray = raw.astype(raw.dtype.newbyteorder("="))
    return native
