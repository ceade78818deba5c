"""Sliding windows over arrival time (issue 16): ``WITH (sw, step_factor)``,
PipelineDB's ``arrival_timestamp > clock_timestamp() - interval`` twin,
``ttl``/``ttl_column``, bad input, splitstream.views, recovery.

The server runs with the test clock (SPLITSTREAM_TEST_CLOCK=1), so the test
ticks time: each batch is stamped with the clock, and each read decides
which panes are live by it.  The oracle is a table holding the same rows
with their arrival times: a pane of width ``w`` covers the arrival times
``(p·w, (p+1)·w]`` and is live while ``p >= floor((now - sw) / w)``; when
``now - sw`` falls on a pane edge (most ticks below) that is exactly
``arrival_timestamp > now - sw``.
"""
from __future__ import annotations

import datetime as dt
import random

import psycopg
import pytest

from tests.support.servers import SplitstreamServer

T0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
US = dt.timedelta(microseconds=1)


@pytest.fixture(scope="module")
def clock_server(tmp_path_factory):
    server = SplitstreamServer(tmp_path_factory.mktemp("sw") / "data", env={"SPLITSTREAM_TEST_CLOCK": "1"})
    server.start(timeout=60)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def conn(clock_server):
    c = psycopg.connect(clock_server.dsn, autocommit=True, connect_timeout=10)
    try:
        yield c
    finally:
        c.close()


def tick(conn, t: dt.datetime) -> None:
    conn.execute("SELECT splitstream_test_clock(%s)", (t,))


def live_edge(now: dt.datetime, sw: dt.timedelta, width: dt.timedelta) -> dt.datetime:
    """Arrival times after this are in the window (see the module docstring)."""
    lo = (now - sw - T0) // width          # T0 is a multiple of every width used
    return T0 + lo * width


AGGS = "count(*), min(x), max(x), sum(x), avg(x)"
BOOL_AGGS = "count(*), bool_and(b), bool_or(b), sum(f), max(f)"


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_sw_view_and_arrival_twin_equal_table_after_every_batch_and_tick(conn, unique_name, backend):
    s, t = unique_name("s"), unique_name("t")
    v, w, vb = unique_name("v"), unique_name("w"), unique_name("vb")
    sw, width = dt.timedelta(seconds=10), dt.timedelta(milliseconds=500)     # step_factor 5
    tick(conn, T0)
    conn.execute(f"SET executor_backend = {backend}")
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int, f float8, b bool) SERVER pipelinedb")
    conn.execute(f"CREATE TABLE {t} (k int, x int, f float8, b bool, at timestamptz)")
    conn.execute(f"CREATE VIEW {v} WITH (sw = '10 seconds') AS SELECT k, {AGGS} FROM {s} GROUP BY k")
    conn.execute(f"CREATE VIEW {w} AS SELECT k, {AGGS} FROM {s} "
                 f"WHERE arrival_timestamp > clock_timestamp() - interval '10 seconds' GROUP BY k")
    conn.execute(f"CREATE VIEW {vb} WITH (sw = '10 seconds', step_factor = 5) AS SELECT k, {BOOL_AGGS} FROM {s} GROUP BY k")
    rng = random.Random(16)
    now = T0

    def check() -> None:
        edge = live_edge(now, sw, width)
        want = sorted(conn.execute(f"SELECT k, {AGGS} FROM {t} WHERE at > %s GROUP BY k", (edge,)).fetchall())
        assert sorted(conn.execute(f"SELECT * FROM {v}").fetchall()) == want, now
        assert sorted(conn.execute(f"SELECT * FROM {w}").fetchall()) == want, now
        want_b = sorted(conn.execute(f"SELECT k, {BOOL_AGGS} FROM {t} WHERE at > %s GROUP BY k", (edge,)).fetchall())
        assert sorted(conn.execute(f"SELECT * FROM {vb}").fetchall()) == want_b, now

    for step in range(70):
        # mostly whole steps (edges exact), sometimes in between, sometimes a long gap
        now += rng.choice([width, width, 2 * width, dt.timedelta(milliseconds=130), 7 * width, 25 * width])
        tick(conn, now)
        check()
        rows = [(rng.randrange(6), rng.randrange(-1000, 1000), rng.randrange(-64, 64) / 4, rng.random() < 0.8)
                for _ in range(rng.randrange(1, 40))]
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {s} (k, x, f, b) VALUES (%s, %s, %s, %s)", rows)
            cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s, %s, %s)", [r + (now,) for r in rows])
        check()


