"""Many small writers (issue 19): single-row INSERTs from many connections
are combined into one batch per stream (executor/stream/group_commit.py),
and every guarantee of a lone INSERT still holds: acknowledged means durable
and in every view, a bad row fails its own statement only, and a reader sees
every acknowledged row."""
from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace

import asyncpg
import psycopg
import pytest

from splitstream.executor.stream.group_commit import GroupCommit, Pending
from tests.support.engine import open_engine, postgres_session, result_rows
from tests.support.restarts import connect, started_with

WRITERS = 100


def _writers(n: int, body) -> list[threading.Thread]:
    threads = [threading.Thread(target=body, args=(w,), daemon=True) for w in range(n)]
    for t in threads:
        t.start()
    return threads


def test_group_commit_combines_waiting_inserts_and_keeps_outcomes_apart():
    """The unit: while one group is being led, later inserts queue and the
    next leader takes them all; each member gets its own outcome."""
    gc = GroupCommit()
    gate = threading.Event()
    groups: list[list[int]] = []

    def lead(group, release):
        groups.append([p.batch.tag for p in group])
        if len(groups) == 1:
            gate.wait(5)
        release()
        for p in group:
            if p.batch.tag == 13:
                p.alone = True          # as when a combined batch fails to stage

    out: dict[int, str] = {}

    def submit(i: int) -> None:
        p = Pending(None, SimpleNamespace(n=1, tag=i), None, True)  # type: ignore[arg-type]
        gc.submit(p, lead)
        out[i] = "alone" if p.alone else "done"

    first = threading.Thread(target=submit, args=(0,))
    first.start()
    while not groups:
        time.sleep(0.001)
    rest = [threading.Thread(target=submit, args=(i,)) for i in range(1, 20)]
    for t in rest:
        t.start()
    time.sleep(0.2)                     # all of them queue behind the first group
    gate.set()
    for t in [first, *rest]:
        t.join(5)
    assert groups[0] == [0]
    assert sorted(i for g in groups[1:] for i in g) == list(range(1, 20))
    assert len(groups) < 10, groups     # combined, not one by one
    assert out == {i: ("alone" if i == 13 else "done") for i in range(20)}


def test_group_commit_error_reaches_every_member():
    gc = GroupCommit()

    def lead(group, release):
        raise RuntimeError("disk full")

    p = Pending(None, SimpleNamespace(n=1), None, True)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        gc.submit(p, lead)
    q = Pending(None, SimpleNamespace(n=1), None, True)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):  # the lead was passed on: the next one leads
        gc.submit(q, lead)


def test_a_hundred_writers_lose_no_acknowledged_row_to_kill9(ss_server_factory):
    """100 connections insert single rows (prepared) into a stream with two
    views and into a table; kill -9 while they run; after the restart each
    writer's rows are exactly 1..k with k its last acknowledged row (or the
    one in flight), in both views and in the table."""
    srv = ss_server_factory(extra_args=["--max-connections", str(WRITERS + 10)])
    with connect(srv) as conn:
        conn.execute("CREATE FOREIGN TABLE s (w int, i int) SERVER stream")
        conn.execute("CREATE VIEW by_w AS SELECT w, count(*), max(i), sum(i) FROM s GROUP BY w")
        conn.execute("CREATE VIEW total AS SELECT count(*) FROM s")
        conn.execute("CREATE TABLE t (w int, i int)")
    acked_s = [0] * WRITERS
    acked_t = [0] * WRITERS
    stop = threading.Event()

    def write(w: int) -> None:
        try:
            with connect(srv) as c:
                i = 0
                while not stop.is_set():
                    i += 1
                    c.execute("INSERT INTO s VALUES (%s, %s)", (w, i), prepare=True)
                    acked_s[w] = i
                    if i % 5 == 0:
                        c.execute("INSERT INTO t VALUES (%s, %s)", (w, i), prepare=True)
                        acked_t[w] = i
        except psycopg.Error:
            pass                        # the kill

    threads = _writers(WRITERS, write)
    time.sleep(4)
    srv.kill()
    stop.set()
    for t in threads:
        t.join(30)
    assert sum(acked_s) > WRITERS, "the writers barely ran"
    srv.start()
    with connect(srv) as conn:
        rows = {w: (n, m, s) for w, n, m, s in conn.execute("SELECT * FROM by_w")}
        total = conn.execute("SELECT * FROM total").fetchone()[0]
        table = dict(conn.execute("SELECT w, max(i) FROM t GROUP BY w").fetchall())
    for w in range(WRITERS):
        n, m, s = rows.get(w, (0, 0, 0))
        assert m in (acked_s[w], acked_s[w] + 1), (w, m, acked_s[w])
        assert n == m and s == m * (m + 1) // 2, (w, n, m, s)   # 1..k, each once
        if acked_t[w]:
            assert table[w] >= acked_t[w]
    assert total == sum(n for n, _, _ in rows.values())


