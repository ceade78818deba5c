"""Answers and errors that differed from PostgreSQL 15, each compared with
it word for word: COLLATE on a type without collations (accepted and
ignored before), collations splitstream does not implement (refused, with a
hint of those it does), explicit collations that disagree (42P21), COLLATE
in CREATE TABLE, ALTER COLUMN TYPE and
CREATE INDEX; ``ORDER BY x USING <`` / ``USING >`` (a syntax error
before), other operators refused as PostgreSQL refuses them;
``count([DISTINCT] (a, b))`` over row values (refused before); unnest of
pg_stats' anyarray columns (42883 before, 42804 in PostgreSQL)."""
from __future__ import annotations

import pytest

from tests.support.fidelity import mismatches, table_on_both, words

ROWS = """(1, 'b', 'B', '{x,y}'), (2, 'a', 'a', NULL), (3, NULL, 'é', '{}'), (4, 'B', 'c', '{z}')"""

COLLATE = [
    # accepted: every collation splitstream has sorts by code point
    "SELECT t COLLATE \"C\" FROM {t} ORDER BY 1",
    "SELECT t FROM {t} ORDER BY t COLLATE \"C\" DESC NULLS LAST",
    "SELECT t FROM {t} ORDER BY t COLLATE \"POSIX\", i",
    "SELECT t FROM {t} ORDER BY t COLLATE \"default\", i",
    "SELECT t FROM {t} ORDER BY t COLLATE pg_catalog.\"C\", i",
    "SELECT min(t COLLATE \"C\"), max(u COLLATE \"C\") FROM {t}",
    "SELECT t COLLATE \"C\" < u, u COLLATE \"POSIX\" = 'a' FROM {t} ORDER BY i",
    "SELECT i FROM {t} WHERE t COLLATE \"C\" > 'B' ORDER BY i",
    "SELECT a COLLATE \"C\", 'x' COLLATE \"C\", NULL COLLATE \"C\", 'y'::varchar(3) COLLATE \"C\", 'z'::name COLLATE \"C\" "
    "FROM {t} ORDER BY i",
    "SELECT upper(t) COLLATE \"C\" FROM {t} ORDER BY i",
    # a type without collations: PostgreSQL's 42804
    "SELECT i COLLATE \"C\" FROM {t}",
    "SELECT 1 COLLATE \"C\"",
    "SELECT now() COLLATE \"C\"",
    "SELECT 1.5 COLLATE \"POSIX\"",
    "SELECT ARRAY[1] COLLATE \"C\"",
    "SELECT i FROM {t} ORDER BY i COLLATE \"C\"",
    "SELECT (i + 1) COLLATE \"default\" FROM {t}",
    "SELECT true COLLATE \"C\"",
    # explicit collations of one expression must agree (42P21), even ones that compare alike
    "SELECT t COLLATE \"C\" < u COLLATE \"POSIX\" FROM {t}",
    "SELECT t COLLATE \"C\" || u COLLATE \"POSIX\" FROM {t}",
    "SELECT t COLLATE \"default\" = u COLLATE \"C\" FROM {t}",
    "SELECT upper(t COLLATE \"C\") < u COLLATE \"POSIX\" FROM {t}",
    "SELECT coalesce(t COLLATE \"C\", u COLLATE \"POSIX\") FROM {t}",
    "SELECT t COLLATE \"C\" IN (u COLLATE \"POSIX\") FROM {t}",
    "SELECT length(t COLLATE \"C\") = length(u COLLATE \"POSIX\") FROM {t} ORDER BY i",
    "SELECT (t COLLATE \"C\") COLLATE \"POSIX\" < u COLLATE \"POSIX\" FROM {t} ORDER BY i",
    "SELECT CASE WHEN t COLLATE \"C\" = 'b' THEN u COLLATE \"POSIX\" END FROM {t} ORDER BY i",
    "SELECT (SELECT max(t COLLATE \"C\") FROM {t}) < 'b' COLLATE \"POSIX\"",
    "SELECT t COLLATE \"C\" < u COLLATE \"C\" FROM {t} ORDER BY i",
    # DDL
    "CREATE TABLE {t}_c (a text COLLATE \"C\", b varchar(5) COLLATE \"POSIX\", c int)",
    "INSERT INTO {t}_c VALUES ('b', 'x', 1), ('a', 'y', 2)",
    "SELECT a FROM {t}_c ORDER BY a",
    "CREATE INDEX {t}_ci ON {t}_c (a COLLATE \"C\")",
    "CREATE INDEX {t}_cj ON {t}_c (c COLLATE \"C\")",
    "ALTER TABLE {t}_c ALTER COLUMN c TYPE bigint",
    "ALTER TABLE {t}_c ALTER COLUMN c TYPE text COLLATE \"C\"",
    "ALTER TABLE {t}_c ALTER COLUMN b TYPE int COLLATE \"C\"",
    "CREATE TABLE {t}_d (a int COLLATE \"C\")",
    "CREATE TABLE {t}_d (a int[] COLLATE \"C\")",
    "DROP TABLE {t}_c",
]

#: collations splitstream does not implement: PostgreSQL's 42704 and words
#: for a name it does not have (splitstream adds a hint naming its own)
UNKNOWN = [
    "SELECT t COLLATE \"en_US\" FROM {t}",
    "SELECT t COLLATE C FROM {t}",
    "SELECT t FROM {t} ORDER BY t COLLATE \"xx\"",
    "SELECT t COLLATE public.\"C\" FROM {t}",
    "CREATE TABLE {t}_e (a text COLLATE \"nope\")",
    "CREATE TABLE {t}_e (a int COLLATE \"nope\")",
]


