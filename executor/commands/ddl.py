"""DDL on sqlglot trees: which command module builds the statement for a parsed
CREATE / DROP / ALTER / TRUNCATE / COMMENT.
"""
from __future__ import annotations

import re

from sqlglot import exp

from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, SYNTAX_ERROR, PgError

from ..sql.planner import Planner
from .base import DDLStmt, Stmt
from .drop import drop
from .schemas import comment, create_schema, create_sequence
from .tables import alter_table, create_index, create_table, truncate
from .views import create_view


def build(session, planner, tree, text: str) -> Stmt:
    def bind(fn, tag):
        return DDLStmt(lambda s, ctx: fn(s, ctx, planner_for(s, ctx), tree, text), tag)

    def planner_for(s, ctx):
        return Planner(s.engine, ctx.state, session=s.info)

    if isinstance(tree, exp.Create):
        kind = str(tree.args.get("kind")).upper()
        if kind == "TABLE":
            return bind(create_table, "CREATE TABLE" if tree.args.get("expression") is None else "SELECT")
        if kind == "VIEW":
            is_mat = re.match(r"\s*create\s+(or\s+replace\s+)?materialized", text, re.I)
            return bind(create_view, "SELECT" if is_mat else "CREATE VIEW")
        if kind == "INDEX":
            return bind(create_index, "CREATE INDEX")
        if kind == "SCHEMA":
            return bind(create_schema, "CREATE SCHEMA")
        if kind == "SEQUENCE":
            return bind(create_sequence, "CREATE SEQUENCE")
        if kind == "FUNCTION":
            raise PgError(FEATURE_NOT_SUPPORTED, "CREATE FUNCTION is not supported yet")
        raise PgError(FEATURE_NOT_SUPPORTED, f"CREATE {kind} is not supported")
    if isinstance(tree, exp.Drop):
        kind = str(tree.args.get("kind") or "TABLE").upper()
        tag = "DROP " + ("MATERIALIZED VIEW" if tree.args.get("materialized") else kind)
        return bind(drop, tag)
    if isinstance(tree, exp.Alter):
        kind = str(tree.args.get("kind") or "TABLE").upper()
        if kind == "VIEW":
            return bind(alter_table, "ALTER VIEW")
        return bind(alter_table, "ALTER TABLE" if kind != "INDEX" else "ALTER INDEX")
    if isinstance(tree, exp.TruncateTable):
        return bind(truncate, "TRUNCATE TABLE")
    if isinstance(tree, exp.Comment):
        return bind(comment, "COMMENT")
    if isinstance(tree, exp.Command):
        raise PgError(SYNTAX_ERROR, f'syntax error at or near "{str(tree.this).split()[0] if str(tree.this).split() else tree.this}"')
    raise PgError(FEATURE_NOT_SUPPORTED, f"statement not supported: {type(tree).__name__}")
