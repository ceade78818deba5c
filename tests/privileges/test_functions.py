"""EXECUTE, ownership and GRANT/REVOKE on SQL functions against PostgreSQL 15
(issue 20 for functions; issue 15 scope 6).

Both servers run SETUP: roles, functions owned by different roles, EXECUTE
revoked from PUBLIC on some and granted to roles (with grant option, to a
group), a view calling a function.  Each role then runs each statement
inside BEGIN ... ROLLBACK, after SET ROLE (simple protocol) and on its own
login (extended protocol); the outcomes must equal PostgreSQL's.  psql's
``\\df+`` and ``\\sf`` print the same bytes.
"""
from __future__ import annotations

from typing import Iterator

import pytest

from . import script
from .sides import Side, pair, psql_output
from .test_differential import extended, simple

PW = script.PASSWORD

SETUP = f"""
CREATE ROLE fx_owner LOGIN PASSWORD '{PW}';
CREATE ROLE fx_user LOGIN PASSWORD '{PW}';
CREATE ROLE fx_none LOGIN PASSWORD '{PW}';
CREATE ROLE fx_group NOLOGIN;
CREATE ROLE fx_member LOGIN PASSWORD '{PW}' IN ROLE fx_group;
CREATE SCHEMA fs;
GRANT USAGE ON SCHEMA fs TO fx_user, fx_group;
GRANT CREATE ON SCHEMA public TO fx_owner;
CREATE FUNCTION open_f(a int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT a + 1';
CREATE FUNCTION closed_f(a int) RETURNS int LANGUAGE sql AS 'SELECT a * 2';
REVOKE EXECUTE ON FUNCTION closed_f(int) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION closed_f(int) TO fx_user WITH GRANT OPTION;
CREATE FUNCTION fs.grp_f(t text DEFAULT 'd') RETURNS text LANGUAGE sql STABLE AS $$ SELECT t || '!' $$;
REVOKE ALL ON FUNCTION fs.grp_f FROM PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA fs TO fx_group;
CREATE FUNCTION owned_f(n int) RETURNS SETOF int LANGUAGE sql AS 'SELECT g FROM generate_series(1, n) g';
ALTER FUNCTION owned_f(int) OWNER TO fx_owner;
CREATE FUNCTION wraps_closed(a int) RETURNS int LANGUAGE sql AS 'SELECT closed_f(a) + 1';
CREATE VIEW calls_closed AS SELECT closed_f(3) AS v;
GRANT SELECT ON calls_closed TO PUBLIC
"""

ROLES = ["fx_owner", "fx_user", "fx_none", "fx_member"]

STATEMENTS = [
    "SELECT open_f(1)",
    "SELECT closed_f(1)",
    "SELECT closed_f(NULL)",
    "SELECT wraps_closed(1)",
    "SELECT * FROM calls_closed",
    "SELECT fs.grp_f()",
    "SELECT fs.grp_f('x')",
    "SELECT * FROM owned_f(2)",
    "SELECT has_function_privilege('closed_f(integer)', 'EXECUTE'), "
    "has_function_privilege('open_f(int)', 'EXECUTE WITH GRANT OPTION'), "
    "has_function_privilege('fs.grp_f(text)', 'EXECUTE')",
    "SELECT has_function_privilege('fx_none', 'closed_f(integer)', 'EXECUTE')",
    "SELECT has_function_privilege('nosuch(int)', 'EXECUTE')",
    "GRANT EXECUTE ON FUNCTION closed_f(int) TO fx_none",
    "GRANT EXECUTE ON FUNCTION open_f TO fx_none",
    "REVOKE EXECUTE ON FUNCTION closed_f(integer) FROM fx_user",
    "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO fx_none",
    "GRANT SELECT ON FUNCTION open_f(int) TO fx_none",
    "GRANT EXECUTE ON FUNCTION nosuch(int) TO fx_none",
    "DROP FUNCTION owned_f(int)",
    "DROP FUNCTION open_f",
    "ALTER FUNCTION owned_f(int) OWNER TO fx_user",
    "ALTER FUNCTION owned_f(int) RENAME TO owned_g",
    "ALTER FUNCTION closed_f(int) IMMUTABLE",
    "CREATE FUNCTION new_f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION fs.new_f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE OR REPLACE FUNCTION open_f(a int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT a + 2'",
    "CREATE OR REPLACE FUNCTION owned_f(n int) RETURNS SETOF int LANGUAGE sql AS 'SELECT n'",
    "SELECT proname, pg_get_userbyid(proowner), proacl FROM pg_proc "
    "WHERE proname IN ('open_f', 'closed_f', 'grp_f', 'owned_f', 'wraps_closed') ORDER BY 1",
    "REASSIGN OWNED BY fx_owner TO fx_user",
]


@pytest.fixture(scope="module")
def sides(tmp_path_factory) -> Iterator[tuple[Side, Side]]:
    with pair(tmp_path_factory, SETUP) as both:
        yield both


@pytest.mark.parametrize("mode", ["set_role_simple_protocol", "own_connection_extended_protocol"])
def test_function_privileges_match(sides, mode):
    pg, ss = sides

    def run(side: Side, role: str, sql: str):
        if mode == "set_role_simple_protocol":
            return simple(side.admin, sql, role)
        return extended(side.role(role), sql)

    bad = []
    for role in ROLES:
        for sql in STATEMENTS:
            a, b = run(pg, role, sql), run(ss, role, sql)
            if a != b:
                bad.append(f"[{role}] {sql}\n    pg15: {a}\n    ours: {b}")
    assert not bad, f"{len(bad)} of {len(ROLES) * len(STATEMENTS)} differ:\n" + "\n".join(bad)


def test_superuser_statements_match(sides):
    pg, ss = sides
    bad = []
    for sql in STATEMENTS + ["DROP ROLE fx_owner", "DROP ROLE fx_user", "DROP SCHEMA fs",
                             "DROP FUNCTION closed_f(int)", "DROP OWNED BY fx_user"]:
        a, b = simple(pg.admin, sql, None), simple(ss.admin, sql, None)
        if a != b:
            bad.append(f"{sql}\n    pg15: {a}\n    ours: {b}")
    assert not bad, "\n".join(bad)


def test_search_path_skips_schemas_without_usage(sides):
    """An unqualified call looks only in the schemas of the path the role
    may use: without USAGE on fs, grp_f does not exist for it (42883)."""
    pg, ss = sides
    outcomes = []
    for side in (pg, ss):
        got = []
        for role in ROLES:
            conn = side.role(role)
            conn.execute("SET search_path = public, fs")
            try:
                got.append(extended(conn, "SELECT grp_f('path')"))
            finally:
                conn.execute("RESET search_path")
        outcomes.append(got)
    assert outcomes[1] == outcomes[0]
    assert ("error", "42883", "function grp_f(unknown) does not exist") in outcomes[0]


@pytest.mark.parametrize("command", [r"\df", r"\df+", r"\df+ fs.*", r"\sf closed_f", r"\sf fs.grp_f",
                                     r"\sf owned_f(integer)", r"\df open_f"])
def test_psql_function_listings_match(sides, command):
    pg, ss = sides
    assert psql_output(ss, command) == psql_output(pg, command)