def test_sw_and_twin_store_one_definition(conn, unique_name):
    s, v, w = unique_name("s"), unique_name("v"), unique_name("w")
    tick(conn, T0)
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int) SERVER pipelinedb")
    conn.execute(f"CREATE VIEW {v} WITH (sw = '1 minute') AS SELECT k, count(*) FROM {s} WHERE k > 0 GROUP BY k")
    conn.execute(f"CREATE VIEW {w} AS SELECT k, count(*) FROM {s} "
                 f"WHERE k > 0 AND arrival_timestamp > clock_timestamp() - interval '1 minute' GROUP BY k")
    defs = conn.execute("SELECT c.relname, pg_get_viewdef(c.oid), c.reloptions FROM pg_class c "
                        "WHERE relname IN (%s, %s) ORDER BY relname = %s", (v, w, w)).fetchall()
    assert defs[0][1:] == defs[1][1:]
    explain_v = conn.execute(f"EXPLAIN SELECT * FROM {v}").fetchall()
    explain_w = conn.execute(f"EXPLAIN SELECT * FROM {w}").fetchall()
    assert [r[0].replace(v, "V") for r in explain_v] == [r[0].replace(w, "V") for r in explain_w]


@pytest.mark.parametrize("where", [
    "k > 0 OR arrival_timestamp > clock_timestamp() - interval '1 minute'",
    "arrival_timestamp > clock_timestamp() - interval '1 minute' AND arrival_timestamp > clock_timestamp() - interval '2 minutes'",
])
def test_arrival_window_elsewhere_is_refused(conn, unique_name, where):
    s = unique_name("s")
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int) SERVER pipelinedb")
    with pytest.raises(psycopg.Error) as e:
        conn.execute(f"CREATE VIEW {unique_name('v')} AS SELECT count(*) FROM {s} WHERE {where}")
    assert e.value.sqlstate == "0A000" and e.value.diag.message_hint


def test_twin_created_again_from_the_same_text_keeps_its_window(conn, unique_name):
    """Taking the filter out of the definition leaves the statement as written: run again, it is a window again."""
    s, v = unique_name("s"), unique_name("v")
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int) SERVER pipelinedb")
    create = (f"CREATE VIEW {v} AS SELECT count(*) FROM {s} "
              f"WHERE arrival_timestamp > clock_timestamp() - interval '1 minute'")
    for _ in range(2):
        conn.execute(create)
        assert conn.execute("SELECT \"window\" FROM splitstream.views WHERE name = %s", (v,)).fetchone() == \
            ("sw 00:01:00 step 00:00:03",)
        conn.execute(f"DROP VIEW {v}")


def test_sw_over_a_projection_that_drops_arrival_time(conn, unique_name):
    """The pane is computed below a projection (x * 2) that did not keep arrival_timestamp."""
    s, v = unique_name("s"), unique_name("v")
    tick(conn, T0)
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER pipelinedb")
    conn.execute(f"CREATE VIEW {v} WITH (sw = '1 second', step_factor = 50) AS "
                 f"SELECT k2, sum(y) FROM (SELECT k % 2 AS k2, x * 2 AS y FROM {s}) q GROUP BY k2")
    conn.execute(f"INSERT INTO {s} VALUES (1, 1), (2, 2), (3, 3)")
    tick(conn, T0 + dt.timedelta(milliseconds=500))
    conn.execute(f"INSERT INTO {s} VALUES (1, 10)")
    assert sorted(conn.execute(f"SELECT * FROM {v}").fetchall()) == [(0, 4), (1, 28)]
    tick(conn, T0 + dt.timedelta(seconds=1))          # the rows stamped at T0 leave
    assert sorted(conn.execute(f"SELECT * FROM {v}").fetchall()) == [(1, 20)]
    tick(conn, T0 + dt.timedelta(seconds=2))
    assert conn.execute(f"SELECT * FROM {v}").fetchall() == []


