"""pipelinedb.stream_targets where inserts are combined (issue 17, scope 6):
the lean path and group commit put one set of targets in each WAL record,
so sessions with different targets queued behind one leader still feed
only their own views, live and after replay; WAL records written before the
field existed read as "every view"."""
from __future__ import annotations

import dataclasses
import threading
import time

from splitstream.catalog.storage import records, wal, wal_records
from splitstream.catalog.storage.wal_records import StreamBatch
from splitstream.protocol.errors import PgError
from tests.cv.test_small_writers import _lean_sessions, _submit_all_async
from tests.support.engine import open_engine, postgres_session, result_rows

TARGETS = ("", "a", "b", "a, c")


def _views(es) -> dict:
    return {v: sorted(result_rows(es, f"SELECT * FROM {v}")) for v in "abc"}


def _want(n: int) -> dict:
    """Writer k sets TARGETS[k % 4] and inserts (k % 3, k)."""
    fed = {v: [k for k in range(n) if not TARGETS[k % 4] or v in TARGETS[k % 4]] for v in "abc"}
    return {v: sorted((w, len([k for k in ks if k % 3 == w]), sum(k for k in ks if k % 3 == w))
                      for w in range(3) if any(k % 3 == w for k in ks)) for v, ks in fed.items()}


def _no_checkpoint(eng) -> None:
    """Close as after a crash: no shutdown checkpoint, so the next open replays the WAL."""
    def refuse() -> None:
        raise PgError("53100", "no checkpoint (test)")
    eng.db.checkpoint = refuse


def _ddl(es) -> None:
    es.execute_sql("CREATE FOREIGN TABLE s (w int, i int) SERVER stream")
    for v in "abc":
        es.execute_sql(f"CREATE VIEW {v} AS SELECT w, count(*), sum(i) FROM s GROUP BY w")


def test_lean_group_splits_by_targets(tmp_path):
    """Twenty sessions with four different targets queue behind one leader
    (held at the WAL's lock); each feeds only its own views, and a restart
    replays the same."""
    d = str(tmp_path / "d")
    with open_engine(d, fsync=True) as eng:
        es0 = postgres_session(eng)
        _ddl(es0)
        sessions = _lean_sessions(eng, 20, "INSERT INTO s VALUES ($1, $2)")
        for k, (es, _p) in enumerate(sessions):
            es.execute_sql(f"SET pipelinedb.stream_targets = '{TARGETS[k % 4]}'")
        with eng.db._ckpt_lock:
            outcomes = _submit_all_async(sessions, lambda k: [k % 3, k])
            time.sleep(0.3)
        results = outcomes()
        assert not any(o.error or o.retry for o in results), results
        target = list(eng.lean._targets.values())
        assert len(target) == 1 and target[0].groups <= 2     # they did queue as one group
        live = _views(es0)
        assert live == _want(20)
        _no_checkpoint(eng)
    with open_engine(d, fsync=True) as eng:
        assert _views(postgres_session(eng)) == live


def test_group_commit_keeps_targets_apart(tmp_path):
    """Ordinary small INSERTs from sessions with different targets wait
    behind one group (the WAL's lock held); every view gets exactly the rows
    sent to it, live and after replay."""
    d = str(tmp_path / "d")
    with open_engine(d, fsync=True) as eng:
        es0 = postgres_session(eng)
        _ddl(es0)
        sessions = [postgres_session(eng, pid=10 + k) for k in range(20)]
        for k, es in enumerate(sessions):
            es.execute_sql(f"SET pipelinedb.stream_targets = '{TARGETS[k % 4]}'")
        errors: list = []

        def insert(k: int) -> None:
            try:
                sessions[k].execute_sql(f"INSERT INTO s VALUES ({k % 3}, {k})")
            except Exception as e:  # noqa: BLE001 - reported by the assertion below
                errors.append(e)
        threads = [threading.Thread(target=insert, args=(k,)) for k in range(20)]
        with eng.db._ckpt_lock:
            for t in threads:
                t.start()
            time.sleep(0.3)
        for t in threads:
            t.join(30)
        assert not errors
        live = _views(es0)
        assert live == _want(20)
        _no_checkpoint(eng)
    with open_engine(d, fsync=True) as eng:
        assert _views(postgres_session(eng)) == live


def test_records_without_targets_read_as_every_view(tmp_path, monkeypatch):
    """A WAL written before StreamBatch.targets existed (its op.stream
    records have five fields) replays into every view."""
    new = wal_records._STREAM
    old = dataclasses.replace(new, head=records._record_head("op.stream", 1, 5), names=new.names[:5],
                              fields=new.fields[:5])
    monkeypatch.setattr(wal_records, "_STREAM", old)
    _head, body = wal.encode([StreamBatch(1, [], 0, "", 0, [5])])
    assert b"targets" not in body
    assert wal.decode_body(body)[0].targets is None
    d = str(tmp_path / "d")
    with open_engine(d) as eng:
        es = postgres_session(eng)
        _ddl(es)
        es.execute_sql("SET pipelinedb.stream_targets = 'a'")      # not logged in the old format
        es.execute_sql("INSERT INTO s VALUES (1, 1), (2, 2)")
        live = _views(es)
        _no_checkpoint(eng)
    monkeypatch.setattr(wal_records, "_STREAM", new)
    with open_engine(d) as eng:
        assert live["a"] == [(1, 1, 1), (2, 1, 2)] and live["b"] == []
        # the old record names no targets: replay feeds every view
        assert _views(postgres_session(eng)) == {v: [(1, 1, 1), (2, 1, 2)] for v in "abc"}