def test_a_bad_row_fails_only_its_own_insert(ss_server_factory):
    """Writers send rows a view divides by zero on, among good ones: exactly
    those INSERTs fail with 22012, every other row counts in every view."""
    srv = ss_server_factory()
    with connect(srv) as conn:
        conn.execute("CREATE FOREIGN TABLE s (w int, d int) SERVER stream")
        conn.execute("CREATE VIEW quotient AS SELECT w, count(*), sum(12 / d) FROM s GROUP BY w")
        conn.execute("CREATE VIEW plain AS SELECT w, count(*) FROM s GROUP BY w")
    n_writers, rows = 40, 30
    good = [0] * n_writers
    failures: list[tuple[int, int, str]] = []

    def write(w: int) -> None:
        with connect(srv) as c:
            for i in range(rows):
                d = 0 if (i + w) % 7 == 0 else 1 + i % 4
                try:
                    c.execute("INSERT INTO s VALUES (%s, %s)", (w, d), prepare=True)
                    good[w] += 1
                except psycopg.Error as e:
                    failures.append((w, d, e.sqlstate or ""))

    for t in _writers(n_writers, write):
        t.join(120)
    expected_bad = sum(1 for w in range(n_writers) for i in range(rows) if (i + w) % 7 == 0)
    assert len(failures) == expected_bad
    assert all(d == 0 and state == "22012" for _w, d, state in failures), failures[:5]
    with connect(srv) as conn:
        q = dict((w, n) for w, n, _ in conn.execute("SELECT * FROM quotient"))
        p = dict(conn.execute("SELECT * FROM plain").fetchall())
    assert q == p == {w: good[w] for w in range(n_writers)}


def test_a_reader_sees_every_acknowledged_row(ss_server_factory):
    """Once an INSERT is acknowledged, another connection reading the view
    sees it: the group's rows are applied before any of them is acknowledged."""
    srv = ss_server_factory()
    with connect(srv) as conn:
        conn.execute("CREATE FOREIGN TABLE s (w int) SERVER stream")
        conn.execute("CREATE VIEW c AS SELECT w, count(*) FROM s GROUP BY w")
    n_writers, rows = 16, 25
    seen_short: list[tuple[int, int, int]] = []

    def write(w: int) -> None:
        with connect(srv) as c, \
                connect(srv) as reader:
            for i in range(1, rows + 1):
                c.execute("INSERT INTO s VALUES (%s)", (w,), prepare=True)
                got = reader.execute("SELECT count FROM c WHERE w = %s", (w,)).fetchone()
                if got is None or got[0] < i:
                    seen_short.append((w, i, got[0] if got else 0))

    for t in _writers(n_writers, write):
        t.join(120)
    assert not seen_short, seen_short[:5]


# ------------------------------------------------------------------ the lean path (scope 2)

def _lean_sessions(eng, n: int, sql: str):
    """``n`` engine sessions, each with ``sql`` prepared (as a Parse would)."""
    out = []
    for pid in range(1, n + 1):
        es = postgres_session(eng, pid=pid)
        out.append((es, es.prepare(sql, [])))
    return out


def test_lean_inserts_from_many_sessions_share_one_plan_and_group(tmp_path):
    """Twenty sessions' prepared single-row INSERTs into a stream queue
    behind one leader (held at the WAL's lock here) and go in as one or two
    groups of one shared plan; every row reaches the view."""
    with open_engine(str(tmp_path / "d"), fsync=True) as eng:
        es0 = postgres_session(eng)
        es0.execute_sql("CREATE FOREIGN TABLE s (w int, i int) SERVER stream")
        es0.execute_sql("CREATE VIEW v AS SELECT w, count(*), sum(i) FROM s GROUP BY w")
        sessions = _lean_sessions(eng, 20, "INSERT INTO s VALUES ($1, $2)")
        with eng.db._ckpt_lock:         # the first leader waits here with the lead: the others queue
            outcomes = _submit_all_async(sessions, lambda k: [k % 3, k])
            time.sleep(0.3)
        results = outcomes()
        assert [o.tag for o in results] == ["INSERT 0 1"] * 20
        assert not any(o.error or o.retry for o in results)
        targets = list(eng.lean._targets.values())
        assert len(targets) == 1 and targets[0].statements == 20 and targets[0].groups <= 2
        rows = sorted(result_rows(es0, "SELECT * FROM v"))
        assert rows == [(w, len(range(w, 20, 3)), sum(range(w, 20, 3))) for w in range(3)]


