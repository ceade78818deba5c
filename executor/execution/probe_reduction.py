"""Which probe rows can meet a small build side at all, as one array lookup.

A hash join whose probe side is a scan under filters evaluates those filters
on every scanned row, though most rows have no partner in a small build side
(TPC-H Q19: six million lineitems, 485 parts).  Testing the join key first is
one gather over an integer column; the filters then read the few rows left.
PostgreSQL reaches the same rows through an index on the probe side's key.
"""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes.vector import Col, FixedCol
from splitstream.protocol import oids as type_oids

#: the build side's key range up to which membership is a boolean table (else np.isin)
_DENSE_RANGE = 1 << 24


def integer_key_membership(probe: Col, build: Col) -> np.ndarray | None:
    """Mask of the probe rows whose (non-NULL) integer key occurs among the
    build's non-NULL keys; None when either key is not a plain integer column."""
    if probe.oid not in type_oids.INTEGER_TYPES or build.oid not in type_oids.INTEGER_TYPES \
            or isinstance(probe, FixedCol) or isinstance(build, FixedCol):
        return None
    p, b = probe.data, build.data
    if p.dtype.kind not in "iu" or b.dtype.kind not in "iu" or p.ndim != 1 or b.ndim != 1:
        return None
    if build.nulls is not None:
        b = b[~build.nulls]
    if not len(b):
        return np.zeros(len(p), bool)
    lo, hi = int(b.min()), int(b.max())
    if hi - lo < _DENSE_RANGE:
        # one False slot either side takes every key outside [lo, hi] (clipped onto them): one gather
        table = np.zeros(hi - lo + 3, bool)
        table[b.astype(np.int64) - (lo - 1)] = True
        at = np.subtract(p, lo - 1, dtype=np.int64)
        unsigned = at.view(np.uint64)        # keys below lo wrap to huge values: clipped like those above hi
        np.minimum(unsigned, hi - lo + 2, out=unsigned)
        mask = table.take(at)
    else:
        mask = np.isin(p, b)
    if probe.nulls is not None:
        mask &= ~probe.nulls
    return mask
