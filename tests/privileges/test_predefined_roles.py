"""PostgreSQL 15's predefined roles (pg_monitor, pg_read_all_data, ...) against
PostgreSQL 15: their catalog rows, pg_has_role and has_*_privilege for them,
GRANT / REVOKE of them, what they let a member do, and the statements
PostgreSQL refuses for them (CREATE ROLE pg_..., ALTER / DROP / RENAME of one).

Each statement's outcome (rows and notices, or SQLSTATE, message and
DETAIL) must equal PostgreSQL's.  Statements that change roles run in order,
as the superuser, outside any transaction block; probes of a role's powers
run inside BEGIN ... ROLLBACK after SET ROLE.
"""
from __future__ import annotations

from typing import Any, Iterator

import psycopg
import pytest

from .sides import Side, outcome, pair, psql_output

Outcome = tuple[Any, ...]

SETUP = """
CREATE ROLE q_plain LOGIN;
CREATE ROLE q_stats LOGIN;
CREATE ROLE q_monitor LOGIN;
CREATE ROLE q_noinh NOINHERIT LOGIN;
CREATE ROLE q_reader LOGIN;
CREATE ROLE q_writer LOGIN;
CREATE ROLE q_files LOGIN;
CREATE ROLE q_creator CREATEROLE LOGIN;
CREATE SCHEMA qs;
CREATE TABLE qs.qt (a int, b text);
INSERT INTO qs.qt VALUES (1, 'x');
CREATE SEQUENCE qs.qseq;
GRANT INSERT ON qs.qt TO q_files;
GRANT USAGE ON SCHEMA qs TO q_files;
GRANT pg_read_all_stats TO q_stats;
GRANT pg_monitor TO q_monitor, q_noinh;
GRANT pg_read_all_data TO q_reader;
GRANT pg_write_all_data TO q_writer;
GRANT pg_read_server_files, pg_checkpoint TO q_files
"""

#: every role probed: a superuser, one with no grant, members (direct, through pg_monitor, NOINHERIT)
ROLES = ["postgres", "q_plain", "q_stats", "q_monitor", "q_noinh", "q_reader", "q_writer", "q_files", "q_creator"]


@pytest.fixture(scope="module")
def sides(tmp_path_factory) -> Iterator[tuple[Side, Side]]:
    with pair(tmp_path_factory, SETUP) as both:
        yield both


def run(conn: psycopg.Connection, sql: str) -> Outcome:
    """One statement as is (autocommit): its rows and notices, or its error."""
    return outcome(conn, sql)


def as_role(conn: psycopg.Connection, role: str, sql: str) -> Outcome:
    """``sql`` run as ``role`` (SET ROLE) inside BEGIN ... ROLLBACK."""
    conn.execute("BEGIN")
    try:
        conn.execute(f"SET ROLE {role}")
        return run(conn, sql)
    finally:
        conn.execute("ROLLBACK")


def _assert_same(pairs: list[tuple[str, Outcome, Outcome]]) -> None:
    bad = [f"{label}\n    pg15: {a}\n    ours: {b}" for label, a, b in pairs if a != b]
    assert not bad, f"{len(bad)} of {len(pairs)} statements differ:\n" + "\n".join(bad)


def _same_as_superuser(sides, statements: list[str]) -> None:
    pg, ss = sides
    _assert_same([(sql, run(pg.admin, sql), run(ss.admin, sql)) for sql in statements])


CATALOG = [
    "SELECT oid, rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, "
    "rolconnlimit, rolpassword, rolvaliduntil, rolbypassrls, rolconfig FROM pg_roles "
    "WHERE rolname LIKE 'pg\\_%' OR rolname = 'postgres' ORDER BY 1",
    "SELECT oid, rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, "
    "rolbypassrls, rolconnlimit, rolpassword, rolvaliduntil FROM pg_authid WHERE oid < 16384 ORDER BY 1",
    "SELECT roleid, member, grantor, admin_option FROM pg_auth_members WHERE member < 16384 ORDER BY 1, 2",
    "SELECT roleid::regrole::text, member::regrole::text, grantor::regrole::text, admin_option "
    "FROM pg_auth_members ORDER BY 1, 2",
    "SELECT usename FROM pg_user ORDER BY 1",
    "SELECT 'pg_monitor'::regrole::oid, 'pg_checkpoint'::regrole::oid, 6181::regrole, 4571::regrole::text",
    "SELECT pg_get_userbyid(3375), pg_get_userbyid(6171)",
    "SELECT count(*) FROM pg_roles WHERE rolname ~ '^pg_'",
]


def test_catalog_rows_match(sides):
    """pg_roles, pg_authid, pg_auth_members (pg_monitor's three memberships and
    the grants of the setup), pg_user (login roles only) and regrole."""
    _same_as_superuser(sides, CATALOG)


@pytest.mark.parametrize("command", [r"\du", r"\du pg_*", r"\duS", r"\dg pg_monitor", r"\du q_*"])
def test_psql_role_listings_match(sides, command):
    pg, ss = sides
    assert psql_output(ss, command) == psql_output(pg, command)


