"""SQL-language functions (issue 15 scope 6, and issue 20 for EXECUTE),
compared with PostgreSQL 15 word for word: CREATE-time validation, then
generated calls (overloads, unknown literals, NULLs, STRICT, defaults,
named arguments, SETOF and TABLE in FROM, errors) with their values,
column names, result type OIDs, SQLSTATEs, messages and hints."""
from __future__ import annotations

import itertools
import subprocess

import psycopg
import pytest

from tests.support.fidelity import mismatches, words

DEFINITIONS = [
    "CREATE FUNCTION f_add(a int, b int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT a + b'",
    "CREATE FUNCTION f_add(a numeric, b numeric) RETURNS numeric LANGUAGE sql IMMUTABLE AS 'SELECT a + b'",
    "CREATE FUNCTION f_add(a text, b text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT a || b $$",
    "CREATE FUNCTION f_over(x int) RETURNS text LANGUAGE sql AS $$ SELECT 'int:' || x $$",
    "CREATE FUNCTION f_over(x bigint) RETURNS text LANGUAGE sql AS $$ SELECT 'bigint:' || x $$",
    "CREATE FUNCTION f_over(x float8) RETURNS text LANGUAGE sql AS $$ SELECT 'float8:' || x $$",
    "CREATE FUNCTION f_over(x date) RETURNS text LANGUAGE sql AS $$ SELECT 'date:' || x $$",
    "CREATE FUNCTION f_strict(a int) RETURNS int LANGUAGE sql STRICT AS 'SELECT coalesce(a, -1)'",
    "CREATE FUNCTION f_called(a int) RETURNS int LANGUAGE sql CALLED ON NULL INPUT AS 'SELECT coalesce(a, -1)'",
    "CREATE FUNCTION f_rnoni(a int, b text) RETURNS text LANGUAGE sql RETURNS NULL ON NULL INPUT "
    "AS 'SELECT coalesce(b, ''?'') || a'",
    "CREATE FUNCTION f_div(a int, b int) RETURNS int LANGUAGE sql STRICT AS 'SELECT a / b'",
    "CREATE FUNCTION f_def(a int, b int DEFAULT 10, c text DEFAULT 'x') RETURNS text LANGUAGE sql "
    "AS $$ SELECT a || ':' || b || c $$",
    "CREATE FUNCTION f_dollar(int, int) RETURNS int LANGUAGE sql AS 'SELECT $1 * $2'",
    "CREATE FUNCTION f_widen() RETURNS bigint LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION f_round() RETURNS int LANGUAGE sql AS 'SELECT 2.5'",
    "CREATE FUNCTION f_none() RETURNS int LANGUAGE sql AS 'SELECT 1 WHERE false'",
    "CREATE FUNCTION f_first() RETURNS int LANGUAGE sql AS 'SELECT g FROM generate_series(3, 5) g'",
    "CREATE FUNCTION f_setof(n int) RETURNS SETOF int LANGUAGE sql STABLE "
    "AS 'SELECT g FROM generate_series(1, n) g'",
    "CREATE FUNCTION f_table(n int) RETURNS TABLE(i int, sq bigint, label text) LANGUAGE sql "
    "AS $$ SELECT g, (g * g)::bigint, 'n' || g FROM generate_series(1, n) g $$",
    "CREATE FUNCTION f_strict_set(n int) RETURNS SETOF int LANGUAGE sql STRICT AS 'SELECT 1'",
    "CREATE FUNCTION f_nested(a int) RETURNS int LANGUAGE sql AS 'SELECT f_add(a, f_strict(a))'",
    "CREATE FUNCTION f_sub(a int) RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM generate_series(1, a)'",
    "CREATE FUNCTION f_qual(v int) RETURNS int LANGUAGE sql AS 'SELECT f_qual.v * 2'",
    "CREATE FUNCTION f_bool(t text) RETURNS boolean LANGUAGE sql AS $$ SELECT t LIKE 'a%' $$",
    "CREATE FUNCTION f_void() RETURNS void LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION f_const_strict(a int) RETURNS int LANGUAGE sql STRICT AS 'SELECT 1'",
    "CREATE FUNCTION f_twice(x float8) RETURNS boolean LANGUAGE sql AS 'SELECT x = x'",
    "CREATE FUNCTION f_fact(n int) RETURNS numeric LANGUAGE sql IMMUTABLE "
    "AS 'SELECT CASE WHEN n <= 1 THEN 1::numeric ELSE n * f_fact(n - 1) END'",
    "CREATE FUNCTION f_fib(n int) RETURNS bigint LANGUAGE sql "
    "AS 'SELECT CASE WHEN n < 2 THEN n::bigint ELSE f_fib(n - 1) + f_fib(n - 2) END'",
    "CREATE FUNCTION f_forever(n int) RETURNS int LANGUAGE sql AS 'SELECT f_forever(n + 1)'",
    "CREATE FUNCTION f_out(a int, OUT b int, OUT c text) LANGUAGE sql AS 'SELECT a, a::text'",
    "CREATE FUNCTION f_inout(INOUT a int, OUT c text) RETURNS record LANGUAGE sql AS 'SELECT a * 2, a::text'",
    "CREATE FUNCTION f_out1(a int, OUT b int) RETURNS int LANGUAGE sql AS 'SELECT a + 100'",
    "CREATE FUNCTION f_outset(n int, OUT b int, OUT c text) RETURNS SETOF record LANGUAGE sql "
    "AS 'SELECT g, g::text FROM generate_series(1, n) g'",
    "CREATE FUNCTION f_outdef(a int DEFAULT 5, OUT b int, OUT c text) LANGUAGE sql AS $$ SELECT a, 'x' $$",
    "CREATE FUNCTION f_outanon(OUT int, OUT text) LANGUAGE sql AS $$ SELECT 1, 'y' $$",
    "CREATE FUNCTION lower(v varchar) RETURNS text LANGUAGE sql AS $$ SELECT 'mine:' || v $$",
    "CREATE FUNCTION length(v int) RETURNS int LANGUAGE sql AS 'SELECT v * 10'",
]

