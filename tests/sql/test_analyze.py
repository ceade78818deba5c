"""ANALYZE, pg_stats and pg_statistic against PostgreSQL 15 (issue 18, item 2).

Small tables are sampled whole, so every number is exactly PostgreSQL's
(its ANALYZE is deterministic then); a large table is compared within
sampling error; the column names and types of both views are PG15's.
"""
from __future__ import annotations

import math

import psycopg
import pytest

STATS = ("SELECT attname, null_frac, avg_width, n_distinct, most_common_vals, most_common_freqs, "
         "histogram_bounds, correlation FROM pg_stats WHERE tablename = %s ORDER BY attname")

SMALL = """
CREATE TABLE {t} (k int, cat int, s text, f float8, n numeric(10,2), b bool, d date, nul int8);
INSERT INTO {t} SELECT g, g % 7, CASE WHEN g % 11 = 0 THEN NULL ELSE 'v' || lpad((g % 40)::text, 3, '0') END,
       (g * 37 % 101) * 0.5, g / 4.0, g % 3 = 0, date '2024-01-01' + (g % 30), NULL::int8
FROM generate_series(1, 2000) g;
INSERT INTO {t} SELECT 1000 + g, 1, 'v001', 1.0, 1.0, true, date '2024-01-01', NULL::int8 FROM generate_series(1, 300) g;
"""


def _setup(conn, sql: str) -> None:
    for stmt in sql.split(";"):
        if stmt.strip():
            conn.execute(stmt)


def _rows(conn, t: str) -> list[tuple]:
    return conn.execute(STATS, (t,)).fetchall()


def _close(a, b, tol: float) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


def test_small_table_stats_equal_postgresql(ss_conn, pg_conn, unique_name):
    t = unique_name("t")
    for conn in (ss_conn, pg_conn):
        _setup(conn, SMALL.format(t=t))
        conn.execute(f"ANALYZE {t}")
    try:
        ours, theirs = _rows(ss_conn, t), _rows(pg_conn, t)
        assert [r[0] for r in ours] == [r[0] for r in theirs]
        for o, p in zip(ours, theirs):
            name = o[0]
            assert _close(o[1], p[1], 1e-6), (name, "null_frac", o[1], p[1])
            assert o[2] == p[2], (name, "avg_width", o[2], p[2])
            assert _close(o[3], p[3], 1e-6), (name, "n_distinct", o[3], p[3])
            assert o[4] == p[4], (name, "most_common_vals", o[4], p[4])
            assert (o[5] is None) == (p[5] is None) and all(_close(x, y, 1e-6) for x, y in zip(o[5] or [], p[5] or [])), name
            assert o[6] == p[6], (name, "histogram_bounds", o[6], p[6])
            assert _close(o[7], p[7], 1e-5), (name, "correlation", o[7], p[7])
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE {t}")


LARGE = """
CREATE TABLE {t} (u int, z int, s text, nul int);
INSERT INTO {t} SELECT g, CASE WHEN g % 2 = 0 THEN 0 WHEN g % 4 = 1 THEN 1 ELSE g % 500 END,
       'k' || (g % 5000), CASE WHEN g % 5 = 0 THEN g END
FROM generate_series(1, 120000) g
"""


def test_large_table_stats_within_sampling_error(ss_conn, pg_conn, unique_name):
    t = unique_name("t")
    for conn in (ss_conn, pg_conn):
        _setup(conn, LARGE.format(t=t))
        conn.execute(f"ANALYZE {t}")
    try:
        ours = {r[0]: r for r in _rows(ss_conn, t)}
        theirs = {r[0]: r for r in _rows(pg_conn, t)}
        assert ours.keys() == theirs.keys()
        for name in ours:
            o, p = ours[name], theirs[name]
            assert abs(o[1] - p[1]) < 0.02, (name, o[1], p[1])
            assert o[2] == p[2], (name, o[2], p[2])
            assert (o[3] < 0) == (p[3] < 0), (name, o[3], p[3])           # the same sign convention
        assert ours["u"][3] == -1 and theirs["u"][3] == -1
        assert abs(ours["s"][3] - 5000) < 250                             # the sketch: all rows, not the sample
        for r in (ours["z"], theirs["z"]):          # 0 and 1 lead; a rarer value may follow by chance
            assert r[4].strip("{}").split(",")[:2] == ["0", "1"]
        assert abs(ours["z"][5][0] - 0.5) < 0.02 and abs(ours["z"][5][1] - 0.25) < 0.02
        assert abs(ours["u"][7] - 1.0) < 0.01 and abs(theirs["u"][7] - 1.0) < 0.01
        assert len(ours["u"][6].split(",")) == 101
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE {t}")


