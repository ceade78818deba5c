"""COPY data formats (text, CSV, binary), columnar and sans-IO.

Ingest speed is a product requirement, so ``decode_copy`` hands whole chunks
to pyarrow's multithreaded CSV reader whenever the data provably means the
same thing to pyarrow as to PostgreSQL; anything doubtful (backslash escapes,
odd quoting, values pyarrow rejects) goes through a pure-Python parser that
follows PostgreSQL's rules and produces its exact error messages.
"""
from __future__ import annotations

import io
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Sequence

import numpy as np

from . import copy_temporal
from . import types as wiretypes
from .errors import (
    BAD_COPY_FILE_FORMAT,
    FEATURE_NOT_SUPPORTED,
    INVALID_BINARY_REPRESENTATION,
    INVALID_PARAMETER_VALUE,
    SYNTAX_ERROR,
    PgError,
)
from decimal import Decimal

BINARY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"

#: One decoded column: its values and its null mask (True = NULL), or None when none is NULL.
DecodedColumn = tuple[np.ndarray, np.ndarray | None]

# --------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------


@dataclass
class CopyOptions:
    """Resolved COPY options; construct through :func:`parse_copy_options`."""

    format: str = "text"
    delimiter: str = ""
    null: str | None = None
    header: bool = False
    header_match: bool = False
    quote: str = '"'
    escape: str = ""
    force_quote: list[str] | bool = field(default_factory=list)
    force_not_null: list[str] | Literal[True] = field(default_factory=list)   # True: every column (``*``)
    force_null: list[str] | Literal[True] = field(default_factory=list)
    encoding: str | None = None
    freeze: bool = False

    def __post_init__(self) -> None:
        if not self.delimiter:
            self.delimiter = "," if self.format == "csv" else "\t"
        if self.null is None:
            self.null = "" if self.format == "csv" else "\\N"
        if not self.escape:
            self.escape = self.quote


def _as_bool(name: str, v: Any, allow_match: bool = False) -> bool | str:
    if v is None or v is True or v is False:
        return True if v is None else v
    s = str(v).strip().lower()
    if s in ("true", "on", "1", "t", "yes", "y"):
        return True
    if s in ("false", "off", "0", "f", "no", "n"):
        return False
    if allow_match and s == "match":
        return "match"
    extra = ' or "match"' if allow_match else ""
    raise PgError(SYNTAX_ERROR if not allow_match else INVALID_PARAMETER_VALUE,
                  f"{name} requires a Boolean value{extra}")


#: A compiled reader of plain text/CSV (see :func:`decode_copy`): the columns, or None to decline.
NativeDecoder = Callable[[bytes, CopyOptions, Sequence[int]], list[DecodedColumn] | None]


def _as_list(v: Any) -> list[str] | Literal[True]:
    if v is True or v == "*":
        return True
    if isinstance(v, str):
        return [v]
    return list(v or [])


def parse_copy_options(opts: dict[str, Any], *, is_from: bool = True) -> CopyOptions:
    """Validate a COPY option list like PostgreSQL's ProcessCopyOptions."""
    o: dict[str, Any] = {}
    for k, v in opts.items():
        o[k.lower()] = v
    known = {"format", "delimiter", "null", "header", "quote", "escape", "force_quote",
             "force_not_null", "force_null", "encoding", "freeze"}
    for k in o:
        if k not in known:
            raise PgError(SYNTAX_ERROR, f'option "{k}" not recognized')
    fmt = str(o.get("format") or "text").lower()
    if fmt not in ("text", "csv", "binary"):
        raise PgError(INVALID_PARAMETER_VALUE, f'COPY format "{o.get("format")}" not recognized')
    csv, binary = fmt == "csv", fmt == "binary"
    header = _as_bool("header", o.get("header", False), allow_match=True)
    if binary:
        for key, word in (("delimiter", "DELIMITER"), ("null", "NULL")):
            if key in o:
                raise PgError(SYNTAX_ERROR, f"cannot specify {word} in BINARY mode")
        if header:
            raise PgError(FEATURE_NOT_SUPPORTED, "cannot specify HEADER in BINARY mode")
    if header == "match" and not is_from:
        raise PgError(FEATURE_NOT_SUPPORTED, "cannot use \"match\" with HEADER in COPY TO")
    delim = o.get("delimiter")
    if delim is not None:
        if len(str(delim).encode()) != 1:
            raise PgError(FEATURE_NOT_SUPPORTED, "COPY delimiter must be a single one-byte character")
        if delim in "\r\n":
            raise PgError(INVALID_PARAMETER_VALUE, "COPY delimiter cannot be newline or carriage return")
        if not csv and delim in "\\.abcdefghijklmnopqrstuvwxyz0123456789":
            raise PgError(INVALID_PARAMETER_VALUE, f'COPY delimiter cannot be "{delim}"')
    null = o.get("null")
    if null is not None and ("\r" in null or "\n" in null):
        raise PgError(INVALID_PARAMETER_VALUE, "COPY null representation cannot use newline or carriage return")
    for key, word in (("quote", "quote"), ("escape", "escape")):
        if key in o and not csv:
            raise PgError(FEATURE_NOT_SUPPORTED, f"COPY {word} available only in CSV mode")
        if key in o and len(str(o[key]).encode()) != 1:
            raise PgError(FEATURE_NOT_SUPPORTED, f"COPY {word} must be a single one-byte character")
    for key, word in (("force_quote", "force quote"), ("force_not_null", "force not null"),
                      ("force_null", "force null")):
        if key in o and not csv:
            raise PgError(FEATURE_NOT_SUPPORTED, f"COPY {word} available only in CSV mode")
    if "force_quote" in o and is_from:
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY force quote only available using COPY TO")
    for key, word in (("force_not_null", "force not null"), ("force_null", "force null")):
        if key in o and not is_from:
            raise PgError(FEATURE_NOT_SUPPORTED, f"COPY {word} only available using COPY FROM")
    res = CopyOptions(
        format=fmt, delimiter=delim or "", null=null, header=bool(header),
        header_match=header == "match", quote=o.get("quote") or '"', escape=o.get("escape") or "",
        force_quote=_as_list(o.get("force_quote")), force_not_null=_as_list(o.get("force_not_null")),
        force_null=_as_list(o.get("force_null")), encoding=o.get("encoding"),
        freeze=bool(_as_bool("freeze", o.get("freeze", False))),
    )
    _refuse_unimplemented(res)
    if csv and res.delimiter == res.quote:
        raise PgError(INVALID_PARAMETER_VALUE, "COPY delimiter and quote must be different")
    if not binary and res.delimiter in (res.null or ""):
        raise PgError(INVALID_PARAMETER_VALUE, "COPY delimiter must not appear in the NULL specification")
    if csv and res.quote in (res.null or ""):
        raise PgError(INVALID_PARAMETER_VALUE, "CSV quote character must not appear in the NULL specification")
    return res


