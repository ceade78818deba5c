"""Grouped aggregation with mergeable states.

:class:`GroupTable` is the sink of a grouping pipeline: ``consume`` takes a
batch (key columns plus aggregate inputs) and updates per-group state
arrays; ``merge`` folds another table in (thread-local to global, or a
Spark executor's partial state into the view).  Work per row is numpy;
Python runs once per *new group*, not per row.  The same class serves
ordinary GROUP BY and the stream pipelines of continuous views.
"""
from __future__ import annotations

import decimal
import math
from typing import Any

import numpy as np

from catalog import types as T
from catalog.vector import Batch, Col, FixedCol
from protocol import oids as O
from protocol.errors import PgError, UNDEFINED_FUNCTION, NUMERIC_VALUE_OUT_OF_RANGE

from .expr import _factorize_objects, fixed_avg, numeric_op, numeric_div_scale

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


class GroupIndex:
    """Key tuple -> dense group id, growing."""

    #: widest key range served by the direct-indexed path (entries of int64)
    DENSE_LIMIT = 1 << 22

    def __init__(self, key_oids: list[int]) -> None:
        self.key_oids = key_oids
        self.map: dict[tuple, int] = {}
        self.keys: list[tuple] = []
        # Direct-indexed map for one small-range integer key: dense[k - base]
        # is the group id of key k or -1.  Turns per-batch grouping into a
        # numpy gather; only keys never seen before touch the dict.
        self.dense: np.ndarray | None = None
        self.base = 0

    def __len__(self) -> int:
        return len(self.keys)

    def __getstate__(self):
        return {"key_oids": self.key_oids, "map": self.map, "keys": self.keys}

    def __setstate__(self, st) -> None:
        self.__init__(st["key_oids"])
        self.map, self.keys = st["map"], st["keys"]

    def _assign_dense(self, col: Col) -> np.ndarray | None:
        d = col.data
        if col.nulls is not None or d.dtype.kind not in "iu" or not len(d):
            return None
        lo, hi = int(d.min()), int(d.max())
        if self.dense is None:
            if hi - lo >= self.DENSE_LIMIT:
                return None
            self.base = lo
            self.dense = np.full(hi - lo + 1, -1, np.int64)
        if lo < self.base or hi >= self.base + len(self.dense):
            new_lo, new_hi = min(lo, self.base), max(hi, self.base + len(self.dense) - 1)
            if new_hi - new_lo >= self.DENSE_LIMIT:
                self.dense = None
                return None
            grown = np.full(new_hi - new_lo + 1, -1, np.int64)
            grown[self.base - new_lo : self.base - new_lo + len(self.dense)] = self.dense
            self.dense, self.base = grown, new_lo
        off = d.astype(np.int64) - self.base
        gids = self.dense[off]
        missing = gids < 0
        if missing.any():
            present = np.zeros(len(self.dense), bool)
            present[off[missing]] = True
            new_keys = np.flatnonzero(present)
            for k in new_keys.tolist():
                key = (k + self.base,)
                g = self.map.get(key)
                if g is None:
                    g = len(self.keys)
                    self.map[key] = g
                    self.keys.append(key)
                self.dense[k] = g
            gids = self.dense[off]
        return gids

    def _dense_key_column(self) -> Col | None:
        """The key column straight from the direct-indexed array (numpy, no
        Python per group) when it covers every group."""
        d = self.dense
        if d is None or len(self.key_oids) != 1 or not self.keys:
            return None
        slots = np.flatnonzero(d >= 0)
        if len(slots) != len(self.keys):
            return None                       # e.g. a NULL key lives only in the map
        out = np.empty(len(self.keys), np.int64)
        out[d[slots]] = slots + self.base
        oid = self.key_oids[0]
        return Col(out.astype(T.dtype_of(oid), copy=False), None, oid)

    def adopt_dense(self, keys: np.ndarray) -> None:
        """Keys were just set to ``keys`` (group ids 0..n-1, one int key, no
        NULLs): index them directly when the range allows, so later batches and
        merges find their groups with a numpy gather."""
        if not len(keys):
            return
        lo, hi = int(keys.min()), int(keys.max())
        if hi - lo >= self.DENSE_LIMIT:
            return
        self.base = lo
        self.dense = np.full(hi - lo + 1, -1, np.int64)
        self.dense[keys.astype(np.int64) - lo] = np.arange(len(keys), dtype=np.int64)

    def assign(self, key_cols: list[Col], n: int) -> np.ndarray:
        if len(key_cols) == 1 and (self.dense is not None or len(self.keys) == 0 or len(self.keys) < 4096):
            g = self._assign_dense(key_cols[0])
            if g is not None:
                return g
        if not key_cols:
            if not self.keys:
                self.keys.append(())
                self.map[()] = 0
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
            combined = combined * (len(vals) + 1) + codes
        if len(key_cols) == 1:
            local_keys = [(v,) for v in vals_list[0]]
            local_codes = codes_list[0]
        else:
            uniq, first, inv = np.unique(combined, return_index=True, return_inverse=True)
            local_codes = inv.astype(np.int64)
            local_keys = [tuple(vals_list[k][codes_list[k][i]] for k in range(len(key_cols))) for i in first.tolist()]
        mapping = np.empty(len(local_keys), dtype=np.int64)
        m = self.map
        for j, key in enumerate(local_keys):
            g = m.get(key)
            if g is None:
                g = len(self.keys)
                m[key] = g
                self.keys.append(key)
            mapping[j] = g
        return mapping[local_codes]

    def adopt(self, keys: list[tuple]) -> np.ndarray:
        """An empty index takes the distinct ``keys`` of another index as its
        groups 0..m-1 (a merge into an empty table: the dict is built at C
        speed instead of one lookup per key)."""
        assert not self.keys
        self.keys = list(keys)
        self.map = dict(zip(self.keys, range(len(self.keys))))
        self.dense = None
        return np.arange(len(self.keys), dtype=np.int64)

    def lookup_or_add(self, keys: list[tuple]) -> np.ndarray:
        out = np.empty(len(keys), dtype=np.int64)
        dense = self.dense
        for j, key in enumerate(keys):
            g = self.map.get(key)
            if g is None:
                g = len(self.keys)
                self.map[key] = g
                self.keys.append(key)
                if dense is not None:
                    k = key[0] - self.base if key and isinstance(key[0], int) else -1
                    if 0 <= k < len(dense):
                        dense[k] = g
                    else:
                        self.dense = dense = None
            out[j] = g
        return out

    def nbytes(self) -> int:
        """Estimated bytes of the key map (dict entry + key tuple per group)
        plus the direct-indexed array when there is one."""
        per_key = 64 + 16 * len(self.keys[0]) if self.keys else 0
        return per_key * len(self.keys) + (self.dense.nbytes if self.dense is not None else 0)

    def key_columns(self) -> list[Col]:
        dense = self._dense_key_column()
        if dense is not None:
            return [dense]
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

    @staticmethod
    def _grown(arr: np.ndarray, cap: int, fill) -> np.ndarray:
        out = np.full(cap, fill, dtype=arr.dtype) if arr.dtype != object else np.array([fill] * cap, dtype=object) if not isinstance(fill, list) else _obj_list(cap)
        out[: len(arr)] = arr
        return out

    def nbytes(self) -> int:
        return sum(v.nbytes for v in self.__dict__.values() if isinstance(v, np.ndarray))


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
        self.cnt[:ng] += np.bincount(g, minlength=ng)[:ng]

    def merge(self, other, gmap):
        np.add.at(self.cnt, gmap, other.cnt[: len(gmap)])

    def final(self, ng):
        return Col(self.cnt[:ng].copy(), None, O.INT8)


