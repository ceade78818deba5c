"""One aggregate call to an ``AggSpec``: FILTER, DISTINCT, ORDER BY inside
the call, WITHIN GROUP (ordered-set aggregates), and argument typing.

Why a module of its own: sqlglot spells aggregate-call syntax several ways
(GroupConcat, Order nested in Distinct, ...); normalising those and
PostgreSQL's argument-type rules is separate from planning GROUP BY.
"""
from __future__ import annotations

import numpy as np
from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol.errors import (
    DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, GROUPING_ERROR, INVALID_COLUMN_REFERENCE, UNDEFINED_FUNCTION, PgError,
)

from ...execution import expr
from ...execution import combine
from ...execution import json_values
from ...execution.rows import RowCtor
from ...execution.aggregates import AggSpec, row_key
from ...execution.json_values import JSON_AGGREGATES
from ...execution.ordered_set import HYPOTHETICAL
from ...execution import signatures, sketches
from ...execution.proc_catalog import AGGREGATE_SIGNATURES
from ..binder import ExprBinder, Scope, func_args, func_name, is_aggregate_call
from ..error_positions import call_position, node_position
from ..dialect import DIALECT
from .base import PlannerBase
from ...execution.operators import _sort_key, sort_key_of


#: the aggregates PostgreSQL has for a row value (any type, or record)
_TAKE_RECORDS = frozenset({"count", "array_agg"})

#: ordered-set aggregates: how many direct arguments precede WITHIN GROUP
_ORDERED_SET = {"mode": 0, "percentile_cont": 1, "percentile_disc": 1}
_FLOAT8_ARRAY = type_oids.ARRAY_OF[type_oids.FLOAT8]


def _direct_value(e: expr.Expr):
    """An ordered-set aggregate's direct argument, computed once: it must not
    vary within a group, and here it may not vary at all."""
    if not e.is_const():
        raise PgError(FEATURE_NOT_SUPPORTED, "direct arguments of an ordered-set aggregate must be constants here",
                      hint="Compute the argument in a subquery or use a literal.")
    return e.eval(Batch([], 1), None).to_pylist()[0]


def _row_value(node, b: ExprBinder) -> expr.Expr | None:
    """``count([DISTINCT] (a, b))`` / ``ROW(a, b)``: the row as DISTINCT
    compares it (aggregates.row_key), of type record. A row value is never
    NULL, whatever its fields, so count counts every row; DISTINCT counts
    each combination once, NULL fields equal, as PostgreSQL's record
    comparison does. None for any other argument."""
    if isinstance(node, exp.Tuple) and len(node.expressions) > 1:
        fields = node.expressions
    elif isinstance(node, exp.Anonymous) and str(node.this).lower() == "row":
        fields = node.expressions
    else:
        return None
    bound = [b.bind(f) for f in fields]
    oids = [f.oid for f in bound]

    def impl(cols, n, ctx):
        data = np.empty(n, dtype=object)
        for i, values in enumerate(zip(*(c.to_pylist() for c in cols))):
            data[i] = row_key(values, oids)
        return Col(data, None, type_oids.RECORD)

    return expr.Func("row", impl, bound, type_oids.RECORD)


def _check_arity(fn: str, arg_oids: list[int], *, ordered_set: bool, direct: int = 0) -> None:
    """42883 for an aggregate called with an argument count it has no
    overload for; an ordered-set aggregate exists only with WITHIN GROUP
    and its own number of direct arguments (as PostgreSQL reports both)."""
    if (fn, len(arg_oids)) in sketches.REFUSED_OVERLOADS:
        raise PgError(FEATURE_NOT_SUPPORTED, f"{fn} with {len(arg_oids)} arguments is not supported",
                      hint=sketches.REFUSED_OVERLOADS[fn, len(arg_oids)])
    if (fn in _ORDERED_SET) != ordered_set or (ordered_set and (_ORDERED_SET[fn] != direct or len(arg_oids) != direct + 1)):
        raise signatures.undefined(fn, arg_oids)
    declared = AGGREGATE_SIGNATURES.get(fn)
    if declared is not None and all(s.expand(len(arg_oids)) is None for s in signatures.parse(declared)):
        raise signatures.undefined(fn, arg_oids)


