"""pg_get_viewdef prints a view as PostgreSQL 15's ruleutils does (issue 15,
scope 7): each definition below is created as a view on both servers and
its definition compared, pretty (psql's \\d+ and \\sv) and plain (pg_views,
pg_get_viewdef(oid)), byte for byte.

The definitions cover the select list and its names, column qualification,
the casts PostgreSQL's parser inserts, constants, operators and their
parentheses, CASE, sublinks, joins, set operations, grouping, ordering,
limits and window functions.
"""
from __future__ import annotations

import psycopg
import pytest

SCHEMA = "viewdef_cases"
TABLES = [
    "CREATE TABLE t (a int, b numeric, c text, d varchar(10), e float8, ts timestamp, f bigint, g bool, h date)",
    "CREATE TABLE u (id int, a int, name text)",
]

VIEWS = [
    'SELECT a, sum(b) FROM t GROUP BY a',
    'SELECT a, b FROM t',
    'SELECT * FROM t',
    'SELECT a AS x, c FROM t WHERE a > 1',
    'SELECT a FROM t WHERE b > 1',
    "SELECT a FROM t WHERE c = 'x' AND a < 3 OR g",
    'SELECT a + 1 AS p, a * 2 + 1, (a + 1) * 2 AS q FROM t',
    "SELECT 'abc' AS s, 1 AS one, 1.5 AS f, -1 AS m",
    'SELECT count(*) AS n, count(DISTINCT a) FROM t',
    'SELECT t.a, u.name FROM t JOIN u ON t.a = u.id',
    'SELECT t.a, u.name FROM t LEFT JOIN u ON t.a = u.id WHERE u.name IS NULL',
    'SELECT x.a FROM t x, u y WHERE x.a = y.id',
    'SELECT a FROM t ORDER BY a DESC LIMIT 10',
    'SELECT a FROM t ORDER BY 1 LIMIT 5 OFFSET 2',
    "SELECT CASE WHEN a > 0 THEN 'pos' ELSE 'neg' END AS sign FROM t",
    "SELECT CASE WHEN a > 0 THEN 'pos' END FROM t",
    'SELECT coalesce(a, 0) AS z, upper(c) FROM t',
    "SELECT date_trunc('day', ts) AS day, count(*) FROM t GROUP BY 1",
    'SELECT a::numeric, b::int AS bi, c::varchar(5) FROM t',
    'SELECT a FROM t WHERE a IN (1, 2, 3)',
    'SELECT a FROM t WHERE a BETWEEN 1 AND 5',
    "SELECT a FROM t WHERE c LIKE 'a%' AND d = 'x'",
    'SELECT a, (SELECT max(id) FROM u) AS m FROM t',
    'SELECT s.a FROM (SELECT a, sum(b) AS total FROM t GROUP BY a) s WHERE s.total > 10',
    'SELECT DISTINCT a FROM t',
    'SELECT a, sum(b) FROM t GROUP BY a HAVING sum(b) > 1',
    'SELECT a, e * 2 FROM t WHERE e > 1',
    'SELECT f + a FROM t WHERE f > a',
    'SELECT now() AS n, current_date AS d',
    'SELECT NOT g FROM t',
    'SELECT a FROM t WHERE NOT (a > 1 AND b < 2)',
    "SELECT c || 'x' AS cc, c || d FROM t",
    'SELECT a, row_number() OVER (PARTITION BY c ORDER BY b) AS rn FROM t',
    'SELECT sum(b) FILTER (WHERE a > 1) FROM t',
    "SELECT h + 1 AS tomorrow FROM t WHERE ts > '2020-01-01'",
    'SELECT length(c), lower(d) FROM t',
    'SELECT t.a, u.name FROM t JOIN u USING (a)',
    'SELECT t.a FROM t JOIN u ON t.a = u.id JOIN u u2 ON u2.id = t.a',
    'SELECT t.a FROM t FULL JOIN u ON t.a = u.id',
    "SELECT t.a FROM t RIGHT JOIN u ON t.a = u.id AND u.name <> 'x'",
    'SELECT t.a FROM t CROSS JOIN u',
    'SELECT a FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.id = t.a)',
    'SELECT a FROM t WHERE a IN (SELECT id FROM u)',
    "SELECT CASE a WHEN 1 THEN 'one' WHEN 2 THEN 'two' ELSE 'many' END AS w FROM t",
    'SELECT DISTINCT ON (a) a, b FROM t ORDER BY a, b DESC',
    'SELECT a FROM t UNION SELECT id FROM u',
    'SELECT a, sum(b) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM t',
    "SELECT ts + interval '1 day' AS nxt FROM t",
    "SELECT extract(year from ts) AS y, date_part('month', ts) AS m FROM t",
    "SELECT a::text, 1::numeric AS n, 2.5::float8 AS f, '1'::int AS i FROM t",
    'SELECT ARRAY[1, 2] AS arr',
    'SELECT a AS "A", b AS "select" FROM t',
    'SELECT v.a FROM (SELECT a FROM t) v',
    'SELECT a, b FROM t WHERE a > 1 ORDER BY b NULLS FIRST',
    'SELECT a FROM t WHERE c IS NOT NULL AND g IS TRUE',
    'SELECT a % 3 AS m, -a AS neg, abs(a) FROM t',
    'SELECT avg(b) AS avgb, min(c), max(ts) FROM t',
    "SELECT a FROM t WHERE c NOT LIKE 'x%' AND a NOT IN (1, 2)",
    "SELECT a FROM t WHERE c ILIKE 'x%'",
    "SELECT substring(c, 1, 2) AS s, trim(c) AS tr, replace(c, 'a', 'b') FROM t",
    "SELECT to_char(ts, 'YYYY') AS y FROM t",
    'SELECT greatest(a, 1), least(b, 2), nullif(a, 0) FROM t',
    "SELECT a FROM t WHERE ts > now() - interval '1 hour'",
    'SELECT a, count(*) FROM t GROUP BY a ORDER BY count(*) DESC LIMIT 3',
    'SELECT e / 2 AS h, a / 2.0 AS q FROM t',
    'SELECT c FROM t WHERE d = c',
    "SELECT a FROM t WHERE h = '2020-01-01'",
    'SELECT a FROM t WHERE b = 1.5',
    'SELECT a FROM t WHERE f = 1',
    "SELECT string_agg(c, ',') AS s, array_agg(a) AS aa FROM t",
    'SELECT a, rank() OVER w AS r FROM t WINDOW w AS (ORDER BY a)',
    'SELECT t.* FROM t',
    'SELECT a FROM t LIMIT ALL',
    'SELECT a FROM t WHERE (a > 1 OR a < 0) AND g',
    "SELECT coalesce(c, 'none') AS c2 FROM t",
    'SELECT a FROM t WHERE a = ANY (ARRAY[1,2])',
    "SELECT date_trunc('hour', ts) AS hr, count(*) AS n FROM t GROUP BY date_trunc('hour', ts)",
    'SELECT (a + 1) * (a - 1) AS p, a * (b + 1) FROM t',
    'SELECT a FROM t WHERE g',
    'SELECT true AS yes, NULL AS nothing',
    'SELECT round(b, 2) AS r2, round(e) AS r0 FROM t',
    'SELECT a - (b - 1) AS x1, a - b - 1 AS x2, a / 2 * 3 AS x3 FROM t',
    'SELECT t.a, u.name, x.c FROM t JOIN u ON t.a = u.id LEFT JOIN t x ON x.a = u.a WHERE x.c IS NULL',
    'SELECT a, count(*) FILTER (WHERE g) AS gc, avg(e) AS ae FROM t GROUP BY a HAVING count(*) > 1 ORDER BY a',
    'SELECT a, lag(a) OVER (ORDER BY ts) AS prev, sum(b) OVER (PARTITION BY c) AS tot FROM t',
    'SELECT a FROM t WHERE a > (SELECT avg(id) FROM u)',
    'SELECT coalesce(d, c) AS dc FROM t',
    'SELECT a FROM t INTERSECT SELECT id FROM u',
    'SELECT a FROM t EXCEPT ALL SELECT id FROM u ORDER BY 1',
    'SELECT a FROM t UNION ALL SELECT id FROM u UNION ALL SELECT a FROM u',
    'SELECT upper(c) || lower(d) AS ul, length(c) + 1 AS l1 FROM t',
    'SELECT e::numeric(10,2) AS e2, b::float8 AS b8, a::bigint AS a8 FROM t',
    'SELECT ts::date AS day, h::timestamp AS midnight FROM t',
    'SELECT a FROM t WHERE h >= current_date - 7',
    'SELECT CASE WHEN a IS NULL THEN 0 WHEN a < 0 THEN -1 ELSE a END AS norm FROM t',
    "SELECT a FROM t WHERE c IN ('x', 'y')",
    'SELECT a FROM t WHERE NOT g OR g IS NULL',
    'SELECT a, b * 1.1 AS b11, e * 1.1 AS e11 FROM t',
    "SELECT count(*) AS n FROM t, u WHERE t.a = u.id AND u.name LIKE 'a%'",
    'SELECT x.total FROM (SELECT a, sum(b) AS total FROM t GROUP BY a) x JOIN u ON u.id = x.a',
    'SELECT a FROM t WHERE a = 1 OR a = 2 AND b = 3',
    'SELECT min(h) AS first_day, max(h) - min(h) AS span FROM t',
    'SELECT extract(epoch FROM ts) AS ep FROM t',
    'SELECT a % 2 = 0 AS even FROM t',
    'WITH x AS (SELECT a FROM t) SELECT a FROM x',
    'SELECT a FROM t WHERE a IS DISTINCT FROM 1',
    "SELECT a FROM t WHERE c ~ '^a'",
    'SELECT g.n FROM generate_series(1, 3) g(n)',
    'SELECT a, b FROM t WHERE NOT EXISTS (SELECT 1 FROM u WHERE u.id = t.a)',
    'SELECT c::int AS ci FROM t',
    "SELECT a::text || '-' || c AS tag FROM t",
    "SELECT count(*) AS n FROM t WHERE ts >= date_trunc('day', now())",
    'SELECT a FROM t WHERE a > ALL (SELECT id FROM u)',
    'SELECT sum(a) AS s, sum(f) AS sf, sum(e) AS se, avg(a) AS aa FROM t',
    'SELECT a, first_value(c) OVER (PARTITION BY a ORDER BY ts) AS fv FROM t',
    'SELECT a, ntile(4) OVER (ORDER BY b) AS q FROM t',
    'SELECT a FROM t GROUP BY a, c',
    'SELECT a, c FROM t ORDER BY a DESC NULLS LAST, c',
    'SELECT 1 + 2 * 3 AS x',
    'SELECT a FROM (SELECT a FROM t UNION SELECT id FROM u) s',
    'SELECT a FROM t WHERE b IN (1.5, 2)',
    'SELECT a FROM t WHERE e IN (1, 2.5)',
    "SELECT lower(c) AS lc FROM t WHERE lower(c) = 'x'",
    "SELECT date_part('year', h) AS y FROM t",
    'SELECT h - 1 AS yesterday, h - h AS days FROM t',
    "SELECT ts - interval '1 day' AS before FROM t",
    'SELECT now() - ts AS age FROM t',
    "SELECT a FROM t WHERE ts BETWEEN '2020-01-01' AND '2021-01-01'",
    'SELECT t.a, count(u.id) AS n FROM t LEFT JOIN u ON u.a = t.a GROUP BY t.a',
    'SELECT abs(e) AS ae, sqrt(e) AS se, floor(b) AS fb, ceil(e) AS ce FROM t',
    'SELECT concat(c, d) AS cd, left(c, 2) AS l2 FROM t',
    'SELECT md5(c) AS h FROM t',
    'SELECT a FROM t WHERE g = true',
    'SELECT a FROM t WHERE g IS NOT FALSE',
    "SELECT max(a) FILTER (WHERE c LIKE 'x%') AS m FROM t",
    'SELECT count(DISTINCT c) AS dc FROM t GROUP BY a',
    'SELECT * FROM u WHERE id > 5 ORDER BY name',
    'SELECT u.* FROM u JOIN t ON t.a = u.id',
    'SELECT e::int AS ei, b::float4 AS bf FROM t',
    'SELECT CAST(a AS numeric(10,2)) AS an FROM t',
    "SELECT a FROM t WHERE c = ANY (ARRAY['x', 'y'])",
    'SELECT array_length(ARRAY[a, 2], 1) AS al FROM t',
    'SELECT a FROM t WHERE a BETWEEN SYMMETRIC 5 AND 1',
    'SELECT count(*) FROM t HAVING count(*) > 0',
    'SELECT a, rank() OVER (ORDER BY b DESC) AS r FROM t',
    'SELECT a, sum(b) OVER (PARTITION BY a ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS s FROM t',
    'SELECT a, sum(b) OVER (ORDER BY a ROWS BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW) AS s FROM t',
    'SELECT DISTINCT c, d FROM t',
    'SELECT a AS "Mixed Case", c AS "x y" FROM t',
    "SELECT a FROM t WHERE c <> '' AND d IS NULL",
    'SELECT a FROM t WHERE (a + 1) > 2',
    'SELECT a FROM t WHERE -a < 0',
    'SELECT a FROM t LIMIT 5 OFFSET 0',
    'SELECT a FROM t FETCH FIRST 3 ROWS ONLY',
    'SELECT -1.5 AS n, -2 AS m, 3e2 AS e, 10000000000 AS big',
    "SELECT 'it''s' AS q",
    'WITH x AS (SELECT a, sum(b) AS s FROM t GROUP BY a), y AS (SELECT id FROM u) SELECT x.a, x.s FROM x JOIN y ON y.id = x.a',
    "SELECT a FROM t WHERE a IS NOT DISTINCT FROM 2 OR c !~ 'z'",
    "SELECT ts AT TIME ZONE 'UTC' AS z FROM t",
    'SELECT sum(CASE WHEN g THEN 1 ELSE 0 END) AS gs FROM t',
    'SELECT a FROM t GROUP BY ROLLUP (a)',
    "SELECT count(*) AS n, date_trunc('minute', ts) AS m FROM t GROUP BY date_trunc('minute', ts)",
    'SELECT a, c COLLATE "C" AS cc FROM t',
    'SELECT a FROM t WHERE h > current_date',
    'SELECT current_timestamp AS now1, localtimestamp AS lt',
    "SELECT a, b FROM t WHERE a = 1 AND (b > 2 OR c = 'x') AND NOT g",
    'SELECT a FROM t WHERE e > 0.5 AND b > 0.5',
    "SELECT nullif(c, '') AS nc FROM t",
    'SELECT greatest(e, 1.5) AS g2 FROM t',
    'SELECT coalesce(b, 0) + 1 AS bp FROM t',
    "SELECT a FROM t WHERE c IS NULL OR c = ''",
    'SELECT (ARRAY[a, 2])[1] AS first FROM t',
    "SELECT a FROM t WHERE c LIKE 'a!%' ESCAPE '!'",
    "SELECT a FROM t WHERE c NOT LIKE 'a!%' ESCAPE '!' AND g",
    "SELECT a FROM t WHERE c SIMILAR TO 'a%'",
    "SELECT a FROM t WHERE c NOT SIMILAR TO 'a%' OR g",
    'SELECT v.x FROM (VALUES (1), (2)) v(x)',
    "SELECT v.x, v.y FROM (VALUES (1, 'a'), (2, 'b')) v(x, y)",
    "SELECT a FROM t WHERE d IN ('x', 'y')",
    "SELECT a FROM t WHERE d NOT IN ('x', 'y')",
    "SELECT a FROM t WHERE c NOT IN ('x', 'y')",
    "SELECT c, string_agg(d, ';' ORDER BY d) AS ds FROM t GROUP BY c",
    "SELECT string_agg(c, ',' ORDER BY a DESC) AS s FROM t",
    'SELECT array_agg(a ORDER BY b) AS aa FROM t',
    "SELECT a, c FROM t WHERE a IN (SELECT id FROM u WHERE name = 'x')",
    # ordered-set and hypothetical-set aggregates (PipelineDB's views use them; pipelinedb.views prints them)
    'SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY a) AS p FROM t',
    'SELECT c, percentile_cont(0.9) WITHIN GROUP (ORDER BY e DESC) FROM t GROUP BY c',
    'SELECT percentile_cont(ARRAY[0.1, 0.9]) WITHIN GROUP (ORDER BY b) FROM t',
    'SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY c) AS m FROM t',
    'SELECT mode() WITHIN GROUP (ORDER BY d) FROM t',
    'SELECT rank(3) WITHIN GROUP (ORDER BY a), cume_dist(2.5) WITHIN GROUP (ORDER BY e NULLS FIRST) FROM t',
    'SELECT array_agg(a ORDER BY b DESC NULLS LAST) AS aa FROM t',
]


