"""LISTEN / NOTIFY / pg_notify with real clients, against splitstream and
PostgreSQL 15 alike where PostgreSQL defines the answer: delivery at commit
(none on rollback), folding of duplicates, the sender hearing itself,
delivery to an idle listener, the errors and pg_listening_channels().
"""
from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from pathlib import Path

import asyncpg
import psycopg
import pytest

from .conftest import psql

JAVA = shutil.which("java")
PGJDBC = Path("/usr/share/java/postgresql.jar")
JAVA_DIR = Path(__file__).parent / "java"
needs_java = pytest.mark.skipif(JAVA is None or not PGJDBC.exists(), reason="needs java and libpostgresql-jdbc-java")


@pytest.fixture(params=["splitstream", "pg15"])
def server(request):
    """Each behaviour test runs on both servers: same client code, same expectations."""
    return request.getfixturevalue("ss_server" if request.param == "splitstream" else "pg15")


def _connect(server) -> psycopg.Connection:
    return psycopg.connect(server.dsn, autocommit=True, connect_timeout=10)


def _received(conn: psycopg.Connection, timeout: float = 0.5) -> list[tuple[str, str, int]]:
    """Every notification the listener gets within ``timeout`` seconds (it sits idle meanwhile)."""
    return [(n.channel, n.payload, n.pid) for n in conn.notifies(timeout=timeout)]


def test_delivered_to_idle_listener_with_sender_pid(server, unique_name):
    chan = unique_name("c")
    with _connect(server) as listener, _connect(server) as sender:
        listener.execute(f"LISTEN {chan}")
        sender.execute(f"NOTIFY {chan}, 'hello'")
        got = _received(listener, timeout=2)
        assert got == [(chan, "hello", sender.info.backend_pid)]
        sender.execute("SELECT pg_notify(%s, %s)", (chan, "from function"))
        sender.execute(f"NOTIFY {chan}")
        assert _received(listener) == [(chan, "from function", sender.info.backend_pid),
                                       (chan, "", sender.info.backend_pid)]


def test_delivered_at_commit_dropped_on_rollback(server, unique_name):
    chan = unique_name("c")
    with _connect(server) as listener, _connect(server) as sender:
        listener.execute(f"LISTEN {chan}")
        sender.execute("BEGIN")
        sender.execute(f"NOTIFY {chan}, 'kept'")
        assert _received(listener) == []          # not before the commit
        sender.execute("COMMIT")
        assert [p for _c, p, _pid in _received(listener)] == ["kept"]
        sender.execute("BEGIN")
        sender.execute(f"NOTIFY {chan}, 'dropped'")
        sender.execute("ROLLBACK")
        assert _received(listener) == []


def test_duplicates_folded_and_savepoints(server, unique_name):
    chan, other = unique_name("c"), unique_name("d")
    with _connect(server) as listener, _connect(server) as sender:
        listener.execute(f"LISTEN {chan}")
        listener.execute(f"LISTEN {other}")
        with sender.transaction():
            for sql in (f"NOTIFY {chan}, 'a'", f"NOTIFY {chan}, 'a'", f"NOTIFY {chan}, 'b'",
                        f"SELECT pg_notify('{chan}', 'a')", f"NOTIFY {other}, 'a'", f"NOTIFY {chan}, 'b'"):
                sender.execute(sql)
            sender.execute(f"NOTIFY {chan}, 'x'")
            sender.execute("SAVEPOINT s")
            sender.execute(f"NOTIFY {chan}, 'y'")
            sender.execute("ROLLBACK TO SAVEPOINT s")
            sender.execute("SAVEPOINT t")
            sender.execute(f"NOTIFY {chan}, 'z'")
            sender.execute("RELEASE SAVEPOINT t")
        got = [(c == chan, p) for c, p, _pid in _received(listener)]
        assert got == [(True, "a"), (True, "b"), (False, "a"), (True, "x"), (True, "z")]


def test_sender_hears_itself_and_transactional_listen(server, unique_name):
    chan = unique_name("c")
    with _connect(server) as conn:
        conn.execute("BEGIN")
        conn.execute(f"LISTEN {chan}")
        conn.execute("ROLLBACK")
        assert conn.execute("SELECT pg_listening_channels()").fetchall() == []
        conn.execute(f"LISTEN {chan}")
        conn.execute(f"NOTIFY {chan}, 'me'")
        assert _received(conn) == [(chan, "me", conn.info.backend_pid)]
        with conn.transaction():                   # LISTEN and NOTIFY in one transaction: heard
            conn.execute(f"UNLISTEN {chan}")
            conn.execute(f"LISTEN {chan}")
            conn.execute(f"NOTIFY {chan}, 'same txn'")
        assert [p for _c, p, _pid in _received(conn)] == ["same txn"]
        conn.execute(f"UNLISTEN {chan}")
        conn.execute(f"NOTIFY {chan}, 'unheard'")
        assert _received(conn) == []


