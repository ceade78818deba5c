"""Set-returning functions: generate_series and unnest, in FROM or SELECT."""
from __future__ import annotations

import datetime as dt
import decimal

import numpy as np

from catalog.vector import Batch, Col
from protocol import oids as O
from protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError, UNDEFINED_FUNCTION

from . import operators as P

SRF_NAMES = {"generate_series", "unnest", "jsonb_array_elements", "json_array_elements", "jsonb_object_keys",
             "json_object_keys", "regexp_split_to_table", "jsonb_each", "json_each", "jsonb_each_text", "json_each_text",
             "generate_subscripts", "json_array_elements_text", "jsonb_array_elements_text", "pg_partition_ancestors"}


def _series(vals, oid):
    start, stop = vals[0], vals[1]
    step = vals[2] if len(vals) > 2 else None
    if start is None or stop is None or (len(vals) > 2 and step is None):
        return Col(np.zeros(0, np.int64), None, oid) if oid != O.NUMERIC else Col.from_pylist([], oid)
    if oid in (O.TIMESTAMP, O.TIMESTAMPTZ):
        from .datetime_ops import add_interval

        if step is None:
            raise PgError(UNDEFINED_FUNCTION, "function generate_series(timestamp, timestamp) does not exist")
        out = []
        v = start
        positive = (step.months, step.days, step.microseconds) > (0, 0, 0)
        if (step.months, step.days, step.microseconds) == (0, 0, 0):
            raise PgError(INVALID_PARAMETER_VALUE, "step size cannot equal zero")
        while (v <= stop) if positive else (v >= stop):
            out.append(v)
            v = add_interval(v, step)
            if len(out) > 10_000_000:
                break
        return Col.from_pylist(out, oid)
    step = 1 if step is None else step
    if step == 0:
        raise PgError(INVALID_PARAMETER_VALUE, "step size cannot equal zero")
    if oid == O.NUMERIC:
        out = []
        v = decimal.Decimal(start)
        while (v <= stop) if step > 0 else (v >= stop):
            out.append(v)
            v += step
        return Col.from_pylist(out, O.NUMERIC)
    arr = np.arange(start, stop + (1 if step > 0 else -1), step, dtype=np.int64)
    arr = arr[(arr <= stop) if step > 0 else (arr >= stop)]
    return Col(arr.astype(np.int32 if oid == O.INT4 else np.int64), None, oid)


