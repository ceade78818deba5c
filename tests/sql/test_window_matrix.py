"""Window functions over a table against PostgreSQL 15, every combination
(issue 16 acceptance): each frame kind (ROWS, RANGE with offsets, GROUPS,
running and moving) × min, max, sum, count, avg, bool_and, stddev × int,
float8 of mixed magnitudes with NaN, numeric, all with NULLs; written
inline and unaliased (the column is named after the function) and through a
WINDOW clause with a column alias.  Values and column names must agree
exactly (PostgreSQL adds a frame's floats in row order, and so must we)."""
from __future__ import annotations

import math
import random
from decimal import Decimal

import psycopg
import pytest

CREATE = "CREATE TABLE wm (id int, g int, i int, f float8, n numeric, b bool)"

FRAMES = {
    "rows_moving": "ORDER BY id ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING",
    "rows_running": "ORDER BY id ROWS UNBOUNDED PRECEDING",
    "rows_long": "PARTITION BY g ORDER BY id ROWS 40 PRECEDING",
    "range_offset": "ORDER BY g RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING",
    "range_default": "PARTITION BY g ORDER BY i",
    "groups": "ORDER BY g GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW",
    "whole": "PARTITION BY g",
}
FUNCS = ["min", "max", "sum", "count", "avg", "stddev"]
COLUMNS = ["i", "f", "n"]


def _rows() -> list[tuple]:
    rng = random.Random(16)
    out = []
    for r in range(1, 181):
        i = None if r % 7 == 0 else rng.randint(-1000, 1000)
        f = [None, float("nan"), 1e17, -1e17, 1e-9, 3.25, 2.0 ** 60, rng.uniform(-5, 5)][
            0 if r % 11 == 0 else 1 if r % 29 == 0 else rng.randrange(2, 8)]
        n = None if r % 9 == 0 else Decimal(rng.randint(-10 ** 6, 10 ** 6)) / 1000
        b = None if r % 13 == 0 else rng.random() < 0.9
        out.append((r, r % 6, i, f, n, b))
    return out


def _queries() -> list[tuple[str, str]]:
    out = []
    calls = [(f"{fn}({c})", fn) for fn in FUNCS for c in COLUMNS] + [("bool_and(b)", "bool_and"), ("count(*)", "count")]
    for frame_name, frame in FRAMES.items():
        for call, fn in calls:
            out.append((f"{frame_name}: {call}", f"SELECT id, {call} OVER ({frame}) FROM wm ORDER BY id"))
            out.append((f"{frame_name}: {call} aliased",
                        f"SELECT id, {call} OVER w AS {fn}_w FROM wm WINDOW w AS ({frame}) ORDER BY id"))
    return out


@pytest.fixture(scope="module")
def both(ss_server, pg15):
    conns = [psycopg.connect(dsn, autocommit=True) for dsn in (ss_server.dsn, pg15.dsn)]
    for c in conns:
        c.execute("DROP TABLE IF EXISTS wm")
        c.execute(CREATE)
        with c.cursor() as cur:
            cur.executemany("INSERT INTO wm VALUES (%s, %s, %s, %s, %s, %s)", _rows())
    yield conns
    for c in conns:
        c.execute("DROP TABLE wm")
        c.close()


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


def _outcome(conn, sql: str):
    try:
        cur = conn.execute(sql)
        return [d.name for d in cur.description], cur.fetchall()
    except psycopg.Error as e:
        return e.sqlstate, None


def test_every_frame_function_and_type_agrees_with_postgresql(both):
    ss, pg = both
    bad = []
    for name, sql in _queries():
        (wcols, want), (gcols, got) = _outcome(pg, sql), _outcome(ss, sql)
        ok = wcols == gcols and (want is None) == (got is None) and (
            want is None or (len(want) == len(got) and all(_same(x, y) for r, s in zip(want, got) for x, y in zip(r, s))))
        if not ok:
            first = next((i for i, (r, s) in enumerate(zip(want or [], got or [])) if r != s), None)
            bad.append((name, wcols, gcols, first, (want or [None])[first or 0], (got or [None])[first or 0]))
    assert not bad, f"{len(bad)} of {len(_queries())} differ: {bad[:6]}"


@pytest.mark.parametrize("frame", [
    "ORDER BY id ROWS -1 PRECEDING",
    "ORDER BY id ROWS BETWEEN CURRENT ROW AND -2 FOLLOWING",
    "ORDER BY g GROUPS BETWEEN -1 PRECEDING AND CURRENT ROW",
    "ORDER BY g GROUPS BETWEEN CURRENT ROW AND -1 FOLLOWING",
    "ORDER BY i RANGE BETWEEN -5 PRECEDING AND CURRENT ROW",
    "ORDER BY f RANGE BETWEEN CURRENT ROW AND 'NaN'::float8 FOLLOWING",
    "ORDER BY id ROWS BETWEEN NULL PRECEDING AND CURRENT ROW",
])
def test_bad_frame_offsets_are_refused_in_postgresql_words(both, frame):
    """A negative, NaN or NULL offset: the SQLSTATE and the message PostgreSQL gives for that frame kind."""
    got = []
    for conn in both:
        with pytest.raises(psycopg.Error) as e:
            conn.execute(f"SELECT sum(i) OVER ({frame}) FROM wm")
        got.append((e.value.sqlstate, e.value.diag.message_primary))
    assert got[0] == got[1]