def test_not_delivered_inside_a_transaction_block(server, unique_name):
    chan = unique_name("c")
    with _connect(server) as listener, _connect(server) as sender:
        listener.execute(f"LISTEN {chan}")
        listener.execute("BEGIN")
        sender.execute(f"NOTIFY {chan}, 'later'")
        assert _received(listener) == []
        listener.execute("COMMIT")
        assert [p for _c, p, _pid in _received(listener)] == ["later"]


def test_listening_channels(server):
    with _connect(server) as conn:
        for sql in ("LISTEN b_chan", 'LISTEN "Mixed Case"', "LISTEN A_chan", "LISTEN b_chan"):
            conn.execute(sql)
        rows = [r[0] for r in conn.execute("SELECT * FROM pg_listening_channels()").fetchall()]
        assert sorted(rows) == sorted(["b_chan", "Mixed Case", "a_chan"])
        conn.execute("UNLISTEN b_chan")
        conn.execute("UNLISTEN never_listened")
        assert sorted(r[0] for r in conn.execute("SELECT pg_listening_channels()").fetchall()) == ["Mixed Case", "a_chan"]
        conn.execute("UNLISTEN *")
        assert conn.execute("SELECT count(*) FROM pg_listening_channels()").fetchone() == (0,)


@pytest.mark.parametrize("sql, sqlstate, message", [
    ("NOTIFY c, '" + "x" * 8000 + "'", "22023", "payload string too long"),
    ("SELECT pg_notify('c', repeat('é', 4000))", "22023", "payload string too long"),
    ("SELECT pg_notify('', 'x')", "22023", "channel name cannot be empty"),
    ("SELECT pg_notify(NULL, 'x')", "22023", "channel name cannot be empty"),
    ("SELECT pg_notify(repeat('c', 64), 'x')", "22023", "channel name too long"),
    ("NOTIFY c, 1", "42601", 'syntax error at or near "1"'),
    ("NOTIFY c 'x'", "42601", "syntax error at or near \"'x'\""),
    ("LISTEN", "42601", "syntax error at end of input"),
    ('LISTEN ""', "42601", 'zero-length delimited identifier at or near """"'),
])
def test_errors(server, sql, sqlstate, message):
    with _connect(server) as conn:
        with pytest.raises(psycopg.Error) as err:
            conn.execute(sql)
        assert (err.value.sqlstate, err.value.diag.message_primary) == (sqlstate, message)
        conn.execute("NOTIFY c, '" + "x" * 7999 + "'")      # the longest payload passes
        conn.execute("SELECT pg_notify('c', NULL)")


def test_asyncpg_add_listener(server, unique_name):
    chan = unique_name("c")

    async def go():
        listener = await asyncpg.connect(host=server.host, port=server.port, user="postgres", database="postgres")
        sender = await asyncpg.connect(host=server.host, port=server.port, user="postgres", database="postgres")
        got: asyncio.Queue = asyncio.Queue()
        try:
            await listener.add_listener(chan, lambda _c, pid, ch, payload: got.put_nowait((pid, ch, payload)))
            async with sender.transaction():
                await sender.execute(f"NOTIFY {chan}, 'one'")
                await sender.execute("SELECT pg_notify($1, $2)", chan, "two")
                await asyncio.sleep(0.2)
                assert got.empty()
            first = await asyncio.wait_for(got.get(), 5)
            second = await asyncio.wait_for(got.get(), 5)
            pid = sender.get_server_pid()
            assert [first, second] == [(pid, chan, "one"), (pid, chan, "two")]
            await listener.remove_listener(chan, lambda *_a: None)
        finally:
            await listener.close()
            await sender.close()

    asyncio.run(asyncio.wait_for(go(), 30))


def test_psql_prints_notification(server, unique_name):
    chan = unique_name("c")
    out = psql(server.host, server.port, f"LISTEN {chan}", f"NOTIFY {chan}, 'p q'")
    m = re.search(rf'Asynchronous notification "{chan}" with payload "p q" received from server process with PID (\d+)\.', out)
    assert m is not None, out


