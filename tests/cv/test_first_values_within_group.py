"""PipelineDB's documented form ``first_values(n) WITHIN GROUP (ORDER BY x)``
(aggregates.rst: "stores the first n values ordered by the provided sort
expression"), in a continuous view on both executor backends and over a
table, against PostgreSQL 15 computing the same: ``(array_agg(x ORDER BY x
...))[1:n]`` over a table holding the rows."""
from __future__ import annotations

import random

import psycopg
import pytest

from splitstream.executor.execution.aggregates import AggSpec
from splitstream.executor.stream.spark import translate
from splitstream.protocol import oids

ORDERS = ["", "DESC", "NULLS FIRST", "DESC NULLS LAST"]
COLUMNS = [("i", "int"), ("t", "text"), ("f", "float8")]
DDL = "(k int, i int, t text, f float8)"


def _rows(seed: int, n: int) -> list[tuple]:
    rng = random.Random(seed)

    def maybe(v):
        return None if rng.random() < 0.15 else v
    return [(rng.randrange(4), maybe(rng.randrange(-50, 50)), maybe(rng.choice("abcdefgh") * rng.randrange(1, 3)),
             maybe(rng.randrange(-40, 40) / 4)) for _ in range(n)]


def _ours(order: str, n: int) -> str:
    return ", ".join(f"first_values({n}) WITHIN GROUP (ORDER BY {c} {order}) AS {c}_first" for c, _ in COLUMNS)


def _postgres(table: str, order: str, n: int) -> str:
    cols = ", ".join(f"(array_agg({c} ORDER BY {c} {order}))[1:{n}]" for c, _ in COLUMNS)
    return f"SELECT k, {cols} FROM {table} GROUP BY k ORDER BY k"


@pytest.fixture
def pg_table(pg_conn, unique_name):
    t = unique_name("t")
    pg_conn.execute(f"CREATE TABLE {t} {DDL}")
    yield t
    pg_conn.execute(f"DROP TABLE {t}")


def _fill(conn, rel: str, rows: list[tuple]) -> None:
    conn.cursor().executemany(f"INSERT INTO {rel} VALUES (%s, %s, %s, %s)", rows)


@pytest.mark.parametrize("order", ORDERS)
def test_over_a_table(ss_conn, pg_conn, pg_table, order):
    rows = _rows(1, 200)
    ss_conn.execute(f"CREATE TABLE {pg_table} {DDL}")
    try:
        _fill(ss_conn, pg_table, rows)
        _fill(pg_conn, pg_table, rows)
        ours = ss_conn.execute(f"SELECT k, {_ours(order, 3)} FROM {pg_table} GROUP BY k ORDER BY k").fetchall()
        assert ours == pg_conn.execute(_postgres(pg_table, order, 3)).fetchall()
    finally:
        ss_conn.execute(f"DROP TABLE {pg_table}")


@pytest.mark.parametrize("backend", ["vector", "llvm"])
@pytest.mark.parametrize("order", ORDERS)
def test_in_a_continuous_view(ss_conn, pg_conn, pg_table, unique_name, backend, order):
    s, v = unique_name("s"), unique_name("v")
    try:
        ss_conn.execute(f"SET executor_backend = {backend}")
        ss_conn.execute(f"CREATE FOREIGN TABLE {s} {DDL} SERVER pipelinedb")
        ss_conn.execute(f"CREATE VIEW {v} AS SELECT k, {_ours(order, 4)} FROM {s} GROUP BY k")
        for seed in range(3):           # batches merged into the view's state
            rows = _rows(10 + seed, 120)
            _fill(ss_conn, s, rows)
            _fill(pg_conn, pg_table, rows)
        ours = ss_conn.execute(f"SELECT * FROM {v} ORDER BY k").fetchall()
        assert ours == pg_conn.execute(_postgres(pg_table, order, 4)).fetchall()
    finally:
        ss_conn.execute("RESET executor_backend")


def test_refusals(ss_conn):
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        ss_conn.execute("SELECT first_values(2) WITHIN GROUP (ORDER BY x, y) FROM (VALUES (1, 2)) t(x, y)")
    assert e.value.diag.message_hint.startswith("Order by one expression")
    with pytest.raises(psycopg.errors.UndefinedFunction):
        ss_conn.execute("SELECT first_values(2, 3) WITHIN GROUP (ORDER BY x) FROM (VALUES (1)) t(x)")
    with pytest.raises(psycopg.errors.UndefinedFunction):
        ss_conn.execute("SELECT first_values(1.5) WITHIN GROUP (ORDER BY x) FROM (VALUES (1)) t(x)")


def test_not_pushed_to_spark_unless_ascending():
    """Spark executors build first_values states ascending (sketch_states.build
    keeps no direction): another order stays on the server."""
    def spec(descending=False, nulls_first=None):
        s = AggSpec("first_values", [None, None], [oids.INT4, oids.INT4])
        s.descending, s.nulls_first = descending, nulls_first
        return s
    assert translate._state_layout(spec()) == ("sketch", ["state"])
    assert translate._state_layout(spec(nulls_first=False)) == ("sketch", ["state"])
    for s in (spec(descending=True), spec(nulls_first=True), spec(descending=True, nulls_first=False)):
        with pytest.raises(translate.NotPushable):
            translate._state_layout(s)