class SumState(AggState):
    """sum/avg: exact for integers (int64, or Python ints when that could
    overflow), numeric via Decimal, floats via float64.

    Fixed-point numeric input (FixedCol) accumulates in ``fxsum``, int64 at
    ``fx_scale``, so no Python runs per group; ``fx_bound`` bounds its
    magnitude and the Decimal ``sum`` takes it over before it could wrap."""

    fxsum: np.ndarray | None = None      # class defaults: states pickled before these existed
    fx_scale: int | None = None
    fx_bound = 0.0

    def __init__(self, spec):
        super().__init__(spec)
        self.kind = {O.INT2: "i", O.INT4: "i", O.INT8: "o", O.NUMERIC: "o", O.FLOAT4: "f", O.FLOAT8: "f",
                     O.INTERVAL: "o", O.OID: "i"}.get(spec.arg_oids[0] if spec.arg_oids else O.INT8, "f")
        dt = {"i": np.int64, "f": np.float64, "o": object}[self.kind]
        self.sum = np.zeros(0, dt)
        self.cnt = np.zeros(0, np.int64)

    def _grow(self, cap):
        zero = 0 if self.kind == "o" else 0
        if self.kind == "o":
            s = np.empty(cap, dtype=object)
            s[:] = 0
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
        self.cnt[:ng] += np.bincount(g, minlength=ng)[:ng]
        if self.kind == "f":
            self.sum[:ng] += np.bincount(g, weights=data.astype(np.float64), minlength=ng)[:ng]
        elif self.kind == "i":
            d64 = data.astype(np.int64)
            if len(d64) and int(np.abs(d64).max()) * len(d64) < (1 << 52):
                # float64 bincount is exact below 2**53 and far faster than add.at
                self.sum[:ng] += np.rint(np.bincount(g, weights=d64, minlength=ng)[:ng]).astype(np.int64)
            else:
                np.add.at(self.sum, g, d64)
        else:
            if c.oid == O.INT8:
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
                with decimal.localcontext(decimal.Context(prec=1000, Emax=999999, Emin=-999999)):
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
        bound = float(np.abs(fx).sum())
        if bound >= 9.0e18:
            return False
        if self.fxsum is None or self.fx_scale != c.scale or self.fx_bound + bound >= 9.0e18:
            self._flush_fixed()
            self.fxsum = np.zeros(self.size, np.int64)
            self.fx_scale = c.scale
        np.add.at(self.fxsum, g, fx)
        self.fx_bound += bound
        self.cnt[:ng] += np.bincount(g, minlength=ng)[:ng]
        return True

    def _flush_fixed(self) -> None:
        """Move the int64 fixed-point sums into the Decimal sums (Python per touched group)."""
        fx = self.fxsum
        if fx is None:
            return
        scale = self.fx_scale
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
        else:
            np.add.at(self.sum, gmap, other.sum[:k])

    def final(self, ng):
        cnt = self.cnt[:ng]
        nulls = cnt == 0
        fn = self.spec.func
        src = self.spec.arg_oids[0]
        if self.kind == "o" and self.fxsum is not None:
            if self.spec.oid == O.NUMERIC and self._only_fixed(ng):
                if fn == "sum":
                    return FixedCol(self.fxsum[:ng].copy(), self.fx_scale, nulls)
                vals = np.empty(ng, dtype=object)
                has = ~nulls
                vals[has] = fixed_avg(self.fxsum[:ng][has], cnt[has], self.fx_scale)
                return Col(vals, nulls, O.NUMERIC)
            self._flush_fixed()
        if fn == "sum":
            oid = self.spec.oid
            if oid == O.NUMERIC:
                vals = [decimal.Decimal(v) if not isinstance(v, decimal.Decimal) else v for v in self.sum[:ng].tolist()]
                return Col.from_pylist([None if z else v for v, z in zip(vals, nulls.tolist())], O.NUMERIC)
            if oid == O.INTERVAL:
                return Col.from_pylist([None if z else v for v, z in zip(self.sum[:ng].tolist(), nulls.tolist())], O.INTERVAL)
            data = self.sum[:ng].astype(T.dtype_of(oid))
            return Col(data, nulls, oid)
        # avg
        if self.spec.oid == O.FLOAT8:
            with np.errstate(all="ignore"):
                return Col(self.sum[:ng].astype(np.float64) / np.where(cnt == 0, 1, cnt), nulls, O.FLOAT8)
        if self.spec.oid == O.INTERVAL:
            out = [None if z else s / c for s, c, z in zip(self.sum[:ng].tolist(), cnt.tolist(), nulls.tolist())]
            return Col.from_pylist(out, O.INTERVAL)
        out = []
        for s, c, z in zip(self.sum[:ng].tolist(), cnt.tolist(), nulls.tolist()):
            if z:
                out.append(None)
            else:
                out.append(numeric_op("/", decimal.Decimal(s), decimal.Decimal(c)))
        return Col.from_pylist(out, O.NUMERIC)


