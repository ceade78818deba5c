"""Repeated prepared reads answered from the previous response must never be
stale: every change of a table, of a continuous view's input, or of an output
setting shows in the next read, and time-dependent queries are never reused."""
from __future__ import annotations

import time

import asyncpg
import psycopg
import pytest


def _poll(conn, sql: str, n: int = 5):
    """The same prepared statement several times (Bind/Describe/Execute/Sync cycles)."""
    return [conn.execute(sql, prepare=True).fetchall() for _ in range(n)]


def test_view_reads_follow_inserts(ss_server, unique_name):
    s, v = unique_name("rr_s"), unique_name("rr_v")
    with psycopg.connect(ss_server.dsn, autocommit=True) as reader, \
            psycopg.connect(ss_server.dsn, autocommit=True) as writer:
        writer.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
        writer.execute(f"CREATE VIEW {v} AS SELECT k, count(*) AS n, sum(x) AS sx FROM {s} GROUP BY k")
        q = f"SELECT n, sx FROM {v} WHERE k = 1"
        total = 0
        for i in range(1, 30):
            writer.execute(f"INSERT INTO {s} VALUES (1, {i}), (2, {i})")
            total += i
            for rows in _poll(reader, q, 3):
                assert rows == [(i, total)]


def test_table_reads_follow_commits_and_own_transaction(ss_server, unique_name):
    t = unique_name("rr_t")
    with psycopg.connect(ss_server.dsn, autocommit=True) as reader, \
            psycopg.connect(ss_server.dsn, autocommit=True) as writer:
        writer.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v int)")
        writer.execute(f"INSERT INTO {t} VALUES (1, 0)")
        q = f"SELECT v FROM {t} WHERE id = 1"
        for i in range(1, 20):
            writer.execute(f"UPDATE {t} SET v = {i} WHERE id = 1")
            assert _poll(reader, q, 3) == [[(i,)]] * 3
        with reader.transaction():
            reader.execute(f"UPDATE {t} SET v = -1 WHERE id = 1")
            assert _poll(reader, q, 2) == [[(-1,)]] * 2
            assert writer.execute(q).fetchall() == [(19,)]
        assert _poll(writer, q, 2) == [[(-1,)]] * 2


def test_settings_and_time_are_not_frozen(ss_server):
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        c.execute("SET TimeZone = 'UTC'")
        c.adapters.register_loader("timestamptz", psycopg.types.string.TextLoader)   # the server's text
        q = "SELECT timestamptz '2024-01-01 12:00:00+00' AS t, 0.1::float8 AS f"
        assert _poll(c, q, 3) == [[("2024-01-01 12:00:00+00", 0.1)]] * 3
        c.execute("SET TimeZone = 'Asia/Tokyo'")
        assert _poll(c, q, 3) == [[("2024-01-01 21:00:00+09", 0.1)]] * 3
        seen = set()
        for _ in range(5):
            seen.add(c.execute("SELECT clock_timestamp()::text, now()::text, random()", prepare=True).fetchone())
            time.sleep(0.002)
        assert len(seen) == 5


@pytest.mark.asyncio
async def test_asyncpg_prepared_view_reads(ss_server, unique_name):
    s, v = unique_name("rr_as"), unique_name("rr_av")
    conn = await asyncpg.connect(ss_server.url, timeout=10)
    try:
        await conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x float8) SERVER stream")
        await conn.execute(f"CREATE VIEW {v} AS SELECT avg(x) AS a, count(*) AS n FROM {s}")
        stmt = await conn.prepare(f"SELECT a, n FROM {v}")
        for i in range(1, 20):
            await conn.execute(f"INSERT INTO {s} VALUES ({i}, {i}.5)")
            for _ in range(3):
                row = await stmt.fetchrow()
                assert row["n"] == i and row["a"] == pytest.approx(sum(j + 0.5 for j in range(1, i + 1)) / i)
    finally:
        await conn.close()
