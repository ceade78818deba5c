"""Row constructors and row values, compared with PostgreSQL 15 over the wire.

``ROW(...)`` / ``(a, b)`` are record values (oid 2249): their text is
record_out's (quoting of empty strings, spaces, quotes, backslashes, commas
and parentheses, NULL fields empty), their binary record_send's (read by
psycopg's and asyncpg's record loaders).  Row comparisons (=, <>, <, <=, >,
>=, IS [NOT] DISTINCT FROM, IS [NOT] NULL, IN lists and IN subqueries) follow
PostgreSQL's row-wise rules with NULLs, on both executor backends.  The
cases are generated: types x NULLs x strings that need quoting.
"""
from __future__ import annotations

import asyncio
import itertools

import asyncpg
import psycopg
import pytest
from psycopg.adapt import Loader

#: field literals: each type with a NULL, strings record_out must quote
FIELDS = {
    "int4": ["1", "-7", "NULL::int4"],
    "int8": ["9000000000::int8", "NULL::int8"],
    "text": ["'plain'", "''", "' '", "'a b'", "'x\"y'", "E'a\\\\b'", "'a,b'", "'(x)'", "'NULL'", "E'tab\\there'",
             "'it''s'", "'ünï'", "NULL::text"],
    "varchar": ["'v w'::varchar", "'v'::varchar(4)"],
    "numeric": ["1.50::numeric", "'NaN'::numeric", "-0.001::numeric"],
    "float8": ["0.1::float8", "'Infinity'::float8", "'NaN'::float8"],
    "bool": ["true", "false", "NULL::bool"],
    "date": ["'2024-02-29'::date"],
    "timestamp": ["'2024-01-02 03:04:05.5'::timestamp"],
    "timestamptz": ["'2024-01-02 03:04:05+02'::timestamptz"],
    "interval": ["'1 day 02:00'::interval"],
    "bytea": ["'\\x00ff'::bytea"],
    "uuid": ["'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid"],
    "array": ["ARRAY[1,2]", "ARRAY['a b', NULL]", "'{}'::int[]"],
    "row": ["ROW(1, 'a b')", "ROW(NULL, '')", "(2, ROW('x,y', NULL))"],
}
ALL_FIELDS = [f for vals in FIELDS.values() for f in vals]


class _RawText(Loader):
    """The record's text as the server sent it (psycopg would parse it)."""

    def load(self, data):
        return bytes(data).decode()


def _answer(conn: psycopg.Connection, sql: str, *, binary: bool = False, params: tuple | None = None):
    try:
        cur = conn.cursor(binary=binary)
        cur.execute(sql, params)
        return "ok", [(d.name, d.type_code) for d in cur.description], cur.fetchall()
    except psycopg.Error as e:
        return "error", e.sqlstate, e.diag.message_primary


def _raw(conn: psycopg.Connection) -> psycopg.Connection:
    conn.adapters.register_loader("record", _RawText)
    conn.execute("SET TimeZone = 'UTC'")
    return conn


def _constructors() -> list[str]:
    """Rows of one to three fields over every generated literal."""
    singles = [f"ROW({f})" for f in ALL_FIELDS]
    pairs = [f"({a}, {b})" for a, b in zip(ALL_FIELDS, ALL_FIELDS[1:] + ALL_FIELDS[:1])]
    triples = [f"ROW({a}, {b}, {c})" for a, b, c in zip(ALL_FIELDS, ALL_FIELDS[5:] + ALL_FIELDS[:5],
                                                          ALL_FIELDS[11:] + ALL_FIELDS[:11])]
    return singles + pairs + triples + ["ROW()", "ROW(NULL)", "(NULL, NULL)", "ROW('a')"]


def test_constructor_text_like_postgres(ss_conn, pg_conn):
    ss, pg = _raw(ss_conn), _raw(pg_conn)
    for ctor in _constructors():
        sql = f"SELECT {ctor}"
        assert _answer(ss, sql) == _answer(pg, sql), sql


def test_constructor_binary_like_postgres(ss_conn, pg_conn):
    """psycopg's binary record loader reads each field by the oid sent with it."""
    for conn in (ss_conn, pg_conn):
        conn.execute("SET TimeZone = 'UTC'")
    for ctor in _constructors():
        sql = f"SELECT {ctor}"
        assert repr(_answer(ss_conn, sql, binary=True)) == repr(_answer(pg_conn, sql, binary=True)), sql   # NaN


