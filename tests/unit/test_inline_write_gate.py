"""Which Bind/Execute/Sync insert cycles the server may run on its event-loop
thread: only those the engine can open without waiting (writer lock free)
and commit without a WAL flush."""
from __future__ import annotations

from splitstream.protocol import messages
from splitstream.server.session import ProtocolSession

from .conftest import run_sql as _sql


def _queue_cycle(ps: ProtocolSession, sql: str) -> None:
    ps.push([messages.Message("P", b"w\0" + sql.encode() + b"\0\0\0"), messages.Message("S", b"")])
    assert ps.step().startswith(b"1")
    ps.push([messages.Message("B", b"\0w\0\0\0\0\0\0\0"), messages.Message("E", b"\0\0\0\0\0"), messages.Message("S", b"")])


def test_unlogged_insert_goes_inline_and_commits(fsync_sessions):
    ps = fsync_sessions(1)
    _sql(ps, "CREATE UNLOGGED TABLE u (a int, b int)")
    _queue_cycle(ps, "INSERT INTO u VALUES (1, 2)")
    assert ps.inline_ok()
    out = ps.step()
    assert b"INSERT 0 1" in out and out.endswith(b"Z\0\0\0\x05I")
    assert b"D\0\0\0\x10\0\x02\0\0\0\x011\0\0\0\x012" in _sql(ps, "SELECT a, b FROM u")
    other = fsync_sessions(2)
    _sql(other, "CREATE TABLE t2 (a int)")     # the writer lock was released by the inline commit


def test_logged_insert_with_fsync_stays_on_a_worker(fsync_sessions):
    ps = fsync_sessions(1)
    _sql(ps, "CREATE TABLE l (a int)")
    _queue_cycle(ps, "INSERT INTO l VALUES (1)")
    assert not ps.inline_ok()
    ps.step()
    _sql(ps, "SET synchronous_commit = off")      # the commit no longer waits for the disk
    ps.push([messages.Message("B", b"\0w\0\0\0\0\0\0\0"), messages.Message("E", b"\0\0\0\0\0"), messages.Message("S", b"")])
    assert ps.inline_ok()
    assert b"INSERT 0 1" in ps.step()


def test_busy_writer_lock_means_no_inline(fsync_sessions):
    holder, ps = fsync_sessions(1), fsync_sessions(2)
    _sql(holder, "CREATE UNLOGGED TABLE u (a int)")
    _sql(holder, "CREATE TABLE o (a int)")
    _sql(holder, "BEGIN")
    _sql(holder, "INSERT INTO o VALUES (1)")
    _queue_cycle(ps, "INSERT INTO u VALUES (1)")
    assert not ps.inline_ok()
    _sql(holder, "COMMIT")
    assert ps.inline_ok()
    assert b"INSERT 0 1" in ps.step()
