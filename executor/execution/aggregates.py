"""Grouped aggregation with mergeable states.

:class:`GroupTable` is the sink of a grouping pipeline: ``consume`` takes a
batch (key columns plus aggregate inputs) and updates per-group state
arrays; ``merge`` folds another table in (thread-local to global, or a
Spark executor's partial state into the view).  Work per row is numpy;
Python runs once per *new group*, not per row.  The same class serves
ordinary GROUP BY and the stream pipelines of continuous views.
"""
from __future__ import annotations

import collections
import decimal
import functools
import math
import operator
import sys
from typing import Any

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col, FixedCol
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import NUMERIC_VALUE_OUT_OF_RANGE, PgError, UNDEFINED_FUNCTION

from splitstream.protocol.types import Interval
from splitstream.protocol.composite import Record

from . import json_values, ordered_set
from .array_functions import dims as array_dims
from .datetime_ops import checked_interval, interval_div
from .json_values import JSON_AGGREGATES
from .jsonb_order import jsonb_key
from .expr import _factorize_objects, array_key, fixed_avg, numeric_div_scale, numeric_op, record_key
from .numeric_math import dscale as _dscale

_NULL_KEY = object()


def factorize(col: Col) -> tuple[np.ndarray, list]:
    """Codes per row and the distinct values (None for NULL), first-seen order."""
    n = len(col)
    d = col.data
    if d.dtype != object and d.dtype.kind in "biufM" and n:
        work = d.view(np.int64) if d.dtype.kind == "M" else d
        if col.nulls is not None:
            # values under the NULL mask are placeholders: keep them out of the domain
            valid = ~col.nulls
            codes = np.full(n, -1, np.int64)
            if valid.any():
                uniq, first, inv = np.unique(work[valid], return_index=True, return_inverse=True)
                vals = Col(d[valid][first], None, col.oid).to_pylist()
                codes[valid] = inv
            else:
                vals = []
            codes[col.nulls] = len(vals)
            return codes, vals + [None]
        uniq, first, inv = np.unique(work, return_index=True, return_inverse=True)
        values = d[first]
        vals = Col(values, None, col.oid).to_pylist()
        return inv.astype(np.int64), vals
    nulls = col.nulls
    if d.dtype != object:
        objs = np.empty(n, dtype=object)
        objs[:] = d.tolist()            # Python values, as a result row holds them
        d = objs
    elif nulls is not None and nulls.any():
        d = d.copy()
    if nulls is not None and nulls.any():
        d[nulls] = _NULL_KEY            # one group for NULL, whatever lies under the mask
    codes, uniq = _factorize_objects(d)
    return codes, [None if v is _NULL_KEY else v for v in uniq.tolist()]


class IntKeys:
    """Distinct integer keys -> group ids 0..n-1, held entirely in numpy.

    The common grouping of a continuous view is one integer column (a
    customer, a campaign): millions of groups.  A Python dict of key tuples
    costs ~150 bytes and a Python step per group, so merges, reads and
    checkpoints of such a view would run at Python speed.  Here lookups are
    a gather from a direct-indexed array while the key range is small
    (``dense[k - base]``), else a binary search over the sorted keys; new
    keys are added with array operations, never one at a time."""

    #: key range always served by the direct-indexed array (int32 entries);
    #: a wider one only while the keys fill at least 1/DENSE_SPARSITY of it
    DENSE_LIMIT = 1 << 22
    DENSE_SPARSITY = 8
    DENSE_MAX = 1 << 26

    def __init__(self) -> None:
        self.karr = np.empty(16, np.int64)     # key of each group id (first n entries)
        self.n = 0
        self.dense: np.ndarray | None = None
        self.base = 0
        self.skeys = np.empty(0, np.int64)     # sorted keys and their ids, when not dense
        self.sgids = np.empty(0, np.int64)

    def keys(self) -> np.ndarray:
        return self.karr[: self.n]

    def adopt(self, keys: np.ndarray) -> None:
        """Take the distinct ``keys`` as groups 0..m-1, in their order."""
        keys = keys.astype(np.int64)
        self.karr, self.n = keys, len(keys)
        if not len(keys):
            return
        lo, hi = int(keys.min()), int(keys.max())
        if self._dense_ok(hi - lo, len(keys)):
            self.base, self.dense = lo, np.full(hi - lo + 1, -1, np.int32)
            self.dense[keys - lo] = np.arange(len(keys), dtype=np.int32)
        else:
            self._to_sorted()

    def nbytes(self) -> int:
        return 8 * self.n + (self.dense.nbytes if self.dense is not None else 16 * self.n)

    def assign(self, d: np.ndarray) -> np.ndarray:
        d = d.astype(np.int64, copy=False)
        if not len(d):
            return np.zeros(0, np.int64)
        if self.n == 0 and self.dense is None:
            lo, hi = int(d.min()), int(d.max())
            if self._dense_ok(hi - lo, len(d)):
                self.base, self.dense = lo, np.full(hi - lo + 1, -1, np.int32)
        if self.dense is not None and not self._fit_dense(d):
            self._to_sorted()
        if self.dense is not None:
            off = d - self.base
            gids = self.dense[off]
            missing = gids < 0
            if missing.any():
                present = np.zeros(len(self.dense), bool)
                present[off[missing]] = True
                new = np.flatnonzero(present)
                self.dense[new] = self._append(new + self.base)
                gids = self.dense[off]
            return gids.astype(np.int64)
        gids = self._assign_sorted(d)
        self._maybe_dense()
        return gids

    def _dense_ok(self, width: int, groups: int) -> bool:
        return width < self.DENSE_LIMIT or (width < self.DENSE_MAX and width <= self.DENSE_SPARSITY * groups)

    def _maybe_dense(self) -> None:
        """Sorted keys that have come to fill their range: index them directly."""
        if self.dense is not None or not self.n:
            return
        lo, hi = int(self.skeys[0]), int(self.skeys[-1])
        if self._dense_ok(hi - lo, self.n):
            self.base, self.dense = lo, np.full(hi - lo + 1, -1, np.int32)
            self.dense[self.skeys - lo] = self.sgids
            self.skeys = self.sgids = np.empty(0, np.int64)

    def _fit_dense(self, d: np.ndarray) -> bool:
        """Grow the direct-indexed array to cover ``d``; False if too wide."""
        assert self.dense is not None
        lo, hi = int(d.min()), int(d.max())
        top = self.base + len(self.dense) - 1
        if lo >= self.base and hi <= top:
            return True
        new_lo, new_hi = min(lo, self.base), max(hi, top)
        if not self._dense_ok(new_hi - new_lo, self.n + len(d)):
            return False
        grown = np.full(new_hi - new_lo + 1, -1, np.int32)
        grown[self.base - new_lo: self.base - new_lo + len(self.dense)] = self.dense
        self.dense, self.base = grown, new_lo
        return True

    def _to_sorted(self) -> None:
        keys = self.keys()
        order = np.argsort(keys)             # distinct keys: any sort is stable enough
        self.skeys, self.sgids = keys[order], order.astype(np.int64)
        self.dense = None

    def _assign_sorted(self, d: np.ndarray) -> np.ndarray:
        gids = np.full(len(d), -1, np.int64)
        if len(self.skeys):
            pos = np.minimum(np.searchsorted(self.skeys, d), len(self.skeys) - 1)
            hit = self.skeys[pos] == d
            gids[hit] = self.sgids[pos[hit]]
        missing = gids < 0
        if missing.any():
            new = np.unique(d[missing])
            ids = self._append(new)
            at = np.searchsorted(self.skeys, new)
            self.skeys, self.sgids = np.insert(self.skeys, at, new), np.insert(self.sgids, at, ids)
            gids[missing] = ids[np.searchsorted(new, d[missing])]
        return gids

    def _append(self, new: np.ndarray) -> np.ndarray:
        """Give the distinct keys ``new`` the next group ids."""
        n, k = self.n, len(new)
        if n + k > len(self.karr):
            grown = np.empty(max(n + k, 2 * len(self.karr)), np.int64)
            grown[:n] = self.karr[:n]
            self.karr = grown
        self.karr[n: n + k] = new
        self.n = n + k
        return np.arange(n, n + k, dtype=np.int64)


