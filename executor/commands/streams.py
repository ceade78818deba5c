"""Streams: CREATE / ALTER / DROP FOREIGN TABLE on a stream server, CREATE SERVER.
"""
from __future__ import annotations

import re

from sqlglot import exp

from splitstream.catalog.objects.model import ColumnDef, Relation
from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids
from splitstream.protocol.types import decode_text
from splitstream.protocol.errors import (
    DATATYPE_MISMATCH,
    INVALID_PARAMETER_VALUE,
    UNDEFINED_COLUMN,
    DUPLICATE_COLUMN,
    DUPLICATE_OBJECT,
    DUPLICATE_TABLE,
    FEATURE_NOT_SUPPORTED,
    SYNTAX_ERROR,
    UNDEFINED_OBJECT,
    UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
    Notice,
    PgError,
)

from ..api import Result
from ..execution.time_windows import DAY_US
from ..stream.watermark import COLUMN_OPTION, DELAY_OPTION
from ..execution import privileges
from ..sql.dialect import parse_one
from ..sql.planner import Planner
from .base import Stmt
from .drop import drop, drop_word, kind_article
from .names import qual, target_schema
from .tables import alter_table, column_defs

STREAM_SERVERS = ("stream", "pipelinedb")


DEFAULT_STREAM_CAPACITY = 1 << 20


class CreateStreamStmt(Stmt):
    """CREATE FOREIGN TABLE name (cols) SERVER stream [OPTIONS (capacity 'n')]."""

    cacheable = False
    tag = "CREATE FOREIGN TABLE"

    def __init__(self, head: str, cols: str, server: str, options: dict, exists_ok: bool) -> None:
        self.head, self.cols, self.server, self.options, self.exists_ok = head, cols, server, options, exists_ok

    @staticmethod
    def parse(text: str) -> "CreateStreamStmt":
        m = re.match(r"\s*create\s+foreign\s+table\s+(if\s+not\s+exists\s+)?(.+?)\s*\((.*)\)\s*server\s+(\"?[\w]+\"?)\s*(?:options\s*\((.*)\))?\s*;?\s*$",
                     text, re.I | re.S)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error in CREATE FOREIGN TABLE",
                          hint="Write CREATE FOREIGN TABLE name (column type, ...) SERVER stream.")
        opts = {}
        if m.group(5):
            for k, v in re.findall(r"(\w+)\s+'([^']*)'", m.group(5)):
                opts[k.lower()] = v
        server = m.group(4).strip('"')
        if not (m.group(4).startswith('"')):
            server = server.lower()
        cols, mark = _split_watermark(m.group(3))
        if mark is not None:
            opts.update(mark)
        return CreateStreamStmt(m.group(2).strip(), cols, server, opts, bool(m.group(1)))

    def run(self, session, ctx):
        if self.server not in STREAM_SERVERS:
            raise PgError(UNDEFINED_OBJECT, f'server "{self.server}" does not exist',
                          hint="Streams are foreign tables on the reserved server \"stream\" (or \"pipelinedb\").")
        tree = parse_one(f"CREATE TABLE {self.head} ({self.cols})")
        planner = Planner(session.engine, ctx.state, session=session.info)
        st = ctx.txn.for_write(ctx.check_cancel)
        schema, name = qual(tree.this.this)
        schema = target_schema(planner, schema, st)
        if st.lookup(schema, name) is not None:
            if self.exists_ok:
                return Result(tag=self.tag, notices=[Notice(f'relation "{name}" already exists, skipping', "42P07")])
            raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        cols, cons, seqs = column_defs(planner, [e for e in tree.this.expressions if isinstance(e, exp.ColumnDef)], name)
        if any(c.kind in ("p", "u", "f") for c in cons) or seqs:
            raise PgError(FEATURE_NOT_SUPPORTED, "streams do not support keys, unique constraints or serial columns",
                          hint="Declare plain columns on the stream; put keys on tables.")
        if any(c.name == "arrival_timestamp" for c in cols):
            raise PgError(DUPLICATE_COLUMN, 'column "arrival_timestamp" is implicit on streams')
        cap = int(self.options.get("capacity", DEFAULT_STREAM_CAPACITY))
        if cap <= 0:
            raise PgError("22023", "capacity must be a positive number of rows")
        _check_watermark_column(cols, self.options)
        cols = tuple(cols) + (ColumnDef("arrival_timestamp", type_oids.TIMESTAMPTZ, hidden=True, attnum=len(cols) + 1),)
        rel = Relation(ctx.txn.new_oid(), schema, name, "f", cols, tuple(c for c in cons if c.kind == "c"),
                       owner=privileges.current_role(st, session.info).oid, server=self.server, capacity=cap, options=tuple(sorted(self.options.items())))
        ctx.txn.apply(("rel", rel))
        return Result(tag=self.tag)


_WATERMARK = re.compile(r",\s*watermark\s+for\s+(\"[^\"]+\"|\w+)\s+as\s+", re.I)
_WATERMARK_EXPR = re.compile(r"^\s*(\"[^\"]+\"|\w+)\s*(?:-\s*(?:interval\s*'([^']*)'|'([^']*)'\s*::\s*interval))?\s*$",
                             re.I)


