"""The Structured Streaming source over SUBSCRIBE (connectors/spark/changes.py).

The reader's offsets are driven by hand first (what Spark's driver-side
runner calls: initialOffset, read, readBetweenOffsets, commit); then a real
local Spark reads a continuous view's changes into a memory sink, each
change once and in order, across micro-batches."""
from __future__ import annotations

import time

import psycopg
import pytest

pytestmark = [pytest.mark.spark, pytest.mark.timeout(900)]

#: Spark waits a fixed 10 s for a Python worker started without its daemon (a
#: streaming source's reader) to connect back; on an overloaded machine it may not
WORKER_DID_NOT_CONNECT = "Python worker failed to connect back"


def _view(conn, s: str, v: str) -> None:
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int, tag text) SERVER stream")
    conn.execute(f"CREATE VIEW {v} AS SELECT k, sum(x) AS total, max(tag) AS tag FROM {s} GROUP BY k")
    conn.execute(f"INSERT INTO {s} VALUES (1, 1, 'a')")


def _walk(rows, current: int) -> list[int]:
    """Group 1's totals in change order from ``current``; each removed row is the previous added one."""
    seen = []
    for _ts, d, k, t, _tag in sorted(rows, key=lambda r: (r[0], r[1])):
        if k != 1:
            continue
        if d < 0:
            assert t == current
        else:
            current = t
            seen.append(t)
    return seen


def _until(fn, timeout: float = 30):
    deadline = time.time() + timeout
    while True:
        out = fn()
        if out or time.time() > deadline:
            return out
        time.sleep(0.1)


def test_reader_offsets(spark, ss_server, ss_conn, unique_name):
    from splitstream.connectors.spark.changes import _classes

    s, v = unique_name("s"), unique_name("v")
    _view(ss_conn, s, v)
    source = _classes()({"url": ss_server.url, "view": v})
    assert source.schema() == "mz_timestamp long, mz_diff long, `k` int, `total` long, `tag` string"
    reader = source.simpleStreamReader(None)
    try:
        start = reader.initialOffset()
        _until(lambda: reader.read(start)[1]["row"] >= 1)     # reads do not consume: only commit drops rows
        rows, end = reader.read(start)
        rows = list(rows)
        assert [r[1:] for r in rows] == [(1, 1, 1, "a")] and end == {"row": 1}
        ss_conn.execute(f"INSERT INTO {s} VALUES (1, 2, 'b'), (2, 5, 'c')")
        _until(lambda: reader.read(end)[1]["row"] >= 4)
        more, end2 = reader.read(end)
        more = list(more)
        assert end2 == {"row": 4}
        assert sorted(r[1:] for r in more) == [(-1, 1, 1, "a"), (1, 1, 3, "b"), (1, 2, 5, "c")]
        # a micro-batch run again before its commit reads the same rows
        assert list(reader.readBetweenOffsets(end, end2)) == more
        reader.commit(end2)
        with pytest.raises(RuntimeError):
            list(reader.readBetweenOffsets(start, end))           # committed rows are dropped
    finally:
        reader.stop()


def test_read_stream_of_view_changes(spark, ss_server, ss_conn, unique_name):
    from splitstream.connectors.spark import register_changes_source

    s, v = unique_name("s"), unique_name("v")
    _view(ss_conn, s, v)
    register_changes_source(spark)
    for attempt in range(3):
        sink = unique_name(f"sink{attempt}")
        df = spark.readStream.format("splitstream_changes").option("url", ss_server.url).option("view", v).load()
        assert [f.name for f in df.schema.fields] == ["mz_timestamp", "mz_diff", "k", "total", "tag"]
        q = df.writeStream.format("memory").queryName(sink).trigger(processingTime="200 milliseconds").start()
        try:
            got = _until(lambda: spark.sql(f"SELECT * FROM {sink}").collect() or q.exception(), 120)
            if q.exception() is not None and WORKER_DID_NOT_CONNECT in str(q.exception()):
                continue                          # Spark's environment, not the source: start again
            assert got and q.exception() is None                      # the snapshot
            with psycopg.connect(ss_server.dsn, autocommit=True) as w:
                for i in range(2, 8):
                    w.execute(f"INSERT INTO {s} VALUES (1, {i}, 'b'), ({i}, 1, 'c')")
            base = len(got)
            got = _until(lambda: (lambda r: r if len(r) >= base + 18 else None)(
                spark.sql(f"SELECT * FROM {sink}").collect()), 120)
            assert q.exception() is None
        finally:
            q.stop()
        rows = [(r.mz_timestamp, r.mz_diff, r.k, r.total, r.tag) for r in got]
        snapshot = [r for r in rows if r[0] == min(x[0] for x in rows)]
        assert len(rows) == len(snapshot) + 18
        start = [r[3] for r in snapshot if r[2] == 1][0]
        walked = _walk([r for r in rows if r not in snapshot], start)
        assert walked == [start + sum(range(2, i + 1)) for i in range(2, 8)]
        return
    # Spark gives that worker a fixed 10 s (PythonWorkerFactory.createSimpleWorker); importing
    # pyspark.zip alone takes 5 s at a load of 20 on two cores.  The reader's own logic is
    # tested above without that worker.
    pytest.skip(f"Spark never started the source's Python worker in 3 attempts: {WORKER_DID_NOT_CONNECT}")
