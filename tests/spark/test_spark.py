"""Spark feeds and reads splitstream (issue 7): pgjdbc writes and reads, the
PySpark connector (COPY from executors, exactly-once, Structured Streaming)
and split maintenance pushed to Spark executors.

One local[2] SparkSession serves the module (see conftest.py); data sets
are small so the module stays well under the suite's time budget.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import psycopg
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

PROPS = {"user": "postgres", "driver": "org.postgresql.Driver"}


def jdbc_url(server, **opts) -> str:
    q = "&".join(f"{k}={v}" for k, v in opts.items())
    return f"jdbc:postgresql://{server.host}:{server.port}/postgres" + (f"?{q}" if q else "")


def rows(conn, sql):
    return sorted(conn.execute(sql).fetchall(), key=repr)


def events_df(spark, n: int, parts: int = 3, seed: int = 0):
    """AIM-like events: entity, duration, cost (multiples of 1/4: float sums stay exact), region, timestamp."""
    return spark.range(n, numPartitions=parts).selectExpr(
        f"cast((id * 7 + {seed}) % 50 as int) as entity_id",
        "cast(id % 97 as int) as duration",
        "cast(id % 13 as double) / 4 as cost",
        "concat('r', cast(id % 5 as string)) as region",
        "(id % 3) <> 0 as is_local",
        "timestamp_micros(1700000000000000 + id * 1000) as ts")


EVENTS_DDL = "(entity_id int, duration int, cost float8, region text, is_local bool, ts timestamptz)"


def write_rows_and_pushdown(spark, url: str, streams: dict) -> None:
    """The same events (two seeds) as rows into ``streams['rows']`` and pushed down into ``streams['push']``."""
    from splitstream.connectors.spark import write

    for seed in (0, 1):
        df = events_df(spark, 20000, parts=4, seed=seed)
        r = write(df, streams["rows"], url)
        p = write(df, streams["push"], url, pushdown=True)
        assert r.mode == "rows" and p.mode == "pushdown"


# ------------------------------------------------------------------ plain JDBC

def test_jdbc_write_stream_with_view_and_table(spark, ss_server, ss_conn, unique_name):
    s, v, t = unique_name("ev"), unique_name("cv"), unique_name("tbl")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} {EVENTS_DDL} SERVER stream")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT entity_id, count(*) AS n, sum(duration) AS d, sum(cost) AS c "
                    f"FROM {s} GROUP BY entity_id")
    df = events_df(spark, 3000)
    for rewrite in ("false", "true"):
        df.write.jdbc(jdbc_url(ss_server), s, mode="append", properties=dict(PROPS, reWriteBatchedInserts=rewrite))
    expect = sorted((r["entity_id"], 2 * r["n"], 2 * r["d"], 2 * r["c"]) for r in
                    df.groupBy("entity_id").agg({"*": "count", "duration": "sum", "cost": "sum"})
                    .selectExpr("entity_id", "`count(1)` as n", "`sum(duration)` as d", "`sum(cost)` as c").collect())
    got = [(a, int(n), int(d), float(c)) for a, n, d, c in rows(ss_conn, f"SELECT entity_id, n, d, c FROM {v}")]
    assert sorted(got) == expect
    # a table that does not exist yet: Spark creates it
    df.write.jdbc(jdbc_url(ss_server), t, mode="append", properties=PROPS)
    n, d, c = ss_conn.execute(f"SELECT count(*), sum(duration), sum(cost) FROM {t}").fetchone()
    agg = df.selectExpr("count(*) as n", "sum(duration) as d", "sum(cost) as c").first()
    assert (n, d, c) == (agg["n"], agg["d"], agg["c"])


def test_jdbc_read_continuous_view(spark, ss_server, ss_conn, unique_name):
    s, v = unique_name("ev"), unique_name("cv")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} {EVENTS_DDL} SERVER stream")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT entity_id, count(*) AS n, sum(cost) AS c, max(region) AS r "
                    f"FROM {s} GROUP BY entity_id")
    with ss_conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {s} (entity_id, duration, cost, region) VALUES (%s, %s, %s, %s)",
                        [(i % 20, i, i / 4, f"r{i % 3}") for i in range(400)])
    want = rows(ss_conn, f"SELECT entity_id, n, c, r FROM {v}")
    df = spark.read.jdbc(jdbc_url(ss_server), v, properties=PROPS)
    assert sorted([tuple(r) for r in df.collect()], key=repr) == want
    part = spark.read.jdbc(jdbc_url(ss_server), v, column="entity_id", lowerBound=0, upperBound=20,
                           numPartitions=3, properties=PROPS)
    assert part.rdd.getNumPartitions() == 3
    assert sorted([tuple(r) for r in part.collect()], key=repr) == want


# ------------------------------------------------------------------ connector: rows, exactly-once

def test_connector_rows_exactly_once(spark, ss_server, ss_conn, unique_name):
    from splitstream.connectors.spark import write

    s, v, t = unique_name("ev"), unique_name("cv"), unique_name("tbl")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} {EVENTS_DDL} SERVER stream")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT count(*) AS n, sum(duration) AS d, min(ts) AS t0 FROM {s}")
    ss_conn.execute(f"CREATE TABLE {t} {EVENTS_DDL}")
    df = events_df(spark, 5000)
    url = ss_server.url
    for fmt in ("binary", "csv"):
        r1 = write(df, s, url, query_id=f"q-{fmt}", batch_id=7, format=fmt, chunk_rows=1000)
        r2 = write(df, s, url, query_id=f"q-{fmt}", batch_id=7, format=fmt, chunk_rows=1000)   # a replay
        assert r1.rows == 5000 and r1.skipped == 0 and r1.bytes > 0
        assert r2.skipped >= 3 and r2.rows == 0 and r2.bytes == 0
    n, d, _ = ss_conn.execute(f"SELECT n, d, t0 FROM {v}").fetchone()
    agg = df.selectExpr("count(*) as n", "sum(duration) as d").first()
    assert (n, d) == (2 * agg["n"], 2 * agg["d"])
    write(df, t, url, query_id="qt")
    again = write(df, t, url, query_id="qt")
    assert again.rows == 0 and again.skipped > 0
    assert ss_conn.execute(f"SELECT count(*), sum(duration) FROM {t}").fetchone() == (agg["n"], agg["d"])


# ------------------------------------------------------------------ pushdown

AIM_VIEWS = [
    "SELECT entity_id, count(*) AS calls, sum(duration) AS dur, sum(cost) AS cost, min(cost) AS min_cost, "
    "max(duration) AS max_dur FROM {s} WHERE is_local GROUP BY entity_id",
    "SELECT region, count(*) AS n, avg(duration) AS avg_dur, max(cost) AS max_cost, min(ts) AS first_ts "
    "FROM {s} WHERE duration > 10 AND region LIKE 'r%' GROUP BY region",
    "SELECT count(*) AS n, sum(cost) AS c, count(*) FILTER (WHERE cost > 2) AS big, max(ts) AS last_ts FROM {s}",
    "SELECT entity_id % 5 AS bucket, bool_or(is_local) AS any_local, sum(duration * 2) AS d2 FROM {s} "
    "GROUP BY entity_id % 5",
    "SELECT c.zip, count(*) AS n, sum(e.cost) AS cost, max(e.duration) AS mx FROM {s} e "
    "JOIN {cust} c ON e.entity_id = c.id GROUP BY c.zip",
]


def test_pushdown_equals_rows(spark, ss_server, ss_conn, unique_name):
    from splitstream.connectors.spark import describe, write

    cust = unique_name("cust")
    ss_conn.execute(f"CREATE TABLE {cust} (id int PRIMARY KEY, zip text)")
    ss_conn.execute(f"INSERT INTO {cust} SELECT g, 'z' || (g % 7) FROM generate_series(0, 39) g")
    streams = {"rows": unique_name("s_rows"), "push": unique_name("s_push")}
    views = {k: [] for k in streams}
    for k, s in streams.items():
        ss_conn.execute(f"CREATE FOREIGN TABLE {s} {EVENTS_DDL} SERVER stream")
        for i, sql in enumerate(AIM_VIEWS):
            name = f"{s}_v{i}"
            ss_conn.execute(f"CREATE VIEW {name} AS " + sql.format(s=s, cust=cust))
            views[k].append(name)
    desc = describe(ss_server.url, streams["push"])
    assert desc["pushable"], desc["reason"]
    url = ss_server.url
    for seed in (0, 1):
        df = events_df(spark, 20000, parts=4, seed=seed)
        r = write(df, streams["rows"], url)
        p = write(df, streams["push"], url, pushdown=True)
        assert r.mode == "rows" and p.mode == "pushdown"
        assert p.bytes * 20 < r.bytes
    for a, b in zip(views["rows"], views["push"]):
        assert rows(ss_conn, f"SELECT * FROM {a}") == rows(ss_conn, f"SELECT * FROM {b}"), a


def test_pushdown_refuses_stale_and_forged_states(spark, ss_server, ss_conn, unique_name):
    from splitstream.connectors.spark import describe

    s = unique_name("ev")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {s}_v AS SELECT k, count(*) AS n, sum(x) AS sx FROM {s} GROUP BY k")
    desc = describe(ss_server.url, s)
    v = desc["views"][0]
    good = {"fingerprint": desc["fingerprint"], "view_oid": v["oid"], "pipeline": 0, "groups": 2,
            "keys": [[1, 2]], "states": [{"cnt": [3, 1]}, {"sum": [30, 5], "cnt": [3, 1]}], "rows": [3, 1]}

    def merge(payload, key=None):
        return ss_conn.execute("SELECT splitstream_merge_partial(%s, %s, %s)", (s, key, json.dumps(payload))).fetchone()[0]

    assert merge(good, "k1").startswith("merged")
    assert merge(good, "k1") == "skipped"
    forged = [
        dict(good, fingerprint="0" * 32),                                              # not from this server's plan
        dict(good, states=[{"cnt": [3, 1]}]),                                          # wrong number of states
        dict(good, states=[{"cnt": [-3, 1]}, {"sum": [30, 5], "cnt": [3, 1]}]),         # negative count
        dict(good, states=[{"cnt": [3, 1]}, {"sum": [30, 5], "cnt": [0, 1]}]),          # sum over no rows
        dict(good, keys=[[1, 1]]),                                                     # duplicate groups
        dict(good, keys=[["a", "b"]]),                                                 # wrong key type
        dict(good, pipeline=3),                                                        # no such pipeline
    ]
    for bad in forged:
        with pytest.raises(psycopg.Error) as ei:
            merge(bad)
        assert ei.value.sqlstate in ("55000", "22023"), ei.value
    # a new view on the stream makes the old description stale
    ss_conn.execute(f"CREATE VIEW {s}_w AS SELECT count(*) AS n FROM {s}")
    with pytest.raises(psycopg.Error) as ei:
        merge(good, "k2")
    assert ei.value.sqlstate == "55000" and "current plan" in str(ei.value)
    assert ss_conn.execute(f"SELECT k, n, sx FROM {s}_v ORDER BY k").fetchall() == [(1, 3, 30), (2, 1, 5)]


def test_pushdown_falls_back_to_rows(spark, ss_server, ss_conn, unique_name):
    from splitstream.connectors.spark import PushdownFallbackWarning, write

    s = unique_name("ev")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} {EVENTS_DDL} SERVER stream")
    ss_conn.execute(f"CREATE VIEW {s}_v AS SELECT region, count(DISTINCT entity_id) AS d FROM {s} GROUP BY region")
    df = events_df(spark, 1000)
    with pytest.warns(PushdownFallbackWarning):
        r = write(df, s, ss_server.url, pushdown=True)
    assert r.mode == "rows" and "DISTINCT" in (r.reason or "")
    want = sorted((r[0], r[1]) for r in df.selectExpr("region", "entity_id").distinct().groupBy("region").count().collect())
    assert rows(ss_conn, f"SELECT region, d FROM {s}_v") == want


# ------------------------------------------------------------------ Structured Streaming

def _wait(pred, timeout=120.0, step=0.2):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return False


def _drop_last_commit(checkpoint: Path) -> int | None:
    """Make Spark replay its last committed micro-batch on restart.  Returns
    its id, or None when a batch was cut short by stop() (Spark replays that
    one by itself, and dropping a commit then would not cause a replay)."""
    def ids(d):
        return sorted(int(p.name) for p in (checkpoint / d).iterdir() if p.name.isdigit())
    commits, offsets = ids("commits"), ids("offsets")
    if not commits or offsets[-1] != commits[-1]:
        return None
    last = checkpoint / "commits" / str(commits[-1])
    last.unlink()
    crc = last.parent / f".{last.name}.crc"
    if crc.exists():
        crc.unlink()
    return commits[-1]


def test_streaming_file_source_restart_exactly_once(spark, ss_server, ss_conn, unique_name, tmp_path):
    from splitstream.connectors.spark import write_stream

    s = unique_name("ev")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x bigint, tag text) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {s}_v AS SELECT k, count(*) AS n, sum(x) AS sx, max(tag) AS mt FROM {s} GROUP BY k")
    src, ckpt = tmp_path / "in", tmp_path / "ckpt"
    src.mkdir()
    expect: dict[int, list] = {}
    def add_file(i):
        lines = []
        for j in range(200):
            k, x = (i * 31 + j) % 9, i * 1000 + j
            lines.append(f"{k},{x},t{i:03d}")
            e = expect.setdefault(k, [0, 0, ""])
            e[0] += 1
            e[1] += x
            e[2] = max(e[2], f"t{i:03d}")
        tmp = src / f".f{i}.tmp"
        tmp.write_text("\n".join(lines) + "\n")
        tmp.rename(src / f"f{i:03d}.csv")
    for i in range(6):
        add_file(i)

    def reader():
        return (spark.readStream.schema("k int, x long, tag string").option("maxFilesPerTrigger", 1).csv(str(src)))

    done = []
    q = write_stream(reader(), s, ss_server.url, str(ckpt), trigger={"processingTime": "200 milliseconds"},
                     on_batch=lambda b, r: done.append(b))
    try:
        assert _wait(lambda: len(done) >= 3), "no progress"
    finally:
        q.stop()
    replayed = _drop_last_commit(ckpt)
    for i in range(6, 9):
        add_file(i)
    q = write_stream(reader(), s, ss_server.url, str(ckpt), trigger={"availableNow": True},
                     on_batch=lambda b, r: done.append((b, r.skipped)))
    q.awaitTermination(300)
    if replayed is not None:                 # the replayed batch was recognised and skipped
        assert any(isinstance(d, tuple) and d[0] == replayed and d[1] > 0 for d in done), done
    got = rows(ss_conn, f"SELECT k, n, sx, mt FROM {s}_v")
    assert got == sorted(((k, n, sx, mt) for k, (n, sx, mt) in expect.items()), key=repr)


def test_streaming_rate_source_pushdown_restart(spark, ss_server, ss_conn, unique_name, tmp_path):
    from splitstream.connectors.spark import write_stream

    s = unique_name("rate")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (k int, v bigint) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {s}_all AS SELECT count(*) AS n, sum(v) AS sv, min(v) AS mn, max(v) AS mx FROM {s}")
    ss_conn.execute(f"CREATE VIEW {s}_k AS SELECT k, count(*) AS n, sum(v) AS sv FROM {s} GROUP BY k")
    ckpt = tmp_path / "ckpt"

    def reader():
        return (spark.readStream.format("rate").option("rowsPerSecond", 400).option("numPartitions", 2).load()
                .selectExpr("cast(value % 7 as int) as k", "value as v"))

    modes = []
    replayed = None
    for round_ in range(2):
        n0 = len(modes)
        q = write_stream(reader(), s, ss_server.url, str(ckpt), pushdown=True,
                         trigger={"processingTime": "300 milliseconds"}, on_batch=lambda b, r: modes.append((b, r.mode, r.skipped)))
        try:
            assert _wait(lambda: len(modes) >= n0 + 3), "no progress"
        finally:
            q.stop()
        if round_ == 0:
            replayed = _drop_last_commit(ckpt)
    assert {m for _, m, _ in modes} == {"pushdown"}
    if replayed is not None:                                   # the replayed batch was skipped
        assert any(b == replayed and sk for b, _, sk in modes[3:]), modes
    n, sv, mn, mx = ss_conn.execute(f"SELECT n, sv, mn, mx FROM {s}_all").fetchone()
    assert n > 0 and mn == 0 and mx == n - 1 and sv == n * (n - 1) // 2      # every value once: no loss, no duplicate
    per_k = ss_conn.execute(f"SELECT sum(n), sum(sv) FROM {s}_k").fetchone()
    assert (int(per_k[0]), int(per_k[1])) == (n, sv)
