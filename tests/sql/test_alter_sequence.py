"""ALTER SEQUENCE compared with PostgreSQL 15, statement by statement: the
options (RESTART, START, INCREMENT, MIN/MAXVALUE, CACHE, CYCLE, AS), their
errors, nextval/currval/setval after each, OWNED BY and what DROP then
takes with it, and IF EXISTS.  Each script runs in a schema of its own."""
from __future__ import annotations

import psycopg
import pytest

from tests.support.fidelity import mismatches

SCRIPTS = {
    "restart_start_increment": [
        "CREATE SEQUENCE {s}.q",
        "SELECT nextval('{s}.q'), nextval('{s}.q')",
        "ALTER SEQUENCE {s}.q RESTART",
        "SELECT nextval('{s}.q'), currval('{s}.q')",
        "ALTER SEQUENCE {s}.q RESTART WITH 10",
        "SELECT last_value, is_called FROM {s}.q",
        "SELECT nextval('{s}.q'), nextval('{s}.q')",
        "ALTER SEQUENCE {s}.q RESTART 20 INCREMENT BY 5",
        "SELECT nextval('{s}.q'), nextval('{s}.q')",
        "ALTER SEQUENCE {s}.q START WITH 7",
        "SELECT nextval('{s}.q')",
        "ALTER SEQUENCE {s}.q RESTART",
        "SELECT nextval('{s}.q')",
        "ALTER SEQUENCE {s}.q INCREMENT 0",
        "ALTER SEQUENCE {s}.q INCREMENT BY -1",
        "SELECT nextval('{s}.q'), nextval('{s}.q')",
        "SELECT setval('{s}.q', 3, false), nextval('{s}.q')",
        "SELECT start_value, min_value, max_value, increment_by, cycle, cache_size, data_type::text "
        "FROM pg_sequences WHERE schemaname = '{s}'",
    ],
    "bounds": [
        "CREATE SEQUENCE {s}.q",
        "SELECT nextval('{s}.q'), nextval('{s}.q'), nextval('{s}.q')",
        "ALTER SEQUENCE {s}.q MAXVALUE 2",
        "ALTER SEQUENCE {s}.q MINVALUE 5",
        "ALTER SEQUENCE {s}.q MINVALUE 5 START 5 RESTART",
        "ALTER SEQUENCE {s}.q RESTART WITH 4",
        "ALTER SEQUENCE {s}.q MAXVALUE 7 RESTART WITH 8",
        "ALTER SEQUENCE {s}.q MAXVALUE 3 MINVALUE 3",
        "ALTER SEQUENCE {s}.q START 100",
        "ALTER SEQUENCE {s}.q MAXVALUE 6 NO CYCLE",
        "SELECT nextval('{s}.q'), nextval('{s}.q')",
        "SELECT nextval('{s}.q')",
        "ALTER SEQUENCE {s}.q CYCLE",
        "SELECT nextval('{s}.q')",
        "ALTER SEQUENCE {s}.q NO MAXVALUE NO MINVALUE",
        "SELECT min_value, max_value, cycle FROM pg_sequences WHERE schemaname = '{s}'",
        "ALTER SEQUENCE {s}.q INCREMENT -1 NO MAXVALUE NO MINVALUE",
        "ALTER SEQUENCE {s}.q INCREMENT -1 NO MAXVALUE NO MINVALUE START -1 RESTART",
        "SELECT min_value, max_value, nextval('{s}.q') FROM pg_sequences WHERE schemaname = '{s}'",
    ],
    "types_cache_and_errors": [
        "CREATE SEQUENCE {s}.q",
        "ALTER SEQUENCE {s}.q AS integer",
        "SELECT data_type::text, max_value FROM pg_sequences WHERE schemaname = '{s}'",
        "ALTER SEQUENCE {s}.q AS smallint MAXVALUE 40000",
        "ALTER SEQUENCE {s}.q AS text",
        "ALTER SEQUENCE {s}.q AS nosuchtype",
        "ALTER SEQUENCE {s}.q AS int[]",
        "ALTER SEQUENCE {s}.q AS pg_catalog.int2",
        "ALTER SEQUENCE {s}.q AS int8",
        "ALTER SEQUENCE {s}.q MAXVALUE 100",
        "ALTER SEQUENCE {s}.q AS bigint",
        "SELECT data_type::text, max_value FROM pg_sequences WHERE schemaname = '{s}'",
        "ALTER SEQUENCE {s}.q CACHE 0",
        "ALTER SEQUENCE {s}.q CACHE 1",
        "ALTER SEQUENCE {s}.q RESTART 1 RESTART 2",
        "ALTER SEQUENCE {s}.q RESTART 1.5",
        "ALTER SEQUENCE {s}.q MAXVALUE 99999999999999999999",
        "ALTER SEQUENCE {s}.q MAXVALUE 5 NO MAXVALUE",
        "ALTER SEQUENCE {s}.q SEQUENCE NAME x",
        "ALTER SEQUENCE {s}.q RESTART WITH -9223372036854775808",
        "ALTER SEQUENCE {s}.q OWNED BY nosuch",
        "ALTER SEQUENCE {s}.q OWNED BY otherdb.{s}.t.a",
        "ALTER SEQUENCE {s}.q OWNED BY a.b.c.d.e",
        "ALTER SEQUENCE {s}.q",
        "ALTER SEQUENCE {s}.nosuch RESTART",
        "ALTER SEQUENCE IF EXISTS {s}.nosuch RESTART",
        "CREATE TABLE {s}.t (a int)",
        "ALTER SEQUENCE {s}.t RESTART",
    ],
    "owned_by": [
        "CREATE TABLE {s}.t (id int, b int)",
        "CREATE SEQUENCE {s}.q",
        "CREATE SEQUENCE {s}.q2",
        "ALTER SEQUENCE {s}.q OWNED BY {s}.t.id",
        "SELECT c.relname, d.refobjsubid, d.deptype FROM pg_depend d JOIN pg_class c ON c.oid = d.objid "
        "WHERE d.refobjid = '{s}.t'::regclass AND d.classid = 'pg_class'::regclass ORDER BY 1",
        "SELECT pg_get_serial_sequence('{s}.t', 'id')",
        "ALTER TABLE {s}.t RENAME COLUMN id TO ident",
        "SELECT pg_get_serial_sequence('{s}.t', 'ident')",
        "CREATE TABLE {s}.w (id serial, v int)",
        "SELECT column_default::text FROM information_schema.columns WHERE table_schema = '{s}' AND table_name = 'w'",
        "INSERT INTO {s}.w (v) VALUES (1) RETURNING id",
        "DROP TABLE {s}.w",
        "ALTER SEQUENCE {s}.q2 OWNED BY {s}.t.nosuch",
        "ALTER SEQUENCE {s}.q2 OWNED BY {s}.nosuch.id",
        "ALTER SEQUENCE {s}.q2 OWNED BY t",
        "ALTER SEQUENCE {s}.q2 OWNED BY public.pg_class_like.id",
        "ALTER SEQUENCE {s}.q2 OWNED BY {s}.q.last_value",
        "ALTER SEQUENCE {s}.q2 OWNED BY {s}.t.b",
        "ALTER TABLE {s}.t DROP COLUMN b",
        "SELECT relname FROM pg_class WHERE relnamespace = '{s}'::regnamespace ORDER BY 1",
        "ALTER SEQUENCE {s}.q OWNED BY NONE",
        "DROP TABLE {s}.t",
        "SELECT relname FROM pg_class WHERE relnamespace = '{s}'::regnamespace ORDER BY 1",
    ],
    "rename": [
        "SET search_path = {s}",
        "CREATE TABLE t (id serial, g int GENERATED BY DEFAULT AS IDENTITY, r int DEFAULT nextval('t_id_seq'))",
        "CREATE SEQUENCE other",
        "ALTER SEQUENCE t_id_seq RENAME TO other",
        "ALTER SEQUENCE t RENAME TO x",
        "ALTER SEQUENCE IF EXISTS nosuch RENAME TO x",
        "ALTER SEQUENCE t_id_seq RENAME TO \"Ids\"",
        "ALTER TABLE t_g_seq RENAME TO gs",
        "INSERT INTO t DEFAULT VALUES RETURNING id, g, r",
        "SELECT column_name::text, column_default::text FROM information_schema.columns WHERE table_name = 't' "
        "AND column_name <> 'g' ORDER BY 1",
        "SELECT pg_get_serial_sequence('t', 'id'), pg_get_serial_sequence('t', 'g')",
        "ALTER SEQUENCE \"Ids\" RESTART 7",
        "INSERT INTO t DEFAULT VALUES RETURNING id, g, r",
        "RESET search_path",
    ],
    "serial_and_identity": [
        "SET search_path = {s}",      # a serial default names its sequence as the search path shows it
        "CREATE TABLE {s}.t (id serial, g int GENERATED ALWAYS AS IDENTITY, v text)",
        "ALTER SEQUENCE {s}.t_id_seq OWNED BY NONE",
        "DROP TABLE {s}.t",
        "SELECT relname FROM pg_class WHERE relnamespace = '{s}'::regnamespace ORDER BY 1",
        "CREATE TABLE {s}.u (id serial, g int GENERATED ALWAYS AS IDENTITY)",
        "ALTER SEQUENCE {s}.u_g_seq OWNED BY NONE",
        "ALTER SEQUENCE {s}.u_id_seq RESTART WITH 50",
        "INSERT INTO {s}.u DEFAULT VALUES RETURNING id, g",
        "ALTER SEQUENCE {s}.u_g_seq INCREMENT 10 RESTART 100",
        "INSERT INTO {s}.u DEFAULT VALUES RETURNING id, g",
        "RESET search_path",
    ],
}