@pytest.mark.parametrize("view", ["pg_stats", "pg_statistic"])
def test_column_names_and_types_are_postgresqls(ss_conn, pg_conn, view):
    cols = []
    for conn in (ss_conn, pg_conn):
        cur = conn.execute(f"SELECT * FROM {view} LIMIT 0")
        cols.append([(d.name, d.type_code) for d in cur.description])
    assert cols[0] == cols[1]


def test_analyze_checks_names_as_postgresql(ss_conn, pg_conn, unique_name):
    t = unique_name("t")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE TABLE {t} (a int)")
    try:
        for sql, state in ((f"ANALYZE {t} (zz)", "42703"), ("ANALYZE no_such_table_x", "42P01")):
            got = []
            for conn in (pg_conn, ss_conn):
                with pytest.raises(psycopg.Error) as err:
                    conn.execute(sql)
                got.append(err.value.sqlstate)
            assert got == [state, state]
        for conn in (pg_conn, ss_conn):
            conn.execute(f"ANALYZE {t} (a)")
            conn.execute("ANALYZE")
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE {t}")


def test_statistics_follow_inserts_and_deletes(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (a int)")
    ss_conn.execute(f"INSERT INTO {t} SELECT g % 10 FROM generate_series(1, 5000) g")
    assert _rows(ss_conn, t)[0][3] == 10
    ss_conn.execute(f"INSERT INTO {t} SELECT 100 + g FROM generate_series(1, 5000) g")    # unique values
    assert _rows(ss_conn, t)[0][3] < 0
    ss_conn.execute(f"DELETE FROM {t} WHERE a >= 100")
    ss_conn.execute(f"UPDATE {t} SET a = a + 1 WHERE a < 5")
    row = _rows(ss_conn, t)[0]
    assert row[3] == 9 and set(row[4].strip("{}").split(",")) == {str(i) for i in range(1, 10)}
    ss_conn.execute(f"DROP TABLE {t}")


def test_sample_rows_setting(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (a int)")
    ss_conn.execute(f"INSERT INTO {t} SELECT g FROM generate_series(1, 50000) g")
    try:
        ss_conn.execute("SET splitstream.sample_rows = 1000")
        ss_conn.execute(f"ANALYZE {t}")
        assert _rows(ss_conn, t)[0][3] == -1
        with pytest.raises(psycopg.Error) as err:
            ss_conn.execute("SET splitstream.sample_rows = 5")
        assert err.value.sqlstate == "22023"
    finally:
        ss_conn.execute("RESET splitstream.sample_rows")
        ss_conn.execute(f"DROP TABLE {t}")


def test_statistics_rebuilt_after_restart(ss_server_factory):
    srv = ss_server_factory()
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE t (a int)")
        c.execute("INSERT INTO t SELECT g % 3 FROM generate_series(1, 999) g")
        c.execute("ANALYZE t")
        before = _rows(c, "t")
    srv.restart()
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        assert _rows(c, "t") == before


def test_pg_stats_shows_only_readable_columns(ss_conn, pg_conn, unique_name):
    """As PostgreSQL: pg_stats filters on has_column_privilege(.., 'select');
    pg_statistic is for superusers only (42501)."""
    t, r = unique_name("t"), unique_name("r")
    seen = []
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE TABLE {t} (a int, secret text)")
        conn.execute(f"INSERT INTO {t} SELECT g % 5, 'pw' || (g % 3) FROM generate_series(1, 100) g")
        conn.execute(f"ANALYZE {t}")
        conn.execute(f"CREATE ROLE {r}")
        conn.execute(f"GRANT SELECT (a) ON {t} TO {r}")
        conn.execute(f"SET ROLE {r}")
        try:
            seen.append(conn.execute("SELECT attname FROM pg_stats WHERE tablename = %s ORDER BY 1", (t,)).fetchall())
            with pytest.raises(psycopg.Error) as err:
                conn.execute("SELECT * FROM pg_statistic")
            seen.append(err.value.sqlstate)
        finally:
            conn.execute("RESET ROLE")
            conn.execute(f"DROP TABLE {t}")
            conn.execute(f"DROP ROLE {r}")
    assert seen[0] == seen[2] == [("a",)]
    assert seen[1] == seen[3] == "42501"


TYPES = """
CREATE TABLE {t} (j json, jb jsonb, by bytea, u uuid, iv interval, arr int[], ts timestamptz, tm time,
                  n numeric, b bool, vc varchar(5), ch char(3), f4 real, d date);
INSERT INTO {t} SELECT ('{{"a":' || (g % 3) || '}}')::json, ('{{"a":' || (g % 3) || '}}')::jsonb, ('\\x0' || (g % 5))::bytea,
       ('00000000-0000-0000-0000-00000000000' || (g % 7))::uuid, (g % 4) * interval '1 hour', ARRAY[g % 2, g % 3],
       timestamptz '2024-01-01 00:00:00+00' + g * interval '1 min', time '10:00' + (g % 5) * interval '1 min',
       CASE WHEN g % 9 = 0 THEN 'NaN'::numeric ELSE g / 7.0 END, g % 2 = 0, 'a' || (g % 3), 'b' || (g % 2),
       (g % 6)::real, date '2024-01-01' + g % 3
FROM generate_series(1, 200) g
"""


def test_every_type_analyzes_like_postgresql(ss_conn, pg_conn, unique_name):
    """Types Python cannot order (jsonb), numeric NaN, arrays: no error, and
    the same null_frac, n_distinct and which slots are filled as PostgreSQL."""
    t = unique_name("t")
    q = ("SELECT attname, null_frac, n_distinct, most_common_vals IS NULL, histogram_bounds IS NULL, "
         "correlation IS NULL FROM pg_stats WHERE tablename = %s ORDER BY attname")
    got = []
    for conn in (ss_conn, pg_conn):
        _setup(conn, TYPES.format(t=t))
        conn.execute(f"ANALYZE {t}")
        got.append(conn.execute(q, (t,)).fetchall())
        conn.execute(f"DROP TABLE {t}")
    assert got[0] == got[1]


def test_anyarray_columns_are_read_as_postgresql_reads_them(ss_conn, pg_conn, unique_name):
    """pg_stats' anyarray columns: the text cast idiom gives PostgreSQL's
    arrays, a subscript is PostgreSQL's 42804, array_append its 42883; a
    function PostgreSQL answers from the element type it knows is refused
    (0A000 with the idiom as hint), never an internal error or a guess."""
    t = unique_name("t")
    for conn in (ss_conn, pg_conn):
        _setup(conn, SMALL.format(t=t))
        conn.execute(f"ANALYZE {t}")
    idiom = ("SELECT histogram_bounds::text::int[], array_length(histogram_bounds::text::int[], 1), "
             "most_common_vals::text::text[] FROM pg_stats WHERE tablename = %s AND attname IN ('k', 's') "
             "ORDER BY attname")
    try:
        assert ss_conn.execute(idiom, (t,)).fetchall() == pg_conn.execute(idiom, (t,)).fetchall()
        for sql, state in ((f"SELECT histogram_bounds[1] FROM pg_stats WHERE tablename = '{t}'", "42804"),
                           (f"SELECT array_append(most_common_vals, 1) FROM pg_stats WHERE tablename = '{t}'",
                            "42883")):
            for conn in (ss_conn, pg_conn):
                with pytest.raises(psycopg.Error) as err:
                    conn.execute(sql).fetchall()
                assert err.value.sqlstate == state, (sql, conn is ss_conn, err.value)
        with pytest.raises(psycopg.Error) as err:
            ss_conn.execute(f"SELECT cardinality(histogram_bounds) FROM pg_stats WHERE tablename = '{t}'")
        assert err.value.sqlstate == "0A000" and "::text::" in (err.value.diag.message_hint or "")
        assert ss_conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE IF EXISTS {t}")