def _has_role_query(role: str) -> str:
    """Every predefined role, by name and by OID, MEMBER / USAGE / WITH ADMIN OPTION, for ``role``."""
    return ("SELECT rolname, pg_has_role('{r}', rolname, 'MEMBER'), pg_has_role('{r}', oid, 'USAGE'), "
            "pg_has_role((SELECT oid FROM pg_roles WHERE rolname = '{r}'), rolname, 'USAGE'), "
            "pg_has_role('{r}', rolname, 'USAGE WITH ADMIN OPTION') "
            "FROM pg_roles WHERE rolname LIKE 'pg\\_%' ORDER BY oid").format(r=role)


def test_pg_has_role_matches(sides):
    """A superuser has every role; others those granted, directly or through
    pg_monitor (USAGE only through INHERIT); pg_has_role(name) for the current role."""
    pg, ss = sides
    pairs = []
    for role in ROLES:
        sql = _has_role_query(role)
        pairs.append((sql, run(pg.admin, sql), run(ss.admin, sql)))
        own = "SELECT pg_has_role('pg_read_all_stats', 'USAGE'), pg_has_role(3373, 'MEMBER'), pg_has_role('pg_checkpoint', 'USAGE')"
        pairs.append((f"[{role}] {own}", as_role(pg.admin, role, own), as_role(ss.admin, role, own)))
    for sql in ["SELECT pg_has_role('pg_nosuch', 'USAGE')", "SELECT pg_has_role('q_plain', 'pg_monitor', 'SELECT')",
                "SELECT pg_has_role(3373, 3375, 'MEMBER'), pg_has_role('pg_read_all_stats', 'pg_monitor', 'MEMBER')"]:
        pairs.append((sql, run(pg.admin, sql), run(ss.admin, sql)))
    _assert_same(pairs)


PRIVILEGE_PROBES = [
    "SELECT has_table_privilege('{r}', 'qs.qt', 'SELECT'), has_table_privilege('{r}', 'qs.qt', 'INSERT'), "
    "has_table_privilege('{r}', 'qs.qt', 'UPDATE, DELETE'), has_table_privilege('{r}', 'qs.qt', 'TRUNCATE'), "
    "has_table_privilege('{r}', 'qs.qt', 'SELECT WITH GRANT OPTION')",
    "SELECT has_column_privilege('{r}', 'qs.qt', 'a', 'SELECT'), has_column_privilege('{r}', 'qs.qt', 'b', 'UPDATE')",
    "SELECT has_sequence_privilege('{r}', 'qs.qseq', 'SELECT'), has_sequence_privilege('{r}', 'qs.qseq', 'UPDATE'), "
    "has_sequence_privilege('{r}', 'qs.qseq', 'USAGE')",
    "SELECT has_schema_privilege('{r}', 'qs', 'USAGE'), has_schema_privilege('{r}', 'qs', 'CREATE'), "
    "has_database_privilege('{r}', 'postgres', 'CONNECT')",
]


def test_has_privilege_with_role_names_matches(sides):
    """has_*_privilege takes a predefined role's name or a member's: pg_read_all_data
    reads every table and sequence and uses every schema, pg_write_all_data writes."""
    pg, ss = sides
    roles = ROLES + ["pg_read_all_data", "pg_write_all_data", "pg_monitor", "pg_database_owner"]
    pairs = []
    for role in roles:
        for tmpl in PRIVILEGE_PROBES:
            sql = tmpl.format(r=role)
            pairs.append((sql, run(pg.admin, sql), run(ss.admin, sql)))
    _assert_same(pairs)


#: what a role may do by the predefined roles it has (each inside BEGIN ... ROLLBACK)
POWERS = [
    "SELECT * FROM qs.qt ORDER BY 1",
    "INSERT INTO qs.qt VALUES (2, 'y')",
    "UPDATE qs.qt SET b = 'z'",
    "SELECT nextval('qs.qseq') > 0",
    "CHECKPOINT",
    "COPY qs.qt FROM '/nonexistent/splitstream-test-file'",
    "COPY qs.qt TO '/nonexistent/splitstream-test-file'",
    "COPY qs.qt TO PROGRAM 'cat'",
    "SELECT count(*) FROM pg_settings WHERE name IN ('data_directory', 'config_file', 'hba_file')",
    # a superuser-only parameter read by name (its value: the same on both sides)
    "SHOW dynamic_library_path",
    "SHOW Session_Preload_Libraries",
    "SELECT current_setting('config_file') IS NOT NULL",
    "SELECT current_setting('data_directory', true) IS NOT NULL",
    "SHOW work_mem",
]


def test_what_members_may_do_matches(sides):
    """pg_read_all_data / pg_write_all_data grant reading / writing, pg_checkpoint
    CHECKPOINT, pg_read_server_files COPY from a file, pg_read_all_settings (through
    pg_monitor) the superuser-only settings; the others are refused as PostgreSQL refuses them."""
    pg, ss = sides
    _assert_same([(f"[{role}] {sql}", as_role(pg.admin, role, sql), as_role(ss.admin, role, sql))
                   for role in ROLES if role != "postgres" for sql in POWERS])