def _submit_all_async(sessions, params_of):
    """Submit one request per session now; return a function that waits for the outcomes."""
    done: list = [None] * len(sessions)
    events = [threading.Event() for _ in sessions]
    for k, (es, prepared) in enumerate(sessions):
        def cb(outcome, k=k):
            done[k] = outcome
            events[k].set()
        assert es.lean_submit(prepared, params_of(k), cb), "the lean path declined"

    def wait() -> list:
        for ev in events:
            assert ev.wait(30)
        return done
    return wait


def test_lean_table_group_with_a_bad_row_fails_only_that_statement(tmp_path):
    """A group of table inserts with one NULL into a NOT NULL column and one
    value out of a smallint's range: those two fail with 23502 and 22003,
    the others commit (defaults filled in), in one transaction."""
    with open_engine(str(tmp_path / "d"), fsync=True) as eng:
        es0 = postgres_session(eng)
        es0.execute_sql("CREATE TABLE t (a int NOT NULL, s smallint, note text DEFAULT 'dflt')")
        sessions = _lean_sessions(eng, 10, "INSERT INTO t (a, s) VALUES ($1::int8, $2::int8)")

        def params(k):
            return [None if k == 3 else k, 70000 if k == 6 else k]
        eng.db.acquire_writer()          # the leader waits for the writer lock: the rest queue
        try:
            outcomes = _submit_all_async(sessions, params)
            time.sleep(0.3)
        finally:
            eng.db.release_writer()
        results = outcomes()
        states = [o.error.sqlstate if o.error else o.tag for o in results]
        assert states == ["INSERT 0 1"] * 3 + ["23502"] + ["INSERT 0 1"] * 2 + ["22003"] + ["INSERT 0 1"] * 3
        assert "violates not-null constraint" in results[3].error.message
        assert results[6].error.message == "smallint out of range"
        assert sorted(result_rows(es0, "SELECT * FROM t")) == [(k, k, "dflt") for k in range(10) if k not in (3, 6)]
        target, = eng.lean._targets.values()
        assert target.statements == 10 and target.groups <= 2       # combined, then split for the bad rows


def test_lean_path_declines_what_it_does_not_serve(tmp_path):
    """In a transaction block, with a statement_timeout, a Spark batch key or
    without the privilege, the lean path declines and the ordinary path runs."""
    with open_engine(str(tmp_path / "d"), fsync=True) as eng:
        es0 = postgres_session(eng)
        es0.execute_sql("CREATE FOREIGN TABLE s (w int) SERVER stream")
        es0.execute_sql("CREATE ROLE r")
        (es, prepared), = _lean_sessions(eng, 1, "INSERT INTO s VALUES ($1)")
        assert prepared.lean

        def declined() -> bool:
            return not es.lean_submit(prepared, [1], lambda o: None)
        es.execute_sql("BEGIN")
        assert declined()
        es.execute_sql("ROLLBACK")
        es.execute_sql("SET statement_timeout = '5s'")
        assert declined()
        es.execute_sql("RESET statement_timeout")
        es.execute_sql("SET splitstream.batch_key = 'k1'")
        assert declined()
        es.execute_sql("RESET splitstream.batch_key")
        es.execute_sql("SET ROLE r")
        assert declined()               # planned for another role: planned again, on the ordinary path
        prepared = es.prepare("INSERT INTO s VALUES ($1)", [])
        assert declined()               # r may not insert: the ordinary path raises 42501


