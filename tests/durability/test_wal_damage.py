"""A damaged WAL (issue 14, item 4): a torn or corrupt *last* record is cut
off with a log line; damage before the end refuses to start naming the file
and byte offset; ``splitstream recover`` keeps what precedes the damage,
says what it dropped, and the server starts again.

Real server processes: the WAL is damaged between a kill -9 and a restart.
"""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from splitstream.catalog.storage import records
from splitstream.catalog.storage.wal import Wal, check_segment
from splitstream.catalog.storage.wal_scan import WalCorruption
from tests.support.servers import REPO_ROOT

_FRAME = struct.Struct("!II")


def frames(path: Path) -> list[tuple[int, int]]:
    """(offset, body length) of each record of a WAL segment, parsed here
    independently of the server's reader."""
    data = path.read_bytes()
    out, pos = [], records.HEADER_SIZE
    while pos + _FRAME.size <= len(data):
        ln = _FRAME.unpack_from(data, pos)[0]
        if ln == 0:               # the preallocated zeros after the log
            assert not any(data[pos:]), f"{path}: a zero record length before the end"
            return out
        out.append((pos, ln))
        pos += _FRAME.size + ln
    assert pos == len(data), f"{path} does not end on a record boundary"
    return out


def segments(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "wal").glob("wal.*"))


def flip(path: Path, offset: int) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))


def insert_rows(srv, ids) -> None:
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        for i in ids:
            c.execute("INSERT INTO w VALUES (%s)", (i,))


def ids(srv) -> list[int]:
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        return [r[0] for r in c.execute("SELECT id FROM w ORDER BY id").fetchall()]


def crashed_server_with_rows(ss_server_factory, n: int):
    """A server killed after CREATE TABLE and ``n`` one-row commits (one WAL
    record each, the last ones last in the newest segment)."""
    srv = ss_server_factory()
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE w (id int)")
    insert_rows(srv, range(1, n + 1))
    srv.kill()
    return srv