_UTF8_NAMES = {"utf8", "utf-8", "unicode"}


def _refuse_unimplemented(res: CopyOptions) -> None:
    """Options PostgreSQL has whose effect COPY here does not have: refused,
    never accepted and ignored."""
    if res.encoding is not None and str(res.encoding).lower().replace("_", "") not in _UTF8_NAMES:
        raise PgError(FEATURE_NOT_SUPPORTED, f'COPY ENCODING "{res.encoding}" is not supported',
                      hint="COPY data is read and written as UTF8: convert it on the client, or omit ENCODING.")
    if res.freeze:
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY FREEZE is not supported",
                      hint="Omit FREEZE: the copied rows are visible to every transaction once the COPY commits.")


# --------------------------------------------------------------------------
# Chunking helpers
# --------------------------------------------------------------------------


def split_complete(buffer: bytes, options: CopyOptions) -> tuple[bytes, bytes]:
    """Split a buffer into whole lines (rows) and the unfinished tail."""
    i = complete_length(buffer, options)
    return buffer[:i], buffer[i:]


def complete_length(buffer: bytes | bytearray, options: CopyOptions) -> int:
    """The length of the whole lines (rows) at the start of ``buffer``.

    For CSV a newline inside a quoted field does not end a row.  With the
    default escape (= quote) doubled quotes keep the parity, so counting
    quote characters is exact and vectorisable.
    """
    if options.format == "binary":
        return len(buffer)
    q = options.quote.encode()
    if options.format != "csv" or q not in buffer:
        return buffer.rfind(b"\n") + 1
    if options.escape == options.quote:
        arr = np.frombuffer(buffer, dtype=np.uint8)
        nl = np.flatnonzero(arr == 10)
        if len(nl) == 0:
            return 0
        parity = np.cumsum(arr == q[0], dtype=np.int64)[nl] & 1
        del arr             # a bytearray cannot be resized while viewed
        ok = nl[parity == 0]
        return int(ok[-1]) + 1 if len(ok) else 0
    last = -1
    inq = False
    esc = options.escape.encode()[0]
    qc = q[0]
    i, n = 0, len(buffer)
    while i < n:
        c = buffer[i]
        if inq and c == esc and i + 1 < n and buffer[i + 1] in (qc, esc):
            i += 2
            continue
        if c == qc:
            inq = not inq
        elif c == 10 and not inq:
            last = i
        i += 1
    return last + 1


def strip_end_marker(data: bytes) -> bytes:
    """``data`` up to a ``\\.`` line (the end-of-data marker; what follows it is ignored)."""
    return _strip_end_marker(data)


def _strip_end_marker(data: bytes) -> bytes:
    """Cut the data at a ``\\.`` line (end-of-data marker)."""
    if data.startswith(b"\\.") and data[2:3] in (b"", b"\n", b"\r"):
        return b""
    # memchr for the rare backslash, not a search for every newline (or '.')
    i = data.find(b"\\", 1)
    while i >= 0:
        if data[i - 1] == 10 and data[i + 1: i + 2] == b"." and data[i + 2: i + 3] in (b"", b"\n", b"\r"):
            return data[:i]
        i = data.find(b"\\", i + 1)
    return data


def _copy_error(code: str, msg: str, line: int, column: str | None = None,
                value: str | None = None, cause: PgError | None = None, line_text: str | None = None) -> PgError:
    """An error of one COPY line; the sink turns ``extra`` into PostgreSQL's
    CONTEXT (``COPY t, line N, column c: "v"`` or ``COPY t, line N: "text"``)."""
    err = PgError(code, msg, detail=cause.detail if cause else None, hint=cause.hint if cause else None)
    err.extra["line"] = line
    if column is not None:
        err.extra["column"] = column
    if value is not None:
        err.extra["value"] = printout(value)
    if line_text is not None:
        err.extra["line_text"] = printout(line_text)
    return err


#: PostgreSQL's MAX_COPY_DATA_DISPLAY: a value or line in an error's CONTEXT is cut to this many bytes
MAX_COPY_DATA_DISPLAY = 100


def printout(text: str) -> str:
    """``limit_printout_length``: at most 100 bytes (whole characters), then "..."."""
    raw = text.encode("utf-8", "surrogateescape")
    if len(raw) <= MAX_COPY_DATA_DISPLAY:
        return text
    return raw[:MAX_COPY_DATA_DISPLAY].decode("utf-8", "ignore") + "..."


# --------------------------------------------------------------------------
# Pure-Python row parsing (exact PostgreSQL semantics)
# --------------------------------------------------------------------------

_TEXT_ESCAPES = {b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"v": b"\v"}
_TEXT_ESC_RE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|(.))", re.S)


def _text_unescape(s: str) -> str:
    """CopyReadAttributesText's de-escaping: octal and hex escapes are
    bytes, so the field is checked as UTF-8 after them (22021 otherwise)."""
    if "\\" not in s:
        return s

    def rep(m: re.Match[bytes]) -> bytes:
        if m.group(1):
            return bytes([int(m.group(1), 8) & 0xFF])
        if m.group(2):
            return bytes([int(m.group(2), 16)])
        c: bytes = m.group(3)
        return _TEXT_ESCAPES.get(c, c)

    raw = _TEXT_ESC_RE.sub(rep, s.encode("utf-8"))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as ex:
        raise PgError("22021", _bad_utf8(raw, ex.start)) from None


