"""Data-modifying statements in WITH (PostgreSQL's "writable CTEs",
queries.html#QUERIES-WITH-MODIFYING), compared with PostgreSQL 15: each
statement's outcome (rows, tag, or SQLSTATE and message) and the tables'
contents after it.  Covered: DELETE/INSERT/UPDATE ... RETURNING read by a
SELECT, INSERT, UPDATE or DELETE main statement; one snapshot for every part
(the main query counts the rows as they were); a WITH query run although
nothing reads it; chained WITH queries; two parts changing one row; NULLs;
the refusals (no RETURNING, below the top level); atomicity (an error in any
part keeps all of it out); privileges on every table touched.  EXPLAIN and
streams, which splitstream refuses, are checked on their own."""
from __future__ import annotations

import psycopg
import pytest

SETUP = [
    "CREATE TABLE {t} (id int PRIMARY KEY, v text, n int)",
    "INSERT INTO {t} VALUES (1, 'a', 10), (2, NULL, NULL), (3, 'c', 30), (4, NULL, 40)",
    "CREATE TABLE {b} (id int, v text, n int)",
]

SCENARIOS = {
    "select_reads_delete": ["WITH d AS (DELETE FROM {t} WHERE id = 2 RETURNING *) SELECT count(*), max(v), max(n) FROM d"],
    "main_sees_snapshot": ["WITH d AS (DELETE FROM {t} RETURNING *) SELECT count(*), count(v) FROM {t}"],
    "delete_nulls": ["WITH d AS (DELETE FROM {t} WHERE v IS NULL RETURNING *) SELECT * FROM d"],
    "move_rows": ["WITH moved AS (DELETE FROM {t} WHERE n > 15 OR n IS NULL RETURNING *) INSERT INTO {b} SELECT * FROM moved"],
    "insert_returning": [
        "WITH i AS (INSERT INTO {t} VALUES (5, NULL, 50), (6, 'f', NULL) RETURNING id, v, n * 2 AS twice)"
        " SELECT i.id, i.v, i.twice, (SELECT count(*) FROM {t}) FROM i"],
    "update_joined_with_table": [
        "WITH u AS (UPDATE {t} SET n = n + 1 WHERE v IS NOT NULL RETURNING id, n)"
        " SELECT t.id, t.n, u.n FROM {t} t JOIN u USING (id)"],
    "runs_unread": [
        "WITH d AS (DELETE FROM {t} WHERE id = 1) SELECT 1",
        "WITH i AS (INSERT INTO {b} VALUES (7, 'x', NULL) RETURNING *) SELECT 2",
        "WITH u AS (UPDATE {t} SET v = NULL WHERE id = 3 RETURNING *), c AS (SELECT count(*) FROM u) SELECT 3",
    ],
    "main_update": [
        "INSERT INTO {b} SELECT id, v, NULL FROM {t}",
        "WITH d AS (DELETE FROM {t} WHERE id IN (3, 4) RETURNING *)"
        " UPDATE {b} SET n = d.n FROM d WHERE {b}.id = d.id RETURNING {b}.*",
    ],
    "main_delete": [
        "INSERT INTO {b} SELECT * FROM {t}",
        "WITH d AS (UPDATE {t} SET v = 'z' WHERE v IS NULL RETURNING id) DELETE FROM {b} WHERE id IN (SELECT id FROM d) RETURNING *",
    ],
    "main_insert_values_and_plain_cte": [
        "WITH x AS (SELECT id FROM {t} WHERE n IS NULL), d AS (DELETE FROM {t} WHERE id IN (SELECT id FROM x) RETURNING id)"
        " INSERT INTO {b} SELECT id, 'gone', NULL FROM d RETURNING *",
    ],
    "chained": [
        "WITH d AS (DELETE FROM {t} WHERE id <= 2 RETURNING *), i AS (INSERT INTO {b} SELECT * FROM d RETURNING *)"
        " SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM i), (SELECT count(*) FROM {b})",
    ],
    "one_row_twice": [
        "WITH d AS (UPDATE {t} SET v = 'u' WHERE id = 3 RETURNING *), e AS (DELETE FROM {t} WHERE id = 3 RETURNING *)"
        " SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM e)",
        "WITH d AS (DELETE FROM {t} WHERE id = 1 RETURNING *), e AS (DELETE FROM {t} WHERE id <= 2 RETURNING *)"
        " SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM e)",
    ],
    "upsert": [
        "WITH i AS (INSERT INTO {t} VALUES (1, 'new', NULL), (9, NULL, 9) ON CONFLICT (id) DO UPDATE SET v = excluded.v"
        " RETURNING *) SELECT i.*, (SELECT count(*) FROM {t}) FROM i",
        "WITH i AS (INSERT INTO {t} VALUES (2, 'skip', 2) ON CONFLICT DO NOTHING RETURNING *) SELECT count(*) FROM i",
    ],
    "column_aliases": ["WITH d(x, y) AS (DELETE FROM {t} WHERE id = 1 RETURNING id, v) SELECT x, y FROM d"],
    "with_on_dml_plain": ["WITH x AS (SELECT * FROM {t} WHERE v IS NULL) INSERT INTO {b} SELECT * FROM x"],
    "no_returning": ["WITH d AS (DELETE FROM {t}) SELECT * FROM d"],
    "not_top_level": [
        "SELECT * FROM (WITH d AS (DELETE FROM {t} RETURNING *) SELECT * FROM d) s",
        "SELECT (WITH d AS (DELETE FROM {t} RETURNING *) SELECT count(*) FROM d)",
        "INSERT INTO {b} WITH d AS (DELETE FROM {t} RETURNING *) SELECT * FROM d",
        "WITH x AS (WITH d AS (DELETE FROM {t} RETURNING *) SELECT * FROM d) SELECT * FROM x",
        "SELECT 1 UNION ALL (WITH d AS (DELETE FROM {t} RETURNING id) SELECT id FROM d)",
    ],
    "refused_in_views_and_cursors": [
        "CREATE VIEW {b}_v AS WITH d AS (DELETE FROM {t} RETURNING *) SELECT * FROM d",
        "CREATE MATERIALIZED VIEW {b}_m AS WITH d AS (DELETE FROM {t} RETURNING *) SELECT * FROM d",
        "BEGIN",
        "DECLARE {b}_c CURSOR FOR WITH d AS (DELETE FROM {t} RETURNING *) SELECT * FROM d",
        "ROLLBACK",
    ],
    "prepared_and_recursive": [
        "PREPARE {b}_p AS WITH d AS (DELETE FROM {t} WHERE id = $1 RETURNING *) INSERT INTO {b} SELECT * FROM d RETURNING n",
        "EXECUTE {b}_p(2)",
        "EXECUTE {b}_p(3)",
        "DEALLOCATE {b}_p",
        "WITH RECURSIVE d AS (DELETE FROM {t} WHERE id = 1 RETURNING *) SELECT * FROM d",
    ],
    "atomic": [
        "WITH d AS (DELETE FROM {t} RETURNING *) SELECT 1 / (n - n) FROM d",
        "WITH d AS (INSERT INTO {b} VALUES (1, 'kept?', 1) RETURNING *), i AS (INSERT INTO {t} VALUES (1, 'dup', 0) RETURNING *)"
        " SELECT * FROM d",
        "WITH d AS (DELETE FROM {t} WHERE id = 1 RETURNING *) INSERT INTO {t} VALUES (2, 'x', 0)",
        "BEGIN",
        "WITH d AS (DELETE FROM {t} WHERE id = 3 RETURNING *) INSERT INTO {b} SELECT * FROM d",
        "WITH d AS (DELETE FROM {t} WHERE id = 1 RETURNING *) INSERT INTO {t} VALUES (2, 'x', 0)",
        "ROLLBACK",
    ],
}