def test_prepared_inserts_follow_catalog_changes_as_postgres_does(ss_conn, pg_conn, unique_name):
    """A prepared INSERT (lean path) after ALTER TABLE ADD COLUMN inserts
    with the new column's default; after DROP TABLE it fails as in
    PostgreSQL; after the table is made again it inserts into the new one;
    after REVOKE it is refused (42501)."""
    t, role = unique_name("t"), unique_name("r")
    ins = f"INSERT INTO {t} (a) VALUES (%s)"

    def step(conn, sql=None, value=None):
        try:
            if sql is not None:
                conn.execute(sql)
                return "ok"
            conn.execute(ins, (value,), prepare=True)
            return "INSERT"
        except psycopg.Error as e:
            return e.sqlstate

    script = [
        (f"CREATE TABLE {t} (a int, b int)", None), (None, 1),
        (f"ALTER TABLE {t} ADD COLUMN c int DEFAULT 7", None), (None, 2),
        (f"DROP TABLE {t}", None), (None, 3),
        (f"CREATE TABLE {t} (x text, a int DEFAULT 0, z int DEFAULT 9)", None), (None, 4),
        (f"CREATE ROLE {role}", None), (f"GRANT INSERT ON {t} TO {role}", None), (f"SET ROLE {role}", None),
        (None, 5), ("RESET ROLE", None), (f"REVOKE INSERT ON {t} FROM {role}", None), (f"SET ROLE {role}", None),
        (None, 6), ("RESET ROLE", None),
    ]
    try:
        got = {name: [step(c, sql, v) for sql, v in script] for name, c in (("ss", ss_conn), ("pg", pg_conn))}
        assert got["ss"] == got["pg"], got
        assert got["ss"][5] == "42P01" and got["ss"][15] == "42501"
        assert ss_conn.execute(f"SELECT * FROM {t} ORDER BY z, a").fetchall() == \
            pg_conn.execute(f"SELECT * FROM {t} ORDER BY z, a").fetchall() == [(None, 4, 9), (None, 5, 9)]
    finally:
        for c in (ss_conn, pg_conn):
            c.execute("RESET ROLE")
            c.execute(f"DROP TABLE IF EXISTS {t}")
            c.execute(f"DROP ROLE IF EXISTS {role}")


def test_lean_path_after_a_stream_is_dropped_and_made_again(ss_conn, unique_name):
    """A prepared INSERT into a stream whose stream is dropped fails with
    42P01; made again with a view, the same prepared statement feeds it."""
    s, v = unique_name("s"), unique_name("v")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (w int) SERVER stream")
    ins = f"INSERT INTO {s} VALUES (%s)"
    ss_conn.execute(ins, (1,), prepare=True)
    ss_conn.execute(f"DROP FOREIGN TABLE {s}")
    with pytest.raises(psycopg.errors.UndefinedTable):
        ss_conn.execute(ins, (2,), prepare=True)
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (q text, w int) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT w, count(*) FROM {s} GROUP BY w")
    try:
        for _ in range(3):
            ss_conn.execute(f"INSERT INTO {s} (w) VALUES (%s)", (3,), prepare=True)
        assert ss_conn.execute(f"SELECT * FROM {v}").fetchall() == [(3, 3)]
    finally:
        ss_conn.execute(f"DROP VIEW {v}")
        ss_conn.execute(f"DROP FOREIGN TABLE {s}")


