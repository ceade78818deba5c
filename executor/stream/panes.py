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
from ..execution.combine import taken_state


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


def copy_state(src: AggState) -> AggState:
    """A state holding what ``src`` holds, nothing shared (arrays by memcpy,
    not a merge: Two-Stacks snapshots one combination per stack entry)."""
    src.settle()
    out = copy.copy(src)
    for name, v in vars(src).items():
        if name != "spec" and not isinstance(v, np.dtype):
            setattr(out, name, v.copy() if isinstance(v, np.ndarray) and v.dtype != object else copy.deepcopy(v))
    return out


def copy_table(src: GroupTable) -> GroupTable:
    """A new table holding what ``src`` holds, nothing shared with it (a
    reader that merges into its copy, as combine() does, leaves the view's
    own table alone): the index rebuilt from its keys, the states copied."""
    out = GroupTable(list(src.index.key_oids), src.specs)
    out.index.load_snapshot(src.index.snapshot())
    for st in src.states:
        st.ensure(len(src.index))
    out.states = [copy_state(st) for st in src.states]
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
