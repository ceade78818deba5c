"""Spark pushdown, first half: a continuous view's stream pipelines as Spark SQL.

``splitstream_pipeline('<stream>')`` returns a JSON description of the
stream pipelines of every continuous view on the stream (thesis ch. 4: scan
-> filters/projections/probes -> grouping sink), translated to Spark SQL over
the micro-batch: one query per pipeline whose result rows are group keys plus
the per-aggregate state columns of :class:`executor.aggregates.GroupTable`
(count: ``cnt``; sum/avg: ``sum`` and ``cnt``; min/max/bool_and/bool_or:
``val`` and ``has``).  Join build sides (static pipelines over tables) are
shipped as data.  Expressions are translated from the *bound* plan with a
whitelist of operators whose Spark semantics equal PostgreSQL's; anything
else makes the stream unpushable (``pushable: false`` with a reason) and the
connector falls back to rows.

The description carries a fingerprint (a hash over the stream's columns, the
set of views on it, their definitions, translated pipelines, state layouts
and build-side data); :mod:`spark_merge` recomputes it to refuse stale
states.  Pushdown bypasses the stream's ring buffer: session-window scans of
the stream (``SELECT ... FROM stream``) do not see pushed-down batches.
"""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

from ...execution import expr, operators, privileges
from ...execution.sketches import AGGREGATE_SIGNATURES as SKETCH_SIGNATURES
from ...execution.time_windows import SessionBound, WindowBound
from ..continuous import PrunedCol

UNDEFINED_TABLE = "42P01"


class NotPushable(Exception):
    pass


def resolve(ctx, name: str, privs: str = ""):
    """The relation a function argument names (schema-qualified or not); the
    current role needs USAGE on a named schema and one of ``privs`` on it."""
    st = ctx.state
    parts = [p.strip().strip('"') for p in name.split(".")]
    if len(parts) == 2:
        if parts[0] in st.schemas:
            privileges.check_schema(st, privileges.current_role(st, ctx.session), parts[0], "U")
        rel = st.lookup(parts[0], parts[1])
    else:
        rel = st.lookup("public", parts[0]) or st.lookup("pg_catalog", parts[0])
    if rel is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
    if privs:
        privileges.authorize(st, ctx.session, [privileges.Need(privs, rel.oid, any_of=True)])
    return rel


# ------------------------------------------------------------------ types

SPARK_TYPES = {type_oids.BOOL: "boolean", type_oids.INT2: "smallint", type_oids.INT4: "int", type_oids.INT8: "bigint", type_oids.FLOAT4: "float",
               type_oids.FLOAT8: "double", type_oids.TEXT: "string", type_oids.VARCHAR: "string", type_oids.NAME: "string",
               type_oids.DATE: "date", type_oids.TIMESTAMPTZ: "timestamp", type_oids.TIMESTAMP: "timestamp_ntz"}
# types whose values and comparisons mean the same in Spark SQL
PUSH_TYPES = {type_oids.BOOL, type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.FLOAT4, type_oids.FLOAT8, type_oids.TEXT, type_oids.VARCHAR, type_oids.NAME, type_oids.DATE, type_oids.TIMESTAMPTZ}
_NUM = {type_oids.INT2: 0, type_oids.INT4: 1, type_oids.INT8: 2, type_oids.FLOAT4: 3, type_oids.FLOAT8: 4}
_STR = {type_oids.TEXT, type_oids.VARCHAR, type_oids.NAME}


def _family(oid: int) -> str:
    if oid in _NUM:
        return "num"
    if oid in _STR:
        return "str"
    return str(oid)


def _stype(oid: int) -> str:
    if oid not in PUSH_TYPES:
        raise NotPushable(f"type {sqltypes.type_name(oid)} is not pushed down")
    return SPARK_TYPES[oid]


