"""Window functions: partition, order, frame, then compute per partition.

Ranking functions are vectorised per partition.  Frames (ROWS, RANGE with
offsets, GROUPS, EXCLUDE) are arrays of row ranges (``window_frames``), and
the common aggregates over them are vector kernels (``window_aggs``); other
aggregates fall back to a loop over each frame's rows.
"""
from __future__ import annotations


import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

from . import operators
from .aggregates import KEEPS_NULLS, AggSpec, factorize, finalize_list, installed_aggregates
from .combine import frame_combine
from .plans import PlanData
from .window_aggs import first_in_frame, frame_aggregate
from .window_frames import Layout, frame_pieces


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
        order_col = ocols[0][0].take(order) if len(ocols) == 1 else None
        res = self._values(s, n, pstarts, pends, peer_start, args, b, ctx, order_col)
        # scatter back to input order
        out = Col(sqltypes.empty(s.oid, n), np.ones(n, bool), s.oid)
        data = out.data
        nulls = out.null_mask()
        data[order] = res.data
        nulls[order] = res.null_mask()
        return Col(data, nulls, s.oid)

    def _values(self, s, n, pstarts, pends, peer_start, args, batch, ctx, order_col) -> Col:
        f = s.func
        ordered = bool(s.order)
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
            k = args[0].to_pylist()[0]
            if k is None or k <= 0:       # PostgreSQL checks it per partition; a constant here
                if k is not None:
                    raise PgError("22014", "argument of ntile must be greater than zero")
                return Col.from_pylist([None] * n, type_oids.INT4)
            k = int(k)
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
        lay = Layout(n, pstarts[pid], pends[pid] - 1, peer_first_idx, peer_last_idx, peer_id,
                     first_of_peer, last_of_peer, pstarts, pends)
        desc, nulls_first = (s.order[0][1], s.order[0][2]) if s.order else (False, None)
        pieces = frame_pieces(s.frame, lay, ordered, order_col, desc,
                              desc if nulls_first is None else nulls_first, batch, ctx)
        if f in ("first_value", "last_value", "nth_value"):
            vals = args[0]
            if f == "nth_value":
                nth = np.array(args[1].to_pylist(), dtype=np.int64)
                if (nth <= 0).any():
                    raise PgError("22016", "argument of nth_value must be greater than zero")
                src, ok = first_in_frame(pieces, nth)
            else:
                src, ok = first_in_frame(pieces, 1, last=f == "last_value")
            safe = np.clip(np.where(ok, src, 0), 0, max(n - 1, 0))
            return Col(vals.data[safe], vals.null_mask()[safe] | ~ok, s.oid)
        agg = s.agg
        if agg.func == "combine":           # frames from the partition's start (window_binding checks)
            return frame_combine(agg, args[0], pieces[0][0], pieces[0][1])
        fast = frame_aggregate(agg, args, pieces, lay.ps, lay.pe, n, s.oid)
        if fast is not None:
            return fast
        if agg.func in installed_aggregates():
            return _frames_by_state(agg, args, pieces, n, s.oid)
        out = []
        vals = [a.to_pylist() for a in args]
        bounds = [(lo.tolist(), hi.tolist()) for lo, hi in pieces]
        for i in range(n):
            rows = [tuple(v[j] for v in vals) for lo, hi in bounds for j in range(lo[i], hi[i] + 1)]
            if agg.star:
                out.append(len(rows))
                continue
            if agg.func not in KEEPS_NULLS:
                rows = [r for r in rows if r[0] is not None]
            out.append(finalize_list(agg, rows))
        return Col.from_pylist(out, s.oid)


def _frames_by_state(agg: AggSpec, args: list[Col], pieces, n: int, oid: int) -> Col:
    """An aggregate whose state is not the list of its rows (PipelineDB's
    sketches, reservoir_sample) over each row's frame: its own state built
    from the frame's rows, once per distinct frame (rows of one partition
    without ORDER BY, or peers, share theirs)."""
    bounds = [(lo.tolist(), hi.tolist()) for lo, hi in pieces]
    done: dict[tuple, object] = {}
    out = []
    for i in range(n):
        key = tuple((lo[i], hi[i]) for lo, hi in bounds)
        if key not in done:
            rows = [np.arange(a, b + 1, dtype=np.int64) for a, b in key]
            idx = np.concatenate(rows) if rows else np.zeros(0, np.int64)
            taken = [a.take(idx) for a in args]
            first = taken[0] if taken else None
            valid = None if first is None or first.nulls is None or agg.func in KEEPS_NULLS else ~first.nulls
            state = agg.make_state()
            state.ensure(1)
            state.update(np.zeros(len(idx), np.int64), 1, [] if agg.star else taken, valid)
            done[key] = state.final(1).to_pylist()[0]
        out.append(done[key])
    return Col.from_pylist(out, oid)
