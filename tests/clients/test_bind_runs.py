"""Runs of pipelined Bind/Execute cycles taken as one batch (protocol/bind_runs.py,
server/batched_binds.py), over real sockets: asyncpg's executemany and
psycopg's pipeline with binary parameters send runs of identical-layout
cycles.  What a table holds and every error are compared with PostgreSQL
15 running the same client code; a stream's view must add up to the same
rows; a committed batch survives kill -9.
"""
from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal

import asyncpg
import psycopg
import pytest

COLUMNS = ("k int NOT NULL, i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, b bool, d date, ts timestamp, "
           "tz timestamptz, t text, n numeric, nul int")
INSERT = "INSERT INTO {} (k, i2, i4, i8, f4, f8, b, d, ts, tz, t, n, nul) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13)"
UTC = dt.timezone.utc


def _row(i: int) -> tuple:
    """Every type asyncpg sends in binary; NULLs in runs (every 37th row) and a column NULL throughout."""
    null = i % 37 == 0
    return (i, None if null else i % 30000 - 15000, i * 7 - 5000, i * 1_000_003 - 2**40, i / 8, i / 3 - 100.5,
            i % 3 == 0, dt.date(1999, 12, 1) + dt.timedelta(days=i),
            None if null else dt.datetime(2001, 2, 3, 4, 5, 6) + dt.timedelta(seconds=i * 61, microseconds=i),
            dt.datetime(2024, 1, 1, tzinfo=UTC) - dt.timedelta(minutes=i), f"row {i:05d}", Decimal(f"{1000 + i % 9000}.25"), None)


async def _asyncpg_load(url: str, table: str, rows: list[tuple], *, txn: bool = False) -> str:
    conn = await asyncpg.connect(url, timeout=10)
    try:
        if txn:
            async with conn.transaction():
                await conn.executemany(INSERT.format(table), rows)
        else:
            await conn.executemany(INSERT.format(table), rows)
        return "ok"
    except asyncpg.PostgresError as e:
        return f"{e.sqlstate} {e}"
    finally:
        await conn.close()


def _load(url: str, table: str, rows: list[tuple], **kw) -> str:
    return asyncio.run(asyncio.wait_for(_asyncpg_load(url, table, rows, **kw), 120))


AGG = ("SELECT count(*) AS n, count(i2) AS n2, sum(i2) AS s2, sum(i4) AS s4, sum(i8) AS s8, sum(f4) AS s4f, "
       "sum(f8) AS s8f, count(*) FILTER (WHERE b) AS nb, min(d) AS d0, max(d) AS d1, count(ts) AS nts, max(ts) AS ts1, "
       "min(tz) AS tz0, max(t) AS t1, sum(n) AS sn, count(nul) AS nn FROM {}")