def test_many_clients_of_three_drivers_lose_nothing(ss_server_factory):
    """psycopg (Bind/Describe/Execute/Sync) and asyncpg clients insert concurrently into a stream with three views
    and into a logged table; every acknowledged row is in every view and
    the table, once."""
    srv = started_with(
        ss_server_factory(),
        "CREATE FOREIGN TABLE s (w int, i int) SERVER stream",
        "CREATE VIEW a AS SELECT w, count(*), sum(i) FROM s GROUP BY w",
        "CREATE VIEW b AS SELECT count(*), max(i) FROM s",
        "CREATE VIEW c AS SELECT i % 3 AS k, count(*) FROM s GROUP BY i % 3",
        "CREATE TABLE t (w int, i int NOT NULL)",
    )
    rows, n_psycopg, n_asyncpg = 40, 12, 12

    def psycopg_writer(w: int) -> None:
        with connect(srv) as c:
            for i in range(1, rows + 1):
                c.execute("INSERT INTO s VALUES (%s, %s)", (w, i), prepare=True)
                c.execute("INSERT INTO t VALUES (%s, %s)", (w, i), prepare=True)

    async def asyncpg_writer(w: int) -> None:
        c = await asyncpg.connect(f"postgresql://postgres@127.0.0.1:{srv.port}/postgres")
        try:
            st, tt = await c.prepare("INSERT INTO s VALUES ($1, $2)"), await c.prepare("INSERT INTO t VALUES ($1, $2)")
            for i in range(1, rows + 1):
                await st.fetch(w, i)
                await tt.fetch(w, i)
        finally:
            await c.close()

    async def asyncpg_all() -> None:
        await asyncio.gather(*(asyncpg_writer(n_psycopg + k) for k in range(n_asyncpg)))

    threads = _writers(n_psycopg, psycopg_writer)
    threads.append(threading.Thread(target=lambda: asyncio.run(asyncpg_all()), daemon=True))
    threads[-1].start()
    for t in threads:
        t.join(180)
    writers = n_psycopg + n_asyncpg
    total = rows * writers
    with connect(srv) as conn:
        assert sorted(conn.execute("SELECT * FROM a").fetchall()) == \
            [(w, rows, rows * (rows + 1) // 2) for w in range(writers)]
        assert conn.execute("SELECT * FROM b").fetchall() == [(total, rows)]
        assert sum(n for _, n in conn.execute("SELECT * FROM c").fetchall()) == total
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (total,)
        assert conn.execute("SELECT count(*) FROM (SELECT DISTINCT w, i FROM t) d").fetchone() == (total,)


LITERAL_INSERTS = [
    "INSERT INTO {t} VALUES (1, 2, 'x', 1.5, true, '2024-01-02')",
    "INSERT INTO {t} VALUES (-3, '7', 'i''s', 2, false, NULL);",
    "insert into {t} (a, c) values (4, 'abc')",
    "INSERT INTO {t} VALUES (70000, 1, 'x', 1, true, NULL)",          # smallint out of range
    "INSERT INTO {t} VALUES (5, 'seven', 'x', 1, true, NULL)",        # invalid input for integer
    "INSERT INTO {t} VALUES (6, 1, 'toolong', 1, true, NULL)",        # varchar(3)
    "INSERT INTO {t} VALUES (NULL, 1, 'x', 1, true, NULL)",           # NOT NULL
    "INSERT INTO {t} VALUES (7, true, 'x', 1, true, NULL)",           # boolean into integer
    "INSERT INTO {t} VALUES (8, 9223372036854775807, 'x', 1e3, 't', '2024-02-03')",
    "INSERT INTO {t} VALUES (9, 2, 'x', 123456789012345678901234567890, true, NULL)",
    "INSERT INTO {t} VALUES (10, 2, 'x', 1, 'maybe', NULL)",          # invalid boolean
    "INSERT INTO {t} VALUES (11, 2, 'x', 1, true, NULL, 5)",          # more expressions than columns
    "INSERT INTO {t} (a, nope) VALUES (12, 1)",                       # no such column
]


def test_simple_protocol_literal_inserts_match_postgres(ss_conn, pg_conn, unique_name):
    """Single-row INSERTs of literals (normalised and cached as one plan,
    executor/literal_inserts.py; repeated so the cached plan and the lean
    path serve them) give PostgreSQL's rows and SQLSTATEs."""
    t = unique_name("t")
    ddl = f"CREATE TABLE {t} (a smallint NOT NULL, b bigint, c varchar(3), d numeric, e boolean, f date)"
    got: dict[str, list] = {}
    for name, conn in (("ss", ss_conn), ("pg", pg_conn)):
        conn.execute(ddl)
        outcomes = []
        for _ in range(3):
            for sql in LITERAL_INSERTS:
                try:
                    conn.execute(sql.format(t=t), prepare=False)
                    outcomes.append("ok")
                except psycopg.Error as e:
                    outcomes.append(e.sqlstate)
        got[name] = outcomes + conn.execute(f"SELECT * FROM {t} ORDER BY a").fetchall()
        conn.execute(f"DROP TABLE {t}")
    assert got["ss"] == got["pg"]
    assert got["ss"].count("ok") == 3 * 5


def test_simple_protocol_literal_inserts_into_a_stream(ss_conn, unique_name):
    """Literal INSERTs into a stream with a view, from one session and
    repeated (the second on goes through the cached normalised plan)."""
    s, v = unique_name("s"), unique_name("v")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (k text, n int) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT k, count(*), sum(n) FROM {s} GROUP BY k")
    try:
        for i in range(30):
            ss_conn.execute(f"INSERT INTO {s} VALUES ('k{i % 3}', {i})", prepare=False)
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            ss_conn.execute(f"INSERT INTO {s} VALUES ('k0', 'x')", prepare=False)
        assert sorted(ss_conn.execute(f"SELECT * FROM {v}").fetchall()) == \
            [(f"k{r}", 10, sum(range(r, 30, 3))) for r in range(3)]
    finally:
        ss_conn.execute(f"DROP VIEW {v}")
        ss_conn.execute(f"DROP FOREIGN TABLE {s}")
