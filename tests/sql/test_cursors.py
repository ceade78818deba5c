"""SQL cursors against PostgreSQL 15: every FETCH and MOVE direction from
every position of a cursor, SCROLL / NO SCROLL / neither, and pg_cursors.
Generated: random walks of FETCH/MOVE over a small result, compared step by
step (rows and command tag, or SQLSTATE and message)."""
from __future__ import annotations

import random

import psycopg
import pytest

from tests.support.fidelity import table_on_both

DIRECTIONS = ["NEXT", "PRIOR", "FIRST", "LAST", "ALL", "FORWARD", "BACKWARD", "FORWARD ALL", "BACKWARD ALL",
              *(f"ABSOLUTE {k}" for k in (-7, -5, -1, 0, 1, 2, 5, 6, 9)),
              *(f"RELATIVE {k}" for k in (-6, -2, -1, 0, 1, 2, 6)),
              *(f"FORWARD {k}" for k in (-2, 0, 2, 7)), *(f"BACKWARD {k}" for k in (-2, 0, 3)),
              *(str(k) for k in (-1, 0, 2, 9))]


def _step(conn: psycopg.Connection, sql: str):
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            return ("ok", cur.statusmessage, cur.fetchall() if cur.description is not None else None)
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary, e.diag.message_hint)


@pytest.fixture
def five(ss_conn, pg_conn, unique_name):
    with table_on_both((ss_conn, pg_conn), unique_name("cur"), "a int, b text",
                       "(1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')") as t:
        yield t


@pytest.mark.parametrize("seed", [0, 100, 200])
@pytest.mark.parametrize("scroll", ["SCROLL", "", "NO SCROLL"])
def test_fetch_and_move_walks_match_postgres(ss_conn, pg_conn, five, scroll, seed):
    rng = random.Random({"SCROLL": 1, "": 2, "NO SCROLL": 3}[scroll] + seed)
    for walk in range(12):
        steps = [f"{rng.choice(['FETCH', 'FETCH', 'MOVE'])} {rng.choice(DIRECTIONS)} FROM c" for _ in range(8)]
        for conn in (ss_conn, pg_conn):
            conn.execute("BEGIN")
        try:
            for sql in [f"DECLARE c {scroll} CURSOR FOR SELECT a, b FROM {five} ORDER BY a", *steps]:
                ours, theirs = _step(ss_conn, sql), _step(pg_conn, sql)
                assert ours == theirs, (scroll, walk, sql)
                if theirs[0] != "ok":
                    break           # the block is aborted on both
        finally:
            for conn in (ss_conn, pg_conn):
                conn.execute("ROLLBACK")


def test_pg_cursors_lists_the_session_cursors(ss_conn, pg_conn, five):
    query = ("SELECT name, statement, is_holdable, is_binary, is_scrollable, creation_time IS NOT NULL "
             "FROM pg_cursors ORDER BY name")
    for conn in (ss_conn, pg_conn):
        conn.execute("BEGIN")
    try:
        for sql in [f"DECLARE c1 SCROLL CURSOR FOR SELECT a FROM {five}",
                    f"DECLARE c2 NO SCROLL CURSOR FOR SELECT b FROM {five}",
                    f"DECLARE \"C3\" CURSOR WITH HOLD FOR SELECT a FROM {five} ORDER BY a"]:
            ss_conn.execute(sql)
            pg_conn.execute(sql)
        assert ss_conn.execute(query).fetchall() == pg_conn.execute(query).fetchall()
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute("ROLLBACK")
    assert ss_conn.execute("SELECT count(*) FROM pg_cursors").fetchone() == (0,)


def test_declare_options(ss_conn, pg_conn, five):
    for opts, query in (("SCROLL NO SCROLL", "SELECT a"), ("INSENSITIVE", "SELECT a"), ("ASENSITIVE SCROLL", "SELECT a"),
                        ("", "VALUES (1)"), ("", "TABLE"), ("", "(SELECT a"), ("", "DELETE"), ("", "UPDATE")):
        target = {"VALUES (1)": "VALUES (1)", "TABLE": f"TABLE {five}", "(SELECT a": f"(SELECT a FROM {five})",
                  "DELETE": f"DELETE FROM {five} RETURNING a", "UPDATE": f"UPDATE {five} SET a = 1 RETURNING a"}
        body = target.get(query, f"{query} FROM {five}")
        sql = f"DECLARE c {opts} CURSOR FOR {body}"
        outcome = []
        for conn in (ss_conn, pg_conn):
            conn.execute("BEGIN")
            outcome.append(_step(conn, sql)[:1])
            conn.execute("ROLLBACK")
        assert outcome[0] == outcome[1], sql
    ss_conn.execute("BEGIN")
    try:
        with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
            ss_conn.execute(f"DECLARE c BINARY CURSOR FOR SELECT a FROM {five}")   # never a text cursor in disguise
        assert e.value.diag.message_hint
    finally:
        ss_conn.execute("ROLLBACK")