def recover(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "splitstream", "recover", "--data-dir", str(data_dir)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("damage", ["truncate", "flip_body", "flip_length"])
def test_damaged_last_record_is_cut_off(ss_server_factory, damage):
    srv = crashed_server_with_rows(ss_server_factory, 6)
    seg = segments(srv.data_dir)[-1]
    pos, ln = frames(seg)[-1]
    if damage == "truncate":          # torn mid-record
        with open(seg, "r+b") as f:
            f.truncate(pos + _FRAME.size + ln // 2)
    elif damage == "flip_body":       # complete length, bad checksum
        flip(seg, pos + _FRAME.size + ln - 3)
    else:                             # the length itself damaged
        flip(seg, pos + 3)
    srv.start()
    assert ids(srv) == [1, 2, 3, 4, 5]            # the last record is dropped, the rest kept
    log = srv.log_text()
    assert f'"{seg}"' in log and f"byte offset {pos}" in log and "truncating" in log, log[-3000:]
    insert_rows(srv, [7])                        # appends go on after the cut
    srv.restart(crash=True)
    assert ids(srv) == [1, 2, 3, 4, 5, 7]


def test_corruption_before_the_end_refuses_then_recover_salvages(ss_server_factory):
    srv = crashed_server_with_rows(ss_server_factory, 10)
    seg = segments(srv.data_dir)[-1]
    recs = frames(seg)                # CREATE TABLE, then rows 1..10
    pos, ln = recs[5]                 # the record of row 5
    flip(seg, pos + _FRAME.size + ln // 2)
    with pytest.raises(RuntimeError, match="exited with code 1"):
        srv.start()
    log = srv.log_text()
    assert f'"{seg}" at byte offset {pos}' in log, log[-3000:]
    assert "splitstream recover" in log and "Traceback" not in log

    res = recover(srv.data_dir)
    assert res.returncode == 0, res.stderr
    # dropped: rows 6..10 (intact records after the damaged one), and their bytes
    assert f"byte offset {pos}" in res.stdout and " 5 intact record(s)" in res.stdout, res.stdout
    assert f"{sum(_FRAME.size + n for _, n in recs[5:])} byte(s)" in res.stdout, res.stdout
    assert seg.stat().st_size == pos
    srv.start()
    assert ids(srv) == [1, 2, 3, 4]
    insert_rows(srv, [11])
    srv.restart(crash=True)
    assert ids(srv) == [1, 2, 3, 4, 11]
    assert "intact" in recover(srv.data_dir).stdout     # nothing left to drop


def test_torn_record_before_a_later_segment_is_corruption(ss_server_factory):
    """A later segment with records means the damaged record was not the
    last one written: refused, and recover drops the later file too."""
    srv = crashed_server_with_rows(ss_server_factory, 3)
    srv.start()                      # a new segment for what follows
    insert_rows(srv, [4, 5])
    srv.kill()
    first, second = segments(srv.data_dir)[-2:]
    pos, ln = frames(first)[-1]      # row 3
    with open(first, "r+b") as f:
        f.truncate(pos + _FRAME.size + ln // 2)
    with pytest.raises(RuntimeError, match="exited with code 1"):
        srv.start()
    assert f'"{first}" at byte offset {pos}' in srv.log_text()
    res = recover(srv.data_dir)
    assert res.returncode == 0 and " 2 intact record(s)" in res.stdout and second.name in res.stdout, res
    assert not second.exists()
    srv.start()
    assert ids(srv) == [1, 2]


def test_recover_refuses_what_is_not_a_data_directory(tmp_path):
    res = recover(tmp_path / "nothing")
    assert res.returncode == 1 and "not a splitstream data directory" in res.stderr


def test_a_damaged_length_mid_log_is_not_taken_for_a_tail(tmp_path):
    """Resynchronising finds the intact records after a record whose length
    field is damaged (so it seems to run past the end of the file)."""
    wal = Wal(tmp_path / "wal")
    wal.open_segment(1)
    for i in range(5):
        wal.append([("setval", 1, i)], sync=False)
    wal.close()
    pos, _ln = frames(wal.path(1))[2]
    flip(wal.path(1), pos)           # the length's top byte: now far past the end
    with pytest.raises(WalCorruption) as ei:
        list(Wal(tmp_path / "wal").replay(0))
    assert ei.value.damage.offset == pos and "past the end" in ei.value.message
    report = Wal(tmp_path / "wal").salvage(0)
    assert report.records == 2 and report.damage is not None and report.damage.offset == pos
    assert [ops[0][2] for _where, ops in Wal(tmp_path / "wal").replay(0)] == [0, 1]


def test_recover_drops_a_segment_whose_header_is_damaged(tmp_path):
    wal = Wal(tmp_path / "wal")
    for gen in (1, 2):
        wal.open_segment(gen)
        wal.append([("setval", 1, gen)], sync=False)
    wal.close()
    flip(wal.path(2), 0)             # the magic number of the newer segment
    report = Wal(tmp_path / "wal").salvage(0)
    assert report.damage is not None and report.damage.offset == 0 and "bad magic number" in report.report()
    assert report.records == 1 and wal.path(2).stat().st_size == 0     # an empty segment: nothing logged
    assert [ops[0][2] for _where, ops in Wal(tmp_path / "wal").replay(0)] == [1]


def test_a_damaged_segment_header_refuses_with_the_recover_hint(tmp_path):
    wal = Wal(tmp_path / "wal")
    wal.open_segment(1)
    wal.append([("setval", 1, 1)], sync=False)
    wal.close()
    flip(wal.path(1), 2)
    with pytest.raises(WalCorruption) as ei:
        check_segment(wal.path(1))
    assert "byte offset 0" in ei.value.message and "splitstream recover" in (ei.value.hint or "")