def _prepare(conn: psycopg.Connection) -> None:
    conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    conn.execute(f"CREATE SCHEMA {SCHEMA}")
    conn.execute(f"SET search_path = {SCHEMA}")
    for stmt in TABLES:
        conn.execute(stmt)
    for i, view in enumerate(VIEWS):
        conn.execute(f"CREATE VIEW v{i} AS {view}")


@pytest.fixture(scope="module")
def conns(pg15, ss_server):
    pg = psycopg.connect(pg15.dsn, autocommit=True)
    ss = psycopg.connect(ss_server.dsn, autocommit=True)
    try:
        for conn in (pg, ss):
            _prepare(conn)
        yield pg, ss
    finally:
        for conn in (pg, ss):
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
            conn.close()


def _definitions(conn: psycopg.Connection, i: int) -> tuple[str, str]:
    row = conn.execute(f"SELECT pg_get_viewdef('v{i}'::regclass, true), pg_get_viewdef('v{i}'::regclass)").fetchone()
    assert row is not None
    return row[0], row[1]


@pytest.mark.parametrize("i", range(len(VIEWS)), ids=[f"v{i}" for i in range(len(VIEWS))])
def test_viewdef_as_postgres(conns, i):
    pg, ss = conns
    theirs, ours = _definitions(pg, i), _definitions(ss, i)
    assert ours[0] == theirs[0], f"pretty: {VIEWS[i]}"
    assert ours[1] == theirs[1], f"plain: {VIEWS[i]}"


