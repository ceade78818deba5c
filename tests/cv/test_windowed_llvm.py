"""Windowed views on the LLVM backend (issue 16): a TUMBLE/HOP pane bound is
a timestamp group key, compiled as int64 microseconds; EXPLAIN shows the
kernel; results equal DuckDB and the vector path; a view whose inserts
switch between the paths keeps one group per pane (both store the key the
same way); the state survives a checkpoint and kill -9."""
from __future__ import annotations

import datetime as dt
import json
import tempfile

import psycopg
import pytest

from tests.support import windows as win
from tests.support.engine import open_engine, postgres_session, result_rows
from tests.support.windows import AGGS

#: (view, FROM, slide, size): one or two keys, which the kernel compiles
VIEWS = {
    "t1": ("window_start, k", "TUMBLE(ev, ts, INTERVAL '1 minute')", 60, 60),
    "t2": ("window_end, k", "TUMBLE(ev, ts, INTERVAL '1 minute', INTERVAL '15 seconds')", 60, 60),
    "h1": ("window_start, k", "HOP(ev, ts, INTERVAL '30 seconds', INTERVAL '2 minutes')", 30, 120),
    # three keys, window_end derived from window_start: the kernel hashes two
    "h3": ("window_start, window_end, k", "HOP(ev, ts, INTERVAL '20 seconds', INTERVAL '50 seconds')", 20, 50),
}


def _create(es) -> None:
    for name, (keys, src, _s, _z) in VIEWS.items():
        es.execute_sql(f"CREATE VIEW {name} AS SELECT {keys}, {AGGS} FROM {src} GROUP BY {keys}")


def _want(rows, name: str) -> list[tuple]:
    keys, _src, slide, size = VIEWS[name]
    offset = 15 if name == "t2" else 0
    full = win.oracle(rows, slide, size, offset)          # (start, end, k, n, sx, lo, hi)
    if keys.count("window") == 2:
        return sorted(full)
    pick = 0 if keys.startswith("window_start") else 1
    return sorted((r[pick], *r[2:]) for r in full)


def _got(rows) -> list[tuple]:
    return sorted((*(win.utc(w) for w in r[:-5]), r[-5], r[-4], int(r[-3]), r[-2], r[-1]) for r in rows)


@pytest.mark.parametrize("switch", [False, True])
def test_windowed_views_compile_and_equal_duckdb(switch):
    """backend llvm throughout, or alternating with vector batch by batch."""
    batches = win.batches(seed=42)
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(win.stream_ddl(30))
        _create(es)
        for i, b in enumerate(batches):
            backend = "vector" if switch and i % 2 else "llvm"
            es.execute_sql(f"SET executor_backend = {backend}")
            es.execute_sql("INSERT INTO ev VALUES " + ", ".join(f"({k}, {x}, '{ts.isoformat()}')" for k, x, ts in b))
            if i % 4 == 3:
                kept = win.admitted(batches[: i + 1], 30)
                for name in VIEWS:
                    got = _got(result_rows(es, f"SELECT * FROM {name}"))
                    assert got == _want(kept, name), (name, i)
                    groups = result_rows(es, f"SELECT groups FROM splitstream.views WHERE name = '{name}'")[0][0]
                    assert groups == len(got), name          # no pane split between the two paths
        for name in VIEWS:
            plan = "\n".join(r[0] for r in result_rows(es, f"EXPLAIN SELECT * FROM {name}"))
            assert "Backend: llvm" in plan and "compiled shape" in plan, plan
            assert ("+ 1 derived" in plan) == (name == "h3"), plan
            assert "1 pane computed" in plan, plan           # the kernel computes the pane from ts


def test_compiled_windowed_view_survives_kill_9(ss_server_factory):
    batches = win.batches(seed=8)
    srv = ss_server_factory()

    with psycopg.connect(srv.dsn, autocommit=True) as con:
        con.execute("SET executor_backend = llvm")
        con.execute(win.stream_ddl(30))
        con.execute(f"CREATE VIEW t1 AS SELECT window_start, k, {AGGS} FROM {VIEWS['t1'][1]} GROUP BY window_start, k")
        con.execute(f"CREATE VIEW w AS SELECT window_start, {AGGS} FROM {VIEWS['t1'][1]} GROUP BY window_start")
        for b in batches[:6]:
            win.insert_over_wire(con, b)
        con.execute("CHECKPOINT")
        for b in batches[6:9]:
            win.insert_over_wire(con, b)
    srv.restart(crash=True)
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        con.execute("SET executor_backend = vector")
        for b in batches[9:]:
            win.insert_over_wire(con, b)
        kept = win.admitted(batches, 30)
        assert _got(con.execute("SELECT * FROM t1").fetchall()) == _want(kept, "t1")
        whole = win.oracle([(1, x, ts) for _k, x, ts in kept], 60, 60, 0)
        got = sorted((win.utc(w), n, int(sx), lo, hi) for w, n, sx, lo, hi in con.execute("SELECT * FROM w").fetchall())
        assert got == sorted((r[0], *r[3:]) for r in whole)
        assert all(isinstance(r[0], dt.datetime) for r in con.execute("SELECT window_start FROM w").fetchall())