def _no_within_group(node: exp.GroupConcat, b: ExprBinder) -> None:
    """``string_agg(x, ',') WITHIN GROUP (ORDER BY y)`` looks for a
    string_agg of three arguments, which does not exist (42883)."""
    order = node.this
    args = [order.this, node.args.get("separator")] + [o.this for o in order.expressions]
    raise signatures.undefined("string_agg", [b.bind(a).oid for a in args if a is not None])


def _check_distinct_order(order: exp.Order, args_nodes: list, b: ExprBinder) -> None:
    """``agg(DISTINCT x ORDER BY y)``: each ORDER BY expression must be one
    of the arguments (42P10 at the first that is not), as PostgreSQL's
    transformAggregateCall requires: the sort runs over the distinct values."""
    texts = {a.sql(DIALECT) for a in args_nodes}
    refs = {e.idx for e in map(b.bind, args_nodes) if type(e) is expr.ColRef}
    for o in order.expressions:
        if o.this.sql(DIALECT) in texts:
            continue
        e = b.bind(o.this)
        if type(e) is expr.ColRef and e.idx in refs:
            continue
        raise PgError(INVALID_COLUMN_REFERENCE, "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list",
                      position=node_position(o.this))


class AggCallPlanner(PlannerBase):
    """Binding of one aggregate call to an AggSpec."""

    def bind_agg(self, node, scope: Scope) -> AggSpec:
        filt = None
        order_key = None
        if isinstance(node, exp.Filter):
            fb = ExprBinder(self, scope, context="FILTER")
            filt = self.coerce(fb.bind(node.expression.this), type_oids.BOOL)
            node = node.this
        if isinstance(node, exp.WithinGroup):
            return self._bind_within_group(node, scope, filt)
        fn = func_name(node)
        b = ExprBinder(self, scope, context="aggregate function calls")
        distinct = False
        args_nodes = func_args(node)
        order_node = None
        if isinstance(node, exp.GroupConcat):
            if node.meta.get("within_group"):
                _no_within_group(node, b)
            this = node.this
            sep = node.args.get("separator")
            if isinstance(this, exp.Order):
                order_node = this
                order_key = self._agg_order(this, scope)
                this = this.this
            if isinstance(this, exp.Distinct):
                distinct = True
                this = this.expressions[0]
            args_nodes = [this] + ([sep] if sep is not None else [])
            fn = "string_agg"
        star = False
        if len(args_nodes) == 1 and isinstance(args_nodes[0], exp.Star):
            star = True
            args_nodes = []
        if args_nodes and isinstance(args_nodes[0], exp.Order) and isinstance(args_nodes[0].this, exp.Distinct):
            # agg(DISTINCT x ORDER BY y): sqlglot nests the DISTINCT inside the ORDER
            o = args_nodes[0].copy()
            inner_d = o.this
            o.set("this", inner_d.expressions[0])
            args_nodes = [exp.Distinct(expressions=[o] + list(inner_d.expressions[1:]))] + args_nodes[1:]
        if args_nodes and isinstance(args_nodes[0], exp.Distinct):
            distinct = True
            args_nodes = list(args_nodes[0].expressions) + args_nodes[1:]
        if args_nodes and isinstance(args_nodes[0], exp.Order):
            order_node = args_nodes[0]
            order_key = self._agg_order(args_nodes[0], scope)
            args_nodes = [args_nodes[0].this] + args_nodes[1:]
        elif len(args_nodes) > 1 and isinstance(args_nodes[-1], exp.Order):
            # f(a, b ORDER BY c): the ORDER BY follows the last argument; sorted on hidden keys below
            order_node = args_nodes[-1]
            args_nodes = args_nodes[:-1] + [order_node.this]
        for a in args_nodes:
            if self._contains_agg(a):
                inner = next((n for n in a.walk() if is_aggregate_call(n)), a)
                raise PgError(GROUPING_ERROR, "aggregate function calls cannot be nested", position=call_position(inner))
        args = [(fn in JSON_AGGREGATES and b.whole_row(a)) or (fn == "count" and _row_value(a, b))
                or b.bind(a) for a in args_nodes]
        if fn == "count" and not args:
            star = True
        if fn == "combine" and len(args) != 1:
            raise combine.wrong_arity(len(args))
        _check_arity(fn, [a.oid for a in args], ordered_set=False)
        if any(type(a) is RowCtor for a in args) and fn not in _TAKE_RECORDS:
            raise signatures.undefined(fn, [a.oid for a in args])      # min(record), sum(record): 42883
        args = self._agg_arg_types(fn, args)
        if distinct and order_node is not None:
            _check_distinct_order(order_node, args_nodes, b)
        arg_oids = [type_oids.RECORD if isinstance(a, json_values.RowObject) else a.oid for a in args] or [type_oids.INT8]
        if distinct and type_oids.JSON in arg_oids:
            raise PgError(UNDEFINED_FUNCTION, "could not identify an equality operator for type json")
        if fn in JSON_AGGREGATES:       # the state keeps each row's JSON text
            args = json_values.aggregate_inputs(args)
            if distinct and order_node is None:     # DISTINCT sorts its values, as PostgreSQL's does
                order_node = exp.Order(this=args_nodes[-1], expressions=[exp.Ordered(this=args_nodes[-1].copy())])
        if order_node is not None and (fn in JSON_AGGREGATES or order_key is None or not (
                len(order_node.expressions) == 1 and args_nodes
                and order_node.expressions[0].this.sql(DIALECT) == args_nodes[0].sql(DIALECT))):
            # ORDER BY other expressions: carry the keys as hidden trailing arguments
            order_key, extra = self._agg_order_keys(order_node, scope, len(args))
            args = args + extra
        spec = AggSpec(fn, args, arg_oids, distinct=distinct, filter_=filt,
                       order_key=order_key, star=star)
        if spec.oid == -1:
            raise signatures.undefined(fn, [a.oid for a in args])
        return spec

    def check_combine(self, spec: AggSpec, op) -> None:
        """``combine(col)`` over ``op``'s rows: ``col`` must be an aggregate
        column of a continuous view read here; the view's aggregate goes to
        ``spec.combined`` and the view is read with its states."""
        arg = spec.args[0]
        if type(arg) is not expr.ColRef or not 0 <= arg.idx < len(op.out):
            raise combine.invalid_expression()
        oc = combine.trace_column(op, arg.idx, self._column_origin)
        rel = self.state.rels.get(oc.table_oid) if oc is not None else None
        if rel is None:
            raise combine.invalid_expression()
        if not (rel.kind == "v" and rel.continuous):
            raise combine.not_a_view(rel.name)
        view_spec = self.engine.streams.combine_source(rel, oc.attnum, self)
        if view_spec is None or spec.distinct or spec.filter is not None:
            raise combine.invalid_expression()
        spec.combined = view_spec       # type: ignore[attr-defined]

    def _column_origin(self, op, i: int):
        """``op``'s column ``i`` if it names a table, stream or continuous
        view column; a plain view's column is followed into its query."""
        oc = op.out[i]
        rel = self.state.rels.get(oc.table_oid) if oc.table_oid else None
        if rel is None or (rel.kind == "v" and not rel.continuous):
            return None
        return oc

    def _bind_within_group(self, node: exp.WithinGroup, scope: Scope, filt) -> AggSpec:
        """An ordered-set aggregate, ``f(fraction) WITHIN GROUP (ORDER BY x)``,
        or a hypothetical-set one, ``rank(1, 'a') WITHIN GROUP (ORDER BY x, y)``."""
        inner = node.this
        fn = func_name(inner)
        b = ExprBinder(self, scope, context="aggregate")
        direct = [b.bind(a) for a in func_args(inner)]
        keys = list(node.expression.expressions)
        ordered = [b.bind(o.this) for o in keys]
        if fn in HYPOTHETICAL:
            return self._bind_hypothetical(fn, direct, ordered, keys, filt)
        if fn == "first_values":
            return self._bind_first_values(direct, ordered, keys, filt)
        _check_arity(fn, [d.oid for d in direct] + [ordered[0].oid] + [type_oids.UNKNOWN] * (len(keys) - 1),
                     ordered_set=True, direct=len(direct))
        arg = ordered[0]
        fraction = None
        if direct:
            many = direct[0].oid in type_oids.ELEMENT_OF
            fraction = _direct_value(self.coerce(direct[0], _FLOAT8_ARRAY if many else type_oids.FLOAT8))
        if fn == "percentile_cont" and arg.oid != type_oids.INTERVAL:
            if not sqltypes.is_numeric(arg.oid) and arg.oid != type_oids.UNKNOWN:
                raise signatures.undefined(fn, [direct[0].oid, arg.oid])
            arg = self.coerce(arg, type_oids.FLOAT8)
        spec = AggSpec(fn, [arg], [arg.oid], filter_=filt, fraction=fraction)
        if direct and direct[0].oid in type_oids.ELEMENT_OF:
            spec.oid = type_oids.ARRAY_OF.get(spec.oid, spec.oid)
        spec.descending = bool(keys[0].args.get("desc"))
        return spec

    def _bind_first_values(self, direct: list[expr.Expr], ordered: list[expr.Expr], keys: list, filt) -> AggSpec:
        """PipelineDB's ``first_values(n) WITHIN GROUP (ORDER BY x)``: the
        state of ``first_values(n, x)``, kept in the ORDER BY's direction."""
        oids = [a.oid for a in direct + ordered]
        if len(direct) != 1 or direct[0].oid not in (type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.UNKNOWN):
            raise signatures.undefined("first_values", oids)
        if len(ordered) > 1:
            raise PgError(FEATURE_NOT_SUPPORTED, "first_values(n) WITHIN GROUP (ORDER BY x, y, ...) is not supported",
                          hint="Order by one expression: first_values(n) WITHIN GROUP (ORDER BY x).")
        n = self.coerce(direct[0], type_oids.INT4)
        arg = self.coerce(ordered[0], type_oids.TEXT) if ordered[0].oid == type_oids.UNKNOWN else ordered[0]
        spec = AggSpec("first_values", [n, arg], [type_oids.INT4, arg.oid], filter_=filt)
        if spec.oid == -1:
            raise signatures.undefined("first_values", oids)
        spec.descending = bool(keys[0].args.get("desc"))
        spec.nulls_first = keys[0].args.get("nulls_first")
        return spec

    def _bind_hypothetical(self, fn: str, direct: list[expr.Expr], ordered: list[expr.Expr], keys: list,
                           filt) -> AggSpec:
        """rank & co.: each direct argument and its ORDER BY column take one
        common type; the direct ones are the hypothetical row."""
        if len(direct) != len(ordered):
            raise PgError(UNDEFINED_FUNCTION, f"function {fn}({signatures.type_words([a.oid for a in direct + ordered])})"
                          " does not exist",
                          hint=f"To use the hypothetical-set aggregate {fn}, the number of hypothetical direct arguments"
                               f" (here {len(direct)}) must match the number of ordering columns (here {len(ordered)}).")
        values, args = [], []
        for d, o in zip(direct, ordered):
            common = sqltypes.common_type(d.oid, o.oid)
            common = type_oids.TEXT if common == type_oids.UNKNOWN else common
            values.append(_direct_value(self.coerce(d, common)))
            args.append(self.coerce(o, common))
        spec = AggSpec(fn, args, [a.oid for a in args], filter_=filt)
        spec.hypothetical = tuple(values)
        spec.sort = [(bool(k.args.get("desc")), k.args.get("nulls_first")) for k in keys]
        spec.sort_key = _sort_key
        return spec

    def _agg_arg_types(self, fn: str, args: list[expr.Expr]) -> list[expr.Expr]:
        """PostgreSQL's argument typing for aggregates: unknown literals read
        as text, where that is ambiguous or has no such aggregate the error
        PostgreSQL gives, and the casts its aggregate signatures imply."""
        if fn in ("json_agg", "jsonb_agg") and args and args[0].oid == type_oids.UNKNOWN:
            raise PgError(DATATYPE_MISMATCH, "could not determine polymorphic type because input has type unknown")
        if fn in ("sum", "avg", "array_agg") and args and args[0].oid == type_oids.UNKNOWN:
            # array_agg(anynonarray) and array_agg(anyarray) both fit a bare literal
            raise PgError("42725", f"function {fn}(unknown) is not unique",
                          hint="Could not choose a best candidate function. You might need to add explicit type casts.")
        args = [self.coerce(a, type_oids.TEXT) if a.oid == type_oids.UNKNOWN else a for a in args]
        if fn in ("sum", "avg") and args and args[0].oid in (type_oids.TEXT, type_oids.VARCHAR, type_oids.BPCHAR, type_oids.BOOL):
            raise signatures.undefined(fn, [a.oid for a in args])
        if fn in ("stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop") and args and args[0].oid == type_oids.FLOAT4:
            args = [self.coerce(args[0], type_oids.FLOAT8)]
        if fn in ("min", "max") and args and args[0].oid in (type_oids.VARCHAR, type_oids.NAME, type_oids.CHAR):
            args = [self.coerce(args[0], type_oids.TEXT)]      # there is min(text), no min(varchar) nor min("char")
        if fn in ("bool_and", "bool_or", "every") and args:
            args = [self.coerce(args[0], type_oids.BOOL)]
        if fn == "string_agg" and len(args) == 2 and args[0].oid == type_oids.BYTEA:   # string_agg(bytea, bytea)
            args = [args[0], self.coerce(args[1], type_oids.BYTEA)]
        elif fn == "string_agg" and len(args) == 2:
            # string_agg(text, text): a char(n) value loses its padding on the way, as its cast to text does
            keep = sqltypes.is_string(args[0].oid) and args[0].oid != type_oids.BPCHAR
            args = [args[0] if keep else self.coerce(args[0], type_oids.TEXT), self.coerce(args[1], type_oids.TEXT)]
        return args

    def _agg_order_keys(self, order: exp.Order, scope, first: int):
        """Sorter over list-state rows whose sort keys sit at positions first, first+1, ..."""
        b = ExprBinder(self, scope, context="aggregate ORDER BY")
        keys = [(b.bind(o.this), bool(o.args.get("desc")), o.args.get("nulls_first")) for o in order.expressions]
        extra = [self.coerce(k, type_oids.TEXT) if k.oid == type_oids.UNKNOWN else k for k, _, _ in keys]

        def sorter(rows):
            rows = list(rows)
            for j in range(len(keys) - 1, -1, -1):  # stable sorts, least significant key first
                _, desc, nf = keys[j]
                pos = first + j
                nulls_first = desc if nf is None else bool(nf)
                nn = [r for r in rows if r[pos] is not None]
                nulls = [r for r in rows if r[pos] is None]
                kf = sort_key_of(keys[j][0].oid)
                nn.sort(key=lambda r: kf(r[pos]), reverse=desc)
                rows = (nulls + nn) if nulls_first else (nn + nulls)
            return rows

        return sorter, extra

    def _agg_order(self, order: exp.Order, scope):
        b = ExprBinder(self, scope, context="aggregate ORDER BY")
        keys = [(b.bind(o.this), bool(o.args.get("desc")), o.args.get("nulls_first")) for o in order.expressions]
        # rows in list state are tuples of agg args; we sort by the first arg (the common case)
        desc = keys[0][1]
        kf = sort_key_of(keys[0][0].oid)

        def sorter(rows):
            nn = [r for r in rows if r[0] is not None]
            nulls = [r for r in rows if r[0] is None]
            nn.sort(key=lambda r: kf(r[0]), reverse=desc)
            return (nulls + nn) if desc else (nn + nulls)

        return sorter
