"""SET, SET LOCAL and RESET are transactional, and the search path decides
current_schema(), current_schemas() and where a new object goes: each script
runs on splitstream and on PostgreSQL 15 and every statement's outcome (rows,
or SQLSTATE and message) must agree."""
from __future__ import annotations

import psycopg
import pytest

from tests.support.fidelity import mismatches

SETS = """
set local work_mem = '7MB'
show work_mem
begin
set local work_mem = '8MB'
show work_mem
commit
show work_mem
begin
set work_mem = '9MB'
rollback
show work_mem
begin
set work_mem = '11MB'
set local work_mem = '12MB'
set local work_mem = '13MB'
show work_mem
commit
show work_mem
begin
reset work_mem
show work_mem
rollback
show work_mem
begin
set local statement_timeout = '5s'
savepoint a
show statement_timeout
commit
show statement_timeout
begin
set bogus_setting_x = 1
rollback
show work_mem
begin
set my.custom_x = 'a'
show my.custom_x
rollback
show my.custom_x
begin
reset all
show work_mem
rollback
show work_mem
begin
set local time zone 'Asia/Tokyo'
select '2020-01-01 00:00+00'::timestamptz::text
rollback
select '2020-01-01 00:00+00'::timestamptz::text
reset work_mem
"""

PATHS = """
create schema if not exists sp_zz
set search_path = sp_zz, public
select current_schema(), current_schemas(false), current_schemas(true)
create table sp_t1 (a int)
select schemaname from pg_tables where tablename = 'sp_t1'
drop table sp_t1
set search_path = sp_nosuch, public
select current_schema(), current_schemas(false)
create table sp_t2 (a int)
select schemaname from pg_tables where tablename = 'sp_t2'
drop table sp_t2
set search_path = sp_nosuch
select current_schema(), current_schemas(true)
create table sp_t3 (a int)
set search_path = pg_catalog, public
select current_schemas(true)
select current_schemas(null)
reset search_path
create schema if not exists postgres
select current_schema(), current_schemas(false)
create table sp_t4 (a int)
select schemaname from pg_tables where tablename = 'sp_t4'
drop table sp_t4
drop schema postgres
drop schema sp_zz
select a, count(*) from (values (array[1,2]), (array[1,2]), (array[3]), (null::int[])) t(a) group by a order by a
select distinct a from (values (array['x']), (array['x']), (array['y', null])) t(a) order by a
select * from pg_options_to_table(1)
select * from pg_options_to_table(array['a=1', 'b'])
"""


def _outcome(conn: psycopg.Connection, sql: str) -> tuple:
    try:
        cur = conn.execute(sql)
        return ("ok", cur.fetchall() if cur.description else None)
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary)


@pytest.mark.parametrize("script", [SETS, PATHS], ids=["set-transactional", "search-path"])
def test_agrees_with_postgres(ss_server, pg15, script):
    with psycopg.connect(ss_server.dsn, autocommit=True) as ss, psycopg.connect(pg15.dsn, autocommit=True) as pg:
        for conn in (ss, pg):
            conn.execute("set timezone = 'UTC'")
        wrong = mismatches(ss, pg, script.strip().splitlines(), _outcome)
    assert not wrong, "\n".join(wrong)