class PairKeys:
    """Distinct pairs of integer keys -> group ids, in numpy: a windowed
    view's (pane, key) groups.  Each column's distinct values get a code
    (an :class:`IntKeys` per column, codes below 2**32), and the pair of
    codes, packed into one int64, is an :class:`IntKeys` key itself; so
    merges, reads and checkpoints of millions of (window, key) groups take
    no Python step per group."""

    MAX_CODES = 1 << 32

    def __init__(self) -> None:
        self.cols = (IntKeys(), IntKeys())
        self.pairs = IntKeys()

    @property
    def n(self) -> int:
        return self.pairs.n

    def fits(self, d1: np.ndarray, d2: np.ndarray) -> bool:
        """Whether the codes stay packable once ``d1``/``d2``'s values are in
        (an upper bound: their lengths)."""
        return all(c.n + len(d) < self.MAX_CODES for c, d in zip(self.cols, (d1, d2)))

    def assign(self, d1: np.ndarray, d2: np.ndarray) -> np.ndarray:
        c1, c2 = self.cols[0].assign(d1), self.cols[1].assign(d2)
        return self.pairs.assign((c1 << 32) | c2)

    def adopt(self, d1: np.ndarray, d2: np.ndarray) -> None:
        """Take the distinct pairs (``d1[i]``, ``d2[i]``) as groups 0..m-1."""
        c1, c2 = self.cols[0].assign(d1), self.cols[1].assign(d2)
        self.pairs.adopt((c1 << 32) | c2)

    def keys(self) -> tuple[np.ndarray, np.ndarray]:
        """Both keys of every group, by group id."""
        codes = self.pairs.keys()
        return self.cols[0].keys()[codes >> 32], self.cols[1].keys()[codes & 0xFFFFFFFF]

    def nbytes(self) -> int:
        return self.pairs.nbytes() + self.cols[0].nbytes() + self.cols[1].nbytes()


_MICROS = np.dtype("datetime64[us]")


def _int_key(col: Col) -> np.ndarray | None:
    """The column's values as integer keys, or None (NULLs, other types).
    A timestamp is its int64 microseconds (``key_columns`` turns them back),
    as the LLVM kernel keys it: both paths store a pane key the same way."""
    d = col.data
    if col.nulls is not None and col.nulls.any():
        return None
    if d.dtype == _MICROS:
        return d.view(np.int64)
    return d if d.dtype.kind in "iu" else None


class GroupIndex:
    """Key tuple -> dense group id, growing.

    One integer key without NULLs is indexed in numpy (:class:`IntKeys`),
    and so are two (:class:`PairKeys`: a windowed view's pane and key);
    anything else -- more keys, text, a NULL key -- in a dict of key
    tuples.  An integer index that meets a NULL key or a caller that needs
    the tuples converts once to the dict form."""

    def __init__(self, key_oids: list[int]) -> None:
        self.key_oids = key_oids
        self._map: dict[tuple, int] = {}
        self._keys: list[tuple] = []
        self.ints: IntKeys | None = None
        self.pairs: PairKeys | None = None

    def __len__(self) -> int:
        if self.ints is not None:
            return self.ints.n
        return self.pairs.n if self.pairs is not None else len(self._keys)

    @property
    def keys(self) -> list[tuple]:
        self._to_tuples()
        return self._keys

    @property
    def map(self) -> dict[tuple, int]:
        self._to_tuples()
        return self._map

    def _to_tuples(self) -> None:
        if self.ints is not None or self.pairs is not None:
            # the Python values a tuple-path batch would produce (dates, not day numbers)
            self._keys = self._tuples()
            self._map = dict(zip(self._keys, range(len(self._keys))))
            self.ints = self.pairs = None

    def _tuples(self) -> list[tuple]:
        return list(zip(*[c.to_pylist() for c in self.key_columns()]))

    def snapshot(self) -> dict:
        """The groups' keys, copied (a checkpoint encodes them later while
        new batches extend the live index): a numpy array for an integer
        index, else the list of key tuples (immutable, so copied shallowly)."""
        if self.ints is not None:
            return {"int_keys": self.ints.keys().copy()}
        if self.pairs is not None:
            # two arrays, not a Python tuple per group: the snapshot is taken
            # while ingest is held off (a YSB view's 20k groups took ~10 ms)
            k1, k2 = self.pairs.keys()
            return {"pair_keys": [k1, k2]}
        return {"keys": list(self._keys)}

    def load_snapshot(self, snap: dict) -> None:
        """Take the groups of :meth:`snapshot` into this empty index, same ids."""
        if "int_keys" in snap:
            self.adopt_array(snap["int_keys"])
        elif "pair_keys" in snap:
            self.adopt_pairs(*snap["pair_keys"])
        else:
            self.adopt(snap["keys"])

    def _int_keys_ok(self) -> bool:
        return len(self.key_oids) == 1 and (self.ints is not None or not self._keys)

    def _pairs_ok(self) -> bool:
        return len(self.key_oids) == 2 and (self.pairs is not None or not self._keys)

    def adopt_pairs(self, k1: np.ndarray, k2: np.ndarray) -> np.ndarray:
        """An empty index takes the distinct integer pairs (``k1[i]``, ``k2[i]``) as groups 0..m-1."""
        assert len(self) == 0 and len(self.key_oids) == 2
        self.pairs = PairKeys()
        self.pairs.adopt(k1, k2)
        return np.arange(len(k1), dtype=np.int64)

    def adopt_array(self, keys: np.ndarray) -> np.ndarray:
        """An empty index takes the distinct integer ``keys`` as groups 0..m-1."""
        assert len(self) == 0
        self.ints = IntKeys()
        self.ints.adopt(keys)
        return np.arange(len(keys), dtype=np.int64)

    def adopt(self, keys: list[tuple]) -> np.ndarray:
        """An empty index takes the distinct ``keys`` of another index as its
        groups 0..m-1 (a merge into an empty table: the dict is built at C
        speed instead of one lookup per key)."""
        assert len(self) == 0
        self.ints = self.pairs = None
        self._keys = list(keys)
        self._map = dict(zip(self._keys, range(len(self._keys))))
        return np.arange(len(self._keys), dtype=np.int64)

    def take_groups_of(self, other: "GroupIndex") -> np.ndarray:
        """Group ids here for each of ``other``'s groups, adding the new ones
        (the merge of one table into another)."""
        if other.ints is not None and self._int_keys_ok():
            if len(self) == 0:
                return self.adopt_array(other.ints.keys())
            assert self.ints is not None         # not empty, and integer keys
            return self.ints.assign(other.ints.keys())
        if other.pairs is not None and self._pairs_ok():
            k1, k2 = other.pairs.keys()
            if len(self) == 0:
                return self.adopt_pairs(k1, k2)
            if self.pairs is not None and self.pairs.fits(k1, k2):
                return self.pairs.assign(k1, k2)
        if len(self) == 0:
            return self.adopt(other.keys)
        return self.lookup_or_add(other.keys)

    def assign(self, key_cols: list[Col], n: int) -> np.ndarray:
        if len(key_cols) == 1 and self._int_keys_ok():
            d = _int_key(key_cols[0])
            if d is not None:
                if self.ints is None:
                    self.ints = IntKeys()
                return self.ints.assign(d)
        if len(key_cols) == 2 and self._pairs_ok():
            d1, d2 = _int_key(key_cols[0]), _int_key(key_cols[1])
            if d1 is not None and d2 is not None:
                if self.pairs is None:
                    self.pairs = PairKeys()
                if self.pairs.fits(d1, d2):
                    return self.pairs.assign(d1, d2)
        self._to_tuples()
        if not key_cols:
            if not self._keys:
                self._keys.append(())
                self._map[()] = 0
            return np.zeros(n, dtype=np.int64)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        codes_list = []
        vals_list = []
        combined = np.zeros(n, dtype=np.int64)
        for c in key_cols:
            codes, vals = factorize(c)
            codes_list.append(codes)
            vals_list.append(vals)
            if n and (int(combined.max()) + 1) * (len(vals) + 1) >= 1 << 62:
                # many keys of many values (an ungrouped view's rows): renumber densely (< n) before int64 wraps
                combined = np.unique(combined, return_inverse=True)[1].astype(np.int64).reshape(-1)
            combined = combined * (len(vals) + 1) + codes
        if len(key_cols) == 1:
            local_keys = [(v,) for v in vals_list[0]]
            local_codes = codes_list[0]
        else:
            uniq, first, inv = np.unique(combined, return_index=True, return_inverse=True)
            local_codes = inv.astype(np.int64)
            local_keys = [tuple(vals_list[k][codes_list[k][i]] for k in range(len(key_cols))) for i in first.tolist()]
        return self.lookup_or_add(local_keys)[local_codes]

    def lookup_or_add(self, keys: list[tuple]) -> np.ndarray:
        self._to_tuples()
        out = np.empty(len(keys), dtype=np.int64)
        m, lst = self._map, self._keys
        for j, key in enumerate(keys):
            g = m.get(key)
            if g is None:
                g = len(lst)
                m[key] = g
                lst.append(key)
            out[j] = g
        return out

    def nbytes(self) -> int:
        """Bytes of the key map, measured: the dict, the key list and the key
        tuples with their values; or the numpy arrays of an integer index."""
        if self.ints is not None:
            return self.ints.nbytes()
        if self.pairs is not None:
            return self.pairs.nbytes()
        seen: set[int] = set()
        return deep_size(self._map, seen) + deep_size(self._keys, seen)

    def key_columns(self) -> list[Col]:
        if self.ints is not None:
            oid = self.key_oids[0]
            return [Col(self.ints.keys().astype(sqltypes.dtype_of(oid)), None, oid)]
        if self.pairs is not None:
            return [Col(k.astype(sqltypes.dtype_of(oid)), None, oid) for k, oid in zip(self.pairs.keys(), self.key_oids)]
        cols = []
        for k, oid in enumerate(self.key_oids):
            cols.append(Col.from_pylist([key[k] for key in self.keys], oid))
        return cols


