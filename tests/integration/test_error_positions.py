"""Typos, as users make them, against PostgreSQL 15: the same SQLSTATE, message
and cursor position (what psql draws as ``LINE 1: ... ^``).

The cases are generated: every identifier of a few everyday queries is
misspelt (unknown column, relation or function), every keyword loses its last
letter, and every query loses its closing parenthesis or gains a dangling
operator.  Also: several statements in one Query message run as one implicit
transaction, as in PostgreSQL.
"""
from __future__ import annotations

import itertools
import re

import psycopg
import pytest

from tests.support.fidelity import mismatches, simple_outcome, table_on_both

BASE = [
    "SELECT a, b FROM {t} WHERE a > 1 ORDER BY b",
    "SELECT count(*), max(b) FROM {t} GROUP BY a HAVING count(*) > 0",
    "SELECT upper(b), a + 1 FROM {t} x JOIN {t} y USING (a)",
    "SELECT x.a FROM {t} x WHERE x.b LIKE 'a%' AND (x.a IN (1, 2))",
    "INSERT INTO {t} (a, b) VALUES (1, 'one')",
    "UPDATE {t} SET b = lower(b) WHERE a = 2",
]

_WORD = re.compile(r"[A-Za-z_]+")
_KEYWORDS = {"SELECT", "FROM", "WHERE", "ORDER", "GROUP", "HAVING", "JOIN", "USING", "AND", "INSERT",
             "INTO", "VALUES", "UPDATE", "SET", "LIKE"}


def _cases() -> list[str]:
    out: list[str] = []
    for q in BASE:
        for m in _WORD.finditer(q):
            word = m.group(0)
            if word in ("t", "x", "y") or word.upper() in ("BY", "IN"):
                continue
            typo = word[:-1] if word.upper() in _KEYWORDS else word + "x"
            out.append(q[:m.start()] + typo + q[m.end():])
        if ")" in q:
            i = q.rindex(")")
            out.append(q[:i] + q[i + 1:])
        out.append(q + " +")
        out.append(q + " +;")
    return sorted(set(out))


def _error(conn: psycopg.Connection, sql: str) -> tuple | None:
    """A simple Query message, as psql sends it: its error, or None."""
    out = simple_outcome(conn, sql)
    return None if out[0] == "ok" else out


@pytest.fixture
def tables(ss_conn, pg_conn, unique_name):
    with table_on_both((ss_conn, pg_conn), unique_name("t"), "a int, b text", "(1, 'a'), (2, 'b')") as t:
        yield t


def test_typos_get_postgres_errors_and_positions(ss_conn, pg_conn, tables):
    cases = _cases()
    assert len(cases) > 60
    assert "SELECT count(*), maxx(b) FROM {t} GROUP BY a HAVING count(*) > 0" in cases   # 42883 before 42803
    wrong = []
    for case in cases:
        sql = case.format(t=tables)
        want, got = _error(pg_conn, sql), _error(ss_conn, sql)
        if want is not None and want != got:
            wrong.append((sql, want, got))
    assert not wrong, "\n".join(map(repr, wrong))


#: an ungrouped column, and what else may be wrong in the same query
GROUPED = ["SELECT {c} FROM {t} GROUP BY a", "SELECT sum(a), {c} FROM {t} GROUP BY a", "SELECT a FROM {t} GROUP BY a HAVING {c} > ''",
           "SELECT a FROM {t} GROUP BY a ORDER BY {c}", "SELECT count(*) FROM {t} HAVING {c} > ''",
           "SELECT {c} AS k FROM {t} GROUP BY a ORDER BY k", "SELECT grouping(a), {c} FROM {t} GROUP BY a",
           "SELECT a, (SELECT {c}) FROM {t} GROUP BY a", "SELECT a FROM {t} GROUP BY a HAVING EXISTS (SELECT 1 WHERE {c} > '')",
           "SELECT a FROM {t} GROUP BY a ORDER BY (SELECT {t}.{c})"]
