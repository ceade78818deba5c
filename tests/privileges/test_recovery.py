"""Roles, memberships, owners and privileges (column ones too) survive a restart and kill -9
(issue 20): some changes reach a checkpoint, the later ones only the WAL."""
from __future__ import annotations

import psycopg
import pytest

SUPER = "super-pw"

CATALOG = [
    "SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcanlogin, rolvaliduntil FROM pg_roles ORDER BY 1",
    "SELECT r.rolname, m.rolname, admin_option FROM pg_auth_members a JOIN pg_roles r ON r.oid = a.roleid "
    "JOIN pg_roles m ON m.oid = a.member ORDER BY 1, 2",
    "SELECT c.relname, pg_get_userbyid(c.relowner), c.relacl FROM pg_class c ORDER BY 1",
    "SELECT nspname, pg_get_userbyid(nspowner), nspacl FROM pg_namespace ORDER BY 1",
    "SELECT attname, attacl FROM pg_attribute WHERE attacl IS NOT NULL ORDER BY 1",
]


def _connect(server, user: str = "postgres", password: str = SUPER) -> psycopg.Connection:
    return psycopg.connect(host=server.host, port=server.port, user=user, password=password, dbname="postgres",
                           autocommit=True, connect_timeout=10)


def _snapshot(server) -> list[list[tuple]]:
    with _connect(server) as c:
        return [c.execute(q).fetchall() for q in CATALOG]


def _as_alice(server) -> tuple[list[tuple], str]:
    """What alice may read, and the error writing gives her."""
    with _connect(server, "alice", "a-pw") as c:
        rows = c.execute("SELECT * FROM s1.t ORDER BY 1").fetchall()
        try:
            c.execute("INSERT INTO s1.t VALUES (9)")
            refused = "inserted"
        except psycopg.Error as e:
            refused = f"{e.sqlstate} {e.diag.message_primary}"
        return rows, refused


@pytest.mark.parametrize("crash", [False, True], ids=["restart", "kill9"])
def test_privileges_and_ownership_survive(ss_server_factory, crash):
    server = ss_server_factory(password=SUPER, extra_args=["--fsync", "on"])
    with _connect(server) as c:
        for sql in ["CREATE ROLE grp NOLOGIN", "CREATE ROLE alice LOGIN PASSWORD 'a-pw' IN ROLE grp",
                    "CREATE ROLE bob LOGIN NOINHERIT CREATEROLE PASSWORD 'b-pw' VALID UNTIL '2099-01-01'",
                    "CREATE SCHEMA s1", "GRANT USAGE ON SCHEMA s1 TO grp", "CREATE TABLE s1.t (a int)",
                    "INSERT INTO s1.t VALUES (1)", "GRANT SELECT ON s1.t TO grp WITH GRANT OPTION", "CHECKPOINT",
                    "ALTER TABLE s1.t OWNER TO bob", "CREATE SEQUENCE sq", "GRANT USAGE ON SEQUENCE sq TO alice",
                    "GRANT grp TO bob WITH ADMIN OPTION", "REVOKE USAGE ON SCHEMA s1 FROM grp",
                    "GRANT USAGE ON SCHEMA s1 TO alice", "GRANT UPDATE (a) ON s1.t TO alice"]:
            c.execute(sql)
    before, alice_before = _snapshot(server), _as_alice(server)
    assert alice_before == ([(1,)], "42501 permission denied for table t")
    server.restart(crash=crash)
    assert _snapshot(server) == before
    assert _as_alice(server) == alice_before
