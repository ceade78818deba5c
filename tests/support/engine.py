"""An in-process engine (no server, no socket) for tests that must reach
runtime objects directly: a view's lock, a freed context's address."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

from splitstream.executor.context import SessionInfo
from splitstream.executor.engine import Engine
from splitstream.server import session_settings


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


def postgres_session(eng: Engine, pid: int = 1):
    """A session as the superuser would get over the protocol (its startup settings)."""
    settings = session_settings.startup_settings({"user": "postgres", "database": "postgres"}, "postgres", True)
    return eng.new_session(SessionInfo(settings=settings, user="postgres", database="postgres", pid=pid))


def result_rows(es, sql: str) -> list[tuple]:
    """The rows of one statement, as tuples of Python values."""
    res = es.execute_sql(sql)
    return list(zip(*[c.to_pylist() for c in res.batch.cols]))


@contextlib.contextmanager
def session_after(data_dir: str, *statements: str, superuser: bool = True) -> Iterator[Any]:
    """An in-process session on a new engine over ``data_dir`` once
    ``statements`` have run (as the superuser, or with default settings)."""
    with open_engine(data_dir) as eng:
        es = postgres_session(eng) if superuser else plain_session(eng)
        for sql in statements:
            es.execute_sql(sql)
        yield es
