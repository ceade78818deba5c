"""Decide whether (and how much of) a pipeline the LLVM backend compiles.

Supported shape (everything else falls back to the vector backend, with the
reason recorded for EXPLAIN):

    [vector prefix ops] -> [Filter: conjunctions of comparisons] -> group by
    0..2 integer or timestamp keys -> count(*), count(x), sum/avg(int|float),
    min/max(int|float)

* A timestamp key (a TUMBLE/HOP pane bound, ``date_trunc`` ...) is its int64
  microseconds in the kernel, and a timestamp again when the native table
  hands its groups over (``table.key_col``): the vector path indexes one such
  key by the same int64 (``aggregates._int_key``), so a view switching paths
  never splits a group.

* The trailing Filter is fused into the kernel.  Conjuncts the kernel cannot
  evaluate (OR, LIKE, text, numeric, ...) are evaluated by numpy into a
  *premask* the kernel reads, through the vector Filter's ``conjunct_mask``;
  when a premask term calls a function, every term is in the premask, so the
  call sees only rows the other terms keep (as on the vector path, and as
  PostgreSQL's AND, which stops at the first false term).
* Keys and aggregate arguments that are columns (or widening casts of
  columns) are read by the kernel; other expressions are evaluated by numpy
  and handed to the kernel as extra input columns.  Expressions that may
  raise (arithmetic) must see the *filtered* batch, so then the Filter stays
  in the vector prefix instead of being fused.
* Literals (and $n parameters) are kernel parameters, so the compiled
  module is cached by shape, not by value.
* A stream pipeline's last Project, when it only passes columns through and
  adds TUMBLE/HOP bounds (``time_windows.WindowBound``), is *peeled*: the
  kernel reads the columns below it, and a pane key is computed in the loop
  as a pane index (``Shape.panes``), only for the rows the filter keeps,
  instead of numpy computing window_start/window_end over the whole batch
  first.  The native table turns pane indexes back into bounds.
"""
from __future__ import annotations

import copy

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch
from splitstream.protocol import oids as type_oids

from ...execution import expr
from ...execution import operators
from ...execution.time_windows import SessionBound, WindowBound, same_pane, trace_bound
from .codegen import Shape

INTS = {type_oids.INT2: "i2", type_oids.INT4: "i4", type_oids.INT8: "i8"}
FLOATS = {type_oids.FLOAT4: "f4", type_oids.FLOAT8: "f8"}
NUMS = {**INTS, **FLOATS}
_RANK = {type_oids.INT2: 1, type_oids.INT4: 2, type_oids.INT8: 3}
CMP_OPS = {"=", "<>", "<", "<=", ">", ">="}
#: group keys the kernel reads as int64 microseconds
TIMES = {type_oids.TIMESTAMP: "i8", type_oids.TIMESTAMPTZ: "i8"}


class Unsupported(Exception):
    pass


class _NotPeelable(Exception):
    """An expression over the peeled Project the kernel cannot read below it."""


def _is_safe(e) -> bool:
    """Cannot raise on any row: columns, constants and widening casts."""
    if isinstance(e, expr.ColRef):
        return True
    if isinstance(e, expr.Cast):
        a = e.arg
        return a.oid in NUMS and e.oid in NUMS and _widening(a.oid, e.oid) and _is_safe(a)
    return False


def _widening(src: int, dst: int) -> bool:
    if src == dst:
        return True
    if src in INTS and dst in INTS:
        return _RANK[dst] >= _RANK[src]
    if src in INTS and dst in FLOATS:
        return True
    return src == type_oids.FLOAT4 and dst == type_oids.FLOAT8


def _const_expr(e) -> bool:
    if not e.is_const():
        return False
    return not any(isinstance(n, (expr.ColRef, expr.OuterRef)) for n in e.walk())


def _conjuncts(pred) -> list:
    if isinstance(pred, expr.And):
        out = []
        for a in pred.args:
            out += _conjuncts(a)
        return out
    return [pred]


