"""Regressions found by the protocol fuzzing and load campaigns (tests/campaigns/).

Each test pins one bug the campaigns found, on the fake-engine server of
test_server_connection (protocol behaviour) or the real engine (SQL).
"""
from __future__ import annotations

import asyncio

import pytest

import struct

from splitstream.protocol import messages
from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, plain_session
from tests.unit.test_server_connection import Client, _client, _msg, err_fields
# the fake-engine server's fixtures (tests take them as arguments: F811 there)
from tests.unit.test_server_connection import event_loop_policy, secured, trust  # noqa: F401

pytestmark = pytest.mark.filterwarnings("ignore:Overriding the \"event_loop_policy\" fixture:DeprecationWarning")


async def test_half_closed_client_gets_answers_to_what_it_sent(trust):  # noqa: F811
    """A client that pipelines queries and then sends FIN (shutdown(SHUT_WR))
    is answered before the server closes, as PostgreSQL reads to EOF; the
    server used to close at once and drop the queued work."""
    server, engine = trust
    c = await _client(server)
    c.query("select 7")
    c.query("select 8")
    c.w.write_eof()
    data = await asyncio.wait_for(c.r.read(), 10)      # read() returns at the server's close
    assert data.count(b"Z\0\0\0\5I") == 2
    assert b"\x01\x00\x00\x00\x017" in data and b"\x01\x00\x00\x00\x018" in data
    for _ in range(100):
        if engine.closed_sessions:
            break
        await asyncio.sleep(0.02)
    assert engine.closed_sessions == 1 and server.session_count() == 0


async def test_half_close_during_copy_in_aborts_the_copy(trust):  # noqa: F811
    server, engine = trust
    c = await _client(server)
    c.query("copy in")
    assert (await c.recv())[0] == "G"
    c.raw(_msg(b"d", b"1\ta\n"))
    c.w.write_eof()
    assert await asyncio.wait_for(c.r.read(), 10) == b""
    for _ in range(100):
        if engine.aborted:
            break
        await asyncio.sleep(0.02)
    assert engine.aborted and not engine.copied


@pytest.mark.parametrize("sql", ["SELECT $\x08::text", "SHOW", "SHOW;", "SHOW4TimeZone", "RESET", "RESET;",
                                 "SAVEPOINT", "SET", "SET4x", "DELETE $1", "DELETE foo", "DELETE FROM $1",
                                 "UPDATE $1 SET x = 1"])
def test_truncated_or_run_on_statements_are_syntax_errors(tmp_path, sql):
    """Each reached Python (int() on "$\\x08", an IndexError on SHOW/RESET/
    SAVEPOINT without a name, an assert on SET alone): XX000 before."""
    with open_engine(tmp_path) as engine:
        session = plain_session(engine)
        with pytest.raises(PgError) as err:
            session.prepare(sql, [])
        assert err.value.sqlstate == "42601", err.value.message


def test_show_reset_and_savepoint_still_take_their_operand(tmp_path):
    with open_engine(tmp_path) as engine:
        session = plain_session(engine)
        for sql in ("SHOW TIME ZONE", "show timezone;", "RESET timezone", "BEGIN", "SAVEPOINT sp1;", "ROLLBACK"):
            session.execute_sql(sql)


@pytest.mark.parametrize("kind", list("CDEHScfX"))
def test_payload_free_message_with_a_huge_length_fails_at_its_header(kind):
    """A Sync announcing 100 MB used to make the server wait for (and buffer)
    100 MB; PostgreSQL caps these kinds at 10000 bytes (PQ_SMALL_MESSAGE_LIMIT)."""
    reader = messages.FrontendReader()
    reader.startup_phase = False
    reader.feed(kind.encode() + struct.pack("!i", 100 * 1024 * 1024) + b"\0" * 16)
    with pytest.raises(PgError) as err:
        reader.next_message()
    assert err.value.sqlstate == "08P01" and err.value.message == "invalid message length 104857600"


def test_large_messages_still_pass_after_authentication():
    reader = messages.FrontendReader()
    reader.startup_phase = False
    body = b"SELECT '" + b"x" * 200_000 + b"'\0"
    reader.feed(b"Q" + struct.pack("!i", len(body) + 4) + body + b"S\0\0\0\4")
    first, second = reader.next_message(), reader.next_message()
    assert first is not None and first.kind == "Q" and first.body == body
    assert second is not None and second.kind == "S"


async def test_unauthenticated_client_cannot_announce_a_huge_password_message(secured):  # noqa: F811
    """Before authentication only password/SASL messages arrive: a 200 MB one is
    refused at its header (FATAL 54000), not buffered while the peer sends it."""
    server, _ = secured
    c = await Client.open(server.port)
    c.startup("alice", "postgres")
    kind, body = await c.recv()
    assert kind == "R" and struct.unpack_from("!i", body)[0] == 10      # SASL requested
    c.raw(b"p" + struct.pack("!i", 200 * 1024 * 1024) + b"SCRAM-SHA-256\0")
    kind, body = await c.recv()
    fields = err_fields(body)
    assert kind == "E" and fields["S"] == "FATAL" and fields["C"] == "54000", fields
    assert await asyncio.wait_for(c.r.read(), 10) == b""


