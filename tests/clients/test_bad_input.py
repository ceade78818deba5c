"""Malformed and hostile input over real sockets: each gets an ErrorResponse or a
clean close, and the server goes on serving everybody else."""
from __future__ import annotations

import asyncio
import socket
import struct
import time

import asyncpg
import psycopg
import pytest

PROTO_3 = 196608


def startup_packet(version: int = PROTO_3, **params: str) -> bytes:
    params = {"user": "postgres", "database": "postgres", **params}
    body = struct.pack("!i", version) + b"".join(k.encode() + b"\0" + v.encode() + b"\0" for k, v in params.items()) + b"\0"
    return struct.pack("!i", len(body) + 4) + body


def msg(kind: bytes, body: bytes = b"") -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


class Raw:
    """A minimal frontend over a socket: send bytes, read typed backend messages."""

    def __init__(self, server, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=timeout)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self, n: int) -> bool:
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                return False
            self.buf += chunk
        return True

    def read(self) -> tuple[bytes, bytes] | None:
        """Next (type, body), or None at EOF."""
        if not self._fill(5):
            return None
        kind, length = self.buf[:1], struct.unpack("!i", self.buf[1:5])[0]
        if not self._fill(1 + length):
            return None
        body, self.buf = self.buf[5:1 + length], self.buf[1 + length:]
        return kind, body

    def read_until(self, kinds: bytes) -> list[tuple[bytes, bytes]]:
        out = []
        while True:
            m = self.read()
            if m is None:
                return out
            out.append(m)
            if m[0] in kinds:
                return out

    def login(self) -> "Raw":
        self.send(startup_packet())
        msgs = self.read_until(b"ZE")
        assert msgs and msgs[-1][0] == b"Z", msgs
        return self

    def query(self, sql: bytes | str) -> list[tuple[bytes, bytes]]:
        self.send(msg(b"Q", (sql.encode() if isinstance(sql, str) else sql) + b"\0"))
        return self.read_until(b"Z")

    def at_eof(self) -> bool:
        try:
            return self.read() is None
        except (ConnectionResetError, socket.timeout):
            return True

    def close(self) -> None:
        self.sock.close()


def fields(body: bytes) -> dict[str, str]:
    """ErrorResponse/NoticeResponse fields by code letter."""
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return out


def errors(msgs) -> list[dict[str, str]]:
    return [fields(b) for k, b in msgs if k == b"E"]


def assert_serving(server) -> None:
    with psycopg.connect(server.dsn, autocommit=True, connect_timeout=10) as c:
        assert c.execute("SELECT 40 + 2").fetchone() == (42,)


@pytest.fixture
def bystander(ss_server):
    """A session that is open while the bad input arrives and must survive it."""
    conn = psycopg.connect(ss_server.dsn, autocommit=True, connect_timeout=10)
    conn.execute("SELECT 1")
    yield conn
    assert conn.execute("SELECT 'alive'").fetchone() == ("alive",)
    conn.close()


def test_garbage_startup_packet(ss_server, bystander):
    for junk in (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"\x00\x00\x00\x08\xde\xad\xbe\xef", b"\xff" * 64):
        r = Raw(ss_server)
        r.send(junk)
        msgs = r.read_until(b"E")
        assert all(k == b"E" for k, _ in msgs)
        for e in errors(msgs):
            assert e["S"] == "FATAL" and e["C"] in ("08P01", "0A000")  # bad length / unknown version
        assert r.at_eof()
        r.close()
    assert_serving(ss_server)


def test_unknown_protocol_version(ss_server, bystander):
    for version in ((4 << 16), (2 << 16), (1234 << 16) | 1):
        r = Raw(ss_server)
        r.send(startup_packet(version))
        msgs = r.read_until(b"E")
        errs = errors(msgs)
        assert len(errs) == 1 and errs[0]["C"] == "0A000", msgs
        assert "unsupported frontend protocol" in errs[0]["M"]
        assert r.at_eof()
        r.close()
    # a newer 3.x minor version is negotiated down, not refused
    r = Raw(ss_server)
    r.send(startup_packet(PROTO_3 + 2, **{"_pq_.test": "x"}))
    msgs = r.read_until(b"ZE")
    assert msgs[0][0] == b"v" and msgs[-1][0] == b"Z"
    r.close()
    assert_serving(ss_server)