class MinMaxState(AggState):
    def __init__(self, spec):
        super().__init__(spec)
        self.is_min = spec.func in ("min", "bool_and", "every")
        self.oid = spec.arg_oids[0]
        self.dtype = T.dtype_of(self.oid)
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
                (np.minimum if self.is_min else np.maximum).at(scratch, g, work)
                touched = np.zeros(ng, bool)
                touched[g] = True
                cur = self.val[:ng]
                sc = scratch.astype(self.dtype)
                better = touched & (~self.has[:ng] | ((sc < cur) if self.is_min else (sc > cur)))
                cur[better] = sc[better]
            self.has[g] = True
            return
        val, has = self.val, self.has
        for gi, v in zip(g.tolist(), data.tolist()):
            if not has[gi] or (v < val[gi] if self.is_min else v > val[gi]):
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
            if not self.has[gi] or (v < self.val[gi] if self.is_min else v > self.val[gi]):
                self.val[gi] = v
                self.has[gi] = True

    def merge_values(self, gids: np.ndarray, vals: np.ndarray, has: np.ndarray) -> None:
        """Fold per-group extremes ``vals`` (where ``has``) into groups ``gids``
        (distinct ids, fixed-width values): numpy, no Python per group."""
        g, v = gids[has], vals[has]
        if self.val.dtype == object:
            for gi, x in zip(g.tolist(), v.tolist()):
                if not self.has[gi] or (x < self.val[gi] if self.is_min else x > self.val[gi]):
                    self.val[gi] = x
                    self.has[gi] = True
            return
        v = v.astype(self.val.dtype, copy=False)
        cur = self.val[g]
        better = ~self.has[g] | ((v < cur) if self.is_min else (v > cur))
        self.val[g[better]] = v[better]
        self.has[g] = True

    def final(self, ng):
        return Col(self.val[:ng].copy(), ~self.has[:ng], self.spec.oid if self.spec.oid != O.UNKNOWN else self.oid)


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
        keep_nulls = self.spec.func == "array_agg"
        g = gids
        lists = [a.to_pylist() for a in args]
        rows = list(zip(*lists)) if len(lists) > 1 else [(v,) for v in lists[0]] if lists else [() for _ in gids]
        if valid is not None and not keep_nulls:
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