GROUPED_ALSO = ["", ", maxx({c})", ", lower({c}, 1)", ", nosuch", ", sum(sum(a))", ", upper({c}) || 1"]
#: COLLATE clauses that cannot be: a type without collations, an unknown one, two that disagree
COLLATIONS = ['SELECT {x} COLLATE "C" FROM {t}', 'SELECT {x}  COLLATE  nosuch FROM {t}',
              'SELECT {x} COLLATE "C" = {x} COLLATE "POSIX" FROM {t}', "SELECT lower({x} COLLATE \"C\") || ({x} COLLATE \"POSIX\") FROM {t}",
              'SELECT 1 FROM {t} WHERE {x} COLLATE "C" IN ({x} COLLATE "POSIX")',
              'SELECT {x} COLLATE pg_catalog."default" < {x} COLLATE "C" FROM {t}']


#: subqueries of a grouped query that are right: they read group keys, or their own rows
GROUPED_SUBQUERIES = ["SELECT b, (SELECT b || 'x') FROM {t} GROUP BY b ORDER BY 1",
                      "SELECT a + 0, (SELECT count(*) FROM {t} y WHERE y.a = x.a) FROM {t} x GROUP BY a ORDER BY 1",
                      "SELECT a FROM {t} GROUP BY a HAVING EXISTS (SELECT 1 WHERE a > 1)",
                      "SELECT max((SELECT b)) FROM {t}", "SELECT a, (SELECT max(y.b) FROM {t} y) FROM {t} GROUP BY a ORDER BY a"]


def test_subqueries_of_grouped_queries(ss_conn, pg_conn, tables):
    """A subquery's outer row is a group: its keys read right (they were
    read at the input row's position: an internal error, or another
    column), its other columns are 42803 as in PostgreSQL, and an
    aggregate of them inside the subquery is refused (0A000)."""
    bad = mismatches(ss_conn, pg_conn, [q.format(t=tables) for q in GROUPED_SUBQUERIES])
    assert not bad, "\n".join(bad)
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        ss_conn.execute(f"SELECT a, (SELECT max(b)) FROM {tables} GROUP BY a")
    assert e.value.diag.message_hint


def _grouped_and_collated() -> list[str]:
    out = []
    for q, also in itertools.product(GROUPED, GROUPED_ALSO):
        select, rest = q.split(" FROM ", 1)
        out.append(f"{select}{also} FROM {rest}")
    out += [q.replace("{x}", x) for q in COLLATIONS for x in ("a", "b", "now()", "ARRAY[b]", "(b || 'x')")]
    return [q.replace("{c}", "b") for q in out]


def test_grouping_and_collation_errors_as_postgresql(ss_conn, pg_conn, tables):
    """The error PostgreSQL finds first, where it places it: binding errors
    (42883, 42703, nested aggregates) before grouping (42803, at the column);
    COLLATE errors (42804, 42704, 42P21) at the clause."""
    cases = _grouped_and_collated()
    assert len(cases) == len(set(cases)) > 70
    wrong = []
    for case in cases:
        sql = case.format(t=tables)
        want, got = _error(pg_conn, sql), _error(ss_conn, sql)
        if want != got:
            wrong.append((sql, want, got))
    assert not wrong, f"{len(wrong)} of {len(cases)}:\n" + "\n".join(map(repr, wrong))


@pytest.mark.parametrize("sql, statements", [
    ("SELECT '--x' AS a, 'b/*c*/d' AS b, E'\\'--' AS c", 1),
    ("/* a; /* nested; */ still a comment; */ SELECT 1; -- SELECT 2;\n SELECT 3", 2),
])
def test_comment_markers_inside_quotes_are_text(ss_conn, pg_conn, sql, statements):
    for conn in (ss_conn, pg_conn):
        with psycopg.ClientCursor(conn) as cur:
            cur.execute(sql)
            results = [cur.fetchall()]
            while cur.nextset():
                results.append(cur.fetchall())
        assert len(results) == statements
    with psycopg.ClientCursor(ss_conn) as a, psycopg.ClientCursor(pg_conn) as b:
        assert a.execute(sql).fetchall() == b.execute(sql).fetchall()