def test_reads_in_one_statement_see_one_clock(conn, unique_name):
    s, v = unique_name("s"), unique_name("v")
    tick(conn, T0)
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int) SERVER pipelinedb")
    conn.execute(f"CREATE VIEW {v} WITH (sw = '1 second') AS SELECT count(*) FROM {s}")
    conn.execute(f"INSERT INTO {s} VALUES (1), (2)")
    conn.execute("BEGIN")
    assert conn.execute(f"SELECT (SELECT count FROM {v}), (SELECT count FROM {v})").fetchone() == (2, 2)
    conn.execute("COMMIT")
    tick(conn, T0 + dt.timedelta(seconds=5))
    assert conn.execute(f"SELECT count FROM {v}").fetchone() == (0,)


@pytest.mark.parametrize("options, sqlstate, words", [
    ("sw = '0 seconds'", "22023", "sw"),
    ("sw = '-1 minute'", "22023", "sw"),
    ("sw = '1 minute', step_factor = 0", "22023", "step_factor"),
    ("sw = '1 minute', step_factor = 51", "22023", "step_factor"),
    ("sw = '1 minute', step_factor = 'many'", "22023", "step_factor"),
    ("step_factor = 10", "22023", "step_factor"),
    ("sw = 'banana'", "22007", "interval"),
    ("ttl = 'soon', ttl_column = 'k'", "22007", "interval"),
    ("ttl = '0 seconds', ttl_column = 'k'", "22023", "ttl"),
    ("ttl = '1 hour'", "22023", "ttl_column"),
    ("sw = '1 minute', ttl = '1 hour', ttl_column = 'k'", "22023", "ttl"),
    ("colour = 'blue'", "22023", "colour"),
])
def test_bad_window_options(conn, unique_name, options, sqlstate, words):
    s = unique_name("s")
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int) SERVER pipelinedb")
    with pytest.raises(psycopg.Error) as e:
        conn.execute(f"CREATE VIEW {unique_name('v')} WITH ({options}) AS SELECT k, count(*) FROM {s} GROUP BY k")
    assert e.value.sqlstate == sqlstate
    assert words in e.value.diag.message_primary
    if sqlstate == "22023":
        assert e.value.diag.message_hint
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_views_shows_window_panes_and_bounded_state(conn, unique_name):
    """100 windows' worth of time: the panes held and the state bytes stay at their bound."""
    s, v = unique_name("s"), unique_name("v")
    tick(conn, T0)
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int) SERVER pipelinedb")
    conn.execute(f"CREATE VIEW {v} WITH (sw = '2 seconds', step_factor = 10) AS SELECT k, count(*) FROM {s} GROUP BY k")
    info = "SELECT \"window\", panes, state_bytes, oldest_pane, newest_pane FROM splitstream.views WHERE name = %s"
    assert conn.execute(info, (v,)).fetchone()[:2] == ("sw 00:00:02 step 00:00:00.2", 0)
    width = dt.timedelta(milliseconds=200)
    sizes = []
    now = T0
    for i in range(1000):          # 200 s of time, 100 windows of 2 s
        now = T0 + (i + 1) * width
        tick(conn, now)
        conn.execute(f"INSERT INTO {s} SELECT g FROM generate_series(1, 50) g")
        window, panes, nbytes, oldest, newest = conn.execute(info, (v,)).fetchone()
        assert panes <= 11, (i, panes)           # 10 panes per window, plus the one the clock is in
        sizes.append(nbytes)
        if i >= 10:
            assert newest == now - width and oldest == now - 10 * width
    assert max(sizes[500:]) <= 1.2 * max(sizes[20:500])
    assert conn.execute(f"SELECT sum(count) FROM {v}").fetchone() == (500,)


