"""Estimated rows of every operator of a planned query (issue 18, item 4):
what EXPLAIN prints as ``rows=`` and EXPLAIN ANALYZE beside the actual rows.

Why a module of its own: the join-order search (``join_order``) estimates
only the inner-join groups it orders; a plan also holds explicit and outer
joins, semi and anti joins from decorrelated subqueries, aggregates and
filters above them.  This pass walks a finished plan bottom-up and carries,
per operator, its rows and each output column's distinct count, so that a
join's size is ``|R|·|S| / max(ndv_R, ndv_S)`` wherever its keys come from
(the same model as ``cardinality``), and a semi join keeps the fraction of
its left keys the right side holds.

Filters directly over a table (through projections) are evaluated on the
table's planning sample, as the join-order search does; elsewhere a
condition counts with PostgreSQL's default selectivities.

The result is a map from operator to rows, never stored on the operators:
plans are cached and shared by sessions, and estimates follow the data.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from splitstream.catalog.datatypes.vector import Batch

from ...execution import expr
from ...execution import operators
from ...execution.key_filter import KeySetIn
from . import cardinality, join_sampling

#: PostgreSQL's default selectivities (selfuncs.h)
EQ_SEL = 0.005
NE_SEL = 0.995
RANGE_SEL = 1.0 / 3.0
#: groups assumed for a grouping key nothing is known about (PostgreSQL's DEFAULT_NUM_DISTINCT)
DEFAULT_GROUPS = 200.0


@dataclass
class Est:
    """One operator's estimate: rows, and per output column its distinct
    count (None: unknown), with a sample of the rows where one is known."""

    rows: float
    ndv: list[float | None] = field(default_factory=list)
    sample: Batch | None = None
    #: rows of the output each sample row stands for
    scale: float = 1.0

    def col_ndv(self, i: int) -> float:
        d = self.ndv[i] if 0 <= i < len(self.ndv) else None
        return self.rows if d is None else max(1.0, min(d, self.rows))


def estimate_plan(plan: operators.Op, state) -> dict[operators.Op, float]:
    """Every operator of ``plan`` and its estimated rows."""
    out: dict[operators.Op, Est] = {}
    _walk(plan, state, out)
    return {op: e.rows for op, e in out.items()}


def _walk(op: operators.Op, state, out: dict) -> Est:
    if isinstance(op, operators.HashJoin) and op.reduces == "left":
        # the side that publishes the keys first: the reduced side's filter reads its estimate
        right = _walk(op.right, state, out)
        kids = [_walk(op.left, state, out), right]
    else:
        kids = [_walk(c, state, out) for c in op.children]
    est = _estimate(op, kids, state, out)
    est.rows = max(est.rows, 1.0)
    out[op] = est
    return est


def _estimate(op: operators.Op, kids: list[Est], state, out: dict) -> Est:
    if isinstance(op, operators.TableScan):
        return _scan(op, state)
    if isinstance(op, operators.Filter):
        return _filter(op, kids[0], state, out)
    if isinstance(op, operators.Project):
        return _project(op, kids[0])
    if isinstance(op, operators.HashJoin):
        return _sampled_join(op, kids[0], kids[1], state, out) or _hash_join(op, kids[0], kids[1])
    if isinstance(op, operators.NestedLoopJoin):
        return _nested_loop(op, kids[0], kids[1])
    if isinstance(op, operators.Aggregate):
        return _sampled_aggregate(op, kids[0], state, out) or _aggregate(op, kids[0])
    if isinstance(op, operators.Distinct):
        return _distinct(op, kids[0])
    if isinstance(op, operators.Limit):
        return _limit(op, kids[0])
    if isinstance(op, operators.SetOp):
        return _set_op(op, kids[0], kids[1])
    if isinstance(op, operators.LateralJoin):
        return Est(kids[0].rows * kids[1].rows, kids[0].ndv + kids[1].ndv)
    if isinstance(op, (operators.Sort, operators.Materialized, operators.CTEScan)) and kids:
        return Est(kids[0].rows, list(kids[0].ndv), kids[0].sample, kids[0].scale)
    if len(kids) == 1:
        return Est(kids[0].rows, list(kids[0].ndv) if len(kids[0].ndv) == len(op.out) else [])
    return Est(cardinality.op_rows(op, state))


def _scan(op: operators.TableScan, state) -> Est:
    tv = state.data.get(op.rel.oid) if getattr(state, "data", None) is not None else None
    if tv is None or op.with_positions:
        return Est(cardinality.op_rows(op, state))
    ts = cardinality.table_sample(op, tv)
    ndv = [ts.ndv(i) for i in range(len(ts.batch.cols))]
    return Est(ts.total, ndv, ts.batch, ts.total / ts.batch.n if ts.batch.n else 1.0)


def _filter(op: operators.Filter, child: Est, state, out: dict) -> Est:
    if child.sample is not None and child.sample.n:
        # conditions that run on the sample filter it; the others (subqueries)
        # scale what each kept row stands for
        kept, scale = child.sample, child.scale
        for c in _conjuncts(op.pred):
            if isinstance(c, KeySetIn):
                sel = _key_set_selectivity(c, child, out)
                mask = _key_subset(c, kept, sel)
                if mask is None:
                    scale *= sel
                    continue
            else:
                mask = cardinality.truth(c, kept) if kept.n else None
            if mask is None:
                scale *= _selectivity(c, child, state)
            else:
                kept = kept.filter(mask)
        return Est(max(kept.n, 0.5) * scale, list(child.ndv), kept, scale)
    sel = 1.0
    for c in _conjuncts(op.pred):
        sel *= _key_set_selectivity(c, child, out) if isinstance(c, KeySetIn) else _selectivity(c, child, state)
    return Est(child.rows * sel, list(child.ndv))


def _key_set_selectivity(c: KeySetIn, child: Est, out: dict) -> float:
    """The fraction of this input's keys that the join's other side holds
    (containment, as for a semi join), from that side's estimate."""
    join = c.slot
    assert isinstance(join, operators.HashJoin)
    other, other_keys = (join.left, join.lkeys) if join.reduces == "right" else (join.right, join.rkeys)
    est = out.get(other)
    if est is None:
        return 1.0
    theirs = min(float(np.prod(_key_ndv([other_keys[i] for i in c.positions], est))), est.rows)
    mine = min(float(np.prod(_key_ndv(c.args, child))), child.rows)
    return min(1.0, theirs / max(mine, 1.0))