ORDER_USING = [
    "SELECT i, t FROM {t} ORDER BY t USING <",
    "SELECT i, t FROM {t} ORDER BY t USING >",
    "SELECT i, t FROM {t} ORDER BY t USING > NULLS LAST",
    "SELECT i, t FROM {t} ORDER BY t USING < NULLS FIRST, i USING >",
    "SELECT i, t FROM {t} ORDER BY t USING>, i",
    "SELECT i FROM {t} ORDER BY i USING OPERATOR(pg_catalog.>)",
    "SELECT array_agg(i ORDER BY t USING >), string_agg(t, ',' ORDER BY i USING >) FROM {t}",
    "SELECT i, row_number() OVER (ORDER BY t USING > NULLS LAST) FROM {t} ORDER BY i",
    "SELECT t FROM {t} UNION SELECT u FROM {t} ORDER BY 1 USING >",
    "SELECT i FROM {t} ORDER BY i USING =",
    "SELECT i FROM {t} ORDER BY i USING <=",
    "SELECT i FROM {t} ORDER BY i USING >=",
    "SELECT i FROM {t} ORDER BY i USING <>",
    "SELECT i FROM {t} ORDER BY t USING",
]


ROW_COUNTS = [
    "SELECT count(DISTINCT (t, u)), count((t, u)), count(DISTINCT ROW(t, u)), count(ROW(i, t)) FROM {t}",
    "SELECT count(DISTINCT (t, a)) FROM {t}",
    "SELECT count(DISTINCT (x, y)), count((x, y)) FROM (VALUES (1, 2), (1, 2), (NULL, NULL), (1, NULL), (NULL, NULL),"
    " (2, 3)) v(x, y)",
    "SELECT count(DISTINCT (x, y)) FILTER (WHERE x IS NOT NULL) FROM (VALUES (1, 2), (1, 2), (NULL, NULL), (1, NULL)) v(x, y)",
    "SELECT g, count(DISTINCT (x, y)), count(*) FROM (VALUES (1, 2, 'x'), (1, 2, 'x'), (1, 3, 'x'), (2, NULL, NULL),"
    " (2, NULL, NULL)) v(g, x, y) GROUP BY g ORDER BY g",
    "SELECT count(DISTINCT (x, y)) FROM (VALUES ('NaN'::float8, '1 day'::interval), ('NaN', '24 hours'), (0.0, '1 day'),"
    " (-0.0, '1 day')) v(x, y)",
    "SELECT count(DISTINCT (x, y)) FROM (VALUES (1, 2)) v(x, y) WHERE false",
]


ANYARRAY = [
    "ANALYZE {t}",
    "SELECT unnest(histogram_bounds) FROM pg_stats WHERE tablename = '{t}' AND attname = 'i'",
    "SELECT x FROM pg_stats, unnest(most_common_vals) x WHERE tablename = '{t}'",
    "SELECT * FROM unnest((SELECT histogram_bounds FROM pg_stats WHERE tablename = '{t}' AND attname = 'i'))",
    "SELECT * FROM unnest((SELECT histogram_bounds FROM pg_stats WHERE tablename = '{t}' AND attname = 'i'), ARRAY[1])",
    "SELECT histogram_bounds::text FROM pg_stats WHERE tablename = '{t}' AND attname = 'i'",
]


@pytest.fixture
def table(ss_conn, pg_conn, unique_name):
    with table_on_both((ss_conn, pg_conn), unique_name("fg"), "i int, t text, u text, a text[]", ROWS) as name:
        yield name


def test_collate_as_postgresql(table, ss_conn, pg_conn):
    wrong = mismatches(ss_conn, pg_conn, [s.format(t=table) for s in COLLATE])
    assert not wrong, "\n".join(wrong)


def test_unknown_collation_refused_as_postgresql(table, ss_conn, pg_conn):
    def error(conn, sql):
        out = words(conn, sql)
        return out[:3]

    wrong = mismatches(ss_conn, pg_conn, [s.format(t=table) for s in UNKNOWN], error)
    assert not wrong, "\n".join(wrong)
    assert words(ss_conn, UNKNOWN[0].format(t=table))[3] == \
        'splitstream compares text by code point only: the collations are "C", "POSIX" and "default".'


def test_order_by_using_as_postgresql(table, ss_conn, pg_conn):
    wrong = mismatches(ss_conn, pg_conn, [s.format(t=table) for s in ORDER_USING])
    assert not wrong, "\n".join(wrong)


def test_order_by_using_another_operator_is_refused(table, ss_conn):
    """PostgreSQL orders by any btree family's operator (text_pattern_ops'
    ~<~); splitstream has only the default ones, and says so."""
    assert words(ss_conn, f"SELECT t FROM {table} ORDER BY t USING ~<~")[:3] == \
        ("error", "0A000", "ORDER BY ... USING ~<~ is not supported")


def test_count_of_row_values_as_postgresql(table, ss_conn, pg_conn):
    wrong = mismatches(ss_conn, pg_conn, [s.format(t=table) for s in ROW_COUNTS])
    assert not wrong, "\n".join(wrong)


def test_unnest_of_anyarray_as_postgresql(table, ss_conn, pg_conn):
    wrong = mismatches(ss_conn, pg_conn, [s.format(t=table) for s in ANYARRAY])
    assert not wrong, "\n".join(wrong)