def test_asyncpg_every_type_table_and_stream_match_postgres(ss_server, pg15, unique_name):
    """2,000 rows of every fixed-width binary type, NULLs and text: the table
    is PostgreSQL's row for row; a stream's view adds up to the same."""
    t, s = unique_name("tb"), unique_name("ev")
    rows = [_row(i) for i in range(2000)]
    got = []
    for srv in (ss_server, pg15):
        with psycopg.connect(srv.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {t} ({COLUMNS})")
            try:
                assert _load(srv.url, t, rows) == "ok"
                got.append(conn.execute(f"SELECT * FROM {t} ORDER BY k").fetchall())
            finally:
                conn.execute(f"DROP TABLE {t}")
    assert got[0] == got[1] and len(got[0]) == 2000
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE FOREIGN TABLE {s} ({COLUMNS}) SERVER stream")
        conn.execute(f"CREATE VIEW {s}_v AS " + AGG.format(s))
        conn.execute(f"CREATE TABLE {t} ({COLUMNS})")
        assert _load(ss_server.url, s, rows) == "ok"
        assert _load(ss_server.url, t, rows) == "ok"
        assert conn.execute(f"SELECT * FROM {s}_v").fetchone() == conn.execute(AGG.format(t)).fetchone()


@pytest.mark.parametrize("txn", [False, True], ids=["autocommit", "txn"])
def test_asyncpg_bad_row_mid_run_matches_postgres(ss_server, pg15, txn, unique_name):
    """Row 300 of a run overflows its int4 column (the parameter is int8): the
    same error as PostgreSQL's, and nothing of the batch is kept."""
    t = unique_name("tb")
    sql = "INSERT INTO {} (k, v) VALUES ($1, $2::int8)"
    results = []
    for srv in (ss_server, pg15):

        async def go(url=srv.url):
            conn = await asyncpg.connect(url, timeout=10)
            try:
                out = []
                for batch in ([(i, i) for i in range(200)], [(i, 1 << 40 if i == 300 else i) for i in range(200, 600)],
                              [(i, i) for i in range(600, 700)]):
                    try:
                        if txn:
                            async with conn.transaction():
                                await conn.executemany(sql.format(t), batch)
                        else:
                            await conn.executemany(sql.format(t), batch)
                        out.append("ok")
                    except asyncpg.PostgresError as e:
                        out.append(f"{e.sqlstate} {e}")
                return out
            finally:
                await conn.close()

        with psycopg.connect(srv.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {t} (k int NOT NULL, v int)")
            try:
                out = asyncio.run(asyncio.wait_for(go(), 120))
                results.append((out, conn.execute(f"SELECT count(*), sum(k), sum(v) FROM {t}").fetchone()))
            finally:
                conn.execute(f"DROP TABLE {t}")
    assert results[0] == results[1]
    assert results[0][0][1].startswith("22003 ") and results[0][1][0] == 300


def test_bad_row_mid_run_into_stream(ss_server, unique_name):
    """The same overflow into a stream: the whole executemany fails with
    22003 and its view takes none of it; the batches around it arrive."""
    s = unique_name("ev")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE FOREIGN TABLE {s} (k int NOT NULL, v int) SERVER stream")
        conn.execute(f"CREATE VIEW {s}_v AS SELECT count(*) AS n, sum(v) AS sv FROM {s}")
        sql = f"INSERT INTO {s} (k, v) VALUES ($1, $2::int8)"

        async def go():
            c = await asyncpg.connect(ss_server.url, timeout=10)
            try:
                await c.executemany(sql, [(i, i) for i in range(100)])
                with pytest.raises(asyncpg.NumericValueOutOfRangeError):
                    await c.executemany(sql, [(i, 1 << 40 if i == 150 else i) for i in range(100, 200)])
                with pytest.raises(asyncpg.NotNullViolationError):
                    await c.executemany(sql, [(None if i == 250 else i, i) for i in range(200, 300)])
                await c.executemany(sql, [(i, i) for i in range(300, 400)])
            finally:
                await c.close()

        asyncio.run(asyncio.wait_for(go(), 120))
        assert conn.execute(f"SELECT n, sv FROM {s}_v").fetchone() == (200, sum(range(100)) + sum(range(300, 400)))


def test_psycopg_binary_pipeline_into_stream(ss_server, unique_name):
    """psycopg's executemany in pipeline mode with binary parameters (%b)."""
    s = unique_name("ev")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE FOREIGN TABLE {s} (k int, v int8, f float8) SERVER stream")
        conn.execute(f"CREATE VIEW {s}_v AS SELECT count(*) AS n, sum(v) AS sv, sum(f) AS sf, count(f) AS nf FROM {s}")
        rows = [(i, i * 3, None if i % 50 == 0 else i / 2) for i in range(3000)]
        with conn.pipeline(), conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {s} (k, v, f) VALUES (%b, %b, %b)", rows)
        want = (3000, sum(r[1] for r in rows), sum(r[2] for r in rows if r[2] is not None), 2940)
        assert conn.execute(f"SELECT n, sv, sf, nf FROM {s}_v").fetchone() == want


def test_committed_runs_survive_kill(ss_server_factory, unique_name):
    """Runs committed in a transaction block (stream and table) are all there after kill -9."""
    server = ss_server_factory()
    s, t = unique_name("ev"), unique_name("tb")
    rows = [_row(i) for i in range(3000)]
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE FOREIGN TABLE {s} ({COLUMNS}) SERVER stream")
        conn.execute(f"CREATE VIEW {s}_v AS " + AGG.format(s))
        conn.execute(f"CREATE TABLE {t} ({COLUMNS})")
        assert _load(server.url, s, rows, txn=True) == "ok"
        assert _load(server.url, t, rows, txn=True) == "ok"
        before = conn.execute(f"SELECT * FROM {s}_v").fetchone()
        assert before == conn.execute(AGG.format(t)).fetchone() and before[0] == 3000
    server.restart(crash=True)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute(f"SELECT * FROM {s}_v").fetchone() == before
        assert conn.execute(AGG.format(t)).fetchone() == before
