"""A COPY into a stream is logged as what it did to each continuous view
(stream/view_deltas.py): a few groups instead of every row.  Replay merges
those deltas, so a view after a crash equals the view before it and the
same query over a table of the rows; a COPY whose views cannot be logged
so, or whose deltas would be larger than its rows, or whose stream gained
a view while it ran, is logged as its rows, as before."""
from __future__ import annotations

import os

import pytest

from splitstream.catalog.storage import database
from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, plain_session, result_rows

VIEWS = {
    "d_keyed": "SELECT k, count(*) AS n, count(x) AS nx, sum(x) AS sx, min(x) AS lo, max(x) AS hi, avg(x) AS ax, "
               "sum(f) AS sf, bool_and(b) AS ball, bool_or(b) AS bany, count(DISTINCT x % 5) AS dx FROM {s} GROUP BY k",
    "d_total": "SELECT count(*) AS n, sum(x) AS sx, max(f) AS mf FROM {s} WHERE x > 10",
    "d_window": "SELECT window_start, k, count(*) AS n, sum(x) AS sx FROM TUMBLE({s}, t, INTERVAL '1 minute') "
                "GROUP BY window_start, k",
}
COLUMNS = "k int, x int, f float8, b bool, t timestamp"


def _rows(n: int, start: int = 0) -> str:
    out = []
    for i in range(start, start + n):
        x = "" if i % 17 == 0 else str((i * 7919) % 1000 - 300)
        f = "" if i % 23 == 0 else repr(((i * 31) % 97) / 7.0)
        b = "" if i % 11 == 0 else ("t" if i % 3 else "f")
        out.append(f"{i % 10},{x},{f},{b},2026-01-01 00:{(i // 400) % 60:02d}:{i % 60:02d}\n")
    return "".join(out)


def _copy(session, stream: str, data: str, chunk: int = 1 << 16) -> str:
    sink = session.execute_sql(f"COPY {stream} FROM STDIN (FORMAT csv)").copy_in
    raw = data.encode()
    for i in range(0, len(raw), chunk):
        sink.feed(raw[i:i + chunk])
    return sink.finish()


def _reads(session, stream: str) -> dict[str, list]:
    return {name: sorted(result_rows(session, f"SELECT * FROM ({q.format(s=stream)}) AS q"), key=repr)
            for name, q in VIEWS.items()}


def _close(rows: list) -> list:
    """Floats to 12 significant digits: a view adds a float8 column in
    another order than a query over the table does."""
    return [tuple(float(f"{v:.12g}") if isinstance(v, float) else v for v in r) for r in rows]


def _views(session) -> dict[str, list]:
    return {name: sorted(result_rows(session, f"SELECT * FROM {name}"), key=repr) for name in VIEWS}


def _wal_bytes(data_dir: str) -> int:
    wal = os.path.join(data_dir, "wal")
    return sum(os.path.getsize(os.path.join(wal, f)) for f in os.listdir(wal))


def _no_rows_logged(monkeypatch) -> list[int]:
    """Fail the test if a COPY is logged as rows; returns the COPYs that were."""
    calls: list[int] = []
    real = database.Database.ingest_parts

    def counting(self, *a, **kw):
        calls.append(1)
        return real(self, *a, **kw)
    monkeypatch.setattr(database.Database, "ingest_parts", counting)
    return calls


def _after_kill(monkeypatch) -> None:
    """Closing the engine writes no checkpoint, as after kill -9: the WAL replays."""
    monkeypatch.setattr(database.Database, "checkpoint", lambda self: None)


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_copy_logged_as_view_deltas_replays_exactly(tmp_path, monkeypatch, backend):
    data = str(tmp_path / "data")
    rows = [_rows(20000, 0), _rows(15000, 20000), _rows(3, 35000)]
    with open_engine(data) as eng:
        s = plain_session(eng)
        s.execute_sql(f"SET executor_backend = '{backend}'")
        s.execute_sql(f"CREATE FOREIGN TABLE dstream ({COLUMNS}) SERVER stream")
        s.execute_sql(f"CREATE TABLE dtable ({COLUMNS})")
        for name, q in VIEWS.items():
            s.execute_sql(f"CREATE VIEW {name} AS {q.format(s='dstream')}")
        s.execute_sql("CHECKPOINT")
        logged_as_rows = _no_rows_logged(monkeypatch)
        grew = 0
        for r in rows:
            before = _wal_bytes(data)
            assert _copy(s, "dstream", r) == f"COPY {r.count(chr(10))}"
            grew += _wal_bytes(data) - before
            _copy(s, "dtable", r)
            # read after every COPY: a read empties the compiled tables the next COPY's groups go into
            assert {k: _close(v) for k, v in _views(s).items()} == \
                {k: _close(v) for k, v in _reads(s, "dtable").items()}
        # the three-row COPY: its groups would take more than its rows
        assert logged_as_rows == [1]
        # 35,003 rows of 33 bytes (five columns and arrival_timestamp): the deltas hold
        # a few hundred groups (and the values of count(DISTINCT ...), which its state keeps)
        assert grew < 35003 * 33 // 2, grew
        live = _views(s)
        want = _reads(s, "dtable")
        assert {k: _close(v) for k, v in live.items()} == {k: _close(v) for k, v in want.items()}
        _after_kill(monkeypatch)
    with open_engine(data) as eng:
        s = plain_session(eng)
        assert _views(s) == live          # exactly: replay merges the same partial states
        # and the views go on from the replayed state
        _copy(s, "dstream", _rows(5000, 40000))
        _copy(s, "dtable", _rows(5000, 40000))
        assert {k: _close(v) for k, v in _views(s).items()} == \
            {k: _close(v) for k, v in _reads(s, "dtable").items()}


