"""Binary string functions (bytea) and overlay, as PostgreSQL 15 defines them.

Why a module of its own: bytea's byte and bit accessors, the encoding
conversions and overlay's text/bytea pair share their range checks and
PostgreSQL's error wording; the general registry module is long already.
"""
from __future__ import annotations

from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

from .functions import scalar

ARRAY_SUBSCRIPT_ERROR = "2202E"
SUBSTRING_ERROR = "22011"

#: PostgreSQL encoding names, as clean_encoding_name leaves them (lower case,
#: letters and digits only) -> Python codecs
ENCODINGS = {"utf8": "utf-8", "unicode": "utf-8", "sqlascii": "ascii", "latin1": "latin-1", "latin2": "iso8859-2",
             "latin9": "iso8859-15", "win1252": "cp1252", "win1251": "cp1251", "koi8r": "koi8-r", "eucjp": "euc-jp",
             "sjis": "shift-jis", "gbk": "gbk"}


def _overlay(s, r, start, count=None):
    """overlay(s placing r from start [for count]): s's first start-1
    characters, r, then s from start+count (count defaults to r's length)."""
    if count is None:
        count = len(r)
    if start - 1 < 0:
        raise PgError(SUBSTRING_ERROR, "negative substring length not allowed")
    tail = max(start + count, 1)
    return s[:start - 1] + r + s[tail - 1:]


scalar("overlay", sigs="text, text, int4 -> text | text, text, int4, int4 -> text"
                       " | bytea, bytea, int4 -> bytea | bytea, bytea, int4, int4 -> bytea")(_overlay)
scalar("byteacat", sigs="bytea, bytea -> bytea")(lambda a, b: bytes(a) + bytes(b))


def _index(data: bytes, n: int, limit: int) -> None:
    if not 0 <= n < limit:
        raise PgError(ARRAY_SUBSCRIPT_ERROR, f"index {n} out of valid range, 0..{limit - 1}")


def _get_byte(data, n):
    _index(data, n, len(data))
    return data[n]


def _set_byte(data, n, value):
    _index(data, n, len(data))
    out = bytearray(data)
    out[n] = value & 0xFF
    return bytes(out)


def _get_bit(data, n):
    _index(data, n, len(data) * 8)
    return (data[n // 8] >> (n % 8)) & 1


def _set_bit(data, n, value):
    _index(data, n, len(data) * 8)
    if value not in (0, 1):
        raise PgError(INVALID_PARAMETER_VALUE, "new bit must be 0 or 1")
    out = bytearray(data)
    out[n // 8] = (out[n // 8] & ~(1 << (n % 8))) | (value << (n % 8))
    return bytes(out)


scalar("get_byte", sigs="bytea, int4 -> int4")(_get_byte)
scalar("set_byte", sigs="bytea, int4, int4 -> bytea")(_set_byte)
scalar("get_bit", sigs="bytea, int8 -> int4")(_get_bit)
scalar("set_bit", sigs="bytea, int8, int4 -> bytea")(_set_bit)
scalar("bit_count", sigs="bytea -> int8")(lambda data: sum(bin(b).count("1") for b in data))


def _codec(name: str, which: str) -> str:
    codec = ENCODINGS.get("".join(ch for ch in name.lower() if ch.isalnum()))
    if codec is None:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid {which} encoding name "{name}"')
    return codec


def _convert_to(s: str, enc: str) -> bytes:
    codec = _codec(enc, "destination")
    try:
        return s.encode(codec)
    except UnicodeEncodeError as e:
        ch = s[e.start]
        raise PgError("22P05", f'character with byte sequence {" ".join(f"0x{b:02x}" for b in ch.encode())} '
                      f'in encoding "UTF8" has no equivalent in encoding "{enc.upper()}"') from None


def _convert_from(data: bytes, enc: str) -> str:
    codec = _codec(enc, "source")
    try:
        return bytes(data).decode(codec)
    except UnicodeDecodeError as e:
        bad = bytes(data)[e.start:e.start + 1]
        raise PgError("22021", f'invalid byte sequence for encoding "{enc.upper()}": 0x{bad.hex()}') from None


scalar("convert_to", sigs="text, name -> bytea")(_convert_to)
scalar("convert_from", sigs="bytea, name -> text")(_convert_from)
