"""Set-returning functions: generate_series and unnest, in FROM or SELECT."""
from __future__ import annotations

from typing import Callable

import decimal

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.composite import Record
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError, UNDEFINED_FUNCTION

from ..execution import operators
from ..execution.datetime_ops import add_interval
from ..execution import expr, functions, json_sets, signatures
from ..execution.array_functions import flat
from ..execution.posix_regex import regexp_matches, regexp_split
from ..execution.functions import string_to_array
from ..execution.sketches import topk
from .binder import ExprBinder, Scope

SRF_NAMES = {"generate_series", "unnest", "jsonb_array_elements", "json_array_elements", "jsonb_object_keys",
             "json_object_keys", "regexp_split_to_table", "jsonb_each", "json_each", "jsonb_each_text", "json_each_text",
             "generate_subscripts", "json_array_elements_text", "jsonb_array_elements_text", "pg_partition_ancestors",
             "regexp_matches", "string_to_table", "pg_listening_channels"}


_SERIES = signatures.parse(
    "int4, int4 -> int4 | int4, int4, int4 -> int4 | int8, int8 -> int8 | int8, int8, int8 -> int8"
    " | numeric, numeric -> numeric | numeric, numeric, numeric -> numeric"
    " | timestamp, timestamp, interval -> timestamp | timestamptz, timestamptz, interval -> timestamptz")


