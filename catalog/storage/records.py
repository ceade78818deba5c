"""A small self-describing binary codec for everything splitstream keeps on disk.

Files used to be pickles, so their meaning was the layout of Python classes:
renaming a module broke recovery, and nothing said which version of the
format a file had.  Here every file starts with a magic number and a format
version (:func:`file_header`, :func:`check_header`), and its contents are
values of a fixed set of kinds:

* primitives: None, bool, int (any size), float, str, bytes;
* the values rows hold, each encoded explicitly: Decimal, date, time,
  datetime (with its zone), timedelta, Interval, UUID and the +/-infinity
  date and timestamp markers;
* lists, tuples, dicts, sets and frozensets of values;
* numpy arrays: fixed-width ones as dtype string + shape + raw bytes, object
  arrays as a column of values (str and Decimal columns joined into one blob,
  which is what keeps the WAL of a stream batch as fast as the tuned pickle);
* records: a registered tag, its version and named fields (:func:`register`).

Decoding never runs code named by the data: an unknown tag is an error.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import struct
import uuid
from typing import Any, Callable, Iterable

import numpy as np

from splitstream.protocol import types as wiretypes
from splitstream.protocol.errors import OBJECT_NOT_IN_PREREQUISITE_STATE, PgError

DATA_CORRUPTED = "XX001"

#: The on-disk format this code writes.  Version 1 is the pickle format of
#: splitstream before versioning (files without a magic number).
FORMAT_VERSION = 2
PICKLE_FORMAT_VERSION = 1

_Q = struct.Struct("<q")
_I = struct.Struct("<I")
_D = struct.Struct("<d")
_H = struct.Struct("<H")
_ZT = struct.Struct("<iq")        # datetime: day ordinal, microsecond of the day
_TD = struct.Struct("<qqq")       # timedelta: days, seconds, microseconds
_HDR = struct.Struct("<8sI")      # magic, format version


class FormatError(PgError):
    """A file this code cannot read: wrong magic, another version, bad data.

    A :class:`PgError` so that whoever opens a data directory (the server
    knows only the protocol's errors) can report it as a message, not a crash."""

    def __init__(self, message: str, sqlstate: str = DATA_CORRUPTED, hint: str | None = None) -> None:
        PgError.__init__(self, sqlstate, message, hint=hint, severity="FATAL")


class FormatVersionError(FormatError):
    """A file of another format version (older or newer than this code's)."""

    def __init__(self, path: str, found: int, expected: int = FORMAT_VERSION) -> None:
        older = "an older" if found < expected else "a newer"
        super().__init__(f"{path} is in on-disk format version {found} (written by {older} splitstream); "
                         f"this server reads and writes format version {expected}", OBJECT_NOT_IN_PREREQUISITE_STATE,
                         hint="Open the data directory with the splitstream version that wrote it, dump its "
                              "data (COPY TO), and load it into a new data directory.")
        self.found = found
        self.expected = expected


# ------------------------------------------------------------------ file headers

HEADER_SIZE = _HDR.size


def file_header(magic: bytes) -> bytes:
    """The first bytes of a file of kind ``magic`` (at most 8 bytes)."""
    return _HDR.pack(magic, FORMAT_VERSION)


def check_header(data: bytes, magic: bytes, path: str) -> int:
    """The offset after a valid header; :class:`FormatVersionError` for a
    file of another version (a pickle without header is version 1)."""
    if len(data) < HEADER_SIZE or data[:8] != magic.ljust(8, b"\0"):
        if data[:1] == b"\x80" or (len(data) >= 10 and data[8:9] == b"\x80"):
            raise FormatVersionError(path, PICKLE_FORMAT_VERSION)
        raise FormatError(f"{path} is not a splitstream {magic.decode()} file (bad magic number)")
    version = _HDR.unpack_from(data)[1]
    if version != FORMAT_VERSION:
        raise FormatVersionError(path, version)
    return HEADER_SIZE


# ------------------------------------------------------------------ records

@dataclasses.dataclass(frozen=True)
class RecordType:
    tag: str
    version: int
    fields: tuple[str, ...]
    cls: type | None
    head: bytes                   # pre-encoded tag, version and field count
    names: tuple[bytes, ...]      # pre-encoded field names
    #: field -> (to disk, from disk): a class's field kept in another form on
    #: disk (a positional pair as a record of named fields, say)
    convert: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Record:
    """A decoded record of a type registered without a class."""

    tag: str
    fields: dict[str, Any]


_BY_TAG: dict[str, RecordType] = {}
_BY_CLASS: dict[type, RecordType] = {}


_Convert = dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]]


