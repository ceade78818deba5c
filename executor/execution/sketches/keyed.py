"""``keyed_min(key, value)``, ``keyed_max(key, value)`` and ``first_values(n, x)``.

Why here: PipelineDB's exact, combinable aggregates beside its sketches.
keyed_min/max keep, per group, the value of the row with the least
(greatest) key; a batch finds each group's winner by one sort, then
compares it with the kept key by ranking the two columns together
(``operators.sort_keys_for``, PostgreSQL's order of any type), so no row
is visited in Python.  Ties keep the earlier row (the kept one in a merge),
so with distinct keys merged partial states equal one pass.
``first_values(n, x)`` keeps each group's n least values of x (NULLs
last), as entries cut to n per group after each sort; PipelineDB's documented
form ``first_values(n) WITHIN GROUP (ORDER BY x [DESC] [NULLS ...])`` binds
to the same state, kept in that order.
"""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError

from ..aggregates import AggState
from ..operators import sort_keys_for
from .entries import EntryState, constant_int, rank_in_runs, run_starts, values_of
from .sets import split_groups


def _store(oid: int, n: int) -> np.ndarray:
    d = sqltypes.dtype_of(oid)
    return np.empty(n, dtype=object) if d.kind == "O" else np.zeros(n, dtype=d)


class KeyedState(AggState):
    """Per group: the best key so far, its row's value (and whether NULL)."""

    DECIDES_DISTINCT = True

    def __init__(self, spec) -> None:
        if spec.distinct:
            raise PgError(FEATURE_NOT_SUPPORTED, f"{spec.func}(DISTINCT ...) is not supported",
                          hint=f"{spec.func} picks one row; DISTINCT changes nothing: use {spec.func}(key, value).")
        super().__init__(spec)
        self.is_max = spec.func == "keyed_max"
        self.koid, self.void = spec.arg_oids[0], spec.arg_oids[1]
        self.key = _store(self.koid, 0)
        self.val = _store(self.void, 0)
        self.vnull = np.zeros(0, bool)
        self.has = np.zeros(0, bool)

    def _grow(self, cap: int) -> None:
        for name, oid in (("key", self.koid), ("val", self.void)):
            cur = getattr(self, name)
            new = _store(oid, cap)
            new[: len(cur)] = cur
            setattr(self, name, new)
        self.vnull = self._grown(self.vnull, cap, False)
        self.has = self._grown(self.has, cap, False)

    def _ranks(self, keys: np.ndarray) -> np.ndarray:
        """Sort keys (smaller is better) of key values, comparable within one call."""
        return sort_keys_for(Col(keys, None, self.koid), self.is_max, False)

    def _offer(self, g: np.ndarray, keys: np.ndarray, vals: np.ndarray, vnull: np.ndarray) -> None:
        """Candidates for distinct groups ``g``: taken where a group has none or
        the candidate's key is strictly better."""
        held = self.has[g]
        take = ~held
        if held.any():
            both = np.concatenate([self.key[g[held]], keys[held]]) if keys.dtype == self.key.dtype else \
                np.concatenate([self.key[g[held]].astype(object), keys[held].astype(object)])
            r = self._ranks(both)
            m = int(held.sum())
            take[held] = r[m:] < r[:m]
        gt = g[take]
        self.key[gt], self.val[gt], self.vnull[gt] = keys[take], vals[take], vnull[take]
        self.has[gt] = True

    def update(self, gids, ng, args, valid) -> None:
        kc, vc = args[0], args[1]
        keep = kc.valid_mask() if valid is None else valid & kc.valid_mask()
        rows = np.flatnonzero(keep)
        if not len(rows):
            return
        g = gids[rows].astype(np.int64)
        r = sort_keys_for(kc.take(rows), self.is_max, False)
        order = np.lexsort((r, g))                         # stable: the earlier row wins a tie
        win = order[run_starts(g[order])]
        wrows = rows[win]
        self._offer(g[win], values_of(kc, wrows), values_of(vc, wrows), vc.null_mask()[wrows])

    def merge(self, other, gmap) -> None:
        gmap = np.asarray(gmap, dtype=np.int64)
        sel = np.flatnonzero(other.has[: len(gmap)])
        if len(sel):
            self._offer(gmap[sel], other.key[sel], other.val[sel], other.vnull[sel])

    def final(self, ng: int) -> Col:
        return Col(self.val[:ng].copy(), ~self.has[:ng] | self.vnull[:ng], self.void)


def keyed_result(arg_oids: list[int]) -> int:
    return arg_oids[1] if len(arg_oids) == 2 else -1


class FirstValuesState(EntryState):
    """first_values(n, x): each group's n least values of x as entries."""

    DECIDES_DISTINCT = True
    FIELDS = {"v": None, "nul": np.bool_}

    def __init__(self, spec) -> None:
        if len(spec.args) != 2:
            raise PgError(FEATURE_NOT_SUPPORTED, "first_values(n, x, y, ...) is not supported",
                          hint="Order by one column: first_values(n, x).")
        if spec.distinct:
            raise PgError(FEATURE_NOT_SUPPORTED, "first_values(DISTINCT ...) is not supported",
                          hint="first_values keeps the n least rows; use first_values(n, x).")
        super().__init__(spec)
        self.n = 0
        self.oid = spec.arg_oids[1]
        # WITHIN GROUP (ORDER BY x DESC NULLS LAST): "first" in that order; the plain form is ascending
        self.desc, self.nulls_first = spec.descending, spec.nulls_first

    def _grow(self, cap: int) -> None:
        pass

    def _least(self, g: np.ndarray, col: Col) -> np.ndarray:
        """Indexes of each group's n first values of ``col`` in the state's order
        (ascending, NULLs last, unless WITHIN GROUP said otherwise), by (group, value)."""
        key = sort_keys_for(col, self.desc, self.nulls_first)
        order = np.lexsort((key, g))
        return order[rank_in_runs(g[order]) < self.n]

    def update(self, gids, ng, args, valid) -> None:
        self.n = constant_int(args[0], "first_values n", 1, 1 << 20)
        col = args[1]
        rows = np.arange(len(gids)) if valid is None else np.flatnonzero(valid)
        if not len(rows):
            return
        pick = rows[self._least(gids[rows].astype(np.int64), col.take(rows))]
        self.append({"g": gids[pick].astype(np.int64), "h": np.zeros(len(pick), np.uint64),
                     "v": values_of(col, pick), "nul": col.null_mask()[pick]})

    def reduce(self, ent):
        keep = self._least(ent["g"], Col(ent["v"], ent["nul"], self.oid))
        return {k: v[keep] for k, v in ent.items()}

    def merge(self, other, gmap) -> None:
        self.n = max(self.n, other.n)
        super().merge(other, gmap)

    def final(self, ng: int) -> Col:
        self.fold()
        ent = self.entries()
        live = ent["g"] < ng
        g = ent["g"][live]
        out: list[list | None] = [None] * ng
        for gi, a, b in zip(*split_groups(g, ng)):     # per group, at a read; reduce left them ordered
            out[gi] = Col(ent["v"][live][a:b], ent["nul"][live][a:b], self.oid).to_pylist()
        return Col.from_pylist(out, type_oids.ARRAY_OF[self.oid])


def first_values_result(arg_oids: list[int]) -> int:
    if len(arg_oids) < 2 or arg_oids[0] not in (type_oids.INT2, type_oids.INT4, type_oids.INT8):
        return -1
    return type_oids.ARRAY_OF.get(arg_oids[1], -1)
