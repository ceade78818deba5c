"""Batched prepared INSERTs over real sockets (executor/insert_batching.py).

pgjdbc's executeBatch (with reWriteBatchedInserts off and on), psycopg's
executemany in pipeline mode and asyncpg's executemany send Bind/Execute per
row and one Sync per batch; the server delivers each batch as one insert.
These check that every row arrives exactly once (counts and sums in a
continuous view and in a table) and that a bad row in the middle of a batch
fails the whole batch and nothing else, as in PostgreSQL (tables are compared
with a real PostgreSQL 15 running the same client program).
"""
from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import asyncpg
import psycopg
import pytest

JAVA = shutil.which("java")
PGJDBC = Path("/usr/share/java/postgresql.jar")
JAVA_DIR = Path(__file__).parent / "java"
needs_java = pytest.mark.skipif(JAVA is None or not PGJDBC.exists(), reason="needs java and libpostgresql-jdbc-java")


def _jdbc(host: str, port: int, table: str, rows: int, batch: int, *, rewrite: bool, autocommit: bool,
          bad: int = -1, bad_kind: str = "range") -> list[str]:
    """Run BatchInsert.java; returns its per-batch lines (``batch i ok n`` / ``batch i error STATE msg``)."""
    url = f"jdbc:postgresql://{host}:{port}/postgres?reWriteBatchedInserts={'true' if rewrite else 'false'}"
    res = subprocess.run([JAVA, "-cp", str(PGJDBC), str(JAVA_DIR / "BatchInsert.java"), url, table, str(rows),
                          str(batch), str(autocommit).lower(), str(bad), bad_kind],
                         capture_output=True, text=True, timeout=300, cwd=str(JAVA_DIR))
    out = res.stdout + res.stderr
    assert res.returncode == 0 and out.rstrip().endswith("DONE"), out
    return [ln for ln in res.stdout.splitlines() if ln.startswith("batch ")]


def _stream(conn: psycopg.Connection, name: str) -> str:
    """A stream (g NOT NULL) and a grouped continuous view over it; returns the view's name."""
    conn.execute(f"CREATE FOREIGN TABLE {name} (g int NOT NULL, v int, f float8) SERVER stream")
    conn.execute(f"CREATE VIEW {name}_v AS SELECT g, count(*) AS n, sum(v) AS sv, sum(f) AS sf FROM {name} GROUP BY g")
    return f"{name}_v"


def _view_totals(conn: psycopg.Connection, view: str) -> tuple[int, int, float, int]:
    """(rows, sum v, sum f, groups) of a view made by :func:`_stream`."""
    n, sv, sf, groups = conn.execute(
        f"SELECT coalesce(sum(n), 0), coalesce(sum(sv), 0), coalesce(sum(sf), 0), count(*) FROM {view}").fetchone()
    return int(n), int(sv), float(sf), int(groups)


def _table_totals(conn: psycopg.Connection, table: str) -> tuple[int, int, float, int]:
    n, sv, sf, groups = conn.execute(
        f"SELECT count(*), coalesce(sum(v), 0), coalesce(sum(f), 0), count(DISTINCT g) FROM {table}").fetchone()
    return int(n), int(sv), float(sf), int(groups)


def _expect(rows: range | list[int]) -> tuple[int, int, float, int]:
    rows = list(rows)
    return len(rows), sum(rows), sum(r / 4.0 for r in rows), len({r % 100 for r in rows})


# ------------------------------------------------------------------ pgjdbc

@needs_java
@pytest.mark.parametrize("rewrite", [False, True], ids=["plain", "rewrite"])
@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "txn"])
def test_jdbc_batches_into_stream(ss_server, rewrite, autocommit, unique_name):
    """3,000 rows in batches of 1,000 (pgjdbc puts a Sync about every 256 rows
    when not rewriting, so one batch spans several implicit transactions)."""
    s = unique_name("ev")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        view = _stream(conn, s)
        lines = _jdbc(ss_server.host, ss_server.port, s, 3000, 1000, rewrite=rewrite, autocommit=autocommit)
        assert lines == [f"batch {i} ok 1000" for i in range(3)]
        assert _view_totals(conn, view) == _expect(range(3000))