def _outcome(conn: psycopg.Connection, sql: str) -> tuple:
    """What a statement did: its tag and rows (sorted: RETURNING order is
    PostgreSQL's own), or its SQLSTATE and message."""
    try:
        cur = conn.execute(sql)
    except psycopg.Error as e:
        return ("ERROR", e.sqlstate, e.diag.message_primary)
    rows = sorted(cur.fetchall(), key=repr) if cur.description else None
    return (cur.statusmessage, rows)


def _run(conn: psycopg.Connection, names: dict[str, str], statements: list[str]) -> list[tuple]:
    for s in SETUP:
        conn.execute(s.format(**names))
    try:
        out = [_outcome(conn, s.format(**names)) for s in statements]
        for table in ("{t}", "{b}"):
            out.append(_outcome(conn, f"SELECT * FROM {table} ORDER BY 1, 2, 3".format(**names)))
        return out
    finally:
        conn.execute("DROP TABLE {t}, {b}".format(**names))


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_writable_cte_like_postgres(scenario, ss_conn, pg_conn, unique_name):
    names = {"t": unique_name("t"), "b": unique_name("b")}
    ours = _run(ss_conn, names, SCENARIOS[scenario])
    theirs = _run(pg_conn, names, SCENARIOS[scenario])
    assert ours == theirs


def test_writable_cte_with_parameters_run_twice(ss_conn, pg_conn, unique_name):
    """The extended protocol (Parse/Bind/Describe), and the session's cached plan run again."""
    names = {"t": unique_name("t"), "b": unique_name("b")}
    sql = "WITH u AS (UPDATE {t} SET v = %s WHERE id = %s RETURNING id, v, n) SELECT * FROM u".format(**names)
    results = []
    for conn in (ss_conn, pg_conn):
        for s in SETUP:
            conn.execute(s.format(**names))
        out = []
        for args in (("x", 1), (None, 3), ("y", 99)):
            cur = conn.execute(sql, args)
            out.append(([d.name for d in cur.description], cur.fetchall()))
        out.append(conn.execute("SELECT * FROM {t} ORDER BY id".format(**names)).fetchall())
        conn.execute("DROP TABLE {t}, {b}".format(**names))
        results.append(out)
    assert results[0] == results[1]