class KernelPlan:
    def __init__(self) -> None:
        self.prefix_ops: list = []
        self.fused_filter: operators.Filter | None = None
        self.input_exprs: list = []       # per input slot: expression over the post-prefix batch
        self.input_dtypes: list[str] = []
        self._slot_of: dict = {}
        self.premask_exprs: list = []
        self.param_exprs: list = []       # (expr, domain)
        self.conj: list = []
        self.keys: list[int] = []
        self.derived: tuple = ()          # (key position, native key index, microseconds added)
        self.peeled: operators.Project | None = None    # the Project the kernel reads below (see module doc)
        self.panes: list = []             # per native key: None or (slide, origin, hop slot)
        self.pane_out: tuple = ()         # per native key: None or (slide, microseconds at pane 0)
        self.aggs: list = []
        self.unsafe_inputs = False
        self.shape: Shape | None = None

    @property
    def float_sum_slots(self) -> tuple[int, ...]:
        """Input slots of float8 values the kernel sums (sum/avg): the only
        inputs whose sums can overflow (n float4 or integer values cannot
        reach float8's range)."""
        return tuple(sorted({s for kind, s in self.aggs if kind == "sum_f" and self.input_dtypes[s] == "f8"}))

    def slot(self, e, oid: int) -> int:
        key = ("ref", e.idx) if isinstance(e, expr.ColRef) else ("expr", id(e))
        s = self._slot_of.get(key)
        if s is None:
            s = len(self.input_exprs)
            self._slot_of[key] = s
            self.input_exprs.append(e)
            self.input_dtypes.append(NUMS[oid] if oid in NUMS else TIMES[oid])
            if not _is_safe(e):
                self.unsafe_inputs = True
        return s

    def describe(self) -> str:
        parts = []
        if self.fused_filter is not None:
            parts.append(f"filter({len(self.conj)} compiled"
                         + (f", {len(self.premask_exprs)} vectorised" if self.premask_exprs else "") + ")")
        npanes = sum(p is not None for p in self.panes)
        parts.append(f"group({len(self.keys)} int key{'s' if len(self.keys) != 1 else ''}"   # timestamps as int64
                     + (f", {npanes} pane{'s' if npanes != 1 else ''} computed" if npanes else "")
                     + (f" + {len(self.derived)} derived" if self.derived else "") + ")")
        parts.append("aggs(" + ",".join(k for k, _ in self.aggs) + ")")
        if self.prefix_ops:
            parts.insert(0, "vector prefix(" + ",".join(type(o).__name__ for o in self.prefix_ops) + ")")
        return " -> ".join(parts)


def _leaf(plan: KernelPlan, e):
    """('c', slot, via) | ('p', idx) | None, plus the leaf's type oid."""
    if _const_expr(e):
        if e.oid not in NUMS:
            return None, None
        return ("const", e), e.oid
    if isinstance(e, expr.ColRef) and e.oid in NUMS:
        return ("c", plan.slot(e, e.oid), None), e.oid
    if isinstance(e, expr.Cast) and isinstance(e.arg, expr.ColRef) and e.arg.oid in NUMS and e.oid in NUMS \
            and _widening(e.arg.oid, e.oid):
        via = "f4" if (e.oid == type_oids.FLOAT4 and e.arg.oid in INTS) else None
        return ("c", plan.slot(e.arg, e.arg.oid), via), e.oid
    return None, None


def _try_conjunct(plan: KernelPlan, c) -> bool:
    if not isinstance(c, expr.Compare) or c.op not in CMP_OPS:
        return False
    saved = (list(plan.input_exprs), list(plan.input_dtypes), dict(plan._slot_of), plan.unsafe_inputs)
    (left, lo), (right, ro) = _leaf(plan, c.left), _leaf(plan, c.right)
    if left is None or right is None or (left[0] == "const" and right[0] == "const"):
        plan.input_exprs, plan.input_dtypes, plan._slot_of, plan.unsafe_inputs = saved
        return False
    domain = "f" if (lo in FLOATS or ro in FLOATS) else "i"
    leaves = []
    for leaf in (left, right):
        if leaf[0] == "const":
            plan.param_exprs.append((leaf[1], domain))
            leaves.append(("p", len(plan.param_exprs) - 1))
        else:
            leaves.append(leaf)
    plan.conj.append((c.op, leaves[0], leaves[1], domain))
    return True