#: CREATE statements PostgreSQL refuses (or accepts) while validating
CREATE_CASES = [
    "CREATE FUNCTION e1() RETURNS int LANGUAGE sql AS $$ SELECT 'a'::text $$",
    "CREATE FUNCTION e2() RETURNS int LANGUAGE sql AS $$ SELECT 1, 2 $$",
    "CREATE FUNCTION e3() RETURNS TABLE(a int, b int) LANGUAGE sql AS $$ SELECT 1 $$",
    "CREATE FUNCTION e4() RETURNS TABLE(a int, b int) LANGUAGE sql AS $$ SELECT 1, 'x'::text $$",
    "CREATE FUNCTION e5(a int, a int) RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION e6(a int DEFAULT 1, b int) RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION e7() RETURNS int AS 'SELECT 1'",
    "CREATE FUNCTION e8() RETURNS int LANGUAGE sql",
    "CREATE FUNCTION e9() LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION e10() RETURNS nosuchtype LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION e11(x nosuchtype) RETURNS int LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION e12() RETURNS int LANGUAGE sql AS 'SELECT nosuchcol'",
    "CREATE FUNCTION e13() RETURNS int LANGUAGE sql AS 'SELECT nosuchfn(1)'",
    "CREATE FUNCTION e14(a int) RETURNS int LANGUAGE sql AS 'SELECT $2'",
    "CREATE FUNCTION e15() RETURNS int LANGUAGE nosuchlang AS 'SELECT 1'",
    "CREATE FUNCTION e16() RETURNS int LANGUAGE sql IMMUTABLE VOLATILE AS 'SELECT 1'",
    "CREATE FUNCTION e17() RETURNS int LANGUAGE sql AS 'SELECT 1 FROM nosuchtable'",
    "CREATE FUNCTION e18() RETURNS int LANGUAGE sql AS 'SELEC 1'",
    "CREATE FUNCTION f_add(a int, b int) RETURNS int LANGUAGE sql AS 'SELECT 0'",
    "CREATE OR REPLACE FUNCTION f_add(a int, b int) RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'",
    "CREATE OR REPLACE FUNCTION f_add(x int, b int) RETURNS int LANGUAGE sql AS 'SELECT 0'",
    "CREATE OR REPLACE FUNCTION f_def(a int, b int, c text) RETURNS text LANGUAGE sql AS 'SELECT c'",
    "CREATE FUNCTION d1(a int DEFAULT true) RETURNS int LANGUAGE sql AS 'SELECT a'",
    "CREATE FUNCTION d2(a int DEFAULT 'x') RETURNS int LANGUAGE sql AS 'SELECT a'",
    "CREATE FUNCTION d3(a int DEFAULT 1.5) RETURNS int LANGUAGE sql AS 'SELECT a'",
    "CREATE FUNCTION d4(a int DEFAULT (SELECT 1)) RETURNS int LANGUAGE sql AS 'SELECT a'",
    "CREATE FUNCTION d5(a int DEFAULT nosuch) RETURNS int LANGUAGE sql AS 'SELECT a'",
    "SELECT d3()",
    "CREATE FUNCTION r2() RETURNS SETOF int LANGUAGE sql AS 'SELECT 1, 2'",
    "CREATE FUNCTION r4() RETURNS int LANGUAGE sql AS ''",
    "CREATE FUNCTION r5() RETURNS int LANGUAGE sql AS 'SELECT 1; SELECT 2'",
    "SELECT r5()",
    "CREATE FUNCTION r6() RETURNS void LANGUAGE sql AS ''",
    "SELECT r6()",
    "CREATE FUNCTION o4(a int, OUT b int, OUT c int) RETURNS int LANGUAGE sql AS 'SELECT a, a'",
    "CREATE FUNCTION o5(a int, OUT b int) RETURNS text LANGUAGE sql AS 'SELECT a'",
    "CREATE FUNCTION o8(a int, OUT b int) RETURNS TABLE(x int) LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION o11(a int, OUT b int, OUT c text) LANGUAGE sql AS 'SELECT a'",
    "CREATE FUNCTION o12(a int, OUT a int) LANGUAGE sql AS 'SELECT a'",
    "CREATE FUNCTION pp3(a int) RETURNS int LANGUAGE sql ROWS 5 AS 'SELECT a'",
    "CREATE FUNCTION pp4(a int) RETURNS int LANGUAGE sql COST 0 AS 'SELECT a'",
    "CREATE FUNCTION pp6(a int) RETURNS int LANGUAGE sql PARALLEL bogus AS 'SELECT a'",
    "CREATE FUNCTION pp7(a int) RETURNS int LANGUAGE sql STRICT STRICT AS 'SELECT a'",
    "CREATE FUNCTION ok1() RETURNS numeric LANGUAGE sql AS 'SELECT 1'",
    "CREATE FUNCTION ok2() RETURNS text LANGUAGE sql AS $$ SELECT 'lit' $$",
    "CREATE FUNCTION ok3(int) RETURNS int LANGUAGE sql PARALLEL SAFE COST 5 LEAKPROOF AS 'SELECT $1'",
]