def register(tag: str, version: int, fields: Iterable[str], cls: type | None = None,
             convert: _Convert | None = None) -> RecordType:
    """Declare a record type.  With ``cls`` (a class taking the fields as
    keyword arguments, e.g. a dataclass) its instances encode as this record
    and decode back to it; without, records decode as :class:`Record`.
    ``convert``: field -> (to disk, from disk) for the fields of ``cls`` kept
    in another form on disk."""
    names = tuple(fields)
    rt = RecordType(tag, version, names, cls, _record_head(tag, version, len(names)), tuple(map(_str_bytes, names)),
                    dict(convert or {}))
    old = _BY_TAG.get(tag)
    if old is not None and old != rt:
        raise ValueError(f"record tag {tag!r} registered twice")
    _BY_TAG[tag] = rt
    if cls is not None:
        _BY_CLASS[cls] = rt
    return rt


def register_dataclass(cls: type, tag: str, version: int = 1, convert: _Convert | None = None) -> RecordType:
    """:func:`register` a dataclass by its field names."""
    return register(tag, version, (f.name for f in dataclasses.fields(cls)), cls, convert)


def _record_head(tag: str, version: int, nfields: int) -> bytes:
    t = tag.encode()
    return b"R" + _H.pack(len(t)) + t + _H.pack(version) + _H.pack(nfields)


def record_type(tag: str) -> RecordType:
    return _BY_TAG[tag]


def _str_bytes(s: str) -> bytes:
    b = s.encode("utf-8", "surrogatepass")
    return b"s" + _I.pack(len(b)) + b


# ------------------------------------------------------------------ encoding

_Parts = list[bytes | memoryview]

#: Fixed-width numpy kinds written as raw buffers.
_RAW_KINDS = "biufcMmSU"

_INFINITIES: dict[str, object] = {
    "DATE_POS_INF": wiretypes.DATE_POS_INF, "DATE_NEG_INF": wiretypes.DATE_NEG_INF,
    "TS_POS_INF": wiretypes.TS_POS_INF, "TS_NEG_INF": wiretypes.TS_NEG_INF,
    "TSTZ_POS_INF": wiretypes.TSTZ_POS_INF, "TSTZ_NEG_INF": wiretypes.TSTZ_NEG_INF,
}
_INFINITY_NAMES = {id(v): k for k, v in _INFINITIES.items()}


def dumps(value: Any) -> bytes:
    """``value`` encoded (no file header)."""
    parts: _Parts = []
    _put(parts, value)
    return b"".join(parts)


def dump_parts(value: Any, parts: _Parts) -> None:
    """Append the encoding of ``value`` to ``parts`` (joined by the caller:
    large array buffers are referenced, not copied, until then)."""
    _put(parts, value)


def _put(parts: _Parts, v: Any) -> None:
    enc = _ENCODERS.get(type(v))
    if enc is not None:
        enc(parts, v)
        return
    rt = _BY_CLASS.get(type(v))
    if rt is not None:
        _put_object(parts, rt, v)
    elif isinstance(v, np.generic):
        _put_scalar(parts, v)
    else:
        raise TypeError(f"cannot store a value of type {type(v).__module__}.{type(v).__qualname__}")


def _put_str(parts: _Parts, v: str) -> None:
    b = v.encode("utf-8", "surrogatepass")
    parts.append(b"s" + _I.pack(len(b)))
    parts.append(b)


