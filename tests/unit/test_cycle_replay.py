"""The server replays a repeated read cycle only while the engine vouches the
result is unchanged, and the replayed bytes equal a fresh execution's."""
from __future__ import annotations

import pytest

from splitstream.protocol import messages
from splitstream.server.session import ProtocolSession

from .conftest import run_sql as _sql


def _cycle(ps: ProtocolSession) -> tuple[bytes, bool]:
    """One B/D/E/S cycle of statement "s1"; returns (response, replayed)."""
    ps.push([messages.Message("B", b"\0s1\0\0\0\0\0\0\0"), messages.Message("D", b"P\0"), messages.Message("E", b"\0\0\0\0\0"),
             messages.Message("S", b"")])
    sig = ps.cycle_signature()
    assert sig is not None
    out = ps.replay_cycle(sig)
    if out is not None:
        return out, True
    return ps.step_cycle(sig), False


def _prepare(ps: ProtocolSession, sql: str) -> None:
    ps.push([messages.Message("P", b"s1\0" + sql.encode() + b"\0\0\0"), messages.Message("S", b"")])
    assert ps.step().startswith(b"1")


def test_view_read_replayed_until_new_input(sessions):
    reader, writer = sessions(1), sessions(2)
    _sql(writer, "CREATE FOREIGN TABLE s (k int, x int) SERVER stream")
    _sql(writer, "CREATE VIEW v AS SELECT k, sum(x) AS sx FROM s GROUP BY k")
    _sql(writer, "INSERT INTO s VALUES (1, 10)")
    _prepare(reader, "SELECT sx FROM v WHERE k = 1")
    first, replayed = _cycle(reader)
    assert not replayed and b"10" in first
    again, replayed = _cycle(reader)
    assert replayed and again == first
    _sql(writer, "INSERT INTO s VALUES (1, 5)")
    fresh, replayed = _cycle(reader)
    assert not replayed and b"15" in fresh
    assert _cycle(reader) == (fresh, True)


def test_table_and_settings_changes_end_replay(sessions):
    reader, writer = sessions(1), sessions(2)
    _sql(writer, "CREATE TABLE t (a int)")
    _sql(writer, "INSERT INTO t VALUES (1)")
    _prepare(reader, "SELECT a, timestamptz '2024-01-01 00:00:00+00' AS ts FROM t")
    _cycle(reader)
    assert _cycle(reader)[1]
    _sql(writer, "INSERT INTO t VALUES (2)")
    assert not _cycle(reader)[1]
    assert _cycle(reader)[1]
    _sql(reader, "SET TimeZone = 'Asia/Tokyo'")
    out, replayed = _cycle(reader)
    assert not replayed and b"+09" in out


@pytest.mark.parametrize("sql", ["SELECT now()", "SELECT random()", "SELECT clock_timestamp()",
                                 "SELECT current_setting('TimeZone')", "SELECT * FROM pg_class LIMIT 1",
                                 "SELECT g FROM generate_series(1, 3) g"])
def test_time_random_and_catalog_reads_are_never_replayed(sessions, sql):
    ps = sessions(1)
    _prepare(ps, sql)
    for _ in range(3):
        assert not _cycle(ps)[1]


def test_no_replay_inside_a_transaction_block(sessions):
    ps = sessions(1)
    _sql(ps, "CREATE TABLE t (a int)")
    _prepare(ps, "SELECT count(*) FROM t")
    _sql(ps, "BEGIN")
    for _ in range(3):
        ps.push([messages.Message("B", b"\0s1\0\0\0\0\0\0\0"), messages.Message("E", b"\0\0\0\0\0"), messages.Message("S", b"")])
        sig = ps.cycle_signature()     # None once the block keeps the portal open
        assert sig is None or ps.replay_cycle(sig) is None
        out = ps.step() if sig is None else ps.step_cycle(sig)
        assert out.endswith(b"Z\0\0\0\x05T")
    _sql(ps, "COMMIT")
