"""Window frames as arrays: for every row (in window order), the rows its
frame holds, as up to three ranges ("pieces") in row order.

A frame is ``[lo, hi]`` by its mode (ROWS counts rows, GROUPS counts peer
groups, RANGE compares the one ORDER BY value with an offset), clipped to the
partition; EXCLUDE then cuts the current row, its peer group, or its peers
but not itself out of the middle, which leaves up to three pieces.  Aggregates
(``window_aggs``) work on the pieces, never on a list of rows per row.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import decimal

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError
from splitstream.protocol.types import Interval

from .datetime_ops import add_interval

INVALID_SIZE = "22013"          # invalid_preceding_or_following_size
NULL_NOT_ALLOWED = "22004"

_US_PER_DAY = 86_400_000_000


@dataclasses.dataclass
class Layout:
    """Where partitions and peer groups start and end, per row in window order."""

    n: int
    ps: np.ndarray            # first row of the row's partition
    pe: np.ndarray            # last row of the row's partition
    peer_first: np.ndarray    # first row of the row's peer group
    peer_last: np.ndarray     # last row of the row's peer group
    peer_id: np.ndarray       # the row's peer group, numbered over all partitions
    first_of_peer: np.ndarray   # per peer group: its first row
    last_of_peer: np.ndarray    # per peer group: its last row
    pstarts: np.ndarray       # per partition: its first row
    pends: np.ndarray         # per partition: one past its last row


Pieces = list[tuple[np.ndarray, np.ndarray]]


def frame_pieces(frame, lay: Layout, ordered: bool, order_col: Col | None, desc: bool,
                 nulls_first: bool, batch: Batch, ctx) -> Pieces:
    """The pieces of every row's frame (``order_col``: the one ORDER BY
    value in window order, for RANGE with an offset)."""
    idx = np.arange(lay.n)
    if frame is None:
        return [(lay.ps, lay.peer_last if ordered else lay.pe)]
    kind, start, end, exclude = frame
    lo = _bound(kind, start, True, lay, idx, order_col, desc, nulls_first, batch, ctx)
    hi = _bound(kind, end, False, lay, idx, order_col, desc, nulls_first, batch, ctx)
    lo = np.maximum(lo, lay.ps).astype(np.int64)
    hi = np.minimum(hi, lay.pe).astype(np.int64)
    if exclude is None:
        return [(lo, hi)]
    if exclude == "current":
        cut_lo, cut_hi = idx, idx
    else:
        cut_lo, cut_hi = lay.peer_first, lay.peer_last
    pieces = [(lo, np.minimum(hi, cut_lo - 1))]
    if exclude == "ties":
        pieces.append((np.maximum(lo, idx), np.minimum(hi, idx)))
    pieces.append((np.maximum(lo, cut_hi + 1), hi))
    return pieces


def _bound(kind: str, bound, is_start: bool, lay: Layout, idx: np.ndarray, order_col, desc: bool,
           nulls_first: bool, batch: Batch, ctx) -> np.ndarray:
    what = bound[0]
    if what == "unbounded":
        return lay.ps if bound[1] == "PRECEDING" else lay.pe
    if what == "current":
        if kind == "ROWS":
            return idx
        return lay.peer_first if is_start else lay.peer_last
    side, off_expr = bound[1], bound[2]
    sign = -1 if side == "PRECEDING" else 1
    off = _offset(off_expr, batch, ctx, is_start, kind)
    if kind == "ROWS":
        return idx + sign * int(off)
    if kind == "GROUPS":
        return _groups_bound(lay, sign * int(off), is_start)
    return _range_bound(lay, order_col, off, sign, desc, nulls_first, is_start)


def _offset(e, batch: Batch, ctx, is_start: bool, kind: str):
    """The offset's value (a constant, or a parameter: evaluated once),
    refused in PostgreSQL's words: ROWS and GROUPS check the count
    themselves (nodeWindowAgg.c), RANGE through its type's in_range."""
    v = e.eval(Batch([], 1), ctx).to_pylist()[0]
    which = "starting" if is_start else "ending"
    if v is None:
        raise PgError(NULL_NOT_ALLOWED, f"frame {which} offset must not be null")
    negative = v.key() < 0 if isinstance(v, Interval) else v < 0
    if negative and kind != "RANGE":
        raise PgError(INVALID_SIZE, f"frame {which} offset must not be negative")
    if negative or (isinstance(v, float) and v != v):
        raise PgError(INVALID_SIZE, "invalid preceding or following size in window function")
    return v


