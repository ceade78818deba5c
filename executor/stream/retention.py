"""Pane retention: dropping the oldest panes of a windowed view's state.

Why a module of its own: which group key is a pane, how old a pane is and
how groups leave a ``GroupTable`` are the same for every kind of window;
TUMBLE/HOP views (``WITH (retention = '1 hour')``) use it now, and sliding
(``sw``) panes can use :func:`drop_groups` and :class:`Retention` the same way.

A pane [start, end) is retained while ``end > newest_end - retention``,
``newest_end`` being the latest pane end the pipeline holds: event time,
so what is retained depends on the rows only (never on the clock), replay
reaps exactly as live ingest did, and a pane once dropped never comes back
into retention (``newest_end`` only grows).  A row arriving for a dropped
pane recreates it until the next reap, which drops it again before any read.
"""
from __future__ import annotations

import copy
import dataclasses

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError
from splitstream.protocol.types import decode_text

from ..execution.aggregates import GroupTable
from ..execution.time_windows import DAY_US, SessionBound, WindowBound, trace_bound as trace

OPTION = "retention"


@dataclasses.dataclass(frozen=True)
class PaneKey:
    """Group key ``index`` of a pipeline is a pane bound; ``to_end``: what to
    add to the key to get the pane's end (the size for window_start, 0 for
    window_end)."""

    index: int
    to_end: int
    size: int
    slide: int
    gap: int = 0                        # a SESSION's gap (size and slide are 0)
    start_index: int | None = None      # a SESSION's window_start key: its panes begin there


def pane_key(ops: list, agg) -> PaneKey | None:
    """The first group key that is a window bound, traced down through the
    pipeline's projections (``ops`` bottom-up).  A session's pane is its
    ``window_end`` (a session view groups by both bounds, ``sessions.py``)."""
    bounds = [trace(k, ops) for k in agg.keys]
    for i, bound in enumerate(bounds):
        if isinstance(bound, WindowBound):
            to_end = bound.size_us - bound.end_offset_us
            return PaneKey(i, to_end, bound.size_us, bound.slide_us)
        if isinstance(bound, SessionBound) and bound.kind == "end":
            start = next((j for j, b in enumerate(bounds) if isinstance(b, SessionBound) and b.kind != "end"), None)
            return PaneKey(i, 0, 0, 0, gap=bound.offset_us, start_index=start)
    return None


def parse(text: str) -> int:
    """A retention option's interval in microseconds (22007 malformed, 22023 <= 0)."""
    iv = decode_text(type_oids.INTERVAL, text)
    us = iv.days * DAY_US + iv.microseconds
    if iv.months or us <= 0:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for option "{OPTION}": {text}',
                      hint="Give a positive interval of days, hours, minutes or seconds, e.g. "
                           "WITH (retention = '1 hour').")
    return us


def pane_ends(table: GroupTable, key: PaneKey) -> np.ndarray:
    """Each group's pane end, in microseconds (NULL time: int64 max, never dropped)."""
    if not len(table.index):
        return np.zeros(0, dtype=np.int64)
    col = table.index.key_columns()[key.index]
    us = col.data.astype("datetime64[us]").view(np.int64) + key.to_end
    return np.where(col.valid_mask(), us, np.iinfo(np.int64).max)


def pane_starts(table: GroupTable, key: PaneKey) -> np.ndarray:
    """Each group's pane start, in microseconds (NULL time: int64 max): a
    session's own window_start, else the pane end less the window size."""
    if key.start_index is None:
        ends = pane_ends(table, key)
        return np.where(ends == np.iinfo(np.int64).max, ends, ends - key.size)
    col = table.index.key_columns()[key.start_index]
    us = col.data.astype("datetime64[us]").view(np.int64)
    return np.where(col.valid_mask(), us, np.iinfo(np.int64).max)


