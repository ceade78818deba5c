"""Continuous views over their whole life (issue #5): how they are created
(CREATE VIEW, WITH (action=materialize), CREATE MATERIALIZED VIEW), how
clients see them (pg_class, psql's \\dv), how they go away (DROP VIEW, DROP
FOREIGN TABLE ... CASCADE, across restarts), which join shapes they maintain
and how the shapes they cannot maintain are refused."""
from __future__ import annotations

import os
import random
import shutil
import subprocess

import psycopg
import pytest

from .oracle import assert_view_matches

PSQL = shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"


def _psql(dsn: str, command: str) -> str:
    """psql's output for one backslash command (no psqlrc, no pager, C locale)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update({"LC_ALL": "C", "LANG": "C", "PGCONNECT_TIMEOUT": "10"})
    res = subprocess.run([PSQL, "-X", "-P", "pager=off", "-d", dsn, "-c", command],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def _relkind(cur, name: str) -> str | None:
    cur.execute("SELECT relkind FROM pg_class WHERE relname = %s", (name,))
    row = cur.fetchone()
    return row[0] if row else None


def _continuous(cur, name: str) -> bool:
    cur.execute("SELECT count(*) FROM splitstream.views WHERE name = %s", (name,))
    return cur.fetchone()[0] == 1


def _stream(cur, name: str, cols: str = "(k int, x int)") -> None:
    cur.execute(f"CREATE FOREIGN TABLE {name} {cols} SERVER stream")


# -- creation ------------------------------------------------------------------

def test_materialized_view_over_a_stream_is_continuous(ss_conn, unique_name):
    cur = ss_conn.cursor()
    s, v = unique_name("s"), unique_name("mv")
    _stream(cur, s)
    cur.execute(f"CREATE MATERIALIZED VIEW {v} AS SELECT k, count(*), sum(x) FROM {s} GROUP BY k")
    assert _continuous(cur, v) and _relkind(cur, v) == "m"      # listed as a materialized view (\\dm)
    cur.execute(f"INSERT INTO {s} VALUES (1, 10), (2, 5), (1, 1)")
    cur.execute(f"SELECT * FROM {v} ORDER BY k")
    assert cur.fetchall() == [(1, 2, 11), (2, 1, 5)]
    cur.execute(f"INSERT INTO {s} VALUES (2, 7)")
    cur.execute(f"SELECT * FROM {v} ORDER BY k")
    assert cur.fetchall() == [(1, 2, 11), (2, 2, 12)]


def test_materialized_view_over_tables_only_is_a_snapshot(ss_conn, unique_name):
    """As PostgreSQL's: the rows at CREATE, until REFRESH MATERIALIZED VIEW
    (tests/cv/test_materialized_views.py compares it with PostgreSQL 15)."""
    cur = ss_conn.cursor()
    t, v = unique_name("t"), unique_name("mv")
    cur.execute(f"CREATE TABLE {t} (k int)")
    cur.execute(f"INSERT INTO {t} VALUES (1), (1)")
    cur.execute(f"CREATE MATERIALIZED VIEW {v} AS SELECT k, count(*) FROM {t} GROUP BY k")
    assert not _continuous(cur, v) and _relkind(cur, v) == "m"
    cur.execute(f"INSERT INTO {t} VALUES (1)")
    assert cur.execute(f"SELECT * FROM {v}").fetchall() == [(1, 2)]
    cur.execute(f"REFRESH MATERIALIZED VIEW {v}")
    assert cur.execute(f"SELECT * FROM {v}").fetchall() == [(1, 3)]


def test_with_action_materialize_over_a_stream_is_continuous(ss_conn, unique_name):
    cur = ss_conn.cursor()
    s, v = unique_name("s"), unique_name("v")
    _stream(cur, s)
    cur.execute(f"CREATE VIEW {v} WITH (action=materialize) AS SELECT k, max(x) FROM {s} GROUP BY k")
    assert _continuous(cur, v) and _relkind(cur, v) == "v"
    cur.execute(f"INSERT INTO {s} VALUES (1, 3), (1, 9), (2, 4)")
    cur.execute(f"SELECT * FROM {v} ORDER BY k")
    assert cur.fetchall() == [(1, 9), (2, 4)]


def test_action_materialize_over_tables_only_is_refused_with_hint(ss_conn, unique_name):
    """As in PipelineDB, WITH (action=materialize) asks for a continuous view:
    over tables only that is an error, not a plain view in disguise."""
    cur = ss_conn.cursor()
    t, v = unique_name("t"), unique_name("v")
    cur.execute(f"CREATE TABLE {t} (k int)")
    with pytest.raises(psycopg.errors.FeatureNotSupported) as ei:
        cur.execute(f"CREATE VIEW {v} WITH (action=materialize) AS SELECT k, count(*) FROM {t} GROUP BY k")
    assert "must read a stream" in ei.value.diag.message_primary
    assert "plain view" in (ei.value.diag.message_hint or "")
    assert _relkind(cur, v) is None


def test_view_over_tables_only_stays_a_regular_view(ss_conn, unique_name):
    cur = ss_conn.cursor()
    t, v = unique_name("t"), unique_name("v")
    cur.execute(f"CREATE TABLE {t} (k int, x int)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 1), (1, 2)")
    cur.execute(f"CREATE VIEW {v} AS SELECT k, sum(x) FROM {t} GROUP BY k")
    assert not _continuous(cur, v)
    assert _relkind(cur, v) == "v"
    cur.execute(f"SELECT * FROM {v}")
    assert cur.fetchall() == [(1, 3)]
    # a plain view re-reads its tables: updates and deletes show, which a continuous view never sees
    cur.execute(f"UPDATE {t} SET x = 10 WHERE x = 1")
    cur.execute(f"INSERT INTO {t} VALUES (2, 5)")
    cur.execute(f"SELECT * FROM {v} ORDER BY k")
    assert cur.fetchall() == [(1, 12), (2, 5)]
    cur.execute(f"DELETE FROM {t} WHERE k = 1")
    cur.execute(f"SELECT * FROM {v} ORDER BY k")
    assert cur.fetchall() == [(2, 5)]


def test_continuous_view_is_listed_by_psql_and_pg_class(ss_server, ss_conn, unique_name):
    cur = ss_conn.cursor()
    s, v = unique_name("s"), unique_name("v")
    _stream(cur, s)
    cur.execute(f"CREATE VIEW {v} AS SELECT k, count(*) FROM {s} GROUP BY k")
    assert _relkind(cur, v) == "v"
    listing = _psql(ss_server.dsn, rf"\dv {v}")
    assert f"| {v} | view " in listing, listing
    described = _psql(ss_server.dsn, rf"\d {v}")
    assert f'View "public.{v}"' in described and "count" in described, described


# -- removal -------------------------------------------------------------------

def _restart(ss_server_factory, server):
    server.stop()
    return ss_server_factory(data_dir=server.data_dir, extra_args=["--fsync", "off"])


def test_drop_view_removes_it_for_good(ss_server_factory):
    server = ss_server_factory(extra_args=["--fsync", "off"])
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.cursor()
        _stream(cur, "ev")
        cur.execute("CREATE VIEW gone AS SELECT k, count(*) FROM ev GROUP BY k")
        cur.execute("CREATE VIEW kept AS SELECT k, sum(x) FROM ev GROUP BY k")
        cur.execute("INSERT INTO ev VALUES (1, 1), (2, 2)")
        cur.execute("DROP VIEW gone")
        assert _relkind(cur, "gone") is None and not _continuous(cur, "gone")
        with pytest.raises(psycopg.errors.UndefinedTable):
            cur.execute("SELECT * FROM gone")
        cur.execute("INSERT INTO ev VALUES (1, 10)")     # the stream still takes inserts
        cur.execute("SELECT * FROM kept ORDER BY k")
        assert cur.fetchall() == [(1, 11), (2, 2)]
    server = _restart(ss_server_factory, server)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.cursor()
        assert _relkind(cur, "gone") is None and not _continuous(cur, "gone")
        assert _relkind(cur, "kept") == "v" and _continuous(cur, "kept")
        cur.execute("INSERT INTO ev VALUES (2, 100)")
        cur.execute("SELECT * FROM kept ORDER BY k")
        assert cur.fetchall() == [(1, 11), (2, 102)]
        # the name is free again, for a new view that starts from nothing
        cur.execute("CREATE VIEW gone AS SELECT count(*) FROM ev")
        cur.execute("INSERT INTO ev VALUES (3, 3)")
        cur.execute("SELECT * FROM gone")
        assert cur.fetchall() == [(1,)]


def test_drop_stream_needs_cascade_while_views_depend_on_it(ss_server_factory):
    server = ss_server_factory(extra_args=["--fsync", "off"])
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.cursor()
        _stream(cur, "ev")
        cur.execute("CREATE TABLE names (k int, name text)")
        cur.execute("CREATE VIEW per_key AS SELECT k, count(*) FROM ev GROUP BY k")
        cur.execute("CREATE VIEW named AS SELECT n.name, g.c FROM (SELECT k, count(*) AS c FROM ev GROUP BY k) g "
                    "JOIN names n ON n.k = g.k")
        cur.execute("CREATE VIEW plain AS SELECT name FROM names")
        cur.execute("INSERT INTO ev VALUES (1, 1)")
        with pytest.raises(psycopg.errors.DependentObjectsStillExist) as ei:
            cur.execute("DROP FOREIGN TABLE ev")
        assert ei.value.sqlstate == "2BP01"
        assert "per_key" in (ei.value.diag.message_detail or "") and ei.value.diag.message_hint
        # refused: everything is still there and still maintained
        cur.execute("INSERT INTO ev VALUES (1, 2)")
        cur.execute("SELECT * FROM per_key")
        assert cur.fetchall() == [(1, 2)]
        cur.execute("DROP FOREIGN TABLE ev CASCADE")
        for rel in ("ev", "per_key", "named"):
            assert _relkind(cur, rel) is None, rel
        assert not _continuous(cur, "per_key") and not _continuous(cur, "named")
        assert _relkind(cur, "plain") == "v" and _relkind(cur, "names") == "r"
    server = _restart(ss_server_factory, server)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        cur = conn.cursor()
        for rel in ("ev", "per_key", "named"):
            assert _relkind(cur, rel) is None, rel
        cur.execute("SELECT count(*) FROM splitstream.views")
        assert cur.fetchone() == (0,)
        assert _relkind(cur, "plain") == "v"
        # a new stream of the same name starts empty, with no views on it
        _stream(cur, "ev")
        cur.execute("INSERT INTO ev VALUES (5, 5)")
        cur.execute("CREATE VIEW per_key AS SELECT k, count(*) FROM ev GROUP BY k")
        cur.execute("INSERT INTO ev VALUES (5, 6)")
        cur.execute("SELECT * FROM per_key")
        assert cur.fetchall() == [(5, 1)]


# -- RIGHT JOIN with the stream on the preserved side ----------------------------

RIGHT_JOINS = [
    # the stream's events probe the table; unmatched events come out NULL-extended
    # (a view's columns need distinct names, as in PostgreSQL)
    "SELECT t.name, s.k, count(*), sum(s.x), count(t.k) AS matched FROM {t} t RIGHT JOIN {s} s ON s.k = t.k "
    "GROUP BY t.name, s.k",
    "SELECT k, t.name, count(*) FROM {t} t RIGHT JOIN {s} s USING (k) GROUP BY k, t.name",
    "SELECT t.name, count(*) FROM {t} t RIGHT JOIN {s} s ON s.k = t.k AND s.x > t.lim GROUP BY t.name",
    "SELECT s.k, count(t.k), min(t.name) FROM {t} t RIGHT JOIN {s} s ON s.x < t.lim GROUP BY s.k",
    "SELECT t.name, sum(s.x) FROM {t} t RIGHT JOIN {s} s ON s.k = t.k WHERE s.x > 2 GROUP BY t.name",
    "SELECT s.k, count(*) FROM {t} t RIGHT JOIN {s} s ON s.k = t.k WHERE t.name IS NULL GROUP BY s.k",
    # the same with the stream grouped first: the join runs at read time
    "SELECT t.k AS tk, t.name, t.lim, g.* FROM {t} t RIGHT JOIN (SELECT k, count(*) AS c, sum(x) AS total FROM {s} "
    "GROUP BY k) g ON g.k = t.k",
    # the stream on the left of a LEFT JOIN, non-equi: no keys, each event against the whole table
    "SELECT s.k, count(t.k) FROM {s} s LEFT JOIN {t} t ON s.x < t.lim GROUP BY s.k",
]


@pytest.mark.parametrize("query", RIGHT_JOINS)
def test_stream_on_the_preserved_side_matches_a_table(ss_conn, unique_name, query):
    cur = ss_conn.cursor()
    s, st, t, v = unique_name("s"), unique_name("st"), unique_name("t"), unique_name("v")
    _stream(cur, s)
    cur.execute(f"CREATE TABLE {st} (k int, x int)")
    cur.execute(f"CREATE TABLE {t} (k int, name text, lim int)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 'one', 2), (2, 'two', 5), (2, 'deux', 8), (4, 'four', NULL)")
    cur.execute(f"CREATE VIEW {v} AS " + query.format(s=s, t=t))
    assert _continuous(cur, v)
    cur.execute(f"SELECT * FROM {v} LIMIT 0")
    view_cols = [d.name for d in cur.description]
    cur.execute(query.format(s=st, t=t) + " LIMIT 0")
    assert view_cols == [d.name for d in cur.description]
    rng = random.Random(11)
    for _ in range(3):
        rows = [(rng.choice([1, 2, 3, 4, None]), rng.choice([0, 3, 6, 9, None])) for _ in range(25)]
        cur.executemany(f"INSERT INTO {s} VALUES (%s, %s)", rows)
        cur.executemany(f"INSERT INTO {st} VALUES (%s, %s)", rows)
        assert_view_matches(cur, v, query.format(s=st, t=t))


# -- refusals --------------------------------------------------------------------

#: (view query, a word of the rule the refusal must name)
REFUSED = [
    # (an ungrouped view keeps its rows, and refuses ORDER BY in PipelineDB's words: test_ungrouped_views.py)
    ("SELECT DISTINCT k FROM {s}", "ungrouped before DISTINCT"),
    ("SELECT k, row_number() OVER (ORDER BY x) FROM {s}", "window function"),
    ("SELECT k, count(*) FROM (SELECT k FROM {s} UNION ALL SELECT k FROM {t}) u GROUP BY k", "UNION ALL"),
    ("SELECT k, count(*) FROM {s} GROUP BY ROLLUP (k)", "GROUPING SETS"),
    # stream-stream joins join grouped streams only
    ("SELECT a.k, count(*) FROM {s} a JOIN {s2} b ON a.k = b.k GROUP BY a.k", "another stream"),
    ("SELECT DISTINCT k FROM {s} JOIN {s2} USING (k)", "another stream"),
    ("SELECT g.k, count(*) FROM (SELECT k, count(*) FROM {s} GROUP BY k) g JOIN {s2} b ON b.k = g.k GROUP BY g.k",
     "another stream"),
    # outer joins: the stream must be on the preserved side, never in a FULL JOIN
    ("SELECT s.k, count(*) FROM {s} s FULL JOIN {t} t ON s.k = t.k GROUP BY s.k", "FULL JOIN"),
    ("SELECT s.k, count(*) FROM {s} s FULL JOIN {t} t ON s.k < t.k GROUP BY s.k", "FULL JOIN"),
    ("SELECT t.k, count(*) FROM {t} t LEFT JOIN {s} s ON s.k = t.k GROUP BY t.k", "nullable side"),
    ("SELECT s.k, count(*) FROM {s} s RIGHT JOIN {t} t ON s.k = t.k GROUP BY s.k", "nullable side"),
    ("SELECT t.k, count(s.k) FROM {t} t LEFT JOIN {s} s ON s.k < t.k GROUP BY t.k", "nullable side"),
    ("SELECT s.k, count(*) FROM {s} s RIGHT JOIN {t} t ON s.x > t.k GROUP BY s.k", "nullable side"),
    # IN / EXISTS over an ungrouped stream: the stream would be a build side
    ("SELECT t.k FROM {t} t WHERE EXISTS (SELECT 1 FROM {s} s WHERE s.k = t.k)", "build side"),
    ("SELECT t.k FROM {t} t WHERE NOT EXISTS (SELECT 1 FROM {s} s WHERE s.k = t.k)", "build side"),
    ("SELECT t.k FROM {t} t WHERE t.k IN (SELECT k FROM {s})", "ungrouped"),
    # a stream left inside an expression subquery
    ("SELECT t.k, (SELECT max(x) FROM {s} s WHERE s.x < t.k) FROM {t} t", "correlated subquery"),
    ("SELECT t.k, l.c FROM {t} t, LATERAL (SELECT count(*) AS c FROM {s} s WHERE s.k = t.k) l", "correlated subquery"),
    ("SELECT k, count(*) FROM {s} WHERE x > (SELECT max(y) FROM {s2}) GROUP BY k", "subquery that reads a stream"),
]


@pytest.mark.parametrize("query,rule", REFUSED, ids=[r[1] + ":" + r[0][:40] for r in REFUSED])
def test_refusals_name_the_rule_and_create_nothing(ss_conn, unique_name, query, rule):
    cur = ss_conn.cursor()
    s, s2, t, bad = unique_name("s"), unique_name("s2"), unique_name("t"), unique_name("bad")
    _stream(cur, s)
    _stream(cur, s2, "(k int, y int)")
    cur.execute(f"CREATE TABLE {t} (k int)")
    cur.execute(f"INSERT INTO {t} VALUES (1), (2)")
    with pytest.raises(psycopg.Error) as ei:
        cur.execute(f"CREATE VIEW {bad} AS " + query.format(s=s, s2=s2, t=t))
    err = ei.value
    assert err.sqlstate == "0A000", err
    assert rule in err.diag.message_primary, err.diag.message_primary
    assert f'"{bad}"' in err.diag.message_primary, err.diag.message_primary
    assert err.diag.message_hint, "refusal must carry a hint"
    assert _relkind(cur, bad) is None and not _continuous(cur, bad)
    # the streams are untouched: inserts still work
    cur.execute(f"INSERT INTO {s} VALUES (1, 1)")
    cur.execute(f"INSERT INTO {s2} VALUES (1, 1)")
