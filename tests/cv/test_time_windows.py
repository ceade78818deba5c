"""Event-time windows (issue 16): TUMBLE/HOP views over streams, with and
without watermarks and late rows, equal DuckDB's date_bin over a table of
the rows the stream admitted; retention bounds the state; bad input is
refused with PostgreSQL's SQLSTATEs; the state survives kill -9."""
from __future__ import annotations

import datetime as dt
import json
import random
import tempfile

import psycopg
import pytest

from tests.support import windows as win
from tests.support.engine import open_engine, postgres_session, result_rows
from tests.support.windows import AGGS, T0


#: (FROM clause in splitstream, window slide s, size s, offset s)
WINDOWS = {
    "tumble": ("TUMBLE(ev, ts, INTERVAL '1 minute')", 60, 60, 0),
    "tumble_offset": ("TUMBLE(ev, ts, INTERVAL '1 minute', INTERVAL '15 seconds')", 60, 60, 15),
    "flink": ("TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '1' MINUTE))", 60, 60, 0),
    "hop": ("HOP(ev, ts, INTERVAL '30 seconds', INTERVAL '2 minutes')", 30, 120, 0),
    "hop_uneven": ("HOP(ev, ts, INTERVAL '20 seconds', INTERVAL '50 seconds')", 20, 50, 0),
}


@pytest.mark.parametrize("backend", ["vector", "llvm"])
@pytest.mark.parametrize("delay", [None, 0, 30])
def test_windowed_views_equal_duckdb(backend, delay):
    batches = win.batches(seed=16 + (delay or 0))
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(f"SET executor_backend = {backend}")
        es.execute_sql(win.stream_ddl(delay))
        for name, (src, *_w) in WINDOWS.items():
            es.execute_sql(f"CREATE VIEW {name} AS SELECT window_start, window_end, k, {AGGS} FROM {src} "
                           "GROUP BY window_start, window_end, k")
        for i, b in enumerate(batches):
            win.insert(es, b)
            if i % 4 == 3 or i == len(batches) - 1:     # after some batches and at the end
                kept = win.admitted(batches[: i + 1], delay)
                for name, (_src, slide, size, offset) in WINDOWS.items():
                    assert win.view_rows(es, name) == win.oracle(kept, slide, size, offset), (name, i)
        late = result_rows(es, "SELECT late_rows FROM splitstream.streams WHERE name = 'ev'")[0][0]
        total = sum(len(b) for b in batches)
        assert late == total - len(win.admitted(batches, delay))
        if delay is not None and delay < 60:
            assert late > 0                 # the data does have late rows for these watermarks


def test_window_over_a_table_equals_duckdb():
    rows = [r for b in win.batches(seed=3, nbatches=3) for r in b]
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql("CREATE TABLE ev (k int, x int, ts timestamptz)")
        win.insert(es, rows)
        for name, (src, slide, size, offset) in WINDOWS.items():
            got = result_rows(es, f"SELECT window_start, window_end, k, {AGGS} FROM {src} GROUP BY 1, 2, 3 ORDER BY 1, 3")
            got = [(win.utc(a), win.utc(b), k, n, int(sx), lo, hi) for a, b, k, n, sx, lo, hi in got]
            assert got == win.oracle(rows, slide, size, offset), name


#: (FROM, retained windows once full): a window a minute for TUMBLE and SESSION (rows in the first
#: half of each minute, a 10 s gap), two a minute for HOP (sliding by 30 s)
BOUNDED = {"tumble": ("TUMBLE(ev, ts, INTERVAL '1 minute')", 5),
           "hop": ("HOP(ev, ts, INTERVAL '30 seconds', INTERVAL '1 minute')", 10),
           "session": ("SESSION(ev, ts, INTERVAL '10 seconds')", 5)}


@pytest.mark.parametrize("kind", sorted(BOUNDED))
def test_retention_bounds_the_state(kind):
    """100 windows' worth of time: the panes held and the state bytes stay at their bound."""
    src, bound = BOUNDED[kind]
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(win.stream_ddl(5))
        es.execute_sql("CREATE VIEW w WITH (retention = '5 minutes') AS SELECT window_start, window_end, k, "
                       f"count(*) AS n, sum(x) AS sx FROM {src} GROUP BY window_start, window_end, k")
        rnd = random.Random(7)
        sizes = []
        for minute in range(100):
            rows = [(k, rnd.randint(0, 9), T0 + dt.timedelta(minutes=minute, seconds=s))
                    for s in range(0, 30, 2) for k in (1, 2, 3)]
            win.insert(es, rows)
            held = result_rows(es, "SELECT count(DISTINCT window_start), count(*) FROM w")[0]
            panes, nbytes = result_rows(es, "SELECT panes, state_bytes FROM splitstream.views WHERE name = 'w'")[0]
            assert held[0] == panes <= bound and held[1] == 3 * held[0], (minute, held, panes)
            if minute >= 10:
                assert held[0] == bound, (minute, held)
            sizes.append(nbytes)
        assert max(sizes[10:]) <= 1.5 * min(sizes[10:])      # flat once the retention is full
        oldest, newest = result_rows(es, "SELECT oldest_pane, newest_pane FROM splitstream.views WHERE name = 'w'")[0]
        assert win.utc(newest) - win.utc(oldest) <= dt.timedelta(minutes=5)
        assert win.utc(newest) >= T0 + dt.timedelta(minutes=99)