def test_asyncpg_reads_rows(ss_server, pg15):
    # NaN != NaN in Python; asyncpg has no decoder for an array inside a record (from PostgreSQL either)
    sqls = [f"SELECT {c} AS r" for c in _constructors() if not any(w in c for w in ("NaN", "ARRAY", "{}"))]

    async def fetch(dsn_kw: dict) -> list:
        conn = await asyncpg.connect(**dsn_kw)
        try:
            await conn.execute("SET TimeZone = 'UTC'")
            return [tuple(await conn.fetchval(sql)) for sql in sqls]
        finally:
            await conn.close()

    def kw(dsn: str) -> dict:
        parts = dict(p.split("=", 1) for p in dsn.split())
        return {"host": parts["host"], "port": int(parts["port"]), "user": parts["user"],
                "database": parts["dbname"], "password": parts.get("password")}

    got = asyncio.run(fetch(kw(ss_server.dsn)))
    want = asyncio.run(fetch(kw(pg15.dsn)))
    for sql, g, w in zip(sqls, got, want):
        assert g == w, sql


def test_field_selection_like_postgres(ss_conn, pg_conn):
    sql = "SELECT (ROW(1, 2)).f2, ((3, 'a'::text)).f1, (ROW(1, ROW(2, 'x y'))).f2, (ROW(1, 2)).f1 + 1"
    assert _answer(_raw(ss_conn), sql) == _answer(_raw(pg_conn), sql)


ROW_VALUES = ["(1, 'a')", "(1, 'b')", "(2, 'a')", "(1, NULL)", "(NULL, 'a')", "(NULL, NULL)", "(0, '')"]
OPS = ["=", "<>", "<", "<=", ">", ">="]


def test_comparisons_like_postgres(ss_conn, pg_conn):
    """Every operator over every pair of generated rows, NULL fields included:
    one statement per operator, one column per pair."""
    pairs = list(itertools.product(ROW_VALUES, repeat=2))
    for op in OPS + ["IS DISTINCT FROM", "IS NOT DISTINCT FROM"]:
        sql = "SELECT " + ", ".join(f"ROW{a} {op} ROW{b}" for a, b in pairs)
        assert _answer(ss_conn, sql) == _answer(pg_conn, sql), sql
    tests = [f"{r} IS NULL, {r} IS NOT NULL, NOT {r} IS NULL" for r in ROW_VALUES]
    sql = "SELECT " + ", ".join(tests)
    assert _answer(ss_conn, sql) == _answer(pg_conn, sql)


def test_three_field_order_like_postgres(ss_conn, pg_conn):
    vals = ["(1, 2, 3)", "(1, 2, NULL)", "(1, NULL, 3)", "(1, 3, 0)", "(0, 9, 9)", "(1, 2, 4)"]
    for op in ["<", "<=", ">", ">="]:
        sql = "SELECT " + ", ".join(f"{a} {op} {b}" for a, b in itertools.product(vals, repeat=2))
        assert _answer(ss_conn, sql) == _answer(pg_conn, sql), sql


def test_nested_rows_compare_as_records(ss_conn, pg_conn):
    """A row inside a row compares as a record (record_eq, record_lt): NULL
    fields equal to each other and above every value, unlike the outer
    constructor's field-by-field rule."""
    inner = ["ROW(1, 2::int8)", "ROW(1, NULL::int8)", "ROW(NULL::int, 2::int8)", "ROW(0, 9::int8)", "ROW(2, 0::int8)"]
    vals = [f"ROW({a}, {b})" for a, b in itertools.product(inner, ["1", "NULL::int"])]
    for op in OPS + ["IS DISTINCT FROM"]:
        sql = "SELECT " + ", ".join(f"{a} {op} {b}" for a, b in itertools.product(vals, repeat=2))
        want = _answer(pg_conn, sql)
        assert want[0] == "ok" and _answer(ss_conn, sql) == want, op


ERRORS = ["SELECT ROW(1, 2) = ROW(1, 2, 3)", "SELECT (1, 2) < (1, 2, 3)", "SELECT ROW(1, 'x'::text) = ROW(1, 2)",
          "SELECT ROW(1, 2) = ROW(1, 'a')", "SELECT (1, 2) IN (1, 2)", "SELECT (1, 2) IN (SELECT 1)",
          "SELECT (1, 2) IN (SELECT 1, 2, 3)", "SELECT (1, 2) IN (SELECT 1, 'a')", "SELECT ROW() = ROW()",
          "SELECT ROW(1, 2) IS DISTINCT FROM ROW(1)", "SELECT max(ROW(1, 2))", "SELECT sum((1, 2))",
          "SELECT ROW(ROW(1, 'a')) = ROW(ROW(1, 2))", "SELECT ROW(ROW(1, 2)) = ROW(ROW(1, 2, 3))",
          "SELECT ROW(ROW(1, NULL), 3) = ROW(ROW(1, NULL), 3)", "SELECT (SELECT 1, 2) = ROW(1, 2)",
          "SELECT ROW(ROW(1.5, 2)) < ROW(ROW(1, 2))", "SELECT (ROW(1, 2)).f3", "SELECT (ROW(1, 2)).f01", "SELECT ROW(ROW(1, 2)) IS DISTINCT FROM ROW(ROW(1, 'x'::text))"]