def _put_bytes(parts: _Parts, v: bytes) -> None:
    parts.append(b"b" + _I.pack(len(v)))
    parts.append(bytes(v))


def _put_int(parts: _Parts, v: int) -> None:
    if -(1 << 63) <= v < (1 << 63):
        parts.append(b"i" + _Q.pack(v))
    else:
        b = v.to_bytes((v.bit_length() + 8) // 8, "little", signed=True)
        parts.append(b"I" + _I.pack(len(b)) + b)


def _put_bool(parts: _Parts, v: bool) -> None:
    parts.append(b"T" if v else b"F")


def _put_none(parts: _Parts, v: None) -> None:
    parts.append(b"N")


def _put_float(parts: _Parts, v: float) -> None:
    parts.append(b"f" + _D.pack(v))


def _put_decimal(parts: _Parts, v: decimal.Decimal) -> None:
    b = str(v).encode()
    parts.append(b"D" + _I.pack(len(b)) + b)


def _put_seq(tag: bytes) -> Callable[[_Parts, Any], None]:
    def put(parts: _Parts, v: Any) -> None:
        parts.append(tag + _I.pack(len(v)))
        for x in v:
            _put(parts, x)
    return put


_put_tuple = _put_seq(b"p")
_put_set = _put_seq(b"S")
_put_frozenset = _put_seq(b"Q")
_put_plain_list = _put_seq(b"l")

#: Lists of this many same-arity tuples (group keys) are stored column by column.
_COLUMNAR_TUPLES = 32


def _put_list(parts: _Parts, v: list[Any]) -> None:
    if len(v) >= _COLUMNAR_TUPLES and type(v[0]) is tuple:
        arity = len(v[0])
        if all(type(t) is tuple and len(t) == arity for t in v):
            parts.append(b"K" + _Q.pack(len(v)) + _H.pack(arity))
            for column in zip(*v) if arity else ():
                _put_column(parts, list(column))
            return
    _put_plain_list(parts, v)


def _put_dict(parts: _Parts, v: dict[Any, Any]) -> None:
    parts.append(b"m" + _I.pack(len(v)))
    for k, x in v.items():
        _put(parts, k)
        _put(parts, x)


def _put_date(parts: _Parts, v: dt.date) -> None:
    if type(v) is not dt.date:
        _put_special(parts, v)
        return
    parts.append(b"d" + _I.pack(v.toordinal()))


def _put_datetime(parts: _Parts, v: dt.datetime) -> None:
    if type(v) is not dt.datetime:
        _put_special(parts, v)
        return
    us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    parts.append(b"z" + _ZT.pack(v.toordinal(), us) + (b"\x01" if v.fold else b"\x00"))
    _put_tz(parts, v.tzinfo)


def _put_time(parts: _Parts, v: dt.time, tag: bytes = b"t") -> None:
    us = ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    parts.append(tag + _Q.pack(us))
    _put_tz(parts, v.tzinfo)


def _put_timetz(parts: _Parts, v: dt.time) -> None:
    """A timetz value (wiretypes.TimeTZ, PostgreSQL's ordering): a time's
    body under its own tag, so that it loads as a TimeTZ again."""
    _put_time(parts, v, b"w")


def _put_tz(parts: _Parts, tz: dt.tzinfo | None) -> None:
    if tz is None:
        parts.append(b"N")
    elif type(tz) is dt.timezone:
        off = tz.utcoffset(None)
        parts.append(b"o" + _Q.pack(off.days * 86_400_000_000 + off.seconds * 1_000_000 + off.microseconds))
    else:
        key = getattr(tz, "key", None)
        if not isinstance(key, str):
            raise TypeError(f"cannot store time zone {tz!r}")
        _put_str(parts, key)


def _put_special(parts: _Parts, v: object) -> None:
    name = _INFINITY_NAMES.get(id(v))
    if name is None:
        raise TypeError(f"cannot store a value of type {type(v).__qualname__}")
    b = name.encode()
    parts.append(b"x" + _H.pack(len(b)) + b)


def _put_timedelta(parts: _Parts, v: dt.timedelta) -> None:
    parts.append(b"e" + _TD.pack(v.days, v.seconds, v.microseconds))


def _put_interval(parts: _Parts, v: wiretypes.Interval) -> None:
    parts.append(b"v")
    for x in (v.months, v.days, v.microseconds):
        _put_int(parts, x)


def _put_uuid(parts: _Parts, v: uuid.UUID) -> None:
    parts.append(b"u" + v.bytes)


def _dtype_str(d: np.dtype[Any]) -> bytes:
    s = d.str.encode()
    return bytes((len(s),)) + s


def _put_array(parts: _Parts, a: np.ndarray[Any, Any]) -> None:
    if a.dtype == object:
        parts.append(b"O" + bytes((a.ndim,)) + b"".join(_Q.pack(n) for n in a.shape))
        _put_column(parts, a.ravel().tolist())
        return
    if a.dtype.kind not in _RAW_KINDS:
        raise TypeError(f"cannot store a numpy array of dtype {a.dtype}")
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    parts.append(b"A" + _dtype_str(a.dtype) + bytes((a.ndim,)) + b"".join(_Q.pack(n) for n in a.shape)
                 + _Q.pack(a.nbytes))
    parts.append(a.reshape(-1).view(np.uint8).data if a.nbytes else b"")


def _put_scalar(parts: _Parts, v: np.generic) -> None:
    if v.dtype.kind not in _RAW_KINDS:
        raise TypeError(f"cannot store a numpy scalar of dtype {v.dtype}")
    parts.append(b"n" + _dtype_str(v.dtype) + v.tobytes())


def _put_object(parts: _Parts, rt: RecordType, obj: object) -> None:
    parts.append(rt.head)
    for name, enc in zip(rt.fields, rt.names):
        parts.append(enc)
        conv = rt.convert.get(name)
        _put(parts, getattr(obj, name) if conv is None else conv[0](getattr(obj, name)))


def put_record(parts: _Parts, tag: str, fields: dict[str, Any]) -> None:
    """Append a record of registered type ``tag`` with ``fields`` (all of
    the type's fields, by name)."""
    rt = _BY_TAG[tag]
    parts.append(rt.head)
    for name, enc in zip(rt.fields, rt.names):
        parts.append(enc)
        _put(parts, fields[name])


def put_record_values(parts: _Parts, rt: RecordType, values: Iterable[Any]) -> None:
    """:func:`put_record` with the field values in the order of ``rt.fields``
    (the WAL's hot path: no dict per record)."""
    parts.append(rt.head)
    for enc, v in zip(rt.names, values):
        parts.append(enc)
        _put(parts, v)


def put_list_head(parts: _Parts, n: int) -> None:
    """Start a list of ``n`` values, each appended next (with :func:`dump_parts`
    or :func:`put_record_values`)."""
    parts.append(b"l" + _I.pack(n))


def _put_record(parts: _Parts, r: Record) -> None:
    put_record(parts, r.tag, r.fields)


# A column of values (an object array, a field of group keys): all str or
# all Decimal (NULLs allowed) as one joined blob, else value by value.
_COL_STR, _COL_DEC, _COL_ANY = b"s", b"D", b"g"


def _put_column(parts: _Parts, vals: list[Any]) -> None:
    if len(vals) > 32:
        kinds = set(map(type, vals))
        nones: list[int] = []
        if type(None) in kinds:
            kinds.discard(type(None))
            nones = [i for i, v in enumerate(vals) if v is None]
        if kinds == {str}:
            blob = "\0".join(vals if not nones else ["" if v is None else v for v in vals])
            if blob.count("\0") == len(vals) - 1:
                _put_blob(parts, _COL_STR, blob.encode("utf-8", "surrogatepass"), len(vals), nones)
                return
        elif kinds == {decimal.Decimal}:
            blob = "\0".join(map(str, vals if not nones else [0 if v is None else v for v in vals]))
            _put_blob(parts, _COL_DEC, blob.encode(), len(vals), nones)
            return
    parts.append(_COL_ANY + _Q.pack(len(vals)))
    for v in vals:
        _put(parts, v)


def _put_blob(parts: _Parts, kind: bytes, blob: bytes, n: int, nones: list[int]) -> None:
    parts.append(kind + _Q.pack(n) + _Q.pack(len(blob)))
    parts.append(blob)
    _put_array(parts, np.array(nones, dtype=np.int64))


_ENCODERS: dict[type, Callable[[_Parts, Any], None]] = {
    type(None): _put_none, bool: _put_bool, int: _put_int, float: _put_float, str: _put_str,
    bytes: _put_bytes, bytearray: _put_bytes, decimal.Decimal: _put_decimal,
    list: _put_list, tuple: _put_tuple, dict: _put_dict, set: _put_set, frozenset: _put_frozenset,
    dt.date: _put_date, dt.datetime: _put_datetime, dt.time: _put_time, wiretypes.TimeTZ: _put_timetz,
    dt.timedelta: _put_timedelta,
    type(wiretypes.DATE_POS_INF): _put_special, type(wiretypes.TS_POS_INF): _put_special,
    wiretypes.Interval: _put_interval, uuid.UUID: _put_uuid, np.ndarray: _put_array, Record: _put_record,
}


# ------------------------------------------------------------------ decoding

_Buf = bytes | memoryview


def loads(data: _Buf, pos: int = 0) -> Any:
    """The value encoded at ``pos`` of ``data`` (the whole rest must be it)."""
    v, end = read(data, pos)
    if end != len(data):
        raise FormatError(f"{len(data) - end} bytes of garbage after a value")
    return v


def read(data: _Buf, pos: int) -> tuple[Any, int]:
    """The value at ``pos`` and the offset after it."""
    try:
        return _get(data, pos)
    except (IndexError, struct.error, UnicodeDecodeError, ValueError, KeyError) as e:
        raise FormatError(f"corrupt data at offset {pos}: {e}") from e


def _get(b: _Buf, pos: int) -> tuple[Any, int]:
    tag = b[pos]
    dec = _DECODERS.get(tag)
    if dec is None:
        raise FormatError(f"unknown value tag {bytes((tag,))!r} at offset {pos}")
    return dec(b, pos + 1)


def _get_const(v: Any) -> Callable[[_Buf, int], tuple[Any, int]]:
    return lambda b, p: (v, p)


def _get_int(b: _Buf, p: int) -> tuple[int, int]:
    return _Q.unpack_from(b, p)[0], p + 8


def _get_bigint(b: _Buf, p: int) -> tuple[int, int]:
    n = _I.unpack_from(b, p)[0]
    return int.from_bytes(b[p + 4: p + 4 + n], "little", signed=True), p + 4 + n


def _get_float(b: _Buf, p: int) -> tuple[float, int]:
    return _D.unpack_from(b, p)[0], p + 8


def _get_str(b: _Buf, p: int) -> tuple[str, int]:
    n = _I.unpack_from(b, p)[0]
    p += 4
    return str(b[p: p + n], "utf-8", "surrogatepass"), p + n


def _get_bytes(b: _Buf, p: int) -> tuple[bytes, int]:
    n = _I.unpack_from(b, p)[0]
    p += 4
    return bytes(b[p: p + n]), p + n


def _get_decimal(b: _Buf, p: int) -> tuple[decimal.Decimal, int]:
    s, p = _get_str(b, p)
    return decimal.Decimal(s), p


def _get_seq(make: Callable[[list[Any]], Any]) -> Callable[[_Buf, int], tuple[Any, int]]:
    def get(b: _Buf, p: int) -> tuple[Any, int]:
        n = _I.unpack_from(b, p)[0]
        p += 4
        out = []
        for _ in range(n):
            v, p = _get(b, p)
            out.append(v)
        return make(out), p
    return get


def _get_columnar_tuples(b: _Buf, p: int) -> tuple[list[tuple[Any, ...]], int]:
    n = _Q.unpack_from(b, p)[0]
    arity = _H.unpack_from(b, p + 8)[0]
    p += 10
    cols = []
    for _ in range(arity):
        c, p = _get_column(b, p)
        cols.append(c)
    return (list(zip(*cols)) if arity else [() for _ in range(n)]), p


def _get_dict(b: _Buf, p: int) -> tuple[dict[Any, Any], int]:
    n = _I.unpack_from(b, p)[0]
    p += 4
    out = {}
    for _ in range(n):
        k, p = _get(b, p)
        out[k], p = _get(b, p)
    return out, p


def _get_date(b: _Buf, p: int) -> tuple[dt.date, int]:
    return dt.date.fromordinal(_I.unpack_from(b, p)[0]), p + 4


def _get_datetime(b: _Buf, p: int) -> tuple[dt.datetime, int]:
    day, us = _ZT.unpack_from(b, p)
    fold = b[p + _ZT.size]
    tz, p = _get_tz(b, p + _ZT.size + 1)
    d = dt.date.fromordinal(day)
    s, us = divmod(us, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return dt.datetime(d.year, d.month, d.day, h, m, s, us, tzinfo=tz, fold=fold), p


def _get_time(b: _Buf, p: int) -> tuple[dt.time, int]:
    us = _Q.unpack_from(b, p)[0]
    tz, p = _get_tz(b, p + 8)
    s, us = divmod(us, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return dt.time(h, m, s, us, tzinfo=tz), p


def _get_timetz(b: _Buf, p: int) -> tuple[dt.time, int]:
    t, p = _get_time(b, p)
    return wiretypes.timetz(t, t.utcoffset() or dt.timedelta(0)), p


def _get_tz(b: _Buf, p: int) -> tuple[dt.tzinfo | None, int]:
    tag = b[p]
    if tag == ord("N"):
        return None, p + 1
    if tag == ord("o"):
        us = _Q.unpack_from(b, p + 1)[0]
        return (wiretypes.UTC if us == 0 else dt.timezone(dt.timedelta(microseconds=us))), p + 9
    key, p = _get_str(b, p + 1)
    return wiretypes.zone_of(key), p


def _get_special(b: _Buf, p: int) -> tuple[object, int]:
    n = _H.unpack_from(b, p)[0]
    name = bytes(b[p + 2: p + 2 + n]).decode()
    return _INFINITIES[name], p + 2 + n


def _get_timedelta(b: _Buf, p: int) -> tuple[dt.timedelta, int]:
    d, s, us = _TD.unpack_from(b, p)
    return dt.timedelta(days=d, seconds=s, microseconds=us), p + _TD.size


def _get_interval(b: _Buf, p: int) -> tuple[wiretypes.Interval, int]:
    months, p = _get(b, p)
    days, p = _get(b, p)
    us, p = _get(b, p)
    return wiretypes.Interval(months, days, us), p


def _get_uuid(b: _Buf, p: int) -> tuple[uuid.UUID, int]:
    return uuid.UUID(bytes=bytes(b[p: p + 16])), p + 16


def _get_dtype(b: _Buf, p: int) -> tuple[np.dtype[Any], int]:
    n = b[p]
    d = np.dtype(bytes(b[p + 1: p + 1 + n]).decode())
    if d.kind not in _RAW_KINDS:
        raise FormatError(f"array dtype {d} is not a fixed-width type")
    return d, p + 1 + n


def _get_shape(b: _Buf, p: int) -> tuple[tuple[int, ...], int]:
    ndim = b[p]
    shape = struct.unpack_from(f"<{ndim}q", b, p + 1)
    return shape, p + 1 + 8 * ndim


def _get_array(b: _Buf, p: int) -> tuple[np.ndarray[Any, Any], int]:
    d, p = _get_dtype(b, p)
    shape, p = _get_shape(b, p)
    nbytes = _Q.unpack_from(b, p)[0]
    p += 8
    count = nbytes // d.itemsize if d.itemsize else 0
    # a copy: writable and independent of the record buffer, as an unpickled array was
    a = np.frombuffer(b, dtype=d, count=count, offset=p).copy()
    return a.reshape(shape), p + nbytes


def _get_object_array(b: _Buf, p: int) -> tuple[np.ndarray[Any, Any], int]:
    shape, p = _get_shape(b, p)
    vals, p = _get_column(b, p)
    out = np.empty(len(vals), dtype=object)
    out[:] = vals
    return out.reshape(shape), p


def _get_scalar(b: _Buf, p: int) -> tuple[np.generic, int]:
    d, p = _get_dtype(b, p)
    return np.frombuffer(b, dtype=d, count=1, offset=p)[0], p + d.itemsize


def _get_column(b: _Buf, p: int) -> tuple[list[Any], int]:
    kind = b[p: p + 1]
    n = _Q.unpack_from(b, p + 1)[0]
    p += 9
    if kind == _COL_ANY:
        out = []
        for _ in range(n):
            v, p = _get(b, p)
            out.append(v)
        return out, p
    size = _Q.unpack_from(b, p)[0]
    p += 8
    text = str(b[p: p + size], "utf-8", "surrogatepass")
    p += size
    nones, p = _get(b, p)
    vals: list[Any] = text.split("\0") if n else []
    if kind == _COL_DEC:
        vals = list(map(decimal.Decimal, vals))
    elif kind != _COL_STR:
        raise FormatError(f"unknown column kind {kind!r}")
    for i in nones.tolist():
        vals[i] = None
    return vals, p


def _get_record(b: _Buf, p: int) -> tuple[Any, int]:
    n = _H.unpack_from(b, p)[0]
    tag = bytes(b[p + 2: p + 2 + n]).decode()
    version, nfields = struct.unpack_from("<HH", b, p + 2 + n)
    p += 6 + n
    rt = _BY_TAG.get(tag)
    if rt is None:
        raise FormatError(f"unknown record type {tag!r}")
    if version > rt.version:
        raise FormatError(f"record {tag!r} of version {version} is newer than this server's ({rt.version})")
    fields: dict[str, Any] = {}
    for _ in range(nfields):
        name, p = _get_str(b, p + 1)      # written by _put_str, tag included
        fields[name], p = _get(b, p)
    unknown = set(fields) - set(rt.fields)
    if unknown:
        raise FormatError(f"record {tag!r} has unknown fields {sorted(unknown)}")
    if rt.cls is None:
        return Record(tag, fields), p
    for name, (_out, back) in rt.convert.items():
        if name in fields:
            fields[name] = back(fields[name])
    return rt.cls(**fields), p


_DECODERS: dict[int, Callable[[_Buf, int], tuple[Any, int]]] = {ord(k): f for k, f in {
    "N": _get_const(None), "T": _get_const(True), "F": _get_const(False), "i": _get_int, "I": _get_bigint,
    "f": _get_float, "s": _get_str, "b": _get_bytes, "D": _get_decimal,
    "l": _get_seq(list), "p": _get_seq(tuple), "S": _get_seq(set), "Q": _get_seq(frozenset),
    "K": _get_columnar_tuples, "m": _get_dict, "d": _get_date, "z": _get_datetime, "t": _get_time, "w": _get_timetz,
    "x": _get_special, "e": _get_timedelta, "v": _get_interval, "u": _get_uuid,
    "A": _get_array, "O": _get_object_array, "n": _get_scalar, "R": _get_record,
}.items()}


def add_encoder(cls: type, encode: Callable[[_Parts, Any], None]) -> None:
    """Encode instances of exactly ``cls`` with ``encode`` (which writes
    values of the kinds above: decoding needs no counterpart)."""
    _ENCODERS[cls] = encode
