"""``reservoir_sample(expr, n)``: a uniform sample of n values per group, as
an array (issue 18, item 3).

Why this fits split maintenance (Fig. 5.1 of the thesis mapped onto it):
each inserting thread's local state keeps, per group, an Algorithm L
reservoir fed at insert time (only picked rows are touched: their values
become Python objects, nothing else does); a read merges the local states
into the global one with the thesis's merge, per group: the shares of the
two samples come from Algorithm 5.4 (or the hypergeometric draw for large
n), and each side contributes that many of its values drawn uniformly.  A
group's state is plain numbers and a list (seen, log W, next pick, values),
so checkpoints save it like any other aggregate state.  A group that was
filled by a merge has no skip chain to continue: new rows then go through a
fresh reservoir merged in, which is the same merge.
"""
from __future__ import annotations

import threading

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

from . import aggregates, reservoir

INVALID_PARAMETER_VALUE = "22023"
_local = threading.local()


def _rng() -> np.random.Generator:
    """One generator per thread (generators are not thread-safe; states never hold one)."""
    g = getattr(_local, "rng", None)
    if g is None:
        g = _local.rng = np.random.default_rng()
    return g


class ReservoirState(aggregates.AggState):
    """Per group: rows seen, Algorithm L's log W and next pick, whether a
    merge filled it, the sample size, and the sampled values."""

    def __init__(self, spec) -> None:
        super().__init__(spec)
        self.seen = np.zeros(0, np.int64)
        self.logw = np.zeros(0, np.float64)
        self.nxt = np.zeros(0, np.int64)
        self.merged = np.zeros(0, bool)
        self.n_of = np.zeros(0, np.int64)              # each group's sample size
        self.vals = np.empty(0, object)

    def _grow(self, cap: int) -> None:
        self.seen = self._grown(self.seen, cap, 0)
        self.logw = self._grown(self.logw, cap, 0.0)
        self.nxt = self._grown(self.nxt, cap, 0)
        self.merged = self._grown(self.merged, cap, False)
        self.n_of = self._grown(self.n_of, cap, 0)
        vals = np.empty(cap, dtype=object)
        vals[: len(self.vals)] = self.vals
        self.vals = vals

    def update(self, gids, ng, args, valid) -> None:
        if not len(gids):
            return
        n = _size(args[1])
        col = args[0]
        rows = np.arange(len(gids)) if valid is None else np.flatnonzero(valid)
        g = gids[rows]
        order = np.argsort(g, kind="stable")            # rows of a group stay in arrival order
        rows, g = rows[order], g[order]
        starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]) if len(g) else np.zeros(0, np.int64)
        ends = np.r_[starts[1:], len(g)]
        rng = _rng()
        for a, b in zip(starts.tolist(), ends.tolist()):  # per group, never per row
            self._feed(int(g[a]), rows[a:b], col, n, rng)

    def _feed(self, gi: int, rows: np.ndarray, col: Col, n: int, rng) -> None:
        self.n_of[gi] = n
        if self.merged[gi]:
            fresh = _Group(n)
            fresh.feed(rows, col, rng)
            self._combine(gi, fresh.seen, fresh.vals, n, rng)
            return
        vals = self.vals[gi]
        if vals is None:
            vals = self.vals[gi] = []
        slots, offs, self.logw[gi], self.nxt[gi] = reservoir.offer(n, int(self.seen[gi]), float(self.logw[gi]),
                                                                   int(self.nxt[gi]), len(rows), rng)
        _write(vals, slots, col.take(rows[offs]).to_pylist())
        self.seen[gi] += len(rows)

    def merge(self, other, gmap) -> None:
        rng = _rng()
        for i, gi in enumerate(gmap.tolist()):
            if other.seen[i] == 0:
                continue
            if self.seen[gi] == 0:
                self.seen[gi], self.logw[gi], self.nxt[gi] = other.seen[i], other.logw[i], other.nxt[i]
                self.merged[gi], self.n_of[gi] = other.merged[i], other.n_of[i]
                self.vals[gi] = list(other.vals[i])
                continue
            self._combine(gi, int(other.seen[i]), other.vals[i], int(other.n_of[i]), rng)

    def _combine(self, gi: int, seen2: int, vals2: list, n: int, rng) -> None:
        """Algorithm 5.4 for two samples: shares, then each side's values drawn uniformly."""
        seen1, vals1 = int(self.seen[gi]), self.vals[gi] or []
        k1, k2 = reservoir.shares(np.array([seen1, seen2]), n, rng).tolist()
        pick1 = rng.choice(len(vals1), k1, replace=False) if k1 else []
        pick2 = rng.choice(len(vals2), k2, replace=False) if k2 else []
        self.vals[gi] = [vals1[j] for j in pick1] + [vals2[j] for j in pick2]
        self.seen[gi] = seen1 + seen2
        self.merged[gi] = True

    def final(self, ng: int) -> Col:
        return Col.from_pylist([list(v) if v else None for v in self.vals[:ng]], self.spec.oid)


class _Group:
    """A fresh one-group reservoir (new rows of a group filled by a merge)."""

    def __init__(self, n: int) -> None:
        self.n, self.seen, self.logw, self.nxt = n, 0, 0.0, 0
        self.vals: list = []

    def feed(self, rows: np.ndarray, col: Col, rng) -> None:
        slots, offs, self.logw, self.nxt = reservoir.offer(self.n, self.seen, self.logw, self.nxt, len(rows), rng)
        _write(self.vals, slots, col.take(rows[offs]).to_pylist())
        self.seen += len(rows)


def _write(vals: list, slots: np.ndarray, values: list) -> None:
    """vals[slot] = value, the list growing while the reservoir fills (slots arrive in order then)."""
    for s, v in zip(slots.tolist(), values):
        if s == len(vals):
            vals.append(v)
        else:
            vals[s] = v


def _size(c: Col) -> int:
    vals = c.data
    if c.nulls is not None and c.nulls.any():
        raise PgError(INVALID_PARAMETER_VALUE, "reservoir_sample size must not be null")
    n = vals[0]
    if len(vals) > 1 and (vals != n).any():
        raise PgError(INVALID_PARAMETER_VALUE, "reservoir_sample size must be the same for every row",
                      hint="Write the size as a constant: reservoir_sample(x, 100).")
    if n <= 0:
        raise PgError(INVALID_PARAMETER_VALUE, "reservoir_sample size must be positive")
    return int(n)


def result_type(arg_oids: list[int]) -> int:
    if len(arg_oids) != 2 or arg_oids[1] not in (type_oids.INT2, type_oids.INT4, type_oids.INT8):
        return -1
    return type_oids.ARRAY_OF.get(arg_oids[0], -1)


aggregates.install_aggregate("reservoir_sample", ReservoirState, result_type)