# ------------------------------------------------------------------ states

class AggState:
    """Per-group state of one aggregate; arrays indexed by group id."""

    def __init__(self, spec: "AggSpec") -> None:
        self.spec = spec
        self.size = 0

    def ensure(self, ngroups: int, exact: bool = False) -> None:
        """Room for ``ngroups``.  Batches grow by doubling (amortised); a merge
        into a view's global state passes ``exact`` so the kept state is sized
        by its groups, not by the history of its growth."""
        if ngroups > self.size:
            cap = ngroups if exact else max(ngroups, self.size * 2, 16)
            self._grow(cap)
            self.size = cap

    def _grow(self, cap: int) -> None:
        raise NotImplementedError

    def update(self, gids: np.ndarray, ng: int, args: list[Col], valid: np.ndarray | None) -> None:
        """Fold one batch in: row i goes to group ``gids[i]`` (``valid``: the rows that count)."""
        raise NotImplementedError

    #: rows per group of the batch being folded in, when the caller counted
    #: them once for all its aggregates (update_counted); None otherwise
    _batch_counts: np.ndarray | None = None

    def update_counted(self, gids: np.ndarray, ng: int, args: list[Col], valid: np.ndarray | None,
                       counts: np.ndarray) -> None:
        """:meth:`update` with ``counts`` = bincount(gids) already computed: every
        aggregate of a GROUP BY counts its rows per group, and over 6M rows
        (TPC-H Q1: eight aggregates) one count serves all that count every row."""
        if valid is not None:
            self.update(gids, ng, args, valid)
            return
        self._batch_counts = counts
        try:
            self.update(gids, ng, args, valid)
        finally:
            self._batch_counts = None

    def _row_counts(self, g: np.ndarray, ng: int) -> np.ndarray:
        """Rows per group of ``g`` (the batch's counts when the caller gave them)."""
        pre = self._batch_counts
        if pre is not None:
            return pre[:ng]
        return np.bincount(g, minlength=ng)[:ng]

    def merge(self, other: "AggState", gmap: np.ndarray) -> None:
        """Fold ``other``'s groups in; its group i is group ``gmap[i]`` here."""
        raise NotImplementedError

    def final(self, ng: int) -> Col:
        """The aggregate's value for groups 0..ng-1."""
        raise NotImplementedError

    def settle(self) -> None:
        """Apply input the state buffers (sketches), so that every field
        indexed by group is a dense array as long as the capacity: code that
        cuts states by group (retention, SESSION merges) relies on it."""

    @staticmethod
    def _grown(arr: np.ndarray, cap: int, fill) -> np.ndarray:
        out = np.full(cap, fill, dtype=arr.dtype) if arr.dtype != object else np.array([fill] * cap, dtype=object) if not isinstance(fill, list) else _obj_list(cap)
        out[: len(arr)] = arr
        return out

    def nbytes(self) -> int:
        """Bytes the state holds, measured: numpy buffers, and the Python
        objects an object array or a container refers to (DISTINCT lists,
        strings, Decimals), each counted once."""
        seen: set[int] = set()
        return sum(deep_size(v, seen) for k, v in self.__dict__.items() if k != "spec" and not isinstance(v, np.dtype))


_CONTAINERS = (list, tuple, set, frozenset)


def deep_size(v: Any, seen: set[int]) -> int:
    """Bytes of ``v`` and of everything it holds, by sys.getsizeof, each
    object once (``seen``: ids already counted); numpy arrays by their
    buffer, plus the objects of an object array."""
    if v is None or id(v) in seen:
        return 0
    seen.add(id(v))
    if isinstance(v, np.ndarray):
        total = v.nbytes
        if v.dtype == object:
            total += sum(deep_size(x, seen) for x in v.ravel().tolist())
        return total
    total = sys.getsizeof(v)
    if isinstance(v, _CONTAINERS):
        total += sum(deep_size(x, seen) for x in v)
    elif isinstance(v, dict):
        total += sum(deep_size(k, seen) + deep_size(x, seen) for k, x in v.items())
    elif hasattr(v, "__dict__") and not isinstance(v, type):
        total += sum(deep_size(x, seen) for x in vars(v).values())
    return total


