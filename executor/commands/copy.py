"""COPY FROM STDIN / file into tables and streams, COPY TO STDOUT.

Incoming data is buffered to whole lines and decoded straight into column
batches (``protocol.copy``).  The rows of a COPY are applied only when the
COPY completes, so a bad row anywhere delivers nothing, and the error names
the line as PostgreSQL's ``CONTEXT: COPY t, line N`` does.
"""
from __future__ import annotations

import collections
import ctypes
import functools
import secrets
import ctypes.util
import re
import re as _re
import sys
import tempfile
from concurrent.futures import Future
from typing import IO, Any, Callable, Literal

import sqlglot

from splitstream.catalog.objects import predefined_roles
from splitstream.catalog.storage import wal
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.catalog.storage.wal_records import StreamPart
from splitstream.protocol import copy as copyformat
from splitstream.protocol.types import UTC, zone_of
from splitstream.protocol.errors import (
    FEATURE_NOT_SUPPORTED,
    SYNTAX_ERROR,
    UNDEFINED_COLUMN,
    UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
    PgError,
)

from ..execution import operators, privileges
from ..api import CopyOut, Result
from ..settings import float_digits
from ..sql.dialect import DIALECT
from ..backends.llvm import crc32 as compiled_crc32
from ..backends.llvm import csv as compiled_csv
from ..sql.planner import Planner
from ..stream import targets as stream_targets
from ..stream.spark.ledger import KEY_SETTING
from ..stream.watermark import Advance
from .base import Stmt
from .subscribe import Subscription, is_subscribe
from .copy_cast_errors import locate_cast_error
from .copy_parse import PARSE_STEP, SLAB_BYTES, Parsed, PlainParse, give_slab, take_slab
from .dml import build_rows, check_constraints, insert_batch

#: a piece of a COPY's data as received (a slab is handed over as its pieces)
Buffer = bytes | memoryview

DECODE_SLAB = 8 << 20
#: rows for the compiled reader are cut into slabs of this size and parsed on
#: a decode thread while the next ones arrive (``CopySink._hand_over``);
#: measured on YSB's 3.3 MB COPYs: 512 KiB left CopyDone ~3.5 ms of work where
#: 1 MiB left ~10 (its last slab is larger), 256 KiB cost more CPU per row
AHEAD_SLAB = 2 << 20
#: slabs parsed ahead and not yet staged, per COPY (bounds its memory)
AHEAD_DEPTH = 4
#: a stream slab's WAL body this large has its CRC computed on a decode thread;
#: a smaller one here: with the folding CRC (~20 GB/s) a 2 MiB slab's body takes
#: ~60 us, less than handing it over (the WAL write waited ~0.2 ms for it)
AHEAD_CRC = 16 << 20
#: encoded stream slabs kept in memory before spilling to the data directory
SPILL_BYTES = 32 << 20

_RX = re.compile(r"""\s*copy\s+(?P<target>\((?P<query>.*)\)|(?P<table>[\w."]+)\s*(?:\((?P<cols>[^)]*)\))?)\s+
                     (?P<dir>from|to)\s+(?P<src>stdin|stdout|'(?:[^']|'')*'|program\s+'[^']*')\s*
                     (?:with\s*)?(?P<opts>\(.*\)|.*?)\s*;?\s*$""", re.I | re.S | re.X)


def _parse_opts(text: str) -> dict[str, str | bool | list[str]]:
    text = text.strip()
    opts: dict[str, str | bool | list[str]] = {}
    if not text:
        return opts
    if text.startswith("(") and not text.endswith(")") and re.search(r"\)\s*where\b", text, re.I):
        _legacy_opts(["where"])
    if text.startswith("(") and text.endswith(")"):
        body = text[1:-1]
        for part in _split(body):
            bits = part.strip().split(None, 1)
            if not bits:
                continue
            k = bits[0].lower()
            v: str | bool | list[str] = bits[1].strip() if len(bits) > 1 else True
            if isinstance(v, str):
                if v.startswith("'") and v.endswith("'"):
                    v = v[1:-1].replace("''", "'")
                elif v.startswith("("):
                    v = [x.strip().strip('"') for x in v[1:-1].split(",")]
                else:
                    v = v.lower()
            opts[k] = v
        return opts
    return _legacy_opts(re.findall(r"'(?:[^']|'')*'|\(|\)|,|[^\s(),]+", text))


#: PostgreSQL 15's pre-9.0 option words (copy_opt_item) and whether a value follows
_LEGACY_VALUE = ("delimiter", "null", "quote", "escape", "encoding")


def _legacy_opts(toks: list[str]) -> dict[str, str | bool | list[str]]:
    """CSV HEADER DELIMITER [AS] ',' NULL [AS] '' FORCE NOT NULL a, b ...;
    any other word is a syntax error (never skipped), and a WHERE clause is
    refused rather than dropped."""
    opts: dict[str, str | bool | list[str]] = {}
    i = 0

    def word(k: int) -> str:
        return toks[k].lower() if k < len(toks) else ""

    while i < len(toks):
        t = word(i)
        if t == "where":
            raise PgError(FEATURE_NOT_SUPPORTED, "COPY FROM ... WHERE is not supported",
                          hint="COPY the rows into a staging table and INSERT ... SELECT ... WHERE from it, "
                               "or filter in a view over the stream.")
        if t in ("csv", "binary"):
            opts["format"] = t
        elif t in ("header", "freeze"):
            opts[t] = True
        elif t in _LEGACY_VALUE and i + 1 < len(toks):
            i += 2 if word(i + 1) == "as" else 1
            if not toks[i].startswith("'"):
                raise PgError(SYNTAX_ERROR, f'syntax error at or near "{toks[i]}"')
            opts[t] = toks[i][1:-1].replace("''", "'")
        elif t == "force":
            key = {"quote": "force_quote", "null": "force_null"}.get(word(i + 1))
            i += 1
            if word(i) == "not" and word(i + 1) == "null":
                key, i = "force_not_null", i + 1
            if key is None:
                raise PgError(SYNTAX_ERROR, f'syntax error at or near "{toks[i] if i < len(toks) else "FORCE"}"')
            cols: list[str] = []
            while i + 1 < len(toks) and (not cols or word(i + 1) == ","):
                i += 1 if not cols else 2
                if i >= len(toks):
                    break
                cols.append(toks[i].strip('"') if toks[i].startswith('"') else toks[i].lower())
            opts[key] = True if cols == ["*"] else cols
        else:
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{toks[i]}"')
        i += 1
    return opts


