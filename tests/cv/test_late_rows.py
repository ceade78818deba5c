"""WITH (late_rows = 'keep') (issue 16): views that keep the rows later than
their stream's watermark while their window is retained equal DuckDB over
all the rows (restricted to the retained panes), nothing is counted as
dropped; views of one watermarked stream must agree; bad values are refused;
kept late rows survive kill -9 (they are logged)."""
from __future__ import annotations

import datetime as dt
import tempfile

import psycopg
import pytest

from tests.cv.test_time_windows import _admitted, _batches, _oracle, _stream_ddl, _utc
from tests.support.engine import open_engine, postgres_session, result_rows

AGGS = "count(*) AS n, sum(x) AS sx, min(x) AS lo, max(x) AS hi"
TUMBLE = "TUMBLE(ev, ts, INTERVAL '1 minute')"
HOP = "HOP(ev, ts, INTERVAL '30 seconds', INTERVAL '2 minutes')"


def _view(name: str, src: str, opts: str) -> str:
    return (f"CREATE VIEW {name} WITH ({opts}) AS SELECT window_start, window_end, k, {AGGS} FROM {src} "
            "GROUP BY window_start, window_end, k")


def _rows(es, name: str) -> list[tuple]:
    got = result_rows(es, f"SELECT window_start, window_end, k, n, sx, lo, hi FROM {name} ORDER BY 1, 3")
    return [(_utc(a), _utc(b), k, n, int(sx), lo, hi) for a, b, k, n, sx, lo, hi in got]


def _retained(want: list[tuple], minutes: int) -> list[tuple]:
    newest = max(r[1] for r in want)
    return [r for r in want if r[1] > newest - dt.timedelta(minutes=minutes)]


def _insert(es, rows) -> None:
    es.execute_sql("INSERT INTO ev VALUES " + ", ".join(f"({k}, {x}, '{ts.isoformat()}')" for k, x, ts in rows))


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_kept_late_rows_count_while_their_window_is_retained(backend):
    batches = _batches(seed=77)
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(f"SET executor_backend = {backend}")
        es.execute_sql(_stream_ddl(5))
        es.execute_sql(_view("kept", TUMBLE, "late_rows = 'keep'"))
        es.execute_sql(_view("kept_ret", HOP, "late_rows = 'keep', retention = '3 minutes'"))
        for i, b in enumerate(batches):
            _insert(es, b)
            rows = [r for bb in batches[: i + 1] for r in bb]
            assert _rows(es, "kept") == _oracle(rows, 60, 60, 0), i
            assert _rows(es, "kept_ret") == _retained(_oracle(rows, 30, 120, 0), 3), i
        assert len(_admitted(batches, 5)) < sum(len(b) for b in batches)      # the data has late rows
        assert result_rows(es, "SELECT late_rows FROM splitstream.streams WHERE name = 'ev'") == [(0,)]


def test_views_of_a_watermarked_stream_must_agree():
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(_stream_ddl(5))
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
    batches = _batches(seed=78, nbatches=6)
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(_stream_ddl(5))
        es.execute_sql(_view("dropping", TUMBLE, "late_rows = 'drop'"))
        for b in batches:
            _insert(es, b)
        assert _rows(es, "dropping") == _oracle(_admitted(batches, 5), 60, 60, 0)
        late = result_rows(es, "SELECT late_rows FROM splitstream.streams WHERE name = 'ev'")[0][0]
        assert late == sum(len(b) for b in batches) - len(_admitted(batches, 5)) > 0


@pytest.mark.parametrize("sql, state, words", [
    (_view("b", TUMBLE, "late_rows = 'maybe'"), "22023", "late_rows"),
    (_view("b", TUMBLE, "late_rows = ''"), "22023", "late_rows"),
    ("CREATE TABLE t (k int); CREATE VIEW b WITH (late_rows = 'keep') AS SELECT k FROM t", "22023", "continuous"),
])
def test_bad_values(sql, state, words):
    with tempfile.TemporaryDirectory() as d, open_engine(d) as eng:
        es = postgres_session(eng)
        es.execute_sql(_stream_ddl(5))
        *before, last = sql.split("; ")
        for s in before:
            es.execute_sql(s)
        with pytest.raises(Exception) as info:
            es.execute_sql(last)
        assert getattr(info.value, "sqlstate", None) == state, info.value
        assert words in str(info.value) + str(getattr(info.value, "hint", ""))


def test_kept_late_rows_survive_kill_9(ss_server_factory):
    batches = _batches(seed=79)
    srv = ss_server_factory()

    def insert(con, b):
        con.execute("INSERT INTO ev VALUES " + ", ".join(["(%s, %s, %s)"] * len(b)), [v for r in b for v in r])

    with psycopg.connect(srv.dsn, autocommit=True) as con:
        con.execute(_stream_ddl(5))
        con.execute(_view("kept", TUMBLE, "late_rows = 'keep', retention = '4 minutes'"))
        for b in batches[:5]:
            insert(con, b)
        con.execute("CHECKPOINT")
        for b in batches[5:9]:
            insert(con, b)
    srv.restart(crash=True)
    with psycopg.connect(srv.dsn, autocommit=True) as con:
        for b in batches[9:]:
            insert(con, b)
        got = [(_utc(a), _utc(b), *rest) for a, b, *rest in
               con.execute("SELECT window_start, window_end, k, n, sx::int, lo, hi FROM kept ORDER BY 1, 3").fetchall()]
    assert got == _retained(_oracle([r for b in batches for r in b], 60, 60, 0), 4)