def _rows(conn, t) -> list:
    try:
        return sorted(conn.execute(f"SELECT a FROM {t}").fetchall())
    except psycopg.errors.UndefinedTable:
        conn.rollback() if not conn.autocommit else None
        return ["no table"]


@pytest.mark.parametrize("script", [
    "CREATE TABLE {t} (a int); INSERT INTO {t} VALUES (1); SELECT 1/0",
    "CREATE TABLE {t} (a int); INSERT INTO {t} VALUES (1), (2); SELECT count(*) FROM {t}",
    "CREATE TABLE {t} (a int); COMMIT; INSERT INTO {t} VALUES (1); SELECT 1/0",
    "CREATE TABLE {t} (a int); INSERT INTO {t} VALUES (1); SELEC 2",
    "BEGIN; CREATE TABLE {t} (a int); INSERT INTO {t} VALUES (3); COMMIT; INSERT INTO {t} VALUES (4); SELECT 1/0",
])
def test_one_message_is_one_implicit_transaction(ss_conn, pg_conn, unique_name, script):
    t = unique_name("m")
    outcome = []
    for conn in (ss_conn, pg_conn):
        err = _error(conn, script.format(t=t))
        outcome.append((err and err[:2], _rows(conn, t)))
        conn.execute(f"DROP TABLE IF EXISTS {t}")
    assert outcome[0] == outcome[1]


def test_set_in_a_failed_message_is_undone(ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        conn.execute("RESET work_mem")
        assert _error(conn, "SET work_mem = '7MB'; SELECT 1/0")[0] == "22012"
        assert conn.execute("SHOW work_mem").fetchone() == ("4MB",)
        with psycopg.ClientCursor(conn) as cur:
            cur.execute("SET LOCAL work_mem = '9MB'; SHOW work_mem")
            assert cur.nextset() and cur.fetchall() == [("9MB",)]    # SET LOCAL holds in the message's block
        assert conn.execute("SHOW work_mem").fetchone() == ("4MB",)


def test_a_view_created_in_a_message_sees_the_rows_inserted_after_it(ss_conn, unique_name):
    s, v = unique_name("s"), unique_name("v")
    with psycopg.ClientCursor(ss_conn) as cur:
        cur.execute(f"CREATE FOREIGN TABLE {s} (a int) SERVER stream; "
                    f"CREATE VIEW {v} AS SELECT count(*), sum(a) FROM {s}; "
                    f"INSERT INTO {s} VALUES (1), (2); SELECT * FROM {v}")
        while cur.nextset():
            pass
        assert cur.fetchall() == [(2, 3)]
    assert ss_conn.execute(f"SELECT * FROM {v}").fetchall() == [(2, 3)]
    ss_conn.execute(f"DROP VIEW {v}")
    ss_conn.execute(f"DROP FOREIGN TABLE {s}")


def test_a_stream_insert_in_the_block_creating_its_view_is_refused_not_lost(ss_conn, unique_name):
    """Inside BEGIN ... COMMIT a new view goes live at the COMMIT: rows the same
    block inserts before would miss it silently, so the insert is refused."""
    s, v = unique_name("s"), unique_name("v")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (a int) SERVER stream")
    ss_conn.execute("BEGIN")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT count(*) FROM {s}")
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        ss_conn.execute(f"INSERT INTO {s} VALUES (1)")
    assert "COMMIT first" in e.value.diag.message_hint
    ss_conn.execute("ROLLBACK")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT count(*) FROM {s}")
    ss_conn.execute("BEGIN")
    ss_conn.execute(f"INSERT INTO {s} VALUES (1), (2)")        # a view committed before: fine
    ss_conn.execute("COMMIT")
    assert ss_conn.execute(f"SELECT * FROM {v}").fetchone() == (2,)
    ss_conn.execute(f"DROP VIEW {v}")
    ss_conn.execute(f"DROP FOREIGN TABLE {s}")
