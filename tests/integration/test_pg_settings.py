"""pg_settings and SHOW ALL compared with PostgreSQL 15.

The columns that do not depend on the installation (name, unit, vartype,
context, category, descriptions, enumvals, min_val, max_val, boot_val) for
every parameter both list; and, for parameters SET in several spellings,
what pg_settings (setting, unit, reset_val, source), SHOW and
current_setting() answer after SET, RESET, SET LOCAL in a block, a ROLLBACK
and set_config(..., false/true)."""
from __future__ import annotations

import psycopg
import pytest

#: the columns of pg_settings that are facts about PostgreSQL, not about one installation
FIXED = ("name", "unit", "vartype", "context", "category", "short_desc", "extra_desc", "enumvals", "min_val",
         "max_val", "boot_val")
#: boot values that are this server's own (its version), not PostgreSQL 15.x's
OWN_BOOT = {"server_version", "server_version_num"}

#: (parameter, value as a client spells it): units, bools, enums, reals
SPELLINGS = [
    ("work_mem", "1024"), ("work_mem", "2MB"), ("work_mem", "4MB"), ("maintenance_work_mem", "1GB"),
    ("statement_timeout", "1h"), ("statement_timeout", "1500"), ("lock_timeout", "90s"),
    ("idle_session_timeout", "2min"), ("effective_cache_size", "1GB"), ("temp_buffers", "16MB"),
    ("enable_seqscan", "off"), ("enable_hashjoin", "false"), ("client_min_messages", "WARNING"),
    ("constraint_exclusion", "On"), ("random_page_cost", "1.5"), ("vacuum_cost_delay", "5ms"),
    ("vacuum_cost_delay", "0.5"), ("log_min_duration_statement", "250ms"), ("plan_cache_mode", "force_generic_plan"),
]


def _rows(conn: psycopg.Connection, sql: str, params: list | None = None) -> list[tuple]:
    return conn.execute(sql, params).fetchall()


def _fixed(conn: psycopg.Connection) -> dict[str, tuple]:
    return {r[0]: r for r in _rows(conn, f"SELECT {', '.join(FIXED)} FROM pg_settings")}


def test_every_parameter_described_as_postgresql(ss_conn, pg_conn):
    ours, theirs = _fixed(ss_conn), _fixed(pg_conn)
    assert set(theirs) - set(ours) == set(), "PostgreSQL 15 parameters missing from pg_settings"
    boot = FIXED.index("boot_val")
    differ = {}
    for name, row in theirs.items():
        mine = ours[name]
        if name.lower() in OWN_BOOT:
            row, mine = row[:boot] + row[boot + 1:], mine[:boot] + mine[boot + 1:]
        if row != mine:
            differ[name] = (mine, row)
    assert differ == {}


def test_own_parameters_listed_in_their_categories(ss_conn, pg_conn):
    theirs = {r[0] for r in _rows(pg_conn, "SELECT name FROM pg_settings")}
    extra = _rows(ss_conn, "SELECT name, category, context, vartype FROM pg_settings ORDER BY name")
    own = {name: category for name, category, _, _ in extra if name not in theirs}
    assert "executor_backend" in own and "pipelinedb.batch_mem" in own
    assert all(c.startswith("splitstream") or c == "PipelineDB" for c in own.values()), own
    assert all(c == "PipelineDB" for n, c in own.items() if n.startswith("pipelinedb."))


def test_names_in_postgresql_order(ss_conn, pg_conn):
    """Row order of a plain scan, and SHOW ALL's, are PostgreSQL's (names compared without regard to case)."""
    theirs = [r[0] for r in _rows(pg_conn, "SELECT name FROM pg_settings")]
    ours = [r[0] for r in _rows(ss_conn, "SELECT name FROM pg_settings") if r[0] in set(theirs)]
    assert ours == theirs


