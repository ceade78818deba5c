"""Physical operators over column batches.

Each operator materialises its output as one :class:`Batch`.  Streaming
operators (filter, project, probe) also expose ``process(batch)`` so that a
pipeline can push batches through them one at a time — that is what the
stream pipelines of continuous views do at insert time.  Pipeline breakers
(aggregation, join build, sort) consume their whole input first.
``pipelines()`` describes the Umbra-style decomposition for EXPLAIN.
"""
from __future__ import annotations

import copy
import decimal
import time
from typing import cast

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col, FixedCol, TakenCol, fixed_view
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError, INVALID_ROW_COUNT_IN_LIMIT
from splitstream.protocol.types import Interval
from splitstream.protocol.composite import Record
# (the join and filter shortcuts' names, on lines of their own)
from .aggregates import distinct_counts
from .expr import And, Cast, ColRef, Func, Like, SubqueryExpr
from .probe_reduction import integer_key_membership

from ..backends import interface as backends
from .aggregates import KEEPS_NULLS, AggSpec, GroupTable, factorize
from .expr import Expr, array_key, dict_codes, eval_pred, record_key
from .jsonb_order import jsonb_key


class OutCol:
    __slots__ = ("name", "oid", "typmod", "table_oid", "attnum", "hidden")

    def __init__(self, name: str, oid: int, typmod: int = -1, table_oid: int = 0, attnum: int = 0, hidden=False):
        self.name, self.oid, self.typmod, self.table_oid, self.attnum, self.hidden = name, oid, typmod, table_oid, attnum, hidden

    def __repr__(self) -> str:
        return f"{self.name}:{sqltypes.type_name(self.oid)}"

    def renamed(self, name: str) -> "OutCol":
        """This column under another name (a subquery's or CTE's column
        aliases), still naming the table column it was taken from."""
        return OutCol(name, self.oid, self.typmod, self.table_oid, self.attnum, self.hidden)


def table_columns(rel) -> list[OutCol]:
    """A table's live columns as a scan outputs them, each with its
    pg_attribute number (a dropped column keeps its number, so the next is
    not renumbered: RowDescription's column numbers are PostgreSQL's)."""
    return [OutCol(c.name, c.type_oid, c.typmod, rel.oid, n) for c, n in zip(rel.live_columns, rel.live_attnums)]


def carried(name: str, e: Expr, source: list[OutCol], typmod: int | None = None) -> OutCol:
    """The output column ``name`` that ``e`` computes over the columns
    ``source``.  As PostgreSQL's markTargetListOrigins, a column taken as it
    is (a bare column reference, nothing computed) keeps the table OID and
    attribute number of the table or view column it comes from, which
    RowDescription reports (pgjdbc's getTableName, psycopg's ftable);
    anything computed has none."""
    ref = _taken(e)
    if ref is not None and 0 <= ref.idx < len(source):
        src = source[ref.idx]
        return OutCol(name, ref.oid, ref.typmod if typmod is None else typmod, src.table_oid, src.attnum)
    return OutCol(name, e.oid, e.typmod if typmod is None else typmod)


def _taken(e: Expr) -> ColRef | None:
    """The column reference ``e`` is, through casts to its own type and
    type modifier (which PostgreSQL's parser leaves out); None when ``e``
    computes something (``varchar(10)`` to ``varchar`` is a RelabelType) or
    carries a COLLATE clause (a CollateExpr in PostgreSQL)."""
    while type(e) is Cast and e.oid == e.arg.oid and e.typmod == e.arg.typmod:
        e = e.arg
    return e if type(e) is ColRef and not e.collated else None


class Op:
    """A planned operator.  Immutable once planned (plans are cached and shared
    by sessions and threads): what an execution measures or builds goes to
    ``ctx.run`` (:class:`~splitstream.executor.execution.run.ExecutionRun`)."""

    out: list[OutCol]
    children: list["Op"] = []
    breaker = False
    streaming = False

    def execute(self, ctx) -> Batch:
        t = time.perf_counter()
        ctx.check_cancel()
        b = self._execute(ctx)
        stats = ctx.run.stats            # ExecutionRun.record, inline: this runs for every operator call
        st = stats.get(self)
        if st is None:
            stats[self] = [b.n, time.perf_counter() - t]
        else:
            st[0] += b.n
            st[1] += time.perf_counter() - t
        return b

    def _execute(self, ctx) -> Batch:  # pragma: no cover
        raise NotImplementedError

    def label(self) -> str:
        return type(self).__name__

    @property
    def oids(self) -> list[int]:
        return [c.oid for c in self.out]


def run_plan(op: Op, ctx) -> Batch:
    return op.execute(ctx)


class Result1(Op):
    """One row, no columns: SELECT without FROM."""

    def __init__(self) -> None:
        self.out = []
        self.children = []

    def _execute(self, ctx):
        return Batch([], 1)


class TableScan(Op):
    pinned: tuple[tuple[int, int], ...] | None = None    # see pinned_copy

    def __init__(self, rel, alias: str, with_positions: bool = False) -> None:
        self.rel = rel
        self.alias = alias
        self.children = []
        self.with_positions = with_positions
        self.out = table_columns(rel)
        if with_positions:
            self.out.append(OutCol("__pos", type_oids.INT8, hidden=True))

    def pinned_copy(self) -> "TableScan":
        """A scan that reads the columns this one was planned with whatever
        ALTER TABLE does to the table later, for plans kept across DDL (a
        continuous view's upper pipelines).  Columns are told apart by their
        place in ``rel.columns``, which keeps dropped ones.  A column since
        dropped or retyped reads as NULL: the plan does not use it (ALTER
        TABLE refuses to change the columns a continuous view reads)."""
        scan = copy.copy(self)
        scan.pinned = tuple((i, c.type_oid) for i, c in enumerate(self.rel.columns) if not c.dropped)
        return scan

    def _as_planned(self, ctx, batch: Batch) -> Batch:
        assert self.pinned is not None
        cur = ctx.state.rels.get(self.rel.oid)
        if cur is None or cur is self.rel:
            return batch
        cols = [batch.cols[j] if j is not None else Col(sqltypes.empty(oid, batch.n), np.ones(batch.n, bool), oid)
                for j, (_, oid) in zip(self._planned_indexes(cur), self.pinned)]
        return Batch(cols, batch.n)

    def _planned_indexes(self, cur) -> list[int | None]:
        """Where each planned column is in ``cur``'s rows (None: dropped or retyped)."""
        assert self.pinned is not None
        live: dict[int, tuple[int, int]] = {}
        for i, c in enumerate(cur.columns):
            if not c.dropped:
                live[i] = (len(live), c.type_oid)
        out = []
        for i, oid in self.pinned:
            j, now = live.get(i, (None, None))
            out.append(j if now == oid else None)
        return out

    def _execute(self, ctx):
        tv = ctx.state.data.get(self.rel.oid)
        if tv is None:
            return Batch.empty(self.oids)
        batch, pos = tv.scan()
        if self.pinned is not None:
            batch = self._as_planned(ctx, batch)
        batch = self._fixed(batch)
        if self.with_positions:
            return Batch(batch.cols + [Col(pos, None, type_oids.INT8)], batch.n)
        return batch

    def _fixed(self, batch: Batch) -> Batch:
        """numeric(p,s) columns as scaled int64 (see catalog.vector.FixedCol)."""
        cols = None
        for i, oc in enumerate(self.out[: len(batch.cols)]):
            if oc.oid == type_oids.NUMERIC and oc.typmod >= 4:
                p, s = (oc.typmod - 4) >> 16, (oc.typmod - 4) & 0xFFFF
                fc = fixed_view(batch.cols[i], s, p)
                if fc is not None:
                    if cols is None:
                        cols = list(batch.cols)
                    cols[i] = fc
        return batch if cols is None else Batch(cols, batch.n)

    def label(self):
        return f"Seq Scan on {self.rel.name}" + (f" {self.alias}" if self.alias != self.rel.name else "")