def _key_subset(c: KeySetIn, sample: Batch, sel: float) -> np.ndarray | None:
    """The sample rows of a pseudo-random ``sel`` share of the key values:
    whole keys are kept or dropped, so a grouping above sees fewer groups,
    not thinner ones."""
    if sel >= 1.0 or not sample.n:
        return None
    try:
        cols = [a.eval(sample, None) for a in c.args]
    except Exception:       # noqa: BLE001 - an estimate never fails the statement
        return None
    codes, _ = operators.group_ids(cols, sample.n)
    # a multiplicative hash spreads the dense codes over [0, 1)
    frac = ((codes.astype(np.uint64) * np.uint64(2654435761)) % np.uint64(1 << 32)).astype(np.float64) / float(1 << 32)
    return frac < sel


def _conjuncts(e: expr.Expr) -> list[expr.Expr]:
    if isinstance(e, expr.And):
        return [c for a in e.args for c in _conjuncts(a)]
    return [e]


def _selectivity(c: expr.Expr, child: Est, state) -> float:
    """One condition over an input without a sample: a subquery's size, a
    known column's distinct count, else PostgreSQL's defaults."""
    if isinstance(c, expr.SubqueryExpr):
        return _subquery_selectivity(c, child, state)
    if isinstance(c, expr.Compare):
        col = next((a for a in (c.left, c.right) if isinstance(a, expr.ColRef)), None)
        if c.op == "=":
            return 1.0 / child.col_ndv(col.idx) if col is not None else EQ_SEL
        if c.op in ("<>", "!="):
            return NE_SEL
        return RANGE_SEL
    return RANGE_SEL


def _subquery_selectivity(c: expr.SubqueryExpr, child: Est, state) -> float:
    if c.kind == "in" and isinstance(c.arg, expr.ColRef) and not c.correlated and c.op == "=":
        sub = _walk(c.plan, state, {}).rows if isinstance(c.plan, operators.Op) else cardinality.DEFAULT_ROWS
        frac = min(1.0, sub / child.col_ndv(c.arg.idx))
        return 1.0 - frac if c.negate else frac
    if c.kind == "exists":
        return 0.5
    return RANGE_SEL


