"""Statement classes every command module builds on: ``Stmt`` (what the
dispatcher returns and the session runs), queries, no-ops and DDL wrappers.

Kept apart from the dispatcher so that command modules import this small base
and the dispatcher imports them, never the other way round.
"""
from __future__ import annotations

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch
from splitstream.protocol.errors import Notice

from ..execution import operators, privileges
from ..api import Result, ResultColumn
from ..execution.regnames import REG_OUTPUT, reg_names


def columns_of(op: operators.Op) -> list[ResultColumn]:
    return result_columns(op.out)


def result_columns(out: list[operators.OutCol]) -> list[ResultColumn]:
    """RowDescription's fields for output columns, each naming the table
    column it was taken from (``operators.carried``)."""
    return [ResultColumn(c.name, c.oid, c.typmod, sqltypes.TYPLEN.get(c.oid, -1), c.table_oid, c.attnum) for c in out]


class Stmt:
    cacheable = True
    #: privileges the statement needs (execution.privileges.Need), checked by :meth:`authorize` when it runs
    needs: tuple[privileges.Need, ...] = ()
    transaction_control = False
    columns_at_run = False      # row shape known only when run (api.Prepared.columns_at_run)
    #: the relations (oid, the Relation then) and user functions its plan was made from:
    #: a prepared statement is planned again when one of them changed (:func:`plan_is_current`)
    reads: tuple[tuple[int, object], ...] = ()
    calls: tuple[object, ...] = ()
    allowed_in_failed = False
    tag = ""

    def run(self, session, ctx) -> Result:  # pragma: no cover
        raise NotImplementedError

    def sent_as(self, sql: str) -> None:
        """Told, once it is made, the statement as the client sent it (comments
        and all; a Query message's statement knows its message): what a
        statement reporting text or positions of its own at run time needs."""

    def authorize(self, ctx) -> None:
        """42501 unless the current role has what the statement needs: checked
        per run, as roles and grants change under plans and prepared statements."""
        if self.needs:
            privileges.authorize(ctx.state, ctx.session, self.needs)


def plan_is_current(stmt: Stmt, state) -> bool:
    """Whether the catalog objects ``stmt`` was planned from are still the
    ones in ``state`` (catalog objects are replaced, never changed, by DDL):
    PostgreSQL's plan cache invalidation, per relation and function read."""
    rels = state.rels
    if any(rels.get(oid) is not rel for oid, rel in stmt.reads):
        return False
    fns = state.functions
    return all(any(f is fn for f in fns.get(fn.name, ())) for fn in stmt.calls)  # type: ignore[attr-defined]


def remember_reads(stmt: Stmt, planner) -> None:
    """Record on ``stmt`` what its planner read: privileges it needs (checked
    at each run) and the catalog objects its plan depends on."""
    stmt.needs = tuple(planner.needs)
    stmt.reads = tuple(planner.relations_read.items())
    stmt.calls = tuple(planner.functions_used.values())


class QueryStmt(Stmt):
    def __init__(self, plan: operators.Op) -> None:
        self.plan = plan

    def run(self, session, ctx):
        self.authorize(ctx)
        batch = operators.run_plan(self.plan, ctx)
        if any(c.oid in REG_OUTPUT for c in batch.cols):
            batch = Batch([reg_names(c, ctx) if c.oid in REG_OUTPUT else c for c in batch.cols], batch.n)
        cols = self.__dict__.get("_columns")
        if cols is None:
            cols = self._columns = columns_of(self.plan)  # fixed per plan; computed once
        return Result(tag=f"SELECT {batch.n}", columns=cols, batch=batch)


class NoopStmt(Stmt):
    def __init__(self, tag: str, notice: str | None = None) -> None:
        self.tag, self.notice = tag, notice

    def run(self, session, ctx):
        r = Result(tag=self.tag)
        if self.notice:
            r.notices.append(Notice(self.notice))
        return r


class EmptyStmt(Stmt):
    allowed_in_failed = True        # only comments: no statement, which a failed block answers as empty

    def run(self, session, ctx):
        return Result(empty=True)


class DDLStmt(Stmt):
    cacheable = False

    def __init__(self, fn, tag: str) -> None:
        self.fn, self.tag = fn, tag

    def run(self, session, ctx):
        out = self.fn(session, ctx) or []
        if isinstance(out, Result):     # a command whose tag counts rows (CREATE MATERIALIZED VIEW: SELECT n)
            return out
        return Result(tag=self.tag, notices=out)
