"""ROLLBACK TO SAVEPOINT undoes what the subtransaction did to the session
(SET, SET LOCAL, RESET, SET ROLE, cursors it declared), RELEASE keeps it,
and whenever ending a transaction or a savepoint puts back a reported
setting (TimeZone, DateStyle, IntervalStyle, application_name,
standard_conforming_strings) the server says so with a ParameterStatus, as
PostgreSQL 15 does; set_config() is SET (or SET LOCAL) inside the
statement's transaction. Each script runs on both and, after every
statement, its outcome and the driver's view of the reported settings must
agree."""
from __future__ import annotations

import asyncio

import asyncpg
import psycopg
import pytest

from tests.support.fidelity import mismatches

REPORTED = ("TimeZone", "DateStyle", "IntervalStyle", "application_name", "standard_conforming_strings",
            "is_superuser", "session_authorization")

SAVEPOINTS = """
begin
set work_mem = '9MB'
savepoint a
set work_mem = '10MB'
show work_mem
rollback to savepoint a
show work_mem
set work_mem = '11MB'
release savepoint a
show work_mem
commit
show work_mem
begin
savepoint a
set local work_mem = '12MB'
savepoint b
set work_mem = '13MB'
rollback to a
show work_mem
set work_mem = '14MB'
commit
show work_mem
begin
set local work_mem = '20MB'
set work_mem = '21MB'
set local work_mem = '22MB'
commit
show work_mem
begin
set local work_mem = '23MB'
savepoint a
set work_mem = '24MB'
rollback to a
commit
show work_mem
set work_mem = '14MB'
begin
savepoint a
reset work_mem
rollback to a
show work_mem
savepoint a
select 1/0
rollback to a
show work_mem
savepoint b
set work_mem = '15MB'
savepoint c
set local work_mem = '16MB'
release b
show work_mem
rollback
show work_mem
begin
savepoint a
declare c cursor for select 1
rollback to a
fetch c
rollback
reset work_mem
"""

REPORTING = """
begin
savepoint a
set timezone = 'Asia/Tokyo'
set application_name = 'inner'
set role {role}
rollback to savepoint a
show timezone
savepoint b
set time zone 'America/New_York'
set session authorization {role}
release savepoint b
show timezone
savepoint c
set local application_name = 'local'
set local timezone = 'Europe/Paris'
set timezone = 'Asia/Tokyo'
commit
show timezone
show application_name
reset session authorization
begin
set application_name = 'in_block'
set local role {role}
rollback
show application_name
begin
set local application_name = 'local'
commit
show application_name
begin
set application_name = 'plain'
set local application_name = 'local'
set application_name = 'plain2'
savepoint d
set application_name = 'rolled_back'
rollback to d
commit
show application_name
select set_config('application_name', 'cfg', false)
begin
select set_config('application_name', 'cfg_local', true)
show application_name
commit
show application_name
begin
select set_config('timezone', 'Asia/Tokyo', false)
savepoint e
select set_config('application_name', 'in_savepoint', false)
rollback to e
show application_name
rollback
show timezone
select set_config('application_name', 'statement_local', true)
show application_name
select set_config('application_name', 'fails', false), 1/0
show application_name
reset timezone
"""


def _outcome(conn: psycopg.Connection, sql: str) -> tuple:
    try:
        cur = conn.execute(sql)
        got: tuple = ("ok", cur.fetchall() if cur.description else None)
    except psycopg.Error as e:
        got = ("error", e.sqlstate, e.diag.message_primary)
    return got, {name: conn.info.parameter_status(name) for name in REPORTED}


@pytest.fixture
def role(ss_conn, pg_conn, unique_name):
    name = unique_name("r")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE ROLE {name}")
    yield name
    for conn in (ss_conn, pg_conn):
        conn.execute(f"DROP ROLE {name}")


