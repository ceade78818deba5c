"""Runtime semi-join reduction of a decorrelated aggregate (sideways key passing).

A correlated scalar subquery such as TPC-H Q17's ``l_quantity < (SELECT
0.2 * avg(l_quantity) FROM lineitem WHERE l_partkey = p_partkey)`` is planned
(``planner/decorrelate.py``) as a join of the outer query with the subquery
grouped by its correlation keys.  Grouping the whole inner table computes
every group (200,000 parts over 6M lineitem rows in Q17) when the outer side
asks for a few hundred keys.

The join that meets the grouped side (the *reduced* side) therefore runs its
other side first and publishes that side's key columns in the run
(``ExecutionRun.publish_keys``); a :class:`KeySetIn` condition, placed below
the grouping on the same key expressions and pushed down to the scans, keeps
only the rows whose key the other side holds.  This is exact: a group whose
key no outer row has never joins (the join is inner, or outer only on the
other side), and equal keys group together, so every group that does join
keeps all its rows.  Without a published key set (EXPLAIN's estimates, a
kept build of a continuous view) the condition keeps every row.
"""
from __future__ import annotations

import copy

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids

from .expr import Expr
from .operators import DENSE_CODES, join_codes
from .probe_reduction import integer_key_membership


class KeySetIn(Expr):
    """True where the row's key (``args``) is among the keys the join ``slot``
    published from its other side; ``positions`` pick which of that join's
    key columns ``args`` stand for (the grouping may cover only some)."""

    oid = type_oids.BOOL

    def __init__(self, args: list[Expr], positions: list[int], slot: object) -> None:
        self.args, self.positions, self.slot = args, positions, slot

    def __repr__(self) -> str:
        keys = ", ".join(repr(a) for a in self.args)
        return f"({keys}) IN keys of the join above"

    def children(self) -> list[Expr]:
        return list(self.args)

    def __deepcopy__(self, memo: dict) -> "KeySetIn":
        # the join is a reference to the plan, never a part of this condition
        return KeySetIn(copy.deepcopy(self.args, memo), list(self.positions), self.slot)

    def eval(self, batch: Batch, ctx) -> Col:
        if ctx is None:
            raise LookupError("a runtime key set has no value at plan time")
        run = getattr(ctx, "run", None)          # a stream pipeline's context may have no run
        published = None if run is None else run.key_sets.get(self.slot)
        if published is None:
            return Col(np.ones(batch.n, bool), None, type_oids.BOOL)
        keys = [published[i] for i in self.positions]
        mine = [a.eval(batch, ctx) for a in self.args]
        return Col(key_membership(keys, mine), None, type_oids.BOOL)


def key_membership(keys: list[Col], cols: list[Col]) -> np.ndarray:
    """Where the rows of ``cols`` equal some row of ``keys`` (NULL never does).
    One integer key is one table lookup (``integer_key_membership``); other
    keys are matched through their join codes."""
    if len(keys) == 1 and len(cols) == 1:
        mask = integer_key_membership(cols[0], keys[0])
        if mask is not None:
            return mask
    n = len(cols[0]) if cols else 0
    if not keys or not len(keys[0]):
        return np.zeros(n, bool)
    kcode, code, span = join_codes(keys, cols)
    wanted = kcode[kcode >= 0]
    if span is not None and span <= DENSE_CODES:
        present = np.zeros(span + 1, bool)          # the last slot stands for NULL rows (code < 0)
        present[wanted] = True
        return present[np.where(code >= 0, code, span)]
    return np.isin(code, wanted) & (code >= 0)
