"""SQL-level PREPARE / EXECUTE / DEALLOCATE (PostgreSQL's commands/prepare.c).
"""
from __future__ import annotations

import dataclasses

import sqlglot

from splitstream.catalog.datatypes.vector import Batch
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import DUPLICATE_PREPARED_STATEMENT, INVALID_SQL_STATEMENT_NAME, SYNTAX_ERROR, PgError

from ..api import PreparedFacts, Result
from ..sql.binder import ExprBinder, Scope, parse_type_name
from ..sql.dialect import DIALECT
from ..sql.planner import Planner
from ..sql.sqltext import blank_comments, source_text
from .base import Stmt


class PrepareStmt(Stmt):
    cacheable = False

    def __init__(self, name: str, types: list[str], body: str, body_at: int = 0) -> None:
        self.name, self.types, self.body = name, types, body
        self.source = ""            # the whole Query (or Parse) string, which PostgreSQL records
        self.body_at = body_at      # where the body starts in the statement as sent (errors point into it)

    def sent_as(self, sql: str) -> None:
        self.source = source_text(sql)
        blanked = blank_comments(sql)
        self.body_at += len(blanked) - len(blanked.lstrip())

    def run(self, session, ctx):
        oids = [parse_type_name(t)[0] for t in self.types]
        try:
            prepared = session.prepare(self.body, oids)
        except PgError as e:        # placed in the body: PostgreSQL places it in the PREPARE
            if e.position is None:
                raise
            raise dataclasses.replace(e, position=e.position + self.body_at) from None
        if self.name in session.sql_prepared or session.protocol_statements.has(self.name):
            # (PostgreSQL stores it last: its analysis errors come first)
            raise PgError(DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{self.name}" already exists')
        session.sql_prepared[self.name] = prepared
        session.sql_prepared_facts[self.name] = PreparedFacts(self.source, ctx.now, True)
        return Result(tag="PREPARE")


class ExecuteStmt(Stmt):
    cacheable = False
    columns_at_run = True       # the SQL-prepared statement's rows

    def __init__(self, name: str, args: list[str]) -> None:
        self.name, self.args = name, args

    def run(self, session, ctx):
        p = session.sql_prepared.get(self.name)
        if p is not None:
            p = session.sql_prepared[self.name] = session.current_plan(p)
        else:   # a statement Parse'd with this name (the protocol's are planned again per execution)
            p = session.protocol_statements.lookup(self.name)
            if p is None:
                raise PgError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{self.name}" does not exist')
            p = session.current_plan(p)
        facts = session.sql_prepared_facts.get(self.name) if self.name in session.sql_prepared \
            else session.protocol_statements.facts(self.name)
        if p.param_oids and len(self.args) != len(p.param_oids):    # (none taken: PostgreSQL ignores any given)
            raise PgError(SYNTAX_ERROR, f"wrong number of parameters for prepared statement \"{self.name}\"",
                          detail=f"Expected {len(p.param_oids)} parameters but got {len(self.args)}.")
        # evaluate argument expressions
        vals = []
        for a, oid in zip(self.args, p.param_oids):
            pl = Planner(session.engine, ctx.state, session=session.info)

            e = pl.coerce(ExprBinder(pl, Scope([])).bind(sqlglot.parse_one(a, read=DIALECT)), oid or type_oids.TEXT)
            vals.append(e.eval(Batch([], 1), ctx).to_pylist()[0])
        if facts is not None:
            facts.planned(bool(vals), ctx.setting("plan_cache_mode", "auto"))
        inner_ctx = ctx
        inner_ctx.params = vals
        inner_ctx.param_oids = p.param_oids
        return p.handle.run(session, inner_ctx)


class DeallocateStmt(Stmt):
    cacheable = False

    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, session, ctx):
        if self.name == "all":
            drop_all_prepared(session)
        elif session.sql_prepared.pop(self.name, None) is None and not session.protocol_statements.drop(self.name):
            raise PgError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{self.name}" does not exist')
        return Result(tag="DEALLOCATE ALL" if self.name == "all" else "DEALLOCATE")


def drop_all_prepared(session) -> None:
    """DEALLOCATE ALL and DISCARD ALL: every prepared statement of the
    session, SQL-level and Parse'd (PostgreSQL's DropAllPreparedStatements)."""
    session.sql_prepared.clear()
    session.sql_prepared_facts.clear()
    session.protocol_statements.drop_all()


def prepared_statement_rows(session) -> list[tuple]:
    """pg_prepared_statements' rows: the session's named statements, SQL
    PREPAREd and Parse'd (the unnamed statement is not listed)."""
    entries = [(name, p.param_oids, session.sql_prepared_facts.get(name)) for name, p in session.sql_prepared.items()]
    entries += session.protocol_statements.listing()
    return [(name, f.statement, f.prepare_time, list(oids), f.from_sql, f.generic_plans, f.custom_plans)
            for name, oids, f in entries if f is not None]