@pytest.mark.parametrize("script", [SAVEPOINTS, REPORTING], ids=["savepoints", "parameter-status"])
def test_agrees_with_postgres(ss_server, pg15, role, script):
    with psycopg.connect(ss_server.dsn, autocommit=True) as ss, psycopg.connect(pg15.dsn, autocommit=True) as pg:
        for conn in (ss, pg):
            conn.execute("set timezone = 'UTC'")
            conn.execute("set application_name = 'outer'")
        wrong = mismatches(ss, pg, script.format(role=role).strip().splitlines(), _outcome)
    assert not wrong, "\n".join(wrong)


def test_psycopg_timezone_follows_rollback_to_savepoint(ss_server):
    """psycopg reads timestamptz in the zone the server last reported."""
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        conn.execute("set timezone = 'UTC'")
        conn.execute("begin")
        conn.execute("savepoint s")
        conn.execute("set timezone = 'Asia/Tokyo'")
        assert str(conn.info.timezone) == "Asia/Tokyo"
        conn.execute("rollback to savepoint s")
        assert str(conn.info.timezone) == "UTC"
        conn.execute("commit")


def test_asyncpg_sees_restored_settings(ss_server, pg15):
    """asyncpg keeps the reported settings it was sent: after a rollback to a
    savepoint and a rollback, they read as on PostgreSQL."""
    async def views(url: str) -> list[tuple[str, str]]:
        conn = await asyncpg.connect(url, timeout=10)
        seen = []
        try:
            await conn.execute("set timezone = 'UTC'")
            async with conn.transaction():
                await conn.execute("set timezone = 'Asia/Tokyo'")
                tx = conn.transaction()         # a nested transaction is a savepoint
                await tx.start()
                await conn.execute("set timezone = 'Europe/Paris'")
                await conn.execute("set application_name = 'nested'")
                seen.append((conn.get_settings().TimeZone, conn.get_settings().application_name))
                await tx.rollback()
                seen.append((conn.get_settings().TimeZone, conn.get_settings().application_name))
            seen.append((conn.get_settings().TimeZone, conn.get_settings().application_name))
            tx2 = conn.transaction()
            await tx2.start()
            await conn.execute("set timezone = 'Europe/Paris'")
            await tx2.rollback()
            seen.append((conn.get_settings().TimeZone, ""))
        finally:
            await conn.close()
        return seen

    async def main():
        return await views(ss_server.url), await views(pg15.url)

    ours, theirs = asyncio.run(asyncio.wait_for(main(), 60))
    assert ours == theirs


def test_set_config_over_the_extended_protocol(ss_server, pg15):
    """set_config(..., true) outside a block ends with the implicit block at
    Sync: the driver's view of the setting is what it is after the Sync."""
    def views(dsn: str) -> list:
        with psycopg.connect(dsn, autocommit=True) as conn:
            seen = []
            for value, local in (("x", True), ("y", False), ("z", True)):
                conn.execute("select set_config(%s, %s, %s)", ("application_name", value, local))
                seen.append((conn.info.parameter_status("application_name"),
                             conn.execute("show application_name").fetchone()))
            return seen

    assert views(ss_server.dsn) == views(pg15.dsn)


def test_rollback_to_savepoint_releases_its_advisory_locks(ss_server, pg15):
    """A transaction-level advisory lock taken after a savepoint is released
    when the savepoint is rolled back to; one taken before stays."""
    def seen_by_other(dsn: str) -> list[bool]:
        with psycopg.connect(dsn, autocommit=True) as a, psycopg.connect(dsn, autocommit=True) as b:
            free = []
            a.execute("begin")
            a.execute("select pg_advisory_xact_lock(41)")
            a.execute("savepoint s")
            a.execute("select pg_advisory_xact_lock(42)")
            free.append(b.execute("select pg_try_advisory_xact_lock(42)").fetchone()[0])
            a.execute("rollback to savepoint s")
            free.append(b.execute("select pg_try_advisory_xact_lock(42)").fetchone()[0])
            free.append(b.execute("select pg_try_advisory_xact_lock(41)").fetchone()[0])
            a.execute("commit")
            return free

    assert seen_by_other(ss_server.dsn) == seen_by_other(pg15.dsn) == [False, True, False]