#: argument expressions the generated calls combine
VALUES = ["1", "-5", "0", "NULL", "2147483647", "1.5", "'7'", "'abc'", "1::bigint", "2::smallint", "NULL::int",
          "'x'::text", "2.5::float8", "date '2024-02-29'"]


def _calls() -> list[str]:
    out = [f"SELECT f_over({v})" for v in VALUES]
    out += [f"SELECT f_add({a}, {b})" for a, b in itertools.product(VALUES[:9], repeat=2)]
    out += [f"SELECT f_strict({v}), f_called({v})" for v in VALUES[:5]]
    out += [f"SELECT f_rnoni({a}, {b})" for a, b in itertools.product(["1", "NULL"], ["'s'", "NULL"])]
    out += [f"SELECT f_div({a}, {b})" for a, b in itertools.product(["7", "NULL"], ["2", "0", "NULL"])]
    out += [
        "SELECT f_def(1)", "SELECT f_def(1, 2)", "SELECT f_def(1, 2, 'y')", "SELECT f_def(1, 2, 'y', 4)",
        "SELECT f_def(a => 1)", "SELECT f_def(c => 'z', a => 2)", "SELECT f_def(1, c => 'q')",
        "SELECT f_def(a := 3, b := 4)", "SELECT f_def(b => 1)", "SELECT f_def(a => 1, a => 2)",
        "SELECT f_def(d => 1)", "SELECT f_def()", "SELECT f_def(NULL)", "SELECT f_def(NULL, NULL, NULL)",
        "SELECT f_dollar(6, 7)", "SELECT f_dollar(6, NULL)", "SELECT f_widen(), f_round(), f_none(), f_first()",
        "SELECT f_nested(4)", "SELECT f_nested(NULL)", "SELECT f_sub(5), f_sub(0), f_sub(NULL)",
        "SELECT f_qual(21)", "SELECT f_bool('abc'), f_bool('x'), f_bool(NULL)", "SELECT f_void()",
        "SELECT f_add(1, 2) AS named, f_add(1, 2) + 1, -f_add(1, 2)",
        "SELECT f_add(x, x) FROM (VALUES (1), (2), (NULL)) v(x)",
        "SELECT f_strict(x), f_over(x) FROM (VALUES (1), (NULL), (3)) v(x) ORDER BY 1",
        "SELECT x, f_sub(x) FROM generate_series(1, 4) x ORDER BY x",
        "SELECT * FROM f_setof(3)", "SELECT * FROM f_setof(0)", "SELECT * FROM f_setof(NULL)",
        "SELECT s FROM f_setof(4) s WHERE s > 2", "SELECT * FROM f_setof(2) AS t(v)",
        "SELECT * FROM f_table(3)", "SELECT label, sq FROM f_table(2) ORDER BY sq DESC",
        "SELECT * FROM f_table(2) AS t(a, b, c)", "SELECT * FROM f_strict_set(NULL)", "SELECT * FROM f_strict_set(1)",
        "SELECT * FROM f_add(1, 2)", "SELECT count(*) FROM f_table(10)",
        "SELECT f_setof(3)", "SELECT f_setof(NULL)", "SELECT f_strict_set(NULL), 1",
        "SELECT x, f_setof(x) FROM (VALUES (1), (2), (3)) v(x) ORDER BY 1, 2", "SELECT f_setof(2) AS s, 'k'",
        "SELECT f_const_strict(NULL), f_const_strict(5), f_twice(random()), f_twice(NULL)",
        "SELECT f_fact(1), f_fact(6), f_fact(25), f_fib(12)",
        "SELECT g, f_fact(g) FROM generate_series(0, 5) g ORDER BY g", "SELECT f_forever(1)",
        "SELECT lower('ABC'::varchar), lower('ABC'), lower('ABC'::text), length(5), length('abc')",
        "SELECT * FROM f_out(3)", "SELECT c FROM f_out(4)", "SELECT * FROM f_inout(5)", "SELECT f_out1(1)",
        "SELECT * FROM f_out1(2)", "SELECT * FROM f_outset(3)", "SELECT * FROM f_outset(NULL)",
        "SELECT * FROM f_outdef()", "SELECT * FROM f_outdef(a => 7)", "SELECT * FROM f_outanon()",
        "SELECT * FROM f_out(1) AS t(x, y)",
        "SELECT nosuch_fn(1)", "SELECT f_add(1, 2, 3)", "SELECT f_add(1)", "SELECT f_add(true, false)",
        "SELECT f_over(true)", "SELECT f_add(NULL, NULL)", "SELECT f_add('1', '2')",
        "SELECT public_nosuch.f_add(1, 2)",
    ]
    return out


