"""PipelineDB's combine() (issue 17 scope 2): re-aggregating a continuous
view's aggregate columns equals the same aggregate over a table holding the
inserted rows, for any regrouping and filter of the view's groups, on both
backends, for windowed views, and after a restart (state from checkpoint and
WAL replay).  Refusals follow PipelineDB's user_combine test."""
from __future__ import annotations

import bisect
import datetime as dt
import math
import random

import psycopg
import pytest

from splitstream.executor.execution.sketches import tdigest
from tests.support.servers import SplitstreamServer

#: (view column, its aggregate, the table's expression the combined column must equal)
COLUMNS = [
    ("c", "count(*)", "count(*)"),
    ("cx", "count(x)", "count(x)"),
    ("sx", "sum(x)", "sum(x)"),
    ("sf", "sum(f)", "sum(f)"),
    ("ax", "avg(x)", "avg(x)"),
    ("af", "avg(f)", "avg(f)"),
    ("mn", "min(f)", "min(f)"),
    ("mx", "max(x)", "max(x)"),
    ("ms", "min(s)", "min(s)"),
    ("sd", "stddev(f)", "stddev(f)"),
    ("vp", "var_pop(x)", "var_pop(x)"),
    ("ba", "bool_and(bb)", "bool_and(bb)"),
    ("bo", "bool_or(bb)", "bool_or(bb)"),
]
#: sketches: the combined state read by a function, against the single-pass sketch over the table
SKETCHES = [
    ("h", "hll_agg(x)", "hll_cardinality({})"),
    ("fq", "freq_agg(g)", "freq({}, 1)"),
]
#: (GROUP BY over the view, WHERE over the view's columns)
REGROUPINGS = [("", ""), ("a", ""), ("b", "a <> 2"), ("a, g", "mx > 0 OR bo"), ("g", "c > 3"), ("", "ms > 'r'")]
COLS = "a int, b int, g int, x int, f float8, bb bool, s text"


def _rows(rng: random.Random, n: int) -> list[tuple]:
    """Generated rows with NULLs in every column; floats are quarters so that sums are exact in any order."""
    def maybe(v, p=0.15):
        return None if rng.random() < p else v
    return [(rng.randrange(4), maybe(rng.randrange(3)), rng.randrange(3), maybe(rng.randrange(-500, 500)),
             maybe(rng.randrange(-400, 400) / 4), maybe(rng.random() < 0.6), maybe(rng.choice("pqrstu") * rng.randrange(1, 3)))
            for _ in range(n)]


def _setup(conn, unique_name, backend: str, window: str = "") -> tuple[str, str, str]:
    s, v, t = unique_name("s"), unique_name("v"), unique_name("t")
    conn.execute(f"SET executor_backend = {backend}")
    conn.execute(f"CREATE FOREIGN TABLE {s} ({COLS}) SERVER pipelinedb")
    conn.execute(f"CREATE TABLE {t} ({COLS})")
    aggs = ", ".join(f"{agg} AS {name}" for name, agg, _ in COLUMNS)
    sk = ", ".join(f"{agg} AS {name}" for name, agg, _ in SKETCHES)
    conn.execute(f"CREATE VIEW {v} {window} AS SELECT a, b, g, {aggs}, {sk} FROM {s} GROUP BY a, b, g")
    return s, v, t


def _insert(conn, s: str, t: str, rows: list[tuple]) -> None:
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {s} VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)
        cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)


def _same(got, want) -> bool:
    if isinstance(got, float) and isinstance(want, float):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)
    return got == want


