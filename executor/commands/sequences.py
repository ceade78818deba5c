"""ALTER SEQUENCE [IF EXISTS] name option ...

Why: pg_dump writes ``ALTER SEQUENCE s OWNED BY t.c`` for every serial
column, so a dump of such a table restores only if this is understood.  The
statement is read by PostgreSQL 15's own grammar (pglast), and its options are
checked in the order of PostgreSQL's ``init_params`` and
``process_owned_by``, with their errors.  The sequence's options are a
logged catalog change (a new Relation); a RESTART sets its state when the
transaction commits, as TRUNCATE ... RESTART IDENTITY does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from pglast import ast, parse_sql
from pglast.enums import ObjectType
from pglast.parser import ParseError

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.objects.definition_text import quote_ident
from splitstream.catalog.objects.model import Relation
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    DUPLICATE_TABLE, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, INVALID_SCHEMA_NAME, INVALID_TEXT_REPRESENTATION,
    NUMERIC_VALUE_OUT_OF_RANGE, OBJECT_NOT_IN_PREREQUISITE_STATE, SYNTAX_ERROR, UNDEFINED_COLUMN, UNDEFINED_OBJECT, UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE, Notice, PgError,
)

from ..api import Result
from ..execution import privileges
from ..sql.planner import Planner
from .base import Stmt

#: the types a sequence may have: (name in PostgreSQL's messages, smallest, largest)
_TYPES = {type_oids.INT2: ("smallint", -2**15, 2**15 - 1), type_oids.INT4: ("integer", -2**31, 2**31 - 1),
          type_oids.INT8: ("bigint", -2**63, 2**63 - 1)}

#: the relation kinds a sequence may be owned by, and PostgreSQL's detail for the others
_OWNER_KINDS = "rfv"
_KIND_DETAIL = {"S": "sequences", "i": "indexes", "m": "materialized views"}


def alter_sequence_statement(text: str) -> Stmt | None:
    """The statement, or None when ``text`` is not ALTER SEQUENCE (PostgreSQL's
    grammar places a syntax error in it)."""
    try:
        stmts = parse_sql(text)
    except ParseError:
        return None
    node = stmts[0].stmt if len(stmts) == 1 else None
    refuse_set_schema(node)
    if isinstance(node, ast.RenameStmt) and node.renameType == ObjectType.OBJECT_SEQUENCE:
        return RenameSequenceStmt(node)
    if not isinstance(node, ast.AlterSeqStmt):
        return None
    return AlterSequenceStmt(node)


@dataclass
class _State:
    """The fields ALTER SEQUENCE may change, as PostgreSQL's init_params sees them."""
    type_oid: int
    start: int
    increment: int
    minvalue: int
    maxvalue: int
    cycle: bool
    last: int
    called: bool


class AlterSequenceStmt(Stmt):
    cacheable = False

    def __init__(self, node: ast.AlterSeqStmt) -> None:
        self.node = node

    def run(self, session, ctx) -> Result:
        found = _sequence(session, ctx, self.node.sequence, self.node.missing_ok)
        if isinstance(found, Result):
            return found
        rel, planner = found
        opts = _options(self.node.options or ())
        db = session.engine.db
        last, called = db.sequences.get(rel.oid, [rel.seq_start, False])
        new = _init_params(rel, opts, _State(rel.seq_type, rel.seq_start, rel.seq_increment, rel.seq_min,
                                             rel.seq_max, rel.seq_cycle, last, called))
        owned_by = rel.owned_by
        if "owned_by" in opts:
            owned_by = _owned_by(ctx, planner, rel, opts["owned_by"].arg, session.info.database or "postgres")
        ctx.txn.apply(("rel", rel.with_(seq_type=new.type_oid, seq_start=new.start, seq_increment=new.increment,
                                        seq_min=new.minvalue, seq_max=new.maxvalue, seq_cycle=new.cycle,
                                        owned_by=owned_by)))
        restart = "restart" in opts
        ctx.txn.after_commit.append(lambda: _keep_state(db, rel, new.last if restart else None))
        return Result(tag="ALTER SEQUENCE")