def _dedupe(rows):
    seen = set()
    out = []
    for r in rows:
        k = r[0]
        if k in seen:
            continue
        seen.add(k)
        out.append(r)
    return out


def finalize_list(spec: "AggSpec", rows: list) -> Any:
    fn = spec.func
    if spec.distinct:
        rows = _dedupe(rows)
    if spec.order_key is not None and rows:
        rows = spec.order_key(rows)
    vals = [r[0] for r in rows]
    if fn == "count":
        return len(vals)
    if fn == "array_agg":
        return vals if rows else None
    if fn == "string_agg":
        if not rows:
            return None
        return "".join((r[1] if k and r[1] is not None else "") + r[0] for k, r in enumerate(rows))
    if not vals:
        return None
    if fn in ("sum", "avg"):
        if spec.oid == O.FLOAT8:
            s = math.fsum(vals)
            return s if fn == "sum" else s / len(vals)
        if spec.oid in (O.INT8, O.INT4):
            return sum(vals)
        s = sum(decimal.Decimal(v) for v in vals)
        return s if fn == "sum" else numeric_op("/", s, decimal.Decimal(len(vals)))
    if fn in ("min", "bool_and", "every"):
        return min(vals)
    if fn in ("max", "bool_or"):
        return max(vals)
    if fn in ("stddev", "stddev_samp", "variance", "var_samp", "stddev_pop", "var_pop"):
        return _variance(fn, vals, spec.oid)
    if fn in ("percentile_cont", "percentile_disc"):
        frac = spec.fraction
        s = sorted(vals)
        if fn == "percentile_disc":
            idx = max(0, math.ceil(frac * len(s)) - 1)
            return s[idx]
        pos = frac * (len(s) - 1)
        lo = math.floor(pos)
        hi = math.ceil(pos)
        a, b = float(s[lo]), float(s[hi])
        return a + (b - a) * (pos - lo)
    if fn == "mode":
        from collections import Counter

        return Counter(vals).most_common(1)[0][0]
    raise PgError(UNDEFINED_FUNCTION, f"aggregate {fn} not supported here")