def test_writable_cte_checks_every_tables_privileges(ss_conn, pg_conn, unique_name):
    names = {"t": unique_name("t"), "b": unique_name("b")}
    role = unique_name("r")
    statements = [
        "WITH d AS (DELETE FROM {t} WHERE id = 1 RETURNING *) SELECT * FROM d",
        "WITH d AS (SELECT * FROM {t}) INSERT INTO {b} SELECT * FROM d",
        "WITH moved AS (DELETE FROM {b} RETURNING *) SELECT count(*) FROM {t}",
        "WITH i AS (INSERT INTO {b} SELECT * FROM {t} WHERE id = 1 RETURNING id) SELECT * FROM i",
    ]
    results = []
    for conn in (ss_conn, pg_conn):
        for s in SETUP:
            conn.execute(s.format(**names))
        conn.execute(f"CREATE ROLE {role}")
        conn.execute("GRANT SELECT ON {t} TO {r}".format(r=role, **names))
        conn.execute("GRANT INSERT ON {b} TO {r}".format(r=role, **names))
        conn.execute(f"SET ROLE {role}")
        try:
            out = [_outcome(conn, s.format(**names)) for s in statements]
        finally:
            conn.execute("RESET ROLE")
        out += [_outcome(conn, f"SELECT * FROM {table} ORDER BY 1".format(**names)) for table in ("{t}", "{b}")]
        conn.execute("DROP TABLE {t}, {b}".format(**names))
        conn.execute(f"DROP ROLE {role}")
        results.append(out)
    assert results[0] == results[1]
    assert results[0][0][:2] == ("ERROR", "42501")        # not vacuous: the refusal happened


def test_explain_of_writable_cte_is_refused_and_changes_nothing(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (id int)")
    ss_conn.execute(f"INSERT INTO {t} VALUES (1), (NULL)")
    for explain in ("EXPLAIN", "EXPLAIN ANALYZE"):
        with pytest.raises(psycopg.errors.FeatureNotSupported) as err:
            ss_conn.execute(f"{explain} WITH d AS (DELETE FROM {t} RETURNING *) SELECT count(*) FROM d")
        assert err.value.diag.message_hint
    assert ss_conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (2,)
    ss_conn.execute(f"DROP TABLE {t}")


def test_stream_write_inside_with_is_refused_like_insert_returning(ss_conn, unique_name):
    s, t = unique_name("s"), unique_name("t")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (k int, tag text) SERVER stream")
    ss_conn.execute(f"CREATE TABLE {t} (id int)")
    ss_conn.execute(f"INSERT INTO {t} VALUES (1)")
    try:
        with pytest.raises(psycopg.errors.FeatureNotSupported):
            ss_conn.execute(f"INSERT INTO {s} VALUES (1, NULL) RETURNING *")     # what a plain statement does today
        for sql in (f"WITH i AS (INSERT INTO {s} VALUES (1, NULL) RETURNING *) SELECT * FROM i",
                    f"WITH i AS (INSERT INTO {s} VALUES (1, NULL)) SELECT 1",
                    f"WITH d AS (DELETE FROM {t} RETURNING *) INSERT INTO {s} SELECT id, 'x' FROM d"):
            with pytest.raises(psycopg.errors.FeatureNotSupported) as err:
                ss_conn.execute(sql)
            assert "stream" in err.value.diag.message_primary
        assert ss_conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (1,)
    finally:
        ss_conn.execute(f"DROP TABLE {t}")
        ss_conn.execute(f"DROP FOREIGN TABLE {s}")


def test_sql_function_body_with_data_modifying_with_is_refused(ss_conn, unique_name):
    """PostgreSQL runs it; splitstream refuses any SQL function body that changes data, this form too."""
    t, f = unique_name("t"), unique_name("f")
    ss_conn.execute(f"CREATE TABLE {t} (id int)")
    ss_conn.execute(f"INSERT INTO {t} VALUES (1)")
    try:
        with pytest.raises(psycopg.errors.FeatureNotSupported) as err:
            ss_conn.execute(f"CREATE FUNCTION {f}() RETURNS bigint LANGUAGE sql AS "
                            f"$$ WITH d AS (DELETE FROM {t} RETURNING *) SELECT count(*) FROM d $$")
        assert "changes data" in err.value.diag.message_primary
        assert ss_conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (1,)
    finally:
        ss_conn.execute(f"DROP TABLE {t}")
