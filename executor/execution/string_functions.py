"""String, binary-string and formatting functions the catalog lacked:
format, encode/decode, the SHA-2 digests, width_bucket, array_remove,
jsonb_build_object; pg_notify (queued on the transaction, see catalog/storage/notify.py).

Why a module of its own: format() interprets its own template language
(``%[n$][-][width]{s,I,L}``) over arguments of any type, printed by their
types' output functions; encode/decode speak PostgreSQL's hex, base64 (76
characters a line) and escape formats.
"""
from __future__ import annotations

import base64
import decimal
import hashlib
import math
import re

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.types import decode_text

from . import posix_regex
from .json_values import key_text
from .functions import _to_json, output_texts, quote_ident, quote_literal, register, scalar

_NULL_VALUE = "22004"
_INVALID_ARGUMENT_FOR_WIDTH_BUCKET = "2201G"


_SPEC = re.compile(r"%(?:(\d+)\$)?(-)?(\d+)?([sIL%])")


def _format_one(template: str, args: list) -> str:
    out, pos, nxt = [], 0, 0
    for m in _SPEC.finditer(template):
        out.append(template[pos:m.start()])
        pos = m.end()
        argno, left, width, kind = m.groups()
        if kind == "%":
            out.append("%")
            continue
        k = int(argno) - 1 if argno else nxt
        if argno and int(argno) == 0:
            raise PgError(INVALID_PARAMETER_VALUE, "format specifies argument 0, but arguments are numbered from 1")
        if k >= len(args):
            raise PgError(INVALID_PARAMETER_VALUE, "too few arguments for format()")
        nxt = k + 1
        v = args[k]
        if kind == "I":
            if v is None:
                raise PgError(_NULL_VALUE, "null values cannot be formatted as an SQL identifier")
            text = quote_ident(v)
        elif kind == "L":
            text = "NULL" if v is None else quote_literal(v)
        else:
            text = "" if v is None else v
        w = int(width) if width else 0
        out.append(text.ljust(w) if left else text.rjust(w))
    if "%" in template[pos:]:
        raise PgError(INVALID_PARAMETER_VALUE, "unterminated format() type specifier",
                      hint='For a single "%" use "%%".')
    out.append(template[pos:])
    return "".join(out)


@register("format", sigs="text -> text | text, variadic any -> text", strict=False)
def _format(cols, n, ctx):
    texts = [output_texts(c, ctx) for c in cols]
    out = [None if texts[0][i] is None else _format_one(texts[0][i], [t[i] for t in texts[1:]]) for i in range(n)]
    return Col.from_pylist(out, type_oids.TEXT)


def _encode(data: bytes, fmt: str) -> str:
    f = fmt.lower()
    if f == "hex":
        return data.hex()
    if f == "base64":
        text = base64.b64encode(data).decode()
        return "\n".join(text[i:i + 76] for i in range(0, len(text), 76))
    if f == "escape":  # NUL and high-bit bytes as octal, a backslash doubled
        return "".join("\\\\" if b == 92 else (f"\\{b:03o}" if b == 0 or b >= 128 else chr(b)) for b in data)
    raise PgError(INVALID_PARAMETER_VALUE, f'unrecognized encoding: "{fmt}"')


def _decode(text: str, fmt: str) -> bytes:
    f = fmt.lower()
    if f == "hex":  # bytea's own hex input
        return decode_text(type_oids.BYTEA, "\\x" + text)
    if f == "base64":
        try:
            return base64.b64decode("".join(text.split()), validate=True)
        except ValueError:
            raise PgError(INVALID_PARAMETER_VALUE, "invalid base64 end sequence",
                          hint="Input data is missing padding, is truncated, or is otherwise corrupted.") from None
    if f == "escape":
        return re.sub(rb"\\\\|\\([0-7]{3})", lambda m: b"\\" if m.group(1) is None else bytes([int(m.group(1), 8)]),
                      text.encode())
    raise PgError(INVALID_PARAMETER_VALUE, f'unrecognized encoding: "{fmt}"')


scalar("encode", sigs="bytea, text -> text")(_encode)
scalar("decode", sigs="text, text -> bytea")(_decode)
for _bits in (224, 256, 384, 512):
    scalar(f"sha{_bits}", sigs="bytea -> bytea")(lambda b, _n=f"sha{_bits}": hashlib.new(_n, b).digest())


