"""Preallocated WAL segments (issue 19): the log of a segment ends at the
zeros written ahead of the writer; a record torn inside them is a torn tail
(cut at replay, the records before it kept); zeros with an intact record
after them are corruption; a segment opened again is appended to after its
last record, not after its zeros."""
from __future__ import annotations

import numpy as np
import pytest

from splitstream.catalog.storage import wal as wal_mod
from splitstream.catalog.storage.wal import Wal, encode
from splitstream.catalog.storage.wal_records import StreamBatch
from splitstream.catalog.storage.wal_scan import WalCorruption


def _written(tmp_path, n: int) -> tuple[Wal, list[int]]:
    """A WAL whose segment 1 holds ``n`` synced setval records; the ends of the records."""
    w = Wal(tmp_path / "wal")
    w.open_segment(1)
    ends = []
    for i in range(n):
        w.append([("setval", 7, i)], sync=True)
        ends.append(w.size)
    return w, ends


def _values(w: Wal) -> list[int]:
    return [ops[0][2] for _, ops in w.replay(1)]


def test_the_segment_is_preallocated_and_replay_stops_at_its_zeros(tmp_path):
    w, ends = _written(tmp_path, 5)
    data = w.path(1).read_bytes()
    assert len(data) >= ends[-1] + wal_mod.PREALLOC // 2 and not any(data[ends[-1]:])
    assert _values(Wal(tmp_path / "wal")) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("keep", [3, 8, 0.5])
def test_a_record_torn_inside_the_zeros_is_cut(tmp_path, keep):
    """A crash tore the sixth record: only its first bytes reached the zeros."""
    w, ends = _written(tmp_path, 5)
    head, body = encode([("setval", 7, 99)])
    rec = head + body
    part = rec[:int(len(rec) * keep)] if keep < 1 else rec[:keep]
    with open(w.path(1), "r+b") as f:
        f.seek(ends[-1])
        f.write(part)
    again = Wal(tmp_path / "wal")
    assert _values(again) == [0, 1, 2, 3, 4]
    if any(part):                                     # (3 bytes of a small length are zeros: nothing shows)
        assert w.path(1).stat().st_size == ends[-1]   # the torn bytes (and the zeros) cut off


def test_zeros_before_an_intact_record_are_corruption(tmp_path):
    w, ends = _written(tmp_path, 5)
    with open(w.path(1), "r+b") as f:                 # the third record zeroed, the fourth intact
        f.seek(ends[1])
        f.write(bytes(ends[2] - ends[1]))
    with pytest.raises(WalCorruption, match="zeroed record header"):
        _values(Wal(tmp_path / "wal"))


def test_a_segment_opened_again_is_appended_after_its_last_record(tmp_path):
    w, ends = _written(tmp_path, 3)
    w._f.close()
    w._f = None                                       # as after a failed open: the next append opens it again
    w.append([("setval", 7, 3)], sync=True)
    assert _values(Wal(tmp_path / "wal")) == [0, 1, 2, 3]
    other = Wal(tmp_path / "wal")                     # another process opening segment 1 (never done live)
    other.open_segment(1)
    other.append([("setval", 7, 4)], sync=True)
    assert _values(Wal(tmp_path / "wal")) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("values", [wal_mod.APPEND_FROM // 8 + 100, wal_mod.PREALLOC // 8 + 100])
def test_a_large_record_is_appended(tmp_path, values):
    """A COPY-slab-sized record is written past the zeros (not written twice);
    small records after it are preallocated again."""
    w, _ = _written(tmp_path, 1)
    big = np.arange(values, dtype=np.int64)
    w.append([StreamBatch(42, [(big, None)], 1)], sync=True)
    w.append([("setval", 7, 2)], sync=True)
    ops = [ops[0] for _, ops in Wal(tmp_path / "wal").replay(1)]
    assert ops[0][2] == 0 and ops[2][2] == 2
    assert np.array_equal(ops[1].columns[0][0], big)
    assert not any(w.path(1).read_bytes()[w.size:])


def test_no_zeros_ahead_without_fsync(tmp_path):
    """--fsync off: no commit waits for an fdatasync, so nothing is written
    ahead; the log still replays."""
    w = Wal(tmp_path / "wal", preallocate=False)
    w.open_segment(1)
    w.append([("setval", 7, 1)], sync=False)
    w.append([("setval", 7, 2)], sync=False)
    assert w.path(w.gen).stat().st_size == w.size
    assert [ops[0][2] for _, ops in Wal(tmp_path / "wal").replay(1)] == [1, 2]