@dataclasses.dataclass
class Retention:
    """Keep the panes whose end lies within ``horizon_us`` of the newest pane end."""

    horizon_us: int
    reaped: int = 0             # panes dropped so far

    def reap(self, table: GroupTable, key: PaneKey) -> int:
        ends = pane_ends(table, key)
        valid = ends != np.iinfo(np.int64).max
        if not valid.any():
            return 0
        keep = ends > int(ends[valid].max()) - self.horizon_us
        dropped = int(len(keep) - np.count_nonzero(keep))
        if dropped:
            drop_groups(table, keep)
            self.reaped += dropped
        return dropped


def drop_groups(table: GroupTable, keep: np.ndarray) -> None:
    """Keep only the groups where ``keep`` is true (in place)."""
    kept = np.flatnonzero(keep)
    m = len(kept)
    keys = [Col(c.data[kept], None if c.nulls is None else c.nulls[kept], c.oid) for c in table.index.key_columns()]
    gmap = np.full(len(keep), m, dtype=np.int64)
    gmap[kept] = np.arange(m, dtype=np.int64)
    regroup(table, keys, gmap)


def regroup(table: GroupTable, keys: list, gmap: np.ndarray) -> None:
    """The table's groups re-keyed in place: old group ``g`` goes into new
    group ``gmap[g]`` (the ``m`` distinct ``keys``), several old groups
    merging into one; ``gmap[g] == m`` drops it.

    A state's merge takes distinct target groups, so old groups merging into
    one are merged in layers (the first of each target, then the second...),
    each layer a subset of the old state; dropped groups fold into one spare
    slot past the last group, which is then cut off (the next new group must
    start from the state's empty value)."""
    m = len(keys[0]) if keys else 0
    n = len(gmap)
    fresh = GroupTable(table.index.key_oids, table.specs)
    ids = fresh.index.assign(keys, m) if m else np.zeros(0, dtype=np.int64)
    target = np.append(ids, m)[gmap]
    layers = _layers(target, m)
    for st, old in zip(fresh.states, table.states):
        st.ensure(m + 1, exact=True)
        old.ensure(n)
        old.settle()
        if layers is None:
            st.merge(old, target)
        else:
            flush = getattr(old, "_flush_fixed", None)
            if flush is not None:
                flush()             # pending fixed-point sums, before the state is cut into layers
            for idx in layers:
                st.merge(_subset(old, idx), target[idx])
        st.settle()
        _truncate(st, m)
    table.index, table.states = fresh.index, fresh.states


def _layers(target: np.ndarray, m: int) -> list[np.ndarray] | None:
    """None when the kept groups' targets are distinct; else the old groups
    by rank among those of the same target (dropped groups left out)."""
    live = np.flatnonzero(target < m)
    t = target[live]
    if len(np.unique(t)) == len(t):
        return None
    order = np.argsort(t, kind="stable")
    ts = t[order]
    starts = np.flatnonzero(np.r_[True, ts[1:] != ts[:-1]])
    rank = np.arange(len(ts)) - np.repeat(starts, np.diff(np.r_[starts, len(ts)]))
    by_rank = np.argsort(rank, kind="stable")
    cuts = np.searchsorted(rank[by_rank], np.arange(1, int(rank.max()) + 1))
    return [live[order[part]] for part in np.split(by_rank, cuts)]


def _subset(state, idx: np.ndarray):
    """A copy of a state holding only groups ``idx`` (as groups 0..len-1)."""
    own = getattr(state, "take_groups", None)
    if own is not None:
        return own(idx)             # entries tagged by group (top-k, sets): the state gathers them
    out = copy.copy(state)
    size = state.size
    for name, value in vars(state).items():
        if isinstance(value, np.ndarray) and len(value) == size:
            setattr(out, name, value[idx])
    out.size = len(idx)
    return out


def _truncate(state, m: int) -> None:
    """A state's per-group arrays (every array as long as its capacity) cut to ``m`` groups."""
    own = getattr(state, "truncate_groups", None)
    if own is not None:
        own(m)
        return
    size = state.size
    for name, value in list(vars(state).items()):
        if isinstance(value, np.ndarray) and len(value) == size:
            setattr(state, name, value[:m].copy())
    state.size = m