def _input_for(plan: KernelPlan, e, want_oid: int, exact: bool) -> int:
    """Input slot delivering ``e``; ``exact`` demands the slot's type == want_oid."""
    if isinstance(e, expr.ColRef) and e.oid in NUMS:
        return plan.slot(e, e.oid)
    if not exact and isinstance(e, expr.Cast) and isinstance(e.arg, expr.ColRef) and e.arg.oid in NUMS \
            and _widening(e.arg.oid, e.oid) and not (e.oid == type_oids.FLOAT4 and e.arg.oid in INTS):
        return plan.slot(e.arg, e.arg.oid)
    if want_oid not in NUMS:
        raise Unsupported(f"expression of type {want_oid}")
    return plan.slot(e, want_oid)


def analyse(ops: list, agg) -> KernelPlan:
    """ops: the streaming operators below ``agg`` (bottom-up).  Tries to
    peel the last Project first (see the module doc), else compiles below
    the whole prefix."""
    proj = _peelable(ops)
    if proj is not None:
        try:
            return _analyse(ops, agg, proj)
        except (_NotPeelable, Unsupported):
            pass
    return _analyse(ops, agg, None)


def _peelable(ops: list) -> "operators.Project | None":
    """The Project just below the trailing Filter (or last), if it only passes
    columns through and adds TUMBLE/HOP bounds over columns."""
    k = len(ops) - 1 - (1 if ops and isinstance(ops[-1], operators.Filter) else 0)
    if k < 0 or type(ops[k]) is not operators.Project:
        return None
    for e in ops[k].exprs:
        if isinstance(e, WindowBound):
            if not isinstance(e.ts, expr.ColRef) or e.ts.oid not in TIMES:
                return None
            if e.hop is not None and (not isinstance(e.hop, expr.ColRef) or e.hop.oid not in INTS):
                return None
        elif not isinstance(e, expr.ColRef):
            return None
    return ops[k]


def _below(e, proj):
    """``e`` (over ``proj``'s output) over ``proj``'s input, for the shapes the
    kernel reads: a column, a widening cast of one, a constant, or a pane bound."""
    if proj is None or _const_expr(e):
        return e
    if isinstance(e, expr.ColRef):
        return proj.exprs[e.idx]
    if isinstance(e, expr.Cast) and isinstance(e.arg, expr.ColRef):
        arg = proj.exprs[e.arg.idx]
        if isinstance(arg, expr.ColRef):
            out = copy.copy(e)
            out.arg = arg
            return out
    if isinstance(e, expr.Compare):
        out = copy.copy(e)
        out.left, out.right = _below(e.left, proj), _below(e.right, proj)
        return out
    raise _NotPeelable(repr(e))


def _key_slot(plan: KernelPlan, k, proj) -> int:
    """Input slot of grouping key ``k``; a pane bound below a peeled Project
    becomes a pane index computed by the kernel."""
    b = _below(k, proj)
    if proj is not None and isinstance(b, WindowBound):
        hop = -1 if b.hop is None else plan.slot(b.hop, b.hop.oid)
        plan.panes.append((b.slide_us, b.origin_us, hop))
        plan.pane_out += ((b.slide_us, b.origin_us + b.end_offset_us),)
        return plan.slot(b.ts, b.ts.oid)
    plan.panes.append(None)
    plan.pane_out += (None,)
    if proj is not None and not isinstance(b, expr.ColRef):
        raise _NotPeelable(repr(k))
    return plan.slot(b, b.oid) if b.oid in TIMES else _input_for(plan, b, b.oid, exact=False)


