"""One aggregate call to an ``AggSpec``: FILTER, DISTINCT, ORDER BY inside
the call, WITHIN GROUP (ordered-set aggregates), and argument typing.

Why a module of its own: sqlglot spells aggregate-call syntax several ways
(GroupConcat, Order nested in Distinct, ...); normalising those and
PostgreSQL's argument-type rules is separate from planning GROUP BY.
"""
from __future__ import annotations

from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import GROUPING_ERROR, PgError

from ...execution import expr
from ...execution.aggregates import AggSpec
from ...execution import signatures
from ...execution.proc_catalog import AGGREGATE_SIGNATURES
from ..binder import ExprBinder, Scope, func_args, func_name
from ..dialect import DIALECT
from .base import PlannerBase
from ...execution.operators import _sort_key


#: ordered-set aggregates: how many direct arguments precede WITHIN GROUP
_ORDERED_SET = {"mode": 0, "percentile_cont": 1, "percentile_disc": 1}


def _check_arity(fn: str, arg_oids: list[int], *, ordered_set: bool, direct: int = 0) -> None:
    """42883 for an aggregate called with an argument count it has no
    overload for; an ordered-set aggregate exists only with WITHIN GROUP
    and its own number of direct arguments (as PostgreSQL reports both)."""
    if (fn in _ORDERED_SET) != ordered_set or (ordered_set and (_ORDERED_SET[fn] != direct or len(arg_oids) != direct + 1)):
        raise signatures.undefined(fn, arg_oids)
    declared = AGGREGATE_SIGNATURES.get(fn)
    if declared is not None and all(s.expand(len(arg_oids)) is None for s in signatures.parse(declared)):
        raise signatures.undefined(fn, arg_oids)


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
        for a in args_nodes:
            if self._contains_agg(a):
                raise PgError(GROUPING_ERROR, "aggregate function calls cannot be nested")
        args = [b.bind(a) for a in args_nodes]
        if fn == "count" and not args:
            star = True
        _check_arity(fn, [a.oid for a in args], ordered_set=False)
        args = self._agg_arg_types(fn, args)
        arg_oids = [a.oid for a in args] or [type_oids.INT8]
        if order_node is not None and not (len(order_node.expressions) == 1 and args_nodes
                                           and order_node.expressions[0].this.sql(DIALECT) == args_nodes[0].sql(DIALECT)):
            # ORDER BY other expressions: carry the keys as hidden trailing arguments
            order_key, extra = self._agg_order_keys(order_node, scope, len(args))
            args = args + extra
        spec = AggSpec(fn, args, arg_oids, distinct=distinct, filter_=filt,
                       order_key=order_key, star=star)
        if spec.oid == -1:
            raise signatures.undefined(fn, [a.oid for a in args])
        return spec

    def _bind_within_group(self, node: exp.WithinGroup, scope: Scope, filt) -> AggSpec:
        """An ordered-set aggregate, ``f(fraction) WITHIN GROUP (ORDER BY x)``."""
        inner = node.this
        fn = func_name(inner)
        order = node.expression
        frac_node = func_args(inner)[0] if func_args(inner) else None
        b = ExprBinder(self, scope, context="aggregate")
        fr = b.bind(frac_node) if frac_node is not None else None  # mode() has no direct argument
        fraction = float(fr.value) if isinstance(fr, expr.Const) else 0.5
        o = order.expressions[0]
        arg = b.bind(o.this)
        _check_arity(fn, ([fr.oid] if fr is not None else []) + [arg.oid] + [type_oids.UNKNOWN] * (len(order.expressions) - 1),
                     ordered_set=True, direct=1 if fr is not None else 0)
        if fn == "percentile_cont":
            arg = self.coerce(arg, type_oids.FLOAT8)
        spec = AggSpec(fn, [arg], [arg.oid], filter_=filt, fraction=fraction)
        spec.descending = bool(o.args.get("desc"))
        return spec

    def _agg_arg_types(self, fn: str, args: list[expr.Expr]) -> list[expr.Expr]:
        """PostgreSQL's argument typing for aggregates: unknown literals read
        as text, where that is ambiguous or has no such aggregate the error
        PostgreSQL gives, and the casts its aggregate signatures imply."""
        if fn in ("sum", "avg") and args and args[0].oid == type_oids.UNKNOWN:
            raise PgError("42725", f"function {fn}(unknown) is not unique",
                          hint="Could not choose a best candidate function. You might need to add explicit type casts.")
        args = [self.coerce(a, type_oids.TEXT) if a.oid == type_oids.UNKNOWN else a for a in args]
        if fn in ("sum", "avg") and args and args[0].oid in (type_oids.TEXT, type_oids.VARCHAR, type_oids.BPCHAR, type_oids.BOOL):
            raise signatures.undefined(fn, [a.oid for a in args])
        if fn in ("stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop") and args and args[0].oid == type_oids.FLOAT4:
            args = [self.coerce(args[0], type_oids.FLOAT8)]
        if fn in ("bool_and", "bool_or", "every") and args:
            args = [self.coerce(args[0], type_oids.BOOL)]
        if fn == "string_agg" and len(args) == 2 and args[0].oid == type_oids.BYTEA:   # string_agg(bytea, bytea)
            args = [args[0], self.coerce(args[1], type_oids.BYTEA)]
        elif fn == "string_agg" and len(args) == 2:
            args = [self.coerce(args[0], type_oids.TEXT) if not sqltypes.is_string(args[0].oid) else args[0], self.coerce(args[1], type_oids.TEXT)]
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
                nn.sort(key=lambda r: _sort_key(r[pos]), reverse=desc)
                rows = (nulls + nn) if nulls_first else (nn + nulls)
            return rows

        return sorter, extra

    def _agg_order(self, order: exp.Order, scope):
        b = ExprBinder(self, scope, context="aggregate ORDER BY")
        keys = [(b.bind(o.this), bool(o.args.get("desc")), o.args.get("nulls_first")) for o in order.expressions]
        # rows in list state are tuples of agg args; we sort by the first arg (the common case)
        desc = keys[0][1]

        def sorter(rows):
            nn = [r for r in rows if r[0] is not None]
            nulls = [r for r in rows if r[0] is None]
            nn.sort(key=lambda r: _sort_key(r[0]), reverse=desc)
            return (nulls + nn) if desc else (nn + nulls)

        return sorter