def _sequence(session, ctx, rv: ast.RangeVar, missing_ok: bool) -> tuple[Relation, Planner] | Result:
    """The sequence an ALTER SEQUENCE names, which the current role owns (and
    a planner of the session's names), or IF EXISTS's answer when it is missing."""
    st = ctx.txn.for_write(ctx.check_cancel)
    planner = Planner(session.engine, ctx.state, session=session.info)
    rel = planner.lookup_relation(rv.relname, rv.schemaname)
    if rel is None:
        if missing_ok:
            return Result(tag="ALTER SEQUENCE", notices=[Notice(f'relation "{rv.relname}" does not exist, skipping')])
        raise PgError(UNDEFINED_TABLE, f'relation "{_rv_name(rv)}" does not exist')
    privileges.require_relation_owner(st, session.info, rel)
    if rel.kind != "S":
        raise PgError(WRONG_OBJECT_TYPE, f'"{rel.name}" is not a sequence')
    return rel, planner


def _keep_state(db, rel: Relation, restart: int | None) -> None:
    """At commit: a RESTART's value is the next nextval's; a sequence never
    used keeps the value it was created to start at (START changes only what
    a later RESTART goes back to)."""
    if restart is not None:
        db.setval(rel.oid, restart, called=False)
    elif rel.oid not in db.sequences:
        db.setval(rel.oid, rel.seq_start, called=False)


def _rv_name(rv: ast.RangeVar) -> str:
    return f"{rv.schemaname}.{rv.relname}" if rv.schemaname else rv.relname


def _options(defs) -> dict[str, ast.DefElem]:
    """The options by name; one given twice is PostgreSQL's error."""
    out: dict[str, ast.DefElem] = {}
    for d in defs:
        if d.defname in out:
            raise PgError(SYNTAX_ERROR, "conflicting or redundant options")
        if d.defname == "sequence_name":
            raise PgError(SYNTAX_ERROR, "invalid sequence option SEQUENCE NAME")
        if d.defname == "cache":
            _cache(d)
        out[d.defname] = d
    return out


def _cache(d: ast.DefElem) -> None:
    """CACHE: a sequence here hands out one value at a time (cache 1)."""
    n = _int64(d)
    if n <= 0:
        raise PgError(INVALID_PARAMETER_VALUE, f"CACHE ({n}) must be greater than zero")
    if n != 1:
        raise PgError(FEATURE_NOT_SUPPORTED, f"CACHE {n} is not supported",
                      hint="splitstream's sequences hand out one value at a time; use CACHE 1.")


def _int64(d: ast.DefElem) -> int:
    """defGetInt64: an integer, or a numeric literal read as bigint."""
    arg = d.arg
    if isinstance(arg, ast.Integer):
        return int(arg.ival)
    text = str(arg.fval) if isinstance(arg, ast.Float) else str(arg)
    try:
        v = int(text)
    except ValueError:
        raise PgError(INVALID_TEXT_REPRESENTATION, f'invalid input syntax for type bigint: "{text}"') from None
    if not -2**63 <= v < 2**63:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f'value "{text}" is out of range for type bigint')
    return v


def _as_type(d: ast.DefElem) -> int:
    names = [n.sval for n in d.arg.names]
    oid = sqltypes.oid_by_name(names[-1]) if names[:-1] in ([], ["pg_catalog"]) else None
    if oid is None:
        raise PgError(UNDEFINED_OBJECT, f'type "{".".join(names)}" does not exist')
    if oid not in _TYPES or d.arg.arrayBounds:
        raise PgError(INVALID_PARAMETER_VALUE, "sequence type must be smallint, integer, or bigint")
    return oid