def _name_parts(name: str) -> list[str]:
    """Split schema.table with PostgreSQL's identifier rules (quotes keep case)."""

    parts = _re.findall(r'"((?:[^"]|"")*)"|([^."]+)', name)
    return [q.replace('""', '"') if q else u.lower() for q, u in parts]


def _split(s: str) -> list[str]:
    out: list[str] = []
    buf: list[str] = []
    depth, q = 0, False
    for ch in s:
        if ch == "'":
            q = not q
        elif not q and ch == "(":
            depth += 1
        elif not q and ch == ")":
            depth -= 1
        elif not q and ch == "," and depth == 0:
            out.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    out.append("".join(buf))
    return out


class CopyStmt(Stmt):
    cacheable = False
    query: str | None               # COPY (query) TO ...
    table: str | None               # COPY table [(cols)] ...
    cols: list[str] | None
    direction: str                  # 'from' | 'to'
    src: str                        # stdin, stdout, 'file' or program 'command'
    opts: dict[str, str | bool | list[str]]

    @staticmethod
    def parse(text: str) -> "CopyStmt":
        m = _RX.match(text)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error in COPY statement")
        s = CopyStmt()
        s.query = m.group("query")
        s.table = m.group("table")
        s.cols = [c.strip().strip('"') if c.strip().startswith('"') else c.strip().lower() for c in m.group("cols").split(",")] if m.group("cols") else None
        s.direction = m.group("dir").lower()
        s.src = m.group("src")
        s.opts = _parse_opts(m.group("opts") or "")
        return s

    def run(self, session, ctx):
        if self.src.lower() != ("stdin" if self.direction == "from" else "stdout"):   # DoCopy checks it first
            _require_server_side(session, ctx, self.src, self.direction)
        options = copyformat.parse_copy_options(self.opts, is_from=self.direction == "from")
        pl = Planner(session.engine, ctx.state, session=session.info)
        if self.direction == "to":
            return self._copy_to(session, ctx, pl, options)
        if self.query is not None:
            raise PgError(SYNTAX_ERROR, "COPY FROM cannot take a query")
        parts = _name_parts(self.table)
        name = parts[-1]
        rel = pl.lookup_relation(name, parts[0] if len(parts) > 1 else None)
        if rel is None:
            raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
        if rel.relkind not in ("r", "f"):
            word = {"v": "view ", "m": "materialized view "}.get(rel.relkind, "relation ")
            raise PgError(WRONG_OBJECT_TYPE, f'cannot copy to {word}"{rel.name}"')
        targets = [c for c in rel.live_columns if not c.hidden]
        if self.cols:
            for c in self.cols:
                if rel.column(c) is None or rel.column(c).hidden:
                    raise PgError(UNDEFINED_COLUMN, f'column "{c}" of relation "{rel.name}" does not exist')
            targets = [rel.column(c) for c in self.cols]
        pl.need("a", rel.oid, columns=frozenset(c.name for c in targets))
        privileges.authorize(ctx.state, session.info, pl.needs)
        sink = CopySink(session, ctx, rel, targets, options)
        if self.src.lower() == "stdin":
            return Result(tag="", copy_in=sink)
        path = self.src[1:-1].replace("''", "'")
        try:
            with open(path, "rb") as f:
                while True:
                    chunk = f.read(1 << 22)
                    if not chunk:
                        break
                    sink.feed(chunk)
        except OSError as e:
            raise PgError("58P01", f'could not open file "{path}" for reading: {e.strerror}') from e
        tag = sink.finish_in_txn()
        return Result(tag=tag)

    def _copy_to(self, session, ctx, pl, options):
        if self.query is not None and is_subscribe(self.query):
            return _copy_subscribe(session, ctx, self.query, options, self.src)
        if self.query is not None:
            query = sqlglot.parse_one(self.query, read=DIALECT)
            pl.use_columns_of(query)
            plan = pl.plan_query(query)
        else:
            parts = _name_parts(self.table)
            name = parts[-1]
            rel = pl.lookup_relation(name, parts[0] if len(parts) > 1 else None)
            if rel is None:
                raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
            if rel.kind == "v":
                raise PgError(WRONG_OBJECT_TYPE, f'cannot copy from view "{rel.name}"', hint="Try the COPY (SELECT ...) TO variant.")
            cols = self.cols or [c.name for c in rel.visible_columns]
            tree = sqlglot.parse_one(f'SELECT {", ".join(chr(34) + c + chr(34) for c in cols)} FROM {self.table}',
                                     read=DIALECT)
            pl.use_columns_of(tree)
            plan = pl.plan_query(tree)
        privileges.authorize(ctx.state, session.info, pl.needs)
        batch = operators.run_plan(plan, ctx)
        oids = [c.oid for c in plan.out]
        names = [c.name for c in plan.out]
        encode = functools.partial(copyformat.encode_copy_rows, column_names=names,
                                   tz=session.info.settings.get("timezone", "UTC"),
                                   float_digits=float_digits(session.info.settings))
        cols = [(c.data, c.nulls) for c in batch.cols]
        fmt = 1 if options.format == "binary" else 0

        def chunks():
            step = 65536
            if batch.n == 0:
                data = encode([(c.data[:0], None) for c in batch.cols], oids, options)
                if data:
                    yield data
                return
            for a in range(0, batch.n, step):
                part = [(d[a:a + step], None if m is None else m[a:a + step]) for d, m in cols]
                data = encode(part, oids, options, header=None if a == 0 else False, trailer=a + step >= batch.n)
                yield from _per_row(data, part, oids, options, encode, a == 0)

        if self.src.lower() == "stdout":
            return Result(tag="", copy_out=CopyOut(fmt, len(oids), chunks(), lambda: f"COPY {batch.n}"))
        path = self.src[1:-1]
        with open(path, "wb") as f:
            for c in chunks():
                f.write(c)
        return Result(tag=f"COPY {batch.n}")