def test_ttl_drops_old_groups(conn, unique_name):
    s, v = unique_name("s"), unique_name("v")
    tick(conn, T0)
    conn.execute(f"CREATE FOREIGN TABLE {s} (ts timestamptz, x int) SERVER pipelinedb")
    conn.execute(f"CREATE VIEW {v} WITH (ttl = '2 minutes', ttl_column = 'minute') AS "
                 f"SELECT date_trunc('minute', ts) AS minute, sum(x) FROM {s} GROUP BY minute")
    for m in range(5):
        conn.execute(f"INSERT INTO {s} VALUES (%s, %s)", (T0 + dt.timedelta(minutes=m), m + 1))
    assert len(conn.execute(f"SELECT * FROM {v}").fetchall()) == 5
    tick(conn, T0 + dt.timedelta(minutes=4, seconds=30))
    got = sorted(conn.execute(f"SELECT * FROM {v}").fetchall())
    assert got == [(T0 + dt.timedelta(minutes=3), 4), (T0 + dt.timedelta(minutes=4), 5)]
    assert conn.execute("SELECT \"window\" FROM splitstream.views WHERE name = %s", (v,)).fetchone() == \
        ("ttl 00:02:00 on minute",)


def test_window_options_need_a_stream(conn, unique_name):
    s, t, v = unique_name("s"), unique_name("t"), unique_name("v")
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int) SERVER pipelinedb")
    conn.execute(f"CREATE TABLE {t} (k int)")
    conn.execute(f"CREATE VIEW {v} AS SELECT k, count(*) FROM {s} GROUP BY k")
    for source in (t, v):
        with pytest.raises(psycopg.Error) as e:
            conn.execute(f"CREATE VIEW {unique_name('w')} WITH (sw = '1 minute') AS SELECT k FROM {source}")
        assert e.value.sqlstate == "0A000" and e.value.diag.message_hint


def test_ttl_column_must_be_a_grouped_timestamp(conn, unique_name):
    s = unique_name("s")
    conn.execute(f"CREATE FOREIGN TABLE {s} (ts timestamptz, x int) SERVER pipelinedb")
    with pytest.raises(psycopg.Error) as e:
        conn.execute(f"CREATE VIEW {unique_name('v')} WITH (ttl = '1 hour', ttl_column = 'x') AS "
                     f"SELECT x, count(*) FROM {s} GROUP BY x")
    assert e.value.sqlstate == "0A000" and e.value.diag.message_hint


def test_test_clock_is_superuser_only(conn, unique_name):
    role = unique_name("r")
    conn.execute(f"CREATE ROLE {role}")
    conn.execute(f"SET ROLE {role}")
    try:
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SELECT splitstream_test_clock(now())")
        assert e.value.sqlstate == "42501" and e.value.diag.message_hint
    finally:
        conn.execute("RESET ROLE")


def test_no_test_clock_without_the_switch(ss_conn):
    with pytest.raises(psycopg.Error) as e:
        ss_conn.execute("SELECT splitstream_test_clock(now())")
    assert e.value.sqlstate == "42883"


@pytest.mark.crash
def test_sw_state_survives_kill_and_expired_panes_go_at_recovery(ss_server_factory, unique_name):
    server = ss_server_factory(env={"SPLITSTREAM_TEST_CLOCK": "1"})
    long_ago = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(hours=1)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        tick(c, long_ago)
        c.execute("CREATE FOREIGN TABLE s (k int, x int) SERVER pipelinedb")
        c.execute("CREATE VIEW day WITH (sw = '1 day') AS SELECT k, count(*), max(x) FROM s GROUP BY k")
        c.execute("CREATE VIEW minute WITH (sw = '1 minute') AS SELECT k, count(*), max(x) FROM s GROUP BY k")
        c.execute("INSERT INTO s SELECT g % 3, g FROM generate_series(1, 30) g")
        c.execute("CHECKPOINT")
        c.execute("INSERT INTO s SELECT g % 3, g FROM generate_series(31, 60) g")
        before = sorted(c.execute("SELECT * FROM day").fetchall())
        assert before == [(0, 20, 60), (1, 20, 58), (2, 20, 59)]
        assert len(c.execute("SELECT * FROM minute").fetchall()) == 3
    server.kill()
    server.start(timeout=60)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        # the real clock runs again: an hour later than the rows' arrival
        assert sorted(c.execute("SELECT * FROM day").fetchall()) == before
        assert c.execute("SELECT * FROM minute").fetchall() == []
        panes = dict(c.execute("SELECT name, panes FROM splitstream.views").fetchall())
        assert panes["minute"] == 0 and panes["day"] >= 1