def _init_params(rel: Relation, opts: dict[str, ast.DefElem], s: _State) -> _State:
    """PostgreSQL 15's init_params for an existing sequence: the options
    applied, then checked against each other and the current value."""
    reset_max = reset_min = False
    if "as" in opts:
        new_type = _as_type(opts["as"])
        if new_type != s.type_oid:
            _, lo, hi = _TYPES[s.type_oid]
            reset_max, reset_min = s.maxvalue == hi, s.minvalue == lo
            s.type_oid = new_type
    if "increment" in opts:
        s.increment = _int64(opts["increment"])
        if s.increment == 0:
            raise PgError(INVALID_PARAMETER_VALUE, "INCREMENT must not be zero")
    if "cycle" in opts:
        s.cycle = bool(opts["cycle"].arg.boolval)
    tname, lo, hi = _TYPES[s.type_oid]
    _bounds(opts, s, reset_max, reset_min, lo, hi)
    for word, v in (("MAXVALUE", s.maxvalue), ("MINVALUE", s.minvalue)):
        if not lo <= v <= hi:
            raise PgError(INVALID_PARAMETER_VALUE, f"{word} ({v}) is out of range for sequence data type {tname}")
    if s.minvalue >= s.maxvalue:
        raise PgError(INVALID_PARAMETER_VALUE, f"MINVALUE ({s.minvalue}) must be less than MAXVALUE ({s.maxvalue})")
    if "start" in opts:
        s.start = _int64(opts["start"])
    _in_range("START value", s.start, s)
    if "restart" in opts:
        d = opts["restart"]
        s.last, s.called = (_int64(d) if d.arg is not None else s.start), False
    _in_range("RESTART value", s.last, s)
    return s


def _bounds(opts: dict[str, ast.DefElem], s: _State, reset_max: bool, reset_min: bool, lo: int, hi: int) -> None:
    """MAXVALUE and MINVALUE: given, or (NO ..., or a type change that moves a
    bound that was its old type's) the default for the direction."""
    mx, mn = opts.get("maxvalue"), opts.get("minvalue")
    if mx is not None and mx.arg is not None:
        s.maxvalue = _int64(mx)
    elif mx is not None or reset_max:
        s.maxvalue = hi if s.increment > 0 or reset_max else -1
    if mn is not None and mn.arg is not None:
        s.minvalue = _int64(mn)
    elif mn is not None or reset_min:
        s.minvalue = lo if s.increment < 0 or reset_min else 1


def _in_range(what: str, v: int, s: _State) -> None:
    if v < s.minvalue:
        raise PgError(INVALID_PARAMETER_VALUE, f"{what} ({v}) cannot be less than MINVALUE ({s.minvalue})")
    if v > s.maxvalue:
        raise PgError(INVALID_PARAMETER_VALUE, f"{what} ({v}) cannot be greater than MAXVALUE ({s.maxvalue})")


def _owned_by(ctx, planner, seq: Relation, names: Any, database: str) -> tuple[int, str] | None:
    """process_owned_by: NONE, or a column of a table of the sequence's owner
    and schema; an identity column's sequence stays its column's."""
    parts = [n.sval for n in names]
    if len(parts) == 1:
        if parts[0] != "none":
            raise PgError(SYNTAX_ERROR, "invalid OWNED BY option", hint="Specify OWNED BY table.column or OWNED BY NONE.")
        table, column = None, None
    else:
        table, column = _owner_table(ctx, planner, parts[:-1], database), parts[-1]
        if table.owner != seq.owner:
            raise PgError(OBJECT_NOT_IN_PREREQUISITE_STATE, "sequence must have same owner as table it is linked to")
        if table.schema != seq.schema:
            raise PgError(OBJECT_NOT_IN_PREREQUISITE_STATE, "sequence must be in same schema as table it is linked to")
        if table.column(column) is None:
            raise PgError(UNDEFINED_COLUMN, f'column "{column}" of relation "{table.name}" does not exist')
    _refuse_identity_sequence(ctx, seq)
    return (table.oid, column) if table is not None and column is not None else None


def _owner_table(ctx, planner, parts: list[str], database: str) -> Relation:
    """makeRangeVarFromNameList and relation_openrv: [[database.]schema.]table."""
    if len(parts) > 3:
        raise PgError(SYNTAX_ERROR, f"improper relation name (too many dotted names): {'.'.join(parts)}")
    if len(parts) == 3 and parts[0] != database:
        raise PgError(FEATURE_NOT_SUPPORTED, f'cross-database references are not implemented: "{".".join(parts)}"')
    schema = parts[-2] if len(parts) > 1 else None
    if schema is not None and schema not in ctx.txn.state.schemas:
        raise PgError(INVALID_SCHEMA_NAME, f'schema "{schema}" does not exist')
    table = planner.lookup_relation(parts[-1], schema)
    if table is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{".".join(parts)}" does not exist')
    if table.relkind not in _OWNER_KINDS:
        raise PgError(WRONG_OBJECT_TYPE, f'sequence cannot be owned by relation "{table.name}"',
                      detail=f"This operation is not supported for {_KIND_DETAIL.get(table.relkind, 'this kind of relation')}.")
    return table