def srf_impl(planner, name: str, args):
    """(fn(values, ctx) -> Batch with one column, result oid)."""
    import json

    if name == "generate_series":
        t = O.INT4
        for a in args:
            if a.oid in (O.INT8,):
                t = O.INT8
            if a.oid == O.NUMERIC:
                t = O.NUMERIC
            if a.oid in (O.TIMESTAMP, O.TIMESTAMPTZ, O.DATE) and t != O.TIMESTAMPTZ:
                # date has no generate_series of its own: it resolves to the timestamptz one
                t = O.TIMESTAMP if a.oid == O.TIMESTAMP else O.TIMESTAMPTZ
        for i, a in enumerate(args):
            if t in (O.TIMESTAMP, O.TIMESTAMPTZ):
                args[i] = planner.coerce(a, O.INTERVAL if i == 2 else t)
            else:
                args[i] = planner.coerce(a, t)

        def fn(vals, ctx, _t=t):
            c = _series(vals, _t)
            return Batch([c], len(c))

        return fn, t
    if name == "unnest":
        et = O.ELEMENT_OF.get(args[0].oid, O.TEXT)

        def fn2(vals, ctx):
            v = vals[0] or []
            c = Col.from_pylist(list(v), et)
            return Batch([c], len(c))

        return fn2, et
    if name == "pg_partition_ancestors":  # no partitioning: a relation is its own only ancestor
        from . import expr as X

        if args and isinstance(args[0], X.Const) and isinstance(args[0].value, str):
            args[0] = X.Const(planner.resolve_reg(O.REGCLASS, args[0].value), O.REGCLASS)
        elif args and args[0].oid in (O.UNKNOWN, O.TEXT):
            args[0] = planner.coerce(args[0], O.REGCLASS)

        def fn_anc(vals, ctx):
            c = Col.from_pylist([] if vals[0] is None else [int(vals[0])], O.REGCLASS)
            return Batch([c], len(c))

        return fn_anc, O.REGCLASS
    if name == "generate_subscripts":  # (array, dim [, reverse]); int2vector/oidvector-like catalog arrays too
        def fn_subs(vals, ctx):
            v = vals[0]
            n = len(v) if v is not None and (len(vals) < 2 or vals[1] == 1) else 0
            idx = list(range(1, n + 1))
            if len(vals) > 2 and vals[2]:
                idx.reverse()
            c = Col.from_pylist(idx, O.INT4)
            return Batch([c], len(c))

        return fn_subs, O.INT4
    if name in ("jsonb_array_elements", "json_array_elements", "json_array_elements_text", "jsonb_array_elements_text"):
        text = name.endswith("_text")
        oid = O.TEXT if text else (O.JSONB if name.startswith("jsonb") else O.JSON)

        def fn3(vals, ctx):
            from protocol.types import decode_text

            v = json.loads(vals[0]) if vals[0] is not None else []
            out = [(x if isinstance(x, str) else json.dumps(x)) if text else decode_text(oid, json.dumps(x)) for x in v]
            c = Col.from_pylist(out, oid)
            return Batch([c], len(c))

        return fn3, oid
    if name in ("jsonb_object_keys", "json_object_keys"):
        def fn4(vals, ctx):
            v = json.loads(vals[0]) if vals[0] is not None else {}
            c = Col.from_pylist(list(v.keys()), O.TEXT)
            return Batch([c], len(c))

        return fn4, O.TEXT
    if name == "regexp_split_to_table":
        import re

        def fn5(vals, ctx):
            c = Col.from_pylist(re.split(vals[1], vals[0]) if vals[0] is not None else [], O.TEXT)
            return Batch([c], len(c))

        return fn5, O.TEXT
    raise PgError(UNDEFINED_FUNCTION, f"function {name} does not exist")


def table_function(planner, name: str, args, alias, colaliases) -> P.Op:
    if name == "pg_options_to_table":
        def opts(vals, ctx):
            items = [str(o).split("=", 1) for o in (vals[0] or [])]
            return Batch([Col.from_pylist([k for k, *_ in items], O.TEXT),
                          Col.from_pylist([(v[0] if v else None) for _, *v in items], O.TEXT)], len(items))

        return P.FunctionScan(name, opts, args, [P.OutCol("option_name", O.TEXT), P.OutCol("option_value", O.TEXT)])
    if name in ("jsonb_each", "json_each", "jsonb_each_text", "json_each_text"):
        import json

        voids = O.TEXT if name.endswith("_text") else (O.JSONB if name.startswith("jsonb") else O.JSON)

        def each(vals, ctx):
            from protocol.types import decode_text

            d = json.loads(vals[0]) if vals[0] is not None else {}
            ks = list(d.keys())
            vs = [(v if isinstance(v, str) else json.dumps(v)) if voids == O.TEXT else decode_text(voids, json.dumps(v)) for v in d.values()]
            return Batch([Col.from_pylist(ks, O.TEXT), Col.from_pylist(vs, voids)], len(ks))

        out = [P.OutCol(colaliases[0] if colaliases else "key", O.TEXT), P.OutCol(colaliases[1] if len(colaliases) > 1 else "value", voids)]
        return P.FunctionScan(name, each, args, out)
    if name not in SRF_NAMES:
        from . import functions as F

        fd = F.lookup(name, [a.oid for a in args])
        from .binder import ExprBinder, Scope

        b = ExprBinder(planner, Scope([]))
        e = b.call(name, args)

        def scalar(vals, ctx, _e=e):
            c = _e.eval(Batch([], 1), ctx)
            return Batch([c], 1)

        colname = colaliases[0] if colaliases else (alias or name)
        return P.FunctionScan(name, scalar, [], [P.OutCol(colname, e.oid)])
    fn, oid = srf_impl(planner, name, args)
    colname = colaliases[0] if colaliases else (alias or name)
    return P.FunctionScan(name, fn, args, [P.OutCol(colname, oid)])