def _other_schema(conn: psycopg.Connection, s: str) -> None:
    conn.execute(f"CREATE SCHEMA {s}_o")  # type: ignore[arg-type]
    conn.execute(f"CREATE TABLE {s}_o.ot (id int)")  # type: ignore[arg-type]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_alter_sequence_like_postgres(script, ss_conn, pg_conn, unique_name):
    s = unique_name("s")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE SCHEMA {s}")  # type: ignore[arg-type]
    try:
        wrong = mismatches(ss_conn, pg_conn, [sql.format(s=s) for sql in SCRIPTS[script]])
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP SCHEMA {s} CASCADE")  # type: ignore[arg-type]
    assert not wrong, "\n".join(wrong)


def test_owned_by_a_table_of_another_schema_is_refused_like_postgres(ss_conn, pg_conn, unique_name):
    s = unique_name("s")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE SCHEMA {s}")  # type: ignore[arg-type]
        _other_schema(conn, s)
    try:
        wrong = mismatches(ss_conn, pg_conn, [f"CREATE SEQUENCE {s}.q", f"ALTER SEQUENCE {s}.q OWNED BY {s}_o.ot.id",
                                              f"ALTER SEQUENCE {s}.q OWNED BY {s}_o.ot.id RESTART 5"])
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP SCHEMA {s} CASCADE")  # type: ignore[arg-type]
            conn.execute(f"DROP SCHEMA {s}_o CASCADE")  # type: ignore[arg-type]
    assert not wrong, "\n".join(wrong)