def _split_watermark(cols: str) -> tuple[str, dict[str, str] | None]:
    """RisingWave's ``WATERMARK FOR ts AS ts - INTERVAL 'd'`` among the
    column definitions: the definitions without it, and the options the
    stream keeps it under (``watermark.COLUMN_OPTION`` / ``DELAY_OPTION``)."""
    m = _WATERMARK.search(cols)
    if m is None:
        return cols, None
    rest = cols[m.end():]
    end = rest.find(",")
    body, tail = (rest, "") if end < 0 else (rest[:end], rest[end:])
    e = _WATERMARK_EXPR.match(body)
    column = _name(m.group(1))
    if e is None or _name(e.group(1)) != column:
        raise PgError(FEATURE_NOT_SUPPORTED, f"unsupported watermark expression: {body.strip()}",
                      hint=f"Write WATERMARK FOR {column} AS {column} - INTERVAL '5 seconds' (or AS {column}).")
    text = e.group(2) if e.group(2) is not None else e.group(3)
    delay = 0
    if text is not None:
        iv = decode_text(type_oids.INTERVAL, text)         # 22007 when malformed
        if iv.months:
            raise PgError(INVALID_PARAMETER_VALUE, "a watermark delay cannot contain months or years",
                          hint="Give the delay in days, hours, minutes or seconds.")
        delay = iv.days * DAY_US + iv.microseconds
        if delay < 0:
            raise PgError(INVALID_PARAMETER_VALUE, "a watermark delay cannot be negative",
                          hint=f"Write WATERMARK FOR {column} AS {column} - INTERVAL '5 seconds'.")
    return cols[:m.start()] + tail, {COLUMN_OPTION: column, DELAY_OPTION: str(delay)}


def _name(text: str) -> str:
    return text[1:-1] if text.startswith('"') else text.lower()


def _check_watermark_column(cols, options: dict) -> None:
    name = options.get(COLUMN_OPTION)
    if name is None:
        return
    col = next((c for c in cols if c.name == name), None)
    if col is None:
        raise PgError(UNDEFINED_COLUMN, f'column "{name}" does not exist',
                      hint="WATERMARK FOR names a column of the stream.")
    if col.type_oid not in (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
        raise PgError(DATATYPE_MISMATCH, f'watermark column "{name}" must be of type timestamp or timestamptz, '
                                         f"not {sqltypes.format_type(col.type_oid)}",
                      hint="Declare the event time as timestamptz.")


def create_server(text: str) -> Stmt:
    m = re.match(r"\s*create\s+server\s+(if\s+not\s+exists\s+)?(\"?\w+\"?)", text, re.I)
    name = m.group(2).strip('"').lower() if m else ""

    class _S(Stmt):
        def run(self, session, ctx):
            if name in STREAM_SERVERS:
                raise PgError(DUPLICATE_OBJECT, f'server "{name}" already exists',
                              hint=f'The server name "{name}" is reserved for streams: create streams with CREATE FOREIGN TABLE ... SERVER {name}.')
            raise PgError(FEATURE_NOT_SUPPORTED, "foreign servers other than the stream server are not supported")

    return _S()


def foreign_table_ddl(text: str, words: list[str]) -> Stmt:
    if words[0] == "DROP":
        rewritten = re.sub(r"(?i)^\s*drop\s+foreign\s+table", "DROP TABLE", text)
        tree = parse_one(rewritten)

        class _D(Stmt):
            cacheable = False

            def run(self, session, ctx):
                pl = Planner(session.engine, ctx.state, session=session.info)
                for t in tree.args.get("tables") or tree.expressions or [tree.this]:
                    schema, name = qual(t)
                    rel = pl.lookup_relation(name, schema)
                    if rel is not None and rel.kind != "f":
                        raise PgError(WRONG_OBJECT_TYPE, f'"{name}" is not a foreign table', hint=f"Use DROP {drop_word(rel)} to remove {kind_article(rel)}.")
                    if rel is None and not tree.args.get("exists"):
                        raise PgError(UNDEFINED_TABLE, f'foreign table "{name}" does not exist')
                tree.set("kind", "FOREIGN TABLE")
                notices = drop(session, ctx, pl, tree, text)
                return Result(tag="DROP FOREIGN TABLE", notices=notices)

        return _D()
    rewritten = re.sub(r"(?i)^\s*alter\s+foreign\s+table", "ALTER TABLE", text)
    tree = parse_one(rewritten)

    class _A(Stmt):
        cacheable = False

        def run(self, session, ctx):
            pl = Planner(session.engine, ctx.state, session=session.info)
            if not isinstance(tree, exp.Alter):       # a form sqlglot does not read (kept as a Command)
                raise PgError(FEATURE_NOT_SUPPORTED, "only ADD COLUMN, RENAME and OWNER TO are supported on streams")
            for action in tree.args.get("actions") or []:
                if not isinstance(action, (exp.ColumnDef, exp.AlterRename, exp.RenameColumn)):
                    raise PgError(FEATURE_NOT_SUPPORTED, "only ADD COLUMN and RENAME are supported on streams")
            return Result(tag="ALTER FOREIGN TABLE", notices=alter_table(session, ctx, pl, tree, text))

    return _A()
