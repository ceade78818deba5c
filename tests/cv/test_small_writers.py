"""Many small writers (issue 19): single-row INSERTs from many connections
are combined into one batch per stream (executor/stream/group_commit.py),
and every guarantee of a lone INSERT still holds: acknowledged means durable
and in every view, a bad row fails its own statement only, and a reader sees
every acknowledged row."""
from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import psycopg
import pytest

from splitstream.executor.stream.group_commit import GroupCommit, Pending

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
    with psycopg.connect(srv.dsn, autocommit=True) as conn:
        conn.execute("CREATE FOREIGN TABLE s (w int, i int) SERVER stream")
        conn.execute("CREATE VIEW by_w AS SELECT w, count(*), max(i), sum(i) FROM s GROUP BY w")
        conn.execute("CREATE VIEW total AS SELECT count(*) FROM s")
        conn.execute("CREATE TABLE t (w int, i int)")
    acked_s = [0] * WRITERS
    acked_t = [0] * WRITERS
    stop = threading.Event()

    def write(w: int) -> None:
        try:
            with psycopg.connect(srv.dsn, autocommit=True) as c:
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
    with psycopg.connect(srv.dsn, autocommit=True) as conn:
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
    with psycopg.connect(srv.dsn, autocommit=True) as conn:
        conn.execute("CREATE FOREIGN TABLE s (w int, d int) SERVER stream")
        conn.execute("CREATE VIEW quotient AS SELECT w, count(*), sum(12 / d) FROM s GROUP BY w")
        conn.execute("CREATE VIEW plain AS SELECT w, count(*) FROM s GROUP BY w")
    n_writers, rows = 40, 30
    good = [0] * n_writers
    failures: list[tuple[int, int, str]] = []

    def write(w: int) -> None:
        with psycopg.connect(srv.dsn, autocommit=True) as c:
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
    with psycopg.connect(srv.dsn, autocommit=True) as conn:
        q = dict((w, n) for w, n, _ in conn.execute("SELECT * FROM quotient"))
        p = dict(conn.execute("SELECT * FROM plain").fetchall())
    assert q == p == {w: good[w] for w in range(n_writers)}


def test_a_reader_sees_every_acknowledged_row(ss_server_factory):
    """Once an INSERT is acknowledged, another connection reading the view
    sees it: the group's rows are applied before any of them is acknowledged."""
    srv = ss_server_factory()
    with psycopg.connect(srv.dsn, autocommit=True) as conn:
        conn.execute("CREATE FOREIGN TABLE s (w int) SERVER stream")
        conn.execute("CREATE VIEW c AS SELECT w, count(*) FROM s GROUP BY w")
    n_writers, rows = 16, 25
    seen_short: list[tuple[int, int, int]] = []

    def write(w: int) -> None:
        with psycopg.connect(srv.dsn, autocommit=True) as c, \
                psycopg.connect(srv.dsn, autocommit=True) as reader:
            for i in range(1, rows + 1):
                c.execute("INSERT INTO s VALUES (%s)", (w,), prepare=True)
                got = reader.execute("SELECT count FROM c WHERE w = %s", (w,)).fetchone()
                if got is None or got[0] < i:
                    seen_short.append((w, i, got[0] if got else 0))

    for t in _writers(n_writers, write):
        t.join(120)
    assert not seen_short, seen_short[:5]
