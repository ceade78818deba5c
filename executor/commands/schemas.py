"""CREATE SCHEMA, CREATE SEQUENCE, COMMENT ON and CHECKPOINT: the small commands
with no family of their own.
"""
from __future__ import annotations

import re
from dataclasses import replace

from sqlglot import exp

from splitstream.catalog.objects import predefined_roles
from splitstream.catalog.objects.model import Relation, Schema
from splitstream.protocol.errors import (DUPLICATE_SCHEMA, DUPLICATE_TABLE, FEATURE_NOT_SUPPORTED, INVALID_SCHEMA_NAME,
                                         UNDEFINED_TABLE, Notice, PgError)

from ..api import Result
from ..sql.binder import ident
from ..execution import privileges
from ..sql.dialect import DIALECT
from .base import Stmt
from .names import qual, target_schema


def create_schema(session, ctx, planner, tree, text):
    t = tree.this
    name = ident(t.args.get("db")) if t.args.get("db") else ident(t.this)
    st = ctx.txn.for_write(ctx.check_cancel)
    me = privileges.current_role(st, session.info)
    privileges.check_database(st, session.info, "C")
    if name in st.schemas:
        if tree.args.get("exists"):
            return [Notice(f'schema "{name}" already exists, skipping', "42P06")]
        raise PgError(DUPLICATE_SCHEMA, f'schema "{name}" already exists')
    ctx.txn.apply(("schema", Schema(ctx.txn.new_oid(), name, owner=me.oid)))
    return []


def create_sequence(session, ctx, planner, tree, text):
    schema, name = qual(tree.this)
    st = ctx.txn.for_write(ctx.check_cancel)
    schema = target_schema(planner, schema, st)
    if st.lookup(schema, name) is not None:
        if tree.args.get("exists"):
            return [Notice(f'relation "{name}" already exists, skipping', "42P07")]
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
    owner = privileges.current_role(st, session.info).oid
    ctx.txn.apply(("rel", Relation(ctx.txn.new_oid(), schema, name, "S", owner=owner,
                                   **sequence_fields(tree.args.get("properties")))))
    return []


def sequence_fields(props: exp.Properties | None, type_max: int = 2**63 - 1) -> dict:
    """A sequence's Relation fields from CREATE SEQUENCE's options (sqlglot's
    SequenceProperties)."""
    node = next((p for p in (props.expressions if props is not None else ()) if isinstance(p, exp.SequenceProperties)),
                None)
    return sequence_option_fields(node, type_max)


def sequence_option_fields(node: exp.Expression | None, type_max: int = 2**63 - 1) -> dict:
    """A sequence's Relation fields from the options on ``node`` (CREATE
    SEQUENCE's SequenceProperties, or an identity column's GENERATED ... AS
    IDENTITY (...)): PostgreSQL's defaults for an ascending or descending
    one, the upper bound of an ascending one that of its type."""
    kw: dict = {}
    if node is not None:
        for k in ("start", "increment", "minvalue", "maxvalue"):
            v = node.args.get(k)
            if v is not None:
                kw[k] = int(exp.Neg(this=v.this).sql() if isinstance(v, exp.Neg) else v.sql())
        if node.args.get("cycle"):
            kw["cycle"] = True
    inc = kw.get("increment", 1)
    mn = kw.get("minvalue", 1 if inc > 0 else -(type_max + 1))
    mx = kw.get("maxvalue", type_max if inc > 0 else -1)
    return dict(seq_start=kw.get("start", mn if inc > 0 else mx), seq_increment=inc, seq_min=mn, seq_max=mx,
                seq_cycle=kw.get("cycle", False))


#: the objects COMMENT ON keeps a comment for (pg_description, obj_description)
_COMMENTED = frozenset({"table", "view", "materialized view", "foreign table", "sequence", "index", "column"})


_ON_FOREIGN_TABLE = re.compile(r"\s*comment\s+on\s+foreign\s+table\b", re.I)


def foreign_table_comment(text: str, words: list[str]) -> str:
    """COMMENT ON FOREIGN TABLE (a stream), which sqlglot does not parse: the
    same statement as COMMENT ON TABLE, which finds any relation by name."""
    if words[:2] != ["COMMENT", "ON"]:
        return text
    m = _ON_FOREIGN_TABLE.match(text)
    return "COMMENT ON TABLE" + text[m.end():] if m else text


#: the dotted parts of a column's name (a quoted part may hold dots)
_NAME_PART = re.compile(r'"(?:[^"]|"")*"|[^."]+')


def comment(session, ctx, planner, tree, text):
    kind = str(tree.args.get("kind")).lower()
    value = tree.expression.this if isinstance(tree.expression, exp.Literal) else None
    ctx.txn.for_write(ctx.check_cancel)
    target = tree.this
    if kind == "column":
        parts = [p[1:-1].replace('""', '"') if p.startswith('"') else p.lower()
                 for p in _NAME_PART.findall(target.sql(DIALECT))]
        tname, cname = parts[-2], parts[-1]
        rel = planner.lookup_relation(tname, parts[-3] if len(parts) > 2 else None)   # pg_dump: schema.table.column
        if rel is None:
            raise PgError(UNDEFINED_TABLE, f'relation "{tname}" does not exist')
        privileges.require_relation_owner(ctx.state, session.info, rel)
        cc = tuple((k, v) for k, v in rel.column_comments if k != cname) + (((cname, value),) if value is not None else ())
        ctx.txn.apply(("rel", rel.with_(column_comments=cc)))
        return []
    if kind == "schema":
        return _comment_on_schema(session, ctx, ident(target.this if isinstance(target, exp.Table) else target), value)
    if kind not in _COMMENTED:
        raise PgError(FEATURE_NOT_SUPPORTED, f"COMMENT ON {kind.upper()} is not supported",
                      hint="Comments are kept on tables, views, sequences, indexes and columns only.")
    schema, name = qual(target) if isinstance(target, exp.Table) else (None, ident(target))
    rel = planner.lookup_relation(name, schema)
    if rel is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
    privileges.require_relation_owner(ctx.state, session.info, rel)
    ctx.txn.apply(("rel", rel.with_(comment=value)))
    return []


def _comment_on_schema(session, ctx, name: str, value: str | None) -> list:
    """COMMENT ON SCHEMA: obj_description(oid, 'pg_namespace'), psql's \\dn+."""
    sch = ctx.txn.state.schemas.get(name)
    if sch is None:
        raise PgError(INVALID_SCHEMA_NAME, f'schema "{name}" does not exist')
    privileges.require_owner(ctx.state, session.info, sch.owner, "schema", name)
    ctx.txn.apply(("schema", replace(sch, comment=value)))
    return []


class CheckpointStmt(Stmt):
    def run(self, session, ctx):
        privileges.require_predefined(ctx.state, session.info, predefined_roles.PG_CHECKPOINT,
                                      "must be superuser or have privileges of pg_checkpoint to do CHECKPOINT")
        session.db.checkpoint()
        return Result(tag="CHECKPOINT")
