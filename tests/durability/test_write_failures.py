"""Write failures (issue 14, item 5): ENOSPC and EIO on a WAL write, a WAL
fsync and a checkpoint write fail the statement with 53100 / 58030 and
PostgreSQL's wording; nothing that is not durable is acknowledged; once the
fault clears, writes work again and a restart shows exactly the
acknowledged data.

Faults are injected through the storage's file layer (``fileio.use``), in
an in-process engine: no disk is filled.

A stream batch reaches the views only after its WAL fsync succeeded, so a
failed write or fsync leaves the live views without it too.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from splitstream.catalog.storage import fileio
from splitstream.executor.engine import Engine
from splitstream.protocol.errors import PgError
from tests.support.engine import postgres_session, result_rows

SQLSTATE = {errno.ENOSPC: "53100", errno.EIO: "58030"}
WORDING = {errno.ENOSPC: "No space left on device", errno.EIO: "Input/output error"}


class Faults(fileio.FileLayer):
    """The file layer, failing on demand: ``arm(call, err, files)`` makes
    every ``call`` ("write" or "fsync") on a file whose name starts with
    ``files`` raise ``OSError(err)`` -- a write after writing half its bytes,
    as a disk filling up mid-record would."""

    def __init__(self) -> None:
        self.armed: tuple[str, int, str] | None = None
        self.hits = 0

    def arm(self, call: str, err: int, files: str) -> None:
        self.armed, self.hits = (call, err, files), 0

    def clear(self) -> None:
        self.armed = None

    def _fails(self, call: str, path: Path) -> int | None:
        if self.armed is None or self.armed[0] != call or not path.name.startswith(self.armed[2]):
            return None
        self.hits += 1
        return self.armed[1]

    def write(self, fd: int, data: memoryview, path: Path) -> int:
        err = self._fails("write", path)
        if err is None:
            return super().write(fd, data, path)
        if data.nbytes > 1:
            os.write(fd, data[: data.nbytes // 2])      # a torn write is left behind
        raise OSError(err, os.strerror(err))

    def fsync(self, fd: int, path: Path) -> None:
        err = self._fails("fsync", path)
        if err is not None:
            raise OSError(err, os.strerror(err))
        super().fsync(fd, path)

    def datasync(self, fd: int, path: Path) -> None:       # the WAL's sync: armed as "fsync" too
        err = self._fails("fsync", path)
        if err is not None:
            raise OSError(err, os.strerror(err))
        super().datasync(fd, path)


@pytest.fixture
def faults():
    f = Faults()
    old = fileio.use(f)
    try:
        yield f
    finally:
        fileio.use(old)


def _open(data: Path) -> Engine:
    eng = Engine(str(data), fsync=True)
    eng.open()
    return eng


def _crash_and_reopen(eng: Engine, data: Path) -> Engine:
    eng.db.wal.close()               # no checkpoint: the WAL alone says what was acknowledged
    return _open(data)


SETUP = ("CREATE TABLE t (id int PRIMARY KEY, v text)", "CREATE FOREIGN TABLE s (k int, x int) SERVER stream",
         "CREATE VIEW sv AS SELECT k, sum(x) AS sx, count(*) AS n FROM s GROUP BY k",
         "INSERT INTO t VALUES (1, 'a')", "INSERT INTO s VALUES (1, 10)")


def _setup(data: Path):
    eng = _open(data)
    es = postgres_session(eng)
    for sql in SETUP:
        es.execute_sql(sql)
    return eng, es


def _fails(es, sql: str, err: int, what: str) -> PgError:
    with pytest.raises(PgError) as ei:
        es.execute_sql(sql)
    e = ei.value
    assert e.sqlstate == SQLSTATE[err], e
    assert e.message.startswith(f'could not {what} file "') and e.message.endswith(f'": {WORDING[err]}'), e.message
    return e


def _state(es) -> tuple[list, list]:
    return (result_rows(es, "SELECT * FROM t ORDER BY id"), result_rows(es, "SELECT * FROM sv ORDER BY k"))


EXPECTED = ([(1, "a"), (3, "c")], [(1, 10, 1), (3, 30, 1)])


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO])
@pytest.mark.parametrize("call", ["write", "fsync"])
def test_wal_write_and_fsync_failures(tmp_path, faults, err, call):
    data = tmp_path / "data"
    eng, es = _setup(data)
    wal = eng.db.wal
    size = wal.size                  # where the log ends (preallocated zeros follow)
    faults.arm(call, err, "wal.")
    what = "write to" if call == "write" else "fsync"
    e = _fails(es, "INSERT INTO t VALUES (2, 'b')", err, what)
    assert f"wal.{wal.gen:08d}" in e.message
    _fails(es, "INSERT INTO s VALUES (2, 20)", err, what)
    assert faults.hits >= 2
    # nothing of the failed records is left in the WAL for a later append to follow
    assert wal.size == size and not any(wal.path(wal.gen).read_bytes()[size:])
    assert result_rows(es, "SELECT * FROM t ORDER BY id") == [(1, "a")]     # not committed
    assert result_rows(es, "SELECT * FROM sv ORDER BY k") == [(1, 10, 1)]     # the batch reached no view

    faults.clear()           # the fault clears: the server carries on
    es.execute_sql("INSERT INTO t VALUES (3, 'c')")
    es.execute_sql("INSERT INTO s VALUES (3, 30)")
    eng = _crash_and_reopen(eng, data)
    assert _state(postgres_session(eng)) == EXPECTED
    eng.close()
    eng = _open(data)
    assert _state(postgres_session(eng)) == EXPECTED
    eng.close()


def test_failed_fsync_fails_every_writer_it_covered(tmp_path, faults):
    """A record written before a failed fsync, by a writer that syncs later
    (a COPY syncs once at its end), is lost too: that writer's sync fails."""
    data = tmp_path / "data"
    eng, es = _setup(data)
    wal = eng.db.wal
    rec = wal.append([("setval", 999999, 5)], sync=False)
    faults.arm("fsync", errno.EIO, "wal.")
    with pytest.raises(PgError):
        es.execute_sql("INSERT INTO t VALUES (2, 'b')")
    faults.clear()
    with pytest.raises(PgError) as ei:
        wal.sync_upto(rec)
    assert ei.value.sqlstate == "58030"
    with pytest.raises(PgError):
        wal.sync()           # as a COPY does after its slabs: this thread's records were lost
    wal.sync()               # the loss is reported once
    es.execute_sql("INSERT INTO t VALUES (3, 'c')")
    wal.append([("setval", 999999, 6)], sync=False)
    wal.sync()               # later records sync fine
    eng = _crash_and_reopen(eng, data)
    assert result_rows(postgres_session(eng), "SELECT * FROM t ORDER BY id") == EXPECTED[0]
    eng.close()


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO])
@pytest.mark.parametrize("call", ["write", "fsync"])
def test_checkpoint_write_failure(tmp_path, faults, err, call):
    data = tmp_path / "data"
    eng, es = _setup(data)
    es.execute_sql("CHECKPOINT")
    before = (data / "checkpoint").read_bytes()
    es.execute_sql("INSERT INTO t VALUES (3, 'c')")
    faults.arm(call, err, "checkpoint")
    e = _fails(es, "CHECKPOINT", err, "write to" if call == "write" else "fsync")
    assert "checkpoint.tmp" in e.message
    assert (data / "checkpoint").read_bytes() == before and not (data / "checkpoint.tmp").exists()
    es.execute_sql("INSERT INTO s VALUES (3, 30)")          # writes go on meanwhile
    faults.clear()
    eng = _crash_and_reopen(eng, data)     # the old checkpoint and the WAL it did not replace
    es = postgres_session(eng)
    assert _state(es) == EXPECTED
    es.execute_sql("CHECKPOINT")           # works again once the fault clears
    eng = _crash_and_reopen(eng, data)
    assert _state(postgres_session(eng)) == EXPECTED
    eng.close()


