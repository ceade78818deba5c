"""In-process protocol sessions over a real engine (no socket): for unit
tests of the server's state machine decisions."""
from __future__ import annotations

import contextlib
from typing import Callable, Iterator

import pytest

from splitstream.executor.context import SessionInfo
from splitstream.executor.engine import Engine
from splitstream.protocol import messages
from splitstream.server import session_settings
from splitstream.server.session import ProtocolSession


@contextlib.contextmanager
def protocol_sessions(data_dir: str, *, fsync: bool) -> Iterator[Callable[[int], ProtocolSession]]:
    """Yields ``make(pid)``: a new authenticated session on one open engine."""
    eng = Engine(data_dir, fsync=fsync)
    eng.open()

    def make(pid: int) -> ProtocolSession:
        settings = session_settings.startup_settings({"user": "postgres", "database": "postgres"}, "postgres", True)
        info = SessionInfo(settings=settings, user="postgres", database="postgres", pid=pid)
        return ProtocolSession(eng.new_session(info), info)

    try:
        yield make
    finally:
        eng.close()


@pytest.fixture
def sessions(tmp_path) -> Iterator[Callable[[int], ProtocolSession]]:
    with protocol_sessions(str(tmp_path / "d"), fsync=False) as make:
        yield make


@pytest.fixture
def fsync_sessions(tmp_path) -> Iterator[Callable[[int], ProtocolSession]]:
    """As ``sessions``, with commits that flush the WAL to disk."""
    with protocol_sessions(str(tmp_path / "d"), fsync=True) as make:
        yield make


def run_sql(ps: ProtocolSession, sql: str) -> bytes:
    """A simple Query message through the session; its whole response."""
    ps.push([messages.Message("Q", sql.encode() + b"\0")])
    return ps.step()