def test_set_schema_is_refused_with_a_hint(ss_conn, unique_name):
    q = unique_name("q")
    ss_conn.execute(f"CREATE SEQUENCE {q}")  # type: ignore[arg-type]
    try:
        with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
            ss_conn.execute(f"ALTER SEQUENCE {q} SET SCHEMA pg_temp")  # type: ignore[arg-type]
        assert e.value.diag.message_hint
        assert ss_conn.execute(f"SELECT nextval('{q}')").fetchone() == (1,)  # type: ignore[arg-type]
    finally:
        ss_conn.execute(f"DROP SEQUENCE {q}")  # type: ignore[arg-type]


def test_owner_checks_like_postgres(ss_conn, pg_conn, unique_name):
    s, r = unique_name("s"), unique_name("r")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE SCHEMA {s}")  # type: ignore[arg-type]
        conn.execute(f"CREATE ROLE {r}")  # type: ignore[arg-type]
        conn.execute(f"GRANT ALL ON SCHEMA {s} TO {r}")  # type: ignore[arg-type]
    try:
        wrong = mismatches(ss_conn, pg_conn, [
            f"CREATE SEQUENCE {s}.q", f"CREATE TABLE {s}.t (id int)", f"ALTER TABLE {s}.t OWNER TO {r}",
            f"ALTER SEQUENCE {s}.q OWNED BY {s}.t.id",
            f"SET ROLE {r}", f"ALTER SEQUENCE {s}.q RESTART", f"ALTER SEQUENCE {s}.q RENAME TO q2", "RESET ROLE",
            f"ALTER SEQUENCE {s}.q OWNER TO {r}", f"ALTER SEQUENCE {s}.q OWNED BY {s}.t.id",
            f"SET ROLE {r}", f"ALTER SEQUENCE {s}.q INCREMENT 2 RESTART 4", f"SELECT nextval('{s}.q'), nextval('{s}.q')",
            "RESET ROLE",
        ])
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute("RESET ROLE")
            conn.execute(f"DROP SCHEMA {s} CASCADE")  # type: ignore[arg-type]
            conn.execute(f"DROP ROLE {r}")  # type: ignore[arg-type]
    assert not wrong, "\n".join(wrong)