def _series(vals, oid):
    start, stop = vals[0], vals[1]
    step = vals[2] if len(vals) > 2 else None
    if start is None or stop is None or (len(vals) > 2 and step is None):
        return Col(np.zeros(0, np.int64), None, oid) if oid != type_oids.NUMERIC else Col.from_pylist([], oid)
    if oid in (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
        if step is None:
            raise PgError(UNDEFINED_FUNCTION, "function generate_series(timestamp, timestamp) does not exist")
        out = []
        v = start
        positive = (step.months, step.days, step.microseconds) > (0, 0, 0)
        if (step.months, step.days, step.microseconds) == (0, 0, 0):
            raise PgError(INVALID_PARAMETER_VALUE, "step size cannot equal zero")
        while (v <= stop) if positive else (v >= stop):
            out.append(v)
            try:
                v = add_interval(v, step)
            except PgError:             # the next value is past the years held, so past stop too
                break
            if len(out) > 10_000_000:
                break
        return Col.from_pylist(out, oid)
    step = 1 if step is None else step
    if step == 0:
        raise PgError(INVALID_PARAMETER_VALUE, "step size cannot equal zero")
    if oid == type_oids.NUMERIC:
        for what, value in (("start value", start), ("stop value", stop), ("step size", vals[2] if len(vals) > 2 else 1)):
            if not decimal.Decimal(value).is_finite():
                word = "NaN" if decimal.Decimal(value).is_nan() else "infinity"
                raise PgError(INVALID_PARAMETER_VALUE, f"{what} cannot be {word}")
        out = []
        v = decimal.Decimal(start)
        while (v <= stop) if step > 0 else (v >= stop):
            out.append(v)
            v += step
        return Col.from_pylist(out, type_oids.NUMERIC)
    arr = np.arange(start, stop + (1 if step > 0 else -1), step, dtype=np.int64)
    arr = arr[(arr <= stop) if step > 0 else (arr >= stop)]
    return Col(arr.astype(np.int32 if oid == type_oids.INT4 else np.int64), None, oid)


def srf_impl(planner, name: str, args):
    """(fn(values, ctx) -> Batch with one column, result oid)."""

    if name == "generate_series":
        # PostgreSQL's overloads and resolution: (smallint, smallint) and (unknown, unknown) are
        # ambiguous; a date resolves to the timestamptz one
        want, t = signatures.select(name, _SERIES, [a.oid for a in args])
        for i, a in enumerate(args):
            args[i] = planner.coerce(a, want[i])

        def fn(vals, ctx, _t=t):
            c = _series(vals, _t)
            return Batch([c], len(c))

        return fn, t
    if name == "unnest":
        if len(args) == 1 and args[0].oid == type_oids.UNKNOWN:       # anyarray or tsvector
            raise PgError(signatures.AMBIGUOUS_FUNCTION, "function unnest(unknown) is not unique",
                          hint=signatures.AMBIGUOUS_HINT)
        if any(a.oid == signatures.ANYARRAY for a in args):      # pg_stats.most_common_vals, as PostgreSQL
            raise signatures.anyarray_element_error()
        if len(args) != 1 or args[0].oid not in type_oids.ELEMENT_OF:
            raise signatures.undefined(name, [a.oid for a in args])      # several arrays: only in FROM
        et = type_oids.ELEMENT_OF.get(args[0].oid, type_oids.TEXT)

        def fn2(vals, ctx):
            c = Col.from_pylist(flat(vals[0] or []), et)
            return Batch([c], len(c))

        return fn2, et
    if name == "pg_partition_ancestors":  # no partitioning: a relation is its own only ancestor

        if args and isinstance(args[0], expr.Const) and isinstance(args[0].value, str):
            args[0] = expr.Const(planner.resolve_reg(type_oids.REGCLASS, args[0].value), type_oids.REGCLASS)
        elif args and args[0].oid in (type_oids.UNKNOWN, type_oids.TEXT):
            args[0] = planner.coerce(args[0], type_oids.REGCLASS)

        def fn_anc(vals, ctx):
            c = Col.from_pylist([] if vals[0] is None else [int(vals[0])], type_oids.REGCLASS)
            return Batch([c], len(c))

        return fn_anc, type_oids.REGCLASS
    if name == "generate_subscripts":  # (array, dim [, reverse]); int2vector/oidvector-like catalog arrays too
        def fn_subs(vals, ctx):
            v = vals[0]
            n = len(v) if v is not None and (len(vals) < 2 or vals[1] == 1) else 0
            idx = list(range(1, n + 1))
            if len(vals) > 2 and vals[2]:
                idx.reverse()
            c = Col.from_pylist(idx, type_oids.INT4)
            return Batch([c], len(c))

        return fn_subs, type_oids.INT4
    if name in ("jsonb_array_elements", "json_array_elements", "json_array_elements_text", "jsonb_array_elements_text"):
        text = name.endswith("_text")
        oid = type_oids.TEXT if text else (type_oids.JSONB if name.startswith("jsonb") else type_oids.JSON)

        def fn3(vals, ctx):
            out = [] if vals[0] is None else [v for _, v in json_sets.members(name, vals[0])]
            c = Col.from_pylist(out, oid)
            return Batch([c], len(c))

        return fn3, oid
    if name in ("jsonb_object_keys", "json_object_keys"):
        def fn4(vals, ctx):
            c = Col.from_pylist([] if vals[0] is None else [k for k, _ in json_sets.members(name, vals[0])],
                                type_oids.TEXT)
            return Batch([c], len(c))

        return fn4, type_oids.TEXT
    if name == "pg_listening_channels":   # the channels this session's committed LISTENs hold
        def fn_listening(vals, ctx):
            c = Col.from_pylist(ctx.db.notifier.channels(ctx.session.pid), type_oids.TEXT)
            return Batch([c], len(c))

        return fn_listening, type_oids.TEXT
    if name == "regexp_split_to_table":
        def fn5(vals, ctx):
            if any(v is None for v in vals):
                return Batch([Col.from_pylist([], type_oids.TEXT)], 0)
            c = Col.from_pylist(regexp_split(*vals), type_oids.TEXT)
            return Batch([c], len(c))

        return fn5, type_oids.TEXT
    if name in ("regexp_matches", "string_to_table"):
        return _text_rows(planner, name, args)
    raise PgError(UNDEFINED_FUNCTION, f"function {name} does not exist")


def _text_rows(planner, name: str, args):
    """regexp_matches (text[] rows) and string_to_table (text rows), of text arguments."""
    if len(args) not in (2, 3):
        raise signatures.undefined(name, [a.oid for a in args])
    for i, a in enumerate(args):
        args[i] = planner.coerce(a, type_oids.TEXT)
    oid = type_oids.ARRAY_OF[type_oids.TEXT] if name == "regexp_matches" else type_oids.TEXT

    def rows(vals, ctx):
        if vals[0] is None or (name == "regexp_matches" and any(v is None for v in vals)):
            values: list = []
        elif name == "regexp_matches":
            values = regexp_matches(*vals)
        else:
            values = string_to_array(*vals) or []
        c = Col.from_pylist(values, oid)
        return Batch([c], len(c))

    return rows, oid


#: set-returning functions of more than one column that a later layer owns
#: (PipelineDB's pipelinedb.get_views(), ...: executor/stream/management.py),
#: by qualified name: (planner, bound args, column aliases) -> FunctionScan
TABLE_FUNCTIONS: dict[str, Callable[..., operators.Op]] = {}


#: built-in set-returning functions of several columns that a select list may call (one record per row)
RECORD_SRFS = frozenset({"json_each", "jsonb_each", "json_each_text", "jsonb_each_text", "pg_options_to_table",
                         "topk"})


def records_of(scan: operators.FunctionScan) -> Callable:
    """A set-returning function of several columns called in a select list
    (ProjectSet's one column): each of its rows as one record value, as
    PostgreSQL returns ``SELECT pipelinedb.get_views()``."""
    oids = [c.oid for c in scan.out]
    names = tuple(c.name for c in scan.out)

    def fn(vals, ctx):
        b = scan.fn(vals, ctx)
        rows = zip(*(c.to_pylist() for c in b.cols)) if b.cols else iter([()] * b.n)
        data = np.empty(b.n, dtype=object)
        for i, values in enumerate(rows):
            data[i] = Record(values, oids, names)
        return Batch([Col(data, None, type_oids.RECORD)], b.n)

    return fn


def table_function(planner, name: str, args, alias, colaliases) -> operators.Op:
    if name in TABLE_FUNCTIONS:
        return TABLE_FUNCTIONS[name](planner, args, colaliases)
    if name == "pg_options_to_table":
        text_array = type_oids.ARRAY_OF[type_oids.TEXT]
        # text too: the catalogs' option columns (ftoptions, attfdwoptions) are text here
        if len(args) != 1 or args[0].oid not in (text_array, type_oids.TEXT, type_oids.UNKNOWN):
            raise signatures.undefined(name, [a.oid for a in args])
        if args[0].oid == type_oids.UNKNOWN:
            args = [planner.coerce(args[0], text_array)]

        def opts(vals, ctx):
            v = vals[0]
            if isinstance(v, str):
                v = [o for o in v.strip("{}").split(",") if o]
            items = [str(o).split("=", 1) for o in (v or [])]
            return Batch([Col.from_pylist([k for k, *_ in items], type_oids.TEXT),
                          Col.from_pylist([(v[0] if v else None) for _, *v in items], type_oids.TEXT)], len(items))

        return operators.FunctionScan(name, opts, args, [operators.OutCol("option_name", type_oids.TEXT), operators.OutCol("option_value", type_oids.TEXT)])
    if name in ("jsonb_each", "json_each", "jsonb_each_text", "json_each_text"):
        voids = type_oids.TEXT if name.endswith("_text") else (type_oids.JSONB if name.startswith("jsonb") else type_oids.JSON)

        def each(vals, ctx):
            items = [] if vals[0] is None else json_sets.members(name, vals[0])
            ks, vs = [k for k, _ in items], [v for _, v in items]
            return Batch([Col.from_pylist(ks, type_oids.TEXT), Col.from_pylist(vs, voids)], len(ks))

        out = [operators.OutCol(colaliases[0] if colaliases else "key", type_oids.TEXT), operators.OutCol(colaliases[1] if len(colaliases) > 1 else "value", voids)]
        return operators.FunctionScan(name, each, args, out)
    if name == "topk":
        return _topk_scan(args, colaliases)
    if name not in SRF_NAMES:
        functions.lookup(name, [a.oid for a in args])  # 42883 for an unknown function

        b = ExprBinder(planner, Scope([]))
        e = b.call(name, args)

        def scalar(vals, ctx, _e=e):
            c = _e.eval(Batch([], 1), ctx)
            return Batch([c], 1)

        colname = colaliases[0] if colaliases else (alias or name)
        return operators.FunctionScan(name, scalar, [], [operators.OutCol(colname, e.oid)])
    if name == "unnest" and len(args) > 1:
        return _unnest_arrays(args, colaliases)
    fn, oid = srf_impl(planner, name, args)
    colname = colaliases[0] if colaliases else (_OUT_NAMES.get(name) or alias or name)
    return operators.FunctionScan(name, fn, args, [operators.OutCol(colname, oid)])


def _topk_scan(args, colaliases) -> operators.Op:
    """PipelineDB's ``topk(sketch)``: the top-k values (as text) and their frequencies."""
    if len(args) != 1 or args[0].oid not in (type_oids.BYTEA, type_oids.UNKNOWN):
        raise signatures.undefined("topk", [a.oid for a in args])

    def rows(vals, ctx):
        texts, freqs = topk.rows_of(vals[0])
        return Batch([Col.from_pylist(texts, type_oids.TEXT), Col.from_pylist(freqs, type_oids.INT8)], len(texts))

    names = list(colaliases) + ["value", "frequency"][len(colaliases):]
    return operators.FunctionScan("topk", rows, args, [operators.OutCol(names[0], type_oids.TEXT),
                                                       operators.OutCol(names[1], type_oids.INT8)])


#: functions whose one result column is a named OUT parameter: a table alias does not rename it
_OUT_NAMES = {"json_array_elements": "value", "jsonb_array_elements": "value", "json_array_elements_text": "value",
              "jsonb_array_elements_text": "value"}


def _unnest_arrays(args, colaliases) -> operators.Op:
    """``FROM unnest(a, b, ...)``: one column per array, as many rows as the
    longest, the shorter ones NULL-padded; the columns are all named unnest."""
    for a in args:
        if a.oid == signatures.ANYARRAY:
            raise signatures.anyarray_element_error()
        if a.oid not in type_oids.ELEMENT_OF:
            raise signatures.undefined("unnest", [x.oid for x in args])
    oids = [type_oids.ELEMENT_OF[a.oid] for a in args]

    def rows(vals, ctx):
        lists = [flat(v or []) for v in vals]
        n = max(map(len, lists), default=0)
        return Batch([Col.from_pylist(vs + [None] * (n - len(vs)), oid) for vs, oid in zip(lists, oids)], n)

    out = [operators.OutCol(colaliases[i] if i < len(colaliases) else "unnest", oid) for i, oid in enumerate(oids)]
    return operators.FunctionScan("unnest", rows, args, out)