_COPY_HINT = "Anyone can COPY to stdout or from stdin. psql's \\copy command also works for anyone."


def _require_server_side(session, ctx, src: str, direction: str) -> None:
    """COPY from or to a server file needs the privileges of pg_read_server_files or
    pg_write_server_files (a program those of pg_execute_server_program, and
    splitstream runs none: refused after the check, as PostgreSQL orders them)."""
    state, info = ctx.state, session.info
    if src.lower().startswith("program"):
        privileges.require_predefined(
            state, info, predefined_roles.PG_EXECUTE_SERVER_PROGRAM,
            "must be superuser or have privileges of the pg_execute_server_program role "
            "to COPY to or from an external program", hint=_COPY_HINT)
        raise PgError(FEATURE_NOT_SUPPORTED, f"COPY {direction.upper()} PROGRAM is not supported",
                      hint="COPY FROM STDIN or TO STDOUT (psql's \\copy) instead.")
    if direction == "from":
        privileges.require_predefined(state, info, predefined_roles.PG_READ_SERVER_FILES,
                                      "must be superuser or have privileges of the pg_read_server_files role "
                                      "to COPY from a file", hint=_COPY_HINT)
    else:
        privileges.require_predefined(state, info, predefined_roles.PG_WRITE_SERVER_FILES,
                                      "must be superuser or have privileges of the pg_write_server_files role "
                                      "to COPY to a file", hint=_COPY_HINT)


def _copy_subscribe(session, ctx, sql: str, options, target: str) -> Result:
    """``COPY (SUBSCRIBE ...) TO STDOUT``: CopyData as changes come, an empty
    chunk where the server should write what it has (``commands/subscribe.py``)."""
    if target.lower() != "stdout":
        raise PgError(FEATURE_NOT_SUPPORTED, "COPY (SUBSCRIBE ...) can only write to STDOUT",
                      hint="A subscription never ends; read it with COPY (SUBSCRIBE ...) TO STDOUT.")
    sub = Subscription(session, ctx, sql)
    oids = [c.type_oid for c in sub.columns]
    encode = functools.partial(copyformat.encode_copy_rows, column_names=[c.name for c in sub.columns],
                               tz=session.info.settings.get("timezone", "UTC"),
                               float_digits=float_digits(session.info.settings))

    def chunks():
        first = True
        for batch in sub.batches():
            if batch is None:
                yield b""
                continue
            part = [(c.data, c.nulls) for c in batch.cols]
            yield from _per_row(encode(part, oids, options, header=None if first else False, trailer=False),
                                part, oids, options, encode, first)
            yield b""
            first = False

    fmt = 1 if options.format == "binary" else 0
    return Result(tag="", copy_out=CopyOut(fmt, len(oids), chunks(), lambda: f"COPY {sub.rows_sent}"))


def _per_row(data: bytes, part, oids, options, encode, first: bool):
    """PostgreSQL sends one CopyData message per row, and clients such as
    psycopg's ``Copy.rows()`` rely on it: split the encoded chunk at row ends."""
    if options.format == "binary":
        yield data
        return
    if options.format == "csv" and options.quote.encode() in data:
        # quoted fields may hold newlines: encode row by row instead
        n = len(part[0][0]) if part else 0
        for i in range(n):
            row = [(d[i:i + 1], None if m is None else m[i:i + 1]) for d, m in part]
            yield encode(row, oids, options, header=None if (first and i == 0) else False)
        return
    lines = data.split(b"\n")
    for ln in lines[:-1]:
        yield ln + b"\n"
    if lines[-1]:
        yield lines[-1]


#: after a COPY of this many rows, free memory goes back to the OS
RELEASE_ROWS = 1 << 20
_libc: ctypes.CDLL | Literal[False] | None = None   # False: no malloc_trim on this system


def release_memory(rows: int) -> None:
    """Return the decoder's freed buffers to the OS after a large COPY.

    The multi-megabyte slabs, decoded columns and WAL records of a COPY are
    freed as it goes, but two allocators keep freed memory for reuse: glibc
    malloc (its mmap threshold rises to the largest block freed, so later
    slabs come from arenas that it does not shrink) and pyarrow's memory
    pool.  That is a fixed amount -- a few slabs per thread -- not a
    function of the COPY's volume, yet it showed as ~200 MB of RSS after the
    first large COPY.  ``malloc_trim`` and the pool's ``release_unused``
    hand it back; a small COPY skips this (it costs a few milliseconds)."""
    global _libc
    if rows < RELEASE_ROWS:
        return
    try:
        if "pyarrow" in sys.modules:
            sys.modules["pyarrow"].default_memory_pool().release_unused()
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        if _libc is not False:
            _libc.malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        _libc = False


