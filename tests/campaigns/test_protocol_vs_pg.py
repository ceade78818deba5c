"""Malformed and out-of-phase frontend messages: the same answer as PostgreSQL 15.

The fuzzer checks that the server survives; this pins what it answers, for
the cases where PostgreSQL defines it (message kinds, SQLSTATEs and texts in
order), sending the same bytes to both servers.  Known, deliberate
divergences are not listed: PostgreSQL folds ``1/0`` at Bind where we fail
at Execute, checks result format codes only when it sends rows, closes the
connection after a message out of place during COPY IN (we resynchronise),
raises internal errors on unknown parameter type OIDs, and closes without a
word on an over-long Sync (we send FATAL 08P01 first).
"""
from __future__ import annotations

import socket
import struct
import time

import psycopg
import pytest

from . import wire as W

END = b"SELECT 'fz_end'"

CASES: dict[str, list[bytes]] = {
    "bind_before_parse": [W.bind(b"", b"nope", [], [], []), W.execute(b""), W.sync()],
    "execute_unknown_portal": [W.execute(b"nope"), W.sync()],
    "describe_unknown": [W.describe(b"P", b"nope"), W.sync(), W.describe(b"S", b"nope"), W.sync()],
    "copy_messages_outside_copy": [W.copy_data(b"x"), W.copy_done(), W.copy_fail(b"x"), W.query(b"SELECT 1")],
    "startup_after_startup": [W.startup({b"user": b"postgres"})],
    "ssl_request_after_startup": [W.ssl_request()],
    "password_after_startup": [W.password(b"x\0")],
    "unknown_type_byte": [W.typed(b"y", b"")],
    "duplicate_named_parse": [W.parse(b"d", b"SELECT 1", []), W.parse(b"d", b"SELECT 2", []), W.sync()],
    "close_unknown": [W.close(b"S", b"nope"), W.close(b"P", b"nope"), W.sync()],
    "bind_parameter_count": [W.parse(b"", b"SELECT 1", []), W.bind(b"", b"", [], [b"1"], []), W.sync()],
    "bind_format_count": [W.parse(b"", b"SELECT $1::int", []), W.bind(b"", b"", [0, 0], [b"1"], []), W.sync()],
    "bind_format_code": [W.parse(b"", b"SELECT $1::int", []), W.bind(b"", b"", [2], [b"1"], []), W.sync()],
    "bind_result_format_count": [W.parse(b"", b"SELECT 1", []), W.bind(b"", b"", [], [], [0, 0]), W.sync()],
    "parse_negative_count": [W.typed(b"P", b"\0SELECT 1\0\xff\xff"), W.sync()],
    "bind_negative_length": [W.parse(b"", b"SELECT $1::int", []),
                             W.typed(b"B", b"\0\0\0\0\0\1\xff\xff\xff\xfe\0\0"), W.sync()],
    "bind_short": [W.parse(b"", b"SELECT $1::int", []), W.typed(b"B", b"\0\0\0\0\0\1\0\0\0\4\0"), W.sync()],
    "execute_negative_max_rows": [W.parse(b"", b"SELECT 1", []), W.bind(b"", b"", [], [], []),
                                  W.execute(b"", -1), W.sync()],
    "query_bad_utf8": [W.query(b"SELECT '\xff'"), W.query(b"SELECT '\xc3\x28'")],
    "statement_name_bad_utf8": [W.parse(b"\xe2\x82", b"SELECT 1", []), W.sync()],
    "describe_bad_kind": [W.typed(b"D", b"X\0"), W.sync()],
    "close_bad_kind": [W.typed(b"C", b"X\0"), W.sync()],
    "empty_query": [W.query(b"")],
    "empty_prepared": [W.parse(b"", b"", []), W.bind(b"", b"", [], [], []), W.describe(b"P", b""),
                       W.execute(b""), W.sync()],
    "query_without_terminator": [W.typed(b"Q", b"SELECT 1")],
    "execute_finished_portal": [W.parse(b"", b"SELECT 1", []), W.bind(b"p", b"", [], [], []), W.execute(b"p"),
                                W.execute(b"p"), W.sync()],
    "portal_suspended": [W.parse(b"", b"SELECT generate_series(1,3)", []), W.bind(b"p", b"", [], [], []),
                         W.execute(b"p", 1), W.execute(b"p", 5), W.sync()],
    "trailing_bytes": [W.typed(b"Q", b"SELECT 1\0xx"), W.typed(b"P", b"\0SELECT 1\0\0\0zz"), W.typed(b"S", b"x"),
                       W.parse(b"", b"SELECT 1", []), W.typed(b"H", b"x"), W.sync()],
    "sync_inside_copy_in": [W.query(b"COPY fz_pg (a) FROM STDIN"), W.copy_data(b"1\n"), W.sync(), W.copy_done()],
    "copy_in_extended_fail": [W.parse(b"", b"COPY fz_pg (a) FROM STDIN", []), W.bind(b"", b"", [], [], []),
                              W.execute(b""), W.copy_fail(b"no"), W.sync()],
}


def _answers(host: str, port: int, frames: list[bytes]) -> list[str]:
    """What the server sends for ``frames`` (then a marker query), as
    message kinds and ``E:state:message`` entries, until the marker's
    ReadyForQuery or the close."""
    with socket.create_connection((host, port), timeout=20) as s:
        s.sendall(W.startup({b"user": b"postgres", b"database": b"postgres"}))
        log = W.BackendLog()
        while not log.ready:
            log.feed(s.recv(65536))
        s.sendall(b"".join(frames) + W.copy_fail(b"end") + W.sync() + W.query(END))
        buf, out = b"", []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                data = s.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                return out + ["EOF"]
            buf += data
            while len(buf) >= 5:
                kind, length = chr(buf[0]), struct.unpack_from("!i", buf, 1)[0]
                if len(buf) < length + 1:
                    break
                body, buf = buf[5:length + 1], buf[length + 1:]
                if kind == "E":
                    sev, state, msg = W.error_fields(body)
                    out.append(f"E:{sev}:{state}:{msg}")
                else:
                    out.append(kind)
                if kind == "D" and b"fz_end" in body:
                    return out
    raise AssertionError(f"no answer within 20 s: {out}")


@pytest.fixture(scope="module")
def both(pg15, ss_server):  # type: ignore[no-untyped-def]
    for dsn in (pg15.dsn, ss_server.dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("DROP TABLE IF EXISTS fz_pg")
            c.execute("CREATE TABLE fz_pg (a int)")
    return pg15, ss_server


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_answer_as_postgres(both, case: str) -> None:  # type: ignore[no-untyped-def]
    pg, ss = both
    want = _answers(pg.host, pg.port, CASES[case])
    got = _answers(ss.host, ss.port, CASES[case])
    assert got == want
