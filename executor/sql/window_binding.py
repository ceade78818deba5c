"""Binding of window function calls (``f(...) OVER (...)``): the planner's half
of windows.  The operator that computes them, :class:`WindowOp`, and the
plan data it reads, :class:`WinSpec`, live in ``execution/window.py``."""
from __future__ import annotations

from sqlglot import exp

from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, UNDEFINED_OBJECT, WINDOWING_ERROR, WRONG_OBJECT_TYPE, PgError,
)

from ..execution import combine, expr
from ..execution.aggregates import AGGREGATES, AggSpec
from ..execution import json_values
from ..execution.json_values import JSON_AGGREGATES
from ..execution.window import WinSpec
from ..execution import signatures
from ..execution import functions
from ..execution.ordered_set import HYPOTHETICAL
from ..execution.proc_catalog import WINDOW_SIGNATURES
from .binder import ORDERED_SET_NAMES, call_modifier, func_args, func_name, not_an_aggregate
from .error_positions import call_position
from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.sqltypes import format_type


def bind_window(planner, node: exp.Window, binder, specs: list, base_width: int,
                named: list | None = None, input_op=None) -> expr.Expr:
    """``input_op``: the plan whose rows the window reads (combine() traces
    its argument to a continuous view's aggregate column there)."""
    node = _resolve_named(node, named or [])
    fn_node = node.this
    call = fn_node.this if isinstance(fn_node, exp.Filter) else fn_node
    if not isinstance(call, exp.WithinGroup):
        _check_window_call(func_name(call), call, binder, filtered=call is not fn_node)
    if isinstance(fn_node, exp.Filter):
        fn_node = _filter_into_argument(fn_node)
    if isinstance(fn_node, exp.WithinGroup):
        raise PgError(FEATURE_NOT_SUPPORTED, f"OVER is not supported for ordered-set aggregate {func_name(fn_node.this)}")
    name = func_name(fn_node)
    # window function arguments are bound in the window's input scope
    inner = binder
    args = [inner.bind(a) for a in func_args(fn_node) if not isinstance(a, exp.Star)]
    partition = [inner.bind(p) for p in (node.args.get("partition_by") or [])]
    order = []
    o = node.args.get("order")
    if o is not None:
        for ob in o.expressions:
            order.append((inner.bind(ob.this), bool(ob.args.get("desc")), ob.args.get("nulls_first")))
    frame = _frame(planner, inner, node.args.get("spec"), order)
    agg = None
    if name in ("row_number", "rank", "dense_rank", "ntile", "percent_rank", "cume_dist"):
        oid = {"percent_rank": type_oids.FLOAT8, "cume_dist": type_oids.FLOAT8, "row_number": type_oids.INT8, "rank": type_oids.INT8, "dense_rank": type_oids.INT8, "ntile": type_oids.INT4}[name]
    elif name in ("lag", "lead", "first_value", "last_value", "nth_value"):
        oid = _value_type(planner, name, args)
        if len(args) > 1:
            args[1] = planner.coerce(args[1], type_oids.INT4)
    else:
        if name not in AGGREGATES:
            raise signatures.undefined(name, [a.oid for a in args])
        if name == "combine":
            _check_combine_frame(frame)
        star = not args
        if name in ("sum", "avg") and args and args[0].oid == type_oids.UNKNOWN:
            args[0] = planner.coerce(args[0], type_oids.NUMERIC)
        if name in ("min", "max") and args and args[0].oid in (type_oids.VARCHAR, type_oids.NAME):
            args[0] = planner.coerce(args[0], type_oids.TEXT)      # min(text): there is no min(varchar)
        arg_oids = [a.oid for a in args] or [type_oids.INT8]
        if name in JSON_AGGREGATES:         # the frame's rows as JSON texts, as in grouped aggregation
            args = json_values.aggregate_inputs(args)
        agg = AggSpec(name, args, arg_oids, star=star)
        oid = agg.oid
        if name == "combine":
            if len(args) != 1:
                raise combine.wrong_arity(len(args))
            if input_op is None:
                raise combine.invalid_expression()
            planner.check_combine(agg, input_op)
    specs.append(WinSpec(name, args, partition, order, frame, oid, agg))
    return expr.ColRef(base_width + len(specs) - 1, oid, name)


def _unmodified(a: exp.Expr) -> exp.Expr:
    """A call's argument without the DISTINCT / ORDER BY written with it."""
    while isinstance(a, (exp.Distinct, exp.Order)):
        a = a.expressions[0] if isinstance(a, exp.Distinct) else a.this
    return a


