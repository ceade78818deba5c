"""Grouping by many keys of many values each (an ungrouped continuous view
groups by every column): the packed int64 code of a row's keys must not wrap
and merge rows that differ (issue 17)."""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.executor.execution.aggregates import GroupIndex
from splitstream.protocol import oids


def test_rows_differing_in_the_first_key_only_stay_apart():
    # five keys; the last four have 2^16 - 1 values each, so a packed code
    # multiplies the first key's by 2^64: without renumbering, rows 0 and
    # n - 1 (equal but for the first key) would share a code
    m = (1 << 16) - 1
    rng = np.random.default_rng(7)
    rest = [rng.permutation(m).astype(np.int64) for _ in range(4)]
    rest = [np.append(r, r[0]) for r in rest]
    first = np.arange(m + 1, dtype=np.int64)
    cols = [Col(c, None, oids.INT8) for c in [first] + rest]
    g = GroupIndex([oids.INT8] * 5)
    ids = g.assign(cols, m + 1)
    assert len(g) == m + 1
    assert ids[0] != ids[-1]
    again = g.assign([c.take(np.array([0, m])) for c in cols], 2)
    assert again.tolist() == [ids[0], ids[-1]]
