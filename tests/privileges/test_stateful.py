"""A session of grants, revokes, ownership changes and role management, step
by step against PostgreSQL 15 (issue 20).  Unlike test_differential.py the
steps keep their effects, so grant-option chains, CASCADE, REASSIGN OWNED,
DROP OWNED and DROP ROLE's dependency checks are compared as they unfold;
psql's listings are compared at the end.
"""
from __future__ import annotations

from typing import Iterator

import psycopg
import pytest

from .sides import Side, outcome, pair, psql_output

SETUP = """
CREATE ROLE a1 LOGIN PASSWORD 'pw';
CREATE ROLE a2 LOGIN PASSWORD 'pw';
CREATE ROLE a3 LOGIN PASSWORD 'pw';
CREATE ROLE amgr LOGIN CREATEROLE PASSWORD 'pw';
CREATE ROLE agrp;
GRANT CREATE ON SCHEMA public TO a1
"""

_RELACL = "SELECT relname, array_to_string(relacl, ',') FROM pg_class WHERE relname LIKE 'b\\_%' ORDER BY 1"
_DEFACL = ("SELECT pg_get_userbyid(d.defaclrole), n.nspname, d.defaclobjtype, array_to_string(d.defaclacl, ',') "
           "FROM pg_default_acl d LEFT JOIN pg_namespace n ON n.oid = d.defaclnamespace ORDER BY 1, 2, 3")

#: ALTER DEFAULT PRIVILEGES applied as objects are created, database privileges,
#: DROP OWNED dropping and revoking (issue 20 items 1, 2 and 4)
DEFAULTS_DATABASE_DROP_OWNED: list[tuple[str | None, str]] = [
    (None, "CREATE ROLE b1"),
    (None, "CREATE ROLE b2"),
    (None, "CREATE ROLE b3"),
    (None, "CREATE SCHEMA bs"),
    (None, "GRANT CREATE, USAGE ON SCHEMA bs TO b1, b2"),
    (None, "GRANT CREATE ON SCHEMA public TO b1, b2"),
    ("b1", "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO b2"),
    ("b1", "ALTER DEFAULT PRIVILEGES IN SCHEMA bs GRANT INSERT ON TABLES TO b3, b2"),
    ("b1", "ALTER DEFAULT PRIVILEGES IN SCHEMA bs GRANT SELECT ON SEQUENCES TO b3 WITH GRANT OPTION"),
    ("b1", "ALTER DEFAULT PRIVILEGES REVOKE ALL ON SEQUENCES FROM b1"),
    ("b2", "ALTER DEFAULT PRIVILEGES FOR ROLE b1 GRANT SELECT ON TABLES TO b3"),
    (None, "ALTER DEFAULT PRIVILEGES FOR ROLE b1, b2 GRANT UPDATE ON TABLES TO b3"),
    (None, "ALTER DEFAULT PRIVILEGES FOR ROLE b2 GRANT USAGE ON SCHEMAS TO b1"),
    (None, _DEFACL),
    ("b1", "CREATE TABLE b_t1 (a int)"),
    ("b1", "CREATE TABLE bs.b_t2 (a serial)"),
    ("b1", "CREATE VIEW bs.b_v AS SELECT 1 AS x"),
    ("b1", "CREATE SEQUENCE bs.b_s"),
    ("b1", "CREATE SEQUENCE b_s2"),
    ("b2", "CREATE TABLE b_t3 (a int)"),
    (None, "GRANT CREATE ON DATABASE postgres TO b2"),
    ("b2", "CREATE SCHEMA b_schema"),
    (None, "SELECT nspname, array_to_string(nspacl, ',') FROM pg_namespace WHERE nspname = 'b_schema'"),
    (None, _RELACL),
    ("b3", "INSERT INTO bs.b_t2 VALUES (1)"),
    ("b3", "SELECT * FROM bs.b_t2"),
    ("b1", "ALTER DEFAULT PRIVILEGES IN SCHEMA bs REVOKE INSERT ON TABLES FROM b3"),
    ("b1", "ALTER DEFAULT PRIVILEGES GRANT ALL ON SEQUENCES TO b1"),
    ("b1", "ALTER DEFAULT PRIVILEGES REVOKE SELECT ON TABLES FROM b2"),
    (None, _DEFACL),
    (None, "DROP ROLE b3"),
    (None, "DROP SCHEMA b_schema"),
    (None, "REVOKE CREATE ON DATABASE postgres FROM b2"),
    ("b2", "CREATE SCHEMA b_schema2"),
    (None, "GRANT TEMPORARY ON DATABASE postgres TO b2 WITH GRANT OPTION"),
    ("b2", "GRANT TEMPORARY ON DATABASE postgres TO b3"),
    ("b2", "GRANT CONNECT ON DATABASE postgres TO b3"),
    (None, "REVOKE TEMPORARY ON DATABASE postgres FROM b2"),
    (None, "REVOKE TEMPORARY ON DATABASE postgres FROM b2 CASCADE"),
    (None, "REVOKE TEMPORARY ON DATABASE postgres FROM PUBLIC"),
    ("b3", "CREATE TEMP TABLE b_tmp (a int)"),
    (None, "GRANT CONNECT ON DATABASE postgres TO b3 WITH GRANT OPTION"),
    (None, "SELECT datname, array_to_string(datacl, ',') FROM pg_database ORDER BY 1"),
    (None, "CREATE VIEW b_v2 AS SELECT * FROM b_t1"),
    (None, "CREATE TABLE b_other (a int)"),
    (None, "GRANT SELECT ON b_other TO b1 WITH GRANT OPTION"),
    ("b1", "GRANT SELECT ON b_other TO b3"),
    (None, "GRANT UPDATE (a) ON b_other TO b1"),
    (None, "DROP OWNED BY b1"),
    (None, "DROP OWNED BY b1 CASCADE"),
    (None, _RELACL),
    (None, _DEFACL),
    (None, "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'b%' ORDER BY 1"),
    (None, "DROP ROLE b1"),
    (None, "DROP OWNED BY b2"),
    (None, "DROP OWNED BY b3"),
    (None, "DROP ROLE b2, b3"),
    (None, _DEFACL),
    (None, "SELECT datname, array_to_string(datacl, ',') FROM pg_database ORDER BY 1"),
    (None, "ALTER DEFAULT PRIVILEGES IN SCHEMA bs GRANT SELECT ON TABLES TO a1"),
    (None, "DROP SCHEMA bs CASCADE"),
    (None, _DEFACL),
]

