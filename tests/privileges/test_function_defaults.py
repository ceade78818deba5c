"""ALTER DEFAULT PRIVILEGES ... ON FUNCTIONS reaches new functions, and DROP
OWNED drops a role's functions (refusing, then cascading to, a view that
calls one), compared with PostgreSQL 15 statement by statement."""
from __future__ import annotations

import psycopg

SCRIPT = """
CREATE ROLE fd_r
GRANT CREATE ON SCHEMA public TO fd_r
ALTER DEFAULT PRIVILEGES FOR ROLE fd_r REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC
SET ROLE fd_r
CREATE FUNCTION fd_f(int) RETURNS int LANGUAGE sql AS 'SELECT $1 + 1'
RESET ROLE
SELECT proname, proacl::text FROM pg_proc WHERE proname = 'fd_f'
SELECT has_function_privilege('public', 'fd_f(int)', 'EXECUTE')
CREATE VIEW fd_v AS SELECT fd_f(1)
DROP OWNED BY fd_r
DROP OWNED BY fd_r CASCADE
SELECT count(*) FROM pg_proc WHERE proname = 'fd_f'
SELECT count(*) FROM pg_class WHERE relname = 'fd_v'
DROP ROLE fd_r
""".strip().splitlines()


def _run(conn: psycopg.Connection) -> list[tuple]:
    out = []
    for sql in SCRIPT:
        try:
            cur = conn.execute(sql)
            out.append(("ok", cur.fetchall() if cur.description else None))
        except psycopg.Error as e:
            out.append(("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail))
    return out


def test_default_function_privileges_and_drop_owned_as_postgres(ss_conn, pg_conn):
    ours, theirs = _run(ss_conn), _run(pg_conn)
    assert ours == theirs
    assert ("error", "2BP01") == ours[9][:2]
