"""Regressions found by the protocol fuzzing and load campaigns (tests/campaigns/).

Each test pins one bug the campaigns found, on the fake-engine server of
test_server_connection (protocol behaviour) or the real engine (SQL).
"""
from __future__ import annotations

import asyncio

import pytest

from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, plain_session
from tests.unit.test_server_connection import (  # noqa: F401 - fixtures
    _client, _msg, errors, event_loop_policy, kinds, tags, trust,
)

pytestmark = pytest.mark.filterwarnings("ignore:Overriding the \"event_loop_policy\" fixture:DeprecationWarning")


async def test_half_closed_client_gets_answers_to_what_it_sent(trust):
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


async def test_half_close_during_copy_in_aborts_the_copy(trust):
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


def test_dollar_followed_by_a_control_character_is_a_syntax_error(tmp_path):
    """``SELECT $\\x08::text`` reached int() in the binder: XX000 before."""
    with open_engine(tmp_path) as engine:
        session = plain_session(engine)
        with pytest.raises(PgError) as err:
            session.prepare("SELECT $\x08::text", [])
        assert err.value.sqlstate == "42601"
