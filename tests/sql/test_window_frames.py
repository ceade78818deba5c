"""Window frames against PostgreSQL 15, generated (issue 15, scope 8): ROWS,
RANGE with offsets over numbers, dates and timestamps, GROUPS, every
EXCLUDE, with and without PARTITION BY, over NULLs, NaN, infinities and
ties, for the vector-kernel aggregates and the fallback alike.  Float sums
must agree exactly: PostgreSQL adds a frame's floats in row order."""
from __future__ import annotations

import math
import random
from decimal import Decimal

import psycopg
import pytest

SEED = 20261126
N_QUERIES = 260

ROWS = []
_rng = random.Random(7)
for i in range(1, 61):
    k = None if i % 11 == 0 else _rng.randint(0, 12)
    exact = [None, 0.25 * _rng.randint(-40, 40), float("nan"), float("inf"), float("-inf")][
        0 if i % 13 == 0 else 2 if i % 17 == 0 else 3 if i == 23 else 4 if i == 41 else 1]
    wild = [1e17, 1.0, -1e17, 3.3, 1e-3, None, 2.0 ** 60, 7.25][_rng.randrange(8)]
    num = None if i % 9 == 0 else Decimal(_rng.randint(-5000, 5000)) / 100
    day = None if i % 10 == 0 else f"2024-02-{_rng.randint(1, 29):02d}"
    ts = None if i % 12 == 0 else f"2024-03-10 {_rng.randint(0, 23):02d}:{_rng.choice(['00', '30'])}:00"
    ROWS.append((i, i % 3, k, exact, wild, num, day, ts, None if i % 7 == 0 else bool(i % 2)))

CREATE = ("CREATE TABLE wf (id int, p int, k int, fx float8, fw float8, n numeric, d date, ts timestamp, b bool)")

#: (function, order-independent within peers)
FUNCS = [("count(*)", True), ("count(fx)", True), ("sum(fx)", True), ("avg(fx)", True), ("sum(k)", True),
         ("avg(k)", True), ("sum(n)", True), ("avg(n)", True), ("min(fx)", True), ("max(fx)", True),
         ("min(k)", True), ("max(d)", True), ("min(ts)", True), ("bool_and(b)", True), ("bool_or(b)", True),
         ("max(n)", True), ("sum(fw)", False), ("avg(fw)", False), ("first_value(id)", False),
         ("last_value(id)", False), ("nth_value(id, 2)", False), ("string_agg(id::text, ',')", False)]
BOUNDS = ["UNBOUNDED PRECEDING", "{o} PRECEDING", "CURRENT ROW", "{o} FOLLOWING", "UNBOUNDED FOLLOWING"]
EXCLUDES = ["", " EXCLUDE CURRENT ROW", " EXCLUDE GROUP", " EXCLUDE TIES", " EXCLUDE NO OTHERS"]
#: RANGE keys and offsets of their type
RANGE_KEYS = [("k", ["0", "1", "3"]), ("fx", ["0.5", "2", "'Infinity'"]), ("n", ["1.5", "10"]),
              ("d", ["interval '1 day'", "interval '3 days'"]), ("ts", ["interval '90 minutes'", "interval '1 day'"])]


def _frame(rng: random.Random, mode: str, offsets: list[str]) -> str:
    while True:
        a, b = sorted(rng.sample(range(len(BOUNDS)), 2)) if rng.random() < 0.85 else (rng.randrange(4), None)
        if b is None and a == 3:
            continue
        o1, o2 = rng.choice(offsets), rng.choice(offsets)
        start = BOUNDS[a].format(o=o1)
        if b is None:
            return f"{mode} {start}{rng.choice(EXCLUDES)}"
        return f"{mode} BETWEEN {start} AND {BOUNDS[b].format(o=o2)}{rng.choice(EXCLUDES)}"