class VirtualScan(Op):
    """pg_catalog / information_schema / splitstream system relations."""

    def __init__(self, name: str, out: list[OutCol], producer) -> None:
        self.name, self.out, self.producer = name, out, producer
        self.children = []

    def _execute(self, ctx):
        return self.producer(ctx)

    def label(self):
        return f"Function Scan on {self.name}"


class BatchSource(Op):
    """A precomputed batch: CTE results, continuous-view results, VALUES."""

    def __init__(self, name: str, out: list[OutCol], fetch) -> None:
        self.name, self.out, self.fetch = name, out, fetch
        self.children = []

    def _execute(self, ctx):
        return self.fetch(ctx)

    def label(self):
        return self.name


class ValuesScan(Op):
    def __init__(self, rows: list[list[Expr]], out: list[OutCol]) -> None:
        self.rows, self.out = rows, out
        self.children = []

    def _execute(self, ctx):
        one = Batch([], 1)
        cols = []
        for j, oc in enumerate(self.out):
            parts = []
            for r in self.rows:
                c = r[j].eval(one, ctx)
                if c.oid != oc.oid:
                    c = sqltypes.cast_col(c, oc.oid, oc.typmod, explicit=False)
                parts.append(c)
            cols.append(Col.concat(parts) if parts else Col(sqltypes.empty(oc.oid, 0), None, oc.oid))
        return Batch(cols, len(self.rows))

    def label(self):
        return "Values Scan"


class Filter(Op):
    streaming = True

    def __init__(self, child: Op, pred: Expr) -> None:
        self.child, self.pred = child, pred
        self.children = [child]
        self.out = child.out

    def process(self, batch: Batch, ctx, lazy: bool = False) -> Batch:
        """``lazy``: gather the surviving rows on demand (take_batch); only for
        a query's own materialised input, never for stream batches whose
        arrays may be reused after the call."""
        if batch.n == 0:
            return batch
        if type(self.pred) is And and (batch.n >= 1024 or self._calls()):
            mask = conjunct_mask(self._ordered_conjuncts(), batch, ctx)
        else:
            c = eval_pred(self.pred, batch, ctx)
            mask = c.data.astype(bool, copy=False)
            if c.nulls is not None:
                mask = mask & ~c.nulls
        return filter_batch(batch, mask) if lazy else batch.filter(mask)

    def _ordered_conjuncts(self) -> list[Expr]:
        """The AND's terms, those that call functions or match strings last
        (they cost a Python call per row; TPC-H Q22's phone prefixes)."""
        order = self.__dict__.get("_order")
        if order is None:
            order = self._order = sorted(cast(And, self.pred).args, key=costly_term)
        return order

    def _calls(self) -> bool:
        """Whether a term of the AND calls a function: it must not see a row
        an earlier term rejected, however small the batch (PostgreSQL's AND
        stops at the first false term: ``bal > 0 AND sqrt(bal) > 10``)."""
        calls = self.__dict__.get("_has_calls")
        if calls is None:
            calls = self._has_calls = any(costly_term(t) for t in cast(And, self.pred).args)
        return calls

    def _execute(self, ctx):
        return self.process(self.child.execute(ctx), ctx, lazy=True)

    def label(self):
        return f"Filter ({self.pred!r})"


def costly_term(e: Expr) -> bool:
    """A term that calls a function or matches strings: evaluated last in an
    AND, and only on the rows the other terms keep."""
    return any(isinstance(n, (Func, Like)) or (isinstance(n, SubqueryExpr) and n.correlated) for n in e.walk())


def conjunct_mask(terms: list[Expr], batch: Batch, ctx) -> np.ndarray:
    """Rows where every term is true.  Once the terms so far keep few rows (or
    any fewer, before a function call), the rest run on those rows only, as
    PostgreSQL's AND stops at the first false term (so a function call never
    raises on a row an earlier term rejected).  A term that keeps most rows is
    not worth gathering for: the next one reads the same batch."""
    idx: np.ndarray | None = None          # the rows ``cur`` holds (None: all of batch)
    cur = batch
    acc: np.ndarray | None = None          # over cur's rows: every term so far is true
    for t in terms:
        if acc is not None:
            kept = int(np.count_nonzero(acc))
            if kept * 4 < len(acc) or (kept < len(acc) and costly_term(t)):
                sel = np.flatnonzero(acc)
                idx = sel if idx is None else idx[sel]
                acc = None
                if not kept:
                    break
                cur = take_batch(batch, idx)
        c = eval_pred(t, cur, ctx)
        m = c.data.astype(bool, copy=False)
        if c.nulls is not None:
            m = m & ~c.nulls
        acc = m if acc is None else (acc & m)
    if idx is None:
        return acc if acc is not None else np.zeros(batch.n, bool)
    mask = np.zeros(batch.n, bool)
    mask[idx if acc is None else idx[acc]] = True
    return mask


class Project(Op):
    streaming = True
    permutation: bool = False    # a pure column reorder (after a reordered comma join): filters see through it

    def __init__(self, child: Op, exprs: list[Expr], out: list[OutCol]) -> None:
        self.child, self.exprs, self.out = child, exprs, out
        self.children = [child]

    def process(self, batch: Batch, ctx) -> Batch:
        cols = []
        for e, oc in zip(self.exprs, self.out):
            c = e.eval(batch, ctx)
            if len(c) != batch.n:
                c = Col(np.resize(c.data, batch.n), None if c.nulls is None else np.resize(c.nulls, batch.n), c.oid)
            cols.append(c)
        return Batch(cols, batch.n)

    def _execute(self, ctx):
        return self.process(self.child.execute(ctx), ctx)

    def label(self):
        return "Project"


# ------------------------------------------------------------------ joins

#: widest code range (entries) served by direct indexing instead of sorting
DENSE_CODES = 1 << 24