def _groups_bound(lay: Layout, shift: int, is_start: bool) -> np.ndarray:
    """Peer group ``shift`` groups away: its first row (start) or last (end);
    past the partition's groups the frame is empty on that side."""
    first_g, last_g = lay.peer_id[lay.ps], lay.peer_id[lay.pe]
    g = lay.peer_id + shift
    inside = np.clip(g, first_g, last_g)
    if is_start:
        return np.where(g > last_g, lay.pe + 1, lay.first_of_peer[inside])
    return np.where(g < first_g, lay.ps - 1, lay.last_of_peer[inside])


def _range_bound(lay: Layout, col: Col, off, sign: int, desc: bool, nulls_first: bool,
                 is_start: bool) -> np.ndarray:
    """RANGE ``off`` PRECEDING/FOLLOWING: the first row (start) or last row
    (end) whose value lies within ``off`` of the current row's, in ORDER BY
    direction.  Rows whose value is NULL are peers of each other only."""
    keys, valid = _comparable(col)
    # in the ORDER BY direction: PRECEDING moves towards the first rows
    step = -sign if desc else sign
    bounds = _shifted(col, keys, off, step)
    out = (lay.peer_first if is_start else lay.peer_last).copy()
    for a, b in zip(lay.pstarts.tolist(), lay.pends.tolist()):
        nn = np.flatnonzero(valid[a:b])
        if not len(nn):
            continue
        va, vb = a + int(nn[0]), a + int(nn[-1]) + 1      # the non-NULL rows are contiguous
        seg, bnd = keys[va:vb], bounds[va:vb]
        if desc:          # a descending run, searched as its ascending mirror
            mirror = seg[::-1]
            if is_start:    # the first row whose value is <= the bound
                out[va:vb] = vb - np.searchsorted(mirror, bnd, side="right")
            else:           # the last row whose value is >= the bound
                out[va:vb] = vb - 1 - np.searchsorted(mirror, bnd, side="left")
        elif is_start:      # the first row whose value is >= the bound
            out[va:vb] = va + np.searchsorted(seg, bnd, side="left")
        else:               # the last row whose value is <= the bound
            out[va:vb] = va - 1 + np.searchsorted(seg, bnd, side="right")
    return out


def _comparable(col: Col) -> tuple[np.ndarray, np.ndarray]:
    """Values that order as the column does (int64, float64 or objects), and which are not NULL."""
    valid = col.valid_mask()
    d = col.data
    if col.oid in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
        keys = d.astype("datetime64[us]").astype(np.int64)
    elif d.dtype.kind in "iu":
        keys = d.astype(np.int64)
    elif d.dtype.kind == "f":
        keys = d.astype(np.float64)
    else:
        keys = np.array([decimal.Decimal(v) if v is not None else decimal.Decimal(0) for v in col.to_pylist()],
                        dtype=object)
    return keys, valid


def _shifted(col: Col, keys: np.ndarray, off, step: int) -> np.ndarray:
    """Every key moved by ``off`` (``step`` = +1 or -1), saturating instead of
    overflowing, as PostgreSQL's in_range support functions do."""
    if isinstance(off, Interval):
        if col.oid not in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
            raise PgError("42883", "RANGE with an interval offset needs a date or timestamp ORDER BY column")
        if off.months:
            vals = col.to_pylist()
            out = [0 if v is None else _us(add_interval(_as_ts(v), off, step)) for v in vals]
            return np.array(out, dtype=np.int64)
        delta = off.days * _US_PER_DAY + off.microseconds
        return _saturating(keys, step * delta)
    if keys.dtype == object:
        return keys + step * decimal.Decimal(str(off))
    if keys.dtype.kind == "f":
        with np.errstate(all="ignore"):
            moved = keys + step * float(off)
        # an infinite key moved by an infinite offset: PostgreSQL's in_range
        # takes +inf as infinitely preceding +inf (and -inf following -inf)
        return np.where(np.isinf(keys) & np.isnan(moved), -np.inf if step < 0 else np.inf, moved)
    return _saturating(keys, step * int(off))


def _saturating(keys: np.ndarray, delta: int) -> np.ndarray:
    info = np.iinfo(np.int64)
    with np.errstate(over="ignore"):
        moved = keys + np.int64(delta) if info.min <= delta <= info.max else keys
    if delta >= 0:
        return np.where(keys > info.max - delta, info.max, moved)
    return np.where(keys < info.min - delta, info.min, moved)


def _as_ts(v):
    return dt.datetime(v.year, v.month, v.day) if type(v) is dt.date else v.replace(tzinfo=None)


def _us(v: dt.datetime) -> int:
    return (v - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