@needs_java
def test_pgjdbc_get_notifications(server, unique_name):
    chan = unique_name("c")
    url = f"jdbc:postgresql://{server.host}:{server.port}/postgres"
    res = subprocess.run([JAVA, "-cp", str(PGJDBC), str(JAVA_DIR / "ListenNotify.java"), url, chan],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.split()
    pid = lines[0]
    assert lines[1:] == [f"{chan}|one|{pid}", f"{chan}|two|{pid}"], res.stdout


# ------------------------------------------------------------------ continuous views: WITH (notify = 'channel')

def test_view_notify_option(ss_server, unique_name):
    """One notification per applied batch (INSERT, COPY), payload the view's name; once
    it arrives, a read of the view already holds the batch."""
    stream, view, quiet, chan = unique_name("s"), unique_name("v"), unique_name("q"), unique_name("c")
    with _connect(ss_server) as listener, _connect(ss_server) as writer:
        writer.execute(f"CREATE FOREIGN TABLE {stream} (k int, x int) SERVER stream")
        writer.execute(f"CREATE VIEW {view} WITH (notify = '{chan}') AS SELECT k, sum(x) AS s FROM {stream} GROUP BY k")
        writer.execute(f"CREATE VIEW {quiet} AS SELECT count(*) FROM {stream}")
        listener.execute(f"LISTEN {chan}")
        writer.execute(f"INSERT INTO {stream} VALUES (1, 10), (2, 20)")
        got = _received(listener, timeout=2)
        assert got == [(chan, view, writer.info.backend_pid)]
        assert listener.execute(f"SELECT k, s FROM {view} ORDER BY k").fetchall() == [(1, 10), (2, 20)]
        with writer.cursor().copy(f"COPY {stream} FROM STDIN") as cp:
            for i in range(1000):
                cp.write_row((1, i))
        assert [p for _c, p, _pid in _received(listener, timeout=2)] == [view]
        assert listener.execute(f"SELECT s FROM {view} WHERE k = 1").fetchone() == (10 + sum(range(1000)),)
        writer.execute("BEGIN")          # a failed statement applies nothing and notifies nobody
        with pytest.raises(psycopg.Error):
            writer.execute(f"INSERT INTO {stream} VALUES (1, 1 / 0)")
        writer.execute("ROLLBACK")
        assert _received(listener) == []


def test_view_notify_option_errors(ss_server, unique_name):
    stream, table = unique_name("s"), unique_name("t")
    with _connect(ss_server) as conn:
        conn.execute(f"CREATE FOREIGN TABLE {stream} (k int) SERVER stream")
        conn.execute(f"CREATE TABLE {table} (k int)")
        for sql, message in [
            (f"CREATE VIEW v1 WITH (notify = '') AS SELECT k, count(*) FROM {stream} GROUP BY k", "channel name cannot be empty"),
            (f"CREATE VIEW v2 WITH (notify = '{'c' * 64}') AS SELECT k, count(*) FROM {stream} GROUP BY k", "channel name too long"),
            (f"CREATE VIEW v3 WITH (notify = 'c') AS SELECT k FROM {table}", 'option "notify" needs a continuous view'),
        ]:
            with pytest.raises(psycopg.Error) as err:
                conn.execute(sql)
            assert (err.value.sqlstate, err.value.diag.message_primary) == ("22023", message)


def test_view_notify_on_spark_partial_merge(ss_server, unique_name):
    """A Spark executor's merged partial state changes the view like a batch: one notification."""
    import json
    from splitstream.connectors.spark import describe

    s, chan = unique_name("ev"), unique_name("c")
    with _connect(ss_server) as conn, _connect(ss_server) as listener:
        conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
        conn.execute(f"CREATE VIEW {s}_v WITH (notify = '{chan}') AS SELECT k, count(*) AS n, sum(x) AS sx FROM {s} GROUP BY k")
        listener.execute(f"LISTEN {chan}")
        desc = describe(ss_server.url, s)
        # one pipeline's state for groups k=1 (3 rows, x summing to 30) and k=2 (1 row, 5)
        counts, sums = [3, 1], [30, 5]
        payload = dict(fingerprint=desc["fingerprint"], view_oid=desc["views"][0]["oid"], pipeline=0, groups=2,
                       keys=[[1, 2]], rows=counts, states=[{"cnt": counts}, {"sum": sums, "cnt": counts}])
        # the batch key is the server's (Spark exactly-once): unique, as other tests share the server
        conn.execute("SELECT splitstream_merge_partial(%s, %s, %s)", (s, unique_name("key"), json.dumps(payload)))
        assert [p for _c, p, _pid in _received(listener, timeout=2)] == [f"{s}_v"]
        assert listener.execute(f"SELECT k, n, sx FROM {s}_v ORDER BY k").fetchall() == [(1, 3, 30), (2, 1, 5)]
