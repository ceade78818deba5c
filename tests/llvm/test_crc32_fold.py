"""The compiled CRC-32 (executor/backends/llvm/crc32.py) is zlib.crc32: any
length, alignment and starting value (the WAL's frames are checked by
zlib.crc32 on replay, so a difference would be a format change)."""
from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from llvmlite import binding as llvm
from hypothesis import given, settings
from hypothesis import strategies as st

from splitstream.catalog.storage import wal, wal_scan
from splitstream.executor.backends.llvm import crc32 as fold
from tests.support.engine import open_engine, plain_session, result_rows

BUF = os.urandom(1 << 18)


@pytest.fixture(scope="module", autouse=True)
def built():
    """Built wherever the CPU has the instructions (a kernel failing its own
    probe would silently be zlib: that must fail here, not skip)."""
    features = llvm.get_host_cpu_features()
    if not (features.get("pclmul") and features.get("sse4.1")):
        pytest.skip("no PCLMULQDQ on this CPU (crc32 is zlib's there)")
    assert fold.ready(wait=True)


@settings(max_examples=400, deadline=None)
@given(offset=st.integers(0, 63), length=st.integers(0, 70_000), value=st.integers(0, 2**32 - 1))
def test_same_as_zlib(offset, length, value):
    data = BUF[offset:offset + length]
    assert fold.crc32(data, value) == zlib.crc32(data, value)


@pytest.mark.parametrize("length", [fold.MIN_BYTES, fold.MIN_BYTES + 1, fold.MIN_BYTES + 15, fold.MIN_BYTES + 16,
                                    64 * 1024 + 63, (1 << 18) - 1])
def test_block_edges_and_buffer_kinds(length):
    """Lengths around the 16- and 64-byte steps, from bytes, bytearray,
    memoryview slices and numpy arrays; zeros and ones (no lucky data)."""
    for data in (BUF[:length], bytearray(BUF[:length]), memoryview(BUF)[1:length + 1],
                 np.frombuffer(BUF, np.uint8)[3:length + 3], bytes(length), b"\xff" * length):
        assert fold.crc32(data) == zlib.crc32(data)


def test_frame_header_is_unchanged():
    body = BUF[:100_000]
    assert wal.frame(body, fold.crc32) == wal.frame(body)
    assert wal.body_size(wal.frame(body, fold.crc32)) == len(body)


def test_kernel_declined_falls_back_to_zlib(monkeypatch):
    monkeypatch.setattr(fold, "_state", {"failed": True})
    data = BUF[:50_000]
    assert fold.crc32(data, 7) == zlib.crc32(data, 7)
    assert not fold.ready(wait=True)


def test_copy_into_a_stream_logs_frames_zlib_accepts(tmp_path, monkeypatch):
    """A COPY's stream slabs are framed by the compiled CRC on the decode
    threads; the WAL reader (zlib) finds every record intact, and the
    engine reopens with the rows in the view."""
    # logged as rows, not as the view's deltas (stream/view_deltas.py): the slabs are what is framed
    monkeypatch.setattr("splitstream.executor.stream.view_deltas.eligible", lambda *a: False)
    rows = "".join(f"{i % 50},{i}\n" for i in range(200_000)).encode()
    data_dir = str(tmp_path / "d")
    with open_engine(data_dir) as eng:
        s = plain_session(eng)
        s.execute_sql("CREATE FOREIGN TABLE cs (k int, x int) SERVER stream")
        s.execute_sql("CREATE VIEW cv AS SELECT k, count(*) AS n, sum(x) AS sx FROM cs GROUP BY k")
        sink = s.execute_sql("COPY cs FROM STDIN (FORMAT csv)").copy_in
        for i in range(0, len(rows), 128 << 10):
            sink.feed(rows[i:i + (128 << 10)])
        assert sink.finish() == "COPY 200000"
        want = result_rows(s, "SELECT * FROM cv ORDER BY k")
        sizes = _intact_records(Path(data_dir))         # before the engine closes (a checkpoint)
    assert max(sizes) >= fold.MIN_BYTES
    with open_engine(data_dir) as eng:
        assert result_rows(plain_session(eng), "SELECT * FROM cv ORDER BY k") == want


def _intact_records(data_dir: Path) -> list[int]:
    """The sizes of the records of the WAL's segments, each checked by zlib."""
    sizes = []
    for seg in sorted(data_dir.rglob("wal.[0-9]*")):
        data = seg.read_bytes()
        pos = wal_scan.segment_records(data)
        while pos is not None and pos < len(data) and not wal_scan.zero_header(data, pos):
            end = wal_scan.frame_end(data, pos)
            assert end, f"record at {pos} of {seg.name} fails zlib's CRC"
            sizes.append(end - pos)
            pos = end
    return sizes