def _check(conn, v: str, t: str) -> None:
    """Every regrouping of the view's groups against the table: the view's
    filter is on its own columns (group keys or aggregates), the table's
    keeps the rows of the groups the view's filter keeps."""
    combined = ", ".join(f"combine({name})" for name, _, _ in COLUMNS)
    sketches = ", ".join(fn.format(f"combine({name})") for name, _, fn in SKETCHES)
    direct = ", ".join(e for _, _, e in COLUMNS)
    direct_sk = ", ".join(fn.format(agg) for _, agg, fn in SKETCHES)
    for keys, cond in REGROUPINGS:
        by = f"GROUP BY {keys}" if keys else ""
        sel = f"{keys}, " if keys else ""
        got = conn.execute(f"SELECT {sel}{combined}, {sketches} FROM {v} {'WHERE ' + cond if cond else ''} {by}").fetchall()
        kept = (f"EXISTS (SELECT 1 FROM {v} w WHERE ({cond}) AND w.a IS NOT DISTINCT FROM {t}.a "
                f"AND w.b IS NOT DISTINCT FROM {t}.b AND w.g IS NOT DISTINCT FROM {t}.g)") if cond else "true"
        want = conn.execute(f"SELECT {sel}{direct}, {direct_sk} FROM {t} WHERE {kept} {by}").fetchall()
        assert len(got) == len(want) and got, (keys, cond)
        nkeys = len(keys.split(",")) if keys else 0
        order = lambda r: tuple((x is None, x) for x in r[:nkeys])  # noqa: E731
        for g, w in zip(sorted(got, key=order), sorted(want, key=order)):
            assert [(i, a, b) for i, (a, b) in enumerate(zip(g, w)) if not _same(a, b)] == [], (keys, cond)


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_combine_equals_the_aggregate_over_a_table(ss_conn, unique_name, backend):
    s, v, t = _setup(ss_conn, unique_name, backend)
    rng = random.Random(17)
    for _ in range(3):
        _insert(ss_conn, s, t, _rows(rng, 300))
        _check(ss_conn, v, t)


def test_combine_through_joins(ss_conn, unique_name):
    """A combined column carries its states through joins: with a table
    (regrouped by the table's column) and with itself (each group read twice
    is merged twice)."""
    s, v, t = _setup(ss_conn, unique_name, "vector")
    _insert(ss_conn, s, t, _rows(random.Random(5), 200))
    d = unique_name("d")
    ss_conn.execute(f"CREATE TABLE {d} (a int, label text)")
    ss_conn.execute(f"INSERT INTO {d} VALUES (0, 'low'), (1, 'low'), (2, 'high'), (3, 'high')")
    got = ss_conn.execute(f"SELECT label, combine(sx), combine(ax), combine(sd), combine(c) FROM {v} JOIN {d} USING (a) "
                          "GROUP BY label ORDER BY label").fetchall()
    want = ss_conn.execute(f"SELECT label, sum(x), avg(x), stddev(f), count(*) FROM {t} JOIN {d} USING (a) "
                           "GROUP BY label ORDER BY label").fetchall()
    assert len(got) == 2 and all(_same(a, b) for g, w in zip(got, want) for a, b in zip(g, w)), (got, want)
    join = f"FROM {v} l JOIN {v} r ON l.a = r.a AND l.g = r.g"     # each group read once per group of its (a, g)
    twice = ss_conn.execute(f"SELECT combine(l.c), combine(l.sx), combine(l.mx) {join}").fetchone()
    once = ss_conn.execute(f"SELECT sum(l.c), sum(l.sx), max(l.mx) {join}").fetchone()
    assert once[0] > ss_conn.execute(f"SELECT sum(c) FROM {v} WHERE a IS NOT NULL AND g IS NOT NULL").fetchone()[0]
    assert twice == once