@needs_java
@pytest.mark.parametrize("bad_kind", ["range", "null"])
@pytest.mark.parametrize("rewrite", [False, True], ids=["plain", "rewrite"])
def test_jdbc_bad_row_mid_batch_stream(ss_server, rewrite, bad_kind, unique_name):
    """Batches of 200 rows (one Sync each); row 250 is bad: batch 1 fails as a
    whole, batches 0 and 2 arrive complete."""
    s = unique_name("ev")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        view = _stream(conn, s)
        lines = _jdbc(ss_server.host, ss_server.port, s, 600, 200, rewrite=rewrite, autocommit=True,
                      bad=250, bad_kind=bad_kind)
        state = "22003" if bad_kind == "range" else "23502"
        assert lines[0] == "batch 0 ok 200" and lines[2] == "batch 2 ok 200", lines
        assert lines[1].startswith(f"batch 1 error {state} "), lines
        assert _view_totals(conn, view) == _expect([*range(200), *range(400, 600)])


@needs_java
@pytest.mark.parametrize("bad_kind", ["range", "null"])
@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "txn"])
@pytest.mark.parametrize("rewrite", [False, True], ids=["plain", "rewrite"])
def test_jdbc_table_matches_postgres(ss_server, pg15, rewrite, autocommit, bad_kind, unique_name):
    """Same program, same table, against splitstream and PostgreSQL 15: the
    same batch outcomes (SQLSTATE and message) and the same rows."""
    t = unique_name("tb")
    results = []
    for srv in (ss_server, pg15):
        with psycopg.connect(srv.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {t} (g int NOT NULL, v int, f float8)")
            try:
                lines = _jdbc(srv.host, srv.port, t, 600, 200, rewrite=rewrite, autocommit=autocommit,
                              bad=250, bad_kind=bad_kind)
                results.append((lines, _table_totals(conn, t)))
            finally:
                conn.execute(f"DROP TABLE {t}")
    assert results[0] == results[1]
    assert results[0][1] == _expect([*range(200), *range(400, 600)])


# ------------------------------------------------------------------ psycopg

def _pipelined(conn, sql: str, rows) -> None:
    """psycopg's executemany inside pipeline mode: one Sync for the whole batch."""
    with conn.pipeline():
        with conn.cursor() as cur:
            cur.executemany(sql, rows)


def test_psycopg_executemany_pipeline(ss_server, unique_name):
    s = unique_name("ev")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        view = _stream(conn, s)
        sql = f"INSERT INTO {s} (g, v, f) VALUES (%s, %s, %s)"
        _pipelined(conn, sql, [(i % 100, i, i / 4.0) for i in range(2000)])
        assert _view_totals(conn, view) == _expect(range(2000))
        # a NULL for the NOT NULL column in the middle: the pipeline's block delivers nothing
        rows = [(None if i == 2500 else i % 100, i, i / 4.0) for i in range(2000, 3000)]
        with pytest.raises(psycopg.errors.NotNullViolation):
            _pipelined(conn, sql, rows)
        assert _view_totals(conn, view) == _expect(range(2000))
        # the connection is usable and the next batch arrives
        _pipelined(conn, sql, [(i % 100, i, i / 4.0) for i in range(3000, 3500)])
        assert _view_totals(conn, view) == _expect([*range(2000), *range(3000, 3500)])


def test_psycopg_pipeline_reads_own_inserts(ss_server, unique_name):
    """A read between batched inserts of one pipeline sees the rows before it."""
    s = unique_name("ev")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        view = _stream(conn, s)
        sql = f"INSERT INTO {s} (g, v, f) VALUES (%s, %s, %s)"
        with conn.pipeline():
            with conn.cursor() as cur:
                cur.executemany(sql, [(1, i, 0.0) for i in range(10)])
                cur.execute(f"SELECT sum(n) FROM {view}")
                seen = cur.fetchone()
                cur.executemany(sql, [(1, i, 0.0) for i in range(10, 15)])
        assert int(seen[0]) == 10
        assert _view_totals(conn, view)[:2] == (15, sum(range(15)))


# ------------------------------------------------------------------ asyncpg

def test_asyncpg_executemany(ss_server, unique_name):
    s = unique_name("ev")
    t = unique_name("tb")

    async def go():
        conn = await asyncpg.connect(ss_server.url, timeout=10)
        try:
            await conn.execute(f"CREATE TABLE {t} (g int NOT NULL, v int, f float8)")
            for target in (s, t):
                sql = f"INSERT INTO {target} (g, v, f) VALUES ($1, $2, $3)"
                await conn.executemany(sql, [(i % 100, i, i / 4.0) for i in range(1500)])
                with pytest.raises(asyncpg.NotNullViolationError):
                    await conn.executemany(sql, [(None if i == 1700 else i % 100, i, i / 4.0)
                                                 for i in range(1500, 2000)])
                await conn.executemany(sql, [(i % 100, i, i / 4.0) for i in range(2000, 2100)])
        finally:
            await conn.close()

    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        view = _stream(conn, s)
        asyncio.run(asyncio.wait_for(go(), 120))
        want = _expect([*range(1500), *range(2000, 2100)])
        assert _view_totals(conn, view) == want
        assert _table_totals(conn, t) == want


# ------------------------------------------------------------------ transactions and durability

def test_pipeline_rollback_drops_undelivered_rows(ss_server, unique_name):
    """Inside BEGIN, batched rows not yet delivered are dropped by ROLLBACK in
    the same pipeline, for a table and a stream alike; a Sync'ed batch before
    it stays (a stream's rows are delivered at Sync)."""
    s = unique_name("ev")
    t = unique_name("tb")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        view = _stream(conn, s)
        conn.execute(f"CREATE TABLE {t} (g int NOT NULL, v int, f float8)")
        with conn.pipeline() as p:
            with conn.cursor() as cur:
                cur.execute("BEGIN")
                cur.executemany(f"INSERT INTO {s} (g, v, f) VALUES (%s, %s, %s)", [(1, i, 0.0) for i in range(5)])
                p.sync()
                cur.executemany(f"INSERT INTO {s} (g, v, f) VALUES (%s, %s, %s)", [(1, i, 0.0) for i in range(7)])
                cur.executemany(f"INSERT INTO {t} (g, v, f) VALUES (%s, %s, %s)", [(1, i, 0.0) for i in range(7)])
                cur.execute("ROLLBACK")
        assert _view_totals(conn, view)[:2] == (5, sum(range(5)))
        assert _table_totals(conn, t)[0] == 0


def test_acknowledged_batch_survives_kill(ss_server_factory, unique_name):
    """A batch is acknowledged (ReadyForQuery after Sync) only once delivered
    and in the WAL: after SIGKILL and restart the view holds all of it."""
    server = ss_server_factory()
    s = unique_name("ev")
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        view = _stream(conn, s)
        with conn.pipeline():
            with conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {s} (g, v, f) VALUES (%s, %s, %s)",
                                [(i % 100, i, i / 4.0) for i in range(5000)])
    server.restart(crash=True)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert _view_totals(conn, view) == _expect(range(5000))