def _bad_utf8(raw: bytes, at: int) -> str:
    """report_invalid_encoding's message: the bytes of the bad character."""
    lead = raw[at]
    size = 2 if lead & 0xE0 == 0xC0 else 3 if lead & 0xF0 == 0xE0 else 4 if lead & 0xF8 == 0xF0 else 1
    shown = " ".join(f"0x{b:02x}" for b in raw[at: at + size])
    return f'invalid byte sequence for encoding "UTF8": {shown}'


def _iter_text_rows(text: str, options: CopyOptions, first_line: int) -> Iterable[tuple[list[str | None], str]]:
    """Yield (fields, line text) per line, as CopyReadLineText and
    CopyReadAttributesText split and de-escape them."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    d, null = options.delimiter, options.null
    for k, line in enumerate(lines):
        if line.endswith("\r"):
            line = line[:-1]
        if "\\" not in line:
            yield [None if f == null else f for f in line.split(d)], line
            continue
        fields = _split_escaped(line, d, first_line + k)
        try:
            yield [None if f == null else _text_unescape(f) for f in fields], line
        except PgError as ex:
            raise _copy_error(ex.sqlstate, ex.message, first_line + k, line_text=line) from None


def _split_escaped(line: str, d: str, lineno: int) -> list[str]:
    """Split a text-format line on delimiters that no backslash escapes; a
    backslash-period anywhere but alone at the end is a corrupt end marker."""
    fields: list[str] = []
    cur: list[str] = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\" and i + 1 < n:
            if line[i + 1] == "." and i + 2 < n:
                raise _copy_error(BAD_COPY_FILE_FORMAT, "end-of-copy marker corrupt", lineno)
            cur.append(line[i: i + 2])
            i += 2
        elif c == d:
            fields.append("".join(cur))
            cur = []
            i += 1
        else:
            cur.append(c)
            i += 1
    fields.append("".join(cur))
    return fields


def _iter_csv_rows(text: str, options: CopyOptions,
                   first_line: int) -> Iterable[tuple[list[tuple[str, bool]], int, str]]:
    """Yield (row, line, row text) with fields as (value, was_quoted), like CopyReadAttributesCSV.

    ``line`` is the physical line on which the row ends: PostgreSQL counts
    newlines inside quoted fields when it reports COPY line numbers (after
    the first line end).
    """
    d, q, e = options.delimiter, options.quote, options.escape
    i, n = 0, len(text)
    line = first_line
    # CopyReadLineText counts a newline inside quotes as a line only once the
    # first line end has set the file's newline style (a CR for CR and CRLF)
    counted = "" if first_line == 1 else ("\r" if "\r" in text else "\n")
    while i < n:
        row: list[tuple[str, bool]] = []
        buf: list[str] = []
        quoted = False
        inq = False
        start, end = i, n
        while True:
            if i >= n:
                if inq:     # PostgreSQL shows the whole rest of the data
                    raise _copy_error(BAD_COPY_FILE_FORMAT, "unterminated CSV quoted field", line,
                                      line_text=text[start:])
                row.append(("".join(buf), quoted))
                break
            c = text[i]
            if inq:
                if c == e and i + 1 < n and text[i + 1] in (q, e) and (e != q or text[i + 1] == q):
                    buf.append(text[i + 1])
                    i += 2
                    continue
                if c == q:
                    inq = False
                else:
                    if c == counted:
                        line += 1
                    buf.append(c)
                i += 1
                continue
            if c == q:
                inq = quoted = True
                i += 1
            elif c == d:
                row.append(("".join(buf), quoted))
                buf, quoted = [], False
                i += 1
            elif c == "\n" or c == "\r":
                row.append(("".join(buf), quoted))
                end = i
                if counted == "":
                    counted = "\n" if c == "\n" else "\r"
                i += 2 if (c == "\r" and text[i + 1: i + 2] == "\n") else 1
                break
            else:
                buf.append(c)
                i += 1
        yield row, line, text[start:end]
        line += 1


def _python_rows(data: bytes, options: CopyOptions, first_line: int,
                 names: Sequence[str]) -> tuple[list[list[str | None]], list[int]]:
    """Parse rows exactly as PostgreSQL does; returns rows and their line numbers."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as ex:
        line = first_line + data[: ex.start].count(b"\n")
        raise _copy_error("22021", f'invalid byte sequence for encoding "UTF8": 0x{data[ex.start]:02x}', line) from None
    ncol = len(names)
    rows: list[list[str | None]] = []
    lines: list[int] = []
    if options.format == "csv":
        fnn = set(names) if options.force_not_null is True else set(options.force_not_null)
        fn = set(names) if options.force_null is True else set(options.force_null)
        for raw, ln, line_text in _iter_csv_rows(text, options, first_line):
            row: list[str | None] = []
            for j, (v, quoted) in enumerate(raw):
                nm = names[j] if j < ncol else ""
                is_null = v == options.null and (not quoted or nm in fn)
                if is_null and not quoted and nm in fnn:
                    is_null = False
                row.append(None if is_null else v)
            _check_width(row, names, ln, line_text)
            rows.append(row)
            lines.append(ln)
    else:
        for k, (row, line_text) in enumerate(_iter_text_rows(text, options, first_line)):
            _check_width(row, names, first_line + k, line_text)
            rows.append(row)
            lines.append(first_line + k)
    return rows, lines


def _check_width(row: list[str | None], names: Sequence[str], line: int, line_text: str) -> None:
    if len(row) > len(names):
        raise _copy_error(BAD_COPY_FILE_FORMAT, "extra data after last expected column", line, line_text=line_text)
    if len(row) < len(names):
        if len(names) == 0:
            return
        raise _copy_error(BAD_COPY_FILE_FORMAT, f'missing data for column "{names[len(row)]}"', line,
                          line_text=line_text)


def _rows_to_columns(rows: list[list[str | None]], oids: Sequence[int], names: Sequence[str],
                     lines: list[int], tz: str) -> list[tuple[np.ndarray, np.ndarray | None]]:
    out = []
    for j, oid in enumerate(oids):
        vals: list[Any] = []
        for k, row in enumerate(rows):
            s = row[j]
            if s is None:
                vals.append(None)
                continue
            try:
                vals.append(wiretypes.decode_text(oid, s, tz=tz))
            except PgError as ex:
                raise _copy_error(ex.sqlstate, ex.message, lines[k], names[j], s, ex) from None
        out.append(wiretypes.pylist_to_column(oid, vals))
    return out