def _check_window_call(name: str, call: exp.Func, binder, filtered: bool) -> None:
    """What PostgreSQL refuses before it looks at the window: an
    ordered-set aggregate has no overload without WITHIN GROUP (42883),
    rank(1) is the hypothetical-set aggregate, a plain function cannot take
    DISTINCT, ORDER BY, FILTER or OVER (42809), a window function called
    with arguments it has no overload for is 42883, and DISTINCT and ORDER
    BY are not implemented for window aggregates (0A000)."""
    args = [a for a in func_args(call) if not isinstance(a, exp.Star)]
    modifier = call_modifier(call)
    plain = [_unmodified(a) for a in args]
    if name in ORDERED_SET_NAMES - HYPOTHETICAL:
        raise signatures.undefined(name, [binder.bind(a).oid for a in plain])
    if name in HYPOTHETICAL and args:
        raise PgError(WRONG_OBJECT_TYPE, f"WITHIN GROUP is required for ordered-set aggregate {name}",
                      position=call_position(call))
    if name not in AGGREGATES and name not in WINDOW_SIGNATURES and name in functions.REGISTRY:
        what = modifier or ("FILTER" if filtered else None)
        raise not_an_aggregate(what, call) if what else PgError(
            WRONG_OBJECT_TYPE, f"OVER specified, but {name} is not a window function nor an aggregate function",
            position=call_position(call))
    if name in WINDOW_SIGNATURES and name not in AGGREGATES and (modifier or filtered) and \
            all(s.expand(len(plain)) is None for s in signatures.parse(WINDOW_SIGNATURES[name])):
        raise signatures.undefined(name, [binder.bind(a).oid for a in plain])
    if modifier == "DISTINCT":
        raise PgError(FEATURE_NOT_SUPPORTED, "DISTINCT is not implemented for window functions", position=call_position(call))
    if filtered and name in WINDOW_SIGNATURES and name not in AGGREGATES:
        raise PgError(FEATURE_NOT_SUPPORTED, "FILTER is not implemented for non-aggregate window functions",
                      position=call_position(call))
    if modifier == "ORDER BY":
        raise PgError(FEATURE_NOT_SUPPORTED, "aggregate ORDER BY is not implemented for window functions",
                      position=call_position(call))


def _value_type(planner, name: str, args: list) -> int:
    """The result type of a value window function, as PostgreSQL 15 declares
    them: lag/lead(anycompatible, int, anycompatible) take the common type
    of the value and the default (lead(int2, 2, -1) is int4), the others
    anyelement, which an unknown literal cannot fill (42804)."""
    if name in ("lag", "lead") and len(args) > 2:
        known = [a.oid for a in (args[0], args[2]) if a.oid != type_oids.UNKNOWN]
        oid = known[0] if known else type_oids.TEXT
        for other in known[1:]:
            try:
                oid = sqltypes.common_type(oid, other, name)
            except PgError:
                raise signatures.undefined(name, [a.oid for a in args]) from None
        args[0], args[2] = planner.coerce(args[0], oid), planner.coerce(args[2], oid)
        return oid
    if args and args[0].oid == type_oids.UNKNOWN:
        raise PgError(DATATYPE_MISMATCH, "could not determine polymorphic type because input has type unknown")
    return args[0].oid if args else type_oids.UNKNOWN


FRAME_ERROR = WINDOWING_ERROR

_COMBINE_FRAME_HINT = ("combine() merges the view's states from the partition's first row: use the default frame, "
                       "ROWS/RANGE/GROUPS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW, or "
                       "... AND UNBOUNDED FOLLOWING (the whole partition), with no EXCLUDE.")


def _check_combine_frame(frame) -> None:
    """combine() OVER frames that start at the partition's first row (merged
    as a prefix scan, ``execution/combine.frame_combine``); others are
    refused rather than computed some other way."""
    if frame is None:
        return
    _kind, start, end, exclude = frame
    if start[:2] != ("unbounded", "PRECEDING") or exclude is not None or \
            not (end[0] == "current" or end[:2] == ("unbounded", "FOLLOWING")):
        raise PgError(FEATURE_NOT_SUPPORTED, "combine() is not supported as a window function over this frame",
                      hint=_COMBINE_FRAME_HINT)

#: aggregates whose result ignores NULL inputs: a FILTER is a CASE on the argument
_NULL_IGNORING = frozenset({"count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every", "string_agg",
                            "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop"})


def _filter_into_argument(node: exp.Filter) -> exp.Expr:
    """``agg(x) FILTER (WHERE c) OVER ...`` as ``agg(CASE WHEN c THEN x END)``:
    the same rows reach an aggregate that skips NULLs (``count(*)`` counts
    ``CASE WHEN c THEN 1 END``); others are refused rather than ignored."""
    call = node.this.copy()
    name = func_name(call)
    args = func_args(call)
    if name not in _NULL_IGNORING or not args:
        raise PgError(FEATURE_NOT_SUPPORTED, f"FILTER is not implemented for the window function {name}",
                      hint="Move the condition into the argument: f(CASE WHEN cond THEN x END) OVER (...).")
    cond = node.expression.this
    first = args[0]
    value = exp.Literal.number(1) if isinstance(first, exp.Star) else first
    first.replace(exp.Case(ifs=[exp.If(this=cond.copy(), true=value.copy())]))
    return call


