"""ALTER TABLE ... ALTER [COLUMN] c ADD GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(options)].

Why: pg_dump writes an identity column as a NOT NULL column in CREATE TABLE
followed by this statement, naming the sequence and its options, so a dump
restores only if it is understood.  It makes what CREATE TABLE's identity
column makes (tables.column_defs): a sequence owned by the column, of the
column's type, and the column's identity mark and nextval default; checked in
ATExecAddIdentity's order, with its errors.
"""
from __future__ import annotations

import re
from dataclasses import replace

import sqlglot
from sqlglot import exp

from splitstream.catalog.objects.model import Relation
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    DUPLICATE_TABLE, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, OBJECT_NOT_IN_PREREQUISITE_STATE,
    SYNTAX_ERROR, UNDEFINED_COLUMN, UNDEFINED_TABLE, WRONG_OBJECT_TYPE, PgError,
)

from ..api import Result
from ..execution import privileges
from ..sql.binder import ident
from ..sql.dialect import DIALECT
from ..sql.planner import Planner
from .base import Stmt
from .names import qual
from .schemas import sequence_fields

_NAME = r'(?:"(?:[^"]|"")+"|[\w$]+)'
_ADD_IDENTITY = re.compile(
    rf"(?is)^\s*alter\s+table\s+(?P<exists>if\s+exists\s+)?(?:only\s+)?(?P<table>{_NAME}(?:\s*\.\s*{_NAME})?)\s+"
    rf"alter\s+(?:column\s+)?(?P<col>{_NAME})\s+add\s+generated\s+(?P<when>always|by\s+default)\s+as\s+identity"
    rf"\s*(?:\((?P<opts>.*)\))?\s*;?\s*$")
_SEQUENCE_NAME = re.compile(rf"(?is)\bsequence\s+name\s+(?P<name>{_NAME}(?:\s*\.\s*{_NAME})?)")

#: the types an identity column may have, and the largest value of each
_TYPE_MAX = {type_oids.INT2: 2**15 - 1, type_oids.INT4: 2**31 - 1, type_oids.INT8: 2**63 - 1}


def add_identity_statement(text: str) -> Stmt | None:
    """The statement, or None when ``text`` is another ALTER TABLE."""
    m = _ADD_IDENTITY.match(text)
    if m is None:
        return None
    opts = m.group("opts") or ""
    seq_name = _SEQUENCE_NAME.search(opts)
    rest = _SEQUENCE_NAME.sub("", opts)
    if re.search(r"(?i)\bas\s+\w", rest):
        raise PgError(FEATURE_NOT_SUPPORTED, "AS type in an identity column's sequence options is not supported",
                      hint="The sequence takes the column's type; leave AS out.")
    seq_tree = sqlglot.parse_one(f"CREATE SEQUENCE s {rest}", read=DIALECT)
    seq_table = sqlglot.parse_one(f"SELECT 1 FROM {seq_name.group('name')}", read=DIALECT).find(exp.Table) \
        if seq_name else None
    table = sqlglot.parse_one(f"SELECT 1 FROM {m.group('table')}", read=DIALECT).find(exp.Table)
    col = ident(sqlglot.parse_one(m.group("col"), read=DIALECT))
    if table is None:
        raise PgError(SYNTAX_ERROR, f'syntax error at or near "{m.group("table")}"')
    return AddIdentityStmt(table, col, "a" if m.group("when").lower() == "always" else "d",
                           seq_table, seq_tree.args.get("properties"), bool(m.group("exists")))


class AddIdentityStmt(Stmt):
    cacheable = False

    def __init__(self, table: exp.Table, column: str, identity: str, seq_table: exp.Table | None,
                 seq_props: exp.Properties | None, if_exists: bool) -> None:
        self.table, self.column, self.identity = table, column, identity
        self.seq_table, self.seq_props, self.if_exists = seq_table, seq_props, if_exists

    def run(self, session, ctx) -> Result:
        schema, name = qual(self.table)
        st = ctx.txn.for_write(ctx.check_cancel)
        rel = Planner(session.engine, ctx.state, session=session.info).lookup_relation(name, schema)
        if rel is None:
            if self.if_exists:
                return Result(tag="ALTER TABLE")
            raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
        if rel.kind != "r":
            raise PgError(WRONG_OBJECT_TYPE, f'"{rel.name}" is not a table')
        privileges.require_relation_owner(st, session.info, rel)
        col = rel.column(self.column)
        where = f'column "{self.column}" of relation "{rel.name}"'
        if col is None:
            raise PgError(UNDEFINED_COLUMN, f"{where} does not exist")
        if not col.not_null:
            raise PgError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"{where} must be declared NOT NULL before identity can be added")
        if col.identity:
            raise PgError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"{where} is already an identity column")
        if col.default is not None:
            raise PgError(OBJECT_NOT_IN_PREREQUISITE_STATE, f"{where} already has a default value")
        if col.type_oid not in _TYPE_MAX:
            raise PgError(INVALID_PARAMETER_VALUE, "identity column type must be smallint, integer, or bigint")
        seq_schema, seq_name = qual(self.seq_table) if self.seq_table is not None else (None, f"{rel.name}_{col.name}_seq")
        seq_schema = seq_schema or rel.schema
        if st.lookup(seq_schema, seq_name) is not None:
            raise PgError(DUPLICATE_TABLE, f'relation "{seq_name}" already exists')
        ctx.txn.apply(("rel", Relation(ctx.txn.new_oid(), seq_schema, seq_name, "S", owner=rel.owner,
                                       seq_type=col.type_oid, owned_by=(rel.oid, col.name),
                                       **sequence_fields(self.seq_props, _TYPE_MAX[col.type_oid]))))
        shown = seq_name if seq_schema == rel.schema else f"{seq_schema}.{seq_name}"
        marked = tuple(replace(c, identity=self.identity, default=f"nextval('{shown}'::regclass)") if c is col else c
                       for c in rel.columns)
        ctx.txn.apply(("rel", rel.with_(columns=marked)))
        return Result(tag="ALTER TABLE")
