"""What one read of continuous views sees while inserts run: each insert
statement whole or not at all, and the same batches in every view the
query reads (issue 14: a COPY of any size is one delivery; a statement
reads several views at one cut of the input).  The property test
(test_property.py) covers the answers themselves."""
from __future__ import annotations

import threading
import time

import psycopg

from splitstream.executor.commands import copy as copy_mod
from splitstream.executor.stream.continuous import ContinuousView
from tests.support.engine import open_engine, plain_session


def test_copy_of_several_slabs_is_visible_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(copy_mod, "DECODE_SLAB", 64)        # many slabs from a small COPY
    monkeypatch.setattr(copy_mod, "PARSE_STEP", 64)
    monkeypatch.setattr("splitstream.executor.commands.copy_parse.BATCH_BYTES", 64)
    with open_engine(str(tmp_path / "data")) as eng:
        writer, reader = plain_session(eng), plain_session(eng)
        writer.execute_sql("CREATE FOREIGN TABLE cs (k int, x int) SERVER stream")
        writer.execute_sql("CREATE VIEW cv AS SELECT count(*) AS n FROM cs")
        seen: list[int] = []
        stage = ContinuousView.stage

        def stage_then_read(self, *args):
            """A reader that gets the CPU after each slab the view takes."""
            st = stage(self, *args)
            seen.append(reader.execute_sql("SELECT n FROM cv").batch.rows()[0][0])
            return st

        monkeypatch.setattr(ContinuousView, "stage", stage_then_read)
        sink = writer.execute_sql("COPY cs FROM STDIN (FORMAT csv)").copy_in
        data = "".join(f"{i},{i}\n" for i in range(100)).encode()
        for j in range(0, len(data), 50):
            sink.feed(data[j:j + 50])
        assert sink.finish() == "COPY 100"
        assert reader.execute_sql("SELECT n FROM cv").batch.rows()[0][0] == 100
        assert len(seen) > 5, "the COPY was not split into several slabs"
        assert all(n in (0, 100) for n in seen), f"reads during the COPY saw {seen} of its 100 rows"


def test_one_query_over_two_views_of_one_stream_sees_each_batch_in_both(ss_server, unique_name):
    s, v0, v1 = unique_name("s"), unique_name("v0"), unique_name("v1")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
        conn.execute(f"CREATE VIEW {v0} AS SELECT count(*) AS n FROM {s}")
        conn.execute(f"CREATE VIEW {v1} AS SELECT count(*) AS n, sum(x) AS sx FROM {s}")
        stop = threading.Event()

        def insert() -> None:
            with psycopg.connect(ss_server.dsn, autocommit=True) as w:
                while not stop.is_set():
                    w.execute(f"INSERT INTO {s} VALUES (1, 2), (3, 4)")

        writers = [threading.Thread(target=insert) for _ in range(2)]
        for th in writers:
            th.start()
        seen = []
        try:
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                a, b = conn.execute(f"SELECT a.n, b.n FROM {v0} a, {v1} b").fetchone()
                if a != b:
                    seen.append((a, b))
        finally:
            stop.set()
            for th in writers:
                th.join()
        assert not seen, f"the two views disagreed within one query: {seen[:5]}"


def test_a_view_and_a_scan_of_its_stream_split_the_input_at_one_cut(ss_server, unique_name):
    """One statement reads a continuous view and scans the stream's arriving
    rows: every batch is in the view's snapshot or in the scan, never in both
    and never in neither, while a writer keeps inserting."""
    s, v = unique_name("s"), unique_name("v")
    batches = 150
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
        conn.execute(f"CREATE VIEW {v} AS SELECT count(*) AS n FROM {s}")
        started = threading.Event()

        def write() -> None:
            with psycopg.connect(ss_server.dsn, autocommit=True) as w:
                for i in range(batches):
                    w.execute(f"INSERT INTO {s} VALUES ({i}, 1), ({i}, 2)")
                    if i == 20:
                        started.set()
                    time.sleep(0.004)

        writer = threading.Thread(target=write)
        writer.start()
        started.wait(10)
        conn.execute("SET stream_session_timeout = '1s'")
        before, scanned = conn.execute(f"SELECT (SELECT n FROM {v}), count(*) FROM {s}").fetchone()
        writer.join()
        assert 0 < before < 2 * batches and scanned > 0
        assert before + scanned == 2 * batches, (before, scanned)