def test_parameters_in_rows_like_postgres(ss_conn, pg_conn):
    """A parameter nothing gives a type is 42P18 inside a row, as in PostgreSQL."""
    for sql, params in [("SELECT ROW(%s, %s)", (1, "a b")), ("SELECT (%s::int, %s)", (1, None)),
                        ("SELECT ROW(%s::text, 2), (%s::int, 'x') = ROW(1, %s)", ("q", 1, "x"))]:
        got, want = (_answer(c, sql, params=params) for c in (_raw(ss_conn), _raw(pg_conn)))
        assert got == want, sql


REFUSED = ["SELECT ROW(1, 2) = (SELECT 1, 2)", "SELECT (1, 2) < ALL (SELECT 1, 3)",
           "SELECT (1, 2) = ANY (ARRAY[ROW(1, 2)])"]


@pytest.mark.parametrize("sql", REFUSED)
def test_refused_where_postgres_answers(ss_conn, pg_conn, sql):
    """Row forms not implemented are refused (0A000), never answered wrongly."""
    assert _answer(pg_conn, sql)[0] == "ok"
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        ss_conn.execute(sql)


@pytest.mark.parametrize("sql", ERRORS)
def test_errors_like_postgres(ss_conn, pg_conn, sql):
    want = _answer(pg_conn, sql)
    assert want[0] == "error"
    assert _answer(ss_conn, sql) == want


TABLE_ROWS = ["1, 'x', 1, 'x'", "2, NULL, 2, NULL", "NULL, 'y z', 1, 'y z'", "1, 'x', 1, 'w'",
              "NULL, NULL, NULL, NULL", "2, 'a', 3, 'a'", "3, '', 3, ''", "1, 'x,y', 0, 'x,y'"]
TABLE_QUERIES = [
    "SELECT ROW(a, b) FROM {t} ORDER BY a, b, c, d",
    "SELECT ROW(a, b), (b, a) FROM {t} ORDER BY 1",
    "SELECT DISTINCT ROW(a, b) FROM {t} ORDER BY 1",
    "SELECT ROW(a, b), count(*) FROM {t} GROUP BY ROW(a, b) ORDER BY 1",
    "SELECT a, b FROM {t} ORDER BY (b, a) DESC",
    "SELECT count(DISTINCT (a, b)), count((a, b)) FROM {t}",
    "SELECT array_agg(ROW(a, b) ORDER BY a, b) FROM {t}",
    "SELECT a, b FROM {t} WHERE (a, b) = (c, d) ORDER BY a, b, c, d",
    "SELECT a, b, (a, b) < (c, d), (a, b) >= (c, d), (a, b) <> (c, d) FROM {t} ORDER BY a, b, c, d",
    "SELECT a, b FROM {t} WHERE (a, b) IN ((1, 'x'), (2, 'a'), (NULL, NULL)) ORDER BY a, b, c, d",
    "SELECT a, b, (a, b) IN ((1, 'x'), (3, NULL)) FROM {t} ORDER BY a, b, c, d",
    "SELECT a, b FROM {t} WHERE (a, b) IN (SELECT c, d FROM {t} WHERE c > 0) ORDER BY a, b, c, d",
    "SELECT a, b, (a, b) IN (SELECT c, d FROM {t}) FROM {t} ORDER BY a, b, c, d",
    "SELECT a, b, (a, b) NOT IN (SELECT c, d FROM {t} WHERE c <> 1) FROM {t} ORDER BY a, b, c, d",
    "SELECT a, b FROM {t} o WHERE (a, b) IN (SELECT c, d FROM {t} i WHERE i.c = o.a) ORDER BY a, b, c, d",
    "SELECT a, b, (a, b) = ANY (SELECT c, d FROM {t} WHERE c < 3), (a, b) <> ALL (SELECT c, d FROM {t} WHERE c > 1) "
    "FROM {t} ORDER BY a, b, c, d",
    "SELECT (a, b) IS NULL, (a, b) IS NOT NULL, (a, b) IS DISTINCT FROM (c, d) FROM {t} ORDER BY a, b, c, d",
    "SELECT a, count(*) FILTER (WHERE (a, b) <= (c, d)), count(*) FILTER (WHERE (b, c) IS NULL) FROM {t} "
    "GROUP BY a ORDER BY 1",
    "SELECT c, count(*), sum(a) FROM {t} WHERE (a, b) > (1, 'x') OR (c, d) = (1, 'y z') GROUP BY c ORDER BY 1",
    "SELECT json_agg(ROW(a, b) ORDER BY a, b)::text, to_json(ROW(1, 'a b'))::text FROM {t}",
    "SELECT to_json(ROW(a, ROW(b, c)))::text, to_jsonb((a, {t}))::text, json_build_object('r', ({t}, 2))::text, "
    "array_to_json(ARRAY[ROW(c, d)])::text FROM {t} ORDER BY a, b, c, d",
]


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_table_queries_like_postgres(ss_conn, pg_conn, unique_name, backend):
    t = unique_name("rv")
    ss, pg = _raw(ss_conn), _raw(pg_conn)
    for conn in (ss, pg):
        conn.execute(f"CREATE TABLE {t} (a int, b text, c int, d text)")
        conn.execute(f"INSERT INTO {t} VALUES " + ", ".join(f"({r})" for r in TABLE_ROWS))
    ss.execute(f"SET executor_backend = '{backend}'")
    try:
        for q in TABLE_QUERIES:
            sql = q.format(t=t)
            assert _answer(ss, sql) == _answer(pg, sql), sql
    finally:
        ss.execute("RESET executor_backend")
        for conn in (ss, pg):
            conn.execute(f"DROP TABLE {t}")