def _setup(conn: psycopg.Connection, schema: str) -> list[tuple]:
    conn.execute(f"CREATE SCHEMA {schema}")
    conn.execute(f"SET search_path = {schema}")
    return [words(conn, d) for d in DEFINITIONS]


@pytest.fixture
def fn_schema(ss_conn, pg_conn, unique_name):
    schema = unique_name("fn")
    assert _setup(ss_conn, schema) == _setup(pg_conn, schema)
    yield schema
    for conn in (ss_conn, pg_conn):
        conn.execute("RESET search_path")
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_create_validation_like_postgres(ss_conn, pg_conn, fn_schema):
    wrong = mismatches(ss_conn, pg_conn, CREATE_CASES)
    assert not wrong, "\n".join(wrong)


def test_calls_like_postgres(ss_conn, pg_conn, fn_schema):
    calls = _calls()
    assert len(calls) > 150
    wrong = mismatches(ss_conn, pg_conn, calls)
    assert not wrong, f"{len(wrong)} of {len(calls)} differ:\n" + "\n".join(wrong[:20])


def test_drop_and_replace_like_postgres(ss_conn, pg_conn, fn_schema):
    schema = fn_schema
    statements = [
        "DROP FUNCTION f_add", "DROP FUNCTION f_add(bigint, bigint)", "DROP FUNCTION nosuch",
        "DROP ROUTINE nosuch", "DROP ROUTINE nosuch(int)", "DROP ROUTINE f_add", "DROP PROCEDURE f_over(int)",
        "DROP PROCEDURE f_over", "DROP PROCEDURE nosuch(int)", "ALTER PROCEDURE f_over(date) OWNER TO postgres",
        "ALTER ROUTINE f_over(date) STABLE", "ALTER FUNCTION f_setof(int) PARALLEL SAFE COST 3 ROWS 7 LEAKPROOF",
        "ALTER FUNCTION f_over(date) ROWS 3", "ALTER FUNCTION f_over(date) COST -1",
        f"SELECT proname, provolatile, proparallel, procost, prorows, proleakproof FROM pg_proc "
        f"WHERE proname IN ('f_over', 'f_setof') AND pronamespace = (SELECT oid FROM pg_namespace "
        f"WHERE nspname = '{schema}') ORDER BY 1, 2",
        "DROP ROUTINE f_over(date)",
        "DROP FUNCTION IF EXISTS nosuch", "DROP FUNCTION IF EXISTS nosuch(text)",
        "CREATE VIEW uses_add AS SELECT f_add(1, 2) AS s", "DROP FUNCTION f_add(int, int)",
        "DROP FUNCTION f_add(int, int) RESTRICT", "DROP FUNCTION f_add(int, int) CASCADE", "SELECT * FROM uses_add",
        "SELECT f_add(1, 2)", "DROP FUNCTION f_add(numeric, numeric), f_add(text, text)", "SELECT f_add(1, 2)",
        "CREATE OR REPLACE FUNCTION f_called(a int) RETURNS int LANGUAGE sql AS 'SELECT a * 100'",
        "SELECT f_called(2)", "ALTER FUNCTION f_called(int) STRICT", "SELECT f_called(NULL)",
        "ALTER FUNCTION f_called RENAME TO f_renamed", "SELECT f_renamed(3)", "SELECT f_called(3)",
        "ALTER FUNCTION f_renamed(int) RENAME TO f_strict", "ALTER FUNCTION nosuch(int) OWNER TO postgres",
        f"SELECT proname, provolatile, proisstrict, proretset, pronargs, pronargdefaults, prokind "
        f"FROM pg_proc WHERE pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = '{schema}') ORDER BY proname, pronargs",
        f"SELECT proname, pg_get_function_arguments(oid), pg_get_function_identity_arguments(oid), "
        f"pg_get_function_result(oid) FROM pg_proc WHERE pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = '{schema}') "
        "ORDER BY 1, 2",
        "CREATE PROCEDURE p1() LANGUAGE sql AS 'SELECT 1'",
        "CREATE FUNCTION plf() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$",
    ]
    ss = [words(ss_conn, s) for s in statements]
    pg = [words(pg_conn, s) for s in statements]
    refused_here = {len(statements) - 2, len(statements) - 1}      # procedures and PL/pgSQL: refused with 0A000
    for i, (sql, a, b) in enumerate(zip(statements, ss, pg)):
        if i in refused_here:
            assert b[0] == "ok" and a[:2] == ("error", "0A000"), (sql, a)
            continue
        assert a == b, f"{sql}\n  splitstream: {a}\n  postgresql:  {b}"
    for conn in (pg_conn,):
        conn.execute("DROP PROCEDURE p1(); DROP FUNCTION plf()")


