"""Moving groups between GroupTables: a subset of groups under other keys.

A sliding-window view groups its stream by one more key, the pane; reads
combine the panes' states per view key (:mod:`.sliding`), and a TTL drops
groups.  Both need "these groups of that table, keyed by these columns",
for every kind of aggregate state, so it is done here once: the states are
restricted to the chosen groups (their per-group arrays gathered) and merged
through the states' own ``merge``, which every aggregate implements.
"""
from __future__ import annotations

import copy

import numpy as np

from splitstream.catalog.datatypes.vector import Col

from ..execution.aggregates import AggState, GroupTable


def taken_state(st: AggState, idx: np.ndarray) -> AggState:
    """``st`` restricted to groups ``idx`` (a shallow copy whose per-group
    arrays are gathered; the source is left as it was).  A state keeping
    entries tagged by group (top-k, sets) gathers them itself."""
    own = getattr(st, "take_groups", None)
    if own is not None:
        return own(idx)
    st.settle()                 # buffered sketch input applied: every per-group array is dense
    part = copy.copy(st)
    size = st.size
    for name, v in vars(st).items():
        # rows of 2-D arrays too: HyperLogLog registers, t-digest centroids, count-min counters
        if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == size and size:
            setattr(part, name, v[idx])
    part.size = len(idx)
    return part


def merge_groups(dst: GroupTable, src: GroupTable, idx: np.ndarray, key_cols: list[Col]) -> None:
    """Fold groups ``idx`` of ``src`` into ``dst`` under the keys ``key_cols``
    (one row per group of ``idx``; distinct within the call)."""
    if not len(idx):
        return
    gmap = dst.index.assign(key_cols, len(idx))
    ng = len(dst.index)
    for st, sst in zip(dst.states, src.states):
        sst.ensure(len(src.index))
        st.ensure(ng, exact=True)
        st.merge(taken_state(sst, idx), gmap)


def copy_table(src: GroupTable) -> GroupTable:
    """A new table holding what ``src`` holds, nothing shared with it: the
    index rebuilt from its keys and the state arrays copied (a memcpy, not a
    merge: the flip of a window copies one table per pane)."""
    out = GroupTable(list(src.index.key_oids), src.specs)
    out.index.load_snapshot(src.index.snapshot())
    for st, sst in zip(out.states, src.states):
        sst.ensure(len(src.index))
        for name, v in vars(sst).items():
            if name != "spec" and not isinstance(v, np.dtype):
                setattr(st, name, v.copy() if isinstance(v, np.ndarray) and v.dtype != object else copy.deepcopy(v))
    out.rows_in = src.rows_in
    return out


def subset(src: GroupTable, keep: np.ndarray) -> GroupTable:
    """A new table with only the groups where ``keep`` is true (same keys)."""
    out = GroupTable(list(src.index.key_oids), src.specs)
    idx = np.flatnonzero(keep)
    keys = [c.take(idx) for c in src.index.key_columns()]
    merge_groups(out, src, idx, keys)
    out.rows_in = src.rows_in
    return out
