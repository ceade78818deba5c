"""``WITH (max_rows = N)``: an ungrouped continuous view that keeps only the
N most recently arrived of its rows (issue 17, scope 3: ungrouped views are
bounded by ``ttl``/``ttl_column`` or a row cap).

The name: PipelineDB, RisingWave and Materialize have no row cap (they bound
state by TTL or temporal filters); ``max_rows`` is the word PostgreSQL users
know from MySQL's ``MAX_ROWS`` table option and the spelling a user tries.

Why deterministic.  An ungrouped view keeps its rows as a multiset (rows
with counts, ``ungrouped.py``), merged from thread-local states whenever it
is read, so "the last N merged" would depend on merge timing.  Instead the
capped view's grouping also keys each row by its ``arrival_timestamp``
(hidden from readers), which is logged with the rows in the WAL, so replay
and both backends see the same values.  The cap keeps the N rows that come
first in the order (arrival_timestamp descending, then the row's values
descending): a pure function of the rows ever delivered.  Keeping the top N
of a part and then the top N of the merge gives the top N of the whole,
so the view may be trimmed at any merge (every read, the background reaper)
and always shows the same rows.  A statement's rows share one arrival time:
when the cap cuts through a statement, the rows with the greatest values
stay (with a sequence column first, its last rows).  Between trims the
state may hold more than N rows, never a read.
"""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

from ..execution import operators
from ..execution.aggregates import CountState, GroupTable
from .panes import subset

OPTION = "max_rows"
_MAX = 2**62

_HINT = "max_rows keeps the N most recently arrived rows of an ungrouped continuous view: a positive integer."


def parse(value: str) -> int:
    """A valid cap, or 22023 with a hint."""
    text = str(value).strip()
    try:
        n = int(text)
    except ValueError:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for integer option "{OPTION}": {value}',
                      hint=_HINT) from None
    if not 0 < n <= _MAX:
        raise PgError(INVALID_PARAMETER_VALUE, f'value {text} out of bounds for option "{OPTION}"',
                      detail=f"Valid values are between \"1\" and \"{_MAX}\".", hint=_HINT)
    return n


def requested(rel) -> int | None:
    v = dict(rel.options).get(OPTION)
    return None if v is None else parse(v)


def refuse_grouped(view: str) -> PgError:
    return PgError(INVALID_PARAMETER_VALUE, f'option "{OPTION}" applies to ungrouped continuous views, and '
                   f'"{view}" groups its rows',
                   hint="A grouped view keeps one row per group; bound it with ttl/ttl_column or a sliding window "
                        "(sw), or drop max_rows.")


def refuse_with_window(view: str) -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, f'continuous view "{view}" cannot combine max_rows with sw or ttl',
                   hint="Bound the view's rows by one of them: max_rows (the newest N rows), ttl/ttl_column, or a "
                        "sliding window.")


def trim(table: GroupTable, key_pos: int, n: int) -> GroupTable:
    """``table`` (rows with counts, keyed by the row's values and, at
    ``key_pos``, its arrival time) holding only the first ``n`` rows in the
    cap's order; the same object when it holds no more."""
    groups = len(table.index)
    count = table.states[0]                      # the ungrouped view's one aggregate: count(*)
    assert isinstance(count, CountState)
    cnt = count.cnt[:groups]
    if int(cnt.sum()) <= n:
        return table
    keys = table.index.key_columns()
    spec: list[tuple[Col, bool, bool | None]] = [(keys[key_pos], True, None)]
    spec += [(k, True, None) for i, k in enumerate(keys) if i != key_pos]
    order = operators.sort_order(spec, groups)
    c = cnt[order]
    before = np.cumsum(c) - c
    kept = order[before < n]
    last = kept[-1]
    excess = int(before[len(kept) - 1] + c[len(kept) - 1] - n)
    mask = np.zeros(groups, dtype=bool)
    mask[kept] = True
    out = subset(table, mask)
    if excess:
        kept_count = out.states[0]
        assert isinstance(kept_count, CountState)
        kept_count.cnt[int(np.count_nonzero(mask[:last]))] -= excess
    return out
