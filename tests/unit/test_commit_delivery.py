"""Batched INSERT Executes pipelined ahead of a COMMIT are delivered by the
COMMIT.  When that delivery fails, the block ends rolled back, as a COMMIT
that fails on a deferred constraint does in PostgreSQL: the client gets the
error and ReadyForQuery says idle, not failed."""
from __future__ import annotations

from splitstream.protocol import messages

from .conftest import run_sql


def _parse(name: str, sql: str) -> messages.Message:
    return messages.Message("P", name.encode() + b"\0" + sql.encode() + b"\0\0\0")


def _bind_exec(name: str, param: bytes | None) -> list[messages.Message]:
    if param is None:
        bind = b"\0" + name.encode() + b"\0\0\0\0\0\0\0"
    else:
        bind = b"\0" + name.encode() + b"\0\0\0\0\x01" + len(param).to_bytes(4, "big") + param + b"\0\0"
    return [messages.Message("B", bind), messages.Message("E", b"\0\0\0\0\0")]


def test_failed_delivery_at_commit_ends_the_block(sessions):
    ps = sessions(1)
    run_sql(ps, "CREATE FOREIGN TABLE s (k int) SERVER stream")
    run_sql(ps, "CREATE TABLE dim (k int)")
    run_sql(ps, "CREATE VIEW v AS SELECT count(*) AS n FROM s JOIN dim ON s.k = dim.k")
    assert run_sql(ps, "BEGIN").endswith(b"Z\0\0\0\x05T")
    ps.push([_parse("ins", "INSERT INTO dim VALUES ($1)"), _parse("c", "COMMIT"),
             *_bind_exec("ins", b"1"), *_bind_exec("ins", b"2"), *_bind_exec("c", None), messages.Message("S", b"")])
    out = ps.step()
    assert b"C0A000" in out                     # the view refuses changes of a table it joins with a stream
    assert out.endswith(b"Z\0\0\0\x05I")         # the block is over, not failed
    assert run_sql(ps, "SELECT 1").endswith(b"Z\0\0\0\x05I")
    assert b"D\0\0\0\x0b\0\x01\0\0\0\x010" in run_sql(ps, "SELECT count(*) FROM dim")   # nothing delivered