def test_combine_refusals(ss_conn, unique_name):
    s, v, t = _setup(ss_conn, unique_name, "vector")
    cases = [
        (f"SELECT combine(ax + 1) FROM {v}", "combine called with an invalid expression"),
        (f"SELECT combine(ax, ax) FROM {v}", "combine called with 2 arguments"),
        (f"SELECT combine(x) FROM {t}", f'"{t}" is not a continuous view'),
        (f"SELECT combine(a) FROM {v}", "combine called with an invalid expression"),
    ]
    for sql, message in cases:
        with pytest.raises(psycopg.errors.WrongObjectType) as e:
            ss_conn.execute(sql)
        assert e.value.diag.message_primary == message
    with pytest.raises(psycopg.errors.UndefinedColumn):
        ss_conn.execute(f"SELECT combine(nothere) FROM {v}")
    # a view column computed from an aggregate is not the aggregate's
    w = unique_name("w")
    ss_conn.execute(f"CREATE VIEW {w} AS SELECT a, count(*) + 1 AS c1, count(*) AS c FROM {s} GROUP BY a")
    with pytest.raises(psycopg.errors.WrongObjectType):
        ss_conn.execute(f"SELECT combine(c1) FROM {w}")
    ss_conn.execute(f"INSERT INTO {s} (a) VALUES (1), (1), (2)")
    assert ss_conn.execute(f"SELECT combine(c) FROM {w}").fetchone() == (3,)


def test_combine_of_an_empty_view(ss_conn, unique_name):
    s, v, t = _setup(ss_conn, unique_name, "vector")
    got = ss_conn.execute(f"SELECT combine(c), combine(sx), combine(mx), combine(bo) FROM {v}").fetchone()
    assert got == ss_conn.execute(f"SELECT count(*), sum(x), max(x), bool_or(bb) FROM {t}").fetchone()


def test_combine_over_tumbling_windows(ss_conn, unique_name):
    s, t, v = unique_name("s"), unique_name("t"), unique_name("v")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (ts timestamptz, k int, x float8) SERVER pipelinedb")
    ss_conn.execute(f"CREATE TABLE {t} (ts timestamptz, k int, x float8)")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT window_start, k, avg(x) AS ax, stddev(x) AS sd, count(*) AS c "
                    f"FROM TUMBLE({s}, ts, INTERVAL '1 minute') GROUP BY window_start, k")
    rng = random.Random(3)
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    rows = [(t0 + dt.timedelta(seconds=rng.randrange(600)), rng.randrange(3), rng.choice([None, rng.randrange(-40, 40) / 2]))
            for _ in range(400)]
    with ss_conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {s} VALUES (%s, %s, %s)", rows)
        cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s)", rows)
    got = ss_conn.execute(f"SELECT k, combine(ax), combine(sd), combine(c) FROM {v} "
                          f"WHERE window_start >= %s GROUP BY k ORDER BY k", (t0 + dt.timedelta(minutes=3),)).fetchall()
    want = ss_conn.execute(f"SELECT k, avg(x), stddev(x), count(*) FROM {t} WHERE ts >= %s GROUP BY k ORDER BY k",
                           (t0 + dt.timedelta(minutes=3),)).fetchall()
    assert len(got) == len(want) == 3
    for g, w in zip(got, want):
        assert all(_same(a, b) for a, b in zip(g, w)), (g, w)


def test_combine_over_a_sliding_window(tmp_path):
    server = SplitstreamServer(tmp_path / "data", env={"SPLITSTREAM_TEST_CLOCK": "1"})
    server.start(timeout=60)
    try:
        with psycopg.connect(server.dsn, autocommit=True) as c:
            t0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)
            c.execute("SELECT splitstream_test_clock(%s)", (t0,))
            c.execute("CREATE FOREIGN TABLE s (k int, x int) SERVER pipelinedb")
            c.execute("CREATE TABLE t (k int, x int, at timestamptz)")
            c.execute("CREATE VIEW v WITH (sw = '10 seconds') AS SELECT k, sum(x) AS sx, avg(x) AS ax, max(x) AS mx "
                      "FROM s GROUP BY k")
            rng = random.Random(9)
            now = t0
            for _ in range(12):
                now += dt.timedelta(seconds=2)
                c.execute("SELECT splitstream_test_clock(%s)", (now,))
                rows = [(rng.randrange(5), rng.randrange(-100, 100)) for _ in range(20)]
                with c.cursor() as cur:
                    cur.executemany("INSERT INTO s VALUES (%s, %s)", rows)
                    cur.executemany("INSERT INTO t VALUES (%s, %s, %s)", [r + (now,) for r in rows])
                got = c.execute("SELECT combine(sx), combine(ax), combine(mx) FROM v WHERE k < 3").fetchone()
                want = c.execute("SELECT sum(x), avg(x), max(x) FROM t WHERE k < 3 AND at > %s",
                                 (now - dt.timedelta(seconds=10),)).fetchone()
                assert got == want, now
    finally:
        server.stop()


