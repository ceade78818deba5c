"""RowDescription's table OID and column attribute number, against
PostgreSQL 15: a result column taken as it is from a table or view column
names that column (pgjdbc's getTableName/getColumnName/isAutoIncrement look
it up in pg_attribute), anything computed names none.

The cases are generated: every select item shape (bare, parenthesised,
aliased, cast to its own or another type, COLLATE, a function, an aggregate,
a constant) over every column of every FROM shape (table, alias, view,
subquery, CTE, joins of each kind with USING and ON, a set operation),
plain, grouped, DISTINCT and ordered; and RETURNING of INSERT, UPDATE,
DELETE and of a data-modifying WITH.  Table OIDs differ between the
servers, so each side's OID is compared as the relation name it has.
"""
from __future__ import annotations

import psycopg
import pytest

from tests.support.fidelity import mismatches

#: FROM shapes: (WITH prefix, FROM text, the columns it offers)
SOURCES = [
    ("", "{t}", ["a", "b", "c"]),
    ("", "{t} x", ["x.a", "x.c"]),
    ("", "{v}", ["a", "bx", "c"]),
    ("", "(SELECT a, b, a + 1 AS a1 FROM {t}) s", ["a", "s.b", "a1"]),
    ("", "(SELECT * FROM {v}) s(p, q)", ["p", "q"]),
    ("WITH w AS (SELECT a, c, b || '' AS bb FROM {t}) ", "w", ["a", "c", "bb"]),
    ("WITH w(k) AS (SELECT c FROM {v}) ", "w", ["k"]),
    ("", "{t} JOIN {u} USING (a)", ["a", "b", "d", "e"]),
    ("", "{t} LEFT JOIN {u} USING (a)", ["a", "d"]),
    ("", "{t} RIGHT JOIN {u} USING (a)", ["a", "b"]),
    ("", "{t} FULL JOIN {u} USING (a)", ["a", "b", "e"]),
    ("", "{t} JOIN {u} USING (a, b)", ["a", "b", "e"]),
    ("", "{t} JOIN {u} ON {t}.a = {u}.a", ["{t}.a", "{u}.a", "d"]),
    ("", "{t} CROSS JOIN {v} vv", ["{t}.b", "vv.bx"]),
    ("", "(SELECT a FROM {t} UNION SELECT a FROM {u}) s", ["a"]),
    ("", "{t} WHERE a IN (SELECT a FROM {u})", ["a", "b"]),
]

#: select item shapes over one column
ITEMS = ["{c}", "({c})", "{c} AS z", "{c}::text", "CAST({c} AS varchar)", "{c}::varchar(10)", "{c} COLLATE \"C\"",
         "coalesce({c})", "max({c})", "{c} || ''"]


def _queries() -> list[str]:
    out = []
    for with_, from_, cols in SOURCES:
        for col in cols:
            for item in ITEMS:
                out.append(f"{with_}SELECT {item.format(c=col)} FROM {from_}")
            out.append(f"{with_}SELECT {col}, count(*) FROM {from_} GROUP BY {col}")
            out.append(f"{with_}SELECT DISTINCT {col} FROM {from_}")
            out.append(f"{with_}SELECT {col} FROM {from_} ORDER BY 1 LIMIT 1")
        out.append(f"{with_}SELECT * FROM {from_}")
        out.append(f"{with_}SELECT 1 FROM {from_}")
    for item in ITEMS[:-2] + ["b || ''", "b, *", "1"]:
        i = item.format(c="b")
        out += [f"INSERT INTO {{t}} VALUES (9, 'n', 'm') RETURNING {i}",
                f"UPDATE {{t}} SET c = c WHERE a = 9 RETURNING {i}",
                f"DELETE FROM {{t}} WHERE a = 9 RETURNING {i}",
                f"WITH w AS (INSERT INTO {{t}} VALUES (8, 'n', 'm') RETURNING {i}) SELECT * FROM w"]
    out.append("SELECT * FROM (VALUES (1)) v(x), generate_series(1, 2) g")
    return out


def _origins(conn: psycopg.Connection, sql: str):
    """The name, relation name (for its table OID) and attribute number of
    every result column, or the SQLSTATE of the error."""
    try:
        cur = conn.execute(sql)     # type: ignore[arg-type]
    except psycopg.Error as e:
        return ("error", e.sqlstate)
    res = cur.pgresult
    assert res is not None
    out = []
    for i in range(res.nfields):
        oid = res.ftable(i)
        rel = conn.execute("SELECT relname FROM pg_class WHERE oid = %s", (oid,)).fetchone() if oid else None
        out.append((res.fname(i), rel[0] if rel else oid, res.ftablecol(i)))
    return out


@pytest.fixture
def names(ss_conn, pg_conn, unique_name):
    n = {"t": unique_name("t"), "u": unique_name("u"), "v": unique_name("v")}
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE TABLE {n['t']} (a int, b text, c varchar(10))")
        conn.execute(f"CREATE TABLE {n['u']} (d text, a int, b text, e bigint)")
        conn.execute(f"CREATE VIEW {n['v']} AS SELECT a, b || 'x' AS bx, c FROM {n['t']}")
        conn.execute(f"INSERT INTO {n['t']} VALUES (1, 'p', 'q'), (2, 'r', NULL)")
        conn.execute(f"INSERT INTO {n['u']} VALUES ('s', 1, 'p', 5)")
    yield n
    for conn in (ss_conn, pg_conn):
        conn.execute(f"DROP VIEW {n['v']}")
        conn.execute(f"DROP TABLE {n['t']}, {n['u']}")


def test_generated_cases_cover_every_shape():
    qs = _queries()
    assert len(qs) == len(set(qs)) > 500
    assert sum("RETURNING" in q for q in qs) == 44


def test_column_origins_match_postgresql(ss_conn, pg_conn, names):
    statements = [q.format(**names) for q in _queries()]
    bad = mismatches(ss_conn, pg_conn, statements, outcome=_origins)
    assert not bad, f"{len(bad)} of {len(statements)} differ:\n" + "\n".join(bad[:30])


def test_prepared_statement_describes_origins(ss_conn, pg_conn, names):
    """Describe of a prepared statement (before any Execute) names them too."""
    sql = f"SELECT a, b || '' AS bb, c FROM {names['v']} JOIN {names['t']} USING (a, c) WHERE a = $1"
    described = []
    for conn in (ss_conn, pg_conn):
        prepared = conn.pgconn.prepare(b"orig", sql.encode(), [23])
        assert prepared.error_message == b""
        res = conn.pgconn.describe_prepared(b"orig")
        described.append([(res.fname(i), res.ftablecol(i), bool(res.ftable(i))) for i in range(res.nfields)])
    assert described[0] == described[1] == [(b"a", 1, True), (b"bb", 0, False), (b"c", 3, True)]