def _qi(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _lit_str(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _literal(value, oid: int) -> str:
    st = _stype(oid)
    if value is None:
        return f"CAST(NULL AS {st})"
    if oid == type_oids.BOOL:
        return "TRUE" if value else "FALSE"
    if oid in (type_oids.INT2, type_oids.INT4, type_oids.INT8):
        return f"CAST({int(value)} AS {st})"
    if oid in (type_oids.FLOAT4, type_oids.FLOAT8):
        v = float(value)
        txt = "NaN" if math.isnan(v) else ("Infinity" if v == math.inf else "-Infinity" if v == -math.inf else repr(v))
        return f"CAST('{txt}' AS {st})"
    if oid in _STR:
        return _lit_str(str(value))
    if oid == type_oids.DATE:
        return f"DATE '{value.isoformat()}'"
    if oid == type_oids.TIMESTAMPTZ:
        c = Col.from_pylist([value], oid)
        return f"timestamp_micros({int(c.data.astype('datetime64[us]').astype(np.int64)[0])})"
    raise NotPushable(f"constant of type {sqltypes.type_name(oid)}")


# ------------------------------------------------------------------ expressions

_WIDEN = {(type_oids.INT2, type_oids.INT4), (type_oids.INT2, type_oids.INT8), (type_oids.INT4, type_oids.INT8), (type_oids.INT2, type_oids.FLOAT8), (type_oids.INT4, type_oids.FLOAT8),
          (type_oids.INT8, type_oids.FLOAT8), (type_oids.FLOAT4, type_oids.FLOAT8), (type_oids.INT2, type_oids.FLOAT4), (type_oids.INT4, type_oids.FLOAT4), (type_oids.INT8, type_oids.FLOAT4),
          (type_oids.TEXT, type_oids.VARCHAR), (type_oids.VARCHAR, type_oids.TEXT), (type_oids.NAME, type_oids.TEXT), (type_oids.DATE, type_oids.TIMESTAMPTZ)}


def _sx(e, names: list) -> str:
    """Spark SQL for a bound expression over columns ``names`` (None: unavailable)."""
    t = type(e)
    if t is expr.ColRef:
        n = names[e.idx] if e.idx < len(names) else None
        if n is None:
            raise NotPushable("the pipeline reads a column Spark does not have (e.g. arrival_timestamp)")
        return n
    if t is expr.Const:
        if isinstance(e.value, str) and e.oid == type_oids.UNKNOWN:
            return _lit_str(e.value)
        return _literal(e.value, e.oid)
    if t is WindowBound:
        return _window_bound(e, names)
    if t is expr.Cast:
        src = e.arg.oid
        if src == e.oid:
            return _sx(e.arg, names)
        if (src, e.oid) in _WIDEN or (e.arg.is_const() and isinstance(e.arg, expr.Const)):
            if isinstance(e.arg, expr.Const):
                v = sqltypes.cast_col(Col.const(e.arg.value, src, 1), e.oid, e.typmod, True).to_pylist()[0]
                return _literal(v, e.oid)
            if src == type_oids.DATE and e.oid == type_oids.TIMESTAMPTZ:
                raise NotPushable("date to timestamptz depends on the session time zone")
            return f"CAST({_sx(e.arg, names)} AS {_stype(e.oid)})"
        raise NotPushable(f"cast from {sqltypes.type_name(src)} to {sqltypes.type_name(e.oid)}")
    if t is expr.Compare:
        a, b = e.left, e.right
        if _family(a.oid) != _family(b.oid) or a.oid not in PUSH_TYPES or b.oid not in PUSH_TYPES:
            raise NotPushable(f"comparison of {sqltypes.type_name(a.oid)} with {sqltypes.type_name(b.oid)}")
        return f"({_sx(a, names)} {e.op} {_sx(b, names)})"
    if t is expr.IsDistinct:
        s = f"({_sx(e.left, names)} <=> {_sx(e.right, names)})"
        return s if e.negate else f"(NOT {s})"
    if t is expr.And:
        return "(" + " AND ".join(_sx(a, names) for a in e.args) + ")"
    if t is expr.Or:
        return "(" + " OR ".join(_sx(a, names) for a in e.args) + ")"
    if t is expr.Not:
        return f"(NOT {_sx(e.arg, names)})"
    if t is expr.IsNull:
        return f"({_sx(e.arg, names)} IS {'NOT ' if e.negate else ''}NULL)"
    if t is expr.IsBool:
        a = _sx(e.arg, names)
        if e.value is None:
            r = f"({a} IS NULL)"
        elif e.value:
            r = f"coalesce({a}, FALSE)"
        else:
            r = f"coalesce(NOT {a}, FALSE)"
        return f"(NOT {r})" if e.negate else r
    if t is expr.Arith:
        if e.oid not in _NUM or e.left.oid not in _NUM or e.right.oid not in _NUM:
            raise NotPushable(f"arithmetic on {sqltypes.type_name(e.oid)}")
        a, b = _sx(e.left, names), _sx(e.right, names)
        st = _stype(e.oid)
        integer = e.oid in (type_oids.INT2, type_oids.INT4, type_oids.INT8)
        if e.op in ("+", "-", "*"):
            return f"CAST(({a} {e.op} {b}) AS {st})"
        if e.op == "/":
            return f"CAST(({a} DIV {b}) AS {st})" if integer else f"CAST(({a} / {b}) AS {st})"
        if e.op == "%" and integer:
            return f"CAST(({a} % {b}) AS {st})"
        raise NotPushable(f"operator {e.op} on {sqltypes.type_name(e.oid)}")
    if t is expr.Neg:
        if e.oid not in _NUM:
            raise NotPushable(f"negation of {sqltypes.type_name(e.oid)}")
        return f"(- {_sx(e.arg, names)})"
    if t is expr.Concat:
        if e.left.oid not in _STR or e.right.oid not in _STR:
            raise NotPushable("|| on non-text operands")
        return f"concat({_sx(e.left, names)}, {_sx(e.right, names)})"
    if t is expr.Case:
        st = _stype(e.oid)
        parts = ["CASE"]
        for c, v in e.whens:
            parts.append(f"WHEN {_sx(c, names)} THEN CAST({_sx(v, names)} AS {st})")
        if e.default is not None:
            parts.append(f"ELSE CAST({_sx(e.default, names)} AS {st})")
        parts.append("END")
        return "(" + " ".join(parts) + ")"
    if t is expr.Coalesce:
        st = _stype(e.oid)
        return "coalesce(" + ", ".join(f"CAST({_sx(a, names)} AS {st})" for a in e.args) + ")"
    if t is expr.InList:
        if any(_family(i.oid) != _family(e.arg.oid) for i in e.items):
            raise NotPushable("IN list of mixed types")
        s = f"({_sx(e.arg, names)} IN ({', '.join(_sx(i, names) for i in e.items)}))"
        return f"(NOT {s})" if e.negate else s
    if t is expr.Like:
        if e.ilike or e.regex or e.escape not in ("\\", None) or not isinstance(e.pattern, expr.Const) \
                or e.arg.oid not in _STR:
            raise NotPushable("only LIKE with a constant pattern is pushed down")
        pat = e.pattern.value
        if e.escape is None:
            pat = pat.replace("\\", "\\\\")
        s = f"({_sx(e.arg, names)} LIKE {_lit_str(pat)})"
        return f"(NOT {s})" if e.negate else s
    if t is expr.Func:
        f = e.name.lower()
        if f in ("lower", "upper") and e.args and e.args[0].oid in _STR:
            return f"{f}({_sx(e.args[0], names)})"
        if f in ("length", "char_length", "character_length") and e.args and e.args[0].oid in _STR:
            return f"CAST(char_length({_sx(e.args[0], names)}) AS int)"
        if f == "abs" and e.args and e.args[0].oid in _NUM:
            return f"CAST(abs({_sx(e.args[0], names)}) AS {_stype(e.oid)})"
        raise NotPushable(f"function {e.name}()")
    raise NotPushable(f"expression {type(e).__name__}")


# ------------------------------------------------------------------ pipelines

def _to_transport(sql: str, oid: int) -> str:
    """Spark value -> JSON-friendly value (timestamps as microseconds, dates as days)."""
    if oid == type_oids.TIMESTAMPTZ:
        return f"unix_micros({sql})"
    if oid == type_oids.DATE:
        return f"unix_date({sql})"
    return sql


def _from_transport(sql: str, oid: int) -> str:
    if oid == type_oids.TIMESTAMPTZ:
        return f"timestamp_micros({sql})"
    if oid == type_oids.DATE:
        return f"date_from_unix_date({sql})"
    return sql


def _col_to_json(col: Col) -> list:
    oid = col.oid
    if oid == type_oids.TIMESTAMPTZ:
        vals = col.data.astype("datetime64[us]").astype(np.int64).tolist()
    elif oid == type_oids.DATE:
        vals = col.data.astype("datetime64[D]").astype(np.int64).tolist()
    elif oid in (type_oids.FLOAT4, type_oids.FLOAT8):
        vals = [float(v) for v in col.data.tolist()]
    else:
        vals = col.data.tolist()
    if col.nulls is not None:
        for i in np.flatnonzero(col.nulls).tolist():
            vals[i] = None
    return vals


def _state_layout(spec) -> tuple[str, list[str]]:
    """(kind, fields) of the GroupTable state of one aggregate, or NotPushable."""
    f = spec.func
    if spec.distinct or spec.order_key is not None:
        raise NotPushable(f"{f}(DISTINCT/ORDER BY ...) keeps value lists")
    if f == "count":
        return "count", ["cnt"]
    if f in ("sum", "avg"):
        a = spec.arg_oids[0] if spec.arg_oids else type_oids.INT8
        kind = {type_oids.INT2: "i", type_oids.INT4: "i", type_oids.INT8: "o", type_oids.FLOAT4: "f", type_oids.FLOAT8: "f"}.get(a)
        if kind is None:
            raise NotPushable(f"{f}({sqltypes.type_name(a)})")
        return "sum_" + kind, ["sum", "cnt"]
    if f in ("min", "max", "bool_and", "bool_or", "every"):
        a = spec.arg_oids[0]
        if a not in PUSH_TYPES:
            raise NotPushable(f"{f}({sqltypes.type_name(a)})")
        return "minmax", ["val", "has"]
    if f in SKETCH_SIGNATURES:
        if f == "first_values" and (spec.descending or spec.nulls_first):
            raise NotPushable("first_values(n) WITHIN GROUP (ORDER BY x DESC or NULLS FIRST): executors build "
                              "ascending states")
        if f == "bucket_agg" and len(spec.arg_oids) == 2:
            raise NotPushable("bucket_agg(x, bucket) keeps each value's latest arrival, which Spark partitions do not "
                              "order; bucket_agg(x, bucket, ts) is pushed down")
        for a in spec.arg_oids:
            if a not in PUSH_TYPES:
                raise NotPushable(f"{f}({sqltypes.type_name(a)})")
        return "sketch", ["state"]           # executors build the state (spark/sketch_states.py)
    raise NotPushable(f"aggregate {f}() keeps value lists")


def _translate_pipeline(pipe, input_names: list, build_seq: list) -> dict:
    _refuse_windows(pipe)
    names = list(input_names)
    sql = "SELECT " + ", ".join(f"{n} AS c{i}" for i, n in enumerate(names) if n is not None) + " FROM {input}"
    names = [None if n is None else f"c{i}" for i, n in enumerate(names)]
    builds = []
    layer = 0
    for op in pipe.ops:
        layer += 1
        if isinstance(op, operators.Filter):
            sql = f"SELECT * FROM ({sql}) l{layer} WHERE {_sx(op.pred, names)}"
        elif isinstance(op, operators.Project):
            items: list[str] = []
            new: list[str | None] = []
            for i, e in enumerate(op.exprs):
                try:
                    items.append(f"{_sx(e, names)} AS c{i}")
                    new.append(f"c{i}")
                except NotPushable:
                    new.append(None)        # fails later only if something reads it
            sql = f"SELECT {', '.join(items) or '1 AS c_dummy'} FROM ({sql}) l{layer}"
            names = new
        elif isinstance(op, operators.HashJoin):
            if op.kind not in ("inner", "left", "semi", "anti") or op not in pipe.builds:
                raise NotPushable(f"{op.label()}")
            rb = pipe.builds[op].batch
            bname = "b" + str(len(build_seq))
            rcols: list[int | None] = []
            for j, (c, oc) in enumerate(zip(rb.cols, op.right.out)):
                if c.oid not in PUSH_TYPES or isinstance(c, PrunedCol):   # pruned: no stage reads it
                    rcols.append(None)
                    continue
                rcols.append(j)
            build = {"name": bname, "columns": [{"name": f"v{j}", "type": sqltypes.type_name(c.oid),
                                                 "spark_type": ("bigint" if c.oid == type_oids.TIMESTAMPTZ else
                                                                "int" if c.oid == type_oids.DATE else SPARK_TYPES[c.oid])}
                                                for j, c in enumerate(rb.cols) if j in rcols],
                     "rows": [_col_to_json(c) for j, c in enumerate(rb.cols) if j in rcols]}
            build_seq.append(build)
            builds.append(build)
            L = [None if n is None else f"L.{n}" for n in names]
            R = [None if j is None else _from_transport(f"R.v{j}", rb.cols[j].oid) for j in rcols]
            conds = []
            for lk, rk in zip(op.lkeys, op.rkeys):
                ls, rs = _sx(lk, L), _sx(rk, R)
                if lk.oid != rk.oid:
                    if _family(lk.oid) != _family(rk.oid):
                        raise NotPushable("join keys of different types")
                    ct = sqltypes.common_type(lk.oid, rk.oid, "JOIN")
                    ls, rs = f"CAST({ls} AS {_stype(ct)})", f"CAST({rs} AS {_stype(ct)})"
                conds.append(f"{ls} = {rs}")
            if op.residual is not None:
                conds.append(_sx(op.residual, L + R))
            on = " AND ".join(conds) or "TRUE"
            kind = {"inner": "JOIN", "left": "LEFT JOIN", "semi": "LEFT SEMI JOIN", "anti": "LEFT ANTI JOIN"}[op.kind]
            nl = len(names)
            sel = [f"{n} AS c{i}" for i, n in enumerate(L) if n is not None]
            new = [None if n is None else f"c{i}" for i, n in enumerate(L)]
            if op.kind in ("inner", "left"):
                sel += [f"{r} AS c{nl + j}" for j, r in enumerate(R) if r is not None]
                new += [None if r is None else f"c{nl + j}" for j, r in enumerate(R)]
            sql = f"SELECT {', '.join(sel)} FROM ({sql}) L {kind} {{{bname}}} R ON {on}"
            names = new
        else:
            raise NotPushable(f"operator {op.label()}")
    agg = pipe.agg
    items, keys = [], []
    for i, k in enumerate(agg.keys):
        if k.oid not in PUSH_TYPES:
            raise NotPushable(f"group key of type {sqltypes.type_name(k.oid)}")
        ks = _sx(k, names)
        items.append(f"{_to_transport(ks, k.oid)} AS k{i}")
        keys.append({"type": sqltypes.type_name(k.oid), "oid": k.oid})
    group_by = [_sx(k, names) for k in agg.keys]
    states = []
    for j, spec in enumerate(agg.aggs):
        kind, fields = _state_layout(spec)
        filt = f" FILTER (WHERE {_sx(spec.filter, names)})" if spec.filter is not None else ""
        arg = None if spec.star or not spec.args else _sx(spec.args[0], names)
        cnt = f"count({arg if arg is not None else '*'}){filt}"
        if kind == "count":
            items.append(f"{cnt} AS s{j}_cnt")
        elif kind.startswith("sum_"):
            cast = {"sum_i": "bigint", "sum_f": "double", "sum_o": "decimal(38,0)"}[kind]
            s = f"coalesce(sum(CAST({arg} AS {cast})){filt}, CAST(0 AS {cast}))"
            if kind == "sum_o":
                s = f"CAST({s} AS string)"
            items += [f"{s} AS s{j}_sum", f"{cnt} AS s{j}_cnt"]
        elif kind == "sketch":
            struct = ", ".join(f"'a{i}', {_to_transport(_sx(e, names), e.oid)}" for i, e in enumerate(spec.args))
            items.append(f"collect_list(named_struct({struct})){filt} AS s{j}_rows")
        else:
            fn = {"min": "min", "max": "max", "bool_and": "bool_and", "every": "bool_and", "bool_or": "bool_or"}[spec.func]
            items += [f"{_to_transport(f'{fn}({arg}){filt}', spec.arg_oids[0])} AS s{j}_val", f"{cnt} AS s{j}_has"]
        states.append({"func": spec.func, "kind": kind, "arg_type": sqltypes.type_name(spec.arg_oids[0]) if spec.arg_oids else None,
                       "arg_oids": list(spec.arg_oids)})
    items.append("count(*) AS n_rows")
    sql = f"SELECT {', '.join(items)} FROM ({sql}) a" + (f" GROUP BY {', '.join(group_by)}" if group_by else "")
    return {"sql": sql, "builds": [b["name"] for b in builds], "keys": keys, "states": states}


def describe(ctx, name: str) -> dict:
    """The JSON description ``splitstream_pipeline(name)`` returns."""
    mgr = ctx.engine.streams
    rel = resolve(ctx, name, "ra")     # the pipeline serves readers and writers of the stream
    cols = [{"name": c.name, "type": sqltypes.format_type(c.type_oid, c.typmod), "oid": c.type_oid,
             "spark_type": SPARK_TYPES.get(c.type_oid, "string")}
            for c in rel.visible_columns]
    if rel.kind != "f":
        kind = {"r": "table", "v": "view"}.get(rel.kind, rel.kind)
        return {"version": 1, "kind": kind, "name": f"{rel.schema}.{rel.name}", "columns": cols,
                "pushable": False, "reason": f"{kind} is not a stream", "views": [], "fingerprint": None}
    return _describe_stream(ctx, mgr, rel, cols)


def _window_bound(e: WindowBound, names: list) -> str:
    """A TUMBLE/HOP pane bound as Spark computes it: the same integer
    expression over the event time's microseconds as ``WindowBound.eval``
    (pmod: the non-negative remainder numpy's mod gives), so executors ship
    per-pane partial states keyed exactly as the server keys them."""
    if e.ts.oid != type_oids.TIMESTAMPTZ:
        raise NotPushable(f"a window over a {sqltypes.type_name(e.ts.oid)} column (Spark pushes timestamptz)")
    us = f"unix_micros({_sx(e.ts, names)})"
    out = f"{us} - pmod({us} - {e.origin_us}, {e.slide_us}) + {e.end_offset_us}"
    if e.hop is not None:
        out += f" - CAST({_sx(e.hop, names)} AS bigint) * {e.slide_us}"
    return f"timestamp_micros({out})"


def _refuse_windows(pipe) -> None:
    """SESSION windows stay at the server: a session's bounds are known only
    once the sessions around it are merged (``stream/sessions.py``), so such
    a stream's rows are sent (correct, not pushed)."""
    for op in pipe.ops:
        for e in getattr(op, "exprs", None) or []:
            if any(isinstance(n, SessionBound) for n in e.walk()):
                raise NotPushable("the view groups by a SESSION window, which is merged at the server: "
                                  "its rows are sent")


def _describe_stream(ctx, mgr, rel, cols) -> dict:
    mgr._ensure_views(ctx.state)
    views = sorted(mgr._views_on(rel.oid), key=lambda cv: cv.rel.oid)
    cache_key = (rel.oid, ctx.state.ddl_version, tuple((cv.rel.oid, id(cv)) for cv in views))
    hit = mgr.spark_pipelines.get(rel.oid)
    if hit is not None and hit[0] == cache_key:
        return hit[1]
    input_names = [None if c.hidden else _qi(c.name) for c in rel.live_columns]
    out_views, reasons = [], []
    build_seq: list[dict] = []
    for cv in views:
        pipes = []
        for idx, pipe in enumerate(cv.pipelines.get(rel.oid, [])):
            try:
                pipes.append({"index": idx, **_translate_pipeline(pipe, input_names, build_seq)})
            except NotPushable as e:
                reasons.append(f'view "{cv.rel.name}": {e}')
                pipes.append({"index": idx, "pushable": False, "reason": str(e)})
        out_views.append({"view": f"{cv.rel.schema}.{cv.rel.name}", "oid": cv.rel.oid, "sql": cv.rel.sql,
                          "pipelines": pipes})
    if not views:
        reasons.append("no continuous view reads this stream")
    if mgr.watermark(rel) is not None:        # executors would fold rows the watermark drops
        reasons.append("the stream declares a WATERMARK: late rows are dropped at the server, so its rows are sent")
    desc = {"version": 1, "kind": "stream", "name": f"{rel.schema}.{rel.name}", "oid": rel.oid, "columns": cols,
            "views": out_views, "builds": build_seq, "pushable": not reasons,
            "reason": "; ".join(reasons) or None}
    body = json.dumps({k: v for k, v in desc.items() if k != "fingerprint"}, sort_keys=True, separators=(",", ":"),
                      default=str)
    desc["fingerprint"] = hashlib.sha256(body.encode()).hexdigest()[:32]
    mgr.spark_pipelines[rel.oid] = (cache_key, desc)
    return desc