def test_show_all_as_postgresql(ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute("SET work_mem = '3MB'")
        conn.execute("SET enable_seqscan = 'no'")
    try:
        theirs = _rows(pg_conn, "SHOW ALL")
        ours = _rows(ss_conn, "SHOW ALL")
        names = {r[0] for r in theirs}
        mine = [r for r in ours if r[0] in names]
        assert [(r[0], r[2]) for r in mine] == [(r[0], r[2]) for r in theirs]
        shown = {r[0]: r[1] for r in mine}
        assert (shown["work_mem"], shown["enable_seqscan"]) == ("3MB", "off")
        # every row of SHOW ALL is a row of pg_settings, with its short description
        described = {r[0]: r[1] for r in _rows(ss_conn, "SELECT name, short_desc FROM pg_settings")}
        assert {r[0]: r[2] for r in ours} == described
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute("RESET ALL")


def _observe(conn: psycopg.Connection, name: str) -> tuple:
    row = _rows(conn, "SELECT setting, unit, reset_val, source FROM pg_settings WHERE name = %s", [name])
    shown = _rows(conn, f"SHOW {name}")[0][0]
    current = _rows(conn, "SELECT current_setting(%s)", [name])[0][0]
    return (row[0] if row else None, shown, current)


def _scenario(conn: psycopg.Connection, name: str, value: str) -> list[tuple]:
    """What a client sees of ``name`` along SET, RESET, SET LOCAL, ROLLBACK and set_config."""
    seen = [_observe(conn, name)]
    conn.execute(f"SET {name} = '{value}'")
    seen.append(_observe(conn, name))
    conn.execute(f"RESET {name}")
    seen.append(_observe(conn, name))
    with conn.transaction():
        conn.execute(f"SET LOCAL {name} = '{value}'")
        seen.append(_observe(conn, name))
    seen.append(_observe(conn, name))
    try:
        with conn.transaction():
            conn.execute(f"SET {name} TO '{value}'")
            seen.append(_observe(conn, name))
            raise _Rollback()
    except _Rollback:
        pass
    seen.append(_observe(conn, name))
    conn.execute("SELECT set_config(%s, %s, false)", [name, value])
    seen.append(_observe(conn, name))
    conn.execute(f"SET {name} TO DEFAULT")
    seen.append(_observe(conn, name))
    with conn.transaction():
        conn.execute("SELECT set_config(%s, %s, true)", [name, value])
        seen.append(_observe(conn, name))
    seen.append(_observe(conn, name))
    conn.execute("SELECT set_config(%s, %s, true)", [name, value])     # outside a block: ends with its statement
    seen.append(_observe(conn, name))
    return seen


class _Rollback(Exception):
    pass


@pytest.mark.parametrize("name,value", SPELLINGS)
def test_set_reset_local_set_config_as_postgresql(ss_conn, pg_conn, name, value):
    try:
        assert _scenario(ss_conn, name, value) == _scenario(pg_conn, name, value)
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"RESET {name}")


def test_client_given_setting_is_its_reset_value(ss_server, pg15):
    """A setting from the startup packet: source 'client', and RESET goes back to it."""
    seen = []
    for dsn in (ss_server.dsn, pg15.dsn):
        with psycopg.connect(dsn, autocommit=True, options="-c work_mem=3MB -c enable_seqscan=off") as conn:
            conn.execute("SET work_mem = '5MB'")
            first = _rows(conn, "SELECT name, setting, reset_val, source FROM pg_settings "
                                "WHERE name IN ('work_mem', 'enable_seqscan') ORDER BY name")
            conn.execute("RESET ALL")
            seen.append((first, _rows(conn, "SELECT name, setting, reset_val, source FROM pg_settings "
                                            "WHERE name IN ('work_mem', 'enable_seqscan') ORDER BY name")))
    assert seen[0] == seen[1]


def test_superuser_only_parameters_hidden_from_other_roles(ss_conn, pg_conn, unique_name):
    role = unique_name("r")
    seen = []
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE ROLE {role}")
        try:
            conn.execute(f"SET ROLE {role}")
            listed = {r[0] for r in _rows(conn, "SELECT name FROM pg_settings")}
            shown = {r[0] for r in _rows(conn, "SHOW ALL")}
            conn.execute("RESET ROLE")
            everything = {r[0] for r in _rows(conn, "SELECT name FROM pg_settings")}
            seen.append((everything - listed, everything - shown))
        finally:
            conn.execute("RESET ROLE")
            conn.execute(f"DROP ROLE {role}")
    assert seen[0] == seen[1]
    assert "data_directory" in seen[0][0]


def test_pg_dump_setup_query(ss_conn, pg_conn):
    """pg_dump (15.8 and later) sets restrict_nonsystem_relation_kind through pg_settings."""
    seen = []
    for conn in (ss_conn, pg_conn):
        try:
            rows = _rows(conn, "SELECT set_config(name, 'view, foreign-table', false) FROM pg_settings "
                               "WHERE name = 'restrict_nonsystem_relation_kind'")
            seen.append((rows, _observe(conn, "restrict_nonsystem_relation_kind")))
        finally:
            conn.execute("RESET restrict_nonsystem_relation_kind")
    assert seen[0] == seen[1]
    assert seen[0][0] == [("view, foreign-table",)]


def test_role_and_database_settings_sources(ss_server_factory, pg15, unique_name):
    """ALTER ROLE / ALTER ROLE ... IN DATABASE ... SET: source 'user' / 'database user', RESET goes back to them.
    (With a password: a trusting splitstream logs every name in as the superuser.)"""
    role = unique_name("r")
    seen = []
    for dsn in (ss_server_factory(password="pw").dsn, pg15.dsn):
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
            admin.execute(f"ALTER ROLE {role} SET work_mem = '3MB'")
            admin.execute(f"ALTER ROLE {role} IN DATABASE postgres SET enable_seqscan = off")
            try:
                with psycopg.connect(dsn.replace("user=postgres", f"user={role}"), password="pw",
                                     autocommit=True) as conn:
                    conn.execute("SET work_mem = '5MB'")
                    query = ("SELECT name, setting, reset_val, source FROM pg_settings "
                             "WHERE name IN ('work_mem', 'enable_seqscan') ORDER BY name")
                    first = _rows(conn, query)
                    conn.execute("RESET ALL")
                    seen.append((first, _rows(conn, query)))
            finally:
                admin.execute(f"DROP ROLE {role}")
    assert seen[0] == seen[1]
    assert seen[0][1] == [("enable_seqscan", "off", "off", "database user"), ("work_mem", "3072", "3072", "user")]