def _native_reader(data: bytes, options, oids, naive_utc: bool = True):
    """The compiled reader of plain-number and ISO date/timestamp rows; None
    (general decoder) while it compiles or when it is unavailable.
    ``naive_utc``: the session is in UTC (a timestamptz without offset is UTC)."""
    try:
        return compiled_csv.decode(data, options, oids, naive_utc=naive_utc)
    except Exception:  # noqa: BLE001 - e.g. llvmlite missing: the general decoder is exact anyway
        return None


def _warm_reader(options, oids, naive_utc: bool) -> None:
    try:
        compiled_csv.warm(options, oids, naive_utc)
    except Exception:  # noqa: BLE001 - e.g. llvmlite missing: the general decoder is exact anyway
        pass


class CopySink:
    """Receives CopyData payloads; applies all rows at finish()."""

    def __init__(self, session, ctx, rel, targets, options) -> None:
        self.session, self.ctx, self.rel, self.targets, self.options = session, ctx, rel, targets, options
        self.format = 1 if options.format == "binary" else 0
        self.quote = options.quote.encode()    # looked for in every payload (``_plain_payload``)
        self.ncols = len(targets)
        self.buf = bytearray()     # CopyData not yet decoded: appended to, cut at a row end per slab
        self.line = 1
        self.batches: list[Batch] = []
        # encoded stream slabs: (WAL frame header, or its future on a decode thread; body; rows)
        self.records: list[tuple[bytes | Future[bytes], wal.Body, int]] = []
        self.kept: list[Batch] = []     # the batches of ``records``, for the views (no decoding them back)
        self.stream_rows = 0        # rows a stream admitted (the COPY's rows less those later than its watermark)
        self.advance = Advance()    # what the COPY does to the stream's watermark, applied at its commit
        self.rows = 0
        self.oids = [c.type_oid for c in targets]
        self.names = [c.name for c in targets]
        self.tz = session.info.settings.get("timezone", "UTC")
        self.binary = copyformat.BinaryCopyDecoder(self.oids, column_names=self.names) if self.format == 1 else None
        naive_utc = zone_of(self.tz) is UTC
        self.native = functools.partial(_native_reader, naive_utc=naive_utc) \
            if self.format == 0 and compiled_csv.supported(self.oids) and compiled_csv.usable(options, self.oids) \
            else None
        if self.native is not None:
            _warm_reader(options, self.oids, naive_utc)
        self.naive_utc = naive_utc
        # slabs of buffered data handed to a decode thread, in order: (data, the parse's future)
        self.ahead: collections.deque[tuple[bytes, Future]] = collections.deque()
        # plain data (no quote, no backslash) is kept as the payloads received,
        # and a slab is gathered from them on the decode thread (``_gather``)
        self.plain = self.native is not None
        self.pieces: list[Buffer] = []
        self.pending = 0            # bytes in ``pieces``
        # or payloads copied from the server's read buffer into a slab (``feed_spans``):
        # they come after ``pieces``; ``fill`` bytes of it are taken
        self.slab: bytearray | None = None
        self.fill = 0
        self.parse: PlainParse | None = None     # plain data parsed as it arrives
        self.done = False
        self.ended = False          # the end-of-data marker came: the rest of the data is ignored
        self.spill: IO[bytes] | None = None     # temporary file of validated stream slabs
        self.spilled = 0
        self.staged_bytes = 0
        # a Spark batch key (SET splitstream.batch_key) is logged with the rows it names
        self.keyed = rel.kind == "f" and bool((session.info.settings or {}).get(KEY_SETTING))
        self.group = secrets.randbits(62)     # names this COPY's parts in the WAL
        self.log_ahead: LogAhead | None = None      # from CopyDone: the parts logged as they are staged
        # pipelinedb.stream_targets as the COPY begins: logged in every part
        self.sent_to = stream_targets.resolve(ctx) if rel.kind == "f" and not self.keyed else None
        # the stream's views stage each slab as it is decoded (None: staged at CopyDone)
        self.staging = session.engine.streams.copy_staging(rel, self.sent_to) \
            if rel.kind == "f" and not self.keyed else None
        # logged as its views' deltas (stream/view_deltas.py): its rows are encoded only if that falls through
        self.deltas = self.staging is not None and session.engine.streams.copy_logs_deltas(rel, self.sent_to)

    @property
    def starts_inline(self) -> bool:
        """Whether the same statement may start on the server's event-loop
        thread next time, sparing a hop to a worker and back (~0.25 ms of a
        COPY's round trips): a COPY FROM STDIN into a stream outside a
        transaction block, whose start takes no lock and waits for nothing
        (its CopyDone still runs on a worker)."""
        return self.rel.kind == "f" and not self.keyed and self.session.txn is None

    def _context(self, e: PgError) -> PgError:
        line = e.extra.get("line") if e.extra else None
        ctxt = f"COPY {self.rel.name}, line {line}" if line else f"COPY {self.rel.name}"
        col = e.extra.get("column") if e.extra else None
        val = e.extra.get("value") if e.extra else None
        text = e.extra.get("line_text") if e.extra else None
        if col and val is not None:
            ctxt += f', column {col}: "{val}"'
        elif col:
            ctxt += f", column {col}"
        elif text is not None:
            ctxt += f': "{text}"'
        e.context = ctxt
        return e

    def feed(self, data: bytes) -> None:
        self.ctx.check_cancel()
        if self.ended:
            return
        # Decode in large slabs, binary too: a decoder call and a staged slab
        # (one WAL part, one pass through the views) have a fixed cost, and
        # the CSV decoder parallelises only over big inputs, while clients send
        # messages of 8-128 kB.
        try:
            if self.plain and self._gather(data):
                return
            self.buf += data
            if self.native is not None and len(self.buf) >= AHEAD_SLAB and not self._header_next():
                self._hand_over()
            elif len(self.buf) >= DECODE_SLAB:
                self._decode_pending()
        except PgError as e:
            raise self._context(e) from e

    def feed_light(self, payloads: list[bytes]) -> bool:
        """Feed these payloads now if that only keeps them and hands whole
        lines to the ordered parse: plain data, nothing parsed waiting to be
        staged, no wait for the parse to catch up.  Else (False) nothing is
        fed.  The server calls this on its event-loop thread, sparing a hop
        to a worker thread and back per CopyData batch (dozens per COPY)."""
        if not self._light(sum(map(len, payloads))) or not all(map(self._plain_payload, payloads)):
            return False
        for p in payloads:
            self._keep_plain(p)
        return True

    def feed_spans(self, buf: bytearray, spans: list[tuple[int, int]]) -> bool:
        """:meth:`feed_light` for payloads where they lie in the server's
        read buffer (``FrontendReader.copy_frames``): each is copied into
        this COPY's slab, which goes to the ordered parse whole (no bytes
        object per payload, no join before the parse).  False: nothing is
        fed (the server frames them as messages, as usual)."""
        if not self._light(sum(e - s for s, e in spans)) \
                or not all(e - s <= SLAB_BYTES - PARSE_STEP and self._plain_payload(buf, s, e) for s, e in spans):
            return False
        with memoryview(buf) as src:
            for s, e in spans:
                self._keep_span(src, buf, s, e)
        return True

    def _light(self, nbytes: int) -> bool:
        """``nbytes`` more of plain data would only be kept and handed on:
        no header due, nothing parsed waiting to be staged, no wait for the
        parse (while plain, nothing is buffered and no end marker came)."""
        return self.plain and not self._header_next() and (self.parse is None or self.parse.light(nbytes))

    def _keep_span(self, src: memoryview, buf: bytearray, s: int, e: int) -> None:
        """Copy ``buf[s:e]`` into the slab; once it holds ``PARSE_STEP``
        bytes, its whole lines go to the parse and the line begun moves to
        a new slab."""
        slab, fill = self.slab, self.fill
        if slab is None and self.pending + e - s <= SLAB_BYTES:
            slab, fill = take_slab(), 0
            for p in self.pieces:        # data kept before (a line begun): it comes first
                slab[fill:fill + len(p)] = p
                fill += len(p)
            self.pieces, self.pending = [], 0
        end = fill + e - s
        if slab is None or end > len(slab):      # no line end for a slab's length: the bytes way
            self.slab, self.fill = slab, fill
            self._slab_to_pieces()
            self._keep_plain(bytes(src[s:e]))
            return
        slab[fill:end] = src[s:e]
        self.slab, self.fill = slab, end
        if end < PARSE_STEP:
            return
        cut = buf.rfind(b"\n", s, e) + 1
        if not cut:
            return
        cut += fill - s
        nxt = take_slab()
        with memoryview(slab) as whole:
            nxt[:end - cut] = whole[cut:end]
        self.slab, self.fill = nxt, end - cut
        self._parse_plain([memoryview(slab)[:cut]], lambda: give_slab(slab))

    def _slab_to_pieces(self) -> bytearray | None:
        """The slab's bytes become the last of ``pieces`` (the bytes way goes
        on from there); the slab is returned, to be given back once they are parsed."""
        slab, self.slab = self.slab, None
        if slab is not None and self.fill:
            self.pieces.append(memoryview(slab)[:self.fill])
            self.pending += self.fill
        self.fill = 0
        return slab

    def _gather(self, data: bytes) -> bool:
        """Plain data in the compiled reader's layout is not appended to a
        buffer: the payloads are kept, and every ``PARSE_STEP`` bytes they
        are cut at the last line end of the newest one and handed to the
        COPY's ordered parse (``copy_parse``), which joins and parses them
        on a decode thread without the GIL.  Without a quote a row is a
        line, and without a backslash no end-of-data marker can come; a
        HEADER line there is the first line, skipped.  False (from then
        on): this data goes the buffered way, after the rows parsed and
        kept so far."""
        self._slab_to_pieces()      # (not given back: pieces may keep a view of it)
        rest = self._past_header(data) if not self.buf and self._plain_payload(data) else None
        if rest is None:
            self.plain = False
            if self.parse is not None:
                self._stage_parsed(self.parse.finish())
            if self.pieces:
                self.buf += b"".join(self.pieces)
                self.pieces, self.pending = [], 0
            return False
        if rest:
            self._keep_plain(rest)
        return True

    def _plain_payload(self, data: bytes | bytearray, start: int = 0, end: int | None = None) -> bool:
        """No quote (a row is a line) and no backslash (no end-of-data marker) in ``data[start:end]``."""
        return data.find(self.quote, start, end) < 0 and data.find(b"\\", start, end) < 0

    def _past_header(self, data: bytes) -> bytes | None:
        """Plain ``data`` after the HEADER line, if one is due and ends in it
        (None where it does not, or HEADER MATCH checks the names: the
        buffered way then reads it)."""
        if not self._header_next():
            return data
        end = data.find(b"\n")
        if self.options.header_match or end < 0:
            return None
        self.line = 2
        return data[end + 1:]

    def _keep_plain(self, data: bytes) -> None:
        self.pieces.append(data)
        self.pending += len(data)
        if self.pending >= PARSE_STEP:
            cut = data.rfind(b"\n") + 1
            if cut:
                slab = self.pieces
                self.pieces = [data[cut:]] if cut < len(data) else []
                self.pending = len(data) - cut
                if cut < len(data):
                    slab[-1] = memoryview(data)[:cut]
                self._parse_plain(slab)

    def _plain_parse(self) -> PlainParse:
        if self.parse is None:
            self.parse = PlainParse(lambda rows: compiled_csv.appender(self.oids, self.options, rows, self.naive_utc),
                                    compiled_csv.shortest_row(self.oids), self.rel.oid)
        return self.parse

    def _parse_plain(self, pieces: list[Buffer], parsed: Callable[[], None] | None = None) -> None:
        parse = self._plain_parse()
        parse.add(pieces, parsed)
        self._stage_parsed(parse.take_ready())

    def _stage_parsed(self, parsed: list[Parsed]) -> None:
        """Stage what the ordered parse gave, in order: full batches of
        columns, and pieces it declined (decoded here by the general path)."""
        for p in parsed:
            if isinstance(p, bytes):
                self._decode(p, native=False)
            elif p.rows:
                first = self.line
                self.line += p.rows       # the reader takes no quotes: a row is a line
                self._add(p.columns(), first)

    def _decode_ahead(self, data: bytes) -> None:
        self.ahead.append((data, compiled_csv.decode_ahead(data, self.options, self.oids, self.naive_utc)))
        self._take_ahead(wait=len(self.ahead) > AHEAD_DEPTH)

    def _header_next(self) -> bool:
        """The header line is still to come: that slab is decoded here (it is skipped there)."""
        return bool(self.options.header) and self.line == 1 and not self.ahead

    def _hand_over(self, whole: bool = False) -> None:
        """Pipelined decoding: the whole rows buffered go to a decode thread
        (the compiled reader releases the GIL), and the slabs parsed by now
        are staged here in order, so a large COPY parses one slab while it
        receives the next and stages the one before.  A slab the reader
        declines is decoded here, in order, by the general path, which words
        PostgreSQL's error for a bad row and numbers its line.  ``whole``: at
        CopyDone, all that is buffered (ended by a newline) is the last slab."""
        cut = len(self.buf) if whole else copyformat.complete_length(self.buf, self.options)
        if cut:
            with memoryview(self.buf) as mv:
                data = bytes(mv[:cut])
            del self.buf[:cut]
            data = self._until_marker(data)
            if data:
                self._decode_ahead(data)
                return
        self._take_ahead(wait=len(self.ahead) > AHEAD_DEPTH)

    def _until_marker(self, data: bytes) -> bytes:
        """``data`` up to an end-of-data marker line; after one, the rest of
        the COPY is ignored, as PostgreSQL does (slabs are cut before it is seen)."""
        kept = copyformat.strip_end_marker(data)
        if len(kept) < len(data):
            self.ended = True
            self.buf.clear()
        return kept

    def _take_ahead(self, wait: bool) -> None:
        """Stage the slabs parsed ahead, oldest first: all of them (``wait``:
        the oldest at least), else those done."""
        while self.ahead and (wait or self.ahead[0][1].done()):
            data, fut = self.ahead.popleft()
            try:
                cols = fut.result()
            except Exception:  # noqa: BLE001 - as _native_reader: the general decoder is exact anyway
                cols = None
            if cols is None:
                self._decode(data, native=False)
            elif len(cols[0][0]):
                first = self.line
                self.line += len(cols[0][0])       # the reader takes no quotes: a row is a line
                self._add(cols, first)
            wait = wait and len(self.ahead) > AHEAD_DEPTH

    def _take_all(self) -> None:
        while self.ahead:
            self._take_ahead(wait=True)

    def _decode_pending(self) -> None:
        """Decode the whole rows buffered so far: one copy out of the buffer,
        and only the unfinished last row stays (moved to its front)."""
        if self.binary is not None:
            self.binary.feed(bytes(self.buf))
            self.buf.clear()
            cols = self.binary.take_columns()
            if cols and len(cols[0][0]):
                self._add(cols)
            return
        cut = copyformat.complete_length(self.buf, self.options)
        if cut:
            with memoryview(self.buf) as mv:
                complete = bytes(mv[:cut])
            del self.buf[:cut]
            self._decode(self._until_marker(complete))

    def _decode(self, data: bytes, native: bool = True) -> None:
        header = self.options.header and self.line == 1
        cols = copyformat.decode_copy(data, self.options, self.oids, first_line=self.line, column_names=self.names,
                                      tz=self.tz, native=self.native if native else None)
        first = self.line + (1 if header else 0)
        self.line += self._lines_in(data, cols, header)
        if cols and len(cols[0][0]):
            self._add(cols, first)

    def _lines_in(self, data: bytes, cols, header: bool) -> int:
        """Lines the chunk spanned.  Without a quote character no value can hold
        a raw newline, so that is the decoded rows (plus a skipped header):
        counting newlines in an 8 MiB slab cost as much as a fifth of decoding it."""
        if cols and (self.options.format == "text" or self.options.quote.encode() not in data):
            return len(cols[0][0]) + (1 if header else 0)
        return data.count(b"\n")

    def _add(self, cols, first_line: int = 1) -> None:
        b = Batch([Col(d, m, o) for (d, m), o in zip(cols, self.oids)], len(cols[0][0]))
        self.rows += b.n
        if self.rel.kind == "f":
            self._stage_stream_slab(b, first_line)
            return
        self.batches.append(b)

    def _full_rows(self, b: Batch, first_line: int) -> Batch:
        """The table's full rows; a failed assignment cast names its line, column and value."""
        try:
            return build_rows(self.session, self.ctx, self.rel, self.targets, b)
        except PgError as e:
            raise self._context(locate_cast_error(e, self.targets, b, first_line)) from None

    def _stage_stream_slab(self, b: Batch, first_line: int) -> None:
        """Validate a stream slab now, encode its WAL record, and park it until CopyDone.

        Delivery stays all-or-nothing, but memory does not grow with the COPY:
        past SPILL_BYTES the records go to a temporary file in the data
        directory and are read back one by one at CopyDone.  Encoding here,
        while the client is still sending, leaves CopyDone only the writes
        (and the decoding of records for views or a listening scan, if any).
        A COPY under a Spark batch key keeps batches: its key goes into the
        record of the insert that uses it (StreamManager.insert)."""

        full = self._full_rows(b, first_line)
        check_constraints(self.session, self.ctx, self.rel, full)
        if self.keyed:              # StreamManager.insert drops the late rows of the one batch
            self.batches.append(full)
            return
        full = self.session.engine.streams.admit(self.rel, full, self.advance)    # rows later than the watermark
        if full.n == 0:
            return
        self.stream_rows += full.n
        if self.deltas:
            assert self.staging is not None
            self.staging.add(full, self.ctx)
            self.kept.append(full)
            self.staged_bytes += sum(c.data.nbytes for c in full.cols)
            if self.staged_bytes > SPILL_BYTES:     # too much to hold: logged as rows, spilled as before
                self._log_rows()
            return
        self._encode_slab(full)

    def _log_rows(self) -> None:
        """A COPY begun to be logged as deltas goes on as rows: the slabs
        kept so far are encoded as its first parts."""
        self.deltas = False
        kept, self.kept, self.staged_bytes = self.kept, [], 0
        staging, self.staging = self.staging, None      # staged already: not again
        for b in kept:
            self._encode_slab(b)
        self.staging = staging

    def _part_body(self, b: Batch) -> "list[bytes | memoryview]":
        return wal.dumps_parts([StreamPart(self.rel.oid, self.group, [(c.data, c.nulls) for c in b.cols],
                                           stream_targets.logged(self.sent_to))])

    def _encode_slab(self, full: Batch) -> None:
        body = self._part_body(full)
        size = wal.body_len(body)
        crc = compiled_crc32.crc32
        # from CopyDone on (log_ahead) the decode threads are free: the CRC is
        # theirs while the views stage the slab (and only then is it written:
        # replay stages a part before its commit, so a part no view could take
        # must never be logged)
        ahead = size >= AHEAD_CRC or self.log_ahead is not None
        head = compiled_csv.run_ahead(wal.frame, body, crc) if ahead else wal.frame(body, crc)
        if self.staging is not None:
            self.staging.add(full, self.ctx)
        if self.spill is None and self.staged_bytes + size <= SPILL_BYTES:
            self.records.append((head, body, full.n))      # the body's arrays are ``full``'s, kept with it
            if self.log_ahead is not None:
                self.log_ahead.write([(head, body)])
            self.kept.append(full)
            self.staged_bytes += size
            return
        if self.spill is None:
            tmp = self.session.db.dir / "tmp"
            tmp.mkdir(exist_ok=True)
            self.spill = tempfile.TemporaryFile(dir=tmp)
        self.spill.write(full.n.to_bytes(8, "little"))
        self.spill.write(head if isinstance(head, bytes) else head.result())
        for part in body:
            self.spill.write(part)
        self.spilled += 1

    def _flush_tail(self) -> None:
        if self.binary is not None:
            self.binary.feed(bytes(self.buf))
            self.buf.clear()
            self.binary.finish()
            cols = self.binary.take_columns()
            if cols and len(cols[0][0]):
                self._add(cols)
            return
        slab = self._slab_to_pieces()
        if self.pieces and (self.parse is not None or self.pending >= compiled_csv.MIN_BYTES):
            # plain data: the rest goes to the ordered parse (a small COPY, the general path)
            last, self.pieces, self.pending = self.pieces, [], 0
            if bytes(memoryview(last[-1])[-1:]) != b"\n":
                last.append(b"\n")
            self._stage_parsed(self._plain_parse().last(last))
            self.parse = None
            if slab is not None:
                give_slab(slab)
        elif self.parse is not None:
            self._stage_parsed(self.parse.finish())
            self.parse = None
        elif self.pieces:
            self.buf += b"".join(self.pieces)
            self.pieces, self.pending = [], 0
        if self.native is not None and len(self.buf) >= compiled_csv.MIN_BYTES and not self._header_next():
            # the last slab is parsed there too, while the ones before it are staged here
            if not self.buf.endswith(b"\n"):
                self.buf += b"\n"
            self._hand_over(whole=True)
        self._take_all()
        self._decode_pending()
        if self.buf:
            tail = bytes(self.buf) if self.buf.endswith(b"\n") else bytes(self.buf) + b"\n"
            self.buf = bytearray()
            self._decode(tail)

    def finish(self) -> str:
        """Called by the server at CopyDone: apply and commit (implicit txn)."""

        session = self.session
        # inside an extended-protocol block the commit waits for Sync
        implicit = session.txn is None and self.ctx.txn is not getattr(session, "extended_txn", None)
        try:
            tag = self.finish_in_txn()
        except BaseException:
            if implicit:
                self.ctx.txn.rollback()
            else:
                session.failed = True
            raise
        if implicit:
            self.ctx.txn.commit(sync=session.info.sync_commit)
        return tag

    def finish_in_txn(self) -> str:
        if self.rel.kind == "f" and not self.keyed and self.spill is None and not self.deltas:
            # from CopyDone on, each part is logged as soon as it is staged
            self.log_ahead = LogAhead(self.session.db)
            self.log_ahead.write([(head, body) for head, body, _n in self.records])
        try:
            self._flush_tail()
        except BaseException as e:
            self._give_up()
            if isinstance(e, PgError):
                raise self._context(e) from e
            raise
        if self.rel.kind == "f":
            # every slab was decoded and validated; now every view stages all
            # of them, and only then is the COPY logged (one fsync) and delivered
            streams = self.session.engine.streams
            try:
                self._deliver_stream(streams)
            except BaseException:
                self._give_up()
                raise
            finally:
                self._close_spill()
                self.records, self.kept, self.staging = [], [], None
            release_memory(self.rows)
            return f"COPY {self.rows}"
        if not self.batches:
            return "COPY 0"
        total = sum(b.n for b in self.batches)
        src = Batch.concat(self.batches, self.oids)
        self.batches = []
        first = 2 if self.options.header and self.format == 0 else 1
        insert_batch(self.session, self.ctx, self.rel, self._full_rows(src, first))
        release_memory(total)
        return f"COPY {total}"

    def _give_up(self) -> None:
        if self.log_ahead is not None:
            self.log_ahead.give_up()
            self.log_ahead = None

    def _deliver_stream(self, streams) -> None:
        if self.keyed:
            # the key names the whole COPY: one batch, one record
            staged, self.batches = self.batches, []
            if staged:
                streams.insert(self.ctx, self.rel, Batch.concat(staged, [c.type_oid for c in self.rel.live_columns]))
        elif self.deltas and (self.stream_rows or self.advance.moves()):
            streams.insert_copy_delta(self.ctx, self.rel, self.group, self.kept, self.stream_rows, self.advance,
                                      self.sent_to, self.staging, self._kept_parts)
        elif self.stream_rows or self.advance.moves():
            streams.insert_parts(self.ctx, self.rel, self.group, self._parts, self.stream_rows, self.advance,
                                 self.sent_to, kept=self.kept, staging=self.staging,
                                 ahead=self.log_ahead.done() if self.log_ahead is not None else None)

    def _parts(self):
        """(WAL header, body, rows) of every staged slab, in order; read
        twice (the views stage them, then they are logged)."""
        for head, body, n in self.records:
            yield head if isinstance(head, bytes) else head.result(), body, n
        f = self.spill
        if f is None:
            return
        f.seek(0)
        for _ in range(self.spilled):
            n = int.from_bytes(f.read(8), "little")
            head = f.read(wal.HEADER_SIZE)
            yield head, f.read(wal.body_size(head)), n

    def _kept_parts(self):
        """(WAL header, body, rows) of every slab, encoded now (a COPY logged
        as rows after all)."""
        for b in self.kept:
            body = self._part_body(b)
            yield wal.frame(body, compiled_crc32.crc32), body, b.n

    def _close_spill(self) -> None:
        if self.spill is not None:
            self.spill.close()
            self.spill = None

    def abort(self, reason: str) -> None:
        self._close_spill()
        self.batches = []
        self.records, self.kept, self.staging = [], [], None
        self.ahead.clear()          # the decode threads finish their slabs; nothing takes them
        self.pieces, self.slab, self.fill = [], None, 0
        if self.parse is not None:
            self.parse.close()
            self.parse = None
        self.buf = bytearray()
        if self.session.txn is None:
            self.ctx.txn.rollback()
        else:
            self.session.failed = True


