"""Prepared statements are planned again after DDL on what they read, as
PostgreSQL's plan cache does, over the extended protocol (Parse once, then
Bind/Execute) and with SQL PREPARE / EXECUTE: a column added, a type
changed, a table dropped and made again, a view or a SQL function
replaced. A new plan whose row type differs is refused with 0A000 ("cached
plan must not change result type"). Each script runs on splitstream and on
PostgreSQL 15; every step's outcome must agree."""
from __future__ import annotations

import asyncio

import asyncpg
import psycopg
import pytest
from psycopg import pq

from tests.support.fidelity import mismatches

# (kind, text): "sql" runs as a simple query; "prep NAME" parses it as a named
# protocol-level statement; "exec NAME" executes it (parameters after "|")
SCRIPT = """
sql|CREATE TABLE {t} (a int, b text)
sql|INSERT INTO {t} VALUES (1, 'x'), (2, 'y')
prep sel_ab|SELECT a, b FROM {t} WHERE a >= $1::int ORDER BY a
prep sel_star|SELECT * FROM {t} ORDER BY a
prep sel_b|SELECT b FROM {t} ORDER BY a
prep ins|INSERT INTO {t} (a, b) VALUES ($1::int, $2::text)
prep upd|UPDATE {t} SET b = $1::text WHERE a = $2::int
sql|PREPARE s_ab (int) AS SELECT a, b FROM {t} WHERE a >= $1 ORDER BY a
sql|PREPARE s_star AS SELECT * FROM {t} ORDER BY a
exec sel_ab|1
exec sel_star
sql|ALTER TABLE {t} ADD COLUMN c int DEFAULT 7
exec sel_ab|1
exec sel_star
sql|EXECUTE s_ab(2)
sql|EXECUTE s_star
exec ins|3|z
sql|SELECT a, b, c FROM {t} ORDER BY a
exec upd|w|1
exec sel_ab|1
exec sel_b
sql|ALTER TABLE {t} ALTER COLUMN b TYPE varchar(10)
exec sel_b
sql|ALTER TABLE {t} RENAME COLUMN a TO aa
exec sel_ab|1
sql|EXECUTE s_ab(1)
sql|ALTER TABLE {t} RENAME COLUMN aa TO a
exec sel_ab|2
sql|DROP TABLE {t}
exec sel_ab|1
sql|EXECUTE s_ab(1)
exec ins|4|q
sql|CREATE TABLE {t} (a int, b text)
sql|INSERT INTO {t} VALUES (5, 'new')
exec sel_ab|1
sql|EXECUTE s_ab(1)
exec ins|6|n
sql|SELECT a, b FROM {t} ORDER BY a
sql|BEGIN
sql|ALTER TABLE {t} ADD COLUMN d int DEFAULT 1
exec sel_ab|1
exec ins|7|m
sql|SELECT a, b, d FROM {t} ORDER BY a
sql|ROLLBACK
exec sel_ab|1
sql|CREATE VIEW {t}_v AS SELECT a FROM {t}
prep view|SELECT * FROM {t}_v ORDER BY a
exec view
sql|CREATE OR REPLACE VIEW {t}_v AS SELECT a, b FROM {t}
exec view
sql|CREATE OR REPLACE VIEW {t}_v AS SELECT a + 100 AS a, b FROM {t}
sql|CREATE FUNCTION {t}_f(int) RETURNS int LANGUAGE sql AS 'SELECT $1 + 1'
prep fn|SELECT {t}_f(a) FROM {t} ORDER BY a
exec fn
sql|CREATE OR REPLACE FUNCTION {t}_f(int) RETURNS int LANGUAGE sql AS 'SELECT $1 + 1000'
exec fn
sql|DROP VIEW {t}_v
sql|DROP FUNCTION {t}_f(int)
sql|DROP TABLE {t}
"""