def _variance(fn: str, vals: list, oid: int):
    n = len(vals)
    samp = fn in ("stddev", "stddev_samp", "variance", "var_samp")
    if samp and n < 2:
        return None
    if oid == O.FLOAT8:
        mean = math.fsum(vals) / n
        ss = math.fsum((v - mean) ** 2 for v in vals)
        var = ss / (n - 1 if samp else n)
        return math.sqrt(var) if fn.startswith("stddev") else var
    ctx = decimal.Context(prec=60)
    d = [decimal.Decimal(v) for v in vals]
    s = sum(d)
    sq = sum(x * x for x in d)
    num = ctx.subtract(ctx.multiply(decimal.Decimal(n), sq), ctx.multiply(s, s))
    den = decimal.Decimal(n * (n - 1 if samp else n))
    var = ctx.divide(num, den)
    scale = max(max((max(0, -x.as_tuple().exponent) for x in d), default=0) * 2, 16)
    if fn.startswith("stddev"):
        r = ctx.sqrt(var) if var > 0 else decimal.Decimal(0)
        return r.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP, context=ctx) if r != 0 else decimal.Decimal(0).quantize(decimal.Decimal(1).scaleb(-scale))
    return var.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP, context=ctx)


class AggSpec:
    """A bound aggregate call: function, input expressions, result type."""

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
        if self.distinct or self.order_key is not None or f in ("array_agg", "string_agg", "percentile_cont",
                                                                "percentile_disc", "mode"):
            return ListState(self)
        if f in ("stddev", "stddev_samp", "variance", "var_samp", "stddev_pop", "var_pop"):
            return ListState(self)
        if f == "count":
            return CountState(self)
        if f in ("sum", "avg"):
            return SumState(self)
        if f in ("min", "max", "bool_and", "bool_or", "every"):
            return MinMaxState(self)
        raise PgError(UNDEFINED_FUNCTION, f"function {f} does not exist")

    def __repr__(self) -> str:
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{', '.join(map(repr, self.args)) or '*'})"


AGGREGATES = {"count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every", "array_agg", "string_agg",
              "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop", "percentile_cont",
              "percentile_disc", "mode"}


def agg_result_type(func: str, arg_oids: list[int]) -> int:
    a = arg_oids[0] if arg_oids else O.INT8
    if func == "count":
        return O.INT8
    if func == "sum":
        return {O.INT2: O.INT8, O.INT4: O.INT8, O.INT8: O.NUMERIC, O.FLOAT4: O.FLOAT4, O.FLOAT8: O.FLOAT8,
                O.NUMERIC: O.NUMERIC, O.INTERVAL: O.INTERVAL}.get(a, O.NUMERIC if a == O.UNKNOWN else -1)
    if func == "avg":
        return {O.FLOAT4: O.FLOAT8, O.FLOAT8: O.FLOAT8, O.INTERVAL: O.INTERVAL}.get(a, O.NUMERIC)
    if func in ("min", "max"):
        return a if a != O.UNKNOWN else O.TEXT
    if func in ("bool_and", "bool_or", "every"):
        return O.BOOL
    if func == "array_agg":
        return O.ARRAY_OF.get(a, O.ARRAY_OF[O.TEXT])
    if func == "string_agg":
        return O.TEXT
    if func in ("stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop"):
        return O.FLOAT8 if a in (O.FLOAT4, O.FLOAT8) else O.NUMERIC
    if func == "percentile_cont":
        return O.FLOAT8
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
        if len(self.index) == 0:
            gmap = self.index.adopt(other.index.keys)   # other's keys are distinct
        else:
            gmap = self.index.lookup_or_add(other.index.keys)
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