def _refuse_identity_sequence(ctx, seq: Relation) -> None:
    if seq.owned_by is None:
        return
    table = ctx.txn.state.rels.get(seq.owned_by[0])
    col = table.column(seq.owned_by[1]) if table is not None else None
    if col is not None and col.identity:
        raise PgError(FEATURE_NOT_SUPPORTED, "cannot change ownership of identity sequence",
                      detail=f'Sequence "{seq.name}" is linked to table "{table.name}".')



#: a sequence function's first argument, a sequence named in a string ('s', 'sch.s', '"S"')
_SEQUENCE_CALL = re.compile(r"(?i)\b(?P<fn>nextval|currval|setval)\(\s*'(?P<name>(?:[^']|'')*)'")
_NAME_PART = re.compile(r'"((?:[^"]|"")*)"|([^."]+)')


def _name_parts(text: str) -> list[str]:
    """The dotted parts of a regclass string, as regclass reads them."""
    return [q.replace('""', '"') if q else p.strip().lower() for q, p in _NAME_PART.findall(text.replace("''", "'"))]


def rename_sequence_references(ctx, planner, seq: Relation, new: str) -> None:
    """Column defaults name their sequence in text (nextval('s'::regclass)),
    where PostgreSQL keeps its oid: a renamed sequence is renamed in them, so
    serial and identity columns go on drawing from it."""
    def renamed(m: re.Match) -> str:
        parts = _name_parts(m.group("name"))
        if not parts or parts[-1] != seq.name:
            return m.group(0)
        if len(parts) == 1:
            found = planner.lookup_relation(parts[0], None)
            if found is None or found.oid != seq.oid:
                return m.group(0)
            return f"{m.group('fn')}('{_quoted(new)}'"
        if parts[-2] != seq.schema:
            return m.group(0)
        return f"{m.group('fn')}('{_quoted(seq.schema)}.{_quoted(new)}'"

    for rel in list(ctx.txn.state.rels.values()):
        cols = tuple(replace(c, default=_SEQUENCE_CALL.sub(renamed, c.default)) if c.default else c for c in rel.columns)
        if cols != rel.columns:
            ctx.txn.apply(("rel", rel.with_(columns=cols)))


def _quoted(name: str) -> str:
    """A name as regclass text inside a string literal reads it back."""
    return quote_ident(name).replace("'", "''")


class RenameSequenceStmt(Stmt):
    """ALTER SEQUENCE [IF EXISTS] s RENAME TO n: ALTER TABLE's rename, checked
    as RenameRelation checks it, with the defaults that name it renamed."""
    cacheable = False

    def __init__(self, node: ast.RenameStmt) -> None:
        self.node = node

    def run(self, session, ctx) -> Result:
        found = _sequence(session, ctx, self.node.relation, self.node.missing_ok)
        if isinstance(found, Result):
            return found
        rel, planner = found
        new = self.node.newname
        if ctx.txn.state.lookup(rel.schema, new) is not None:
            raise PgError(DUPLICATE_TABLE, f'relation "{new}" already exists')
        rename_sequence_references(ctx, planner, rel, new)
        ctx.txn.apply(("rel", ctx.txn.state.rels[rel.oid].with_(name=new)))
        return Result(tag="ALTER SEQUENCE")


def refuse_set_schema(node: Any) -> None:
    """ALTER SEQUENCE ... SET SCHEMA: splitstream moves no relation to another schema."""
    if isinstance(node, ast.AlterObjectSchemaStmt):
        raise PgError(FEATURE_NOT_SUPPORTED, "ALTER SEQUENCE ... SET SCHEMA is not supported",
                      hint="Create the sequence in the other schema and setval() it to the old one's value.")