def _project(op: operators.Project, child: Est) -> Est:
    ndv = [child.ndv[e.idx] if isinstance(e, expr.ColRef) and e.idx < len(child.ndv) else None for e in op.exprs]
    sample = None
    if child.sample is not None:
        try:
            cols = [e.eval(child.sample, None) for e in op.exprs]
            if all(len(c) == child.sample.n for c in cols):
                sample = Batch(cols, child.sample.n)
        except Exception:       # noqa: BLE001 - an estimate never fails the statement
            sample = None
    return Est(child.rows, ndv, sample, child.scale)


def _key_ndv(keys: list[expr.Expr], side: Est) -> list[float]:
    return [side.col_ndv(k.idx) if isinstance(k, expr.ColRef) else side.rows for k in keys]


def _hash_join(op: operators.HashJoin, left: Est, right: Est) -> Est:
    lk, rk = _key_ndv(op.lkeys, left), _key_ndv(op.rkeys, right)
    pairs = list(zip(lk, rk))
    residual = 1.0 if op.residual is None else _residual_selectivity(op.residual)
    if op.kind in ("semi", "anti"):
        # the fraction of the left keys that find a partner (containment), the
        # most selective key standing for a composite one
        frac = min((min(1.0, r / max(l_, 1.0)) for l_, r in pairs), default=1.0) * residual
        rows = left.rows * (frac if op.kind == "semi" else 1.0 - frac)
        return Est(rows, list(left.ndv))
    inner = left.rows * right.rows * residual
    if pairs:
        inner /= max(max(l_, r, 1.0) for l_, r in pairs)
    rows = {"left": max(inner, left.rows), "right": max(inner, right.rows),
            "full": max(inner, left.rows + right.rows)}.get(op.kind, inner)
    return Est(rows, _capped(left.ndv, rows) + _capped(right.ndv, rows))


def _sampled_join(op: operators.HashJoin, left: Est, right: Est, state, out: dict) -> Est | None:
    """The join followed from the larger side's sample into the other
    side's tables (``join_sampling``); None when neither side can be."""
    sides = [(left, "left")] if left.sample is not None else []
    if right.sample is not None and op.kind == "inner":
        sides.append((right, "right"))
    for drive, side in sorted(sides, key=lambda s: -s[0].rows):
        assert drive.sample is not None
        if side == "left":
            ext = join_sampling.extend([k.eval(drive.sample, None) for k in op.lkeys], op.right, op.rkeys, state, out)
        else:
            ext = join_sampling.extend([k.eval(drive.sample, None) for k in op.rkeys], op.left, op.lkeys, state, out)
        if ext is None:
            continue
        mine = drive.sample.take(ext.idx)
        joined = Batch(mine.cols + ext.batch.cols if side == "left" else ext.batch.cols + mine.cols, ext.batch.n)
        idx = ext.idx
        if op.residual is not None and joined.n:
            mask = cardinality.truth(op.residual, joined)
            if mask is not None:
                joined, idx = joined.filter(mask), idx[mask]
        return _joined(op, left, right, drive, joined, idx, ext.factor)
    return None


def _joined(op: operators.HashJoin, left: Est, right: Est, drive: Est, joined: Batch, idx, factor: float) -> Est:
    """The estimate from the driving sample's matches ``idx`` and rows ``joined``."""
    assert drive.sample is not None
    scale = drive.scale * factor
    ndv = _capped(left.ndv, left.rows) + _capped(right.ndv, right.rows)
    if op.kind in ("semi", "anti", "left"):
        matched = np.zeros(drive.sample.n, dtype=bool)
        matched[idx] = True
        if op.kind == "left":
            rows = (joined.n * factor + float((~matched).sum())) * drive.scale
            return Est(max(rows, 0.5 * drive.scale), ndv)
        keep = matched if op.kind == "semi" else ~matched
        n = float(keep.sum()) * (factor if op.kind == "semi" else 1.0)
        kept = drive.sample.filter(keep)
        return Est(max(n, 0.5) * drive.scale, list(left.ndv), kept, drive.scale)
    return Est(max(joined.n, 0.5) * scale, ndv, joined, scale)


