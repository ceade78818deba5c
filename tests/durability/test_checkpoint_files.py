"""Checkpoints write a large table once per version, and never run twice at once.

A 10-million-row dimension table beside a stream used to be pickled again
by every checkpoint, holding the GIL against ingest for seconds; an
explicit CHECKPOINT racing an automatic one failed with an internal error
(both wrote ``checkpoint.tmp``).
"""
from __future__ import annotations

import threading

from splitstream.catalog.storage.checkpoint_files import INLINE_ROWS
from splitstream.executor.engine import Engine
from tests.support.engine import postgres_session as _session
from tests.support.engine import result_rows as _rows




def _table_files(data) -> dict[str, int]:
    d = data / "tables"
    return {p.name: p.stat().st_ino for p in d.iterdir()} if d.exists() else {}


def _reopen_after_crash(eng: Engine, data) -> Engine:
    eng.db.wal.close()          # no clean shutdown: checkpoint + log replay
    eng2 = Engine(str(data), fsync=False)
    eng2.open()
    return eng2


def test_unchanged_large_table_is_not_written_again(tmp_path):
    data = tmp_path / "data"
    eng = Engine(str(data), fsync=False)
    eng.open()
    es = _session(eng)
    big = INLINE_ROWS + 10
    es.execute_sql("CREATE TABLE big (id int PRIMARY KEY, name text)")
    es.execute_sql(f"INSERT INTO big SELECT g, 'n' || g FROM generate_series(1, {big}) g")
    es.execute_sql("CREATE TABLE small (id int)")
    es.execute_sql("INSERT INTO small VALUES (1), (2)")
    eng.db.checkpoint()
    first = _table_files(data)
    assert len(first) == 1, first             # the small table stays inside the checkpoint

    es.execute_sql("INSERT INTO small VALUES (3)")
    eng.db.checkpoint()
    assert _table_files(data) == first        # same file, same inode: not rewritten

    es.execute_sql("UPDATE big SET name = 'changed' WHERE id = 7")
    eng.db.checkpoint()
    second = _table_files(data)
    assert len(second) == 1 and second.keys() != first.keys()   # a new version, the old file gone

    es.execute_sql("INSERT INTO big VALUES (0, 'after the checkpoint')")
    expect_big = _rows(es, "SELECT count(*), min(id), max(id), sum(id) FROM big")
    expect_name = _rows(es, "SELECT name FROM big WHERE id IN (0, 7, 8) ORDER BY id")
    eng2 = _reopen_after_crash(eng, data)
    try:
        es2 = _session(eng2)
        assert _rows(es2, "SELECT count(*), min(id), max(id), sum(id) FROM big") == expect_big
        assert _rows(es2, "SELECT name FROM big WHERE id IN (0, 7, 8) ORDER BY id") == expect_name
        assert expect_name == [("after the checkpoint",), ("changed",), ("n8",)]
        assert _rows(es2, "SELECT id FROM small ORDER BY id") == [(1,), (2,), (3,)]
        es2.execute_sql("DROP TABLE big")
        eng2.db.checkpoint()
        assert _table_files(data) == {}        # a dropped table's file goes too
    finally:
        eng2.close()


def test_concurrent_checkpoints_run_one_at_a_time(tmp_path):
    data = tmp_path / "data"
    eng = Engine(str(data), fsync=False)
    eng.open()
    es = _session(eng)
    es.execute_sql("CREATE TABLE t (id int)")
    es.execute_sql(f"INSERT INTO t SELECT g FROM generate_series(1, {INLINE_ROWS}) g")
    errors: list[BaseException] = []

    def checkpoints() -> None:
        try:
            for _ in range(5):
                eng.db.checkpoint()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=checkpoints) for _ in range(4)]
    for th in threads:
        th.start()
    for i in range(20):
        es.execute_sql(f"INSERT INTO t VALUES ({-i})")
    for th in threads:
        th.join()
    assert not errors, errors
    eng2 = _reopen_after_crash(eng, data)
    try:
        assert _rows(_session(eng2), "SELECT count(*), min(id) FROM t") == [(INLINE_ROWS + 20, -19)]
    finally:
        eng2.close()
