"""SUBSCRIBE through the extended protocol (Parse/Bind/Execute) and its
delivery guarantee: every applied batch's change once, in order.

psycopg's ``cursor.stream`` (unnamed statement, libpq single-row mode), a
named prepared statement at the libpq level, and asyncpg cursors (Execute
with a row limit: the portal is suspended and resumed, possibly in the
middle of one change)."""
from __future__ import annotations

import asyncio
import threading
import time

import asyncpg
import psycopg
import pytest

from tests.clients.test_subscribe import _next_result, _setup

INSERTS = 40


def _chain(rows, start: int) -> list[int]:
    """The sums of group 1 that the changes walk through; every step must
    remove exactly the row the previous step added (nothing lost, nothing twice)."""
    sums, current, last_ts = [], start, 0
    for ts, diff, k, s in rows:
        ts, diff, k, s = int(ts), int(diff), int(k), int(s)
        assert k == 1
        if diff < 0:
            assert ts > last_ts, "each change has a later timestamp than the one before"
            assert s == current, f"removed {s} but the last row sent was {current}"
            last_ts = ts
        else:
            assert ts == last_ts, "a change's new row comes with its old row"
            current = s
            sums.append(s)
    return sums


def _insert_many(dsn: str, stream: str, n: int, threads: int = 2) -> None:
    """``n`` single-row INSERTs of x = 1 into group 1, from ``threads`` writers at once."""
    def go(k: int) -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            for _ in range(k):
                c.execute(f"INSERT INTO {stream} VALUES (1, 1)")
    ts = [threading.Thread(target=go, args=(n // threads,)) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def test_psycopg_stream_every_change_once_in_order(ss_server, unique_name):
    """Concurrent writers, one change per applied batch: the subscriber sees
    the group's sum step through every value once, never netted, never twice."""
    stream, view = unique_name("s"), unique_name("v")
    with psycopg.connect(ss_server.dsn, autocommit=True) as w, psycopg.connect(ss_server.dsn, autocommit=True) as sub:
        _setup(w, stream, view)
        rows: list = []

        def writers():
            deadline = time.time() + 10
            while not rows and time.time() < deadline:
                time.sleep(0.05)
            _insert_many(ss_server.dsn, stream, INSERTS)
            final = w.execute(f"SELECT s FROM {view} WHERE k = 1").fetchone()[0]
            deadline = time.time() + 10
            while (not rows or int(rows[-1][3]) != final) and time.time() < deadline:
                time.sleep(0.05)
            sub.cancel()

        t = threading.Thread(target=writers, daemon=True)
        t.start()
        with pytest.raises(psycopg.errors.QueryCanceled):
            for row in sub.cursor().stream(f"SUBSCRIBE {view}"):
                rows.append(row)
        t.join()
        assert rows[0][1:] == (1, 1, 1)                          # the snapshot
        sums = _chain(rows[1:], start=1)
        # the group commit may apply several INSERTs as one batch: steps grow, never repeat
        assert sums == sorted(set(sums)) and sums[-1] == 1 + INSERTS
        assert sub.execute("SELECT 1").fetchone() == (1,)


def test_named_prepared_subscribe(ss_server, unique_name):
    """Parse of a named statement, Describe, Bind/Execute: libpq's PQprepare path."""
    stream, view = unique_name("s"), unique_name("v")
    with psycopg.connect(ss_server.dsn, autocommit=True) as w, psycopg.connect(ss_server.dsn, autocommit=True) as sub:
        _setup(w, stream, view)
        pg = sub.pgconn
        res = pg.prepare(b"sub1", f"SUBSCRIBE TO {view} WITH (SNAPSHOT = false)".encode())
        assert res.status == psycopg.pq.ExecStatus.COMMAND_OK
        desc = pg.describe_prepared(b"sub1")
        assert [desc.fname(i).decode() for i in range(desc.nfields)] == ["mz_timestamp", "mz_diff", "k", "s"]
        pg.send_query_prepared(b"sub1", None)
        pg.set_single_row_mode()
        got: list = []

        def steps():
            time.sleep(0.5)
            w.execute(f"INSERT INTO {stream} VALUES (1, 2)")
            w.execute(f"INSERT INTO {stream} VALUES (2, 5)")
            deadline = time.time() + 10
            while len(got) < 3 and time.time() < deadline:
                time.sleep(0.05)
            sub.cancel()

        t = threading.Thread(target=steps, daemon=True)
        t.start()
        error = None
        while (res := _next_result(pg)) is not None:
            if res.status == psycopg.pq.ExecStatus.SINGLE_TUPLE:
                got.append(tuple(int(res.get_value(0, i).decode()) for i in range(res.nfields)))
            elif res.status == psycopg.pq.ExecStatus.FATAL_ERROR:
                error = res.error_field(psycopg.pq.DiagnosticField.SQLSTATE)
        t.join()
        assert error == b"57014"
        assert [g[1:] for g in got] == [(-1, 1, 1), (1, 1, 3), (1, 2, 5)]
        assert got[0][0] == got[1][0] < got[2][0] or got[0][0] == got[1][0] <= got[2][0]


@pytest.mark.parametrize("prefetch", [1, 4])
def test_asyncpg_cursor_resumes_suspended_portal(ss_server, unique_name, prefetch):
    """asyncpg's cursor: Execute with a row limit, PortalSuspended, Execute again;
    a limit falling inside one change resumes within it, nothing lost or repeated."""
    stream, view = unique_name("s"), unique_name("v")
    with psycopg.connect(ss_server.dsn, autocommit=True) as w:
        _setup(w, stream, view)
        w.execute(f"INSERT INTO {stream} VALUES (2, 10)")

        async def go() -> list:
            conn = await asyncpg.connect(ss_server.url)
            got: list = []

            async def insert_later() -> None:
                # an Execute with a limit waits for that many rows: the insert cannot wait for the rows
                await asyncio.sleep(0.5)
                await asyncio.to_thread(w.execute, f"INSERT INTO {stream} VALUES (1, 1), (2, 1), (3, 1)")
                await asyncio.sleep(0.3)
                await asyncio.to_thread(w.execute, f"INSERT INTO {stream} VALUES (4, 1)")

            try:
                async with conn.transaction():
                    writer = asyncio.ensure_future(insert_later())
                    async for r in conn.cursor(f"SUBSCRIBE {view}", prefetch=prefetch):
                        got.append(tuple(r))
                        if len(got) == 8:       # 2 + 5 + 1: with prefetch 4 the 2nd Execute ends mid-change
                            break
                    await writer
                assert await conn.fetchval("SELECT 3") == 3
            finally:
                await conn.close()
            return got

        got = asyncio.run(asyncio.wait_for(go(), 30))
        assert sorted(g[1:] for g in got[:2]) == [(1, 1, 1), (1, 2, 10)]
        assert sorted(g[1:] for g in got[2:7]) == [(-1, 1, 1), (-1, 2, 10), (1, 1, 2), (1, 2, 11), (1, 3, 1)]
        assert len({g[0] for g in got[2:7]}) == 1            # one batch, one timestamp
        assert got[7][1:] == (1, 4, 1) and got[7][0] > got[6][0]


def test_asyncpg_every_change_once_in_order(ss_server, unique_name):
    stream, view = unique_name("s"), unique_name("v")
    with psycopg.connect(ss_server.dsn, autocommit=True) as w:
        _setup(w, stream, view)

        async def go() -> list:
            conn = await asyncpg.connect(ss_server.url)
            got: list = []
            try:
                async with conn.transaction():
                    writers = None
                    async for r in conn.cursor(f"SUBSCRIBE {view}", prefetch=1):
                        got.append(tuple(r))
                        if writers is None:
                            writers = asyncio.ensure_future(asyncio.to_thread(_insert_many, ss_server.dsn, stream, INSERTS))
                        if r[1] > 0 and r[3] == 1 + INSERTS:
                            break
                    await writers
            finally:
                await conn.close()
            return got

        got = asyncio.run(asyncio.wait_for(go(), 60))
        sums = _chain(got[1:], start=1)
        assert sums == sorted(set(sums)) and sums[-1] == 1 + INSERTS


def _snapshot_psycopg(dsn: str, view: str) -> list[tuple]:
    """The snapshot a new SUBSCRIBE starts with (all at its first timestamp)."""
    with psycopg.connect(dsn, autocommit=True) as sub:
        rows: list = []
        t = threading.Thread(target=lambda: (time.sleep(1.0), sub.cancel()), daemon=True)
        t.start()
        with pytest.raises(psycopg.errors.QueryCanceled):
            for row in sub.cursor().stream(f"SUBSCRIBE {view}"):
                rows.append(row)
        t.join()
    assert len({r[0] for r in rows}) <= 1
    return sorted((int(d), int(k), int(s)) for _ts, d, k, s in rows)


def test_reconnect_and_restart_resubscribe_from_a_snapshot(ss_server_factory):
    """What the docs promise: no resumption, but a new SUBSCRIBE's snapshot holds
    every change made while the client was away (asyncpg reconnecting), and,
    after kill -9, every acknowledged change."""
    srv = ss_server_factory()
    with psycopg.connect(srv.dsn, autocommit=True) as w:
        _setup(w, "rs_s", "rs_v")

    async def first_then_away() -> list:
        conn = await asyncpg.connect(srv.url)
        got: list = []
        try:
            async with conn.transaction():
                async for r in conn.cursor("SUBSCRIBE rs_v", prefetch=1):
                    got.append(tuple(r))
                    break
        finally:
            await conn.close()
        return got

    got = asyncio.run(asyncio.wait_for(first_then_away(), 30))
    assert [g[1:] for g in got] == [(1, 1, 1)]
    with psycopg.connect(srv.dsn, autocommit=True) as w:       # while no one subscribes
        w.execute("INSERT INTO rs_s VALUES (1, 4), (2, 2)")
        w.execute("INSERT INTO rs_s VALUES (2, 3)")

    async def again() -> list:
        conn = await asyncpg.connect(srv.url)
        try:
            async with conn.transaction():
                rows = []
                async for r in conn.cursor("SUBSCRIBE rs_v", prefetch=2):
                    rows.append(tuple(r))
                    if len(rows) == 2:
                        return rows
        finally:
            await conn.close()
        return []

    rows = asyncio.run(asyncio.wait_for(again(), 30))
    assert sorted(r[1:] for r in rows) == [(1, 1, 5), (1, 2, 5)] and rows[0][0] == rows[1][0]
    with psycopg.connect(srv.dsn, autocommit=True) as w:
        w.execute("INSERT INTO rs_s VALUES (3, 7)")
    srv.kill()
    srv.start()
    assert _snapshot_psycopg(srv.dsn, "rs_v") == [(1, 1, 5), (1, 2, 5), (1, 3, 7)]