def _residual_selectivity(e: expr.Expr) -> float:
    sel = 1.0
    for c in _conjuncts(e):
        sel *= NE_SEL if isinstance(c, expr.Compare) and c.op in ("<>", "!=") else RANGE_SEL
    return sel


def _capped(ndv: list[float | None], rows: float) -> list[float | None]:
    return [None if d is None else min(d, rows) for d in ndv]


def _nested_loop(op: operators.NestedLoopJoin, left: Est, right: Est) -> Est:
    both = _sample_product(op, left, right)
    if both is not None:
        return both
    sel = 1.0 if op.pred is None else _residual_selectivity(op.pred)
    if op.kind in ("semi", "anti"):
        frac = min(1.0, right.rows * sel)
        return Est(left.rows * (frac if op.kind == "semi" else 1.0 - frac), list(left.ndv))
    inner = left.rows * right.rows * sel
    rows = max(inner, left.rows) if op.kind == "left" else inner
    return Est(rows, _capped(left.ndv, rows) + _capped(right.ndv, rows))


def _sample_product(op: operators.NestedLoopJoin, left: Est, right: Est) -> Est | None:
    """An inner nested loop over two sampled inputs whose samples' product is
    small: the condition evaluated on every pair."""
    ls, rs = left.sample, right.sample
    if op.kind not in ("inner", "cross") or ls is None or rs is None or ls.n * rs.n > join_sampling.MAX_ROWS:
        return None
    li = np.repeat(np.arange(ls.n), rs.n)
    ri = np.tile(np.arange(rs.n), ls.n)
    pairs = Batch(ls.take(li).cols + rs.take(ri).cols, len(li))
    if op.pred is not None and pairs.n:
        mask = cardinality.truth(op.pred, pairs)
        if mask is None:
            return None
        pairs = pairs.filter(mask)
    scale = left.scale * right.scale
    return Est(max(pairs.n, 0.5) * scale, left.ndv + right.ndv, pairs, scale)


def _groups(keys: list[expr.Expr], child: Est) -> float:
    """Distinct combinations of ``keys``: the product of their distinct
    counts, at most the input's rows."""
    n = 1.0
    for k in keys:
        n *= child.col_ndv(k.idx) if isinstance(k, expr.ColRef) else min(DEFAULT_GROUPS, child.rows)
        if n >= child.rows:
            return child.rows
    return n


def _aggregate(op: operators.Aggregate, child: Est) -> Est:
    if op.grouping_sets:
        rows = sum(_groups([op.keys[i] for i in s], child) if s else 1.0 for s in op.grouping_sets)
    else:
        rows = _groups(op.keys, child) if op.keys else 1.0
    ndv: list[float | None] = [min(child.col_ndv(k.idx), rows) if isinstance(k, expr.ColRef) else None for k in op.keys]
    return Est(rows, ndv + [None] * (len(op.out) - len(ndv)))


def _sampled_aggregate(op: operators.Aggregate, child: Est, state, out: dict) -> Est | None:
    """The aggregate over a uniform sample of its groups, so that a HAVING
    above it is evaluated on real group values (``join_sampling.group_sample``)."""
    if child.sample is None:
        return None
    found = join_sampling.group_sample(op, state, out)
    if found is None:
        return None
    groups, scale = found
    ndv: list[float | None] = [child.col_ndv(op.keys[0].idx)] + [None] * (len(op.out) - 1)     # type: ignore[attr-defined]
    return Est(max(groups.n, 0.5) * scale, ndv, groups, scale)


def _distinct(op: operators.Distinct, child: Est) -> Est:
    keys: list[expr.Expr] = op.on if op.on is not None else [expr.ColRef(i, c.oid) for i, c in enumerate(op.out)]
    return Est(_groups(keys, child), list(child.ndv))


def _limit(op: operators.Limit, child: Est) -> Est:
    n = op.limit.value if isinstance(op.limit, expr.Const) else None
    rows = min(float(n), child.rows) if isinstance(n, int) else child.rows
    return Est(rows, list(child.ndv))


def _set_op(op: operators.SetOp, left: Est, right: Est) -> Est:
    if op.kind == "union":
        rows = left.rows + right.rows
    elif op.kind == "intersect":
        rows = min(left.rows, right.rows)
    else:
        rows = left.rows
    return Est(rows)
