"""Binding of window function calls (``f(...) OVER (...)``): the planner's half
of windows.  The operator that computes them, :class:`WindowOp`, and the
plan data it reads, :class:`WinSpec`, live in ``execution/window.py``."""
from __future__ import annotations

from sqlglot import exp

from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError

from ..execution import expr
from ..execution.aggregates import AGGREGATES, AggSpec
from ..execution.window import WinSpec
from ..execution import signatures
from .binder import func_args, func_name


def bind_window(planner, node: exp.Window, binder, specs: list, base_width: int) -> expr.Expr:
    fn_node = node.this
    if isinstance(fn_node, exp.Filter):
        # accepted and ignored would be a wrong answer: refuse until FILTER is applied
        raise PgError(FEATURE_NOT_SUPPORTED, "FILTER is not implemented for window functions",
                      hint="Move the condition into the argument: sum(CASE WHEN cond THEN x END) OVER (...).")
    name = func_name(fn_node)
    # window function arguments are bound in the window's input scope
    inner = binder
    args = [inner.bind(a) for a in func_args(fn_node) if not isinstance(a, exp.Star)]
    if args and isinstance(func_args(fn_node)[0], exp.Distinct):
        raise PgError(FEATURE_NOT_SUPPORTED, "DISTINCT is not implemented for window functions")
    partition = [inner.bind(p) for p in (node.args.get("partition_by") or [])]
    order = []
    o = node.args.get("order")
    if o is not None:
        for ob in o.expressions:
            order.append((inner.bind(ob.this), bool(ob.args.get("desc")), ob.args.get("nulls_first")))
    spec = node.args.get("spec")
    frame = None
    if spec is not None:
        frame = (str(spec.args.get("kind") or "RANGE").upper(), _bound(spec.args.get("start"), spec.args.get("start_side")),
                 _bound(spec.args.get("end"), spec.args.get("end_side")))
    agg = None
    if name in ("row_number", "rank", "dense_rank", "ntile", "percent_rank", "cume_dist"):
        oid = {"percent_rank": type_oids.FLOAT8, "cume_dist": type_oids.FLOAT8, "row_number": type_oids.INT8, "rank": type_oids.INT8, "dense_rank": type_oids.INT8, "ntile": type_oids.INT4}[name]
    elif name in ("lag", "lead", "first_value", "last_value", "nth_value"):
        oid = args[0].oid
        if len(args) > 1:
            args[1] = planner.coerce(args[1], type_oids.INT4)
        if len(args) > 2:
            args[2] = planner.coerce(args[2], oid)
    else:
        if name not in AGGREGATES:
            raise signatures.undefined(name, [a.oid for a in args])
        star = not args
        if name in ("sum", "avg") and args and args[0].oid == type_oids.UNKNOWN:
            args[0] = planner.coerce(args[0], type_oids.NUMERIC)
        agg = AggSpec(name, args, [a.oid for a in args] or [type_oids.INT8], star=star)
        oid = agg.oid
    specs.append(WinSpec(name, args, partition, order, frame, oid, agg))
    return expr.ColRef(base_width + len(specs) - 1, oid, name)


def _bound(v, side):
    if v is None:
        return None
    s = v if isinstance(v, str) else (v.name if hasattr(v, "name") else str(v))
    s = s.upper()
    side = (side or "").upper()
    if s == "UNBOUNDED":
        return ("unbounded", side)
    if s in ("CURRENT ROW", "CURRENT_ROW"):
        return ("current", "")
    try:
        return ("offset", side, int(v.this) if hasattr(v, "this") else int(s))
    except (TypeError, ValueError):
        return ("offset", side, int(str(v.this)))