def test_invalid_startup_setting_is_fatal(ss_server, bystander):
    """A bad value in the startup packet gets SET's 22023 as a FATAL, like PostgreSQL."""
    r = Raw(ss_server)
    r.send(startup_packet(options="-c statement_timeout=abc"))
    errs = errors(r.read_until(b"E"))
    assert len(errs) == 1 and errs[0]["S"] == "FATAL" and errs[0]["C"] == "22023"
    assert errs[0]["M"] == 'invalid value for parameter "statement_timeout": "abc"'
    r.close()
    assert_serving(ss_server)


def test_wrong_message_lengths(ss_server, bystander):
    # a startup packet claiming 2 GB
    r = Raw(ss_server)
    r.send(struct.pack("!ii", 0x7FFFFFFF, PROTO_3))
    errs = errors(r.read_until(b"E"))
    assert errs and errs[0]["C"] == "08P01"
    assert r.at_eof()
    r.close()
    # a typed message claiming 2 GB, and ones shorter than their own length field
    for frame in (b"Q" + struct.pack("!i", 0x7FFFFFFF) + b"SELECT 1", b"Q" + struct.pack("!i", 2),
                  b"P" + struct.pack("!i", -5)):
        r = Raw(ss_server).login()
        t0 = time.monotonic()
        r.send(frame)
        msgs = r.read_until(b"E")
        errs = errors(msgs)
        assert errs and errs[0]["S"] == "FATAL" and errs[0]["C"] in ("08P01", "54000"), msgs
        assert r.at_eof()
        assert time.monotonic() - t0 < 5  # refused at once, not after reading 2 GB
        r.close()
    # a length that disagrees with the body (Bind whose counts run past its end)
    r = Raw(ss_server).login()
    r.send(msg(b"P", b"\0SELECT 1\0\0\0") + msg(b"B", b"\0\0\x00\x00\x00\x05") + msg(b"S"))
    msgs = r.read_until(b"Z")
    assert errors(msgs) and errors(msgs)[0]["C"] == "08P01"
    assert r.query("SELECT 7")[-1][0] == b"Z"  # the session survives a malformed body
    r.close()
    assert_serving(ss_server)


def test_invalid_utf8_in_query(ss_server, bystander):
    r = Raw(ss_server).login()
    msgs = r.query(b"SELECT '\xff\xfe invalid'")
    errs = errors(msgs)
    assert errs and errs[0]["C"] == "22021", msgs
    assert msgs[-1] == (b"Z", b"I")
    ok = r.query("SELECT 'fine'")
    assert not errors(ok) and any(k == b"D" for k, _ in ok)
    # in Parse and in a text parameter too
    r.send(msg(b"P", b"\0SELECT '\xc3\x28'\0\0\0") + msg(b"S"))
    assert errors(r.read_until(b"Z"))[0]["C"] == "22021"
    r.send(msg(b"P", b"\0SELECT $1::text\0\0\0") + msg(b"B", b"\0\0\0\0\0\x01\0\0\0\x02\xff\xff\0\0")
           + msg(b"E", b"\0\0\0\0\0") + msg(b"S"))
    assert errors(r.read_until(b"Z"))[0]["C"] == "22021"
    r.close()
    assert_serving(ss_server)


