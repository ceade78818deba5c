"""Connections to a test server across a restart: the steps every
durability test repeats (stop it, or SIGKILL it as kill -9 does; start it
again on the same data directory and port; connect again)."""
from __future__ import annotations

import psycopg

from tests.support.servers import SplitstreamServer


def connect(server: SplitstreamServer) -> psycopg.Connection:
    """An autocommit connection to ``server`` (closed at the end of a ``with``)."""
    return psycopg.connect(server.dsn, autocommit=True)


def restarted(server: SplitstreamServer, *, crash: bool) -> psycopg.Connection:
    """``server`` stopped (SIGKILLed when ``crash``: what was not durable is
    lost, recovery replays the WAL) and started again; a new autocommit
    connection to it."""
    server.restart(crash=crash)
    return connect(server)


def started_with(server: SplitstreamServer, *statements: str) -> SplitstreamServer:
    """``server`` once ``statements`` have run on it, each autocommitted: the
    state a restart test starts from."""
    with connect(server) as c:
        for sql in statements:
            c.execute(sql)  # type: ignore[arg-type]
    return server