def test_pg_views_definition(conns):
    """pg_views.definition is the plain form; the view's column names come from the view."""
    pg, ss = conns
    query = f"SELECT viewname, definition FROM pg_views WHERE schemaname = '{SCHEMA}' ORDER BY viewname"
    assert ss.execute(query).fetchall() == pg.execute(query).fetchall()


def test_viewdef_by_name_and_of_a_table(conns):
    """pg_get_viewdef('name'); a table has no view definition (NULL here: PostgreSQL
    prints 'Not a view', a corner no client relies on, so it is not compared)."""
    pg, ss = conns
    query = "SELECT pg_get_viewdef('v0')"
    assert ss.execute(query).fetchone() == pg.execute(query).fetchone()


def test_unreproduced_construct_prints_the_stored_query(conns):
    """A construct the printer does not reproduce (GROUPING SETS) still has a
    definition: the stored query, which recreates the same view."""
    _, ss = conns
    ss.execute("CREATE VIEW gs AS SELECT a, c, count(*) AS n FROM t GROUP BY GROUPING SETS ((a), (c))")
    try:
        text = ss.execute("SELECT pg_get_viewdef('gs'::regclass, true)").fetchone()[0]
        assert "GROUPING SETS" in text.upper()
        ss.execute(f"CREATE VIEW gs2 AS {text.rstrip(';')}")
        cols = "SELECT attname, atttypid FROM pg_attribute WHERE attrelid = '{}'::regclass ORDER BY attnum"
        assert ss.execute(cols.format("gs2")).fetchall() == ss.execute(cols.format("gs")).fetchall()
    finally:
        ss.execute("DROP VIEW IF EXISTS gs2")
        ss.execute("DROP VIEW IF EXISTS gs")


def test_zoned_and_json_constants(conns):
    """timestamptz constants print in the session's TimeZone; time, bytea and
    jsonb operators as PostgreSQL prints them."""
    results = []
    for conn in conns:
        conn.execute("SET timezone = 'Europe/Berlin'")
        try:
            conn.execute("CREATE TABLE tz (x timestamptz, y time, z bytea, j jsonb)")
            conn.execute("CREATE VIEW tzv AS SELECT x, j -> 'b' -> 0 AS jb, j ->> 'a' FROM tz "
                         "WHERE x > '2020-01-01 10:00' AND y > '10:00' AND z = '\\x01' AND j ->> 'a' = 'b'")
            results.append(conn.execute("SELECT pg_get_viewdef('tzv'::regclass, true), "
                                        "pg_get_viewdef('tzv'::regclass)").fetchone())
        finally:
            conn.execute("DROP TABLE IF EXISTS tz CASCADE")
            conn.execute("RESET timezone")
    assert results[1] == results[0]
    assert "'2020-01-01 10:00:00+01'::timestamp with time zone" in results[0][0]