def test_bind_with_wrong_parameter_count(ss_server, bystander):
    r = Raw(ss_server).login()
    parse = msg(b"P", b"s1\0SELECT $1::int + $2::int\0\0\0")
    bind_one = msg(b"B", b"\0s1\0\0\0\0\x01\0\0\0\x011\0\0")
    r.send(parse + bind_one + msg(b"E", b"\0\0\0\0\0") + msg(b"S"))
    msgs = r.read_until(b"Z")
    errs = errors(msgs)
    assert len(errs) == 1 and errs[0]["C"] == "08P01", msgs
    assert "bind message supplies 1 parameters" in errs[0]["M"]
    assert msgs[-1] == (b"Z", b"I")
    # the statement is still there and works with the right count
    bind_two = msg(b"B", b"\0s1\0\0\0\0\x02\0\0\0\x012\0\0\0\x013\0\0")
    r.send(bind_two + msg(b"E", b"\0\0\0\0\0") + msg(b"S"))
    msgs = r.read_until(b"Z")
    assert not errors(msgs)
    assert [b for k, b in msgs if k == b"D"] == [b"\0\x01\0\0\0\x015"]
    r.close()
    assert_serving(ss_server)


def test_client_vanishes_mid_query(ss_server, bystander):
    for _ in range(3):
        r = Raw(ss_server).login()
        r.send(msg(b"Q", b"SELECT pg_sleep(30)\0"))
        time.sleep(0.2)
        r.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
        r.close()
    t0 = time.monotonic()
    assert_serving(ss_server)
    assert bystander.execute("SELECT 1").fetchone() == (1,)
    assert time.monotonic() - t0 < 5


def test_client_vanishes_mid_copy(ss_server, bystander, unique_name):
    t = unique_name()
    bystander.execute(f"CREATE TABLE {t} (id int, s text)")
    r = Raw(ss_server).login()
    r.send(msg(b"Q", f"COPY {t} FROM STDIN".encode() + b"\0"))
    assert r.read()[0] == b"G"
    r.send(msg(b"d", b"".join(f"{i}\trow {i}\n".encode() for i in range(1000))) + msg(b"d", b"1000\tpartial ro"))
    time.sleep(0.2)
    r.close()
    # and one more that vanishes in the middle of a CopyData message
    r = Raw(ss_server).login()
    r.send(msg(b"Q", f"COPY {t} FROM STDIN (FORMAT csv)".encode() + b"\0"))
    assert r.read()[0] == b"G"
    r.send(b"d" + struct.pack("!i", 10000) + b"1,abc\n")
    r.close()
    deadline = time.monotonic() + 5
    while True:  # the aborted COPYs leave nothing behind (tables are transactional)
        assert bystander.execute(f"SELECT count(*) FROM {t}").fetchone() == (0,)
        if time.monotonic() > deadline - 4.5:
            break
        time.sleep(0.1)
    with bystander.cursor() as cur:
        with cur.copy(f"COPY {t} FROM STDIN") as cp:
            cp.write_row((1, "after"))
    assert bystander.execute(f"SELECT s FROM {t}").fetchall() == [("after",)]
    bystander.execute(f"DROP TABLE {t}")


def test_two_hundred_connections_at_once(ss_server_factory):
    server = ss_server_factory(extra_args=["--max-connections", "250", "--fsync", "off"])

    async def main():
        async def one(i):
            c = await asyncpg.connect(server.url, timeout=60)
            try:
                return await c.fetchval("SELECT $1::int", i)
            finally:
                await c.close()

        got = await asyncio.gather(*(one(i) for i in range(200)))
        assert sorted(got) == list(range(200))

        # and 200 that connect, send half a startup packet (or nothing) and drop
        async def half(i):
            reader, writer = await asyncio.open_connection(server.host, server.port)
            if i % 2:
                writer.write(startup_packet()[:7])
                await writer.drain()
            writer.close()

        await asyncio.gather(*(half(i) for i in range(200)))

    asyncio.run(asyncio.wait_for(main(), 120))
    assert_serving(server)
    # no session leaked: a max_connections-sized burst still fits
    async def burst():
        conns = await asyncio.gather(*(asyncpg.connect(server.url, timeout=60) for _ in range(240)))
        await asyncio.gather(*(c.close() for c in conns))

    asyncio.run(asyncio.wait_for(burst(), 120))
    assert_serving(server)