def _resolve_named(node: exp.Window, named: list) -> exp.Window:
    """``OVER w`` / ``OVER (w ORDER BY ...)``: the window clause's definition
    merged in, as PostgreSQL's transformWindowDefinitions does (the reference
    gives the partitioning, its ordering unless it has none, and with
    ``OVER w`` also its frame)."""
    ref = node.args.get("alias")
    if ref is None or node.args.get("over") is None:
        return node
    name = ref.name
    base = next((w for w in named if w.this.name == name), None)
    if base is None:
        raise PgError(UNDEFINED_OBJECT, f'window "{name}" does not exist')
    if node.args.get("partition_by"):
        raise PgError(WINDOWING_ERROR, f'cannot override PARTITION BY clause of window "{name}"')
    if node.args.get("order") is not None and base.args.get("order") is not None:
        raise PgError(WINDOWING_ERROR, f'cannot override ORDER BY clause of window "{name}"')
    copy_frame = not node.args.get("spec") and not node.args.get("order")
    if base.args.get("spec") is not None and not copy_frame:
        raise PgError(WINDOWING_ERROR, f'cannot copy window "{name}" because it has a frame clause')
    merged = node.copy()
    merged.set("alias", None)
    merged.set("partition_by", [p.copy() for p in base.args.get("partition_by") or []])
    if base.args.get("order") is not None:
        merged.set("order", base.args["order"].copy())
    if copy_frame and base.args.get("spec") is not None:
        merged.set("spec", base.args["spec"].copy())
    return merged
_EXCLUDE = {"CURRENT ROW": "current", "CURRENT_ROW": "current", "GROUP": "group", "TIES": "ties",
            "NO OTHERS": None}


def _frame(planner, binder, spec, order: list):
    """(mode, start, end, exclude) of a frame clause, checked as PostgreSQL
    checks it; offsets are bound expressions, evaluated when the window runs."""
    if spec is None:
        return None
    kind = str(spec.args.get("kind") or "RANGE").upper()
    start = _bound(planner, binder, kind, spec.args.get("start"), spec.args.get("start_side"), order)
    end = _bound(planner, binder, kind, spec.args.get("end"), spec.args.get("end_side"), order) \
        if spec.args.get("end") is not None else ("current", "")
    if start[:2] == ("unbounded", "FOLLOWING"):
        raise PgError(FRAME_ERROR, "frame start cannot be UNBOUNDED FOLLOWING")
    if end[:2] == ("unbounded", "PRECEDING"):
        raise PgError(FRAME_ERROR, "frame end cannot be UNBOUNDED PRECEDING")
    if start[0] == "current" and end[:2] == ("offset", "PRECEDING"):
        raise PgError(FRAME_ERROR, "frame starting from current row cannot have preceding rows")
    if start[:2] == ("offset", "FOLLOWING") and (end[0] == "current" or end[:2] == ("offset", "PRECEDING")):
        raise PgError(FRAME_ERROR, "frame starting from following row cannot have preceding rows")
    exclude = spec.args.get("exclude")
    word = " ".join(str(exclude.name if hasattr(exclude, "name") else exclude).upper().split()) if exclude else "NO OTHERS"
    if word not in _EXCLUDE:
        raise PgError("42601", f"syntax error at or near \"{word}\"")
    return (kind, start, end, _EXCLUDE[word])


def _bound(planner, binder, kind: str, v, side, order: list):
    s = v.upper() if isinstance(v, str) else None
    side = (side or "").upper()
    if s == "UNBOUNDED":
        return ("unbounded", side)
    if s in ("CURRENT ROW", "CURRENT_ROW"):
        return ("current", "")
    off = binder.bind(v)
    if kind == "RANGE":
        if len(order) != 1:
            raise PgError(FRAME_ERROR, "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column")
        key = order[0][0].oid
        if key in (type_oids.DATE, type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
            off = planner.coerce(off, type_oids.INTERVAL)
        elif key in (type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.FLOAT4, type_oids.FLOAT8,
                     type_oids.NUMERIC):
            off = planner.coerce(off, type_oids.NUMERIC if key == type_oids.NUMERIC else
                                 type_oids.FLOAT8 if key in (type_oids.FLOAT4, type_oids.FLOAT8) else type_oids.INT8)
        else:
            raise PgError(FEATURE_NOT_SUPPORTED, "RANGE with offset PRECEDING/FOLLOWING is not supported for "
                          f"column type {format_type(key)}")
    else:
        if kind == "GROUPS" and not order:
            raise PgError(FRAME_ERROR, "GROUPS mode requires an ORDER BY clause")
        off = planner.coerce(off, type_oids.INT8)
    return ("offset", side, off)
