"""SQL PREPARE and the protocol's Parse share one namespace per session, as
in PostgreSQL: EXECUTE / DEALLOCATE reach a Parse'd statement, Bind /
Describe / Close reach a PREPAREd one.  Every combination of how a statement
is made, used and dropped is played against PostgreSQL 15 and splitstream,
and the two transcripts must agree.
"""
from __future__ import annotations

import itertools
from typing import Callable

import psycopg
import pytest
from psycopg import pq

NAME = "nsq"
QUERY_SQL = f"PREPARE {NAME}(int) AS SELECT $1 + 1 AS v"
QUERY_PROTO = b"SELECT $1::int + 1 AS v"


def _sql(conn: psycopg.Connection, text: str) -> str:
    try:
        cur = conn.execute(text)
        rows = cur.fetchall() if cur.description else []
        return f"ok {cur.statusmessage} {rows}"
    except psycopg.Error as e:
        return f"error {e.sqlstate}"


def _proto(conn: psycopg.Connection, call: Callable[[pq.abc.PGconn], pq.abc.PGresult]) -> str:
    res = call(conn.pgconn)
    if res.status == pq.ExecStatus.FATAL_ERROR:
        return f"error {(res.error_field(pq.DiagnosticField.SQLSTATE) or b'').decode()}"
    rows = [res.get_value(r, 0) for r in range(res.ntuples)]
    return f"ok {pq.ExecStatus(res.status).name} nparams={res.nparams} rows={rows}"


def _make(kind: str) -> Callable[[psycopg.Connection], str]:
    if kind == "sql":
        return lambda c: _sql(c, QUERY_SQL)
    return lambda c: _proto(c, lambda pg: pg.prepare(NAME.encode(), QUERY_PROTO))


USES: dict[str, Callable[[psycopg.Connection], str]] = {
    "execute": lambda c: _sql(c, f"EXECUTE {NAME}(41)"),
    "bind": lambda c: _proto(c, lambda pg: pg.exec_prepared(NAME.encode(), [b"41"])),
    "describe": lambda c: _proto(c, lambda pg: pg.describe_prepared(NAME.encode())),
}

DROPS: dict[str, Callable[[psycopg.Connection], str]] = {
    "deallocate": lambda c: _sql(c, f"DEALLOCATE {NAME}"),
    "deallocate prepare": lambda c: _sql(c, f"DEALLOCATE PREPARE {NAME}"),
    "deallocate all": lambda c: _sql(c, "DEALLOCATE ALL"),
    "discard all": lambda c: _sql(c, "DISCARD ALL"),
    "close": lambda c: _proto(c, lambda pg: pg.close_prepared(NAME.encode())),
}


def _transcript(conn: psycopg.Connection, made: str, again: str, drop: str) -> list[str]:
    """Make the statement one way, use it every way, make it again the other
    way (a duplicate), drop it, and use it every way again."""
    out = [_make(made)(conn)]
    out += [f"{u}: {f(conn)}" for u, f in USES.items()]
    out.append(f"again {again}: {_make(again)(conn)}")
    out.append(f"{drop}: {DROPS[drop](conn)}")
    out += [f"after {u}: {f(conn)}" for u, f in USES.items()]
    out.append(f"remake {made}: {_make(made)(conn)}")
    _sql(conn, "DEALLOCATE ALL")
    return out


CASES = list(itertools.product(["sql", "protocol"], ["sql", "protocol"], sorted(DROPS)))


@pytest.mark.parametrize("made,again,drop", CASES)
def test_one_namespace_like_postgres(ss_conn, pg_conn, made, again, drop):
    _sql(ss_conn, "DEALLOCATE ALL")
    _sql(pg_conn, "DEALLOCATE ALL")
    assert _transcript(ss_conn, made, again, drop) == _transcript(pg_conn, made, again, drop)


def test_unknown_name_both_ways(ss_conn, pg_conn):
    for conn in (ss_conn, pg_conn):
        _sql(conn, "DEALLOCATE ALL")
    calls = [lambda c: _sql(c, "DEALLOCATE nope"), USES["execute"], USES["bind"], USES["describe"]]
    assert [f(ss_conn) for f in calls] == [f(pg_conn) for f in calls]


def test_psycopg_prepared_statements(ss_conn, pg_conn):
    """psycopg's prepare=True Parses named statements; DEALLOCATE ALL drops
    them, and psycopg's next use fails the same way on both servers."""
    got = []
    for conn in (ss_conn, pg_conn):
        out = [conn.execute("SELECT %s::int * 2", [21], prepare=True).fetchone()]
        out.append(_sql(conn, "DEALLOCATE ALL"))
        try:
            out.append(conn.execute("SELECT %s::int * 2", [21], prepare=True).fetchone())
        except psycopg.Error as e:
            out.append(e.sqlstate)
        got.append(out)
    assert got[0] == got[1]


def test_psycopg_evicts_its_prepared_statements(ss_conn, pg_conn):
    """A small prepared_max makes psycopg drop its oldest named statement
    (DEALLOCATE, or Close with libpq 17+) as it prepares new ones."""
    got = []
    for conn in (ss_conn, pg_conn):
        conn.prepared_max = 2
        out = []
        for _ in range(2):
            for k in range(5):
                out.append(conn.execute(f"SELECT %s::int + {k}", [k], prepare=True).fetchone())
        got.append(out)
    assert got[0] == got[1]


def test_empty_query_statement_holds_its_name(ss_conn, pg_conn):
    """A statement Parse'd from an empty query still takes its name."""
    got = []
    for conn in (ss_conn, pg_conn):
        _sql(conn, "DEALLOCATE ALL")
        out = [_proto(conn, lambda pg: pg.prepare(NAME.encode(), b"")), _sql(conn, QUERY_SQL),
               _sql(conn, f"DEALLOCATE {NAME}"), _sql(conn, QUERY_SQL)]
        _sql(conn, "DEALLOCATE ALL")
        got.append(out)
    assert got[0] == got[1]
