"""Shared steps of the sketch view tests: feed a stream and its table twin
in batches, check, checkpoint, feed more, restart (or kill -9), check,
feed more, check again."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import pytest

from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, postgres_session, result_rows
from tests.support.restarts import connect, restarted
from tests.support.servers import SplitstreamServer


def batches_checkpoint_restart(data_dir: str, setup: Callable, insert: Callable, check: Callable,
                               batches: list[tuple[int, int]], after_checkpoint: tuple[int, int]):
    """Runs ``setup``, inserts ``batches`` (lo, hi) and checks, checkpoints
    and inserts ``after_checkpoint`` (which the restart after it replays)."""
    with open_engine(data_dir) as eng:
        es = postgres_session(eng)
        setup(es.execute_sql)
        for lo, hi in batches:
            insert(es.execute_sql, lo, hi)
        check(lambda q: result_rows(es, q))
        es.execute_sql("CHECKPOINT")
        insert(es.execute_sql, *after_checkpoint)


@contextlib.contextmanager
def reopened(data_dir: str, insert: Callable, check: Callable, more: tuple[int, int] | None) -> Iterator[Any]:
    """The engine opened again on ``data_dir`` (what came after the
    checkpoint is replayed): check, insert ``more`` and check again; yields
    the session for the test's own checks."""
    with open_engine(data_dir) as eng:
        es = postgres_session(eng)
        check(lambda q: result_rows(es, q))
        if more is not None:
            insert(es.execute_sql, *more)
            check(lambda q: result_rows(es, q))
        yield es


def survives_kill9(srv: SplitstreamServer, setup: Callable, insert: Callable, check: Callable,
                   before: tuple[int, int], after_checkpoint: tuple[int, int], after_restart: tuple[int, int]) -> None:
    """Over the wire: inserts ``before``, checkpoints, inserts
    ``after_checkpoint`` (only in the WAL), kill -9, checks the recovered
    views, inserts ``after_restart`` and checks again."""
    with connect(srv) as c:
        setup(c.execute)
        insert(c.execute, *before)
        c.execute("CHECKPOINT")
        insert(c.execute, *after_checkpoint)
    with restarted(srv, crash=True) as c:
        check(lambda q: c.execute(q).fetchall())
        insert(c.execute, *after_restart)
        check(lambda q: c.execute(q).fetchall())


def assert_sqlstate(data_dir: str, sql: str, state: str) -> None:
    """``sql`` fails with ``state`` (a PostgreSQL error, not a crash)."""
    with open_engine(data_dir) as eng:
        es = postgres_session(eng)
        with pytest.raises(PgError) as e:
            es.execute_sql(sql)
        assert e.value.sqlstate == state, e.value