def _obj_list(cap: int) -> np.ndarray:
    a = np.empty(cap, dtype=object)
    for i in range(cap):
        a[i] = None
    return a


class CountState(AggState):
    def __init__(self, spec):
        super().__init__(spec)
        self.cnt = np.zeros(0, np.int64)

    def _grow(self, cap):
        self.cnt = self._grown(self.cnt, cap, 0)

    def update(self, gids, ng, args, valid):
        g = gids if valid is None else gids[valid]
        self.cnt[:ng] += self._row_counts(g, ng)

    def merge(self, other, gmap):
        np.add.at(self.cnt, gmap, other.cnt[: len(gmap)])

    def final(self, ng):
        return Col(self.cnt[:ng].copy(), None, type_oids.INT8)


def _check_float_sum(old: np.ndarray, new: np.ndarray, inf_in: np.ndarray,
                     g: np.ndarray | None = None, w: np.ndarray | None = None) -> None:
    """PostgreSQL's float8_accum: adding a finite value to a finite sum that gives an infinity is an error.

    The batch's per-group totals decide when no group turned non-finite; otherwise (rare) the rows of
    the groups that did are added one at a time, in order, as PostgreSQL does, because a later
    infinite input must not excuse an earlier overflow."""
    if _overflowed(old, new, inf_in).any():
        raise _float_overflow()
    if g is None or w is None:
        return
    suspect = np.flatnonzero(~np.isfinite(new) & np.isfinite(old) & inf_in)
    for gi in suspect.tolist():
        acc = float(old[gi])
        for v in w[g == gi].tolist():
            nxt = acc + v
            if math.isinf(nxt) and not (math.isinf(acc) or math.isinf(v)):
                raise _float_overflow()
            acc = nxt


def _overflowed(old: np.ndarray, new: np.ndarray, inf_in: np.ndarray) -> np.ndarray:
    """Groups whose finite sum became infinite without an infinite input."""
    return np.isinf(new) & ~np.isinf(old) & ~inf_in