def _logged_as_rows_and_recovered(tmp_path, monkeypatch, stream: str, view: str, data: str, check: str) -> list:
    """COPY ``data`` into a new stream (``stream``: its DDL) with one view:
    the COPY is logged as its rows, and after a kill the view reads
    (``check``) as before; returns that result."""
    path = str(tmp_path / "data")
    with open_engine(path) as eng:
        s = plain_session(eng)
        s.execute_sql(stream)
        s.execute_sql(view)
        logged_as_rows = _no_rows_logged(monkeypatch)
        _copy(s, stream.split()[3], data)
        assert logged_as_rows == [1]
        live = result_rows(s, check)
        _after_kill(monkeypatch)
    with open_engine(path) as eng:
        assert result_rows(plain_session(eng), check) == live
    return live


def test_deltas_larger_than_the_rows_are_logged_as_rows(tmp_path, monkeypatch):
    """A view grouped by a key unique per row would log more than the rows."""
    got = _logged_as_rows_and_recovered(
        tmp_path, monkeypatch, "CREATE FOREIGN TABLE uq (k int, x int) SERVER stream",
        "CREATE VIEW uq_v AS SELECT k, count(*) AS n, sum(x) AS sx FROM uq GROUP BY k",
        "".join(f"{i},{i % 7}\n" for i in range(5000)), "SELECT count(*), sum(n), sum(sx) FROM uq_v")
    assert got == [(5000, 5000, sum(i % 7 for i in range(5000)))]


def test_view_created_while_a_copy_runs_gets_its_rows_after_a_crash_too(tmp_path, monkeypatch):
    """The deltas name the views that staged; a view created meanwhile makes
    the COPY log its rows instead, so replay feeds whatever views there are."""
    data = str(tmp_path / "data")
    with open_engine(data) as eng:
        s, other = plain_session(eng), plain_session(eng)
        s.execute_sql("CREATE FOREIGN TABLE mid (k int, x int) SERVER stream")
        s.execute_sql("CREATE VIEW mid_a AS SELECT k % 3 AS g, count(*) AS n FROM mid GROUP BY k % 3")
        logged_as_rows = _no_rows_logged(monkeypatch)
        sink = s.execute_sql("COPY mid FROM STDIN (FORMAT csv)").copy_in
        sink.feed("".join(f"{i},{i}\n" for i in range(3000)).encode())
        other.execute_sql("CREATE VIEW mid_b AS SELECT sum(x) AS sx FROM mid")
        sink.feed("".join(f"{i},{i}\n" for i in range(3000, 6000)).encode())
        assert sink.finish() == "COPY 6000"
        assert logged_as_rows == [1]
        live = (result_rows(s, "SELECT * FROM mid_a ORDER BY g"), result_rows(s, "SELECT * FROM mid_b"))
        _after_kill(monkeypatch)
    with open_engine(data) as eng:
        s = plain_session(eng)
        assert (result_rows(s, "SELECT * FROM mid_a ORDER BY g"), result_rows(s, "SELECT * FROM mid_b")) == live


def test_failed_copy_logs_no_delta(tmp_path, monkeypatch):
    data = str(tmp_path / "data")
    with open_engine(data) as eng:
        s = plain_session(eng)
        s.execute_sql("CREATE FOREIGN TABLE bad (k int, x int) SERVER stream")
        s.execute_sql("CREATE VIEW bad_v AS SELECT k, count(*) AS n FROM bad GROUP BY k")
        _copy(s, "bad", "".join(f"{i % 4},{i}\n" for i in range(1000)))
        with pytest.raises(PgError) as err:
            _copy(s, "bad", "".join(f"{i % 4},{i}\n" for i in range(20000)) + "1,oops\n")
        assert err.value.sqlstate == "22P02"
        assert result_rows(s, "SELECT sum(n) FROM bad_v") == [(1000,)]
        _after_kill(monkeypatch)
    with open_engine(data) as eng:
        assert result_rows(plain_session(eng), "SELECT sum(n) FROM bad_v") == [(1000,)]


def test_sliding_window_views_stay_logged_as_rows(tmp_path, monkeypatch):
    """A view whose stage is not one private table (sw panes) is not eligible."""
    got = _logged_as_rows_and_recovered(
        tmp_path, monkeypatch, "CREATE FOREIGN TABLE swin (k int, x int) SERVER stream",
        "CREATE VIEW swin_v WITH (sw = '1 hour') AS SELECT k, count(*) AS n FROM swin GROUP BY k",
        "".join(f"{i % 4},{i}\n" for i in range(2000)), "SELECT sum(n) FROM swin_v")
    assert got == [(2000,)]
