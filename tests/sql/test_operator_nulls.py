"""Every binary arithmetic and comparison operator over each pair of
numeric-ish types, on batches that are all NULL, partly NULL and free of
NULLs, compared with PostgreSQL 15 -- in plain queries over tables and in
continuous views over a stream (issue 14: ``sum(amount * 1.19)`` over a batch
whose amounts were all NULL failed with an internal TypeError).

The cases are generated: operand columns of int2/int4/int8/numeric/
float4/float8/interval, plus int, numeric and float constants on either side,
times the operators.  A pair PostgreSQL refuses (``interval + int``) must be
refused with the same SQLSTATE."""
from __future__ import annotations

import psycopg
import pytest

from tests.support.diff import OutcomeMismatch, assert_same, execute

COLUMNS = {"i2": "int2", "i4": "int4", "i8": "int8", "n": "numeric(10,2)", "f4": "float4", "f8": "float8",
           "iv": "interval"}
CONSTANTS = ["2", "1.19", "2.5::float8"]
ARITH = ["+", "-", "*", "/", "%", "^"]
COMPARE = ["=", "<>", "<", "<=", ">", ">="]

#: one batch each: no NULL, some NULL, all NULL (no zero divisors anywhere)
ROWS = {
    "none": ["(1, 3, -7, 11, 2.50, 0.75, -4.5, '1 day 02:00')",
             "(2, -2, 5, 3, -1.25, 2.5, 8, '1 mon 3 sec')",
             "(3, 4, 9, -6, 7.00, -3.25, 0.5, '-5 hours')"],
    "some": ["(1, NULL, 5, 3, NULL, 2.5, NULL, '2 days')",
             "(2, 6, NULL, -4, 3.75, NULL, 1.5, NULL)",
             "(3, -3, 2, NULL, -0.50, 1.25, 6, '-1 mon')"],
    "all": ["(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
            "(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"],
}
KIND = {"none": 3, "some": 2, "all": 1}


def _operands() -> list[tuple[str, str]]:
    cols = list(COLUMNS)
    pairs = [(a, b) for a in cols for b in cols + CONSTANTS]
    return pairs + [(c, b) for c in CONSTANTS for b in cols]


def _create(conn: psycopg.Connection, name: str, stream: bool) -> None:
    cols = ", ".join(f"{c} {t}" for c, t in COLUMNS.items())
    kind = "FOREIGN TABLE" if stream else "TABLE"
    server = " SERVER stream" if stream else ""
    conn.execute(f"CREATE {kind} {name} (k int, id int, {cols}){server}")


def _fill(conn: psycopg.Connection, name: str) -> None:
    """One INSERT per kind of batch, so each arrives as a batch of its own."""
    for kind, rows in ROWS.items():
        values = ", ".join(f"({KIND[kind]}, " + r[1:] for r in rows)
        conn.execute(f"INSERT INTO {name} VALUES {values}")


@pytest.fixture
def tables(ss_conn, pg_conn, unique_name):
    names = {kind: unique_name(kind) for kind in ROWS}
    for conn in (ss_conn, pg_conn):
        for kind, name in names.items():
            cols = ", ".join(f"{c} {t}" for c, t in COLUMNS.items())
            conn.execute(f"CREATE TABLE {name} (id int, {cols})")
            conn.execute(f"INSERT INTO {name} VALUES {', '.join(ROWS[kind])}")
    yield names
    for conn in (ss_conn, pg_conn):
        for name in names.values():
            conn.execute(f"DROP TABLE {name}")


def _one_pair(a: str, b: str, names: dict[str, str]) -> list[str]:
    """The statements for one operand pair: every operator at once, then
    (when PostgreSQL refuses some) one statement per operator."""
    def select(ops: list[str]) -> str:
        exprs = ", ".join(f"{a} {op} {b}" for op in ops)
        parts = [f"SELECT {KIND[k]} AS k, id, {exprs} FROM {names[k]}" for k in ROWS]
        return " UNION ALL ".join(parts) + " ORDER BY 1, 2"
    return [select(ARITH + COMPARE)] + [select([op]) for op in ARITH + COMPARE]


def test_operators_on_tables_match_postgres(ss_conn, pg_conn, tables) -> None:
    """All differences are collected, so one run lists every broken pair."""
    checked, problems = 0, []
    for a, b in _operands():
        whole, *single = _one_pair(a, b, tables)
        pg = execute(pg_conn, whole)
        for stmt in [whole] if not pg.failed else single:
            try:
                assert_same(execute(ss_conn, stmt), pg if stmt is whole else execute(pg_conn, stmt), ordered=True)
            except OutcomeMismatch as exc:
                problems.append(str(exc))
            checked += 1
    assert not problems, f"{len(problems)} of {checked} statements differ:\n" + "\n".join(problems)
    assert checked > len(_operands())


def _valid(pg_conn, table: str, a: str, b: str, op: str) -> bool:
    return not execute(pg_conn, f"SELECT {a} {op} {b} FROM {table}").failed


def _view_exprs(pg_conn, table: str, op: str) -> list[str]:
    """The aggregates a view over ``op`` keeps: for each pair PostgreSQL accepts,
    count and sum of an arithmetic result, count, bool_or and bool_and of a comparison."""
    out = []
    for a, b in _operands():
        if a in CONSTANTS and b in CONSTANTS or not _valid(pg_conn, table, a, b, op):
            continue
        e = f"{a} {op} {b}"
        if op in COMPARE:
            out += [f"count({e})", f"bool_or({e})", f"bool_and({e})"]
        else:
            out += [f"count({e})", f"sum({e})"]
    return out


@pytest.mark.parametrize("op", ARITH + COMPARE)
def test_operators_in_continuous_views_match_postgres(ss_conn, pg_conn, unique_name, op) -> None:
    stream, table, view = unique_name("s"), unique_name("t"), unique_name("v")
    _create(ss_conn, stream, stream=True)
    _create(pg_conn, table, stream=False)
    try:
        _fill(pg_conn, table)                # first: pairs that fail on these rows are left out
        exprs = _view_exprs(pg_conn, table, op)
        assert exprs
        named = ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))
        ss_conn.execute(f"CREATE VIEW {view} AS SELECT k, {named} FROM {stream} GROUP BY k")
        _fill(ss_conn, stream)
        got = execute(ss_conn, f"SELECT * FROM {view} ORDER BY k")
        want = execute(pg_conn, f"SELECT k, {named} FROM {table} GROUP BY k ORDER BY k")
        assert not got.failed, got.describe()
        assert got.rows is not None and want.rows is not None and len(want.rows) == 3
        assert len(got.rows) == 3, got.describe()
        for g, w, e in zip(zip(*got.rows), zip(*want.rows), ["k"] + exprs):
            assert g == w or _floats_close(g, w), f"{e}: splitstream {g} != postgresql {w}"
    finally:
        ss_conn.execute(f"DROP FOREIGN TABLE {stream} CASCADE")
        pg_conn.execute(f"DROP TABLE {table}")


def _floats_close(a, b) -> bool:
    try:
        return all((x is None and y is None) or abs(float(x) - float(y)) <= 1e-9 * max(1.0, abs(float(y)))
                   for x, y in zip(a, b))
    except (TypeError, ValueError):
        return False
