"""Constant columns in the WAL (``const_column`` records, catalog/storage/wal_records.py).

A column holding one value bit for bit in every row (a COPY's
arrival_timestamp, a quarter of YSB's log) is logged once per record.  The
encoding is a new record type: records written before it, where every column
is a "column" record, still decode, and a data directory whose WAL was written
by the old encoder starts and replays to the same views and tables.
"""
from __future__ import annotations

import numpy as np
import pytest

from splitstream.catalog.storage import records, wal, wal_records
from splitstream.catalog.storage.wal_records import StreamPart
from splitstream.executor.engine import Engine
from tests.support.engine import plain_session, result_rows

OLD_ENCODER = 1 << 62       # no column is long enough to be checked: every column a "column" record
ROWS = 3000


def _columns() -> list[tuple[np.ndarray, np.ndarray | None]]:
    n = 200
    return [(np.arange(n, dtype=np.int64), None),
            (np.full(n, np.datetime64(1_700_000_000_000_000, "us")), None),     # constant: logged once
            (np.full(n, -0.0), None),                   # constant bit for bit (not 0.0)
            (np.full(n, np.nan), None),                 # NaN != NaN, but the bits are one value
            (np.full(n, 7, dtype=np.int32), np.zeros(n, bool)),      # a NULL mask: logged as it is
            (np.where(np.arange(n) == n - 1, -0.0, 0.0), None)]      # equal values, not equal bits


def _same(a: list, b: list) -> bool:
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes() and (m is None) == (k is None)
               for (x, m), (y, k) in zip(a, b)) and len(a) == len(b)


def test_old_and_new_encodings_decode_to_the_same_columns(monkeypatch):
    cols = _columns()
    _head, new = wal.encode([StreamPart(1, 2, cols)])
    monkeypatch.setattr(wal_records, "CONST_MIN_ROWS", OLD_ENCODER)
    _head, old = wal.encode([StreamPart(1, 2, cols)])
    assert new.count(b"const_column") == 3 and b"const_column" not in old
    assert len(new) < len(old) - 3 * 190 * 8
    for body in (old, new):
        back = wal.decode_body(body)[0].columns
        assert _same(back, cols)
        assert all(d.flags.writeable for d, _m in back)


def test_a_malformed_constant_column_is_corruption():
    bad = records.Record("const_column", {"value": np.arange(2), "rows": 5})
    with pytest.raises(records.FormatError):
        wal_records.columns_in([bad])


def _fill(es) -> None:
    es.execute_sql("CREATE FOREIGN TABLE s (k int, x int, f float8) SERVER stream")
    es.execute_sql("CREATE VIEW v AS SELECT k, count(*) AS n, sum(x) AS sx, min(f) AS mf, "
                   "min(arrival_timestamp) AS a0, max(arrival_timestamp) AS a1 FROM s GROUP BY k")
    es.execute_sql("CREATE TABLE t (k int, x int, f float8)")
    data = "".join(f"{i % 13},7,-0\n" for i in range(ROWS)).encode()
    for target in ("s", "t", "s"):
        sink = es.execute_sql(f"COPY {target} FROM STDIN (FORMAT csv)").copy_in
        sink.feed(data)
        assert sink.finish() == f"COPY {ROWS}"


def _state(es) -> tuple:
    return (result_rows(es, "SELECT k, n, sx, mf::text, a0, a1 FROM v ORDER BY k"),
            result_rows(es, "SELECT k, x, f::text, count(*) FROM t GROUP BY k, x, f ORDER BY k"))


@pytest.mark.parametrize("writer", ["old", "new"])
def test_a_wal_written_by_either_encoder_replays(tmp_path, monkeypatch, writer):
    data = tmp_path / "d"
    if writer == "old":
        monkeypatch.setattr(wal_records, "CONST_MIN_ROWS", OLD_ENCODER)
    eng = Engine(str(data), fsync=False)
    eng.open()
    es = plain_session(eng)
    _fill(es)
    before = _state(es)
    assert before[0][0][1] == 2 * len(range(0, ROWS, 13)) and before[0][0][3] == "-0"
    assert before[1][0][2] == "-0"
    logged = b"".join(p.read_bytes() for p in data.rglob("wal.*"))
    assert (b"const_column" in logged) == (writer == "new")
    eng.db.wal.close()                  # a crash: the next start replays the WAL
    monkeypatch.undo()                  # ... with this server's reader and writer
    eng2 = Engine(str(data), fsync=False)
    eng2.open()
    try:
        assert _state(plain_session(eng2)) == before
    finally:
        eng2.close()
