"""The ordered-set aggregates' final steps: percentile_cont and
percentile_disc (one fraction or an array of them) and the hypothetical-set
aggregates rank, dense_rank, percent_rank and cume_dist, as PostgreSQL's
orderedsetaggs.c computes them.

Why a module of its own: these aggregates keep their rows (a list state,
mergeable by concatenation) and do all their work at the end, on the
sorted rows: interpolation between neighbours, or where a hypothetical row
would sort among them under the WITHIN GROUP ordering (its DESC and NULLS
placement per column, a hypothetical row before its peers for rank and
after them for cume_dist).
"""
from __future__ import annotations

import decimal
import math
from typing import Any

from splitstream.protocol.errors import NUMERIC_VALUE_OUT_OF_RANGE, PgError
from splitstream.protocol.types import Interval

from .datetime_ops import checked_interval, interval_mul

HYPOTHETICAL = {"rank", "dense_rank", "percent_rank", "cume_dist"}


def _checked(fraction: float) -> float:
    if math.isnan(fraction) or not 0 <= fraction <= 1:
        raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, f"percentile value {fraction:g} is not between 0 and 1")
    return fraction


def _one(fn: str, ordered: list, fraction: float) -> Any:
    if fn == "percentile_disc":
        return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]
    pos = fraction * (len(ordered) - 1)
    lo, hi = ordered[math.floor(pos)], ordered[math.ceil(pos)]
    if isinstance(lo, Interval):            # interval_lerp
        return lo if lo == hi else checked_interval(lo + interval_mul(hi - lo, pos - math.floor(pos)))
    a, b = float(lo), float(hi)
    return a + (b - a) * (pos - math.floor(pos))


def _nan_last(v: Any) -> tuple:
    """PostgreSQL's order of numbers: NaN after every other value (a float
    NaN compares false with everything, and a Decimal NaN refuses to compare)."""
    if isinstance(v, float):
        return (1, 0.0) if v != v else (0, v)
    if isinstance(v, decimal.Decimal):
        return (1, 0) if v.is_nan() else (0, v)
    return (0, v)


def percentile(fn: str, values: list, fraction: Any, descending: bool) -> Any:
    """percentile_cont/disc of the non-NULL ``values`` at ``fraction`` (a
    float, an array of them, or None); NULL for no rows."""
    if fraction is None:
        return None
    fractions = fraction if isinstance(fraction, list) else [fraction]
    checked = [None if f is None else _checked(float(f)) for f in fractions]
    if not values:
        return None
    ordered = sorted(values, key=_nan_last, reverse=descending)
    out = [None if f is None else _one(fn, ordered, f) for f in checked]
    return out if isinstance(fraction, list) else out[0]


def _compare_column(a: Any, b: Any, desc: bool, nulls_first: bool | None, key) -> int:
    """-1, 0 or 1: a before, with or after b under one ORDER BY column."""
    first = desc if nulls_first is None else nulls_first
    if a is None or b is None:
        if a is None and b is None:
            return 0
        return (-1 if first else 1) if a is None else (1 if first else -1)
    ka, kb = key(a), key(b)
    c = (ka > kb) - (ka < kb)
    return -c if desc else c


def _compare(row: tuple, hypothetical: tuple, sort: list[tuple[bool, bool | None]], key) -> int:
    for a, b, (desc, nulls_first) in zip(row, hypothetical, sort):
        c = _compare_column(a, b, desc, nulls_first, key)
        if c:
            return c
    return 0


def hypothetical(fn: str, rows: list[tuple], values: tuple, sort: list[tuple[bool, bool | None]], key) -> Any:
    """rank/dense_rank/percent_rank/cume_dist of the row ``values`` had it
    been among ``rows`` (``key``: the sort key of a non-NULL value)."""
    order = [_compare(r, values, sort, key) for r in rows]
    before = sum(c < 0 for c in order)
    n = len(rows)
    if fn == "rank":
        return before + 1
    if fn == "dense_rank":
        return len({tuple(key(v) if v is not None else None for v in r) for r, c in zip(rows, order) if c < 0}) + 1
    if fn == "percent_rank":
        return before / n if n else 0.0
    return (before + sum(c == 0 for c in order) + 1) / (n + 1)
