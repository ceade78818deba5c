"""pg_prepared_statements against PostgreSQL 15: generated sessions of SQL
PREPARE (alone, several in one Query message, with comments, with and
without parameter types), protocol Parse (named and unnamed), EXECUTE,
Bind, Describe, Close, DEALLOCATE [ALL], DISCARD ALL, transaction blocks
and plan_cache_mode, compared step by step: each step's outcome, then the
view's rows (name, the text PostgreSQL records, parameter types, from_sql,
generic and custom plan counts) and its column names and types."""
from __future__ import annotations

import datetime as dt
import itertools
import random
from typing import Any, Callable

import psycopg
import pytest
from psycopg import pq

from tests.support.fidelity import mismatches, words

NAMES = ["p1", "p2", "Q3"]
#: statement bodies (and how many parameters each takes): parameter types
#: inferred from casts, operators and VALUES, or given by PREPARE / Parse
BODIES = [("SELECT 1 AS one", 0), ("SELECT $1::int + 1", 1), ("SELECT $1 || 'x'", 1),
          ("VALUES ($1::int, $2::text)", 2), ("SELECT $1::numeric(10,2)", 1), ("SELECT $1 + 1", 1),
          ("SELECT $2::int8, $1::bool", 2)]
TYPES = {1: ["int", "text", "numeric"], 2: ["int, text", "bool, bigint"]}
VIEW = ("SELECT name, statement, parameter_types, from_sql, generic_plans, custom_plans "
        "FROM pg_prepared_statements ORDER BY name")
Step = Callable[[psycopg.Connection], Any]


def _sql(text: str) -> Step:
    def run(conn: psycopg.Connection) -> Any:
        out = words(conn, text)
        return out[:2] if out[0] == "error" else out
    run.__doc__ = text
    return run


