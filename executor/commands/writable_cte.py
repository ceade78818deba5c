"""Data-modifying statements in WITH (PostgreSQL's "writable CTEs").

``WITH d AS (DELETE FROM a RETURNING *) INSERT INTO b SELECT * FROM d``: each
INSERT/UPDATE/DELETE in the top-level WITH runs exactly once, before the main
statement, whether or not anything reads it; what its RETURNING yields is what
its name reads.  Every part sees the database as the statement began (one
snapshot, ``ExecContext.snapshot``) while writes go to the transaction, so
the statement is one unit: an error anywhere rolls all of it back with the
statement's transaction.  The planner (``planner/query.py``) plans the WITH
queries in order, calling back here for a data-modifying one.
"""
from __future__ import annotations

from sqlglot import exp

from splitstream.catalog.datatypes.vector import Batch
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError

from ..api import Result
from ..sql.dialect import writes_in_with
from ..sql.planner.query import write_key
from . import dml
from .base import QueryStmt, Stmt, columns_of

_STREAM_HINT = "Insert into the stream with an INSERT statement of its own."


def dml_statement(session, planner, tree: exp.Expr) -> dml.DMLStmt:
    """INSERT, UPDATE or DELETE, its own WITH queries in scope (data-modifying
    ones only when it is the top-level statement)."""
    pushed = planner.define_ctes(tree)
    try:
        if isinstance(tree, exp.Insert):
            return dml.InsertStmt.build(session, planner, tree)
        if isinstance(tree, exp.Update):
            return dml.UpdateStmt.build(session, planner, tree)
        assert isinstance(tree, exp.Delete)
        return dml.DeleteStmt.build(session, planner, tree)
    finally:
        if pushed:
            planner.ctes.pop()


def _create_refusal(tree: exp.Create) -> PgError:
    """What CREATE VIEW / MATERIALIZED VIEW / TABLE AS says of a data-modifying
    WITH query in its query (PostgreSQL's words; CREATE TABLE AS, which
    PostgreSQL runs, is refused here)."""
    props = tree.args.get("properties")
    if str(tree.args.get("kind") or "").upper() != "VIEW":
        return PgError(FEATURE_NOT_SUPPORTED, "CREATE TABLE AS with data-modifying statements in WITH is not supported",
                       hint="Create the table, then fill it with INSERT INTO ... that has the WITH queries.")
    if props is not None and any(isinstance(p, exp.MaterializedProperty) for p in props.expressions):
        return PgError(FEATURE_NOT_SUPPORTED, "materialized views must not use data-modifying statements in WITH")
    return PgError(FEATURE_NOT_SUPPORTED, "views must not contain data-modifying statements in WITH")


def allow_writes(session, planner, tree: exp.Expr) -> None:
    """Let ``tree``, the statement being planned, hold data-modifying WITH queries."""
    if isinstance(tree, exp.Create):        # its query is planned later, by a planner of its own
        if writes_in_with(tree.expression):
            raise _create_refusal(tree)
        return
    planner.top_query = tree

    def build(body: exp.Expr) -> dml.DMLStmt:
        stmt = dml_statement(session, planner, body)
        _refuse_stream(stmt)
        return stmt

    planner.write_builder = build


def _refuse_stream(stmt: Stmt) -> None:
    """A stream's rows reach its continuous views at once: they could not be
    taken back with the rest of the statement, so a stream is written by an
    INSERT with no data-modifying WITH queries."""
    rel = getattr(stmt, "rel", None)
    if rel is not None and rel.kind == "f":
        raise PgError(FEATURE_NOT_SUPPORTED, "data-modifying statements in WITH are not supported on streams",
                      hint=_STREAM_HINT)


def with_writes(stmt: Stmt, planner) -> Stmt:
    """``stmt`` itself, or run after the data-modifying WITH queries planned with it."""
    if not planner.writes:
        return stmt
    _refuse_stream(stmt)
    return WritesThenStmt(list(planner.writes), stmt)


class WritesThenStmt(Stmt):
    """The data-modifying WITH queries, in order, then the main statement."""

    #: EXPLAIN (its plan is several plans) and DECLARE CURSOR refuse it (commands/explain.py, cursors.py)
    modifies_in_with = True

    def __init__(self, writes: list[dml.DMLStmt], main: Stmt) -> None:
        self.writes, self.main = writes, main

    @property
    def columns(self):
        return columns_of(self.main.plan) if isinstance(self.main, QueryStmt) else getattr(self.main, "columns", None)

    def run(self, session, ctx) -> Result:
        self.authorize(ctx)                     # what every part needs, planned together
        ctx.txn.for_write(ctx.check_cancel)
        before, ctx.snapshot = ctx.snapshot, ctx.txn.state.clone()
        try:
            for stmt in self.writes:
                res = stmt.run(session, ctx)
                ctx.cte_results[write_key(stmt)] = res.batch if res.batch is not None else Batch.empty([])
            return self.main.run(session, ctx)
        finally:
            ctx.snapshot = before
