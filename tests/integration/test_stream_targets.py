"""``pipelinedb.stream_targets`` (issue 17, scope 6): while a session sets it,
its INSERTs and COPYs into streams feed only the named continuous views and
transforms (executor/stream/targets.py).  Each view is compared with a table
oracle holding every inserted row and which views it was sent to; the
targets are logged with the rows, so a kill -9 replays the same feeding;
group commit and the lean path group only inserts with equal targets."""
from __future__ import annotations

import asyncio
import io
import random
import threading

import asyncpg
import psycopg
import pytest

VIEWS = ("a", "b", "c", "t")        # t is a transform; tv reads its output, da reads a's changes


def _ddl(conn, p: str) -> None:
    conn.execute(f"CREATE FOREIGN TABLE {p}s (k int, x int) SERVER pipelinedb")
    conn.execute(f"CREATE FOREIGN TABLE {p}s2 (k int) SERVER pipelinedb")
    conn.execute(f"CREATE VIEW {p}a AS SELECT k, count(*) AS n, sum(x) AS sx FROM {p}s GROUP BY k")
    conn.execute(f"CREATE VIEW {p}b AS SELECT k, count(*) AS n, sum(x) AS sx FROM {p}s GROUP BY k")
    conn.execute(f"CREATE VIEW {p}c WITH (ttl = '100 years', ttl_column = 'ts') AS "
                 f"SELECT k, x, arrival_timestamp AS ts FROM {p}s")
    conn.execute(f"CREATE VIEW {p}t WITH (action = transform) AS SELECT k, x * 10 AS y FROM {p}s WHERE x % 2 = 0")
    conn.execute(f"CREATE VIEW {p}tv AS SELECT k, count(*) AS n, sum(y) AS sy FROM output_of('{p}t') GROUP BY k")
    conn.execute(f"CREATE VIEW {p}da AS SELECT (new).k AS k, max((new).n) AS n FROM output_of('{p}a') GROUP BY (new).k")
    conn.execute(f"CREATE VIEW {p}e AS SELECT count(*) AS n FROM {p}s2")
    conn.execute(f"CREATE TABLE {p}o (k int, x int, ta bool, tb bool, tc bool, tt bool)")


def _views(conn, p: str) -> dict:
    q = {
        "a": f"SELECT k, n, sx FROM {p}a", "b": f"SELECT k, n, sx FROM {p}b", "c": f"SELECT k, x FROM {p}c",
        "tv": f"SELECT k, n, sy FROM {p}tv", "da": f"SELECT k, n FROM {p}da", "e": f"SELECT n FROM {p}e",
    }
    return {name: sorted(conn.execute(sql).fetchall()) for name, sql in q.items()}


def _oracle(conn, p: str) -> dict:
    o = f"{p}o"
    group = "SELECT k, count(*), sum(x) FROM {o} WHERE {f} GROUP BY k"
    return {
        "a": sorted(conn.execute(group.format(o=o, f="ta")).fetchall()),
        "b": sorted(conn.execute(group.format(o=o, f="tb")).fetchall()),
        "c": sorted(conn.execute(f"SELECT k, x FROM {o} WHERE tc").fetchall()),
        "tv": sorted(conn.execute(f"SELECT k, count(*), sum(x * 10) FROM {o} WHERE tt AND x % 2 = 0 "
                                  "GROUP BY k").fetchall()),
        "da": sorted(conn.execute(f"SELECT k, count(*) FROM {o} WHERE ta GROUP BY k").fetchall()),
        "e": [(0,)],
    }


def _choice(rng: random.Random, p: str) -> tuple[str, set[str]]:
    """A stream_targets value (some spelled with quotes, case or a view of
    another stream) and the views of the stream it feeds."""
    pick = [v for v in VIEWS if rng.random() < 0.5]
    if not pick or rng.random() < 0.2:
        return "", set(VIEWS)
    names = [f'"{p}{v}"' if rng.random() < 0.3 else f"{p}{v}".upper() if rng.random() < 0.3 else f"{p}{v}"
             for v in pick]
    if rng.random() < 0.3:
        names.append(f"{p}e")            # reads another stream: not fed by this one
    return ", ".join(names), set(pick)


