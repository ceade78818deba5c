"""SQL-language functions are catalog objects (issue 15 scope 6, issue 20):
created, replaced, granted, re-owned, renamed and dropped functions survive a
restart and kill -9, some changes from a checkpoint, the later ones from the WAL;
a view that calls one still reads after recovery."""
from __future__ import annotations

import psycopg
import pytest

SUPER = "super-pw"

CATALOG = [
    "SELECT p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), p.provolatile, "
    "p.proisstrict, p.proretset, pg_get_userbyid(p.proowner), p.proacl, p.prosrc, l.lanname "
    "FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE p.oid >= 16384 ORDER BY 1, 2",
    "SELECT pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.oid >= 16384 ORDER BY p.proname",
]

CALLS = ["SELECT add2(40), add2(1, 2), add2(NULL)", "SELECT * FROM evens(6)", "SELECT * FROM pairs(2)",
         "SELECT * FROM calls_v", "SELECT renamed('x')"]


def _connect(server, user: str = "postgres", password: str = SUPER) -> psycopg.Connection:
    return psycopg.connect(host=server.host, port=server.port, user=user, password=password, dbname="postgres",
                           autocommit=True, connect_timeout=10)


def _snapshot(server) -> list[list[tuple]]:
    with _connect(server) as c:
        return [c.execute(q).fetchall() for q in CATALOG + CALLS]


def _alice_calls(server) -> list[str]:
    out = []
    with _connect(server, "alice", "a-pw") as c:
        for sql in ("SELECT add2(1)", "SELECT renamed('y')"):
            try:
                out.append(repr(c.execute(sql).fetchall()))
            except psycopg.Error as e:
                out.append(f"{e.sqlstate} {e.diag.message_primary}")
    return out


@pytest.mark.crash
@pytest.mark.parametrize("crash", [False, True], ids=["restart", "kill9"])
def test_functions_survive(ss_server_factory, crash):
    server = ss_server_factory(password=SUPER, extra_args=["--fsync", "on"])
    with _connect(server) as c:
        for sql in [
            "CREATE ROLE alice LOGIN PASSWORD 'a-pw'",
            "CREATE FUNCTION add2(a int, b int DEFAULT 10) RETURNS int LANGUAGE sql IMMUTABLE STRICT "
            "AS $$ SELECT a + b $$",
            "CREATE FUNCTION evens(n int) RETURNS SETOF int LANGUAGE sql STABLE "
            "AS 'SELECT g FROM generate_series(0, n) g WHERE g % 2 = 0'",
            "CREATE FUNCTION dropped(int) RETURNS int LANGUAGE sql AS 'SELECT $1'",
            "CHECKPOINT",
            "CREATE OR REPLACE FUNCTION add2(a int, b int DEFAULT 100) RETURNS int LANGUAGE sql IMMUTABLE STRICT "
            "AS $$ SELECT a + b + 0 $$",
            "CREATE FUNCTION pairs(n int) RETURNS TABLE(i int, label text) LANGUAGE sql "
            "AS $$ SELECT g, 'n' || g FROM generate_series(1, n) g $$",
            "CREATE TABLE t (x int)", "INSERT INTO t VALUES (1), (2)",
            "CREATE VIEW calls_v AS SELECT x, add2(x) AS y FROM t",
            "CREATE FUNCTION tag(s text) RETURNS text LANGUAGE sql AS $$ SELECT s || '!' $$",
            "ALTER FUNCTION tag(text) RENAME TO renamed",
            "REVOKE EXECUTE ON FUNCTION add2(int, int) FROM PUBLIC",
            "ALTER FUNCTION renamed OWNER TO alice",
            "DROP FUNCTION dropped(int)",
        ]:
            c.execute(sql)
    before, alice_before = _snapshot(server), _alice_calls(server)
    assert before[2] == [(140, 3, None)]
    assert alice_before == ["42501 permission denied for function add2", "[('y!',)]"]
    server.restart(crash=crash)
    assert _snapshot(server) == before
    assert _alice_calls(server) == alice_before