def _proto(what: str, call: Callable[[pq.abc.PGconn], pq.abc.PGresult]) -> Step:
    def run(conn: psycopg.Connection) -> Any:
        res = call(conn.pgconn)
        if res.status == pq.ExecStatus.FATAL_ERROR:
            return ("error", (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode())
        return ("ok", pq.ExecStatus(res.status).name, res.ntuples)
    run.__doc__ = what
    return run


def _random_step(rng: random.Random) -> Step:
    name = rng.choice(NAMES)
    quoted = f'"{name}"' if name != name.lower() else name
    body, nparams = rng.choice(BODIES)
    args = ", ".join(["1"] * nparams)
    kind = rng.randrange(14)
    if kind <= 1:
        types = f"({rng.choice(TYPES[nparams])})" if nparams and rng.random() < 0.5 else ""
        return _sql(f"PREPARE {quoted}{types} AS {body}")
    if kind == 2:       # several in one message: each records the whole message
        other = rng.choice([n for n in NAMES if n != name])
        return _sql(f"  /* two */ PREPARE {quoted} AS {body} ;\nPREPARE {other.lower()} AS SELECT 2;  ")
    if kind == 3:       # a Query whose later statement fails: PREPARE is not undone
        return _sql(f"PREPARE {quoted} AS {body}; SELECT 1/0")
    if kind <= 5:
        oids = [23] * nparams if nparams and rng.random() < 0.5 else []
        return _proto(f"Parse {name} {body}", lambda pg: pg.prepare(name.encode(), body.encode(), oids or None))
    if kind == 6:
        return _proto(f"Parse unnamed {body}", lambda pg: pg.prepare(b"", body.encode()))
    if kind <= 8:
        return _sql(f"EXECUTE {quoted}({args})" if nparams else f"EXECUTE {quoted}")
    if kind == 9:
        n = rng.choice([0, 1, 2])
        return _proto(f"Bind {name} {n}", lambda pg: pg.exec_prepared(name.encode(), [b"1"] * n))
    if kind == 10:
        return _proto(f"Describe {name}", lambda pg: pg.describe_prepared(name.encode()))
    if kind == 11:
        return rng.choice([_sql(f"DEALLOCATE {quoted}"), _sql("DEALLOCATE ALL"), _sql("DISCARD ALL"),
                           _proto(f"Close {name}", lambda pg: pg.close_prepared(name.encode()))])
    if kind == 12:
        return _sql(f"SET plan_cache_mode = {rng.choice(['auto', 'force_custom_plan', 'force_generic_plan'])}")
    return _sql(rng.choice(["BEGIN", "ROLLBACK", "COMMIT"]))


def _fresh(dsn: str) -> psycopg.Connection:
    conn = psycopg.connect(dsn, autocommit=True, connect_timeout=10)
    conn.prepare_threshold = None       # psycopg's own prepared statements would be listed too
    return conn


@pytest.mark.parametrize("seed", range(12))
def test_generated_sessions_list_what_postgres_lists(ss_server, pg15, seed):
    rng = random.Random(seed)
    ss, pg = _fresh(ss_server.dsn), _fresh(pg15.dsn)
    try:
        for i in range(50):
            step = _random_step(rng)
            assert step(ss) == step(pg), (seed, i, step.__doc__)
            ours, theirs = words(ss, VIEW), words(pg, VIEW)
            if theirs[0] == "error":        # an aborted block refuses the read on both
                assert ours[:2] == theirs[:2], (seed, i, step.__doc__)
            else:
                assert ours == theirs, (seed, i, step.__doc__)
    finally:
        ss.close()
        pg.close()


def test_prepare_time_is_the_statement_start(ss_conn):
    before = dt.datetime.now(dt.timezone.utc)
    ss_conn.execute("PREPARE pt AS SELECT 1")
    ss_conn.pgconn.prepare(b"pt2", b"SELECT 2")
    try:
        rows = ss_conn.execute("SELECT name, prepare_time FROM pg_prepared_statements ORDER BY name").fetchall()
        assert [r[0] for r in rows] == ["pt", "pt2"]
        assert all(before - dt.timedelta(seconds=1) <= r[1] <= dt.datetime.now(dt.timezone.utc) for r in rows)
    finally:
        ss_conn.execute("DEALLOCATE ALL")


def _counts(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute("SELECT name, generic_plans, custom_plans FROM pg_prepared_statements "
                        "ORDER BY name").fetchall()


def _pipelined(pg: pq.abc.PGconn, name: bytes, values: list[bytes]) -> None:
    """Bind/Execute cycles of one statement sent at once, then Sync (a run
    the server may take as one batch: server/batched_binds.py)."""
    pg.enter_pipeline_mode()
    for v in values:
        pg.send_query_prepared(name, [v])
    pg.pipeline_sync()
    while True:
        res = pg.get_result()
        if res is not None and res.status == pq.ExecStatus.PIPELINE_SYNC:
            break
    pg.exit_pipeline_mode()


def test_plan_counts_on_every_execution_path(ss_conn, pg_conn, unique_name):
    """Every way a Bind reaches a plan counts once: the lean INSERT path, a
    pipelined run of Binds, a repeated read answered from the kept cycle,
    a Bind of an SQL-PREPAREd statement, EXECUTE of a Parse'd one."""
    t = unique_name("pc")
    for conn in (ss_conn, pg_conn):
        conn.prepare_threshold = None
        conn.execute(f"CREATE TABLE {t} (a int)")
    try:
        for conn in (ss_conn, pg_conn):
            pg = conn.pgconn
            pg.prepare(b"ins", f"INSERT INTO {t} VALUES ($1)".encode())
            for i in range(3):
                pg.exec_prepared(b"ins", [str(i).encode()])
            _pipelined(pg, b"ins", [str(i).encode() for i in range(9)])
            pg.prepare(b"rd", f"SELECT count(*) FROM {t}".encode())
            pg.prepare(b"rd1", f"SELECT count(*) FROM {t} WHERE a < $1".encode())
            for _ in range(4):
                pg.exec_prepared(b"rd", [])
                pg.exec_prepared(b"rd1", [b"5"])
            conn.execute(f"PREPARE sq(int) AS SELECT count(*) FROM {t} WHERE a > $1")
            for _ in range(3):
                pg.exec_prepared(b"sq", [b"1"])
            conn.execute("EXECUTE rd1(2)")
            conn.execute("EXECUTE rd1(3)")
        assert _counts(ss_conn) == _counts(pg_conn)
        assert ss_conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (12,)
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute("DEALLOCATE ALL")
            conn.execute(f"DROP TABLE {t}")


def test_parameter_types_as_text(ss_conn, pg_conn):
    """regtype[] cast to text or text[] prints the type names, as the array does."""
    script = ["PREPARE ptx(int, text, numeric, bool) AS SELECT 1",
              "SELECT parameter_types::text, parameter_types::text[], parameter_types[2], parameter_types::varchar "
              "FROM pg_prepared_statements WHERE name = 'ptx'",
              "SELECT ARRAY['int4'::regtype, NULL]::text, '{}'::regtype[]::text, ARRAY['text'::regtype]::name[]",
              "DEALLOCATE ptx"]
    assert mismatches(ss_conn, pg_conn, script) == []


def _described(conn: psycopg.Connection, sql: str) -> tuple:
    res = conn.pgconn.prepare(b"", sql.encode())
    if res.status == pq.ExecStatus.FATAL_ERROR:
        return ("error", (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode())
    d = conn.pgconn.describe_prepared(b"")
    return tuple(d.param_type(i) for i in range(d.nparams))


def test_parameter_types_beside_a_typed_operand(ss_conn, pg_conn):
    """A parameter takes the type of the operator PostgreSQL picks: beside
    varchar that is text's (varchar has no operators of its own), except
    in an IN list, resolved as one common type first."""
    types = ["varchar(5)", "text", "bpchar", "name", "int2", "numeric", "date"]
    forms = ["$1 = {x}", "{x} < $1", "$1 IS DISTINCT FROM {x}", "NULLIF({x}, $1) IS NULL", "{x} IN ($1, $2)",
             "$1 BETWEEN {x} AND {x}", "$1 <> ALL (ARRAY[{x}])"]
    for t, form in itertools.product(types, forms):
        sql = "SELECT 1 WHERE " + form.format(x=f"NULL::{t}")
        assert _described(ss_conn, sql) == _described(pg_conn, sql), sql
