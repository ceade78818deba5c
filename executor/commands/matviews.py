"""Materialized views: CREATE MATERIALIZED VIEW's two kinds and REFRESH.

A materialized view over a stream is a continuous view marked
``materialized`` (pg_class.relkind 'm'): it is always current, so REFRESH has
nothing to do and says so.  One over tables only is what PostgreSQL's is: a
relation holding the rows its query returned at CREATE (kind 'r' marked
``materialized``, scanned like a table), recomputed by REFRESH.
"""
from __future__ import annotations

import re

import sqlglot

from splitstream.catalog.objects.model import ColumnDef, Relation
from splitstream.protocol.errors import (
    FEATURE_NOT_SUPPORTED,
    OBJECT_NOT_IN_PREREQUISITE_STATE,
    SYNTAX_ERROR,
    UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
    Notice,
    PgError,
)

from ..api import Result
from ..execution import operators, privileges
from ..sql.dialect import DIALECT, parse_one
from ..sql.planner import Planner
from ..sql.sqltext import unquote
from .base import DDLStmt, Stmt
from .dml import insert_batch
from .names import qual
from .tables import alter_table, stored_column

_WITH_DATA = re.compile(r"\s+with\s+(no\s+)?data\s*;?\s*$", re.I)
_NO_DATA_HINT = ("splitstream fills a materialized view when it is created and on REFRESH; "
                 "create it WITH DATA (the default), or create a plain view.")


def strip_with_data(text: str, words: list[str]) -> str:
    """CREATE MATERIALIZED VIEW ... WITH DATA: the default, dropped before parsing
    (sqlglot does not parse it); WITH NO DATA (an unscannable, unpopulated view)
    is refused."""
    if words[:3] != ["CREATE", "MATERIALIZED", "VIEW"]:
        return text
    m = _WITH_DATA.search(text)
    if m is None:
        return text
    if m.group(1):
        raise PgError(FEATURE_NOT_SUPPORTED, "CREATE MATERIALIZED VIEW ... WITH NO DATA is not supported",
                      hint=_NO_DATA_HINT)
    return text[: m.start()]


def create_snapshot(session, ctx, pl: Planner, plan: operators.Op, rel: Relation) -> int:
    """A materialized view over tables: ``rel`` (a view's description) stored as
    a relation holding the query's rows now, run with the creator's privileges.
    Returns how many rows it holds."""
    privileges.authorize(ctx.state, session.info, pl.needs)
    rows = operators.run_plan(plan, ctx)
    stored = rel.with_(kind="r", materialized=True, continuous=False)
    ctx.txn.apply(("rel", stored))
    if rows.n:
        insert_batch(session, ctx, stored, rows)
    return rows.n


_REFRESH = re.compile(r"\s*refresh\s+materialized\s+view\s+(concurrently\s+)?(.+?)(\s+with\s+(no\s+)?data)?\s*;?\s*$",
                      re.I | re.S)


class RefreshStmt(Stmt):
    """REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]."""

    cacheable = False
    tag = "REFRESH MATERIALIZED VIEW"

    def __init__(self, schema: str | None, name: str, concurrently: bool, no_data: bool) -> None:
        self.schema, self.name, self.concurrently, self.no_data = schema, name, concurrently, no_data

    @staticmethod
    def parse(text: str) -> "RefreshStmt":
        m = _REFRESH.match(text)
        if m is None:
            raise PgError(SYNTAX_ERROR, "syntax error at end of input")
        parts = [unquote(p) for p in re.split(r"\.(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", m.group(2).strip())]
        if m.group(1) and m.group(4):
            raise PgError(FEATURE_NOT_SUPPORTED, "REFRESH options CONCURRENTLY and WITH NO DATA cannot be used together")
        return RefreshStmt(parts[0] if len(parts) > 1 else None, parts[-1], bool(m.group(1)), bool(m.group(4)))

    def run(self, session, ctx) -> Result:
        st = ctx.txn.for_write(ctx.check_cancel)
        pl = Planner(session.engine, ctx.state, session=session.info)
        rel = pl.lookup_relation(self.name, self.schema)
        if rel is None:
            raise PgError(UNDEFINED_TABLE, f'relation "{self.name}" does not exist')
        if not rel.materialized:
            raise PgError(WRONG_OBJECT_TYPE, f'"{self.name}" is not a table or materialized view')
        privileges.require_owner(st, session.info, rel.owner, "materialized view", rel.name)
        if self.no_data:
            raise PgError(FEATURE_NOT_SUPPORTED, "REFRESH MATERIALIZED VIEW ... WITH NO DATA is not supported",
                          hint="splitstream keeps a materialized view populated: REFRESH without WITH NO DATA "
                               "recomputes it, DROP MATERIALIZED VIEW discards it.")
        if rel.continuous:
            return Result(tag=self.tag, notices=[Notice(
                f'materialized view "{rel.name}" reads a stream and is maintained continuously: '
                "REFRESH has nothing to do")])
        unique = any(r.kind == "i" and r.index_unique and r.index_table == rel.oid for r in st.rels.values())
        if self.concurrently and not unique:
            # PostgreSQL's condition for CONCURRENTLY: a unique index on the view.  With one, the
            # refresh below is as good: readers see the old rows or the new, never a mix
            raise PgError(OBJECT_NOT_IN_PREREQUISITE_STATE, f'cannot refresh materialized view "{rel.schema}.{rel.name}" concurrently',
                          hint="Create a unique index with no WHERE clause on one or more columns of the materialized view.")
        query = sqlglot.parse_one(rel.sql, read=DIALECT)
        plan = pl.plan_query(query)
        privileges.authorize(ctx.state, session.info, pl.needs)
        rows = operators.run_plan(plan, ctx)
        ctx.txn.apply(("truncate", rel.oid))
        if rows.n:
            insert_batch(session, ctx, ctx.txn.state.rels[rel.oid], rows)
        return Result(tag=self.tag)


def snapshot_columns(names: list[str], plan: operators.Op) -> tuple[ColumnDef, ...]:
    """The columns of a view or materialized view: the query's, renamed by the column list."""
    return tuple(stored_column(names[i] if i < len(names) else c.name, c.oid, c.typmod, i + 1) for i, c in enumerate(plan.out))


_ALTER = re.compile(r"\s*alter\s+materialized\s+view\b", re.I)


def alter_statement(text: str) -> Stmt:
    """ALTER MATERIALIZED VIEW ... (RENAME, columns' RENAME, SET SCHEMA, ...):
    ALTER TABLE's actions on a materialized view, which sqlglot does not parse
    under this name.  (OWNER TO is ownership.py's.)"""
    m = _ALTER.match(text)
    if m is None:
        raise PgError(SYNTAX_ERROR, 'syntax error at or near "ALTER"')
    tree = parse_one("ALTER TABLE" + text[m.end():])

    def run(session, ctx):
        pl = Planner(session.engine, ctx.state, session=session.info)
        schema, name = qual(tree.this)
        rel = pl.lookup_relation(name, schema)
        if rel is not None and not rel.materialized:
            raise PgError(WRONG_OBJECT_TYPE, f'"{name}" is not a materialized view')
        return alter_table(session, ctx, pl, tree, text)

    return DDLStmt(run, "ALTER MATERIALIZED VIEW")