def test_sql_standard_body_is_refused(ss_conn, fn_schema):
    for sql in ("CREATE FUNCTION sb(a int) RETURNS int LANGUAGE sql RETURN a + 1",
                "CREATE FUNCTION sb(a int) RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT a + 1; END"):
        outcome = words(ss_conn, sql)
        assert outcome[:2] == ("error", "0A000") and outcome[3], outcome
    assert words(ss_conn, "CALL f_void()")[:2] == ("error", "0A000")


def test_continuous_view_functions(ss_conn, fn_schema, unique_name):
    stream = unique_name("s")
    ss_conn.execute(f"CREATE FOREIGN TABLE {stream} (x int, k text) SERVER stream")
    ss_conn.execute("CREATE FUNCTION f_imm(a int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT a * 10'")
    ss_conn.execute(f"CREATE VIEW cv_ok AS SELECT k, sum(f_imm(x)) AS s, count(*) FROM {stream} GROUP BY k")
    refused = words(ss_conn, f"CREATE VIEW cv_bad AS SELECT k, sum(f_called(x)) FROM {stream} GROUP BY k")
    assert refused[:2] == ("error", "0A000") and "VOLATILE function f_called" in refused[2] and refused[3]
    ss_conn.execute(f"INSERT INTO {stream} VALUES (1, 'a'), (2, 'a'), (NULL, 'b')")
    assert ss_conn.execute("SELECT k, s FROM cv_ok ORDER BY k").fetchall() == [("a", 30), ("b", None)]
    for sql in ("CREATE OR REPLACE FUNCTION f_imm(a int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT a'",
                "ALTER FUNCTION f_imm(int) VOLATILE"):
        assert words(ss_conn, sql)[:2] == ("error", "0A000")
    dropped = words(ss_conn, "DROP FUNCTION f_imm(int)")
    assert dropped[:3] == ("error", "2BP01", "cannot drop function f_imm(integer) because other objects depend on it")
    ss_conn.execute("DROP FUNCTION f_imm(int) CASCADE")
    assert words(ss_conn, "SELECT * FROM cv_ok")[:2] == ("error", "42P01")


