"""WITH (late_rows = 'keep') (issue 16): views that keep the rows later than
their stream's watermark while their window is retained equal DuckDB over
all the rows (restricted to the retained panes), nothing is counted as
dropped; views of one watermarked stream must agree; bad values are refused;
kept late rows survive kill -9 (they are logged)."""
from __future__ import annotations

import datetime as dt
import tempfile
import threading

import psycopg
import pytest

from tests.support import windows as win
from tests.support.engine import open_engine, postgres_session, result_rows
from tests.support.windows import AGGS

TUMBLE = "TUMBLE(ev, ts, INTERVAL '1 minute')"
HOP = "HOP(ev, ts, INTERVAL '30 seconds', INTERVAL '2 minutes')"


def _view(name: str, src: str, opts: str) -> str:
    return (f"CREATE VIEW {name} WITH ({opts}) AS SELECT window_start, window_end, k, {AGGS} FROM {src} "
            "GROUP BY window_start, window_end, k")


def _retained(want: list[tuple], minutes: int) -> list[tuple]:
    newest = max(r[1] for r in want)
    return [r for r in want if r[1] > newest - dt.timedelta(minutes=minutes)]


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_kept_late_rows_count_while_their_window_is_retained(backend):
    batches = win.batches(seed=77)
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(f"SET executor_backend = {backend}")
        es.execute_sql(win.stream_ddl(5))
        es.execute_sql(_view("kept", TUMBLE, "late_rows = 'keep'"))
        es.execute_sql(_view("kept_ret", HOP, "late_rows = 'keep', retention = '3 minutes'"))
        for i, b in enumerate(batches):
            win.insert(es, b)
            rows = [r for bb in batches[: i + 1] for r in bb]
            assert win.view_rows(es, "kept") == win.oracle(rows, 60, 60, 0), i
            assert win.view_rows(es, "kept_ret") == _retained(win.oracle(rows, 30, 120, 0), 3), i
        assert len(win.admitted(batches, 5)) < sum(len(b) for b in batches)      # the data has late rows
        assert result_rows(es, "SELECT late_rows FROM splitstream.streams WHERE name = 'ev'") == [(0,)]


def test_views_of_a_watermarked_stream_must_agree():
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(win.stream_ddl(5))
        es.execute_sql(_view("a", TUMBLE, "late_rows = 'keep'"))
        with pytest.raises(Exception) as info:
            es.execute_sql("CREATE VIEW b AS SELECT k, count(*) FROM ev GROUP BY k")
        assert getattr(info.value, "sqlstate", None) == "0A000" and "late_rows = 'keep'" in info.value.hint
        es.execute_sql("CREATE VIEW b WITH (late_rows = 'keep') AS SELECT k, count(*) FROM ev GROUP BY k")
        es.execute_sql("DROP VIEW a")
        es.execute_sql("DROP VIEW b")
        es.execute_sql(_view("c", TUMBLE, "late_rows = 'drop'"))
        with pytest.raises(Exception) as info:
            es.execute_sql(_view("d", TUMBLE, "late_rows = 'keep'"))
        assert getattr(info.value, "sqlstate", None) == "0A000"
        # without a watermark nothing is late: any mix is fine
        es.execute_sql("CREATE FOREIGN TABLE s2 (k int, ts timestamptz) SERVER stream")
        es.execute_sql("CREATE VIEW e WITH (late_rows = 'keep') AS SELECT k, count(*) FROM s2 GROUP BY k")
        es.execute_sql("CREATE VIEW f AS SELECT k, count(*) FROM s2 GROUP BY k")


def test_dropping_views_still_drop_late_rows():
    batches = win.batches(seed=78, nbatches=6)
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(win.stream_ddl(5))
        es.execute_sql(_view("dropping", TUMBLE, "late_rows = 'drop'"))
        for b in batches:
            win.insert(es, b)
        assert win.view_rows(es, "dropping") == win.oracle(win.admitted(batches, 5), 60, 60, 0)
        late = result_rows(es, "SELECT late_rows FROM splitstream.streams WHERE name = 'ev'")[0][0]
        assert late == sum(len(b) for b in batches) - len(win.admitted(batches, 5)) > 0


@pytest.mark.parametrize("sql, state, words", [
    (_view("b", TUMBLE, "late_rows = 'maybe'"), "22023", "late_rows"),
    (_view("b", TUMBLE, "late_rows = ''"), "22023", "late_rows"),
    ("CREATE TABLE t (k int); CREATE VIEW b WITH (late_rows = 'keep') AS SELECT k FROM t", "22023", "continuous"),
])
def test_bad_values(sql, state, words):
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(win.stream_ddl(5))
        *before, last = sql.split("; ")
        for s in before:
            es.execute_sql(s)
        with pytest.raises(Exception) as info:
            es.execute_sql(last)
        assert getattr(info.value, "sqlstate", None) == state, info.value
        assert words in str(info.value) + str(getattr(info.value, "hint", ""))