async def test_concurrent_logins_cannot_exceed_max_connections(trust):  # noqa: F811
    """The limit was checked before authentication's await and the session
    counted only after it, so a burst of logins all passed the check: the
    load campaign's connection storm. Now a slot is held from the check on."""
    server, _ = trust
    server.config.max_connections = 3
    clients = [await Client.open(server.port) for _ in range(8)]
    results = await asyncio.gather(*(c.login() for c in clients))
    accepted = [c for c, msgs in zip(clients, results) if msgs[-1][0] == "Z"]
    refused = [err_fields(msgs[-1][1]) for msgs in results if msgs[-1][0] == "E"]
    assert len(accepted) == 3 and len(refused) == 5
    assert all(e["C"] == "53300" and e["M"] == "sorry, too many clients already" for e in refused)
    for c in accepted:
        await c.close()


# Messages with bytes beyond their last field: PostgreSQL 15 answers each with
# ERROR 08P01 "invalid message format" (checked against it); they were accepted.
TRAILING = {
    "query": [_msg(b"Q", b"select 1\0xx")],
    "parse": [_msg(b"P", b"\0select 1\0\0\0zz"), _msg(b"S", b"")],
    "bind": [_msg(b"P", b"\0select 1\0\0\0"), _msg(b"B", b"\0\0\0\0\0\0\0\0zz"), _msg(b"S", b"")],
    "execute": [_msg(b"P", b"\0select 1\0\0\0"), _msg(b"B", b"\0\0\0\0\0\0\0\0"), _msg(b"E", b"\0\0\0\0\0zz"),
                _msg(b"S", b"")],
    "describe": [_msg(b"P", b"\0select 1\0\0\0"), _msg(b"D", b"S\0zz"), _msg(b"S", b"")],
    "close": [_msg(b"C", b"S\0zz"), _msg(b"S", b"")],
    "flush": [_msg(b"P", b"\0select 1\0\0\0"), _msg(b"H", b"x"), _msg(b"S", b"")],
    "sync": [_msg(b"S", b"x")],
}


@pytest.mark.parametrize("case", sorted(TRAILING))
async def test_trailing_bytes_are_invalid_message_format(trust, case):  # noqa: F811
    server, _ = trust
    c = await _client(server)
    c.raw(b"".join(TRAILING[case]))
    msgs = await c.until("Z")
    errs = [err_fields(body) for kind, body in msgs if kind == "E"]
    assert [(e["S"], e["C"], e["M"]) for e in errs] == [("ERROR", "08P01", "invalid message format")], msgs
    c.query("select 5")                     # the session goes on
    assert [k for k, _ in await c.until("Z")] == ["T", "D", "C", "Z"]
    await c.close()


@pytest.mark.parametrize("packet", [
    struct.pack("!ii", 23, 196608) + b"user\0postgres\0\0",     # a second startup packet
    struct.pack("!ii", 8, 80877103),                            # SSLRequest after startup
    b"\x16\x03\x01\x02\x00",                                     # a TLS ClientHello
    b"GET / HTTP/1.1\r\n",
])
async def test_invalid_type_byte_is_fatal_at_once(trust, packet):  # noqa: F811
    """PostgreSQL checks the type byte before the length; the server used to
    take the next four bytes as a length and wait for that many (up to 256 MB)."""
    server, _ = trust
    c = await _client(server)
    c.raw(packet)
    kind, body = await c.recv(timeout=5)
    fields = err_fields(body)
    assert kind == "E" and fields["S"] == "FATAL" and fields["C"] == "08P01"
    assert fields["M"] == f"invalid frontend message type {packet[0]}"
    assert await asyncio.wait_for(c.r.read(), 5) == b""


async def test_fatal_error_reaches_a_client_that_keeps_sending(trust):  # noqa: F811
    """A client still writing when the server ends its connection with a
    FATAL used to get a reset that made its kernel discard the unread error
    (the fuzzer's "silent" closes): the server now sends FIN after the error
    and drains the client's bytes a moment before it closes (a lingering close)."""
    server, _ = trust
    c = await _client(server)
    c.raw(b"y\0\0\0\4")                       # an invalid type byte: FATAL at once
    try:
        for _ in range(200):                  # ... while the client goes on writing
            c.raw(b"d\0\0\x10\4" + b"x" * 4096)
            await c.w.drain()
            await asyncio.sleep(0.001)
    except (ConnectionError, OSError):
        pass
    data = await asyncio.wait_for(c.r.read(), 10)
    assert data[:1] == b"E" and b"invalid frontend message type 121" in data


async def test_fatal_from_the_session_lingers_too(trust):  # noqa: F811
    """A message the session refuses with FATAL (here a password message after
    login) ends the connection by the same lingering close."""
    server, _ = trust
    c = await _client(server)
    c.raw(_msg(b"p", b"secret\0"))
    try:
        for _ in range(200):
            c.raw(b"d\0\0\x10\4" + b"x" * 4096)
            await c.w.drain()
            await asyncio.sleep(0.001)
    except (ConnectionError, OSError):
        pass
    data = await asyncio.wait_for(c.r.read(), 10)
    assert data[:1] == b"E" and b"invalid frontend message type 112" in data
