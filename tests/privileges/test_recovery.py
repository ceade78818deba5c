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
    "SELECT pg_get_userbyid(defaclrole), defaclnamespace, defaclobjtype, defaclacl FROM pg_default_acl ORDER BY 1, 2, 3",
    "SELECT datname, datacl FROM pg_database ORDER BY 1",
    "SELECT setdatabase, pg_get_userbyid(setrole), setconfig FROM pg_db_role_setting ORDER BY 1, 2",
]


def _connect(server, user: str = "postgres", password: str = SUPER) -> psycopg.Connection:
    return psycopg.connect(host=server.host, port=server.port, user=user, password=password, dbname="postgres",
                           autocommit=True, connect_timeout=10)


def _snapshot(server) -> list[list[tuple]]:
    with _connect(server) as c:
        return [c.execute(q).fetchall() for q in CATALOG]


def _as_alice(server) -> tuple[list[tuple], str, list[tuple]]:
    """What alice may read, the error writing gives her, and the settings she starts with."""
    with _connect(server, "alice", "a-pw") as c:
        rows = c.execute("SELECT * FROM s1.t ORDER BY 1").fetchall()
        settings = c.execute("SELECT current_setting('work_mem'), current_setting('search_path'), "
                             "current_setting('extra_float_digits')").fetchall()
        try:
            c.execute("INSERT INTO s1.t VALUES (9)")
            refused = "inserted"
        except psycopg.Error as e:
            refused = f"{e.sqlstate} {e.diag.message_primary}"
        return rows, refused, settings


def _carol_refused(server) -> str:
    """carol holds no CONNECT (PUBLIC's was revoked)."""
    try:
        _connect(server, "carol", "c-pw").close()
        return "connected"
    except psycopg.OperationalError as e:
        return [ln.split("FATAL:")[-1].strip() for ln in str(e).splitlines() if "FATAL:" in ln][-1]


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
                    "GRANT USAGE ON SCHEMA s1 TO alice", "GRANT UPDATE (a) ON s1.t TO alice",
                    "ALTER DEFAULT PRIVILEGES FOR ROLE bob IN SCHEMA s1 GRANT SELECT ON TABLES TO alice",
                    "GRANT CREATE, USAGE ON SCHEMA s1 TO bob",
                    "ALTER DEFAULT PRIVILEGES GRANT USAGE ON SEQUENCES TO grp", "CHECKPOINT",
                    "ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC",
                    "REVOKE CONNECT ON DATABASE postgres FROM PUBLIC", "GRANT CONNECT ON DATABASE postgres TO grp",
                    "GRANT CREATE ON DATABASE postgres TO bob WITH GRANT OPTION",
                    "ALTER ROLE alice SET work_mem = '3MB'", "ALTER ROLE alice IN DATABASE postgres SET "
                    "search_path = s1, public", "ALTER DATABASE postgres SET extra_float_digits = 2",
                    "CREATE ROLE carol LOGIN PASSWORD 'c-pw'", "CREATE ROLE dave", "CREATE TABLE dt (a int)",
                    "ALTER TABLE dt OWNER TO dave", "GRANT SELECT ON s1.t TO dave", "DROP OWNED BY dave"]:
            c.execute(sql)
    before, alice_before = _snapshot(server), _as_alice(server)
    assert alice_before == ([(1,)], "42501 permission denied for table t", [("3MB", "s1, public", "2")])
    assert _carol_refused(server) == 'permission denied for database "postgres"'
    assert len(before[5]) == 3 and len(before[7]) == 3 and "dt" not in str(before[2])
    server.restart(crash=crash)
    assert _snapshot(server) == before
    assert _as_alice(server) == alice_before
    assert _carol_refused(server) == 'permission denied for database "postgres"'
    with _connect(server) as c:                 # the default privileges still apply to new objects
        c.execute("SET ROLE bob")
        c.execute("CREATE TABLE s1.t2 (a int)")
        assert c.execute("SELECT relacl FROM pg_class WHERE relname = 't2'").fetchone() == \
            (["alice=r/bob", "bob=arwdDxt/bob"],)


def test_a_checkpoint_from_before_these_catalogs_reads():
    """Checkpoints written before databases' ACLs, default privileges and role settings were kept hold
    no such fields: they read as PostgreSQL's initial catalogs (no entries, the databases' default ACLs)."""
    from splitstream.catalog.storage import records
    from splitstream.catalog.storage.database import BOOTSTRAP_DATABASES, State, bootstrap_state

    rec = records.loads(records.dumps(bootstrap_state().to_record()))
    for name in ("databases", "default_acls", "role_settings"):
        del rec.fields[name]
    st = State.from_record(rec)
    assert list(st.databases.values()) == list(BOOTSTRAP_DATABASES)
    assert st.default_acls == {} and st.role_settings == {}
