"""Window functions: partition, order, frame, then compute per partition.

Ranking functions are vectorised per partition; aggregates over frames use
prefix sums when the frame is a running or whole-partition frame and a
per-row loop otherwise.
"""
from __future__ import annotations

import decimal

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError, FEATURE_NOT_SUPPORTED

from . import expr
from . import operators
from .aggregates import AggSpec, factorize, finalize_list
from .plans import PlanData


class WinSpec(PlanData):
    """One window function call of a WindowOp (plan data: rebuilt and fingerprinted with it)."""

    def __init__(self, func, args, partition, order, frame, oid, agg: AggSpec | None):
        self.func, self.args, self.partition, self.order, self.frame, self.oid, self.agg = func, args, partition, order, frame, oid, agg


class WindowOp(operators.Op):
    breaker = True

    def __init__(self, child: operators.Op, specs: list[WinSpec]) -> None:
        self.child, self.specs = child, specs
        self.children = [child]
        self.out = child.out + [operators.OutCol(s.func, s.oid) for s in specs]

    def label(self):
        return "WindowAgg"

    def _execute(self, ctx):
        b = self.child.execute(ctx)
        cols = list(b.cols)
        for s in self.specs:
            cols.append(self._compute(s, b, ctx))
        return Batch(cols, b.n)

    def _compute(self, s: WinSpec, b: Batch, ctx) -> Col:
        n = b.n
        if n == 0:
            return Col(sqltypes.empty(s.oid, 0), None, s.oid)
        pcols = [e.eval(b, ctx) for e in s.partition]
        ocols = [(e.eval(b, ctx), d, nf) for e, d, nf in s.order]
        pkey = np.zeros(n, np.int64)
        for c in pcols:
            codes, vals = factorize(c)
            pkey = pkey * (len(vals) + 1) + codes
        sort_spec = [(Col(pkey, None, type_oids.INT8), False, None)] + ocols
        order = operators.sort_order(sort_spec, n)
        pk = pkey[order]
        # peer groups: equal order keys within a partition
        if ocols:
            okeys = [operators.sort_keys_for(c.take(order), d, nf) for c, d, nf in ocols]
            diff = np.zeros(n, bool)
            diff[0] = True
            diff[1:] = pk[1:] != pk[:-1]
            for k in okeys:
                diff[1:] |= k[1:] != k[:-1]
            peer_start = diff
        else:
            peer_start = np.zeros(n, bool)
            peer_start[0] = True
            peer_start[1:] = pk[1:] != pk[:-1]
        part_start = np.zeros(n, bool)
        part_start[0] = True
        part_start[1:] = pk[1:] != pk[:-1]
        pstarts = np.flatnonzero(part_start)
        pends = np.append(pstarts[1:], n)
        args = [a.eval(b, ctx).take(order) for a in s.args]
        res = self._values(s, n, pstarts, pends, peer_start, args, ctx, bool(ocols))
        # scatter back to input order
        out = Col(sqltypes.empty(s.oid, n), np.ones(n, bool), s.oid)
        data = out.data
        nulls = out.null_mask()
        data[order] = res.data
        nulls[order] = res.null_mask()
        return Col(data, nulls, s.oid)

    def _values(self, s, n, pstarts, pends, peer_start, args, ctx, ordered) -> Col:
        f = s.func
        idx = np.arange(n)
        pid = np.repeat(np.arange(len(pstarts)), pends - pstarts)
        row_in_part = idx - pstarts[pid]
        psize = (pends - pstarts)[pid]
        peer_id = np.cumsum(peer_start) - 1
        first_of_peer = np.flatnonzero(peer_start)
        peer_first_idx = first_of_peer[peer_id]
        last_of_peer = np.append(first_of_peer[1:], n) - 1
        peer_last_idx = last_of_peer[peer_id]
        if f == "row_number":
            return Col(row_in_part + 1, None, type_oids.INT8)
        if f == "rank":
            return Col((peer_first_idx - pstarts[pid] + 1).astype(np.int64), None, type_oids.INT8)
        if f == "dense_rank":
            cum = np.cumsum(peer_start)
            base = cum[pstarts][pid]
            return Col((cum - base + 1).astype(np.int64), None, type_oids.INT8)
        if f == "percent_rank":
            r = peer_first_idx - pstarts[pid]
            return Col(np.where(psize > 1, r / np.maximum(psize - 1, 1), 0.0), None, type_oids.FLOAT8)
        if f == "cume_dist":
            return Col((peer_last_idx - pstarts[pid] + 1) / psize, None, type_oids.FLOAT8)
        if f == "ntile":
            k = int(args[0].to_pylist()[0])
            sz = psize
            q, r = sz // k, sz % k
            pos = row_in_part
            big = r * (q + 1)
            res = np.where(pos < big, pos // np.maximum(q + 1, 1), r + (pos - big) // np.maximum(q, 1))
            return Col((res + 1).astype(np.int32), None, type_oids.INT4)
        if f in ("lag", "lead"):
            off = np.array(args[1].to_pylist() if len(args) > 1 else [1] * n, dtype=np.int64)
            src = idx - off if f == "lag" else idx + off
            ok = (src >= pstarts[pid]) & (src < pends[pid])
            vals = args[0]
            safe = np.where(ok, src, 0)
            data = vals.data[safe].copy()
            nulls = vals.null_mask()[safe] | ~ok
            if len(args) > 2:
                d = args[2]
                data[~ok] = d.data[~ok]
                nulls[~ok] = d.null_mask()[~ok]
            return Col(data, nulls, s.oid)
        # frame-based: compute [lo, hi] per row
        lo, hi = self._frame(s, n, pstarts, pends, pid, peer_first_idx, peer_last_idx, ordered, args)
        if f in ("first_value", "last_value", "nth_value"):
            vals = args[0]
            if f == "first_value":
                src = lo
            elif f == "last_value":
                src = hi
            else:
                nth = np.array(args[1].to_pylist(), dtype=np.int64)
                src = lo + nth - 1
            ok = (src <= hi) & (lo <= hi)
            safe = np.clip(np.where(ok, src, 0), 0, max(n - 1, 0))
            return Col(vals.data[safe], vals.null_mask()[safe] | ~ok, s.oid)
        agg = s.agg
        if agg.func in ("sum", "count", "avg") and not agg.distinct:
            return self._prefix_agg(agg, args, lo, hi, n, s.oid)
        out = []
        vals = [a.to_pylist() for a in args]
        for i in range(n):
            rows = [tuple(v[j] for v in vals) for j in range(lo[i], hi[i] + 1)] if lo[i] <= hi[i] else []
            if agg.star:
                out.append(len(rows))
                continue
            rows = [r for r in rows if r[0] is not None]
            out.append(finalize_list(agg, rows))
        return Col.from_pylist(out, s.oid)

    def _prefix_agg(self, agg, args, lo, hi, n, oid):
        if agg.star or agg.func == "count":
            valid = np.ones(n, bool) if agg.star else args[0].valid_mask()
            c = np.concatenate([[0], np.cumsum(valid.astype(np.int64))])
            cnt = np.where(hi >= lo, c[np.maximum(hi + 1, 0)] - c[np.clip(lo, 0, n)], 0)
            return Col(cnt.astype(np.int64), None, type_oids.INT8)
        a = args[0]
        valid = a.valid_mask()
        c = np.concatenate([[0], np.cumsum(valid.astype(np.int64))])
        cnt = np.where(hi >= lo, c[np.maximum(hi + 1, 0)] - c[np.clip(lo, 0, n)], 0)
        if a.data.dtype == object or oid == type_oids.NUMERIC:
            vals = [decimal.Decimal(v) if v is not None and not isinstance(v, float) else (v or 0) for v in a.to_pylist()]
            pref = [decimal.Decimal(0)]
            for v in vals:
                pref.append(pref[-1] + (v if v is not None else 0))
            out = []
            for i in range(n):
                if cnt[i] == 0:
                    out.append(None)
                    continue
                s = pref[hi[i] + 1] - pref[lo[i]]
                if agg.func == "avg":
                    s = expr.numeric_op("/", decimal.Decimal(s), decimal.Decimal(int(cnt[i])))
                out.append(s)
            return Col.from_pylist(out, oid)
        d = np.where(valid, a.data, 0)
        if d.dtype.kind in "iub":
            pref = np.concatenate([[0], np.cumsum(d.astype(np.int64))])
        else:
            pref = np.concatenate([[0.0], np.cumsum(d.astype(np.float64))])
        s = np.where(hi >= lo, pref[np.maximum(hi + 1, 0)] - pref[np.clip(lo, 0, n)], 0)
        nulls = cnt == 0
        if agg.func == "avg":
            with np.errstate(all="ignore"):
                return Col((s / np.maximum(cnt, 1)).astype(np.float64), nulls, oid)
        return Col(s.astype(sqltypes.dtype_of(oid)), nulls, oid)

    def _frame(self, s, n, pstarts, pends, pid, peer_first, peer_last, ordered, args):
        ps, pe = pstarts[pid], pends[pid] - 1
        idx = np.arange(n)
        if s.frame is None:
            if ordered:
                return ps, peer_last
            return ps, pe
        kind, start, end = s.frame
        if end is None:
            end = ("current", "")

        def resolve(bound, is_start):
            if bound[0] == "unbounded":
                return ps if bound[1] == "PRECEDING" else pe
            if bound[0] == "current":
                if kind == "ROWS":
                    return idx
                return peer_first if is_start else peer_last
            off = bound[2]
            if kind == "ROWS":
                v = idx - off if bound[1] == "PRECEDING" else idx + off
                return np.clip(v, ps, pe) if is_start else np.clip(v, ps - 1, pe)
            if kind == "GROUPS":
                raise PgError(FEATURE_NOT_SUPPORTED, "GROUPS frames are not supported")
            # RANGE with offset: needs a single numeric order key
            raise PgError(FEATURE_NOT_SUPPORTED, "RANGE frames with an offset are not supported")

        lo = resolve(start, True)
        hi = resolve(end, False)
        lo = np.maximum(lo, ps)
        hi = np.minimum(hi, pe)
        return lo.astype(np.int64), hi.astype(np.int64)