class LogAhead:
    """From CopyDone on, a COPY's parts are written to the WAL on a decode
    thread as each is staged, while this thread parses and stages the last
    slab(s); the checkpoint lock taken for the first is held until
    ``Database.ingest_parts`` writes the rest and the commit, or
    :meth:`give_up`.  Taken only if free (``Database.hold_for_parts``):
    otherwise every part is written at the commit, as before."""

    def __init__(self, db) -> None:
        self.db = db
        self.held: Any = None     # Database.PartsAhead once the lock is taken
        self.chain: Future | None = None        # the last write, in order after the ones before
        self.off = False

    def write(self, records: list) -> None:
        """Log these (WAL header or its future, body) parts after the ones before."""
        if self.off or not records:
            return
        if self.held is None:
            self.held = self.db.hold_for_parts()
            if self.held is None:
                self.off = True
                return
        self.chain = compiled_csv.run_ahead(self._write, self.chain, records)

    def _write(self, before: Future | None, records: list) -> None:
        if before is not None:
            before.result()       # in order; a failed write released the lock and fails this one too
        if self.held is not None and self.held.held:
            self.held.write([(h if isinstance(h, bytes) else h.result(), b) for h, b in records])

    def done(self):
        """The lock's hold once every part given is written (raises a failed write's error)."""
        if self.chain is not None:
            self.chain.result()
        return self.held

    def give_up(self) -> None:
        """The COPY failed: the lock is released (its parts, without a commit, are dropped at replay)."""
        if self.chain is not None:
            try:
                self.chain.result()
            except Exception:  # noqa: BLE001 - that write released the lock itself
                pass
        if self.held is not None:
            self.held.release()