def _int_codes(lc: Col, rc: Col) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Both sides' integer keys as offsets from their common minimum (no sort,
    no Python values), or None when they are not plain integers of a small range."""
    a, b = lc.data, rc.data
    if a.dtype.kind not in "iu" or b.dtype.kind not in "iu" or lc.oid != rc.oid and not (
            lc.oid in type_oids.INTEGER_TYPES and rc.oid in type_oids.INTEGER_TYPES):
        return None
    va = a if lc.nulls is None else a[~lc.nulls]
    vb = b if rc.nulls is None else b[~rc.nulls]
    if not len(va) or not len(vb):
        return np.zeros(len(a), np.int64), np.zeros(len(b), np.int64), 1
    lo = min(int(va.min()), int(vb.min()))
    hi = max(int(va.max()), int(vb.max()))
    if hi - lo >= DENSE_CODES:
        return None
    # one pass each: subtracting straight into int64, not a widened copy first
    lo64 = np.int64(lo)
    return np.subtract(a, lo64, dtype=np.int64), np.subtract(b, lo64, dtype=np.int64), hi - lo + 1




def join_codes(lcols: list[Col], rcols: list[Col]) -> tuple[np.ndarray, np.ndarray, int | None]:
    """Codes of both sides' keys in one domain; NULL keys get code -1 (left) and
    -2 (right), so they never match.  The third value is the code range when
    it is small enough for direct indexing (else None)."""
    nl = len(lcols[0]) if lcols else 0
    lcode = np.zeros(nl, np.int64)
    rcode = np.zeros(len(rcols[0]) if rcols else 0, np.int64)
    lnull: np.ndarray | None = None
    rnull: np.ndarray | None = None
    span = 1
    for lc, rc in zip(lcols, rcols):
        dense = _int_codes(lc, rc)
        if dense is not None:
            lc_codes, rc_codes, k = dense
        else:
            if lc.oid != rc.oid:
                t = sqltypes.common_type(lc.oid, rc.oid, "JOIN")
                lc, rc = sqltypes.cast_col(lc, t), sqltypes.cast_col(rc, t)
            both = Col.concat([lc, rc])
            codes, k = dense_codes(both)
            lc_codes, rc_codes = codes[:nl], codes[nl:]
        if span * k >= (1 << 62):   # re-number what we have so the product stays in int64
            inv = np.unique(np.concatenate([lcode, rcode]), return_inverse=True)[1].astype(np.int64)
            lcode, rcode = inv[:nl], inv[nl:]
            span = int(inv.max()) + 1 if len(inv) else 1
        if span == 1:
            # the first key's codes as they are (a 6M-row probe: no zeros, product
            # and sum); never written in place below, as they may be cached codes
            lcode, rcode = lc_codes, rc_codes
        else:
            lcode = lcode * k + lc_codes
            rcode = rcode * k + rc_codes
        span *= k
        lnull = _or_nulls(lnull, lc.nulls)
        rnull = _or_nulls(rnull, rc.nulls)
    if lnull is not None:
        lcode = np.where(lnull, -1, lcode)
    if rnull is not None:
        rcode = np.where(rnull, -2, rcode)
    return lcode, rcode, (span if span <= DENSE_CODES else None)


def _or_nulls(acc: np.ndarray | None, nulls: np.ndarray | None) -> np.ndarray | None:
    """The union of NULL masks, None while no key had a NULL."""
    if nulls is None or not nulls.any():
        return acc
    return nulls.copy() if acc is None else acc | nulls


def dense_codes(col: Col) -> tuple[np.ndarray, int]:
    """Codes 0..k-1 of a column's values (NULLs share one code; the caller masks them)."""
    if isinstance(col, TakenCol):
        enc = dict_codes(col)      # before .data, which would gather the strings
        if enc is not None:
            return enc[0], len(enc[1])
    d = col.fx if isinstance(col, FixedCol) else col.data
    if d.dtype != object and d.dtype.kind in "biufM":
        work = d.view(np.int64) if d.dtype.kind == "M" else d
        if col.nulls is not None:
            work = work.copy()
            work[col.nulls] = work[~col.nulls][0] if (~col.nulls).any() else 0
        if work.dtype.kind in "iu" and len(work):
            lo, hi = int(work.min()), int(work.max())
            if hi - lo < max(4 * len(work), 1 << 16):
                return work.astype(np.int64) - lo, hi - lo + 1
        if not len(work):
            return np.zeros(0, np.int64), 1
        _, inv = np.unique(work, return_inverse=True)
        inv = inv.astype(np.int64)
        return inv, int(inv.max()) + 1
    enc = dict_codes(col)
    if enc is not None:
        return enc[0], len(enc[1])
    codes, vals = factorize(col)
    return codes, len(vals) + 1