def test_failed_segment_header_is_written_again(tmp_path, faults):
    """A checkpoint opens a new WAL segment; if even its header cannot be
    written, the next append writes it first (no record without a header)."""
    data = tmp_path / "data"
    eng, es = _setup(data)
    faults.arm("write", errno.ENOSPC, "wal.")
    _fails(es, "CHECKPOINT", errno.ENOSPC, "write to")
    faults.clear()
    es.execute_sql("INSERT INTO t VALUES (3, 'c')")
    es.execute_sql("INSERT INTO s VALUES (3, 30)")
    eng = _crash_and_reopen(eng, data)
    assert _state(postgres_session(eng)) == EXPECTED
    eng.close()


def test_shutdown_when_the_checkpoint_cannot_be_written(tmp_path, faults):
    """A full disk at shutdown: the engine still closes (the WAL keeps
    everything) and the next start recovers all of it."""
    data = tmp_path / "data"
    eng, es = _setup(data)
    es.execute_sql("INSERT INTO t VALUES (3, 'c')")
    es.execute_sql("INSERT INTO s VALUES (3, 30)")
    faults.arm("write", errno.ENOSPC, "checkpoint")
    eng.close()
    faults.clear()
    assert not (data / "clean_shutdown").exists()
    eng = _open(data)
    assert _state(postgres_session(eng)) == EXPECTED
    eng.close()


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO])
def test_copy_write_failure_while_its_parts_are_logged_ahead(tmp_path, faults, monkeypatch, err):
    """A multi-slab COPY into a stream logs its parts from CopyDone on while
    its last slab is parsed (copy.LogAhead), holding the checkpoint lock.  A
    failed write there fails the COPY with the disk's error, leaves nothing
    of it in the views, and gives the lock up: the next COPY and a restart
    see exactly what was acknowledged."""
    monkeypatch.setattr("splitstream.executor.commands.copy.AHEAD_SLAB", 16 << 10)
    monkeypatch.setattr("splitstream.executor.commands.copy.PARSE_STEP", 16 << 10)
    monkeypatch.setattr("splitstream.executor.commands.copy_parse.BATCH_BYTES", 16 << 10)     # parts staged as they come
    data = tmp_path / "data"
    eng, es = _setup(data)
    rows = "".join(f"{i % 5},{i}\n" for i in range(30000)).encode()

    def copy() -> str:
        sink = es.execute_sql("COPY s FROM STDIN (FORMAT csv)").copy_in
        for i in range(0, len(rows), 8192):
            sink.feed(rows[i:i + 8192])
        return sink.finish()

    faults.arm("write", err, "wal.")
    with pytest.raises(PgError) as ei:
        copy()
    assert ei.value.sqlstate == SQLSTATE[err], ei.value
    assert result_rows(es, "SELECT * FROM sv ORDER BY k") == [(1, 10, 1)]
    faults.clear()
    assert copy() == "COPY 30000"
    want = [(k, sum(i for i in range(30000) if i % 5 == k) + (10 if k == 1 else 0), 6000 + (k == 1))
            for k in range(5)]
    assert result_rows(es, "SELECT * FROM sv ORDER BY k") == want
    eng = _crash_and_reopen(eng, data)
    assert result_rows(postgres_session(eng), "SELECT * FROM sv ORDER BY k") == want
    eng.close()
