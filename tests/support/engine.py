"""An in-process engine (no server, no socket) for tests that must reach
runtime objects directly: a view's lock, a freed context's address."""
from __future__ import annotations

import contextlib
from typing import Iterator

from splitstream.executor.context import SessionInfo
from splitstream.executor.engine import Engine


@contextlib.contextmanager
def open_engine(data_dir: str, *, fsync: bool = False) -> Iterator[Engine]:
    eng = Engine(data_dir, fsync=fsync)
    eng.open()
    try:
        yield eng
    finally:
        eng.close()


def plain_session(eng: Engine):
    """A session with default settings (no protocol layer)."""
    return eng.new_session(SessionInfo(settings={}))
