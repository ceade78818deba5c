"""Checkpoints hold ingest off only while they capture state (thesis 4.2.8).

The checkpoint's file write is made to hang; inserts into a stream with a
continuous view, and reads of that view, must complete meanwhile.  After
the checkpoint finishes and the engine is reopened, the view holds every
row: those captured by the checkpoint and those replayed from the log.
"""
from __future__ import annotations

import threading

from splitstream.catalog.storage import records
from splitstream.executor.engine import Engine
from tests.support.engine import postgres_session as _session



def _view(es) -> dict:
    res = es.execute_sql("SELECT k, n, s FROM v ORDER BY k")
    return {r[0]: (r[1], r[2]) for r in zip(*[c.to_pylist() for c in res.batch.cols])}


def test_ingest_and_reads_proceed_while_a_checkpoint_writes(tmp_path, monkeypatch):
    data = str(tmp_path / "data")
    eng = Engine(data, fsync=False)
    eng.open()
    es = _session(eng)
    es.execute_sql("CREATE FOREIGN TABLE s (k int, x int) SERVER stream")
    es.execute_sql("CREATE VIEW v AS SELECT k, count(*) AS n, sum(x) AS s FROM s GROUP BY k")
    es.execute_sql("INSERT INTO s SELECT g % 10, g FROM generate_series(1, 1000) g")

    writing, release = threading.Event(), threading.Event()
    real_dump = records.dump_parts

    def slow_dump(value, parts):
        writing.set()
        assert release.wait(60), "test never released the checkpoint"
        return real_dump(value, parts)

    monkeypatch.setattr(records, "dump_parts", slow_dump)
    ckpt = threading.Thread(target=eng.db.checkpoint)
    ckpt.start()
    try:
        assert writing.wait(30)
        # the checkpoint is now stuck writing its file: ingest and reads must not wait for it
        done = threading.Event()

        def ingest() -> None:
            other = _session(eng, pid=2)
            other.execute_sql("INSERT INTO s SELECT g % 10, g FROM generate_series(1001, 3000) g")
            done.set()

        t = threading.Thread(target=ingest)
        t.start()
        assert done.wait(30), "stream insert blocked behind the checkpoint's file write"
        t.join()
        view = _view(es)
        assert sum(n for n, _ in view.values()) == 3000
        assert ckpt.is_alive()
    finally:
        release.set()
        ckpt.join(60)
    monkeypatch.setattr(records, "dump_parts", real_dump)
    es.execute_sql("INSERT INTO s VALUES (3, 5)")
    before = _view(es)
    # reopen without a clean shutdown: checkpoint + log replay must give the same view
    eng.db.wal.close()
    eng2 = Engine(data, fsync=False)
    eng2.open()
    try:
        assert _view(_session(eng2)) == before
        expected = {k: (300, sum(range(k if k else 10, 3001, 10))) for k in range(10)}
        expected[3] = (expected[3][0] + 1, expected[3][1] + 5)
        assert before == expected
    finally:
        eng2.close()