def _notices(conn: psycopg.Connection, sql: str) -> tuple:
    seen: list[tuple] = []

    def keep(d) -> None:
        seen.append((d.severity, d.sqlstate, d.message_primary, d.message_detail))

    conn.add_notice_handler(keep)
    try:
        return words(conn, sql), tuple(seen)
    finally:
        conn.remove_notice_handler(keep)


def test_notices_like_postgres(ss_conn, pg_conn, fn_schema):
    statements = [
        "DROP FUNCTION IF EXISTS nosuch(int, text, double precision, varchar(3), int[], timestamptz)",
        "DROP ROUTINE IF EXISTS nosuch(int)", "DROP PROCEDURE IF EXISTS nosuch(int)",
        "DROP FUNCTION IF EXISTS nosuch", "DROP FUNCTION IF EXISTS f_none(), nosuch(bigint)",
        "CREATE VIEW v_set AS SELECT * FROM f_setof(2)", "CREATE VIEW v_set2 AS SELECT f_setof FROM v_set",
        "DROP FUNCTION f_setof(int) CASCADE", "GRANT EXECUTE ON FUNCTION f_add(int, int) TO PUBLIC",
        "REVOKE EXECUTE ON FUNCTION f_over(int) FROM PUBLIC",
    ]
    for sql in statements:
        assert _notices(ss_conn, sql) == _notices(pg_conn, sql), sql


def test_prepared_call_sees_new_rows(ss_conn, fn_schema, unique_name):
    """A repeated prepared read of a function whose body reads a table is
    never answered from the previous response once the table changed."""
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (x int)")
    ss_conn.execute(f"CREATE FUNCTION f_count_t() RETURNS bigint LANGUAGE sql STABLE AS 'SELECT count(*) FROM {t}'")
    seen = []
    for _ in range(3):
        seen.append(ss_conn.execute("SELECT f_count_t()", prepare=True).fetchone()[0])
        ss_conn.execute(f"INSERT INTO {t} VALUES (1)")
    assert seen == [0, 1, 2]


PSQL_SCRIPT = """
CREATE SCHEMA {s};
SET search_path = {s};
CREATE FUNCTION "Odd Name"(integer, numeric DEFAULT 2.5) RETURNS TABLE(x int, "Y" text) LANGUAGE sql STABLE STRICT
  AS $$ SELECT $1, 'y' || $2 $$;
CREATE FUNCTION has_dollar(t text DEFAULT 'a$function$b') RETURNS text LANGUAGE sql IMMUTABLE
  AS $q$ SELECT '$function$' || t $q$;
CREATE FUNCTION arr(a int[], b varchar(10), c timestamptz DEFAULT now(), d double precision DEFAULT -1)
  RETURNS int[] LANGUAGE sql AS 'SELECT a';
CREATE FUNCTION v() RETURNS void LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION pp(a int) RETURNS SETOF int LANGUAGE sql STABLE PARALLEL SAFE STRICT LEAKPROOF COST 7.5 ROWS 20
  AS 'SELECT a';
CREATE FUNCTION pp2(a int) RETURNS int LANGUAGE sql PARALLEL RESTRICTED COST 100 NOT LEAKPROOF AS 'SELECT a';
CREATE FUNCTION o(INOUT a int, b int DEFAULT 2, OUT c text, OUT int) RETURNS SETOF record LANGUAGE sql
  AS $$ SELECT a, 'c', b $$;
CREATE FUNCTION s(n int) RETURNS SETOF bigint LANGUAGE sql AS 'SELECT g::bigint FROM generate_series(1, n) g';
REVOKE EXECUTE ON FUNCTION s(int) FROM PUBLIC;
\\df
\\df+
\\df+ s
\\sf "Odd Name"
\\sf has_dollar
\\sf arr
\\sf v
\\sf s(integer)
\\sf o
\\sf pp
\\sf pp2
SELECT * FROM o(1);
SELECT * FROM "Odd Name"(1);
SELECT has_dollar();
DROP FUNCTION nosuch;
RESET search_path;
DROP SCHEMA {s} CASCADE;
"""