def _result(res: pq.PGresult) -> tuple:
    if res.status == pq.ExecStatus.FATAL_ERROR:
        return ("error", (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode(),
                (res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode())
    names = [res.fname(i) for i in range(res.nfields)]
    rows = [tuple(res.get_value(r, c) for c in range(res.nfields)) for r in range(res.ntuples)]
    return ("ok", names, rows, res.command_status)


def _step(conn: psycopg.Connection, line: str) -> tuple:
    kind, _, rest = line.partition("|")
    pgconn = conn.pgconn
    if kind == "sql":
        return _result(pgconn.exec_(rest.encode()))
    verb, name = kind.split()
    if verb == "prep":
        return _result(pgconn.prepare(name.encode(), rest.encode()))
    params = [p.encode() for p in rest.split("|")] if rest else None
    return _result(pgconn.exec_prepared(name.encode(), params))


@pytest.fixture
def conns(ss_server, pg15):
    ss = psycopg.connect(ss_server.dsn, autocommit=True)
    pg = psycopg.connect(pg15.dsn, autocommit=True)
    yield ss, pg
    ss.close()
    pg.close()


def test_replanned_after_ddl_as_postgresql(conns, unique_name):
    ss, pg = conns
    t = unique_name("pi")
    wrong = mismatches(ss, pg, [line.format(t=t) for line in SCRIPT.strip().splitlines()], _step)
    assert not wrong, "\n".join(wrong)


def test_asyncpg_reprepares_on_a_changed_row_type(ss_server, pg15, unique_name):
    """asyncpg caches its prepared statements and, told "cached plan must
    not change result type", prepares again: a SELECT * after ADD COLUMN
    returns the new column, on both servers."""
    t = unique_name("pa")

    async def run(url: str) -> list:
        conn = await asyncpg.connect(url, timeout=10)
        try:
            await conn.execute(f"CREATE TABLE {t} (a int)")
            await conn.execute(f"INSERT INTO {t} VALUES (1)")
            seen = [[tuple(r.items()) for r in await conn.fetch(f"SELECT * FROM {t}")]]
            await conn.execute(f"ALTER TABLE {t} ADD COLUMN b int DEFAULT 2")
            seen.append([tuple(r.items()) for r in await conn.fetch(f"SELECT * FROM {t}")])
            await conn.execute(f"DROP TABLE {t}")
            return seen
        finally:
            await conn.close()

    async def both():
        return await run(ss_server.url), await run(pg15.url)

    ours, theirs = asyncio.run(asyncio.wait_for(both(), 60))
    assert ours == theirs == [[(("a", 1),)], [(("a", 1), ("b", 2))]]


# A search_path change re-plans as PostgreSQL's plan cache does (the search
# path is part of what a cached plan was made under): a prepared statement
# then reads the relation the name now resolves to, or is refused (0A000)
# when that relation's row type differs; a simple query reads it as well.
SEARCH_PATH_SCRIPT = """
sql|CREATE SCHEMA {t}_a
sql|CREATE SCHEMA {t}_b
sql|CREATE TABLE {t}_a.{t} (a int)
sql|CREATE TABLE {t}_b.{t} (a int)
sql|CREATE TABLE {t}_b.{t}_w (a int, b text)
sql|CREATE TABLE {t}_a.{t}_w (x int)
sql|INSERT INTO {t}_a.{t} VALUES (1)
sql|INSERT INTO {t}_b.{t} VALUES (2)
sql|INSERT INTO {t}_a.{t}_w VALUES (3)
sql|INSERT INTO {t}_b.{t}_w VALUES (4, 'four')
sql|SET search_path = {t}_a, public
prep sp_sel|SELECT a FROM {t} WHERE a > $1::int
prep sp_star|SELECT * FROM {t}_w
prep sp_ins|INSERT INTO {t} VALUES ($1::int)
sql|PREPARE sp_q AS SELECT a FROM {t}
sql|SELECT a FROM {t}
sql|SELECT current_schema()
exec sp_sel|0
exec sp_star
sql|EXECUTE sp_q
sql|SET search_path = {t}_b, public
sql|SELECT a FROM {t}
sql|SELECT current_schema()
exec sp_sel|0
exec sp_star
exec sp_ins|5
sql|EXECUTE sp_q
sql|SELECT a FROM {t}_b.{t} ORDER BY a
sql|SELECT a FROM {t}_a.{t} ORDER BY a
sql|SET search_path = {t}_a, public
exec sp_sel|0
exec sp_star
sql|SELECT a FROM {t}
sql|BEGIN
sql|SET LOCAL search_path = {t}_b
exec sp_sel|0
sql|SELECT a FROM {t} ORDER BY a
sql|COMMIT
exec sp_sel|0
sql|SELECT a FROM {t}
sql|RESET search_path
exec sp_sel|0
sql|SELECT current_schema()
sql|DEALLOCATE sp_q
sql|DROP SCHEMA {t}_a CASCADE
sql|DROP SCHEMA {t}_b CASCADE
"""


def test_search_path_change_replans_as_postgresql(conns, unique_name):
    ss, pg = conns
    t = unique_name("sp")
    wrong = mismatches(ss, pg, [line.format(t=t) for line in SEARCH_PATH_SCRIPT.strip().splitlines()], _step)
    assert not wrong, "\n".join(wrong)


def _described(pgconn, name: bytes) -> tuple:
    """Describe of a prepared statement: its columns' names and types and its
    parameters' types, or its error."""
    res = pgconn.describe_prepared(name)
    if res.status == pq.ExecStatus.FATAL_ERROR:
        return ("error", (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode(),
                (res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode())
    return ("ok", [(res.fname(i), res.ftype(i)) for i in range(res.nfields)],
            [res.param_type(i) for i in range(res.nparams)])


def test_describe_replans_after_ddl_as_postgresql(conns, unique_name):
    """Describe of a statement after DDL on what it reads describes the plan
    it would run now, as PostgreSQL re-plans at Describe: 42P01 once its
    table is gone, 0A000 when the row type changed (a column added, another
    search_path resolving the name to another table), 25P02 in a failed
    transaction block."""
    t = unique_name("dr")
    steps = [
        f"CREATE TABLE {t} (a int, b text)",
        "prep d_star|SELECT * FROM {t}",
        "prep d_a|SELECT a FROM {t} WHERE a = $1::int",
        "desc d_star", "desc d_a",
        f"DROP TABLE {t}",
        "desc d_star", "desc d_a",
        f"CREATE TABLE {t} (a int, b text)",
        "desc d_star", "desc d_a",
        f"ALTER TABLE {t} ADD COLUMN c int",
        "desc d_star", "desc d_a",
        f"CREATE SCHEMA {t}_s",
        f"CREATE TABLE {t}_s.{t} (a bigint)",
        f"SET search_path = {t}_s, public",
        "desc d_a",
        "RESET search_path",
        "desc d_a",
        "BEGIN", "SELECT 1/0", "desc d_a", "ROLLBACK",
        f"DROP SCHEMA {t}_s CASCADE",
        f"DROP TABLE {t}",
    ]
    for conn in conns:
        conn.pgconn.exec_(b"DEALLOCATE ALL")
    seen: list[list] = []
    for conn in conns:
        out = []
        for step in steps:
            pgconn = conn.pgconn
            if step.startswith("prep "):
                name, _, sql = step[5:].partition("|")
                out.append(_result(pgconn.prepare(name.encode(), sql.format(t=t).encode())))
            elif step.startswith("desc "):
                out.append(_described(pgconn, step[5:].encode()))
            else:
                out.append(_result(pgconn.exec_(step.encode())))
        seen.append(out)
    ours, theirs = seen
    wrong = [f"{s}\n  splitstream: {a}\n  postgresql:  {b}" for s, a, b in zip(steps, ours, theirs) if a != b]
    assert not wrong, "\n".join(wrong)