@pytest.mark.parametrize("src, ts_type, pushed", [
    ("TUMBLE(ev, ts, INTERVAL '1 minute')", "timestamptz", True),
    ("HOP(ev, ts, INTERVAL '20 seconds', INTERVAL '50 seconds')", "timestamptz", True),
    ("TUMBLE(ev, ts, INTERVAL '1 minute')", "timestamp", False),
    ("SESSION(ev, ts, INTERVAL '1 minute')", "timestamptz", False),
])
def test_which_windowed_views_are_pushed_to_spark(src, ts_type, pushed):
    """TUMBLE/HOP panes are computed by the executors (timestamptz); a SESSION
    (merged at the server) or a naive timestamp sends the stream's rows, saying why."""
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(f"CREATE FOREIGN TABLE ev (k int, x int, ts {ts_type}) SERVER stream")
        es.execute_sql(f"CREATE VIEW w AS SELECT window_start, window_end, k, count(*) FROM {src} "
                       "GROUP BY window_start, window_end, k")
        desc = json.loads(result_rows(es, "SELECT splitstream_pipeline('ev')")[0][0])
        assert desc["pushable"] is pushed, desc["reason"]
        if not pushed:
            assert ("SESSION" if "SESSION" in src else "timestamp") in desc["reason"], desc["reason"]


#: views whose pane key the kernel computes from the timestamp (the window
#: Project peeled), and one it cannot peel (an expression over the Project)
PANE_VIEWS = {
    "p_tumble": ("SELECT window_start, k, count(*) AS n, sum(x) AS sx, min(x) AS lo, max(x) AS hi, count(k) AS c "
                 "FROM TUMBLE(ev2, ts, INTERVAL '1 minute', INTERVAL '7 seconds') WHERE et = 0 AND x < 90 "
                 "GROUP BY window_start, k", True),
    "p_end": ("SELECT window_end, sum(x) AS sx, avg(x) AS ax FROM TUMBLE(ev2, ts, INTERVAL '10 seconds') "
              "GROUP BY window_end", True),
    "p_hop": ("SELECT window_start, window_end, k, count(*) AS n, sum(x) AS sx "
              "FROM HOP(ev2, ts, INTERVAL '20 seconds', INTERVAL '1 minute') WHERE et <> 1 "
              "GROUP BY window_start, window_end, k", True),
    "p_expr": ("SELECT window_start, k, sum(x * 2) AS sx FROM TUMBLE(ev2, ts, INTERVAL '1 minute') "
               "GROUP BY window_start, k", False),
}

#: rows from 1969-12-31 23:00 on (negative microseconds: pane indexes floor,
#: not truncate), 37 ms apart (~120 one-minute panes: dense guards fail and
#: tables deoptimise), NULL times, and one batch large enough for 2 threads
PANE_ROWS = ("INSERT INTO ev2 SELECT (i % 3)::smallint, (i % 17)::int, (i % 101)::int, "
             "CASE WHEN i % 53 = 0 THEN NULL ELSE timestamp '1969-12-31 23:00:00' + (i + {off}) * interval '37 ms' "
             "END FROM generate_series(1, {n}) i")


def _pane_results(backend: str) -> dict:
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql("CREATE FOREIGN TABLE ev2 (et smallint, k int, x int, ts timestamp) SERVER stream")
        for name, (sql, _peeled) in PANE_VIEWS.items():
            es.execute_sql(f"CREATE VIEW {name} AS {sql}")
        es.execute_sql(f"SET executor_backend = {backend}")
        out: dict = {}
        for off, n in ((0, 1000), (1000, 150_000), (151_000, 3000)):
            es.execute_sql(PANE_ROWS.format(off=off, n=n))
            for name in PANE_VIEWS:
                out.setdefault(name, []).append(sorted(result_rows(es, f"SELECT * FROM {name}"),
                                                       key=lambda r: tuple(map(str, r))))
        out["explain"] = {name: "\n".join(r[0] for r in result_rows(es, f"EXPLAIN SELECT * FROM {name}"))
                          for name in PANE_VIEWS}
        return out


def test_pane_keys_computed_by_the_kernel_equal_the_vector_path():
    """TUMBLE (with an offset) and HOP pane keys computed in the kernel loop
    from the timestamp, with filters, NULL times, times before 1970, many
    panes and a 2-thread batch: every read equals the vector backend's."""
    llvm, vector = _pane_results("llvm"), _pane_results("vector")
    for name, (_sql, peeled) in PANE_VIEWS.items():
        assert llvm[name] == vector[name], name
        assert len(vector[name][-1]) > 100, name          # many panes
        plan = llvm["explain"][name]
        assert "Backend: llvm" in plan, plan
        assert ("pane computed" in plan) == peeled, plan