def test_combine_after_restart(ss_server_factory, unique_name):
    """State from a checkpoint plus WAL replay after kill -9 combines as before."""
    server = ss_server_factory()
    rng = random.Random(11)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        s, v, t = _setup(c, unique_name, "vector")
        _insert(c, s, t, _rows(rng, 300))
        c.execute("CHECKPOINT")
        _insert(c, s, t, _rows(rng, 300))
        _check(c, v, t)
    server.kill()
    server.start(timeout=60)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        _check(c, v, t)
        _insert(c, s, t, _rows(rng, 100))
        _check(c, v, t)


def test_combined_t_digest_is_within_its_rank_error(ss_conn, unique_name):
    """A t-digest merged from many groups' digests keeps the documented rank error."""
    s, t, v = unique_name("s"), unique_name("t"), unique_name("v")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (k int, f float8) SERVER pipelinedb")
    ss_conn.execute(f"CREATE TABLE {t} (k int, f float8)")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT k, dist_agg(f) AS d FROM {s} GROUP BY k")
    rng = random.Random(12)
    rows = [(rng.randrange(40), rng.gauss(0, 10) if rng.random() < 0.9 else None) for _ in range(6000)]
    with ss_conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {s} VALUES (%s, %s)", rows)
        cur.executemany(f"INSERT INTO {t} VALUES (%s, %s)", rows)
    for cond in ("true", "k < 10"):
        xs = sorted(r[0] for r in ss_conn.execute(f"SELECT f FROM {t} WHERE f IS NOT NULL AND {cond}"))
        for q in (0.05, 0.5, 0.9):
            est = ss_conn.execute(f"SELECT dist_quantile(combine(d), %s) FROM {v} WHERE {cond}", (q,)).fetchone()[0]
            rank = bisect.bisect_right(xs, est) / len(xs)
            assert abs(rank - q) <= tdigest.RANK_ERROR + 2 / len(xs), (cond, q, rank)


def test_combine_in_a_view_a_prepared_statement_and_over_a_window(ss_conn, unique_name):
    """A view over a continuous view may combine its columns (it is maintained
    too, reading its upstream view with states); a prepared combine sees new
    input; combine() OVER a frame it cannot merge is refused, not mis-computed."""
    s, v, t = _setup(ss_conn, unique_name, "vector")
    p = unique_name("p")
    ss_conn.execute(f"CREATE VIEW {p} AS SELECT a, combine(ax) AS ax, combine(sd) AS sd FROM {v} GROUP BY a")
    rng = random.Random(21)
    with ss_conn.cursor() as cur:
        for _ in range(2):
            _insert(ss_conn, s, t, _rows(rng, 150))
            got = sorted(ss_conn.execute(f"SELECT * FROM {p}").fetchall(), key=lambda r: (r[0] is None, r[0]))
            want = sorted(ss_conn.execute(f"SELECT a, avg(x), stddev(f) FROM {t} GROUP BY a").fetchall(),
                          key=lambda r: (r[0] is None, r[0]))
            assert len(got) == len(want) and all(_same(a, b) for g, w in zip(got, want) for a, b in zip(g, w))
            # prepared (server-side, the same plan executed again after more input)
            sql = f"SELECT combine(sx), combine(c) FROM {v} WHERE a >= %s"
            got1 = cur.execute(sql, (1,), prepare=True).fetchone()
            assert got1 == ss_conn.execute(f"SELECT sum(x), count(*) FROM {t} WHERE a >= 1").fetchone()
    # frames that do not start at the partition's first row are refused (test_combine_over_windows)
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        ss_conn.execute(f"SELECT a, combine(ax) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM {v}")
    assert e.value.diag.message_hint