def _width_bucket(op, low, high, count):
    if count <= 0:
        raise PgError(_INVALID_ARGUMENT_FOR_WIDTH_BUCKET, "count must be greater than zero")
    if low == high:
        raise PgError(_INVALID_ARGUMENT_FOR_WIDTH_BUCKET, "lower bound cannot equal upper bound")
    if any(isinstance(v, float) and math.isnan(v) for v in (op, low, high)) or \
            any(isinstance(v, decimal.Decimal) and v.is_nan() for v in (op, low, high)):
        raise PgError(_INVALID_ARGUMENT_FOR_WIDTH_BUCKET, "operand, lower bound, and upper bound cannot be NaN")
    if any(isinstance(v, float) and math.isinf(v) for v in (low, high)) or \
            any(isinstance(v, decimal.Decimal) and v.is_infinite() for v in (low, high)):
        raise PgError(_INVALID_ARGUMENT_FOR_WIDTH_BUCKET, "lower and upper bounds must be finite")
    if low < high:
        if op < low:
            return 0
        return count + 1 if op >= high else int((op - low) * count / (high - low)) + 1
    if op > low:
        return 0
    return count + 1 if op <= high else int((low - op) * count / (low - high)) + 1


scalar("width_bucket", sigs="float8, float8, float8, int4 -> int4 | numeric, numeric, numeric, int4 -> int4")(
    _width_bucket)


def object_texts(cols: list[Col], n: int, fname: str, sep: str, null_key: str, null_hint: str | None = None,
                 tz: str = "UTC") -> list[str]:
    """json[b]_build_object's rows as JSON object texts: alternating keys
    and values, ``sep`` between a key and its value (json keeps " : "); a
    key is a scalar's JSON text as a string (an array, a row or JSON there
    is 22023, after the NULL check)."""
    if len(cols) % 2:
        raise PgError(INVALID_PARAMETER_VALUE, "argument list must have even number of elements",
                      hint=f"The arguments of {fname}() must consist of alternating keys and values.")
    lists = [c.to_pylist() for c in cols]
    out = []
    for i in range(n):
        pairs = []
        for k in range(0, len(lists), 2):
            key, val = lists[k][i], lists[k + 1][i]
            if key is None:
                raise PgError(INVALID_PARAMETER_VALUE, null_key.format(k + 1), hint=null_hint)
            embed = cols[k + 1].oid in (type_oids.JSON, type_oids.JSONB) and val is not None
            pairs.append(key_text(cols[k].oid, key, tz) + sep + (val if embed else "null" if val is None else _to_json(val)))
        out.append("{" + ", ".join(pairs) + "}")
    return out


@register("jsonb_build_object", sigs=" -> jsonb | variadic any -> jsonb", strict=False)
def _jsonb_build_object(cols, n, ctx):
    texts = object_texts(cols, n, "jsonb_build_object", ": ", "argument {}: key must not be null",
                         tz=ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
    return Col.from_pylist([decode_text(type_oids.JSONB, t) for t in texts], type_oids.JSONB)  # jsonb's key order


def _pg_notify(cols, n, ctx):
    """NOTIFY as a function: queued on the transaction, delivered when it commits."""
    queue = ctx.txn.async_queue(ctx.session.pid, ctx.engine_session.notify_sink)
    channels, payloads = cols[0].to_pylist(), cols[1].to_pylist()
    for i in range(n):
        queue.notify(channels[i], payloads[i])
    return Col.from_pylist([""] * n, type_oids.VOID)     # void is not NULL: PostgreSQL prints it empty


register("pg_notify", sigs="text, text -> void", strict=False, volatile=True)(_pg_notify)


# ------------------------------------------------------------ POSIX regular expressions (posix_regex)
scalar("regexp_replace", sigs="text, text, text -> text | text, text, text, text -> text")(posix_regex.regexp_replace)
scalar("regexp_match", sigs="text, text -> text[] | text, text, text -> text[]")(posix_regex.regexp_match)
scalar("regexp_split_to_array", sigs="text, text -> text[] | text, text, text -> text[]")(posix_regex.regexp_split)
scalar("regexp_count", sigs="text, text -> int4 | text, text, int4 -> int4 | text, text, int4, text -> int4")(
    posix_regex.regexp_count)
scalar("regexp_like", sigs="text, text -> bool | text, text, text -> bool")(posix_regex.regexp_like)
scalar("regexp_substr", sigs="text, text -> text | text, text, int4 -> text | text, text, int4, int4 -> text"
                             " | text, text, int4, int4, text -> text | text, text, int4, int4, text, int4 -> text")(
    posix_regex.regexp_substr)
scalar("regexp_instr", sigs="text, text -> int4 | text, text, int4 -> int4 | text, text, int4, int4 -> int4"
                            " | text, text, int4, int4, int4 -> int4 | text, text, int4, int4, int4, text -> int4"
                            " | text, text, int4, int4, int4, text, int4 -> int4")(posix_regex.regexp_instr)
