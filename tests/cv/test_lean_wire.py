"""The lean INSERT path on the wire (issue 19): answers written by the
engine's thread straight to the socket and cycles taken raw from the read
chunk keep the protocol's order for a client that pipelines, and a bad value
among them fails only its own cycle."""
from __future__ import annotations

import socket
import struct

import pytest

from tests.support.restarts import connect, started_with


def _msg(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def _cycle(a: bytes) -> bytes:
    bind = b"\0s1\0" + struct.pack("!hh", 0, 1) + struct.pack("!i", len(a)) + a + struct.pack("!h", 0)
    return _msg(b"B", bind) + _msg(b"E", b"\0\0\0\0\0") + _msg(b"S", b"")


class _Client:
    """A minimal v3 client: startup (trust), then raw messages."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=30)
        params = b"user\0postgres\0database\0postgres\0\0"
        self.sock.sendall(struct.pack("!ii", len(params) + 8, 196608) + params)
        self.buf = b""
        while self.next()[0] != b"Z":
            pass

    def next(self) -> tuple[bytes, bytes]:
        while len(self.buf) < 5 or len(self.buf) < 1 + struct.unpack_from("!i", self.buf, 1)[0]:
            data = self.sock.recv(65536)
            assert data, "the server closed the connection"
            self.buf += data
        n = 1 + struct.unpack_from("!i", self.buf, 1)[0]
        kind, body, self.buf = self.buf[:1], self.buf[5:n], self.buf[n:]
        return kind, body

    def until_ready(self) -> list[tuple[bytes, bytes]]:
        out = [self.next()]
        while out[-1][0] != b"Z":
            out.append(self.next())
        return out


@pytest.mark.parametrize("direct_from", ["0", "64"], ids=["engine-thread-answers", "loop-answers"])
def test_pipelined_lean_cycles_are_answered_in_order_each_error_its_own(ss_server_factory, direct_from):
    srv = started_with(ss_server_factory(env={"SPLITSTREAM_DIRECT_ANSWERS_FROM": direct_from}),
                       "CREATE FOREIGN TABLE s (a int) SERVER stream",
                       "CREATE VIEW v AS SELECT count(*), sum(a) FROM s")
    c = _Client(srv.host, srv.port)
    c.sock.sendall(_msg(b"P", b"s1\0INSERT INTO s VALUES ($1)\0\0\0") + _msg(b"S", b""))
    assert [k for k, _ in c.until_ready()] == [b"1", b"Z"]
    for warm in (b"1", b"2"):           # the shape is learnt, then served raw
        c.sock.sendall(_cycle(warm))
        assert [k for k, _ in c.until_ready()] == [b"2", b"C", b"Z"]
    values = [str(k).encode() if k % 17 else b"bad" for k in range(3, 203)]
    for i in range(0, len(values), 3):  # sent without waiting: some writes coalesce, some do not
        c.sock.sendall(b"".join(_cycle(v) for v in values[i:i + 3]))
    for v in values:
        answer = c.until_ready()
        if v == b"bad":
            # as PostgreSQL: the Bind fails (no BindComplete), the cycle skips to its Sync
            assert [k for k, _ in answer] == [b"E", b"Z"] and b"22P02" in answer[0][1], v
            assert b'invalid input syntax for type integer: "bad"' in answer[0][1]
        else:
            assert [k for k, _ in answer] == [b"2", b"C", b"Z"], v
            assert answer[1][1] == b"INSERT 0 1\0"
    c.sock.close()
    good = [1, 2] + [int(v) for v in values if v != b"bad"]
    with connect(srv) as conn:
        assert conn.execute("SELECT * FROM v").fetchone() == (len(good), sum(good))