def _psql(dsn: str, script: str) -> str:
    env = {"PATH": "/usr/lib/postgresql/15/bin:/usr/bin:/bin", "PGTZ": "UTC"}
    res = subprocess.run(["psql", dsn, "-X", "-P", "pager=off"], input=script, capture_output=True, text=True,
                         env=env, timeout=60)
    return res.stdout + res.stderr


def test_psql_describes_functions_like_postgres(ss_server, pg15, unique_name):
    script = PSQL_SCRIPT.format(s=unique_name("psqlfn"))
    ours, theirs = _psql(ss_server.dsn, script), _psql(pg15.dsn, script)
    assert "CREATE OR REPLACE FUNCTION" in theirs and "List of functions" in theirs
    assert ours == theirs


def test_dependents_of_a_function_like_postgres(ss_conn, pg_conn, fn_schema, unique_name):
    """Column defaults and views calling a function depend on it: DROP lists
    them (detail) or drops them with CASCADE (the default goes, the column stays)."""
    t = unique_name("t")
    statements = [
        "CREATE FUNCTION f_cnt(n int) RETURNS bigint LANGUAGE sql AS 'SELECT n::bigint'",
        "CREATE FUNCTION f_cnt(n text) RETURNS bigint LANGUAGE sql AS 'SELECT 7::bigint'",
        f"CREATE TABLE {t} (x int, y bigint DEFAULT f_cnt(3), z bigint DEFAULT f_cnt(4) + 1, w bigint DEFAULT f_cnt('a'))",
        "CREATE VIEW v_cnt AS SELECT f_cnt(1)", "CREATE VIEW v_cnt2 AS SELECT * FROM v_cnt",
        "DROP FUNCTION f_cnt(int) CASCADE", f"INSERT INTO {t} (x) VALUES (1)", f"SELECT * FROM {t}",
        "SELECT * FROM v_cnt",
    ]
    for sql in statements:
        assert _notices(ss_conn, sql) == _notices(pg_conn, sql), sql


def test_drop_refused_with_the_dependents_listed(ss_conn, pg_conn, fn_schema, unique_name):
    t = unique_name("t")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE TABLE {t} (x int, y bigint DEFAULT f_widen())")
        conn.execute("CREATE VIEW v_w AS SELECT f_widen() AS w")
        conn.execute("CREATE VIEW v_w2 AS SELECT w FROM v_w")
    details = []
    for conn in (ss_conn, pg_conn):
        with pytest.raises(psycopg.Error) as ei:
            conn.execute("DROP FUNCTION f_widen()")
        details.append((ei.value.sqlstate, ei.value.diag.message_primary, ei.value.diag.message_detail,
                        ei.value.diag.message_hint))
    assert details[0] == details[1]
    assert details[1][2].count("\n") == 2


@pytest.mark.parametrize("sql,params", [
    ("SELECT f_add(%s, %s)", (1, 2)), ("SELECT f_add(%s, %s)", ("a", "b")), ("SELECT f_add(%s, %s)", (1.5, 2)),
    ("SELECT f_def(%s)", (4,)), ("SELECT f_def(%s, c => %s)", (4, "z")), ("SELECT * FROM f_table(%s)", (2,)),
    ("SELECT f_strict(%s)", (None,)), ("SELECT f_over(%s::date)", ("2024-01-02",)),
])
def test_extended_protocol_parameters(ss_conn, pg_conn, fn_schema, sql, params):
    """Calls with bound parameters (psycopg sends their types, or leaves text unknown)."""
    def run(conn):
        try:
            cur = conn.execute(sql, params, prepare=True)
            return [d.type_code for d in cur.description], cur.fetchall()
        except psycopg.Error as e:
            return e.sqlstate, e.diag.message_primary
    assert run(ss_conn) == run(pg_conn)