#: (role running the step after SET ROLE, or None for the superuser; statement)
STEPS: list[tuple[str | None, str]] = [
    ("a1", "CREATE TABLE c1 (a int)"),
    ("a1", "INSERT INTO c1 VALUES (1)"),
    ("a1", "LOCK TABLE c1"),
    ("a1", "CREATE TABLE c2 (a int, b text, c int)"),
    ("a1", "INSERT INTO c2 VALUES (1, 'x', 10)"),
    ("a1", "GRANT SELECT (a, b), UPDATE (b) ON c2 TO a3"),
    ("a1", "GRANT INSERT (a) ON c2 TO a3 WITH GRANT OPTION"),
    ("a1", "GRANT DELETE (a) ON c2 TO a3"),
    ("a1", "GRANT SELECT (nope) ON c2 TO a3"),
    (None, "SELECT attname, array_to_string(attacl, ',') FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
           "WHERE c.relname = 'c2' AND attacl IS NOT NULL ORDER BY attnum"),
    ("a3", "SELECT a, b FROM c2"),
    ("a3", "SELECT * FROM c2"),
    ("a3", "SELECT count(*) FROM c2"),
    ("a3", "SELECT c FROM c2"),
    ("a3", "SELECT a FROM c2 WHERE c > 0"),
    ("a3", "UPDATE c2 SET b = 'y' WHERE a = 1"),
    ("a3", "UPDATE c2 SET c = 2"),
    ("a3", "UPDATE c2 SET b = 'z' WHERE c = 10"),
    ("a3", "INSERT INTO c2 (a) VALUES (2)"),
    ("a3", "INSERT INTO c2 (a, b) VALUES (2, 'q')"),
    ("a3", "INSERT INTO c2 VALUES (3)"),
    ("a3", "INSERT INTO c2 VALUES (3, 'r')"),
    ("a3", "DELETE FROM c2"),
    ("a3", "GRANT INSERT (a) ON c2 TO a2"),
    ("a3", "GRANT SELECT (a) ON c2 TO a2"),
    ("a3", "SELECT has_column_privilege('c2', 'a', 'SELECT'), has_column_privilege('c2', 'c', 'SELECT'), "
           "has_table_privilege('c2', 'SELECT')"),
    ("a1", "REVOKE SELECT ON c2 FROM a3"),
    (None, "SELECT attname, array_to_string(attacl, ',') FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
           "WHERE c.relname = 'c2' AND attacl IS NOT NULL ORDER BY attnum"),
    ("a3", "SELECT a FROM c2"),
    ("a1", "REVOKE INSERT (a) ON c2 FROM a3"),
    ("a1", "REVOKE INSERT (a) ON c2 FROM a3 CASCADE"),
    (None, "SELECT attname, array_to_string(attacl, ',') FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
           "WHERE c.relname = 'c2' AND attacl IS NOT NULL ORDER BY attnum"),
    ("a1", "GRANT ALL (c) ON c2 TO agrp"),
    ("a1", "GRANT SELECT ON c1 TO a2 WITH GRANT OPTION"),
    ("a2", "GRANT SELECT ON c1 TO a3"),
    ("a2", "GRANT INSERT ON c1 TO a3"),
    ("a2", "GRANT SELECT, INSERT ON c1 TO agrp"),
    ("a3", "SELECT * FROM c1"),
    ("a3", "GRANT SELECT ON c1 TO agrp"),
    ("a2", "GRANT SELECT ON c1 TO a2 WITH GRANT OPTION"),
    ("a1", "REVOKE SELECT ON c1 FROM a2"),
    ("a1", "REVOKE SELECT ON c1 FROM a2 RESTRICT"),
    (None, "SELECT array_to_string(relacl, ',') FROM pg_class WHERE relname = 'c1'"),
    ("a1", "REVOKE GRANT OPTION FOR SELECT ON c1 FROM a2 CASCADE"),
    (None, "SELECT array_to_string(relacl, ',') FROM pg_class WHERE relname = 'c1'"),
    ("a3", "SELECT * FROM c1"),
    ("a1", "GRANT SELECT ON c1 TO a2 WITH GRANT OPTION"),
    ("a2", "GRANT SELECT ON c1 TO a3"),
    ("a1", "REVOKE SELECT ON c1 FROM a2 CASCADE"),
    ("a3", "SELECT * FROM c1"),
    ("a1", "GRANT ALL ON c1 TO agrp"),
    (None, "GRANT agrp TO a3"),
    ("a3", "SELECT * FROM c1"),
    ("a3", "DELETE FROM c1 WHERE a = 5"),
    ("a1", "REVOKE DELETE, TRUNCATE ON c1 FROM agrp"),
    ("a3", "DELETE FROM c1 WHERE a = 5"),
    ("a3", "TRUNCATE c1"),
    ("a1", "GRANT SELECT ON c1 TO a2, a3, PUBLIC"),
    ("a1", "REVOKE ALL ON c1 FROM PUBLIC"),
    ("a1", "REVOKE ALL PRIVILEGES ON TABLE c1 FROM a3"),
    (None, "SELECT array_to_string(relacl, ',') FROM pg_class WHERE relname = 'c1'"),
    ("a1", "GRANT USAGE ON c1 TO a3"),
    ("a1", "GRANT SELECT ON SEQUENCE c1 TO a3"),
    ("a1", "GRANT SELECT ON nosuch TO a3"),
    ("a1", "GRANT SELECT ON c1 TO nosuchrole"),
    ("a1", "CREATE SEQUENCE cs"),
    ("a1", "GRANT ALL ON SEQUENCE cs TO a3"),
    ("a1", "GRANT SELECT, INSERT ON cs TO a2"),
    ("a1", "REVOKE UPDATE ON SEQUENCE cs FROM a3"),
    ("a3", "SELECT nextval('cs') > 0"),
    ("a2", "SELECT nextval('cs') > 0"),
    ("amgr", "CREATE ROLE a4 LOGIN PASSWORD 'pw'"),
    ("amgr", "GRANT agrp TO a4"),
    ("amgr", "GRANT agrp TO a4"),
    ("amgr", "GRANT a4 TO agrp"),
    ("amgr", "GRANT a4 TO a4"),
    ("amgr", "ALTER ROLE a4 RENAME TO a5"),
    ("amgr", "ALTER ROLE a5 SUPERUSER"),
    ("amgr", "ALTER ROLE a5 CREATEDB NOINHERIT CONNECTION LIMIT 2"),
    ("amgr", "REVOKE agrp FROM a3"),
    ("amgr", "REVOKE agrp FROM a3"),
    ("amgr", "DROP ROLE amgr"),
    ("amgr", "CREATE ROLE pg_x"),
    ("amgr", "CREATE ROLE a5"),
    ("a2", "ALTER ROLE a2 PASSWORD 'pw'"),
    ("a2", "ALTER ROLE a3 PASSWORD 'pw'"),
    ("a2", "ALTER ROLE a2 CREATEDB"),
    ("a2", "GRANT agrp TO a2"),
    ("a2", "DROP ROLE a3"),
    ("a2", "CREATE ROLE a6"),
    ("a1", "ALTER TABLE c1 OWNER TO a2"),
    (None, "GRANT a2 TO a1"),
    ("a1", "ALTER TABLE c1 OWNER TO a2"),
    (None, "GRANT CREATE ON SCHEMA public TO a2"),
    ("a1", "ALTER TABLE c1 OWNER TO a2"),
    (None, "SELECT array_to_string(relacl, ',') FROM pg_class WHERE relname = 'c1'"),
    ("a3", "DROP TABLE c1"),
    ("a3", "ALTER TABLE c1 ADD COLUMN b int"),
    ("a1", "ALTER TABLE c1 ADD COLUMN b int"),
    (None, "DROP ROLE a2"),
    (None, "REASSIGN OWNED BY a2 TO a1"),
    (None, "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE relname = 'c1'"),
    (None, "DROP ROLE a2"),
    (None, "DROP OWNED BY a2"),
    (None, "DROP ROLE a2"),
    (None, "DROP ROLE a5"),
    (None, "DROP ROLE IF EXISTS a5"),
    (None, "SELECT rolname FROM pg_roles WHERE rolname LIKE 'a%' ORDER BY 1"),
    ("a1", "CREATE SCHEMA x"),
    (None, "CREATE SCHEMA cs3"),
    (None, "ALTER SCHEMA cs3 OWNER TO a1"),
    ("a1", "GRANT USAGE ON SCHEMA cs3 TO a3"),
    ("a1", "CREATE TABLE cs3.t (a int)"),
    ("a3", "SELECT * FROM cs3.t"),
    ("a3", "CREATE TABLE cs3.t2 (a int)"),
    ("a1", "GRANT CREATE ON SCHEMA cs3 TO a3"),
    ("a3", "CREATE TABLE cs3.t2 (a int)"),
    ("a1", "GRANT SELECT ON ALL TABLES IN SCHEMA cs3 TO agrp"),
    (None, "SELECT relname, array_to_string(relacl, ',') FROM pg_class WHERE relname IN ('t', 't2') ORDER BY 1"),
    ("a3", "DROP SCHEMA cs3 CASCADE"),
    ("a1", "REVOKE CREATE ON SCHEMA cs3 FROM a3"),
    (None, "SELECT nspname, array_to_string(nspacl, ',') FROM pg_namespace WHERE nspname = 'cs3'"),
    ("a3", "DROP TABLE cs3.t2"),
    ("a1", "DROP SCHEMA cs3 CASCADE"),
    (None, "SELECT nspname, array_to_string(nspacl, ',') FROM pg_namespace WHERE nspname = 'public'"),
    (None, "REVOKE CREATE ON SCHEMA public FROM PUBLIC"),
    (None, "REVOKE USAGE ON SCHEMA public FROM a1"),
    (None, "GRANT USAGE ON SCHEMA public TO a3 WITH GRANT OPTION"),
    ("a3", "GRANT USAGE ON SCHEMA public TO agrp"),
    (None, "SELECT nspname, array_to_string(nspacl, ',') FROM pg_namespace WHERE nspname = 'public'"),
    (None, "CREATE EXTENSION plpgsql"),
    (None, "DROP ROLE agrp"),
    (None, "ALTER TABLE c2 OWNER TO a3"),
    (None, "SELECT attname, array_to_string(attacl, ',') FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
           "WHERE c.relname = 'c2' AND attacl IS NOT NULL ORDER BY attnum"),
    (None, "CREATE ROLE agrp2"),
    (None, "GRANT UPDATE (b) ON c2 TO agrp2"),
    (None, "DROP OWNED BY agrp2"),
    (None, "DROP ROLE agrp2"),
    ("a3", "SET ROLE agrp"),
    ("a3", "SET ROLE a1"),
    ("a3", "SELECT current_user, session_user"),
] + DEFAULTS_DATABASE_DROP_OWNED


