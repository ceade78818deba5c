"""A small differential test: the same SQL on splitstream and PostgreSQL 15."""

from __future__ import annotations


from tests.support.diff import assert_same, run_both


def statements(t: str, u: str) -> list[str]:
    return [
        # setup, identical on both servers
        f"CREATE TABLE {t} (id int PRIMARY KEY, grp text, v int, f float8, note text)",
        f"CREATE TABLE {u} (grp text, label text, w int)",
        f"""INSERT INTO {t} VALUES
            (1, 'a', 10, 1.5, 'x'), (2, 'a', 20, NULL, 'yy'), (3, 'b', NULL, 2.25, NULL),
            (4, 'b', 5, -3.5, 'zzz'), (5, 'c', 7, 0, 'Hello'), (6, NULL, 1, 10.125, 'w'),
            (7, 'a', -4, 2, ''), (8, 'c', 7, 7.75, 'tail')""",
        f"INSERT INTO {u} VALUES ('a', 'alpha', 1), ('b', 'beta', 2), ('d', 'delta', 4)",
        # arithmetic and casts
        "SELECT 1 + 2 * 3 AS a, 7 / 2 AS b, 7 % 3 AS c, -7 / 2 AS d, 2 ^ 10 AS e",
        "SELECT 7.0 / 2 AS a, 1.5::numeric(10,2) AS b, 10::float8 / 4 AS c",
        "SELECT '42'::int AS a, 3.7::int AS b, (-2.5)::int AS c, 'true'::boolean AS d, 17::text AS e",
        "SELECT CAST('2024-02-29' AS date) + 1 AS d, '12:34'::time AS t",
        "SELECT abs(-5) AS a, round(2.567, 2) AS b, floor(-1.5) AS c, ceil(1.2) AS d, greatest(1, 5, 3) AS g",
        # strings
        "SELECT upper('abc') AS u, lower('ABC') AS l, length('héllo') AS n, 'a' || 'b' || 1 AS c",
        "SELECT substring('hello world' FROM 1 FOR 5) AS s, replace('aXbX', 'X', '-') AS r, trim('  x  ') AS t",
        "SELECT position('lo' IN 'hello') AS p, left('abcdef', 2) AS l, right('abcdef', 2) AS r, lpad('7', 3, '0') AS z",
        f"SELECT id, upper(note) AS u, length(note) AS n, coalesce(note, '<null>') AS c FROM {t} ORDER BY id",
        f"SELECT id FROM {t} WHERE note LIKE '%l%' ORDER BY id",
        # NULL handling
        "SELECT NULL::int + 1 AS a, NULL = NULL AS b, NULL IS NULL AS c, coalesce(NULL, 2) AS d, nullif(3, 3) AS e",
        f"SELECT id, v IS NULL AS vn, f IS NOT NULL AS fnn FROM {t} ORDER BY id",
        f"SELECT count(*), sum(v), avg(v), min(f), max(f) FROM {t}",
        f"SELECT count(v) AS cv, count(*) AS n, sum(v) AS s, avg(f) AS af, min(note) AS mn, max(note) AS mx FROM {t}",
        f"SELECT id FROM {t} WHERE v > 5 OR v IS NULL ORDER BY id",
        # GROUP BY / HAVING / ORDER BY
        f"SELECT grp, count(*) AS n, sum(v) AS s, max(f) AS mf FROM {t} GROUP BY grp",
        f"SELECT grp, count(*) AS n FROM {t} GROUP BY grp HAVING count(*) > 1 ORDER BY grp",
        f"SELECT grp, sum(v) AS s FROM {t} GROUP BY grp ORDER BY s DESC NULLS LAST, grp",
        f"SELECT id, v FROM {t} ORDER BY v DESC, id LIMIT 3",
        f"SELECT id, v FROM {t} ORDER BY v NULLS FIRST, id OFFSET 2 LIMIT 3",
        f"SELECT DISTINCT grp FROM {t}",
        f"SELECT grp, count(*) AS n FROM {t} GROUP BY grp ORDER BY grp",
        f"SELECT v, count(*) AS n FROM {t} WHERE v IS NOT NULL GROUP BY v ORDER BY v",
        # joins
        f"SELECT t.id, u.label FROM {t} t JOIN {u} u ON t.grp = u.grp ORDER BY t.id",
        f"SELECT t.id, u.label FROM {t} t LEFT JOIN {u} u ON t.grp = u.grp ORDER BY t.id",
        f"SELECT t.id, u.label FROM {t} t RIGHT JOIN {u} u ON t.grp = u.grp ORDER BY t.id NULLS LAST, u.label",
        f"SELECT t.id, u.label FROM {t} t FULL JOIN {u} u ON t.grp = u.grp",
        f"SELECT u.label, count(t.id) AS n, sum(t.v * u.w) AS s FROM {u} u LEFT JOIN {t} t ON t.grp = u.grp GROUP BY u.label",
        f"SELECT count(*) AS n FROM {t} a CROSS JOIN {u} b",
        # subqueries
        f"SELECT id FROM {t} WHERE v > (SELECT avg(v) FROM {t}) ORDER BY id",
        f"SELECT id FROM {t} WHERE grp IN (SELECT grp FROM {u}) ORDER BY id",
        f"SELECT id FROM {t} WHERE grp NOT IN (SELECT grp FROM {u}) ORDER BY id",
        f"SELECT label FROM {u} u WHERE EXISTS (SELECT 1 FROM {t} t WHERE t.grp = u.grp) ORDER BY label",
        f"SELECT id, (SELECT label FROM {u} u WHERE u.grp = t.grp) AS lab FROM {t} t ORDER BY id",
        f"SELECT s.grp, s.n FROM (SELECT grp, count(*) AS n FROM {t} GROUP BY grp) s WHERE s.n >= 2",
        # CTEs
        f"WITH g AS (SELECT grp, sum(v) AS s FROM {t} GROUP BY grp) SELECT grp, s FROM g WHERE s > 0 ORDER BY grp",
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT sum(n) AS s FROM r",
        # window functions
        f"SELECT id, grp, row_number() OVER (PARTITION BY grp ORDER BY id) AS rn FROM {t} ORDER BY id",
        f"SELECT id, sum(v) OVER (ORDER BY id) AS running FROM {t} ORDER BY id",
        f"SELECT id, grp, sum(v) OVER (PARTITION BY grp) AS total, rank() OVER (ORDER BY v DESC) AS rk FROM {t} ORDER BY id",
        f"SELECT id, lag(v) OVER (ORDER BY id) AS prev, lead(v, 2) OVER (ORDER BY id) AS nxt FROM {t} ORDER BY id",
        # set operations and CASE
        f"SELECT grp FROM {t} UNION SELECT grp FROM {u}",
        f"SELECT grp FROM {t} INTERSECT SELECT grp FROM {u}",
        f"SELECT grp FROM {t} EXCEPT ALL SELECT grp FROM {u}",
        f"SELECT id, CASE WHEN v > 6 THEN 'big' WHEN v IS NULL THEN 'none' ELSE 'small' END AS c FROM {t} ORDER BY id",
        # DML results
        f"UPDATE {t} SET v = v + 1 WHERE grp = 'c'",
        f"DELETE FROM {t} WHERE id = 7",
        f"SELECT id, v FROM {t} ORDER BY id",
        # errors, compared by SQLSTATE
        "SELECT 1/0",
        "SELECT 1.0/0",
        "SELECT 'abc'::int",
        "SELECT 2147483647::int + 1",
        f"SELECT nosuchcol FROM {t}",
        "SELECT * FROM no_such_table_for_diff_basic",
        f"SELECT grp, v FROM {t} GROUP BY grp",
        f"INSERT INTO {t} VALUES (1, 'dup', 0, 0, '')",
        f"INSERT INTO {t} (id, v) VALUES (NULL, 1)",
        "SELECT nosuchfunction(1)",
        "SELEC 1",
    ]


def test_diff_basic(ss_conn, pg_conn, unique_name):
    t, u = unique_name("t"), unique_name("u")
    mismatches = []
    for ss, pg in run_both(ss_conn, pg_conn, statements(t, u)):
        try:
            assert_same(ss, pg)
        except AssertionError as exc:
            mismatches.append(str(exc))
    assert not mismatches, "\n\n".join(mismatches)


def test_diff_group_by_nullable_int(ss_conn, pg_conn, unique_name):
    t = unique_name("t")
    stmts = [
        f"CREATE TABLE {t} (v int)",
        f"INSERT INTO {t} VALUES (1), (NULL), (1), (2)",
        f"SELECT v, count(*) AS n FROM {t} GROUP BY v ORDER BY v",
    ]
    for ss, pg in run_both(ss_conn, pg_conn, stmts):
        assert_same(ss, pg)
