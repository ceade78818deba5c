"""Shared steps of the sketch view tests: feed a stream and its table twin
in batches, check, checkpoint, feed more, restart, check again."""
from __future__ import annotations

from typing import Callable

import pytest

from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, postgres_session, result_rows


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


def assert_sqlstate(data_dir: str, sql: str, state: str) -> None:
    """``sql`` fails with ``state`` (a PostgreSQL error, not a crash)."""
    with open_engine(data_dir) as eng:
        es = postgres_session(eng)
        with pytest.raises(PgError) as e:
            es.execute_sql(sql)
        assert e.value.sqlstate == state, e.value
