"""Formats on disk (issue 13): versioned files of named records.

* A data directory of the old, pickled format (a committed fixture) and one
  of a newer format than this server's are refused at start with a message
  naming both versions, exit status non-zero, no traceback, and the
  directory left as it was.
* Nothing in a WAL segment, a checkpoint or a table file is a pickle or
  names a module: tables, streams, views and the Spark ledger are written,
  checkpointed and logged, and every file decodes completely with the
  records codec (which has no way to hold a class).
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from splitstream.catalog.storage import records
from splitstream.catalog.storage.checkpoint_files import CHECKPOINT_MAGIC, INLINE_ROWS, TABLE_MAGIC
from splitstream.catalog.storage.wal import MAGIC as WAL_MAGIC
from splitstream.executor.engine import Engine
from tests.support.engine import postgres_session as _session
from tests.support.engine import result_rows as _rows

FIXTURE = Path(__file__).parent.parent / "fixtures" / "datadir_format1"




def _tree(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(d.rglob("*"))}


def _serve(data: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "splitstream", "serve", "--port", "0", "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=60)


def _assert_refused(data: Path, found: int) -> None:
    before = _tree(data)
    proc = _serve(data)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"format version {found}" in proc.stderr, proc.stderr
    assert f"format version {records.FORMAT_VERSION}" in proc.stderr, proc.stderr
    assert _tree(data) == before, "refusing must leave the data directory untouched"


def test_a_directory_of_the_old_pickle_format_is_refused(tmp_path):
    data = tmp_path / "old"
    shutil.copytree(FIXTURE, data, ignore=shutil.ignore_patterns("README.md"))
    _assert_refused(data, records.PICKLE_FORMAT_VERSION)


def test_old_wal_segments_are_refused_without_a_checkpoint(tmp_path):
    data = tmp_path / "old"
    shutil.copytree(FIXTURE / "wal", data / "wal")
    _assert_refused(data, records.PICKLE_FORMAT_VERSION)


def _newer(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[8:12] = (records.FORMAT_VERSION + 1).to_bytes(4, "little")
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("which", ["checkpoint", "wal"])
def test_a_directory_of_a_newer_format_is_refused(tmp_path, which):
    data = tmp_path / "d"
    eng = Engine(str(data), fsync=False)
    eng.open()
    es = _session(eng)
    es.execute_sql("CREATE TABLE t (a int)")
    es.execute_sql("INSERT INTO t VALUES (1)")
    eng.close()
    if which == "checkpoint":
        _newer(data / "checkpoint")
    else:
        (data / "checkpoint").unlink()
        for seg in (data / "wal").iterdir():
            _newer(seg)
    _assert_refused(data, records.FORMAT_VERSION + 1)


# ------------------------------------------------------------------ no class layouts

#: What a pickle of a project class (or of numpy's reducers) would have to contain.
_MODULE_NAMES = [b"splitstream.", b"catalog.", b"executor.", b"protocol.types", b"numpy.", b"_reconstruct",
                 b"copyreg", b"builtins", b"__main__"]


def _fill(es) -> None:
    es.execute_sql("""CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(8,2), added date,
        at timestamptz, span interval, tag uuid, doc jsonb, nums int[], raw bytea, ok boolean, f float8)""")
    es.execute_sql("""INSERT INTO items VALUES
        (1, 'apple', 1.25, '2024-01-02', '2024-01-02 03:04:05+02', '1 mon 2 days 3 s',
         'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": [1, 2.5, null]}', '{1,2}', '\\x0001', true, 1.5),
        (2, NULL, NULL, 'infinity', '-infinity', NULL, NULL, NULL, NULL, NULL, NULL, 'NaN')""")
    es.execute_sql(f"INSERT INTO items (id, name) SELECT g, 'n' || g FROM generate_series(3, {INLINE_ROWS + 10}) g")
    es.execute_sql("CREATE SEQUENCE seq1")
    es.execute_sql("SELECT nextval('seq1')")
    es.execute_sql("CREATE FOREIGN TABLE clicks (item int, who text, amount numeric(8,2), day date) SERVER stream")
    es.execute_sql("""CREATE VIEW per_item AS SELECT item, count(*) AS n, sum(amount) AS total, min(who) AS first,
        max(day) AS last, count(DISTINCT who) AS people FROM clicks GROUP BY item""")
    es.execute_sql("CREATE VIEW per_who AS SELECT who, day, sum(item) AS s FROM clicks GROUP BY who, day")
    es.execute_sql("INSERT INTO clicks VALUES (1, 'ann', 1.50, '2024-01-01'), (2, NULL, NULL, NULL)")
    es.execute_sql("SET splitstream.batch_key = 'spark/q1/b0/p0/c0'")
    es.execute_sql("INSERT INTO clicks VALUES (1, 'bob', 2.25, '2024-01-02')")
    es.execute_sql("CREATE FOREIGN TABLE pushed (k int, x int) SERVER stream")
    es.execute_sql("CREATE VIEW pushed_v AS SELECT k, count(*) AS n, sum(x) AS sx FROM pushed GROUP BY k")
    desc = json.loads(_rows(es, "SELECT splitstream_pipeline('pushed')")[0][0])
    payload = {"fingerprint": desc["fingerprint"], "view_oid": desc["views"][0]["oid"], "pipeline": 0, "groups": 2,
               "keys": [[1, 2]], "states": [{"cnt": [3, 1]}, {"sum": [30, 5], "cnt": [3, 1]}], "rows": [3, 1]}
    es.execute_sql(f"SELECT splitstream_merge_partial('pushed', 'spark/q1/b0/p1/c0', '{json.dumps(payload)}')")


def _check_files(data: Path) -> int:
    files = [(p, CHECKPOINT_MAGIC) for p in data.glob("checkpoint")] + [(p, TABLE_MAGIC) for p in data.glob("tables/*")] \
        + [(p, WAL_MAGIC) for p in data.glob("wal/*")]
    for path, magic in files:
        raw = path.read_bytes()
        for name in _MODULE_NAMES:
            assert name not in raw, f"{path} names {name!r}"
        assert b"\x80\x04\x95" not in raw and b"\x80\x05\x95" not in raw, f"{path} holds a pickle"
        pos = records.check_header(raw, magic, str(path))
        if magic != WAL_MAGIC:
            records.loads(raw, pos)          # the whole file is one value of the codec's kinds
            continue
        while pos < len(raw):                # every WAL record body too
            n = int.from_bytes(raw[pos: pos + 4], "big")
            if n == 0:                       # the preallocated zeros after the log
                assert not any(raw[pos:]), f"{path}: a zero record length before the end"
                break
            records.loads(raw[pos + 8: pos + 8 + n])
            pos += 8 + n
    return len(files)


def test_no_class_layouts_on_disk(tmp_path):
    data = tmp_path / "d"
    eng = Engine(str(data), fsync=False)
    eng.open()
    es = _session(eng)
    _fill(es)
    assert _check_files(data) >= 1            # the WAL holds every kind of record now
    eng.db.checkpoint()
    es.execute_sql("INSERT INTO clicks VALUES (3, 'cid', 0.25, '2024-01-03')")       # WAL after the checkpoint
    es.execute_sql("UPDATE items SET name = 'APPLE' WHERE id = 1")
    views = {v: _rows(es, f"SELECT * FROM {v} ORDER BY 1, 2") for v in ("per_item", "per_who", "pushed_v")}
    items = _rows(es, "SELECT * FROM items WHERE id < 3 ORDER BY id")
    assert _check_files(data) >= 3
    eng.db.wal.close()                       # a crash: checkpoint + WAL replay
    eng2 = Engine(str(data), fsync=False)
    eng2.open()
    try:
        es2 = _session(eng2)
        assert {v: _rows(es2, f"SELECT * FROM {v} ORDER BY 1, 2") for v in views} == views
        assert repr(_rows(es2, "SELECT * FROM items WHERE id < 3 ORDER BY id")) == repr(items)      # NaN != NaN
        assert _rows(es2, "SELECT count(*) FROM items") == [(INLINE_ROWS + 10,)]
        # the ledger came back: the same key is applied once
        es2.execute_sql("SET splitstream.batch_key = 'spark/q1/b0/p0/c0'")
        es2.execute_sql("INSERT INTO clicks VALUES (1, 'bob', 2.25, '2024-01-02')")
        assert _rows(es2, "SELECT n FROM per_item WHERE item = 1") == [(2,)]
    finally:
        eng2.close()
    assert _check_files(data) >= 3