@pytest.mark.parametrize("ddl", ["CREATE TABLE {n} AS SELECT ROW(1, 'a') AS r", "CREATE TABLE {n} (r record)",
                                 "CREATE MATERIALIZED VIEW {n} AS SELECT ROW(1, 2) AS r",
                                 "CREATE VIEW {n} AS SELECT ROW(1, 2) AS r",
                                 "CREATE TABLE {n} AS SELECT array_agg(ROW(x, x)) AS r FROM generate_series(1, 3) x"])
def test_no_stored_row_columns(ss_conn, pg_conn, unique_name, ddl):
    """A row has no storage: PostgreSQL's 42P16, and the server keeps working."""
    sql = ddl.format(n=unique_name("rs"))
    assert _answer(ss_conn, sql) == _answer(pg_conn, sql) == ("error", "42P16", _answer(pg_conn, sql)[2])
    assert ss_conn.execute("CHECKPOINT").statusmessage == "CHECKPOINT"


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_continuous_view_with_row_comparisons(ss_conn, pg_conn, unique_name, backend):
    """Row comparisons in a view's stream pipeline run on either backend and
    agree with the same query over a table in PostgreSQL; a view that would
    keep rows in its state is refused."""
    s, t, v = unique_name("rs"), unique_name("rt"), unique_name("rv")
    rows = "(1, 'x', 3), (1, 'x', 7), (2, NULL, 9), (0, 'z', 1), (NULL, 'y', 2), (2, NULL, 1), (1, 'w', 6)"
    body = ("SELECT a, count(*) AS n, sum(c) FILTER (WHERE (a, c) > (1, 5)) AS f, "
            "count(*) FILTER (WHERE (a, b) IS NULL OR (b, c) IS NOT NULL) AS g FROM {src} "
            "WHERE (a, b) <> (0, 'z') AND ((a, b) IN ((1, 'x'), (2, NULL), (1, 'w')) OR (a, c) >= (2, 1)) GROUP BY a")
    ss_conn.execute(f"SET executor_backend = '{backend}'")
    try:
        ss_conn.execute(f"CREATE FOREIGN TABLE {s} (a int, b text, c int) SERVER stream")
        ss_conn.execute(f"CREATE VIEW {v} AS " + body.format(src=s))
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            ss_conn.execute(f"CREATE VIEW {v}_k AS SELECT count(*) FROM {s} GROUP BY ROW(a, b)")
        ss_conn.execute(f"INSERT INTO {s} VALUES {rows}")
        pg_conn.execute(f"CREATE TABLE {t} (a int, b text, c int)")
        pg_conn.execute(f"INSERT INTO {t} VALUES {rows}")
        got = ss_conn.execute(f"SELECT * FROM {v} ORDER BY a").fetchall()
        want = pg_conn.execute(body.format(src=t) + " ORDER BY a").fetchall()
        assert got == want and len(want) == 2
    finally:
        ss_conn.execute("RESET executor_backend")
        for sql in (f"DROP VIEW IF EXISTS {v}", f"DROP FOREIGN TABLE IF EXISTS {s}"):
            ss_conn.execute(sql)
        pg_conn.execute(f"DROP TABLE IF EXISTS {t}")
