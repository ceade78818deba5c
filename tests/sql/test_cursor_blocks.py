"""DECLARE CURSOR and transaction blocks, against PostgreSQL 15: a cursor
without HOLD needs a block (25P01 outside one); the implicit block of a
Query of several statements counts as one (the cursor lives until the
Query ends), an extended-protocol batch before Sync does not; WITH HOLD
needs none.  Generated over how the DECLARE is sent, its options and what
follows it, and as psycopg's server-side cursors meet it."""
from __future__ import annotations

import itertools

import psycopg
import pytest
from psycopg import pq

from tests.support.fidelity import simple_outcome

OPTIONS = ["", "SCROLL", "NO SCROLL", "BINARY", "WITHOUT HOLD", "WITH HOLD"]
QUERIES = ["SELECT 1 AS a", "SELECT * FROM nosuch_table", "VALUES (1), (2)"]


def _declare(opt: str, query: str) -> str:
    if "HOLD" in opt:
        return f"DECLARE c CURSOR {opt} FOR {query}"
    return f"DECLARE c {opt} CURSOR FOR {query}"


def _extended(conn: psycopg.Connection, sql: str) -> tuple:
    """One Parse/Bind/Execute/Sync, no BEGIN: PostgreSQL's unnamed
    statement in a transaction that is not a block."""
    res = conn.pgconn.exec_params(sql.encode(), [])
    state = (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()
    return (pq.ExecStatus(res.status).name, state)


def _after(conn: psycopg.Connection) -> list:
    """What is left: the session's cursors, then closed for the next case."""
    out = [simple_outcome(conn, "SELECT name, is_holdable FROM pg_cursors ORDER BY name")]
    simple_outcome(conn, "CLOSE ALL")
    return out


def _case(conn: psycopg.Connection, how: str, declare: str) -> list:
    if how == "alone":
        out = [simple_outcome(conn, declare), simple_outcome(conn, "FETCH ALL FROM c")]
    elif how == "with fetch":       # one Query: its implicit block holds the cursor
        out = [simple_outcome(conn, f"{declare}; FETCH ALL FROM c")]
    elif how == "then commit":
        out = [simple_outcome(conn, f"SELECT 1; {declare}; COMMIT"), simple_outcome(conn, "FETCH ALL FROM c")]
    elif how == "extended":
        out = [_extended(conn, declare), simple_outcome(conn, "FETCH ALL FROM c")]
    else:                           # an explicit block
        out = [simple_outcome(conn, "BEGIN"), simple_outcome(conn, declare),
               simple_outcome(conn, "FETCH ALL FROM c"), simple_outcome(conn, "ROLLBACK")]
    return out + _after(conn)


CASES = list(itertools.product(["alone", "with fetch", "then commit", "extended", "block"], OPTIONS, QUERIES))


@pytest.mark.parametrize("how", ["alone", "with fetch", "then commit", "extended", "block"])
def test_declare_outside_and_inside_blocks_like_postgres(ss_conn, pg_conn, how):
    for opt, query in itertools.product(OPTIONS, QUERIES):
        declare = _declare(opt, query)
        ours, theirs = _case(ss_conn, how, declare), _case(pg_conn, how, declare)
        if opt == "BINARY" and theirs[0][0] == "ok":
            continue                # a binary cursor PostgreSQL opens is refused here (0A000, its own test)
        assert ours == theirs, (how, declare)


def _server_cursor(conn: psycopg.Connection, hold: bool) -> tuple:
    try:
        with conn.cursor("pc", withhold=hold) as cur:
            cur.execute("SELECT generate_series(1, 3) AS n")
            return ("ok", cur.fetchall())
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary)


@pytest.mark.parametrize("autocommit,hold", list(itertools.product([True, False], [False, True])))
def test_psycopg_server_cursors_like_postgres(ss_server, pg15, autocommit, hold):
    """psycopg declares its named cursors itself: without HOLD in autocommit
    mode PostgreSQL refuses them, and so must we."""
    outcomes = []
    for dsn in (ss_server.dsn, pg15.dsn):
        with psycopg.connect(dsn, autocommit=autocommit) as conn:
            outcomes.append(_server_cursor(conn, hold))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("sql", [
    "/* x */ DECLARE c CURSOR WITH HOLD FOR SELECT * FROM nosuch_table",
    "SELECT 1; -- y\n DECLARE  c  CURSOR  FOR  /* z */ SELECT * FROM nosuch_table",
    "BEGIN; DECLARE c SCROLL CURSOR FOR SELECT nocol FROM (SELECT 1) s",
    "BEGIN; DECLARE c CURSOR FOR SELEC 1",
])
def test_errors_of_the_query_are_placed_in_the_message(ss_conn, pg_conn, sql):
    """The cursor's query is analysed at DECLARE: its errors point into the
    whole Query message, comments and earlier statements counted."""
    outcomes = [simple_outcome(conn, sql) for conn in (ss_conn, pg_conn)]
    for conn in (ss_conn, pg_conn):
        simple_outcome(conn, "ROLLBACK")
    assert outcomes[0] == outcomes[1]