#: (OVER clause, the table rows of view row (a, b, g)'s frame, as a predicate on the table)
WINDOWS = [
    ("PARTITION BY a ORDER BY g", "t.a = {a} AND t.g <= {g}"),             # RANGE to the last peer
    ("PARTITION BY a", "t.a = {a}"),                                       # the whole partition
    ("ORDER BY a RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW", "t.a <= {a}"),
    ("PARTITION BY a ORDER BY g, b ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW",
     "t.a = {a} AND (t.g < {g} OR t.g = {g} AND ({bnull} OR t.b IS NOT NULL AND t.b <= {b}))"),
    ("PARTITION BY g ORDER BY a ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING", "t.g = {g}"),
]


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_combine_over_windows(ss_conn, unique_name, backend):
    """combine(col) OVER (...) equals the same aggregate over the table rows
    of each frame (count, sum, avg, HyperLogLog exactly; a t-digest median
    within its rank error), for frames from the partition's first row."""
    s, v, t = unique_name("s"), unique_name("v"), unique_name("t")
    ss_conn.execute(f"SET executor_backend = {backend}")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} ({COLS}) SERVER pipelinedb")
    ss_conn.execute(f"CREATE TABLE {t} ({COLS})")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT a, b, g, count(*) AS c, sum(x) AS sx, avg(f) AS af, "
                    f"hll_agg(x) AS h, dist_agg(f) AS d FROM {s} GROUP BY a, b, g")
    rng = random.Random(33)
    for _ in range(2):
        _insert(ss_conn, s, t, _rows(rng, 400))
    for over, frame in WINDOWS:
        got = ss_conn.execute(
            f"SELECT a, b, g, combine(c) OVER w, combine(sx) OVER w, combine(af) OVER w, "
            f"hll_cardinality(combine(h) OVER w), dist_quantile(combine(d) OVER w, 0.5) FROM {v} WINDOW w AS ({over})"
        ).fetchall()
        assert len(got) == ss_conn.execute(f"SELECT count(*) FROM {v}").fetchone()[0] > 10
        for a, b, g, *vals in got:
            pred = frame.format(a=a, g=g, b="NULL" if b is None else b, bnull="true" if b is None else "false")
            want = ss_conn.execute(f"SELECT count(*), sum(x), avg(f), hll_cardinality(hll_agg(x)) FROM {t} t "
                                   f"WHERE {pred}").fetchone()
            assert all(_same(x, y) for x, y in zip(vals[:4], want)), (over, a, b, g, vals, want)
            fs = sorted(r[0] for r in ss_conn.execute(f"SELECT f FROM {t} t WHERE {pred} AND f IS NOT NULL"))
            rank = bisect.bisect_right(fs, vals[4]) / len(fs)
            assert abs(rank - 0.5) <= tdigest.RANK_ERROR + 2 / len(fs), (over, a, b, g, rank)


@pytest.mark.parametrize("frame", [
    "ORDER BY a ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
    "ORDER BY a ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING",
    "ORDER BY a ROWS BETWEEN UNBOUNDED PRECEDING AND 1 FOLLOWING",
    "ORDER BY a ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW EXCLUDE CURRENT ROW",
])
def test_combine_over_other_frames_is_refused(ss_conn, unique_name, frame):
    s, v, t = _setup(ss_conn, unique_name, "vector")
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        ss_conn.execute(f"SELECT combine(c) OVER ({frame}) FROM {v}")
    assert "UNBOUNDED PRECEDING" in e.value.diag.message_hint
    with pytest.raises(psycopg.errors.WrongObjectType):
        ss_conn.execute(f"SELECT combine(a) OVER () FROM {v}")
