"""Session windows in a continuous view: sessions as a mergeable state per group key.

Why sessions are kept like this (Grizzly §2.1/§4.2: a row extends its
session's end, sessions that come to touch are merged): the stream pipeline
groups by ``(window_start, window_end, keys...)`` with each row its own
session [ts, ts + gap) (``execution/time_windows.SessionBound``), and
:func:`coalesce` merges, per group key, every pair of sessions where one
starts at or before the other's end, merging their aggregate states.  Any
set of sessions is a valid state, and coalescing is order-free: thread-local
tables, statement stages, Spark partials and replayed batches merge like any
group table and are coalesced afterwards, so an out-of-order row bridging two
sessions merges them, and split maintenance, checkpoints and recovery need
nothing of their own.  Coalescing runs on a statement's stage before it is
applied, and on the global state after each merge (every read, checkpoint
and reap), so the state holds about one group per session.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError

from ..execution import expr, operators
from ..execution.aggregates import GroupTable, factorize
from ..execution.time_windows import SessionBound, trace_bound as trace
from .retention import regroup


@dataclasses.dataclass(frozen=True)
class SessionKey:
    """Group keys ``start`` and ``end`` of a pipeline are a session's bounds."""

    start: int
    end: int


def session_key(ops: list, agg, view: str) -> SessionKey | None:
    """The session bounds among the pipeline's group keys; None without a
    SESSION.  A SESSION whose bounds are read other than as the two plain
    group keys is refused: a row's final session is known only once the
    sessions around it are merged, after the grouping."""
    if not any(isinstance(n, SessionBound) for op in ops for e in _op_exprs(op) for n in e.walk()):
        return None
    found: dict[str, int] = {}
    for i, k in enumerate(agg.keys):
        bound = trace(k, ops)
        if isinstance(bound, SessionBound):
            found.setdefault(bound.kind, i)
    if set(found) != {"start", "end"} or _read_elsewhere(ops, agg):
        raise PgError(FEATURE_NOT_SUPPORTED, f'continuous view "{view}" must group a SESSION by window_start and '
                                             "window_end, and read them nowhere else before the grouping",
                      hint="GROUP BY window_start, window_end, <keys>; filter or compute on the session bounds "
                           "in HAVING or in a query over the view.")
    return SessionKey(found["start"], found["end"])


def _op_exprs(op) -> list:
    if isinstance(op, operators.Project):
        return list(op.exprs)
    if isinstance(op, operators.Filter):
        return [op.pred]
    return [e for e in [*getattr(op, "lkeys", []), getattr(op, "residual", None)] if e is not None]


def _read_elsewhere(ops: list, agg) -> bool:
    """Is a session bound read by anything but a pass-through column or a group key?"""
    held: set[int] = set()              # columns holding a bound, after the operators so far
    for op in ops:
        if isinstance(op, operators.Project):
            nxt = set()
            for i, e in enumerate(op.exprs):
                if isinstance(e, SessionBound) or (isinstance(e, expr.ColRef) and e.idx in held):
                    nxt.add(i)
                elif _reads(e, held):
                    return True
            held = nxt
        elif any(_reads(e, held) for e in _op_exprs(op)):
            return True
    keys = [k for k in agg.keys if not (isinstance(k, expr.ColRef) and k.idx in held)]
    others = keys + [e for a in agg.aggs for e in [*a.args, a.filter] if e is not None]
    return any(_reads(e, held) for e in others)


def _reads(e, held: set[int]) -> bool:
    return any(isinstance(n, SessionBound) or (type(n) is expr.ColRef and n.idx in held) for n in e.walk())


def coalesce(table: GroupTable, key: SessionKey) -> int:
    """Merge, per group key, the sessions that touch (in place); the number of sessions merged away."""
    n = len(table.index)
    if n < 2:
        return 0
    cols = table.index.key_columns()
    others = [c for i, c in enumerate(cols) if i not in (key.start, key.end)]
    found = _sessions(cols[key.start], cols[key.end], others)
    if found is None:
        return 0
    gmap, heads, ends = found
    keys = [Col(c.data[heads], None if c.nulls is None else c.nulls[heads], c.oid) for c in cols]
    keys[key.end] = _times(ends, keys[key.end])
    regroup(table, keys, gmap)
    return n - len(heads)


def sessionize(batch: Batch, agg, key: SessionKey, ctx) -> Batch:
    """The batch with each row's one-row session replaced by the session it
    forms with the batch's other rows of its group key: a statement's stage
    then holds a group per session, not per row."""
    if batch.n < 2:
        return batch
    si, ei = agg.keys[key.start].idx, agg.keys[key.end].idx
    others = [k.eval(batch, ctx) for i, k in enumerate(agg.keys) if i not in (key.start, key.end)]
    found = _sessions(batch.cols[si], batch.cols[ei], others)
    if found is None:
        return batch
    gmap, heads, ends = found
    cols = list(batch.cols)
    start = cols[si]
    cols[si] = Col(start.data[heads][gmap], start.nulls, start.oid)
    cols[ei] = _times(ends[gmap], cols[ei])
    return Batch(cols, batch.n)


def _sessions(start_col: Col, end_col: Col, others: list[Col]) -> tuple | None:
    """Sessions [start, end) of the same ``others`` merged where one starts at
    or before the end of those before it: (session of each input, the input
    holding each session's start, each session's end); None if none merge."""
    n = len(start_col)
    start, end = _us(start_col), _us(end_col)
    valid = start_col.valid_mask() & end_col.valid_mask()
    part = _partitions(others, n)
    # a NULL time is a session of its own: a partition of one
    part = np.where(valid, part, int(part.max(initial=0)) + 1 + np.arange(n))
    # starts and ends as ranks among all bounds, so that partition * width + rank orders
    # partitions first and never overflows, whatever the times
    bounds = np.unique(np.concatenate([start[valid], end[valid]]))
    width = len(bounds) + 1
    order = np.lexsort((start, part))
    p = part[order]
    lo = p * width + np.searchsorted(bounds, start[order])
    hi = np.maximum.accumulate(p * width + np.searchsorted(bounds, end[order]))
    new = np.ones(n, dtype=bool)
    new[1:] = (p[1:] != p[:-1]) | (lo[1:] > hi[:-1])
    if new.all():
        return None
    firsts = np.flatnonzero(new)
    gmap = np.empty(n, dtype=np.int64)
    gmap[order] = np.cumsum(new) - 1
    return gmap, order[firsts], np.maximum.reduceat(end[order], firsts)


def _times(us: np.ndarray, like: Col) -> Col:
    """int64 microseconds as a column of ``like``'s type, its NULLs kept."""
    nulls = None if like.nulls is None or len(like.nulls) != len(us) else like.nulls
    return Col(us.view("datetime64[us]").astype(like.data.dtype), nulls, like.oid)


def _us(col: Col) -> np.ndarray:
    return col.data.astype("datetime64[us]").view(np.int64)


def _partitions(cols: list[Col], n: int) -> np.ndarray:
    """A dense code per distinct combination of the other group keys."""
    if not cols:
        return np.zeros(n, dtype=np.int64)
    combined = np.zeros(n, dtype=np.int64)
    for c in cols:
        codes, vals = factorize(c)
        combined = combined * (len(vals) + 1) + codes
    return np.unique(combined, return_inverse=True)[1].astype(np.int64).reshape(n)