def match_indices(lcode: np.ndarray, rcode: np.ndarray, span: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Matching (left, right) row pairs of equal codes.  The smaller side is
    the one indexed (sorted, or placed in a direct table), so the pairs come
    out in the order of the larger side; SQL promises no join order."""
    if len(rcode) > len(lcode):
        ri, li = _match(rcode, lcode, span)
        return li, ri
    return _match(lcode, rcode, span)


def _match(lcode: np.ndarray, rcode: np.ndarray, span: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Pairs with ``rcode`` indexed: left rows ascending, each one's matches in right-row order."""
    if span is not None:
        return _match_dense(lcode, rcode, span)
    order = np.argsort(rcode, kind="stable")
    rs = rcode[order]
    lo = np.searchsorted(rs, lcode, "left")
    hi = np.searchsorted(rs, lcode, "right")
    cnt = hi - lo
    return _expand(lo, cnt, order)


def _expand(lo: np.ndarray, cnt: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    total = int(cnt.sum())
    li = np.repeat(np.arange(len(lo), dtype=np.int64), cnt)
    starts = np.repeat(lo - (np.cumsum(cnt) - cnt), cnt)
    ri = order[starts + np.arange(total, dtype=np.int64)] if total else np.zeros(0, np.int64)
    return li, ri




class UniqueIntIndex:
    """Build rows by a unique integer key: a direct array ``pos[key - base]``
    when the key range is compact, else the sorted keys (one searchsorted per
    probe).  NULL build keys are left out; NULL probe keys match nothing."""

    DENSE_SLOTS = 1 << 24       # largest direct array (int32 entries)

    def __init__(self) -> None:
        self.pos: np.ndarray | None = None
        self.base = 0
        self.sorted_keys: np.ndarray | None = None
        self.order: np.ndarray | None = None

    @staticmethod
    def build(rk: list[Col]) -> "UniqueIntIndex | None":
        c = rk[0]
        if c.oid not in type_oids.INTEGER_TYPES or c.data.dtype.kind not in "iu" or len(c) >= (1 << 31):
            return None
        keys = c.data.astype(np.int64, copy=False)
        rows = np.arange(len(keys), dtype=np.int64)
        if c.nulls is not None:
            keys, rows = keys[~c.nulls], rows[~c.nulls]
        ix = UniqueIntIndex()
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        if len(sk) > 1 and (sk[1:] == sk[:-1]).any():
            return None                      # duplicates: the general join handles them
        if len(sk) == 0:
            ix.sorted_keys, ix.order = sk, rows[order]
            return ix
        lo, hi = int(sk[0]), int(sk[-1])
        span = hi - lo + 1
        if span <= max(32 * len(sk), 1 << 16) and span <= UniqueIntIndex.DENSE_SLOTS:
            ix.base = lo
            ix.pos = np.full(span, -1, np.int32)
            ix.pos[sk - lo] = rows[order]
        else:
            ix.sorted_keys, ix.order = sk, rows[order]
        return ix

    def probe(self, lc: Col) -> tuple[np.ndarray, np.ndarray]:
        """(probe rows, build rows) of the matches, probe rows ascending."""
        keys = lc.data
        if self.pos is not None:
            k64 = keys.astype(np.int64, copy=False)
            ok = (k64 >= self.base) & (k64 < self.base + len(self.pos))
            if lc.nulls is not None:
                ok &= ~lc.nulls
            hit = np.full(len(keys), -1, np.int32)
            hit[ok] = self.pos[k64[ok] - self.base]
        else:
            sk = self.sorted_keys
            assert sk is not None and self.order is not None     # the sorted form
            k64 = keys.astype(np.int64)
            at = np.searchsorted(sk, k64)
            at_c = np.minimum(at, max(len(sk) - 1, 0))
            ok = (at < len(sk)) & (sk[at_c] == k64) if len(sk) else np.zeros(len(keys), bool)
            if lc.nulls is not None:
                ok &= ~lc.nulls
            hit = np.full(len(keys), -1, np.int64)
            hit[ok] = self.order[at_c[ok]]
        li = np.flatnonzero(hit >= 0)
        return li, hit[li].astype(np.int64)


def _match_dense(lcode: np.ndarray, rcode: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """match_indices for codes in [0, span): a direct-indexed table instead of a
    sort of the probe side; no sort at all when the build keys are unique."""
    rvalid = rcode >= 0
    lvalid = lcode >= 0
    lc = np.where(lvalid, lcode, 0)
    if span > 4 * len(rcode) + 4096:
        return _match_sparse(lc, lvalid, rcode, rvalid, span)
    rv_codes = rcode[rvalid] if not rvalid.all() else rcode
    counts = np.bincount(rv_codes, minlength=span)
    if len(counts) and counts.max() <= 1:
        pos = np.full(span, -1, np.int64)
        pos[rv_codes] = np.flatnonzero(rvalid) if len(rv_codes) != len(rcode) else np.arange(len(rcode))
        hit = pos[lc]
        hit[~lvalid] = -1
        li = np.flatnonzero(hit >= 0)
        return li, hit[li]
    order = np.argsort(rcode, kind="stable")
    nneg = len(rcode) - len(rv_codes)
    starts = np.cumsum(counts) - counts + nneg
    cnt = np.where(lvalid, counts[lc], 0)
    return _expand(starts[lc], cnt, order)


def _match_sparse(lc: np.ndarray, lvalid: np.ndarray, rcode: np.ndarray, rvalid: np.ndarray,
                  span: int) -> tuple[np.ndarray, np.ndarray]:
    """_match_dense for a build side much smaller than its code range (Q12:
    31k lineitem rows keyed by order keys up to 6M): the direct table maps a
    code to the build's distinct keys, so no bincount, max or cumsum runs over
    the whole range, and only probe rows that hit are expanded."""
    order = np.argsort(rcode, kind="stable")
    nneg = len(rcode) - int(np.count_nonzero(rvalid))
    uniq, first, counts = np.unique(rcode[order][nneg:], return_index=True, return_counts=True)
    slot = np.full(span, -1, np.int32)          # a distinct key's number: half the bytes of int64 to fill and gather
    slot[uniq] = np.arange(len(uniq), dtype=np.int32)
    hit = slot[lc]
    hit[~lvalid] = -1
    li = np.flatnonzero(hit >= 0)
    u = hit[li]
    if len(uniq) == np.count_nonzero(rvalid):       # unique build keys: one partner each
        return li, order[first[u] + nneg]
    sub, ri = _expand(first[u] + nneg, counts[u], order)
    return li[sub], ri


def take_cols(cols: list[Col], idx: np.ndarray) -> list[Col]:
    """Gather rows of several columns lazily: each plain or already-taken
    column becomes a TakenCol over its source, and columns that share an
    index array (all the columns of one table after a filter or a join)
    compose it with ``idx`` once, not once per column.  Columns that are
    never read again (a wide table's comments, addresses, ...) are then
    never gathered at all."""
    composed: dict[int, np.ndarray] = {}
    out: list[Col] = []
    for c in cols:
        if type(c) is TakenCol and c._gathered is None:
            key = id(c._idx)
            j = composed.get(key)
            if j is None:
                j = composed[key] = c._idx[idx]
            out.append(c.with_index(j, None if c.nulls is None else c.nulls[idx]))   # keeps an outer join's NULLs
        elif type(c) is Col and c.data.dtype != object and c.data.ndim == 1:
            out.append(TakenCol(c, idx))
        elif type(c) is FixedCol:
            out.append(c.taken(idx))
        else:
            out.append(c.take(idx))
    return out


def take_batch(b: Batch, idx: np.ndarray) -> Batch:
    return Batch(take_cols(b.cols, idx), len(idx))


def filter_batch(b: Batch, mask: np.ndarray) -> Batch:
    idx = np.flatnonzero(mask)
    if len(idx) == b.n:
        return b
    return take_batch(b, idx)


def _with_nulls(c: Col, miss: np.ndarray) -> Col:
    """``c`` with the rows under ``miss`` NULL as well (a gathered copy, never the input's mask)."""
    nulls = miss if c.nulls is None else (c.nulls | miss)
    if isinstance(c, FixedCol):
        return FixedCol(c.fx, c.scale, nulls)
    if type(c) is Col:
        return Col(c.data, nulls, c.oid)
    c.nulls = nulls     # a TakenCol made just now by take(): its mask is its own
    return c


def _null_batch(out: list[OutCol], n: int) -> Batch:
    return Batch([Col(sqltypes.empty(c.oid, n), np.ones(n, bool), c.oid) for c in out], n)


def combine(left: Batch, right: Batch) -> Batch:
    return Batch(left.cols + right.cols, left.n)


#: a build side up to this many rows makes a filtered probe test its key first (_reduced_probe)
_REDUCING_BUILD_ROWS = 100_000


class Build:
    """A hash join's build side: the right input and its key columns.  Made
    per execution, or kept by a continuous view (its static pipelines, and
    upper pipelines over unchanged tables); a kept one is probed batch after
    batch, so it indexes its unique integer key once, on first probe."""

    __slots__ = ("batch", "keys", "_index")

    def __init__(self, batch: Batch, keys: list[Col]) -> None:
        self.batch, self.keys = batch, keys
        self._index: tuple | None = None        # (UniqueIntIndex | None,) once decided

    def with_batch(self, batch: Batch) -> "Build":
        """The same keys over another form of the batch (pruned columns)."""
        return Build(batch, self.keys)

    def unique_index(self, join: "HashJoin") -> "UniqueIntIndex | None":
        if self._index is None:
            index = UniqueIntIndex.build(self.keys) if len(join.lkeys) == 1 else None
            if index is not None and sqltypes.common_type(join.lkeys[0].oid, join.rkeys[0].oid, "JOIN") \
                    not in type_oids.INTEGER_TYPES:
                index = None
            self._index = (index,)
        return self._index[0]


class HashJoin(Op):
    """Equi-join; the right input is the build side.  kinds: inner, left,
    right, full, semi, anti.  ``residual`` is evaluated on matched pairs.

    ``lazy`` (the methods' flag): gather output rows on demand (take_batch),
    only for a query's own materialised inputs, never for stream batches
    whose arrays may be reused after the call.

    ``reduces`` ("left"/"right", set by the planner's decorrelation): that
    input holds a ``key_filter.KeySetIn`` on this join, so the other input
    runs first and publishes its key columns for it."""

    breaker = True
    reduces: str | None = None

    def __init__(self, left: Op, right: Op, lkeys: list[Expr], rkeys: list[Expr], kind: str,
                 residual: Expr | None = None) -> None:
        self.left, self.right, self.lkeys, self.rkeys, self.kind, self.residual = left, right, lkeys, rkeys, kind, residual
        self.children = [left, right]
        self.out = left.out if kind in ("semi", "anti") else left.out + right.out
        self.residual_cols = frozenset() if residual is None else \
            frozenset(n.idx for n in residual.walk() if type(n).__name__ == "ColRef")

    def build(self, ctx) -> Build:
        rb = self.right.execute(ctx)
        return Build(rb, [k.eval(rb, ctx) for k in self.rkeys])

    def process(self, lb: Batch, ctx, build: Build, lazy: bool = False, one_shot: bool = False) -> Batch:
        """Probe one batch against ``build``.  A one-shot query join (built,
        probed once, dropped) is not worth indexing: join codes match it
        without sorting; kept build sides are probed batch after batch."""
        rb, rk = build.batch, build.keys
        lk = [k.eval(lb, ctx) for k in self.lkeys]
        if one_shot and self.residual is None and self.kind in ("semi", "anti") and len(lk) == 1:
            # whether a partner exists is all these joins ask: no pairs needed (TPC-H Q22's NOT EXISTS)
            mask = integer_key_membership(lk[0], rk[0])
            if mask is not None:
                return self._filter(lb, mask if self.kind == "semi" else ~mask, lazy)
        index = None if one_shot else build.unique_index(self)
        if index is not None and lk[0].data.dtype.kind in "iu":
            li, ri = index.probe(lk[0])
            return self._emit(lb, rb, li, ri, ctx, lazy)
        return self._join(lb, rb, lk, rk, ctx, lazy)

    def _execute(self, ctx):
        kept = ctx.run.kept_builds.get(self)   # lent by a continuous view: kept while its tables are unchanged
        if kept is None and self.reduces == "right":
            # a kept build outlives this probe side, so only a fresh one is reduced
            lb = self.left.execute(ctx)
            ctx.run.publish_keys(self, [k.eval(lb, ctx) for k in self.lkeys])
            return self.process(lb, ctx, self.build(ctx), lazy=True, one_shot=True)
        build = kept.current(self, ctx) if kept is not None else self.build(ctx)
        if self.reduces == "left":
            ctx.run.publish_keys(self, build.keys)
        lb = self._reduced_probe(ctx, build)
        if lb is None:
            lb = self.left.execute(ctx)
        return self.process(lb, ctx, build, lazy=True, one_shot=kept is None)

    def _reduced_probe(self, ctx, build: Build) -> Batch | None:
        """The probe input when it is filters over one input and the build side
        is small: the input's rows without a partner key are dropped before
        the filters read them (``probe_reduction``); None to run it as planned.
        Only for joins that drop such rows anyway (inner, semi)."""
        if self.kind not in ("inner", "semi") or len(self.lkeys) != 1 or type(self.lkeys[0]) is not ColRef \
                or not isinstance(self.left, Filter) or build.batch.n > _REDUCING_BUILD_ROWS:
            return None
        chain: list[Filter] = []
        base: Op = self.left
        while isinstance(base, Filter):
            chain.append(base)
            base = base.child
        b = base.execute(ctx)
        mask = integer_key_membership(self.lkeys[0].eval(b, ctx), build.keys[0])
        if mask is not None and b.n:
            b = filter_batch(b, mask)
        stats = ctx.run.stats
        for f in reversed(chain):
            t = time.perf_counter()
            b = f.process(b, ctx, lazy=True)
            st = stats.setdefault(f, [0, 0.0])
            st[0] += b.n
            st[1] += time.perf_counter() - t
        return b

    @staticmethod
    def _take(b: Batch, idx: np.ndarray, lazy: bool) -> Batch:
        return take_batch(b, idx) if lazy else b.take(idx)

    @staticmethod
    def _filter(b: Batch, mask: np.ndarray, lazy: bool) -> Batch:
        return filter_batch(b, mask) if lazy else b.filter(mask)

    def _join(self, lb, rb, lk, rk, ctx, lazy: bool = False) -> Batch:
        if lk:
            kept = self._build_rows_with_partner(lb, rb, lk, rk)
            if kept is not None:
                rk = [rk[0].take(kept)]
            lcode, rcode, span = join_codes(lk, rk)
            li, ri = match_indices(lcode, rcode, span)
            if kept is not None:
                ri = kept[ri]
        else:
            li = np.repeat(np.arange(lb.n, dtype=np.int64), rb.n)
            ri = np.tile(np.arange(rb.n, dtype=np.int64), lb.n)
        return self._emit(lb, rb, li, ri, ctx, lazy)

    def _build_rows_with_partner(self, lb, rb, lk, rk) -> np.ndarray | None:
        """The build rows whose key occurs among the probe's, when the build is
        much the larger side (TPC-H Q21's EXISTS over all lineitems, probed by
        75k): matching then sorts and counts those rows, not the whole build.
        None when not worth it, or for joins that emit unmatched build rows."""
        if len(rk) != 1 or rb.n <= 4 * lb.n or self.kind not in ("inner", "left", "semi", "anti"):
            return None
        mask = integer_key_membership(rk[0], lk[0])
        if mask is None:
            return None
        kept = np.flatnonzero(mask)
        return kept if 2 * len(kept) < rb.n else None    # most rows have a partner: the full match is as cheap

    def _emit(self, lb, rb, li, ri, ctx, lazy: bool) -> Batch:
        """Matched pairs (li, ri) in probe order -> the join's output."""
        if self.residual is not None and len(li):
            pair = self._residual_pair(lb, rb, li, ri)
            c = self.residual.eval(pair, ctx)
            ok = c.data.astype(bool) & ~c.null_mask()
            li, ri = li[ok], ri[ok]
        kind = self.kind
        if kind == "semi":
            m = np.zeros(lb.n, bool)
            m[li] = True
            return self._filter(lb, m, lazy)
        if kind == "anti":
            m = np.ones(lb.n, bool)
            m[li] = False
            return self._filter(lb, m, lazy)
        if kind == "left" and rb.n:
            return self._left_outer(lb, rb, li, ri, lazy)
        res = combine(self._take(lb, li, lazy), self._take(rb, ri, lazy))
        parts = [res]
        if kind in ("left", "full"):
            m = np.ones(lb.n, bool)
            m[li] = False
            if m.any():
                l_un = lb.filter(m)
                parts.append(combine(l_un, _null_batch(self.right.out, l_un.n)))
        if kind in ("right", "full"):
            m = np.ones(rb.n, bool)
            m[ri] = False
            if m.any():
                r_un = rb.filter(m)
                parts.append(combine(_null_batch(self.left.out, r_un.n), r_un))
        return Batch.concat(parts, self.oids)

    def _left_outer(self, lb: Batch, rb: Batch, li: np.ndarray, ri: np.ndarray, lazy: bool) -> Batch:
        """Matched pairs plus unmatched left rows as one gather per column: the
        right side's columns are taken with a NULL mask where there is no
        match, so no column is concatenated (which would turn fixed-point
        numerics back into Decimal objects)."""
        m = np.ones(lb.n, bool)
        m[li] = False
        if m.any():
            un = np.flatnonzero(m)
            li = np.concatenate([li, un])
            miss = np.concatenate([np.zeros(len(ri), bool), np.ones(len(un), bool)])
            ri = np.concatenate([ri, np.zeros(len(un), np.int64)])
        else:
            miss = None
        cols = take_cols(lb.cols, li) if lazy else list(lb.take(li).cols)
        for c in rb.cols:
            t = c.take(ri)
            if miss is not None:
                t = _with_nulls(t, miss)
            cols.append(t)
        return Batch(cols, len(li))

    def _residual_pair(self, lb: Batch, rb: Batch, li: np.ndarray, ri: np.ndarray) -> Batch:
        """The matched pairs as one batch, gathering only the columns the
        residual reads (a wide probe side would otherwise be copied whole for
        every candidate pair); other slots hold a cheap placeholder."""
        used = self.residual_cols
        n = len(li)
        filler = Col(np.zeros(n, np.int8), None, type_oids.INT2)
        nl = len(lb.cols)
        cols = [lb.cols[i].take(li) if i in used else filler for i in range(nl)]
        cols += [rb.cols[j].take(ri) if nl + j in used else filler for j in range(len(rb.cols))]
        return Batch(cols, n)

    def label(self):
        k = {"inner": "Hash Join", "left": "Hash Left Join", "right": "Hash Right Join", "full": "Hash Full Join",
             "semi": "Hash Semi Join", "anti": "Hash Anti Join"}[self.kind]
        return k


class NestedLoopJoin(Op):
    """Joins with no equality keys: cross product then filter, chunked."""

    breaker = True

    def __init__(self, left: Op, right: Op, pred: Expr | None, kind: str) -> None:
        self.inner = HashJoin(left, right, [], [], kind, pred)
        self.left, self.right, self.kind, self.pred = left, right, kind, pred
        self.children = [left, right]
        self.out = self.inner.out

    def _execute(self, ctx):
        rb = self.right.execute(ctx)
        lb = self.left.execute(ctx)
        if lb.n * max(rb.n, 1) <= 4_000_000 or self.kind not in ("inner", "left", "semi", "anti"):
            return self.inner._join(lb, rb, [], [], ctx)
        step = max(1, 4_000_000 // max(rb.n, 1))
        parts = []
        for a in range(0, lb.n, step):
            ctx.check_cancel()
            parts.append(self.inner._join(lb.slice(a, a + step), rb, [], [], ctx))
        return Batch.concat(parts, self.oids)

    def label(self):
        return "Nested Loop" + ({"left": " Left Join", "semi": " Semi Join", "anti": " Anti Join",
                                 "right": " Right Join", "full": " Full Join"}.get(self.kind, ""))


class LateralJoin(Op):
    """LATERAL subquery: re-run the right side per left row."""

    def __init__(self, left: Op, right: Op, kind: str) -> None:
        self.left, self.right, self.kind = left, right, kind
        self.children = [left, right]
        self.out = left.out + right.out

    def _execute(self, ctx):
        lb = self.left.execute(ctx)
        rows = lb.rows()
        parts = []
        for i in range(lb.n):
            ctx.outer_rows.append(rows[i])
            try:
                rb = self.right.execute(ctx)
            finally:
                ctx.outer_rows.pop()
            if rb.n == 0:
                if self.kind == "left":
                    parts.append(combine(lb.slice(i, i + 1), _null_batch(self.right.out, 1)))
                continue
            parts.append(combine(lb.take(np.zeros(rb.n, np.int64) + i), rb))
        return Batch.concat(parts, self.oids)


# ------------------------------------------------------------------ aggregation

class Aggregate(Op):
    """GROUP BY sink.  ``keys``/``aggs`` are evaluated against the child.
    Output: key columns then aggregate columns (then GROUPING() ids)."""

    breaker = True

    def __init__(self, child: Op, keys: list[Expr], aggs: list[AggSpec], out: list[OutCol],
                 grouping_sets: list[list[int]] | None = None) -> None:
        self.child, self.keys, self.aggs, self.out = child, keys, aggs, out
        self.grouping_sets = grouping_sets
        self.children = [child]

    def new_table(self) -> GroupTable:
        return GroupTable([k.oid for k in self.keys], self.aggs)

    def agg_inputs(self, batch: Batch, ctx) -> list:
        inputs = []
        for a in self.aggs:
            args = [e.eval(batch, ctx) for e in a.args]
            valid = None
            for c in args[:1] if a.func not in KEEPS_NULLS else ():
                if c.nulls is not None:
                    valid = ~c.nulls
            if a.filter is not None:
                f = a.filter.eval(batch, ctx)
                fm = f.data.astype(bool) & ~f.null_mask()
                valid = fm if valid is None else (valid & fm)
            if a.star:
                args = []
            inputs.append((args, valid))
        return inputs

    def consume(self, table: GroupTable, batch: Batch, ctx) -> None:
        key_cols = [k.eval(batch, ctx) for k in self.keys]
        table.consume(key_cols, self.agg_inputs(batch, ctx), batch.n)

    def _execute(self, ctx):
        if self.grouping_sets is None:   # a compiling backend may run the input pipeline; None = vector path
            table = backends.choose(ctx).aggregate(self, ctx)
            if table is not None:
                return self.finish(table)
        batch = self.child.execute(ctx)
        if self.grouping_sets is None:
            return self._one_shot(batch, ctx)
        parts = []
        key_cols_all = [k.eval(batch, ctx) for k in self.keys]
        inputs = self.agg_inputs(batch, ctx)
        for gset in self.grouping_sets:
            table = GroupTable([self.keys[i].oid for i in gset], self.aggs)
            table.consume([key_cols_all[i] for i in gset], inputs, batch.n)
            if not gset and batch.n == 0:
                pass
            res = table.result()
            cols = []
            for i, k in enumerate(self.keys):
                if i in gset:
                    cols.append(res.cols[gset.index(i)])
                else:
                    cols.append(Col(sqltypes.empty(k.oid, res.n), np.ones(res.n, bool), k.oid))
            cols += res.cols[len(gset):]
            gid = sum(1 << (len(self.keys) - 1 - i) for i in range(len(self.keys)) if i not in gset)
            cols.append(Col(np.full(res.n, gid, np.int32), None, type_oids.INT4))
            parts.append(Batch(cols, res.n))
        return Batch.concat(parts, self.oids)

    def _one_shot(self, batch: Batch, ctx) -> Batch:
        """GROUP BY over one materialised input: group ids straight from numpy
        codes of the keys (no Python tuple per group), key columns gathered
        from one representative row per group, aggregate states fed once."""
        key_cols = [k.eval(batch, ctx) for k in self.keys]
        inputs = self.agg_inputs(batch, ctx)
        if key_cols:
            gids, rep = group_ids(key_cols, batch.n)
            ng = len(rep)
        else:
            gids, rep, ng = np.zeros(batch.n, np.int64), None, 1
        cols = [c.take(rep) for c in key_cols] if rep is not None else []
        counts = np.bincount(gids, minlength=ng) if batch.n and len(self.aggs) > 1 else None
        for spec, (args, valid) in zip(self.aggs, inputs):
            counted = distinct_counts(spec, gids, ng, args, valid) if batch.n else None
            if counted is not None:
                cols.append(counted)
                continue
            st = spec.make_state()
            st.ensure(ng)
            if counts is not None:
                st.update_counted(gids, ng, args, valid, counts)
            elif batch.n:
                st.update(gids, ng, args, valid)
            cols.append(st.final(ng))
        return Batch(cols, ng)

    def finish(self, table: GroupTable) -> Batch:
        if self.keys or True:
            res = table.result()
        return res

    def label(self):
        if self.grouping_sets is not None:
            return "MixedAggregate"
        return "HashAggregate" if self.keys else "Aggregate"


def group_ids(key_cols: list[Col], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Dense group id per row (0..ng-1) and one representative row per group.
    NULL is a key value of its own, as GROUP BY wants."""
    combined = np.zeros(n, np.int64)
    span = 1
    for c in key_cols:
        codes, k = dense_codes(c)
        if c.nulls is not None:
            codes = np.where(c.nulls, k, codes)
            k += 1
        if span * k >= (1 << 62):
            combined = np.unique(combined, return_inverse=True)[1].astype(np.int64)
            span = int(combined.max()) + 1 if n else 1
        combined = combined * k + codes
        span *= k
    if span <= max(4 * n, 1 << 16):
        present = np.zeros(span, bool)
        present[combined] = True
        ids = np.cumsum(present) - 1
        rep_by_code = np.empty(span, np.int64)
        rep_by_code[combined] = np.arange(n, dtype=np.int64)
        return ids[combined], rep_by_code[present]
    _, rep, inv = np.unique(combined, return_index=True, return_inverse=True)
    return inv.astype(np.int64).reshape(-1), rep.astype(np.int64)


# ------------------------------------------------------------------ sort / limit / distinct

def sort_keys_for(col: Col, desc: bool, nulls_first: bool | None) -> np.ndarray:
    """An int64/float key that orders like PostgreSQL (NULLS LAST for ASC)."""
    if nulls_first is None:
        nulls_first = desc
    enc = None
    d: np.ndarray | None
    if isinstance(col, FixedCol):
        d = col.fx                       # scaled int64 orders like the numerics
    elif isinstance(col, TakenCol) or col.data.dtype == object:
        enc = dict_codes(col)            # rank the distinct values, spread by code
        d = None if enc is not None else col.data
    else:
        d = col.data
    if d is None:                        # dictionary-encoded
        assert enc is not None
        codes, uniq = enc
        valid = [i for i, v in enumerate(uniq.tolist()) if v is not None]
        kf = sort_key_of(col.oid)
        order = sorted(valid, key=lambda i: kf(uniq[i]))
        rank = np.zeros(len(uniq), np.float64)
        rank[order] = np.arange(len(order), dtype=np.float64)
        key = rank[codes]
    elif d.dtype == object or d.dtype.kind == "b":
        vals = col.to_pylist()
        if col.oid in type_oids.ELEMENT_OF:     # array values rank as tuples
            vals = [_hashable(v) for v in vals]
        distinct = sorted({v for v in vals if v is not None}, key=sort_key_of(col.oid))
        rank_of = {v: i for i, v in enumerate(distinct)}
        key = np.array([rank_of[v] if v is not None else 0 for v in vals], dtype=np.float64)
    elif d.dtype.kind == "M":
        key = d.view(np.int64).astype(np.float64)
        if len(d) and np.abs(d.view(np.int64)).max() >= 2**53:
            _, inv = np.unique(d.view(np.int64), return_inverse=True)
            key = inv.astype(np.float64)
    elif d.dtype.kind in "iu":
        if len(d) and (np.abs(d.astype(np.int64)).max() >= 2**53):
            _, inv = np.unique(d, return_inverse=True)
            key = inv.astype(np.float64)
        else:
            key = d.astype(np.float64)
    else:
        key = d.astype(np.float64)
        if len(key) and not np.isfinite(key).all():
            # NaN sorts after Infinity in PostgreSQL, as np.unique orders it; ranks
            # keep infinities apart from the NULL positions set below
            _, inv = np.unique(key, return_inverse=True)
            key = inv.astype(np.float64)
    if desc:
        key = -key
    if col.nulls is not None:
        key = key.copy()
        key[col.nulls] = -np.inf if nulls_first else np.inf
    return key


def _sort_key(v):
    if isinstance(v, decimal.Decimal):
        return (True, 0) if v.is_nan() else (False, v)      # numeric NaN sorts above every number
    if isinstance(v, Interval):
        return v.months * 30 * 86400_000_000 + v.days * 86400_000_000 + v.microseconds
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (list, tuple)):
        return array_key(v)
    return v


def _row_sort_key(v):
    """A row value's order (record_cmp); count(DISTINCT (a, b))'s keys are plain tuples."""
    return record_key(v) if isinstance(v, Record) else v


def sort_key_of(oid: int):
    """The Python sort key of one type's non-NULL values (jsonb orders as
    jsonb, not as its text; a row value field by field)."""
    if oid == type_oids.RECORD:
        return _row_sort_key
    return jsonb_key if oid == type_oids.JSONB else _sort_key


def _hashable(v):
    """An array value (a list, nested per dimension) as a tuple, to rank it."""
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def sort_order(cols: list[tuple[Col, bool, bool | None]], n: int) -> np.ndarray:
    if not cols:
        return np.arange(n)
    keys = [sort_keys_for(c, d, nf) for c, d, nf in cols]
    return np.lexsort(keys[::-1])


class Sort(Op):
    breaker = True

    def __init__(self, child: Op, keys: list[tuple[Expr, bool, bool | None]]) -> None:
        self.child, self.keys = child, keys
        self.children = [child]
        self.out = child.out

    def _execute(self, ctx):
        b = self.child.execute(ctx)
        if b.n <= 1:
            return b
        order = sort_order([(e.eval(b, ctx), d, nf) for e, d, nf in self.keys], b.n)
        return b.take(order)

    def label(self):
        return "Sort"


class Limit(Op):
    def __init__(self, child: Op, limit: Expr | None, offset: Expr | None) -> None:
        self.child, self.limit, self.offset = child, limit, offset
        self.children = [child]
        self.out = child.out

    def _value(self, e, ctx, what):
        if e is None:
            return None
        c = e.eval(Batch([], 1), ctx)
        v = c.to_pylist()[0]
        if v is None:
            return None
        v = int(v)
        if v < 0:
            raise PgError(INVALID_ROW_COUNT_IN_LIMIT if what == "LIMIT" else "2201X",
                          f"{what} must not be negative")
        return v

    def _execute(self, ctx):
        lim = self._value(self.limit, ctx, "LIMIT")
        off = self._value(self.offset, ctx, "OFFSET") or 0
        b = self.child.execute(ctx)
        end = b.n if lim is None else off + lim
        return b.slice(off, end)

    def label(self):
        return "Limit"


def distinct_mask(cols: list[Col], n: int) -> np.ndarray:
    """First occurrence of each distinct row (NULLs equal, as DISTINCT wants)."""
    if n == 0:
        return np.zeros(0, bool)
    combined = np.zeros(n, np.int64)
    for c in cols:
        codes, vals = factorize(c)
        combined = combined * (len(vals) + 1) + codes
        if len(vals) > 2**20:
            _, combined = np.unique(combined, return_inverse=True)
    _, first = np.unique(combined, return_index=True)
    m = np.zeros(n, bool)
    m[first] = True
    return m


class Distinct(Op):
    breaker = True

    def __init__(self, child: Op, on: list[Expr] | None = None) -> None:
        self.child, self.on = child, on
        self.children = [child]
        self.out = child.out

    def _execute(self, ctx):
        b = self.child.execute(ctx)
        cols = b.cols if self.on is None else [e.eval(b, ctx) for e in self.on]
        return b.filter(distinct_mask(cols, b.n)) if cols else b.slice(0, min(1, b.n))

    def label(self):
        return "HashAggregate (distinct)" if self.on is None else "Unique (distinct on)"


class SetOp(Op):
    breaker = True

    def __init__(self, kind: str, all_: bool, left: Op, right: Op, out: list[OutCol]) -> None:
        self.kind, self.all, self.left, self.right, self.out = kind, all_, left, right, out
        self.children = [left, right]

    def _execute(self, ctx):
        lb = _coerce_batch(self.left.execute(ctx), self.out)
        rb = _coerce_batch(self.right.execute(ctx), self.out)
        if self.kind == "union":
            both = Batch.concat([lb, rb], self.oids)
            if self.all:
                return both
            return both.filter(distinct_mask(both.cols, both.n))
        both = Batch.concat([lb, rb], self.oids)
        combined = np.zeros(both.n, np.int64)
        for c in both.cols:
            codes, vals = factorize(c)
            combined = combined * (len(vals) + 1) + codes
        _, inv = np.unique(combined, return_inverse=True)
        lc, rc = inv[: lb.n], inv[lb.n :]
        k = int(inv.max()) + 1 if both.n else 0
        lcount = np.bincount(lc, minlength=k)
        rcount = np.bincount(rc, minlength=k)
        if self.kind == "intersect":
            keep = np.minimum(lcount, rcount) if self.all else ((lcount > 0) & (rcount > 0)).astype(np.int64)
        else:
            keep = np.maximum(lcount - rcount, 0) if self.all else ((lcount > 0) & (rcount == 0)).astype(np.int64)
        # take the first `keep[g]` left rows of each group g
        order = np.argsort(lc, kind="stable")
        sorted_codes = lc[order]
        starts = np.searchsorted(sorted_codes, np.arange(k))
        rank = np.arange(len(order)) - starts[sorted_codes]
        chosen = order[rank < keep[sorted_codes]]
        return lb.take(np.sort(chosen))

    def label(self):
        return {"union": "Append", "intersect": "HashSetOp Intersect", "except": "HashSetOp Except"}[self.kind] + (" All" if self.all else "")


def _coerce_batch(b: Batch, out: list[OutCol]) -> Batch:
    cols = []
    for c, oc in zip(b.cols, out):
        cols.append(c if c.oid == oc.oid else sqltypes.cast_col(c, oc.oid, explicit=False))
    return Batch(cols, b.n)


class Materialized(Op):
    """Runs its child once per statement (CTEs referenced several times)."""

    def __init__(self, name: str, child: Op) -> None:
        self.name, self.child = name, child
        self.children = [child]
        self.out = child.out

    def _execute(self, ctx):
        key = ("cte", id(self))
        if key not in ctx.cte_results:
            ctx.cte_results[key] = self.child.execute(ctx)
        return ctx.cte_results[key]

    def label(self):
        return f"CTE {self.name}"


class CTEScan(Op):
    """A reference to a WITH query.  The (shared, materialised) CTE plan is a
    real child, so plan walkers — EXPLAIN, continuous-view splitting — see it."""

    def __init__(self, name: str, child: Op, out: list[OutCol]) -> None:
        self.name, self.child, self.out = name, child, out
        self.children = [child]

    def _execute(self, ctx):
        return self.child.execute(ctx)

    def label(self):
        return f"CTE Scan on {self.name}"


class RecursiveUnion(Op):
    def __init__(self, name: str, base: Op, recursive_builder, all_: bool, out: list[OutCol]) -> None:
        self.name, self.base, self.builder, self.all, self.out = name, base, recursive_builder, all_, out
        self.children = [base]

    def _execute(self, ctx):
        key = ("cte", id(self))
        if key in ctx.cte_results:
            return ctx.cte_results[key]
        result = _coerce_batch(self.base.execute(ctx), self.out)
        if not self.all:
            result = result.filter(distinct_mask(result.cols, result.n))
        working = result
        rec_op = self.builder()
        for _ in range(100000):
            ctx.check_cancel()
            if working.n == 0:
                break
            ctx.run.set_working(self, working)
            new = _coerce_batch(rec_op.execute(ctx), self.out)
            if not self.all and new.n:
                both = Batch.concat([result, new], self.oids)
                m = distinct_mask(both.cols, both.n)[result.n :]
                new = new.filter(m)
            if new.n == 0:
                break
            result = Batch.concat([result, new], self.oids)
            working = new
        ctx.cte_results[key] = result
        return result

    def label(self):
        return f"Recursive Union {self.name}"


class WorkTableScan(Op):
    def __init__(self, owner: RecursiveUnion, out: list[OutCol]) -> None:
        self.owner, self.out = owner, out
        self.children = []

    def _execute(self, ctx):
        working = ctx.run.working.get(self.owner)
        return working if working is not None else Batch.empty(self.oids)

    def label(self):
        return f"WorkTable Scan on {self.owner.name}"


class FunctionScan(Op):
    """Set-returning functions in FROM: generate_series, unnest, ..."""

    def __init__(self, name: str, fn, args: list[Expr], out: list[OutCol]) -> None:
        self.name, self.fn, self.args, self.out = name, fn, args, out
        self.children = []

    def _execute(self, ctx):
        one = Batch([], 1)
        vals = [a.eval(one, ctx).to_pylist()[0] for a in self.args]
        return self.fn(vals, ctx)

    def label(self):
        return f"Function Scan on {self.name}"


class ProjectSet(Op):
    """Set-returning functions in the select list (one SRF, expanded per row)."""

    def __init__(self, child: Op, srf_index: int, srf_fn, srf_args: list[Expr], exprs: list[Expr], out: list[OutCol]):
        self.child, self.srf_index, self.srf_fn, self.srf_args, self.exprs, self.out = child, srf_index, srf_fn, srf_args, exprs, out
        self.children = [child]

    def _execute(self, ctx):
        b = self.child.execute(ctx)
        argcols = [a.eval(b, ctx).to_pylist() for a in self.srf_args]
        reps = []
        produced = []
        for i in range(b.n):
            res = self.srf_fn([c[i] for c in argcols], ctx)
            produced.append(res.cols[0])
            reps.append(res.n)
        idx = np.repeat(np.arange(b.n), reps)
        base = b.take(idx)
        srf_col = Col.concat(produced) if produced else Col(sqltypes.empty(self.out[self.srf_index].oid, 0), None, self.out[self.srf_index].oid)
        cols = []
        for j, e in enumerate(self.exprs):
            if j == self.srf_index:
                cols.append(srf_col)
            else:
                cols.append(e.eval(base, ctx))
        return Batch(cols, base.n)


class ProjectSetN(Op):
    """Several set-returning functions in the select list, advanced in lockstep:
    each input row yields as many rows as its longest SRF result, shorter ones
    padded with NULLs (PostgreSQL 10+).  ``parts`` are single-SRF ProjectSets."""

    def __init__(self, child: Op, parts: list[ProjectSet], exprs: list[Expr], out: list[OutCol]):
        self.child, self.parts, self.exprs, self.out = child, parts, exprs, out
        self.children = [child]

    def _execute(self, ctx):
        b = self.child.execute(ctx)
        argcols = [[a.eval(b, ctx).to_pylist() for a in p.srf_args] for p in self.parts]
        produced: list[list] = [[] for _ in self.parts]
        reps = []
        for i in range(b.n):
            results = [p.srf_fn([c[i] for c in ac], ctx).cols[0].to_pylist() for p, ac in zip(self.parts, argcols)]
            m = max((len(r) for r in results), default=0)
            for k, r in enumerate(results):
                produced[k].extend(r)
                produced[k].extend([None] * (m - len(r)))
            reps.append(m)
        base = b.take(np.repeat(np.arange(b.n), reps))
        srf_cols = {p.srf_index: Col.from_pylist(produced[k], self.out[p.srf_index].oid) for k, p in enumerate(self.parts)}
        cols = [srf_cols[j] if j in srf_cols else e.eval(base, ctx) for j, e in enumerate(self.exprs)]
        return Batch(cols, base.n)


def explain_lines(op: Op, run=None, depth: int = 0, estimates: dict | None = None) -> list[str]:
    """The plan as EXPLAIN prints it: each operator with its estimated rows
    (``estimates``, the planner's, where it made them) and with ``run``
    (EXPLAIN ANALYZE: the execution's :class:`ExecutionRun`) its actual rows
    and time."""
    pad = "  " * depth + ("->  " if depth else "")
    line = pad + op.label()
    est = estimates.get(op) if estimates is not None else getattr(op, "est_rows", None)
    if est is not None:
        line += f"  (rows={int(-(-est // 1))})"
    if run is not None:
        line += f" (actual rows={run.rows(op)} time={run.seconds(op) * 1000:.3f} ms)"
    out = [line]
    for c in op.children:
        out += explain_lines(c, run, depth + 1, estimates)
    return out


def pipelines(op: Op) -> list[list[Op]]:
    """Split a plan into pipelines: maximal chains ending at a breaker."""
    result: list[list[Op]] = []

    def visit(node: Op, current: list[Op]) -> None:
        current.append(node)
        if isinstance(node, (HashJoin,)):
            build: list[Op] = []
            visit(node.right, build)
            result.append(build)
            visit(node.left, current)
        elif node.breaker or not node.children:
            if node.children:
                for ch in node.children:
                    sub: list[Op] = []
                    visit(ch, sub)
                    result.append(sub)
        else:
            for ch in node.children:
                visit(ch, current)

    top: list[Op] = []
    visit(op, top)
    result.append(top)
    return [p for p in result if p]
