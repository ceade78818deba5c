"""Small logged batches wait in their views' queues and are applied merged
(``ContinuousView.deliver(defer=True)``, ``backends/llvm/stage.merge_inputs``),
issue 19: a reader right after an acknowledgement still sees the row, in every
view, on both backends, and a read of several views sees one cut."""
from __future__ import annotations

import threading

import psycopg
import pytest

from splitstream.executor.stream import continuous
from tests.support.engine import open_engine, postgres_session, result_rows

VIEWS = {
    "v_by_a": "SELECT a, count(*) AS n, sum(b) AS s FROM {s} GROUP BY a",
    "v_all": "SELECT count(*) AS n, sum(b) AS s, max(b) AS m FROM {s}",
    "v_mod": "SELECT b % 10 AS k, avg(a) AS x FROM {s} WHERE b > 0 GROUP BY b % 10",
}


def _setup(conn, s: str, backend: str) -> dict[str, str]:
    conn.execute(f"SET executor_backend = {backend}")
    conn.execute(f"CREATE FOREIGN TABLE {s} (a int, b int) SERVER stream")
    names = {}
    for v, sql in VIEWS.items():
        names[v] = f"{s}_{v}"
        conn.execute(f"CREATE VIEW {names[v]} AS {sql.format(s=s)}")
    return names


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_a_reader_right_after_an_ack_sees_the_row_in_every_view(ss_conn, unique_name, backend):
    s = unique_name("dfs")
    v = _setup(ss_conn, s, backend)
    reader = psycopg.connect(ss_conn.info.dsn, autocommit=True)
    rows: list[tuple[int, int]] = []
    try:
        for i in range(40):
            row = (i % 3, i + 1)
            # a prepared one-row INSERT: the lean path
            ss_conn.execute(f"INSERT INTO {s} VALUES (%s, %s)", row, prepare=True)
            rows.append(row)
            n, total, top = reader.execute(f"SELECT n, s, m FROM {v['v_all']}").fetchone()
            assert (n, total, top) == (len(rows), sum(b for _a, b in rows), max(b for _a, b in rows))
            by_a = reader.execute(f"SELECT a, n, s FROM {v['v_by_a']} ORDER BY a").fetchall()
            assert by_a == [(a, sum(1 for x, _ in rows if x == a), sum(b for x, b in rows if x == a))
                            for a in sorted({x for x, _ in rows})]
            ks = reader.execute(f"SELECT k FROM {v['v_mod']} ORDER BY k").fetchall()
            assert [k for (k,) in ks] == sorted({b % 10 for _a, b in rows})
    finally:
        reader.close()


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_concurrent_writers_read_their_own_rows_and_one_cut(ss_server, unique_name, backend):
    """Each writer reads its acknowledged rows back at once; a read of two
    views in one statement sees the same number of rows in both."""
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        s = unique_name("dfc")
        v = _setup(conn, s, backend)
    errors: list[str] = []

    def writer(w: int) -> None:
        try:
            with psycopg.connect(ss_server.dsn, autocommit=True) as c:
                c.execute(f"SET executor_backend = {backend}")
                for i in range(25):
                    c.execute(f"INSERT INTO {s} VALUES (%s, %s)", (1000 + w, i + 1), prepare=True)
                    n, = c.execute(f"SELECT n FROM {v['v_by_a']} WHERE a = %s", (1000 + w,)).fetchone()
                    if n != i + 1:
                        errors.append(f"writer {w} saw {n} of its {i + 1} rows")
                    both = c.execute(f"SELECT (SELECT n FROM {v['v_all']}), "
                                     f"(SELECT sum(n) FROM {v['v_by_a']})").fetchone()
                    if both[0] != both[1]:
                        errors.append(f"two views of one statement disagree: {both}")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        assert conn.execute(f"SELECT n, s FROM {v['v_all']}").fetchone() == (8 * 25, 8 * sum(range(1, 26)))


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_queued_stages_are_applied_merged_by_the_next_read(tmp_path, backend):
    """Without reads, one-row inserts wait in the views' queues; a read
    applies them (merged on the compiled path) and sees them all; so does a
    restart (replayed from the WAL)."""
    data = str(tmp_path / "data")
    with open_engine(data) as eng:
        es = postgres_session(eng)
        es.execute_sql(f"SET executor_backend = {backend}")
        es.execute_sql("CREATE FOREIGN TABLE q_s (a int, b int) SERVER stream")
        es.execute_sql("CREATE VIEW q_v AS SELECT a, count(*), sum(b) FROM q_s GROUP BY a")
        es.execute_sql("CREATE VIEW q_w AS SELECT count(*), sum(b) FROM q_s WHERE b > 5")
        m = continuous.DEFER_STAGES - 1          # one short of a full queue: all wait for a read
        for i in range(m):
            es.execute_sql(f"INSERT INTO q_s VALUES ({i % 4}, {i})")
        views = [eng.streams.views[r.oid] for r in eng.db.committed.rels.values() if r.name in ("q_v", "q_w")]
        assert len(views) == 2 and all(len(cv.queue) == m for cv in views)
        want_v = [(a, sum(1 for i in range(m) if i % 4 == a), sum(i for i in range(m) if i % 4 == a))
                  for a in range(4)]
        want_w = [(m - 6, sum(range(6, m)))]
        assert result_rows(es, "SELECT * FROM q_v ORDER BY 1") == want_v
        assert result_rows(es, "SELECT * FROM q_w") == want_w
        assert all(len(cv.queue) == 0 for cv in views)
        for i in range(continuous.DEFER_STAGES + 3):    # a full queue is applied by the inserter
            es.execute_sql(f"INSERT INTO q_s VALUES (9, {i})")
        assert all(len(cv.queue) < continuous.DEFER_STAGES for cv in views)
        n = continuous.DEFER_STAGES + 3
        assert result_rows(es, "SELECT count FROM q_v WHERE a = 9") == [(n,)]
    with open_engine(data) as eng:
        es = postgres_session(eng)
        assert result_rows(es, "SELECT * FROM q_v WHERE a < 9 ORDER BY 1") == want_v
        assert result_rows(es, "SELECT count FROM q_v WHERE a = 9") == [(n,)]


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_queued_float_sums_merge_with_their_overflow_bound(ss_conn, unique_name, backend):
    """Queued one-row inputs of a float8 sum are concatenated at the read with
    the bound of what they add together (``stage._concat``: the merged input
    once lacked it and the view broke), and the sum is exact."""
    s, v = unique_name("dff"), unique_name("dffv")
    ss_conn.execute(f"SET executor_backend = {backend}")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (a int, f float8) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT a, count(*) AS n, sum(f) AS s FROM {s} GROUP BY a")
    values = [0.5 * i for i in range(30)]
    for i, f in enumerate(values):
        ss_conn.execute(f"INSERT INTO {s} VALUES (%s, %s)", (i % 2, f), prepare=True)
    got = ss_conn.execute(f"SELECT a, n, s FROM {v} ORDER BY a").fetchall()
    assert got == [(a, 15, sum(values[a::2])) for a in (0, 1)]