# --------------------------------------------------------------------------
# pyarrow fast path
# --------------------------------------------------------------------------

_PA_STRINGY = {wiretypes.TEXT, wiretypes.VARCHAR, wiretypes.BPCHAR, wiretypes.NAME, wiretypes.UNKNOWN}
_BOOL_TRUE = ["t", "true", "y", "yes", "on", "1", "T", "TRUE", "True", "Y", "YES", "Yes", "ON", "On"]
_BOOL_FALSE = ["f", "false", "n", "no", "off", "0", "F", "FALSE", "False", "N", "NO", "No", "OFF", "Off"]


class _Fallback(Exception):
    """The fast path cannot prove it matches PostgreSQL for this chunk."""


def preload() -> None:
    """Import the CSV decoder's pyarrow modules ahead of the first COPY, which
    would otherwise pay a second or more of imports while the client waits.
    pyarrow is optional at run time: without it COPY decodes in Python."""
    try:
        import pyarrow.compute  # noqa: F401  (optional dependency)
        import pyarrow.csv  # noqa: F401  (optional dependency)
    except ImportError:
        pass


def _pa_type(oid: int, has_hex: bool) -> Any:
    import pyarrow as pa  # optional dependency

    if oid in (wiretypes.INT2, wiretypes.INT4, wiretypes.INT8) and not has_hex:
        return {wiretypes.INT2: pa.int16(), wiretypes.INT4: pa.int32(), wiretypes.INT8: pa.int64()}[oid]
    if oid == wiretypes.BOOL:
        return pa.bool_()
    return pa.string()       # dates and timestamps too: copy_temporal reads them with PostgreSQL's rules


_FLOATS = (wiretypes.FLOAT4, wiretypes.FLOAT8)
_LONGEST_PLAIN_LINE = 300     # shorter lines cannot hold a float literal that over- or underflows


def _floats_are_plain(data: bytes) -> bool:
    """True when no float literal in ``data`` can over- or underflow: no
    exponent (a digit or '.' before an 'e'/'E') and no line long enough for
    300 digits.  Then pyarrow's float parser (correctly rounded, like strtod)
    decides exactly what PostgreSQL's float8in would, except for spellings it
    rejects (whitespace, ...) -- those retry on the text path -- and inf/NaN
    text, which the caller sends to the text path too."""
    buf = np.frombuffer(data, np.uint8)
    e = np.flatnonzero((buf | 0x20) == 0x65)
    e = e[e > 0]
    if len(e):
        prev = buf[e - 1]
        if (((prev >= 0x30) & (prev <= 0x39)) | (prev == 0x2E)).any():
            return False
    ends = np.flatnonzero(buf == 10)
    if not len(ends):
        return len(buf) < _LONGEST_PLAIN_LINE
    return int(max(ends[0], np.diff(ends).max(initial=0), len(buf) - ends[-1])) < _LONGEST_PLAIN_LINE


class _FloatsNotPlain(Exception):
    """Floats read as doubles met inf/NaN text or a spelling pyarrow rejects."""


def _pyarrow_decode(data: bytes, options: CopyOptions, oids: Sequence[int], names: Sequence[str],
                    first_line: int, tz: str) -> list[tuple[np.ndarray, np.ndarray | None]]:
    if any(o in _FLOATS for o in oids) and _floats_are_plain(data):
        try:
            return _pyarrow_decode_as(data, options, oids, names, first_line, tz, True)
        except _FloatsNotPlain:
            pass
    return _pyarrow_decode_as(data, options, oids, names, first_line, tz, False)


