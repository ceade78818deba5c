"""Helpers for checking continuous views against an oracle: the same query
run over a plain table that received every inserted row."""
from __future__ import annotations

import math
from decimal import Decimal


def norm(v):
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, float):
        return round(v, 6)
    return v


def rows(cur, sql, params=None) -> list[tuple]:
    cur.execute(sql, params)
    return sorted((tuple(norm(x) for x in r) for r in cur.fetchall()), key=lambda r: tuple((x is None, str(type(x)), x) for x in r))


def close(a: list[tuple], b: list[tuple]) -> bool:
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        for x, y in zip(ra, rb):
            if isinstance(x, float) and isinstance(y, float):
                if not math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6):
                    return False
            elif x != y:
                return False
    return True


def assert_view_matches(cur, view: str, oracle_sql: str) -> None:
    got = rows(cur, f"SELECT * FROM {view}")
    want = rows(cur, oracle_sql)
    assert close(got, want), f"view {view} differs from oracle\n got: {got[:10]}\nwant: {want[:10]}"