def _queries() -> list[str]:
    rng = random.Random(SEED)
    out = []
    for _ in range(N_QUERIES):
        mode = rng.choice(["ROWS", "RANGE", "GROUPS"])
        part = rng.choice(["", "PARTITION BY p "])
        desc = rng.choice(["", " DESC", " DESC NULLS LAST", " NULLS FIRST"])
        if mode == "ROWS":
            fn, _ = rng.choice(FUNCS)
            order = f"ORDER BY k{desc}, id"
            frame = _frame(rng, mode, ["0", "1", "2", "5"])
        elif mode == "GROUPS":
            fn = rng.choice([f for f, ok in FUNCS if ok])
            order = f"ORDER BY k{desc}"
            frame = _frame(rng, mode, ["0", "1", "2"])
        else:
            fn = rng.choice([f for f, ok in FUNCS if ok])
            key, offsets = rng.choice(RANGE_KEYS)
            order = f"ORDER BY {key}{desc}"
            frame = _frame(rng, mode, offsets)
        out.append(f"SELECT id, {fn} OVER ({part}{order} {frame}) FROM wf ORDER BY id")
    return out


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def _outcome(conn: psycopg.Connection, sql: str):
    try:
        return conn.execute(sql).fetchall()
    except psycopg.Error as e:
        return e.sqlstate


@pytest.fixture(scope="module")
def both(ss_server, pg15):
    conns = [psycopg.connect(dsn, autocommit=True) for dsn in (ss_server.dsn, pg15.dsn)]
    for c in conns:
        c.execute("DROP TABLE IF EXISTS wf")
        c.execute(CREATE)
        with c.cursor() as cur:
            cur.executemany("INSERT INTO wf VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", ROWS)
    yield conns
    for c in conns:
        c.execute("DROP TABLE wf")
        c.close()


def test_generated_frames_agree_with_postgresql(both):
    ss, pg = both
    bad = []
    for sql in _queries():
        want, got = _outcome(pg, sql), _outcome(ss, sql)
        if isinstance(want, str) or isinstance(got, str):
            ok = want == got
        else:
            ok = len(want) == len(got) and all(_same(x, y) for r, s in zip(want, got) for x, y in zip(r, s))
        if not ok:
            bad.append((sql, want if isinstance(want, str) else want[:8], got if isinstance(got, str) else got[:8]))
    assert not bad, f"{len(bad)} of {N_QUERIES} differ; first: {bad[:3]}"


@pytest.mark.parametrize("sql", [
    # PostgreSQL adds floats in row order per frame: 1e17 + 1 loses the 1, the next frames are exact
    "SELECT i, sum(x) OVER (ORDER BY i ROWS 1 PRECEDING) FROM (VALUES (1, 1e17::float8), (2, 1), (3, 1), (4, 1), "
    "(5, 1)) t(i, x) ORDER BY i",
    "SELECT i, max(x) OVER (ORDER BY i ROWS 1023 PRECEDING) FROM (SELECT i, (i * 7919 % 1000)::float8 AS x "
    "FROM generate_series(1, 3000) i) t ORDER BY i",
    "SELECT i, min(x) OVER (ORDER BY i ROWS BETWEEN 5 PRECEDING AND 5 FOLLOWING EXCLUDE GROUP) FROM "
    "(SELECT i, i % 13 AS x FROM generate_series(1, 200) i) t ORDER BY i",
])
def test_known_cases(both, sql):
    ss, pg = both
    want, got = _outcome(pg, sql), _outcome(ss, sql)
    assert got == want


@pytest.mark.parametrize("sql", [
    "SELECT sum(k) OVER (ORDER BY k, id RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM wf",
    "SELECT sum(k) OVER (RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM wf",
    "SELECT sum(k) OVER (PARTITION BY p GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM wf",
    "SELECT sum(k) OVER (ORDER BY k ROWS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM wf",
    "SELECT sum(k) OVER (ORDER BY k ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM wf",
    "SELECT sum(k) OVER (ORDER BY k ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING) FROM wf",
    "SELECT sum(k) OVER (ORDER BY k ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM wf",
    "SELECT sum(k) OVER (ORDER BY k ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM wf",
    "SELECT sum(k) OVER (ORDER BY k ROWS BETWEEN NULL PRECEDING AND CURRENT ROW) FROM wf",
    "SELECT nth_value(id, 0) OVER (ORDER BY id) FROM wf",
])
def test_frame_errors_agree(both, sql):
    ss, pg = both
    assert _outcome(ss, sql) == _outcome(pg, sql)