def test_psycopg_pipeline_check_violation_keeps_connection_usable(ss_server, unique_name):
    """A CHECK violation inside executemany's pipeline fails at its own Execute,
    so libpq can attribute it; nothing of the implicit block is kept (as in PostgreSQL)."""
    t = unique_name("pc")
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        c.execute(f"CREATE TABLE {t} (a int CHECK (a < 10), b int UNIQUE)")
        sql = f"INSERT INTO {t} VALUES (%s, %s)"
        with pytest.raises(psycopg.errors.CheckViolation):
            _pipelined(c, sql, [(1, 1), (2, 2), (20, 3), (3, 4)])
        with pytest.raises(psycopg.errors.UniqueViolation):
            _pipelined(c, sql, [(1, 1), (2, 1)])
        assert c.execute(f"SELECT count(*) FROM {t}").fetchone() == (0,)
        _pipelined(c, sql, [(i, i) for i in range(5)])
        assert c.execute(f"SELECT count(*), sum(b) FROM {t}").fetchone() == (5, 10)


def test_multirow_integer_values_match_postgres(ss_server, pg15, unique_name):
    """Long all-integer VALUES lists (executor/fast_insert.int_rows) against PostgreSQL:
    the values, the literal typing (int8 literals into int4/int2 columns fail with
    22003, into bigint/numeric they fit), and the fallback for anything else."""
    t = unique_name("mv")
    stmts = ["({i}, {i}, {i}, -{i}, 1)", "({i}, 99999999999, -{i}, 7, 2)", "({i}, 1, 1, 1, 99999)",
             "(99999999999, 1, 1, 1, 1)", "({i}, 1, 1, 1)", "( {i} ,\n{i},007,-0, 3 )", "({i}, 1, 1, 1, +5)",
             "({i}, 1, 1.5, 1, 5)", "({i}, 1, 1, 1, 2, 3)", "({i}, 1, NULL, 1, 5)"]
    outcomes = []
    for dsn in (ss_server.dsn, pg15.dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"CREATE TABLE {t} (a int, b bigint, c numeric, d bigint, e smallint)")
            res = []
            for form in stmts:
                try:
                    c.execute(f"INSERT INTO {t} VALUES " + ",".join(form.format(i=i) for i in range(400)))
                    res.append("ok")
                except psycopg.Error as e:
                    res.append(e.sqlstate)
            res.append(c.execute(f"SELECT count(*), sum(a), sum(b), sum(c), sum(d), sum(e), count(c) FROM {t}").fetchone())
            outcomes.append(res)
    assert outcomes[0] == outcomes[1]
    assert "ok" in outcomes[0] and "22003" in outcomes[0]