def test_grant_and_revoke_match(sides):
    """Membership in a predefined role is granted and revoked like any (notices
    for the repeated ones); a predefined role may be made a member of another role."""
    _same_as_superuser(sides, [
        "CREATE ROLE q_g1",
        "GRANT pg_read_all_stats TO q_g1",
        "GRANT pg_read_all_stats TO q_g1",
        "GRANT pg_signal_backend, pg_stat_scan_tables TO q_g1 WITH ADMIN OPTION",
        "SELECT roleid::regrole::text, admin_option FROM pg_auth_members WHERE member = 'q_g1'::regrole ORDER BY 1",
        _has_role_query("q_g1"),
        "REVOKE ADMIN OPTION FOR pg_signal_backend FROM q_g1",
        "REVOKE pg_read_all_stats FROM q_g1",
        "REVOKE pg_read_all_stats FROM q_g1",
        "SELECT roleid::regrole::text, admin_option FROM pg_auth_members WHERE member = 'q_g1'::regrole ORDER BY 1",
        "GRANT q_g1 TO pg_monitor",
        "SELECT roleid::regrole::text, member::regrole::text FROM pg_auth_members "
        "WHERE roleid = 'q_g1'::regrole ORDER BY 1, 2",
        "SELECT pg_has_role('pg_monitor', 'q_g1', 'USAGE'), pg_has_role('q_monitor', 'q_g1', 'MEMBER')",
        "GRANT pg_monitor TO q_g1",
        "REVOKE q_g1 FROM pg_monitor",
        "GRANT pg_monitor TO q_g1",
        "CREATE ROLE q_g2 IN ROLE pg_read_all_data, pg_write_all_data",
        "CREATE ROLE q_g3 ROLE pg_checkpoint",
        "SELECT roleid::regrole::text, member::regrole::text FROM pg_auth_members "
        "WHERE member IN ('q_g1'::regrole, 'q_g2'::regrole, 'pg_checkpoint'::regrole) ORDER BY 1, 2",
        "DROP ROLE q_g1",
        "DROP ROLE q_g2",
        "DROP ROLE q_g3",
        "SELECT roleid::regrole::text, member::regrole::text FROM pg_auth_members WHERE member < 16384 ORDER BY 1, 2",
    ])


def test_refusals_match(sides):
    """Names starting with pg_ are reserved; predefined roles cannot be altered,
    renamed or dropped; pg_database_owner has no explicit members and is no member."""
    _same_as_superuser(sides, [
        "CREATE ROLE pg_x",
        "CREATE USER pg_monitor",
        "CREATE GROUP pg_anything",
        "CREATE ROLE public",
        "ALTER ROLE pg_monitor LOGIN",
        "ALTER USER pg_read_all_data WITH PASSWORD 'x'",
        "ALTER ROLE pg_nosuch NOLOGIN",
        "ALTER ROLE pg_database_owner CONNECTION LIMIT 3",
        "ALTER ROLE pg_monitor SET work_mem = '1MB'",
        "ALTER ROLE pg_monitor IN DATABASE postgres SET work_mem = '1MB'",
        "ALTER ROLE pg_monitor RESET ALL",
        "ALTER ROLE pg_monitor RENAME TO q_monitor2",
        "ALTER ROLE q_plain RENAME TO pg_plain",
        "ALTER ROLE pg_nosuch RENAME TO q_x",
        "DROP ROLE pg_monitor",
        "DROP ROLE IF EXISTS pg_checkpoint",
        "DROP ROLE q_plain, pg_database_owner",
        "DROP ROLE pg_nosuch",
        "DROP ROLE IF EXISTS pg_nosuch",
        "GRANT pg_database_owner TO q_plain",
        "GRANT q_plain TO pg_database_owner",
        "CREATE ROLE q_dbo IN ROLE pg_database_owner",
        "REVOKE pg_database_owner FROM q_plain",
        "GRANT pg_read_all_stats TO pg_monitor",
        "GRANT pg_monitor TO pg_read_all_stats",
        "SELECT rolname FROM pg_roles WHERE rolname IN ('q_plain', 'pg_plain', 'q_monitor2', 'q_dbo') ORDER BY 1",
    ])


def test_refusals_to_a_createrole_role_match(sides):
    """A CREATEROLE role meets the same refusals, and may grant predefined roles (PostgreSQL 15)."""
    pg, ss = sides
    statements = ["ALTER ROLE pg_monitor RENAME TO q_m", "DROP ROLE pg_signal_backend", "CREATE ROLE pg_q",
                  "ALTER ROLE pg_monitor NOLOGIN", "GRANT pg_read_all_stats TO q_plain",
                  "GRANT pg_database_owner TO q_plain", "REVOKE pg_monitor FROM q_monitor"]
    _assert_same([(f"[q_creator] {sql}", as_role(pg.admin, "q_creator", sql), as_role(ss.admin, "q_creator", sql))
                  for sql in statements])