def _pyarrow_decode_as(data: bytes, options: CopyOptions, oids: Sequence[int], names: Sequence[str],
                       first_line: int, tz: str, direct_floats: bool) -> list[tuple[np.ndarray, np.ndarray | None]]:
    import pyarrow as pa  # optional dependency
    import pyarrow.compute as pc  # optional dependency
    import pyarrow.csv as pcsv  # optional dependency

    csv = options.format == "csv"
    # memchr for the rare 'x' first: searching "0x" directly stops at every '0' of numeric data
    has_hex = (b"x" in data or b"X" in data) and (b"0x" in data or b"0X" in data)
    cols = [f"c{j}" for j in range(len(oids))]
    ptypes = {c: pa.float64() if direct_floats and o in _FLOATS else _pa_type(o, has_hex) for c, o in zip(cols, oids)}
    q = options.quote
    parse = pcsv.ParseOptions(
        delimiter=options.delimiter,
        quote_char=q if csv else False,
        double_quote=True,
        escape_char=False,
        newlines_in_values=csv and q.encode() in data,
        ignore_empty_lines=False,
    )
    conv = pcsv.ConvertOptions(
        column_types=ptypes, null_values=[options.null], strings_can_be_null=True,
        quoted_strings_can_be_null=False, true_values=_BOOL_TRUE, false_values=_BOOL_FALSE,
        check_utf8=True,
    )
    # blocks of ~1 MiB let pyarrow parse a multi-megabyte slab on both cores
    read = pcsv.ReadOptions(column_names=cols, block_size=max(1 << 20, len(data) // 4 + 1),
                            use_threads=len(data) > (1 << 20))
    try:
        table = pcsv.read_csv(io.BytesIO(data), read_options=read, parse_options=parse, convert_options=conv)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as ex:
        if direct_floats:
            raise _FloatsNotPlain() from None
        raise _Fallback(str(ex)) from None
    out: list[tuple[np.ndarray, np.ndarray | None]] = []
    for j, oid in enumerate(oids):
        col = table.column(j).combine_chunks() if table.column(j).num_chunks != 1 else table.column(j).chunk(0)
        nmask = None
        if col.null_count:
            nmask = col.is_null().to_numpy(zero_copy_only=False)
        typ = col.type
        if pa.types.is_string(typ) or pa.types.is_large_string(typ):
            out.append(_string_column(col, oid, nmask, names[j], first_line, tz, pa, pc))
            continue
        if col.null_count:
            col = col.fill_null(False if pa.types.is_boolean(typ) else pa.scalar(0, typ))
        vals = col.to_numpy(zero_copy_only=False)
        if oid in _FLOATS:
            out.append(_direct_float_column(vals, oid, nmask))
            continue
        out.append((vals, nmask))
    return out


def _direct_float_column(arr: np.ndarray, oid: int, nmask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """A float column pyarrow parsed as doubles from plain literals (see
    :func:`_floats_are_plain`): inf/NaN can only come from inf/NaN text, which
    the exact text path handles."""
    if not np.isfinite(arr).all():
        raise _FloatsNotPlain()
    if oid == wiretypes.FLOAT4:
        with np.errstate(over="ignore"):
            a32 = arr.astype(np.float32)
        if np.isinf(a32).any() or ((a32 == 0) & (arr != 0)).any():
            raise _Fallback("float4 range")
        return a32, nmask
    return arr, nmask


def _string_column(col: Any, oid: int, nmask: np.ndarray | None, name: str, first_line: int, tz: str,
                   pa: Any, pc: Any) -> tuple[np.ndarray, np.ndarray | None]:
    """Convert a column pyarrow read as strings into the engine's representation."""
    if oid in _PA_STRINGY:
        return col.to_numpy(zero_copy_only=False), nmask
    if oid in (wiretypes.INT2, wiretypes.INT4, wiretypes.INT8):
        if pc.any(pc.match_substring(col, "x", ignore_case=True)).as_py():
            raise _Fallback("hex")
        try:
            v = pc.cast(col, _pa_type(oid, False))
        except pa.ArrowInvalid:
            raise _Fallback("int") from None
        return v.fill_null(0).to_numpy(zero_copy_only=False), nmask
    if oid in (wiretypes.FLOAT4, wiretypes.FLOAT8):
        try:
            v = pc.cast(pc.utf8_trim_whitespace(col), pa.float64())
        except pa.ArrowInvalid:
            raise _Fallback("float") from None
        arr = v.fill_null(0.0).to_numpy(zero_copy_only=False)
        suspicious = np.isinf(arr) | (arr == 0)
        if nmask is not None:
            suspicious &= ~nmask
        if suspicious.any():
            # zeros are mostly written as zeros ("0", "0.0", "-0e3"): only a value that
            # parsed to 0 or inf from other text (underflow, overflow) needs the exact check
            idx = np.flatnonzero(suspicious)
            sub = col.take(pa.array(idx))
            literal = pc.match_substring_regex(sub, _PLAIN_ZERO).to_numpy(zero_copy_only=False)
            idx, sub = idx[~literal], sub.filter(pa.array(~literal))
            for k, s in zip(idx.tolist(), sub.to_pylist()):
                try:
                    wiretypes.decode_text(oid, s)
                except PgError:
                    raise _Fallback("float range") from None
        if oid == wiretypes.FLOAT4:
            with np.errstate(over="ignore"):
                a32 = arr.astype(np.float32)
            if (np.isinf(a32) & ~np.isinf(arr)).any() or ((a32 == 0) & (arr != 0)).any():
                raise _Fallback("float4 range")
            return a32, nmask
        return arr, nmask
    if oid in _TEMPORAL:
        parsed = _temporal_column(col, oid, nmask, tz, pa)
        if parsed is not None:
            return parsed, nmask
    if oid == wiretypes.NUMERIC:
        fast = _numeric_fast(col, pc)
        if fast is not None:
            return fast, nmask
    # Everything else: let pyarrow split, decode each value exactly.
    items = col.to_pylist()
    vals: list[Any] = []
    for k, s in enumerate(items):
        if s is None:
            vals.append(None)
            continue
        try:
            vals.append(wiretypes.decode_text(oid, s, tz=tz))
        except PgError:
            raise _Fallback("value error: re-parse for the exact line") from None
    v2, m2 = wiretypes.pylist_to_column(oid, vals)
    return v2, m2


_TEMPORAL: dict[int, copy_temporal.Kind] = {
    wiretypes.DATE: "date", wiretypes.TIMESTAMP: "timestamp", wiretypes.TIMESTAMPTZ: "timestamptz"}


def _temporal_column(col: Any, oid: int, nmask: np.ndarray | None, tz: str, pa: Any) -> np.ndarray | None:
    """A date/timestamp column in the strict ISO grammar, read vectorised
    (``copy_temporal``); None leaves it to the exact per-value path."""
    _validity, offsets, data = col.buffers()
    otype = np.int64 if pa.types.is_large_string(col.type) else np.int32
    offs = np.frombuffer(offsets, otype, len(col) + 1, col.offset * np.dtype(otype).itemsize)
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return copy_temporal.parse_column(raw, offs, nmask, _TEMPORAL[oid], tz)


_PLAIN_DECIMAL = r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)\s*$"
_PLAIN_ZERO = r"^\s*[+-]?(0+(\.0*)?|\.0+)([eE][+-]?[0-9]+)?\s*$"


def _numeric_fast(col: Any, pc: Any) -> np.ndarray | None:
    """Plain decimal literals (no exponent, NaN or underscores) straight to
    Decimal: one vectorised syntax check instead of a regex per value."""

    ok = pc.match_substring_regex(col, _PLAIN_DECIMAL)
    if ok.null_count != len(col) and not pc.all(pc.fill_null(ok, True)).as_py():
        return None
    out = np.empty(len(col), dtype=object)
    out[:] = [None if v is None else Decimal(v) for v in col.to_pylist()]
    return out


_TEXT_BACKSLASH_RE_CACHE: dict[str, re.Pattern[bytes]] = {}


def _text_fast_ok(data: bytes, options: CopyOptions) -> bool:
    """True when text-format data has no escapes other than whole-field NULL markers."""
    if b"\r" in data:
        return False
    if b"\\" not in data:
        return True
    if options.null != "\\N":
        return False
    d = options.delimiter
    pat = _TEXT_BACKSLASH_RE_CACHE.get(d)
    if pat is None:
        ed = re.escape(d.encode())
        # a backslash not starting "\N<terminator>", or one not at a field start
        pat = re.compile(rb"\\(?!N(?:[\n" + ed + rb"]|\Z))|(?<=[^\n" + ed + rb"])\\")
        _TEXT_BACKSLASH_RE_CACHE[d] = pat
    return pat.search(data) is None


# --------------------------------------------------------------------------
# decode_copy
# --------------------------------------------------------------------------


def decode_copy(data: bytes, options: CopyOptions, column_oids: Sequence[int], *,
                first_line: int = 1, column_names: Sequence[str] | None = None,
                tz: str = "UTC", native: NativeDecoder | None = None) -> list[DecodedColumn]:
    """Decode a chunk of complete COPY rows into typed columns.

    ``first_line`` is the 1-based line number of the chunk's first line; when
    it is 1 and HEADER is on, that line is skipped.  Errors carry
    ``extra['line']`` (and ``extra['column']``) for the caller's CONTEXT.
    ``native(data, options, oids)``, when given, is tried first on text/CSV
    data without escapes or quoting: a compiled reader of a strict grammar
    that returns the columns, or None to leave the chunk to this module.
    """
    names = list(column_names) if column_names else [f"column{j + 1}" for j in range(len(column_oids))]
    if options.format == "binary":
        dec = BinaryCopyDecoder(column_oids, column_names=names, first_line=first_line)
        dec.feed(data)
        dec.finish()
        return dec.take_columns()
    data = _strip_end_marker(bytes(data))
    line = first_line
    if options.header and first_line == 1 and data:
        head, _ = _first_row(data, options)
        if options.header_match:
            _check_header_match(data[: head], options, names)
        data = data[head:]
        line += 1
    if not data:
        return [wiretypes.pylist_to_column(o, []) for o in column_oids]
    fast = len(column_oids) > 0 and (
        (options.format == "text" and _text_fast_ok(data, options))
        or (options.format == "csv" and options.escape == options.quote and not options.force_null
            and not options.force_not_null and b"\r" not in data
            and (options.quote.encode() not in data or data.count(options.quote.encode()) % 2 == 0))
    )
    if fast:
        if native is not None:
            cols = native(data, options, column_oids)
            if cols is not None:
                return cols
        try:
            return _pyarrow_decode(data, options, column_oids, names, line, tz)
        except (_Fallback, ImportError):      # pyarrow absent: the exact Python parser below
            pass
    rows, lines = _python_rows(data, options, line, names)
    return _rows_to_columns(rows, column_oids, names, lines, tz)


def _first_row(data: bytes, options: CopyOptions) -> tuple[int, bytes]:
    if options.format == "csv" and options.quote.encode() in data:
        # find first newline outside quotes
        inq = False
        q = options.quote.encode()[0]
        for i, c in enumerate(data):
            if c == q:
                inq = not inq
            elif c == 10 and not inq:
                return i + 1, data[: i + 1]
        return len(data), data
    i = data.find(b"\n")
    return (i + 1, data[: i + 1]) if i >= 0 else (len(data), data)


def _check_header_match(head: bytes, options: CopyOptions, names: Sequence[str]) -> None:
    rows, _ = _python_rows(head, options, 1, [""] * max(1, head.count(options.delimiter.encode()) + 1))
    got = rows[0] if rows else []
    head_text = head.decode("utf-8", "replace").rstrip("\r\n")
    if len(got) != len(names):
        raise _copy_error(BAD_COPY_FILE_FORMAT, f"wrong number of fields in header line: field count is {len(got)}, expected {len(names)}", 1, line_text=head_text)
    for j, (g, nm) in enumerate(zip(got, names)):
        if g is None:
            raise _copy_error(BAD_COPY_FILE_FORMAT, f'column name mismatch in header line field {j + 1}: got null value ("{options.null}"), expected "{nm}"', 1, line_text=head_text)
        if g != nm:
            raise _copy_error(BAD_COPY_FILE_FORMAT, f'column name mismatch in header line field {j + 1}: got "{g}", expected "{nm}"', 1, line_text=head_text)


# --------------------------------------------------------------------------
# Binary COPY
# --------------------------------------------------------------------------

_FAST_BIN: dict[int, tuple[str, int]] = {
    wiretypes.BOOL: ("?", 1), wiretypes.INT2: (">i2", 2), wiretypes.INT4: (">i4", 4), wiretypes.INT8: (">i8", 8), wiretypes.OID: (">u4", 4),
    wiretypes.FLOAT4: (">f4", 4), wiretypes.FLOAT8: (">f8", 8), wiretypes.DATE: (">i4", 4), wiretypes.TIMESTAMP: (">i8", 8),
    wiretypes.TIMESTAMPTZ: (">i8", 8),
}
_EPOCH_SHIFT_US = 946_684_800_000_000
_EPOCH_SHIFT_D = 10_957
_MAX_US = 253_402_300_799_999_999 - _EPOCH_SHIFT_US  # 9999-12-31 23:59:59.999999 since 2000
_MIN_US = -62_135_596_800_000_000 - _EPOCH_SHIFT_US  # 0001-01-01 since 2000


def _fast_convert(oid: int, raw: np.ndarray) -> np.ndarray:
    """Big-endian wire column -> engine dtype (vectorised)."""
    if oid == wiretypes.DATE:
        dmax = (np.datetime64("9999-12-31", "D") - np.datetime64("1970-01-01", "D")).astype(np.int64)
        dmin = (np.datetime64("0001-01-01", "D") - np.datetime64("1970-01-01", "D")).astype(np.int64)
        v = np.where(raw == wiretypes.INT32_MAX, dmax, np.where(raw == wiretypes.INT32_MIN, dmin, raw.astype(np.int64) + _EPOCH_SHIFT_D))
        return v.astype("datetime64[D]")
    if oid in (wiretypes.TIMESTAMP, wiretypes.TIMESTAMPTZ):
        v = raw.astype(np.int64)
        v = np.clip(v, _MIN_US, _MAX_US) + _EPOCH_SHIFT_US
        return v.astype("datetime64[us]")
    return raw.astype(wiretypes.numpy_dtype(oid))


class BinaryCopyDecoder:
    """Stateful decoder for binary COPY data arriving in arbitrary pieces.

    Call :meth:`feed` with each CopyData payload, :meth:`take_columns` to get
    the rows decoded so far, and :meth:`finish` at CopyDone to check that the
    trailer was seen.  Runs of fixed-width, non-NULL tuples are decoded with a
    numpy structured view instead of per field.
    """

    def __init__(self, column_oids: Sequence[int], *, column_names: Sequence[str] | None = None,
                 first_line: int = 1) -> None:
        self.oids = list(column_oids)
        self.names = list(column_names) if column_names else [f"column{j + 1}" for j in range(len(self.oids))]
        self.buf = bytearray()
        self.header_done = False
        self.finished = False
        self.line = first_line  # number of the next tuple
        self._segments: list[list[tuple[np.ndarray, np.ndarray | None]]] = [[] for _ in self.oids]
        self._pending: list[list[Any]] = [[] for _ in self.oids]
        self._fast_dtype: np.dtype | None = None
        if self.oids and all(o in _FAST_BIN for o in self.oids):
            fields = [("n", ">i2")]
            for j, o in enumerate(self.oids):
                fields += [(f"l{j}", ">i4"), (f"v{j}", _FAST_BIN[o][0])]
            self._fast_dtype = np.dtype(fields)

    # -- public API --

    def feed(self, data: bytes) -> None:
        """Consume more bytes; complete tuples are decoded immediately."""
        if self.finished:
            if data:
                # PostgreSQL ignores anything after the trailer only when empty
                self.buf += data
            return
        self.buf += data
        pos = 0
        if not self.header_done:
            pos = self._parse_header()
            if pos == 0:
                return
        pos = self._parse_tuples(pos)
        del self.buf[:pos]

    def finish(self) -> None:
        """Called at end of data: the trailer must have been seen."""
        if not self.header_done:
            if len(self.buf) < len(BINARY_SIGNATURE) or not bytes(self.buf).startswith(BINARY_SIGNATURE):
                raise self._err(BAD_COPY_FILE_FORMAT, "COPY file signature not recognized")
            raise self._err(BAD_COPY_FILE_FORMAT, "invalid COPY file header (missing length)")
        if not self.finished:
            raise self._err(BAD_COPY_FILE_FORMAT, "unexpected EOF in COPY data")
        if self.buf:
            raise self._err(BAD_COPY_FILE_FORMAT, "received copy data after EOF marker")

    @property
    def rows_decoded(self) -> int:
        n = sum(len(s[0]) for s in self._segments[0]) if self.oids else 0
        return n + (len(self._pending[0]) if self.oids else 0)

    def take_columns(self) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """Return and forget the rows decoded so far, as typed columns."""
        self._flush_pending()
        out = []
        for j, o in enumerate(self.oids):
            segs = self._segments[j]
            if not segs:
                out.append(wiretypes.pylist_to_column(o, []))
                continue
            if len(segs) == 1:
                out.append(segs[0])
            else:
                vals = np.concatenate([s[0] for s in segs])
                if any(s[1] is not None for s in segs):
                    mask = np.concatenate([s[1] if s[1] is not None else np.zeros(len(s[0]), np.bool_) for s in segs])
                else:
                    mask = None
                out.append((vals, mask))
            self._segments[j] = []
        return out

    # -- internals --

    def _err(self, code: str, msg: str, column: str | None = None) -> PgError:
        return _copy_error(code, msg, self.line, column)

    def _parse_header(self) -> int:
        b = self.buf
        if len(b) < 11:
            if not BINARY_SIGNATURE.startswith(bytes(b)):
                raise self._err(BAD_COPY_FILE_FORMAT, "COPY file signature not recognized")
            return 0
        if bytes(b[:11]) != BINARY_SIGNATURE:
            raise self._err(BAD_COPY_FILE_FORMAT, "COPY file signature not recognized")
        if len(b) < 19:
            return 0
        ext: int
        flags, ext = struct.unpack_from("!iI", b, 11)
        if flags & (1 << 16):
            raise self._err(BAD_COPY_FILE_FORMAT, "invalid COPY file header (WITH OIDS)")
        if flags & ~0 & 0xFFFF0000 & ~(1 << 16):
            raise self._err(BAD_COPY_FILE_FORMAT, "unrecognized critical flags in COPY file header")
        if len(b) < 19 + ext:
            return 0
        self.header_done = True
        return 19 + ext

    def _parse_tuples(self, pos: int) -> int:
        buf = self.buf
        ncol = len(self.oids)
        while True:
            if self._fast_dtype is not None:
                pos = self._fast_run(pos)
            if len(buf) - pos < 2:
                return pos
            (cnt,) = struct.unpack_from("!h", buf, pos)
            if cnt == -1:
                self.finished = True
                return pos + 2
            if cnt != ncol:
                raise self._err(BAD_COPY_FILE_FORMAT, f"row field count is {cnt}, expected {ncol}")
            p = pos + 2
            row: list[Any] = []
            for j in range(ncol):
                if len(buf) - p < 4:
                    return pos
                (ln,) = struct.unpack_from("!i", buf, p)
                p += 4
                if ln == -1:
                    row.append(None)
                    continue
                if ln < -1:
                    raise self._err(BAD_COPY_FILE_FORMAT, "invalid field size")
                if len(buf) - p < ln:
                    return pos
                row.append(bytes(buf[p: p + ln]))
                p += ln
            for j, raw in enumerate(row):
                if raw is None:
                    self._pending[j].append(None)
                    continue
                try:
                    self._pending[j].append(wiretypes.decode_binary(self.oids[j], raw))
                except PgError as ex:
                    for k in range(j):
                        self._pending[k].pop()
                    err = self._err(ex.sqlstate, ex.message, self.names[j])
                    raise err from None
            self.line += 1
            pos = p

    def _fast_run(self, pos: int) -> int:
        dt = self._fast_dtype
        assert dt is not None
        k = (len(self.buf) - pos) // dt.itemsize
        if k < 8:
            return pos
        rec = np.frombuffer(self.buf, dtype=dt, count=k, offset=pos)
        ok = rec["n"] == len(self.oids)
        for j, o in enumerate(self.oids):
            ok &= rec[f"l{j}"] == _FAST_BIN[o][1]
        bad = np.flatnonzero(~ok)
        m = int(bad[0]) if len(bad) else k
        if m == 0:
            return pos
        self._flush_pending()
        good = rec[:m]
        for j, o in enumerate(self.oids):
            self._segments[j].append((_fast_convert(o, good[f"v{j}"]), None))
        self.line += m
        del rec, good
        return pos + m * dt.itemsize

    def _flush_pending(self) -> None:
        if not self.oids or not self._pending[0]:
            return
        for j, o in enumerate(self.oids):
            self._segments[j].append(wiretypes.pylist_to_column(o, self._pending[j]))
            self._pending[j] = []


# --------------------------------------------------------------------------
# COPY TO
# --------------------------------------------------------------------------

_TEXT_OUT_ESC = {"\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
_SAFE_OIDS = {wiretypes.BOOL, wiretypes.INT2, wiretypes.INT4, wiretypes.INT8, wiretypes.OID, wiretypes.FLOAT4, wiretypes.FLOAT8, wiretypes.DATE, wiretypes.TIMESTAMP,
              wiretypes.TIMESTAMPTZ, wiretypes.NUMERIC, wiretypes.UUID, wiretypes.INTERVAL, wiretypes.TIME}


def _text_escaper(delim: str) -> Any:
    table = dict(_TEXT_OUT_ESC)
    table.setdefault(delim, "\\" + delim)
    pat = re.compile("[" + re.escape("".join(table)) + "]")

    def esc(s: str) -> str:
        return pat.sub(lambda m: table[m.group(0)], s)

    return pat, esc


def _csv_field(s: str, options: CopyOptions, force: bool, single: bool = False) -> str:
    q, e, d = options.quote, options.escape, options.delimiter
    if force or s == options.null or (single and s == "\\.") or d in s or q in s or "\n" in s or "\r" in s:
        if e == q:
            s = s.replace(q, q + q)
        else:
            s = s.replace(e, e + e).replace(q, e + q)
        return q + s + q
    return s


def encode_copy_rows(columns: Sequence[tuple[np.ndarray, np.ndarray | None]], column_oids: Sequence[int],
                     options: CopyOptions, *, column_names: Sequence[str] | None = None,
                     tz: str = "UTC", header: bool | None = None, trailer: bool = True,
                     float_digits: int = 1) -> bytes:
    """Encode columns as COPY TO data (text, CSV or binary; ``float_digits``:
    the session's extra_float_digits).

    ``header`` overrides ``options.header`` (pass False for every chunk but the
    first when streaming); for binary the signature is written when header is
    true (default) and the trailer when ``trailer`` is true.
    """
    names = list(column_names) if column_names else [f"column{j + 1}" for j in range(len(column_oids))]
    nrows = len(columns[0][0]) if columns else 0
    if options.format == "binary":
        return _encode_binary(columns, column_oids, nrows, header is not False, trailer)
    want_header = options.header if header is None else header
    texts = [wiretypes.encode_text_column(o, v, m, tz=tz, float_digits=float_digits)
             for (v, m), o in zip(columns, column_oids)]
    d = options.delimiter.encode()
    null = (options.null or "").encode()
    lines: list[bytes] = []
    strcols: list[list[bytes]] = []
    if options.format == "csv":
        fq = options.force_quote
        force = [fq is True or (isinstance(fq, list) and nm in fq) for nm in names]
        if want_header:
            lines.append(d.join(_csv_field(nm, options, False).encode() for nm in names))
        single = len(column_oids) == 1
        special = re.compile(b"[" + re.escape(d + options.quote.encode()) + b"\r\n]")
        for j, col in enumerate(texts):
            strcols.append([null if b is None else
                                (_csv_field(b.decode(), options, force[j], single).encode()
                                 if force[j] or b == null or (single and b == b"\\.") or special.search(b) else b)
                                for b in col])
    else:
        pat, esc = _text_escaper(options.delimiter)
        bpat = re.compile(pat.pattern.encode())
        if want_header:
            lines.append(d.join(esc(nm).encode() for nm in names))
        for j, col in enumerate(texts):
            if column_oids[j] in _SAFE_OIDS and not bpat.search(b"-:. +,0123456789eEINaftyinfTZ"):
                strcols.append([null if b is None else b for b in col])
            else:
                strcols.append([null if b is None else (esc(b.decode()).encode() if bpat.search(b) else b)
                                for b in col])
    if nrows:
        lines.extend(map(d.join, zip(*strcols)))
    if not lines:
        return b""
    lines.append(b"")
    return b"\n".join(lines)


def _encode_binary(columns: Sequence[tuple[np.ndarray, np.ndarray | None]], oids: Sequence[int],
                   nrows: int, header: bool, trailer: bool) -> bytes:
    parts: list[bytes] = []
    if header:
        parts.append(BINARY_SIGNATURE + b"\x00\x00\x00\x00\x00\x00\x00\x00")
    if nrows:
        fast = all(o in _FAST_BIN and o not in (wiretypes.DATE, wiretypes.TIMESTAMP, wiretypes.TIMESTAMPTZ) and m is None
                   for (v, m), o in zip(columns, oids))
        if fast:
            fields = [("n", ">i2")]
            for j, o in enumerate(oids):
                fields += [(f"l{j}", ">i4"), (f"v{j}", _FAST_BIN[o][0])]
            rec = np.empty(nrows, dtype=np.dtype(fields))
            rec["n"] = len(oids)
            for j, ((v, _m), o) in enumerate(zip(columns, oids)):
                rec[f"l{j}"] = _FAST_BIN[o][1]
                rec[f"v{j}"] = v
            parts.append(rec.tobytes())
        else:
            cols = [wiretypes.column_to_pylist(o, v, m) for (v, m), o in zip(columns, oids)]
            cnt = struct.pack("!h", len(oids))
            for row in zip(*cols):
                parts.append(cnt)
                for o, x in zip(oids, row):
                    if x is None:
                        parts.append(b"\xff\xff\xff\xff")
                    else:
                        b = wiretypes.encode_binary(o, x)
                        parts.append(struct.pack("!i", len(b)) + b)
    if trailer:
        parts.append(b"\xff\xff")
    return b"".join(parts)


__all__ = [
    "CopyOptions", "parse_copy_options", "split_complete", "decode_copy", "BinaryCopyDecoder",
    "encode_copy_rows", "BINARY_SIGNATURE", "INVALID_BINARY_REPRESENTATION",
]