def test_kept_late_rows_survive_kill_9(ss_server_factory):
    batches = win.batches(seed=79)
    srv = ss_server_factory()

    with psycopg.connect(srv.dsn, autocommit=True) as con:
        con.execute(win.stream_ddl(5))
        con.execute(_view("kept", TUMBLE, "late_rows = 'keep', retention = '4 minutes'"))
        for b in batches[:5]:
            win.insert_over_wire(con, b)
        con.execute("CHECKPOINT")
        for b in batches[5:9]:
            win.insert_over_wire(con, b)
    srv.restart(crash=True)
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        for b in batches[9:]:
            win.insert_over_wire(con, b)
        got = [(win.utc(a), win.utc(b), *rest) for a, b, *rest in
               con.execute("SELECT window_start, window_end, k, n, sx::int, lo, hi FROM kept ORDER BY 1, 3").fetchall()]
    assert got == _retained(win.oracle([r for b in batches for r in b], 60, 60, 0), 4)


def _copy(con, rows) -> None:
    with con.cursor().copy("COPY ev FROM STDIN") as cp:
        for r in rows:
            cp.write_row(r)


def _stream_state(con) -> tuple:
    return con.execute("SELECT late_rows, watermark FROM splitstream.streams WHERE name = 'ev'").fetchone()


@pytest.mark.parametrize("checkpoint", [False, True])
def test_late_row_count_survives_kill_9(ss_server_factory, checkpoint):
    """INSERTs and COPYs with late rows, one of each wholly late, before and
    after a checkpoint: after kill -9 the count and the watermark are those
    the acknowledged statements made (their records carry the count)."""
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    at = [t0 + dt.timedelta(seconds=s) for s in range(0, 400, 10)]
    srv = ss_server_factory()
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        con.execute(win.stream_ddl(30))
        con.execute(_view("v", TUMBLE, "retention = '1 hour'"))
        con.execute("INSERT INTO ev VALUES (1, 1, %s), (1, 2, %s)", [at[20], at[21]])     # watermark at[21] - 30 s
        con.execute("INSERT INTO ev VALUES (1, 3, %s), (1, 4, %s)", [at[1], at[22]])      # one late
        if checkpoint:
            con.execute("CHECKPOINT")
        _copy(con, [(2, 5, at[2]), (2, 6, at[3]), (2, 7, at[25])])                       # two late, one COPY
        con.execute("INSERT INTO ev VALUES (3, 8, %s), (3, 9, %s)", [at[4], at[5]])      # wholly late
        _copy(con, [(4, 10, at[6])])                                                      # wholly late COPY
        want = _stream_state(con)
        assert want[0] == 6
        assert want[1] == at[25] - dt.timedelta(seconds=30)
        view = con.execute("SELECT * FROM v ORDER BY 1, 3").fetchall()
    srv.restart(crash=True)
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        assert _stream_state(con) == want
        assert con.execute("SELECT * FROM v ORDER BY 1, 3").fetchall() == view
        con.execute("INSERT INTO ev VALUES (5, 11, %s)", [at[7]])                         # still late
        assert _stream_state(con) == (7, want[1])


def test_failed_statement_moves_no_watermark():
    """A statement whose rows a view refuses (division by zero) is not
    logged: neither its rows' times nor its late rows count."""
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(win.stream_ddl(10))
        es.execute_sql("CREATE VIEW q AS SELECT window_start, k, sum(100 / x) AS s "
                       "FROM TUMBLE(ev, ts, INTERVAL '1 minute') GROUP BY window_start, k")
        win.insert(es, [(1, 5, t0 + dt.timedelta(seconds=60))])
        before = result_rows(es, "SELECT late_rows, watermark FROM splitstream.streams WHERE name = 'ev'")
        with pytest.raises(Exception) as info:          # one late row, and one row the view divides by zero
            win.insert(es, [(1, 1, t0), (1, 0, t0 + dt.timedelta(minutes=30))])
        assert getattr(info.value, "sqlstate", None) == "22012", info.value
        assert result_rows(es, "SELECT late_rows, watermark FROM splitstream.streams WHERE name = 'ev'") == before
        win.insert(es, [(1, 4, t0 + dt.timedelta(seconds=55))])       # on time: the failed statement moved nothing
        assert result_rows(es, "SELECT s FROM q ORDER BY window_start") == [(25,), (20,)]


def test_concurrent_small_inserts_count_every_late_row(ss_server_factory):
    """Small inserts from many connections at once are logged in groups
    (group commit): every statement's late rows are counted, once, and the
    count and the watermark survive kill -9.  Lateness here does not depend
    on the order: each statement has one row on time whatever ran before it
    and one row two hours behind the first."""
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    srv = ss_server_factory()
    threads, per = 6, 15
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        con.execute(win.stream_ddl(3600))
        con.execute(_view("v", TUMBLE, "retention = '1 day'"))
        con.execute("INSERT INTO ev VALUES (0, 0, %s)", [t0])

    def work(w: int) -> None:
        with psycopg.connect(srv.dsn, autocommit=True) as c:
            for i in range(per):
                on_time = t0 + dt.timedelta(seconds=w * per + i + 1)
                c.execute("INSERT INTO ev VALUES (%s, 1, %s), (%s, 1, %s)",
                          [w, on_time, w, t0 - dt.timedelta(hours=2)])

    pool = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    top = t0 + dt.timedelta(seconds=threads * per)
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        assert _stream_state(con) == (threads * per, top - dt.timedelta(hours=1))
        assert con.execute("SELECT sum(n) FROM v").fetchone()[0] == threads * per + 1
    srv.restart(crash=True)
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        assert _stream_state(con) == (threads * per, top - dt.timedelta(hours=1))
        assert con.execute("SELECT sum(n) FROM v").fetchone()[0] == threads * per + 1