def _analyse(ops: list, agg, proj) -> KernelPlan:
    plan = KernelPlan()
    plan.peeled = proj
    if agg.grouping_sets is not None:
        raise Unsupported("GROUPING SETS")
    if any(isinstance(trace_bound(k, ops), SessionBound) for k in agg.keys):
        raise Unsupported("SESSION windows are merged on the vector path")
    plan.derived = _derived_keys(ops, agg)
    derived = {pos for pos, _b, _o in plan.derived}
    keys = [k for i, k in enumerate(agg.keys) if i not in derived]
    if len(keys) > 2:
        raise Unsupported(f"{len(keys)} grouping keys (at most 2 compile)")
    for k in keys:
        if k.oid not in INTS and k.oid not in TIMES:
            raise Unsupported(f"grouping key of type {sqltypes.type_name(k.oid)}")
    for a in agg.aggs:
        if a.distinct or a.order_key is not None or a.filter is not None:
            raise Unsupported(f"{a.func}({'DISTINCT ' if a.distinct else ''}...) with DISTINCT/ORDER BY/FILTER")
        if a.func not in ("count", "sum", "avg", "min", "max"):
            raise Unsupported(f"aggregate {a.func}")
        if not a.star and (not a.arg_oids or a.arg_oids[0] not in NUMS or len(a.args) != 1):
            raise Unsupported(f"{a.func} over {sqltypes.type_name(a.arg_oids[0]) if a.arg_oids else '?'}")
    for op in ops:
        if not getattr(op, "streaming", False) and not isinstance(op, operators.HashJoin):
            raise Unsupported(f"operator {type(op).__name__}")

    # keys and aggregate inputs
    plan.keys = [_key_slot(plan, k, proj) for k in keys]
    for a in agg.aggs:
        if a.star:
            plan.aggs.append(("star", -1))
            continue
        oid = a.arg_oids[0]
        arg = _below(a.args[0], proj)
        if a.func == "count":
            plan.aggs.append(("count", _input_for(plan, arg, oid, exact=False)))
        elif a.func in ("sum", "avg"):
            kind = "sum_f" if oid in FLOATS else ("sum_128" if oid == type_oids.INT8 else "sum_i")
            if oid not in (type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.FLOAT4, type_oids.FLOAT8):
                raise Unsupported(f"{a.func} over oid {oid}")
            plan.aggs.append((kind, _input_for(plan, arg, oid, exact=(kind != "sum_f"))))
        else:
            plan.aggs.append((a.func, _input_for(plan, arg, oid, exact=True)))

    # fuse the trailing filter unless an input expression could raise on rows it removes
    prefix = list(ops)
    if prefix and isinstance(prefix[-1], operators.Filter) and not plan.unsafe_inputs:
        flt = prefix.pop()
        plan.fused_filter = flt
        terms = [_below(c, proj) for c in _conjuncts(flt.pred)]
        for c in terms:
            if not _try_conjunct(plan, c):
                plan.premask_exprs.append(c)
        if plan.conj and any(operators.costly_term(c) for c in plan.premask_exprs):
            # a call must not see a row a compiled term rejects (the vector Filter's
            # conjunct_mask narrows first): the premask then evaluates every term
            plan.premask_exprs = sorted(terms, key=operators.costly_term)
    if proj is not None:
        if prefix[-1] is not proj:
            raise _NotPeelable("a filter that stays in the vector prefix reads the Project")
        prefix.pop()
    plan.prefix_ops = prefix
    plan.shape = Shape(inputs=tuple(plan.input_dtypes), conj=tuple(plan.conj), nparams=len(plan.param_exprs),
                       keys=tuple(plan.keys), aggs=tuple(plan.aggs), nullable=(False,) * len(plan.input_dtypes),
                       premask=bool(plan.premask_exprs),
                       panes=tuple(plan.panes) if any(p is not None for p in plan.panes) else ())
    return plan


def _derived_keys(ops: list, agg) -> tuple:
    """Group keys the kernel need not hash: a pane's ``window_end`` next to its
    ``window_start`` (the same pane plus a constant).  Each as (its position
    among the keys, the native key it derives from, the microseconds to add);
    the native table adds them back when it hands its groups over."""
    bounds = [trace_bound(k, ops) for k in agg.keys]
    out: list[tuple[int, int, int]] = []
    native: list[int] = []                  # positions of the keys the kernel keeps, in order
    for i, b in enumerate(bounds):
        base = next((j for j in native if isinstance(b, WindowBound) and isinstance(bounds[j], WindowBound)
                     and same_pane(b, bounds[j])), None)   # type: ignore[arg-type]
        if base is None:
            native.append(i)
        else:
            out.append((i, native.index(base), b.end_offset_us - bounds[base].end_offset_us))  # type: ignore[union-attr]
    return tuple(out)


def eval_param(e, domain: str, ctx):
    """A literal's value for the kernel: int64, double, or None (SQL NULL)."""
    c = e.eval(Batch([], 1), ctx)
    if c.nulls is not None and c.nulls[0]:
        return None
    v = c.data[0]
    if domain == "i":
        return int(v)
    return float(v)