def _float_overflow() -> PgError:
    return PgError(NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow")


def check_no_overflow(table) -> None:
    """22003 when a float sum of GroupTable ``table`` overflowed in a merge
    (a statement's private table: its own rows overflowed)."""
    for st in table.states:
        marks = getattr(st, "overflowed", None)
        if marks is not None and marks.any():
            raise _float_overflow()


class SumState(AggState):
    """sum/avg: exact for integers (int64, or Python ints when that could
    overflow), numeric via Decimal, floats via float64.

    Fixed-point numeric input (FixedCol) accumulates in ``fxsum``, int64 at
    ``fx_scale``, so no Python runs per group; ``fx_bound`` bounds its
    magnitude and the Decimal ``sum`` takes it over before it could wrap."""

    fxsum: np.ndarray | None = None      # class defaults: saved states without these fields
    fx_scale: int | None = None
    fx_bound = 0.0

    def __init__(self, spec):
        super().__init__(spec)
        self.kind = {type_oids.INT2: "i", type_oids.INT4: "i", type_oids.INT8: "o", type_oids.NUMERIC: "o", type_oids.FLOAT4: "f", type_oids.FLOAT8: "f",
                     type_oids.INTERVAL: "o", type_oids.OID: "i"}.get(spec.arg_oids[0] if spec.arg_oids else type_oids.INT8, "f")
        dt = {"i": np.int64, "f": np.float64, "o": object}[self.kind]
        self.sum = np.zeros(0, dt)
        self.cnt = np.zeros(0, np.int64)
        self.overflowed: np.ndarray | None = None     # float sums that overflowed in a merge, per group

    def _grow(self, cap):
        zero = 0 if self.kind == "o" else 0
        if self.kind == "o":
            s = np.empty(cap, dtype=object)
            s[:] = Interval() if self.spec.arg_oids[:1] == [type_oids.INTERVAL] else 0
            s[: len(self.sum)] = self.sum
            self.sum = s
        else:
            self.sum = self._grown(self.sum, cap, zero)
        self.cnt = self._grown(self.cnt, cap, 0)
        if self.fxsum is not None:
            self.fxsum = self._grown(self.fxsum, cap, 0)

    def update(self, gids, ng, args, valid):
        c = args[0]
        g = gids
        if isinstance(c, FixedCol) and self.kind == "o" and self._update_fixed(c, g, ng, valid):
            return
        data = c.data
        if valid is not None:
            g = gids[valid]
            data = data[valid]
        if len(g) == 0:
            return
        if self.kind == "f":
            w = data.astype(np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                new = self.sum[:ng] + np.bincount(g, weights=w, minlength=ng)[:ng]
            inf_in = np.zeros(ng, bool)
            inf_in[g[np.isinf(w)]] = True
            _check_float_sum(self.sum[:ng], new, inf_in, g, w)     # before any of the state changes
            self.sum[:ng] = new
            self.cnt[:ng] += self._row_counts(g, ng)
            return
        self.cnt[:ng] += self._row_counts(g, ng)
        if self.kind == "i":
            d64 = data.astype(np.int64)
            if len(d64) and int(np.abs(d64).max()) * len(d64) < (1 << 52):
                # float64 bincount is exact below 2**53 and far faster than add.at
                self.sum[:ng] += np.rint(np.bincount(g, weights=d64, minlength=ng)[:ng]).astype(np.int64)
            else:
                np.add.at(self.sum, g, d64)
        else:
            if c.oid == type_oids.INT8:
                # exact: split into 32-bit halves so int64 partial sums cannot overflow
                d = data.astype(np.int64)
                hi = (d >> 32)
                lo = d & 0xFFFFFFFF
                shi = np.zeros(ng, np.int64)
                slo = np.zeros(ng, np.int64)
                np.add.at(shi, g, hi)
                np.add.at(slo, g, lo)
                touched = np.flatnonzero(np.bincount(g, minlength=ng))
                for i in touched.tolist():
                    self.sum[i] = self.sum[i] + (int(shi[i]) << 32) + int(slo[i])
            else:
                # Decimal / interval sums: the per-element adds run in numpy's C loop
                vals = data if data.dtype == object else data.astype(object)
                # infinity + -infinity is NaN for numeric sums, not Decimal's InvalidOperation
                with decimal.localcontext(decimal.Context(prec=1000, Emax=999999, Emin=-999999,
                                                          traps=[decimal.DivisionByZero, decimal.Overflow])):
                    np.add.at(self.sum, g, vals)

    def _update_fixed(self, c: FixedCol, g, ng, valid) -> bool:
        """Exact int64 per-group sums of a fixed-point numeric batch; only the
        touched groups' running Decimal sums are updated in Python."""
        fx = c.fx
        if valid is not None:
            g = g[valid]
            fx = fx[valid]
        if len(g) == 0:
            return True
        # n * max|fx| bounds the batch's sum at the price of two reductions;
        # the exact sum of |fx| (a copy and a pass) only when that is too loose
        top = c.bound if c.bound is not None else float(max(-int(fx.min()), int(fx.max())))
        bound = float(len(fx)) * top
        if bound >= 9.0e18:
            bound = float(np.abs(fx).sum(dtype=np.float64))
            if bound >= 9.0e18:
                return False
        if self.fxsum is None or self.fx_scale != c.scale or self.fx_bound + bound >= 9.0e18:
            self._flush_fixed()
            self.fxsum = np.zeros(self.size, np.int64)
            self.fx_scale = c.scale
        np.add.at(self.fxsum, g, fx)
        self.fx_bound += bound
        self.cnt[:ng] += self._row_counts(g, ng)
        return True

    def _flush_fixed(self) -> None:
        """Move the int64 fixed-point sums into the Decimal sums (Python per touched group)."""
        fx = self.fxsum
        if fx is None:
            return
        scale = self.fx_scale
        assert scale is not None             # set with fxsum
        for i in np.flatnonzero(fx).tolist():
            self.sum[i] = self.sum[i] + decimal.Decimal(int(fx[i])).scaleb(-scale)
        self.fxsum, self.fx_scale, self.fx_bound = None, None, 0.0

    def _only_fixed(self, ng: int) -> bool:
        """True when every input so far went to ``fxsum`` (the Decimal sums are all 0)."""
        if self.fxsum is None:
            return False
        return not bool((self.sum[:ng] != 0).any())

    def merge(self, other, gmap):
        k = len(gmap)
        self._flush_fixed()
        other._flush_fixed()
        np.add.at(self.cnt, gmap, other.cnt[:k])
        if self.kind == "o":
            for i, gi in enumerate(gmap.tolist()):
                self.sum[gi] = self.sum[gi] + other.sum[i]
        elif self.kind == "f":
            self.add_floats(gmap, other.sum[:k], other.overflowed[:k] if other.overflowed is not None else None)
        else:
            np.add.at(self.sum, gmap, other.sum[:k])

    def add_floats(self, gmap: np.ndarray, add: np.ndarray, marked: np.ndarray | None = None) -> None:
        """Add partial float sums ``add`` to distinct groups ``gmap`` (a merge of
        states, after their batches were logged: it must not fail).  A group
        whose finite sum turns infinite from a finite part is marked, and
        reading it fails as the same query over all the rows would (22003);
        ``marked``: the parts' own marks."""
        old = self.sum[gmap]
        with np.errstate(over="ignore", invalid="ignore"):
            new = old + add
        bad = _overflowed(old, new, np.isinf(add))
        if marked is not None:
            bad |= marked
        if bad.any():
            if self.overflowed is None or len(self.overflowed) < len(self.sum):
                grown = np.zeros(len(self.sum), bool)
                if self.overflowed is not None:
                    grown[: len(self.overflowed)] = self.overflowed
                self.overflowed = grown
            self.overflowed[gmap[bad]] = True
        self.sum[gmap] = new

    def final(self, ng):
        if self.overflowed is not None and self.overflowed[:ng].any():
            raise _float_overflow()
        cnt = self.cnt[:ng]
        nulls = cnt == 0
        fn = self.spec.func
        if self.kind == "o" and self.fxsum is not None:
            if self.spec.oid == type_oids.NUMERIC and self._only_fixed(ng):
                if fn == "sum":
                    return FixedCol(self.fxsum[:ng].copy(), self.fx_scale, nulls)
                vals = np.empty(ng, dtype=object)
                has = ~nulls
                vals[has] = fixed_avg(self.fxsum[:ng][has], cnt[has], self.fx_scale)
                return Col(vals, nulls, type_oids.NUMERIC)
            self._flush_fixed()
        if fn == "sum":
            oid = self.spec.oid
            if oid == type_oids.NUMERIC:
                vals = [decimal.Decimal(v) if not isinstance(v, decimal.Decimal) else v for v in self.sum[:ng].tolist()]
                return Col.from_pylist([None if z else v for v, z in zip(vals, nulls.tolist())], type_oids.NUMERIC)
            if oid == type_oids.INTERVAL:
                return Col.from_pylist([None if z else checked_interval(v) for v, z in zip(self.sum[:ng].tolist(), nulls.tolist())],
                                       type_oids.INTERVAL)
            data = self.sum[:ng].astype(sqltypes.dtype_of(oid))
            return Col(data, nulls, oid)
        # avg
        if self.spec.oid == type_oids.FLOAT8:
            with np.errstate(all="ignore"):
                return Col(self.sum[:ng].astype(np.float64) / np.where(cnt == 0, 1, cnt), nulls, type_oids.FLOAT8)
        if self.spec.oid == type_oids.INTERVAL:
            out = [None if z else interval_div(checked_interval(s), float(c))
                   for s, c, z in zip(self.sum[:ng].tolist(), cnt.tolist(), nulls.tolist())]
            return Col.from_pylist(out, type_oids.INTERVAL)
        out = []
        for s, c, z in zip(self.sum[:ng].tolist(), cnt.tolist(), nulls.tolist()):
            if z:
                out.append(None)
            else:
                out.append(numeric_op("/", decimal.Decimal(s), decimal.Decimal(c)))
        return Col.from_pylist(out, type_oids.NUMERIC)


def _beats(v: np.ndarray, cur: np.ndarray, is_min: bool) -> np.ndarray:
    """Where ``v`` replaces ``cur`` as the minimum (maximum), in PostgreSQL's order: NaN above every float."""
    if v.dtype.kind != "f":
        return (v < cur) if is_min else (v > cur)
    vn, cn = np.isnan(v), np.isnan(cur)
    return ((v < cur) | (cn & ~vn)) if is_min else ((v > cur) | (vn & ~cn))


def _obj_beats(v, cur, is_min: bool) -> bool:
    """The same for Python values; numeric NaN (which Decimal refuses to order) sorts above every number."""
    if isinstance(v, decimal.Decimal) and (v.is_nan() or cur.is_nan()):
        return (cur.is_nan() and not v.is_nan()) if is_min else (v.is_nan() and not cur.is_nan())
    if isinstance(v, list):              # arrays: element by element, NULL elements last
        v, cur = array_key(v), array_key(cur)
    return v < cur if is_min else v > cur


class MinMaxState(AggState):
    def __init__(self, spec):
        super().__init__(spec)
        self.is_min = spec.func in ("min", "bool_and", "every")
        self.oid = spec.arg_oids[0]
        self.dtype = sqltypes.dtype_of(self.oid)
        self.val = np.zeros(0, self.dtype) if self.dtype != object else np.empty(0, object)
        self.has = np.zeros(0, bool)

    def _update_fixed(self, c: FixedCol, g, ng, valid) -> None:
        """min/max of fixed-point numerics per group in int64; Decimals are made
        for the touched groups' extremes only, not for every row."""
        fx = c.fx
        if valid is not None:
            g, fx = g[valid], fx[valid]
        if len(g) == 0:
            return
        lim = np.iinfo(np.int64)
        scratch = np.full(ng, lim.max if self.is_min else lim.min, np.int64)
        (np.minimum if self.is_min else np.maximum).at(scratch, g, fx)
        touched = np.zeros(ng, bool)
        touched[g] = True
        val, has, is_min = self.val, self.has, self.is_min
        for i in np.flatnonzero(touched).tolist():
            v = decimal.Decimal(int(scratch[i])).scaleb(-c.scale)
            if not has[i] or (v < val[i] if is_min else v > val[i]):
                val[i] = v
                has[i] = True

    def _grow(self, cap):
        if self.dtype == object:
            v = np.empty(cap, dtype=object)
            v[: len(self.val)] = self.val
            self.val = v
        else:
            self.val = self._grown(self.val, cap, 0)
        self.has = self._grown(self.has, cap, False)

    def update(self, gids, ng, args, valid):
        c = args[0]
        g = gids
        if isinstance(c, FixedCol) and self.dtype == object:
            self._update_fixed(c, g, ng, valid)
            return
        data = c.data
        if valid is not None:
            g = g[valid]
            data = data[valid]
        if len(g) == 0:
            return
        if self.dtype != object:
            # per-group extreme of this batch via sort-free ufunc.at on a scratch array
            if self.dtype.kind == "M":
                work = data.view(np.int64)
                scratch = np.full(ng, np.iinfo(np.int64).max if self.is_min else np.iinfo(np.int64).min, np.int64)
                (np.minimum if self.is_min else np.maximum).at(scratch, g, work)
                touched = np.zeros(ng, bool)
                touched[g] = True
                cur = self.val[:ng].view(np.int64)
                better = touched & (~self.has[:ng] | ((scratch < cur) if self.is_min else (scratch > cur)))
                cur[better] = scratch[better]
            else:
                if self.dtype.kind == "b":
                    work = data.astype(np.int8)
                    init = 1 if self.is_min else 0
                    scratch = np.full(ng, init, np.int8)
                else:
                    work = data
                    scratch = np.full(ng, np.inf if self.is_min else -np.inf) if self.dtype.kind == "f" else \
                        np.full(ng, np.iinfo(self.dtype).max if self.is_min else np.iinfo(self.dtype).min, self.dtype)
                nan_only = None
                if self.dtype.kind == "f" and self.is_min:
                    # PostgreSQL sorts NaN above every number: min skips it unless a group holds nothing else
                    nan = np.isnan(work)
                    if nan.any():
                        work = np.where(nan, np.inf, work)
                        nan_only = np.ones(ng, bool)
                        nan_only[g[~nan]] = False
                (np.minimum if self.is_min else np.maximum).at(scratch, g, work)
                touched = np.zeros(ng, bool)
                touched[g] = True
                if nan_only is not None:
                    scratch[touched & nan_only] = np.nan
                cur = self.val[:ng]
                sc = scratch.astype(self.dtype)
                better = touched & (~self.has[:ng] | _beats(sc, cur, self.is_min))
                cur[better] = sc[better]
            self.has[g] = True
            return
        val, has = self.val, self.has
        for gi, v in zip(g.tolist(), data.tolist()):
            if not has[gi] or _obj_beats(v, val[gi], self.is_min):
                val[gi] = v
                has[gi] = True

    def merge(self, other, gmap):
        if self.val.dtype != object:
            k = len(gmap)
            self.merge_values(gmap, other.val[:k], other.has[:k])
            return
        for i, gi in enumerate(gmap.tolist()):
            if not other.has[i]:
                continue
            v = other.val[i]
            if not self.has[gi] or _obj_beats(v, self.val[gi], self.is_min):
                self.val[gi] = v
                self.has[gi] = True

    def merge_values(self, gids: np.ndarray, vals: np.ndarray, has: np.ndarray) -> None:
        """Fold per-group extremes ``vals`` (where ``has``) into groups ``gids``
        (distinct ids, fixed-width values): numpy, no Python per group."""
        g, v = gids[has], vals[has]
        if self.val.dtype == object:
            for gi, x in zip(g.tolist(), v.tolist()):
                if not self.has[gi] or _obj_beats(x, self.val[gi], self.is_min):
                    self.val[gi] = x
                    self.has[gi] = True
            return
        v = v.astype(self.val.dtype, copy=False)
        cur = self.val[g]
        better = ~self.has[g] | _beats(v, cur, self.is_min)
        self.val[g[better]] = v[better]
        self.has[g] = True

    def final(self, ng):
        return Col(self.val[:ng].copy(), ~self.has[:ng], self.spec.oid if self.spec.oid != type_oids.UNKNOWN else self.oid)


class ListState(AggState):
    """Collects values per group: array_agg, string_agg, DISTINCT aggregates,
    percentiles, variance on exact types.  Mergeable by concatenation."""

    def __init__(self, spec):
        super().__init__(spec)
        self.vals = np.empty(0, object)

    def _grow(self, cap):
        v = np.empty(cap, dtype=object)
        v[: len(self.vals)] = self.vals
        for i in range(len(self.vals), cap):
            v[i] = None
        self.vals = v

    def update(self, gids, ng, args, valid):
        g = gids
        lists = [a.to_pylist() for a in args]
        rows = list(zip(*lists)) if len(lists) > 1 else [(v,) for v in lists[0]] if lists else [() for _ in gids]
        if valid is not None:       # (for aggregates that keep NULLs, ``valid`` is their FILTER alone)
            idx = np.flatnonzero(valid).tolist()
            g = gids[valid]
            rows = [rows[i] for i in idx]
        vals = self.vals
        for gi, r in zip(g.tolist(), rows):
            lst = vals[gi]
            if lst is None:
                lst = vals[gi] = []
            lst.append(r)

    def merge(self, other, gmap):
        for i, gi in enumerate(gmap.tolist()):
            o = other.vals[i]
            if o:
                if self.vals[gi] is None:
                    self.vals[gi] = []
                self.vals[gi].extend(o)

    def final(self, ng):
        spec = self.spec
        out = []
        for i in range(ng):
            rows = self.vals[i] or []
            out.append(finalize_list(spec, rows))
        return Col.from_pylist(out, spec.oid)


def distinct_counts(spec: "AggSpec", gids: np.ndarray, ng: int, args: list[Col], valid) -> Col | None:
    """``count(DISTINCT x)`` per group over one batch, for an integer, date or
    scaled-numeric ``x``: the distinct (group, value) pairs by one np.unique,
    where the list state keeps a Python tuple per row (TPC-H Q16's supplier
    counts).  None for other aggregates and types (the list state takes them)."""
    if spec.func != "count" or not spec.distinct or len(args) != 1 or spec.order_key is not None:
        return None     # (a FILTER is in ``valid`` already)
    a = args[0]
    d = a.fx if isinstance(a, FixedCol) else a.data
    if d.dtype == object or d.dtype.kind not in "iubM" or d.ndim != 1:
        return None
    ok = a.valid_mask() if valid is None else (valid & a.valid_mask())
    v = d[ok].view(np.int64) if d.dtype.kind == "M" else d[ok].astype(np.int64)
    g = gids[ok]
    if not len(v):
        return Col(np.zeros(ng, np.int64), None, spec.oid)
    lo = int(v.min())
    span = int(v.max()) - lo + 1
    if span * ng >= 1 << 62:
        return None
    pairs = np.unique(g * span + (v - lo))
    return Col(np.bincount(pairs // span, minlength=ng).astype(np.int64), None, spec.oid)


_NAN_KEY = object()


def _distinct_key(v, oid: int):
    """A value as DISTINCT compares it, hashable: NaN (float or numeric) is
    one value, as in PostgreSQL (Python's NaN is unequal to itself); an
    array element by element; jsonb as jsonb compares ('1.0' = '1')."""
    if isinstance(v, list):
        return array_key(v)
    if oid == type_oids.JSONB and v is not None:
        return jsonb_key(v)
    if oid == type_oids.RECORD and isinstance(v, Record):   # (count(DISTINCT (a, b)) keys are row_key tuples)
        return record_key(v)
    if (isinstance(v, float) and v != v) or (isinstance(v, decimal.Decimal) and v.is_nan()):
        return _NAN_KEY
    return v


def row_key(values: tuple, oids: list[int]) -> tuple:
    """A ROW value as DISTINCT compares it: field by field as each field's
    type compares, NULL fields equal (the value itself is never NULL)."""
    return tuple(_distinct_key(v, oid) for v, oid in zip(values, oids))


def _dedupe(rows, oid: int):
    seen = set()
    out = []
    for r in rows:
        k = _distinct_key(r[0], oid)
        if k in seen:
            continue
        seen.add(k)
        out.append(r)
    return out


def sort_key(v: Any, oid: int = 0) -> tuple:
    """PostgreSQL's order of one type's values: NULLs last, NaN above every
    number (Python's NaN and Decimal NaN do not order), arrays element by
    element, jsonb as jsonb orders."""
    if v is None:
        return (2, 0)
    if (isinstance(v, float) and v != v) or (isinstance(v, decimal.Decimal) and v.is_nan()):
        return (1, 0)
    if isinstance(v, list):
        return (0, array_key(v))
    if oid == type_oids.RECORD and isinstance(v, Record):
        return (0, record_key(v))
    if oid == type_oids.JSONB:
        return (0, jsonb_key(v))
    return (0, v)


def _array_rows(vals: list) -> list:
    """array_agg of arrays: one more dimension; every input non-NULL and of
    the same dimensions (array_agg_array_transfn)."""
    shape = None
    for v in vals:                  # checked in input order: the first bad input names the error
        if v is None:
            raise PgError("22004", "cannot accumulate null arrays")
        dims = tuple(array_dims(v))
        if dims == ():
            raise PgError("2202E", "cannot accumulate empty arrays")
        if shape is not None and dims != shape:
            raise PgError("2202E", "cannot accumulate arrays of different dimensionality")
        shape = dims
    return vals


_BIT_OPS = {"bit_and": operator.and_, "bit_or": operator.or_, "bit_xor": operator.xor}


def finalize_list(spec: "AggSpec", rows: list) -> Any:
    fn = spec.func
    if spec.distinct:
        oid = spec.arg_oids[0] if spec.arg_oids else 0
        rows = _dedupe(rows, oid)
        if spec.order_key is None and fn != "count":    # DISTINCT sorts its input, as PostgreSQL's does
            rows = sorted(rows, key=lambda r: sort_key(r[0], oid))
    if spec.order_key is not None and rows:
        rows = spec.order_key(rows)
    vals = [r[0] for r in rows]
    if fn == "count":
        return len(vals)
    if fn == "array_agg":
        if rows and spec.arg_oids[0] in type_oids.ELEMENT_OF:
            return _array_rows(vals)
        return vals if rows else None
    if fn in JSON_AGGREGATES:
        return json_values.finish(fn, rows, spec.arg_oids[0])
    if fn in ordered_set.HYPOTHETICAL:
        return ordered_set.hypothetical(fn, rows, spec.hypothetical, spec.sort, spec.sort_key)
    if fn in ("percentile_cont", "percentile_disc"):
        return ordered_set.percentile(fn, vals, spec.fraction, spec.descending)
    if fn == "string_agg":
        if not rows:
            return None
        empty = b"" if isinstance(rows[0][0], bytes) else ""      # string_agg(bytea, bytea) is bytea
        return empty.join(((r[1] if k and r[1] is not None else empty) + r[0]) for k, r in enumerate(rows))
    if not vals:
        return None
    if fn in _BIT_OPS:
        return functools.reduce(_BIT_OPS[fn], vals)
    if fn in ("sum", "avg"):
        if spec.oid == type_oids.INTERVAL:
            span = checked_interval(functools.reduce(operator.add, vals))
            return span if fn == "sum" else interval_div(span, float(len(vals)))
        if spec.oid == type_oids.FLOAT8:
            s = math.fsum(vals)
            return s if fn == "sum" else s / len(vals)
        if spec.oid in (type_oids.INT8, type_oids.INT4):
            return sum(vals)
        # numeric_op's context: exact to 1000 digits (sum() would round at Python's 28), inf + -inf is NaN
        total = functools.reduce(lambda a, b: numeric_op("+", a, b), (decimal.Decimal(v) for v in vals),
                                 decimal.Decimal(0))
        return total if fn == "sum" else numeric_op("/", total, decimal.Decimal(len(vals)))
    if fn in ("min", "bool_and", "every"):
        return min(vals, key=lambda v: sort_key(v, spec.oid))
    if fn in ("max", "bool_or"):
        return max(vals, key=lambda v: sort_key(v, spec.oid))
    if fn in ("stddev", "stddev_samp", "variance", "var_samp", "stddev_pop", "var_pop"):
        return _variance(fn, vals, spec.oid)
    if fn == "mode":
        # mode_final walks the sorted values and keeps the first most frequent
        # one: among ties, the smallest
        counts = collections.Counter(vals)
        top = max(counts.values())
        return (max if spec.descending else min)(v for v, c in counts.items() if c == top)
    raise PgError(UNDEFINED_FUNCTION, f"aggregate {fn} not supported here")


def _youngs_cramer(vals: list) -> float:
    """The sum of squared deviations as PostgreSQL's float8_accum builds it,
    row by row in input order (Youngs-Cramer), so variances agree to the
    last bit; finite inputs overflowing raise 22003, an infinite or NaN
    input makes it NaN."""
    n, sx, sxx = 0.0, 0.0, 0.0
    for v in vals:
        prev_sx = sx
        n += 1.0
        sx += v
        if n > 1.0:
            tmp = v * n - sx
            sxx += tmp * tmp / (n * (n - 1.0))
            if math.isinf(sx) or math.isinf(sxx):
                if not math.isinf(prev_sx) and not math.isinf(v):
                    raise _float_overflow()
                sxx = math.nan
        elif math.isnan(v) or math.isinf(v):
            sxx = math.nan
    return sxx


def _variance(fn: str, vals: list, oid: int):
    n = len(vals)
    samp = fn in ("stddev", "stddev_samp", "variance", "var_samp")
    if samp and n < 2:
        return None
    if oid == type_oids.FLOAT8:
        var = _youngs_cramer(vals) / (n - 1 if samp else n)
        return math.sqrt(var) if fn.startswith("stddev") else var
    d = [decimal.Decimal(v) for v in vals]
    if not all(x.is_finite() for x in d):
        return decimal.Decimal("NaN")        # as PostgreSQL: a NaN or an infinity in the input
    # exact sums of squares: twice the widest integer part plus twice the finest scale, and the count's digits
    scale = max((_dscale(x) for x in d), default=0)
    ctx = decimal.Context(prec=max(60, 2 * (max(x.adjusted() for x in d) + 1 + scale) + len(str(n)) + 10))
    with decimal.localcontext(ctx):     # the default 28 digits would round a square of int8 values
        s = sum(d)
        sq = sum(x * x for x in d)
    num = ctx.subtract(ctx.multiply(decimal.Decimal(n), sq), ctx.multiply(s, s))
    if num <= 0:
        return decimal.Decimal(0)           # PostgreSQL's numeric_stddev_internal: no spread is a plain 0
    # the numerator carries twice the inputs' scale (mul_var at rscale = 2 * dscale of sumX),
    # and the quotient select_div_scale's scale, the square root too
    num = num.quantize(decimal.Decimal(1).scaleb(-2 * scale), context=ctx)
    den = decimal.Decimal(n * (n - 1 if samp else n))
    scale = numeric_div_scale(num, den)
    dvar = ctx.divide(num, den).quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP, context=ctx)
    if fn.startswith("stddev"):
        prec = decimal.Context(prec=scale + max(dvar.adjusted(), 0) + 10)
        return prec.sqrt(dvar).quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP, context=prec)
    return dvar


class AggSpec:
    """A bound aggregate call: function, input expressions, result type."""

    #: an ordered-set aggregate's WITHIN GROUP (ORDER BY x DESC [NULLS FIRST|LAST]) (None: the direction's default)
    descending = False
    nulls_first: bool | None = None
    #: a hypothetical-set aggregate's direct arguments, and its ORDER BY's (desc, nulls first) per column
    hypothetical: tuple = ()
    sort: list = []
    sort_key: Any = None                    # the ORDER BY's key of a non-NULL value (operators._sort_key)

    def __init__(self, func: str, args: list, arg_oids: list[int], distinct: bool = False,
                 filter_=None, order_key=None, fraction: float | None = None, star: bool = False) -> None:
        self.func = func
        self.args = args
        self.arg_oids = arg_oids
        self.distinct = distinct
        self.filter = filter_
        self.order_key = order_key
        self.fraction = fraction
        self.star = star
        self.oid = agg_result_type(func, arg_oids)

    def make_state(self) -> AggState:
        f = self.func
        installed = _INSTALLED.get(f)
        if installed is not None and getattr(installed[0], "DECIDES_DISTINCT", False):
            return installed[0](self)       # sketches: DISTINCT is theirs to honour or refuse
        if self.distinct or self.order_key is not None or f in LIST_AGGREGATES or f in _BIT_OPS:
            return ListState(self)
        if f in ("stddev", "stddev_samp", "variance", "var_samp", "stddev_pop", "var_pop"):
            return ListState(self)
        if f == "count":
            return CountState(self)
        if f in ("sum", "avg"):
            return SumState(self)
        if f in ("min", "max", "bool_and", "bool_or", "every"):
            return MinMaxState(self)
        if f in _INSTALLED:
            return _INSTALLED[f][0](self)
        raise PgError(UNDEFINED_FUNCTION, f"function {f} does not exist")

    def __repr__(self) -> str:
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{', '.join(map(repr, self.args)) or '*'})"


AGGREGATES = {"count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every", "array_agg", "string_agg",
              "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop", "percentile_cont",
              "percentile_disc", "mode", *JSON_AGGREGATES, "bit_and", "bit_or", "bit_xor"}
#: aggregates whose state is the list of their rows
LIST_AGGREGATES = {"array_agg", "string_agg", "percentile_cont", "percentile_disc", "mode", *JSON_AGGREGATES,
                   *ordered_set.HYPOTHETICAL}
#: aggregates that take rows whose (first) argument is NULL
KEEPS_NULLS = {"array_agg", *JSON_AGGREGATES, *ordered_set.HYPOTHETICAL}


#: aggregates defined in modules of their own: name -> (state class, result type of the argument types)
_INSTALLED: dict[str, tuple[Any, Any]] = {}


def install_aggregate(name: str, state_class: Any, result_type: Any) -> None:
    """Called by the module defining an aggregate (``reservoir_agg``) on import."""
    _INSTALLED[name] = (state_class, result_type)
    AGGREGATES.add(name)


def installed_aggregates() -> frozenset[str]:
    """The aggregates beyond PostgreSQL's (PipelineDB's sketches, reservoir_sample)."""
    return frozenset(_INSTALLED)


def agg_result_type(func: str, arg_oids: list[int]) -> int:
    if func in _INSTALLED:
        return _INSTALLED[func][1](arg_oids)
    a = arg_oids[0] if arg_oids else type_oids.INT8
    if func == "count":
        return type_oids.INT8
    if func == "sum":
        return {type_oids.INT2: type_oids.INT8, type_oids.INT4: type_oids.INT8, type_oids.INT8: type_oids.NUMERIC, type_oids.FLOAT4: type_oids.FLOAT4, type_oids.FLOAT8: type_oids.FLOAT8,
                type_oids.NUMERIC: type_oids.NUMERIC, type_oids.INTERVAL: type_oids.INTERVAL}.get(a, type_oids.NUMERIC if a == type_oids.UNKNOWN else -1)
    if func == "avg":
        return {type_oids.FLOAT4: type_oids.FLOAT8, type_oids.FLOAT8: type_oids.FLOAT8, type_oids.INTERVAL: type_oids.INTERVAL}.get(a, type_oids.NUMERIC)
    if func in ("min", "max"):
        return a if a != type_oids.UNKNOWN else type_oids.TEXT
    if func in ("bool_and", "bool_or", "every"):
        return type_oids.BOOL
    if func == "array_agg":
        if a in type_oids.ELEMENT_OF:       # array_agg(anyarray): one more dimension, same type
            return a
        return type_oids.ARRAY_OF.get(a, type_oids.ARRAY_OF[type_oids.TEXT])
    if func == "string_agg":
        return type_oids.BYTEA if a == type_oids.BYTEA else type_oids.TEXT
    if func in _BIT_OPS:
        return a if a in (type_oids.INT2, type_oids.INT4, type_oids.INT8) else -1
    if func in JSON_AGGREGATES:
        return type_oids.JSONB if func.startswith("jsonb") else type_oids.JSON
    if func in ordered_set.HYPOTHETICAL:
        return type_oids.INT8 if func in ("rank", "dense_rank") else type_oids.FLOAT8
    if func in ("stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop"):
        return type_oids.FLOAT8 if a in (type_oids.FLOAT4, type_oids.FLOAT8) else type_oids.NUMERIC
    if func == "percentile_cont":
        return type_oids.INTERVAL if a == type_oids.INTERVAL else type_oids.FLOAT8
    if func in ("percentile_disc", "mode"):
        return a
    return -1


class GroupTable:
    """Hash aggregation sink: keys -> aggregate states."""

    def __init__(self, key_oids: list[int], specs: list[AggSpec]) -> None:
        self.index = GroupIndex(key_oids)
        self.specs = specs
        self.states = [s.make_state() for s in specs]
        self.rows_in = 0

    def consume(self, key_cols: list[Col], agg_inputs: list[tuple[list[Col], np.ndarray | None]], n: int) -> None:
        gids = self.index.assign(key_cols, n)
        ng = len(self.index)
        self.rows_in += n
        for st, (args, valid) in zip(self.states, agg_inputs):
            st.ensure(ng)
            st.update(gids, ng, args, valid)

    def merge(self, other: "GroupTable") -> None:
        if not len(other.index):
            return
        gmap = self.index.take_groups_of(other.index)
        ng = len(self.index)
        for st, ost in zip(self.states, other.states):
            st.ensure(ng, exact=True)
            ost.ensure(len(other.index))
            st.merge(ost, gmap)
        self.rows_in += other.rows_in

    def result(self) -> Batch:
        ng = len(self.index)
        if not self.index.key_oids and ng == 0:
            self.index.assign([], 0)
            ng = 1
        cols = self.index.key_columns()
        for st in self.states:
            st.ensure(ng)
            cols.append(st.final(ng))
        return Batch(cols, ng)

    def nbytes(self) -> int:
        return sum(st.nbytes() for st in self.states) + self.index.nbytes()

    def reset(self) -> None:
        self.index = GroupIndex(self.index.key_oids)
        self.states = [s.make_state() for s in self.specs]
        self.rows_in = 0