def _step(side: Side, role: str | None, sql: str) -> tuple:
    return outcome(side.admin, sql, role)


@pytest.fixture(scope="module")
def sides(tmp_path_factory) -> Iterator[tuple[Side, Side]]:
    with pair(tmp_path_factory, SETUP) as both:
        yield both


def test_steps_match_postgresql(sides):
    pg, ss = sides
    bad = []
    for role, sql in STEPS:
        want, got = _step(pg, role, sql), _step(ss, role, sql)
        if want != got:
            bad.append(f"[{role or 'postgres'}] {sql}\n    pg15: {want}\n    ours: {got}")
    assert not bad, f"{len(bad)} of {len(STEPS)} steps differ:\n" + "\n".join(bad)
    for command in (r"\du", r"\dp", r"\dn+ cs*", r"\ddp", r"\l"):
        assert psql_output(ss, command) == psql_output(pg, command), command


def test_unimplemented_grants_are_refused(sides):
    _pg, ss = sides
    for sql in ["GRANT EXECUTE ON FUNCTION now() TO a1", "ALTER DEFAULT PRIVILEGES GRANT USAGE ON TYPES TO a1",
                "GRANT USAGE ON TYPE int4 TO a1", "CREATE DATABASE d2", "DROP DATABASE postgres",
                "ALTER ROLE a1 SET role = 'a3'", "ALTER DATABASE postgres RENAME TO d3", "CREATE EXTENSION pgcrypto"]:
        with pytest.raises(psycopg.Error) as ei:
            ss.admin.execute(sql)
        assert ei.value.sqlstate == "0A000", sql
        assert ei.value.diag.message_hint, sql