def _send(conn, p: str, rows: list[tuple[int, int]], fed: set[str], how: str) -> None:
    if how == "copy":
        with conn.cursor().copy(f"COPY {p}s (k, x) FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
    elif how == "prepared":
        for r in rows:
            conn.execute(f"INSERT INTO {p}s (k, x) VALUES (%s, %s)", r, prepare=True)
    else:
        conn.execute(f"INSERT INTO {p}s (k, x) VALUES " + ", ".join(f"({k}, {x})" for k, x in rows))
    flags = tuple(v in fed for v in VIEWS)
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {p}o VALUES (%s, %s, %s, %s, %s, %s)", [r + flags for r in rows])


def _rounds(conn, p: str, seed: int, n: int) -> None:
    rng = random.Random(seed)
    for _ in range(n):
        value, fed = _choice(rng, p)
        conn.execute("SELECT set_config('pipelinedb.stream_targets', %s, false)", (value,))
        rows = [(rng.randrange(5), rng.randrange(100)) for _ in range(rng.randrange(1, 12))]
        _send(conn, p, rows, fed, rng.choice(["insert", "copy", "prepared"]))
    conn.execute("RESET pipelinedb.stream_targets")


def test_targets_match_table_oracle(ss_conn, unique_name):
    p = unique_name("st") + "_"
    _ddl(ss_conn, p)
    _rounds(ss_conn, p, seed=17, n=40)
    got, want = _views(ss_conn, p), _oracle(ss_conn, p)
    assert got == want
    assert got["a"] != got["b"]          # the rounds did target: the test can tell


def test_targets_survive_kill9(ss_server_factory):
    server = ss_server_factory()
    with psycopg.connect(server.dsn, autocommit=True) as c:
        _ddl(c, "")
        _rounds(c, "", seed=3, n=12)
        c.execute("CHECKPOINT")
        _rounds(c, "", seed=4, n=12)     # these are replayed from the WAL
        before = _views(c, "")
        assert before == _oracle(c, "")
    server.restart(crash=True)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        assert _views(c, "") == before


def test_setting_is_read_when_the_statement_runs(ss_conn, unique_name):
    """A prepared INSERT follows a SET made after PREPARE; SET LOCAL ends with
    its transaction; a bad target fails the statement and logs nothing."""
    p = unique_name("sp") + "_"
    _ddl(ss_conn, p)
    ss_conn.execute(f"PREPARE ins AS INSERT INTO {p}s (k, x) VALUES ($1, $2)")
    ss_conn.execute(f"SET pipelinedb.stream_targets TO {p}a")
    ss_conn.execute("EXECUTE ins(1, 1)")
    ss_conn.execute(f"SET pipelinedb.stream_targets TO '{p}b'")
    ss_conn.execute("EXECUTE ins(1, 2)")
    ss_conn.execute("RESET pipelinedb.stream_targets")
    with ss_conn.transaction():
        ss_conn.execute(f"SET LOCAL pipelinedb.stream_targets = '{p}a'")
        ss_conn.execute("EXECUTE ins(1, 4)")
    assert ss_conn.execute("SHOW pipelinedb.stream_targets").fetchone() == ("",)
    ss_conn.execute("EXECUTE ins(1, 8)")
    assert ss_conn.execute(f"SELECT n, sx FROM {p}a").fetchall() == [(3, 13)]
    assert ss_conn.execute(f"SELECT n, sx FROM {p}b").fetchall() == [(2, 10)]
    for value, state in ((f"{p}a, {p}nope", "42P01"), (f"{p}o", "42809"), (f"{p}s", "42809")):
        ss_conn.execute("SELECT set_config('pipelinedb.stream_targets', %s, false)", (value,))
        with pytest.raises(psycopg.Error) as e:
            ss_conn.execute("EXECUTE ins(1, 100)")
        assert e.value.sqlstate == state and e.value.diag.message_hint, value
        with pytest.raises(psycopg.Error) as e:
            with ss_conn.cursor().copy(f"COPY {p}s (k, x) FROM STDIN") as cp:
                cp.write_row((1, 100))
        assert e.value.sqlstate == state
    ss_conn.execute("RESET pipelinedb.stream_targets")
    assert ss_conn.execute(f"SELECT n, sx FROM {p}a").fetchall() == [(3, 13)]
    with pytest.raises(psycopg.Error) as e:
        ss_conn.execute(f"SET pipelinedb.stream_targets = '{p}a,,{p}b'")
    assert e.value.sqlstate == "22023"


def test_targets_feed_nothing_when_none_reads_the_stream(ss_conn, unique_name):
    p = unique_name("sn") + "_"
    _ddl(ss_conn, p)
    ss_conn.execute(f"SET pipelinedb.stream_targets = '{p}e'")
    ss_conn.execute(f"INSERT INTO {p}s (k, x) VALUES (1, 1)")
    ss_conn.execute(f"INSERT INTO {p}s2 (k) VALUES (1)")
    ss_conn.execute("RESET pipelinedb.stream_targets")
    assert ss_conn.execute(f"SELECT count(*) FROM {p}a").fetchone() == (0,)
    assert ss_conn.execute(f"SELECT n FROM {p}e").fetchone() == (1,)


def test_asyncpg_sessions_with_different_targets(ss_server, unique_name):
    """Concurrent asyncpg connections, each with its own targets, insert with
    prepared statements (the lean path and group commit take them)."""
    p = unique_name("sa") + "_"
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        _ddl(c, p)

    async def writer(w: int) -> None:
        conn = await asyncpg.connect(ss_server.url, timeout=10)
        try:
            target = ("", f"{p}a", f"{p}b, {p}c")[w % 3]
            await conn.execute(f"SET pipelinedb.stream_targets = '{target}'")
            stmt = await conn.prepare(f"INSERT INTO {p}s (k, x) VALUES ($1, $2)")
            for i in range(30):
                await stmt.fetch(w, i)
            await conn.executemany(f"INSERT INTO {p}s (k, x) VALUES ($1, $2)", [(w, i) for i in range(30, 40)])
        finally:
            await conn.close()

    async def main() -> None:
        await asyncio.gather(*(writer(w) for w in range(9)))
    asyncio.run(main())
    total = sum(range(40))
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        want_a = [(w, 40, total) for w in range(9) if w % 3 in (0, 1)]
        want_b = [(w, 40, total) for w in range(9) if w % 3 in (0, 2)]
        assert sorted(c.execute(f"SELECT k, n, sx FROM {p}a").fetchall()) == want_a
        assert sorted(c.execute(f"SELECT k, n, sx FROM {p}b").fetchall()) == want_b
        assert c.execute(f"SELECT count(*) FROM {p}c").fetchone() == (9 * 40 // 3 * 2,)
        assert sorted(c.execute(f"SELECT k, n FROM {p}tv").fetchall()) == [(w, 20) for w in range(9) if w % 3 == 0]


def test_large_copy_with_targets(ss_conn, unique_name):
    p = unique_name("sc") + "_"
    _ddl(ss_conn, p)
    ss_conn.execute(f"SET pipelinedb.stream_targets = '{p}b'")
    data = io.StringIO("".join(f"{k}\t{k * 2}\n" for k in range(1000)))
    with ss_conn.cursor().copy(f"COPY {p}s (k, x) FROM STDIN") as cp:
        cp.write(data.getvalue())
    assert ss_conn.execute(f"SELECT count(*), sum(n) FROM {p}b").fetchone() == (1000, 1000)
    assert ss_conn.execute(f"SELECT count(*) FROM {p}a").fetchone() == (0,)


def test_backfill_sliding_window_and_deactivated_targets(ss_conn, unique_name):
    """A sliding-window view can be a target; a deactivated target is still
    not fed; a view created later with backfill takes only the held rows that
    were sent to every view (the targeted ones were addressed to others)."""
    p = unique_name("sb") + "_"
    ss_conn.execute(f"CREATE FOREIGN TABLE {p}s (x int) SERVER stream OPTIONS (capacity '1000')")
    ss_conn.execute(f"CREATE VIEW {p}w WITH (sw = '1 hour') AS SELECT count(*) AS n, sum(x) AS sx FROM {p}s")
    ss_conn.execute(f"CREATE VIEW {p}a AS SELECT count(*) AS n FROM {p}s")
    ss_conn.execute(f"CREATE VIEW {p}off AS SELECT count(*) AS n FROM {p}s")
    ss_conn.execute(f"SELECT pipelinedb.deactivate('{p}off')")
    ss_conn.execute(f"SET pipelinedb.stream_targets = '{p}w, {p}off'")
    ss_conn.execute(f"INSERT INTO {p}s (x) VALUES (1), (2), (3)")
    ss_conn.execute("RESET pipelinedb.stream_targets")
    ss_conn.execute(f"INSERT INTO {p}s (x) VALUES (10), (20)")
    assert ss_conn.execute(f"SELECT n, sx FROM {p}w").fetchone() == (5, 36)
    assert ss_conn.execute(f"SELECT n FROM {p}a").fetchone() == (2,)
    assert ss_conn.execute(f"SELECT n FROM {p}off").fetchone() == (0,)
    ss_conn.execute(f"CREATE VIEW {p}bf WITH (backfill = true) AS SELECT count(*) AS n, sum(x) AS sx FROM {p}s")
    assert ss_conn.execute(f"SELECT n, sx FROM {p}bf").fetchone() == (2, 30)


def test_literal_inserts_from_concurrent_sessions(ss_server, unique_name):
    """Simple-protocol single-row INSERTs of literals (normalised to one
    cached plan and taken by the lean path, executor/literal_inserts.py) from
    concurrent sessions with different targets: each feeds its own views."""
    p = unique_name("sl") + "_"
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        _ddl(c, p)
    errors: list = []

    def writer(w: int) -> None:
        try:
            with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
                conn.execute(f"SET pipelinedb.stream_targets = '{('', f'{p}a', f'{p}b')[w % 3]}'")
                for i in range(40):
                    conn.execute(f"INSERT INTO {p}s (k, x) VALUES ({w}, {i})", prepare=False)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors
    total = sum(range(40))
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        assert sorted(c.execute(f"SELECT k, n, sx FROM {p}a").fetchall()) == \
            [(w, 40, total) for w in range(6) if w % 3 in (0, 1)]
        assert sorted(c.execute(f"SELECT k, n, sx FROM {p}b").fetchall()) == \
            [(w, 40, total) for w in range(6) if w % 3 in (0, 2)]