BAD = [
    ("CREATE VIEW b WITH (banana = '1') AS SELECT count(*) FROM ev", "22023", "banana"),
    ("CREATE VIEW b WITH (retention = 'soon') AS SELECT window_start, count(*) FROM "
     "TUMBLE(ev, ts, INTERVAL '1 minute') GROUP BY 1", "22007", None),
    ("CREATE VIEW b WITH (retention = '-1 hour') AS SELECT window_start, count(*) FROM "
     "TUMBLE(ev, ts, INTERVAL '1 minute') GROUP BY 1", "22023", "retention"),
    ("CREATE VIEW b WITH (retention = '1 hour') AS SELECT count(*) FROM ev", "22023", "retention"),
    ("SELECT * FROM TUMBLE(ev, ts, INTERVAL 'x minutes')", "22007", None),
    ("SELECT * FROM HOP(ev, ts, INTERVAL '2 minutes', INTERVAL '1 minute')", "22023", "slide"),
    ("SELECT * FROM TUMBLE(ev, ts, INTERVAL '0 seconds')", "22023", "greater than zero"),
    ("SELECT * FROM TUMBLE(ev, ts, INTERVAL '1 month')", "0A000", "months"),
    ("SELECT date_bin(INTERVAL '0 seconds', TIMESTAMP '2024-01-01', TIMESTAMP '2000-01-01')", "22008", None),
    ("SELECT * FROM TUMBLE(ev, x, INTERVAL '1 minute')", "42883", "tumble(record, integer, interval) does not exist"),
    ("SELECT * FROM TUMBLE(ev, ts)", "42883", "tumble"),
    ("SELECT * FROM TUMBLE(nope, ts, INTERVAL '1 minute')", "42P01", None),
    ("CREATE FOREIGN TABLE s2 (k int, WATERMARK FOR k AS k - INTERVAL '1 second') SERVER stream", "42804", None),
    ("CREATE FOREIGN TABLE s2 (ts timestamptz, WATERMARK FOR ts AS ts - INTERVAL 'bad') SERVER stream",
     "22007", None),
    ("CREATE FOREIGN TABLE s2 (ts timestamptz, WATERMARK FOR nope AS nope) SERVER stream", "42703", None),
    ("CREATE FOREIGN TABLE s2 (ts timestamptz, WATERMARK FOR ts AS ts * 2) SERVER stream", "0A000", None),
]


@pytest.mark.parametrize("sql, state, words", BAD, ids=[f"{s}-{i}" for i, (_q, s, _w) in enumerate(BAD)])
def test_bad_input(sql, state, words):
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql("CREATE FOREIGN TABLE ev (k int, x int, ts timestamptz) SERVER stream")
        with pytest.raises(Exception) as info:
            es.execute_sql(sql)
        assert getattr(info.value, "sqlstate", None) == state, info.value
        if words:
            assert words in str(info.value) + str(getattr(info.value, "hint", "")), info.value
        if state == "22023":            # scope item 6: a bad window option says how to fix it
            assert getattr(info.value, "hint", None), info.value
        assert result_rows(es, "SELECT 1") == [(1,)]


def test_windowed_view_survives_kill_9(ss_server_factory):
    """State, the watermark and the late-row count after a crash; panes out of
    retention once the replayed rows moved time on are gone after recovery."""
    batches = win.batches(seed=9)
    srv = ss_server_factory()
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        con.execute(win.stream_ddl(30))
        con.execute(f"CREATE VIEW h AS SELECT window_start, window_end, k, {AGGS} FROM "
                    f"{WINDOWS['hop'][0]} GROUP BY window_start, window_end, k")
        con.execute(f"CREATE VIEW r WITH (retention = '3 minutes') AS SELECT window_start, window_end, k, {AGGS} "
                    f"FROM {WINDOWS['tumble'][0]} GROUP BY window_start, window_end, k")
        for b in batches[:8]:
            win.insert_over_wire(con, b)
        con.execute("CHECKPOINT")
        for b in batches[8:10]:
            win.insert_over_wire(con, b)
    srv.restart(crash=True)
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        for b in batches[10:]:          # the watermark goes on from where it was: late rows still dropped
            win.insert_over_wire(con, b)
        kept = win.admitted(batches, 30)
        hop = [(win.utc(a), win.utc(b), *rest) for a, b, *rest in
               con.execute("SELECT window_start, window_end, k, n, sx::int, lo, hi FROM h ORDER BY 1, 3").fetchall()]
        assert hop == win.oracle(kept, 30, 120, 0)
        want = win.oracle(kept, 60, 60, 0)
        newest = max(r[1] for r in want)
        want = [r for r in want if r[1] > newest - dt.timedelta(minutes=3)]
        got = [(win.utc(a), win.utc(b), *rest) for a, b, *rest in
               con.execute("SELECT window_start, window_end, k, n, sx::int, lo, hi FROM r ORDER BY 1, 3").fetchall()]
        assert got == want
        late = con.execute("SELECT late_rows FROM splitstream.streams WHERE name = 'ev'").fetchone()[0]
        # every late row is counted: those before the checkpoint, those of the two batches logged
        # between it and the crash (their records carry the count), and those after the restart
        assert late == sum(len(b) for b in batches) - len(kept)


def test_spark_pushdown_sends_rows_of_a_watermarked_stream():
    """Executors would fold late rows the server drops: such a stream is not pushed down, saying why."""
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(win.stream_ddl(5))
        es.execute_sql("CREATE VIEW c AS SELECT k, count(*) FROM ev GROUP BY k")
        desc = json.loads(result_rows(es, "SELECT splitstream_pipeline('ev')")[0][0])
        assert desc["pushable"] is False and "WATERMARK" in desc["reason"]
