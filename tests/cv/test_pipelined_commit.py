"""Pipelined group commit on the lean path (issue 19): a small group passes
the lead on once its WAL record is written, so the next group is staged and
written while the first waits for its fsync; still, nothing is answered
before its fsync, answers go out in group order, and a crash after the
fsync loses no answered row."""
from __future__ import annotations

import threading

from splitstream.catalog.storage import fileio
from tests.support.engine import open_engine, postgres_session, result_rows


class GatedSync(fileio.FileLayer):
    """WAL fdatasyncs wait for ``gate`` (the first one is 'in flight' until the test opens it)."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def datasync(self, fd: int, path) -> None:
        if path.name.startswith("wal."):
            self.waiting.set()
            assert self.gate.wait(30)
        super().datasync(fd, path)


def _submit(es, prepared, params, answers: list, done: threading.Event) -> None:
    def cb(outcome):
        answers.append((params[0], outcome))
        done.set()
    assert es.lean_submit(prepared, params, cb), "the lean path declined"


def _wait_for(cond, seconds: float = 30) -> bool:
    ev = threading.Event()
    for _ in range(int(seconds * 100)):
        if cond():
            return True
        ev.wait(0.01)
    return False


def test_next_group_is_written_during_the_fsync_and_answers_keep_their_order(tmp_path):
    data = str(tmp_path / "d")
    layer = GatedSync()
    with open_engine(data, fsync=True) as eng:
        es0 = postgres_session(eng)
        es0.execute_sql("CREATE FOREIGN TABLE s (w int) SERVER stream")
        es0.execute_sql("CREATE VIEW v AS SELECT w, count(*) FROM s GROUP BY w")
        a, b = (postgres_session(eng, pid=p) for p in (2, 3))
        pa, pb = (es.prepare("INSERT INTO s VALUES ($1)", []) for es in (a, b))
        answers: list = []
        da, db = threading.Event(), threading.Event()
        old = fileio.use(layer)
        try:
            wal = eng.db.wal
            before = wal.written
            _submit(a, pa, [1], answers, da)
            assert layer.waiting.wait(30)             # group 1 is logged, its fsync in flight
            _submit(b, pb, [2], answers, db)
            # group 2 is staged and written meanwhile, and waits for the same WAL's sync
            assert _wait_for(lambda: wal.written >= before + 2), "the next group waited for the fsync"
            assert not answers, "answered before its fsync"
            layer.gate.set()
            assert da.wait(30) and db.wait(30)
        finally:
            fileio.use(old)
        assert [w for w, _ in answers] == [1, 2]     # in group order
        assert all(o.tag == "INSERT 0 1" for _, o in answers)
        eng.db.wal.close()                            # a crash: no checkpoint, the WAL says what was answered
    with open_engine(data, fsync=True) as eng:
        assert sorted(result_rows(postgres_session(eng), "SELECT * FROM v")) == [(1, 1), (2, 1)]
