"""SUBSCRIBE (Materialize-style) over a continuous view: as a simple-query
statement (psycopg's ClientCursor in single-row mode), inside
COPY (SUBSCRIBE ...) TO STDOUT (psycopg, asyncpg), until the client cancels.
Each change is sent once, after it is applied: mz_diff -1 for the old row of
a group and +1 for the new one."""
from __future__ import annotations

import asyncio
import select
import threading
import time

import asyncpg
import psycopg
import pytest


def _setup(conn, stream: str, view: str) -> None:
    conn.execute(f"CREATE FOREIGN TABLE {stream} (k int, x int) SERVER stream")
    conn.execute(f"CREATE VIEW {view} AS SELECT k, sum(x) AS s FROM {stream} GROUP BY k")
    conn.execute(f"INSERT INTO {stream} VALUES (1, 1)")


def _next_result(pg):
    """PQgetResult without blocking in libpq (which would hold the GIL the other threads need)."""
    while pg.is_busy():
        select.select([pg.socket], [], [], 1.0)
        pg.consume_input()
    return pg.get_result()


def _later(steps) -> threading.Thread:
    """Run (delay, action) pairs on a thread, so the subscriber sees them while it streams."""
    def go():
        for delay, action in steps:
            time.sleep(delay)
            action()
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def _changes(rows) -> list[tuple]:
    """(timestamp order kept) rows without the timestamp, each timestamp's rows sorted."""
    by_ts: dict = {}
    for ts, diff, *rest in rows:
        by_ts.setdefault(int(ts), []).append((int(diff), *[None if v is None else int(v) for v in rest]))
    assert list(by_ts) == sorted(by_ts)
    return [sorted(v) for v in by_ts.values()]


@pytest.mark.parametrize("snapshot", [True, False])
def test_copy_subscribe_psycopg(ss_server, unique_name, snapshot):
    stream, view = unique_name("s"), unique_name("v")
    with psycopg.connect(ss_server.dsn, autocommit=True) as w, psycopg.connect(ss_server.dsn, autocommit=True) as sub:
        _setup(w, stream, view)
        t = _later([(0.6, lambda: w.execute(f"INSERT INTO {stream} VALUES (1, 5), (2, 7)")),
                    (0.6, lambda: w.execute(f"INSERT INTO {stream} VALUES (3, 1)")),
                    (0.6, sub.cancel)])
        rows = []
        with pytest.raises(psycopg.errors.QueryCanceled):
            with sub.cursor().copy(f"COPY (SUBSCRIBE TO {view} WITH (SNAPSHOT = {str(snapshot).lower()})) TO STDOUT") as cp:
                for row in cp.rows():
                    rows.append(row)
        t.join()
        want = ([[(1, 1, 1)]] if snapshot else []) + [[(-1, 1, 1), (1, 1, 6), (1, 2, 7)], [(1, 3, 1)]]
        assert _changes(rows) == want
        assert sub.execute("SELECT 1").fetchone() == (1,)      # the connection goes on


def test_subscribe_statement_streams_rows(ss_server, unique_name):
    """libpq's single-row mode over a simple query: rows arrive while the statement runs."""
    stream, view = unique_name("s"), unique_name("v")
    with psycopg.connect(ss_server.dsn, autocommit=True) as w, psycopg.connect(ss_server.dsn, autocommit=True) as sub:
        _setup(w, stream, view)
        got: list = []
        pg = sub.pgconn

        def insert_when_snapshot_seen():
            deadline = time.time() + 10
            while not got and time.time() < deadline:
                time.sleep(0.05)
            w.execute(f"INSERT INTO {stream} VALUES (2, 2)")
        pg.send_query(f"SUBSCRIBE {view}".encode())
        pg.set_single_row_mode()
        t = _later([(0.0, insert_when_snapshot_seen), (0.8, sub.cancel)])
        names, error = [], None
        while (res := _next_result(pg)) is not None:        # blocks until the next row
            if res.status == psycopg.pq.ExecStatus.SINGLE_TUPLE:
                names = [res.fname(i).decode() for i in range(res.nfields)]
                got.append(tuple(res.get_value(0, i).decode() for i in range(res.nfields)))
            elif res.status == psycopg.pq.ExecStatus.FATAL_ERROR:
                error = res.error_field(psycopg.pq.DiagnosticField.SQLSTATE)
        t.join()
        assert error == b"57014"
        assert names == ["mz_timestamp", "mz_diff", "k", "s"]
        assert _changes(got) == [[(1, 1, 1)], [(1, 2, 2)]]
        assert sub.execute("SELECT 1").fetchone() == (1,)


def test_subscribe_asyncpg_copy(ss_server, unique_name):
    stream, view = unique_name("s"), unique_name("v")
    with psycopg.connect(ss_server.dsn, autocommit=True) as w:
        _setup(w, stream, view)

        async def go():
            conn = await asyncpg.connect(ss_server.url)
            chunks: list[bytes] = []

            async def out(data: bytes) -> None:
                chunks.append(data)

            try:
                task = asyncio.ensure_future(conn.copy_from_query(f"SUBSCRIBE {view}", output=out))
                await asyncio.sleep(0.5)
                await asyncio.to_thread(w.execute, f"INSERT INTO {stream} VALUES (1, 4)")
                await asyncio.sleep(0.5)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                assert await conn.fetchval("SELECT 2") == 2
            finally:
                await conn.close()
            return [line.split("\t") for line in b"".join(chunks).decode().splitlines()]

        rows = asyncio.run(asyncio.wait_for(go(), 30))
        assert _changes(rows) == [[(1, 1, 1)], [(-1, 1, 1), (1, 1, 5)]]


@pytest.mark.parametrize("sql, sqlstate", [
    ("SUBSCRIBE {table}", "0A000"),
    ("SUBSCRIBE (SELECT 1)", "0A000"),
    ("SUBSCRIBE {view} WITH (PROGRESS)", "0A000"),
    ("SUBSCRIBE {view} WITH (SNAPSHOT = maybe)", "22023"),
    ("SUBSCRIBE no_such_view", "42P01"),
    ("COPY (SUBSCRIBE {view}) TO '/tmp/x'", "0A000"),
])
def test_subscribe_errors(ss_server, unique_name, sql, sqlstate):
    stream, view, table = unique_name("s"), unique_name("v"), unique_name("t")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        _setup(conn, stream, view)
        conn.execute(f"CREATE TABLE {table} (k int)")
        with pytest.raises(psycopg.Error) as err:
            conn.execute(sql.format(view=view, table=table))
        assert err.value.sqlstate == sqlstate
        if not sql.startswith("COPY"):
            # through Parse/Bind/Execute (binary results make psycopg use it) the same error
            with pytest.raises(psycopg.Error) as err:
                conn.cursor().execute(sql.format(view=view, table=table), binary=True)
            assert err.value.sqlstate == sqlstate
