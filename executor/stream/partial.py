"""Spark's half of split maintenance, and exactly-once keys for stream ingest.

Two server-side pieces used by the PySpark connector (``connectors/spark``):

**Exactly-once batch keys.**  Streams are not transactional, so "record the
batch id in a table in the same transaction" does not work for them.
Instead a client names its batch before a COPY (or INSERT) into a stream::

    SET splitstream.batch_key = '<query id>/<batch id>/<partition>/<chunk>';
    COPY events FROM STDIN (FORMAT csv);

The key is consumed by that one ingest.  It travels *inside the stream's WAL
record* (the column list is a :class:`KeyedRows`, a ``list`` that also carries
the key), so the batch and its key are durable together or not at all.  The
ledger of applied keys is checked and extended under the database's
checkpoint lock, in WAL order, both live and during replay; a key seen
before is skipped, so a Spark task or micro-batch replayed after a failure
(of Spark or of the server) is applied once.  The ledger rides in the
checkpoint next to the views' group states, and keeps the most recent
``LEDGER_CAPACITY`` keys.

**Partial states (pushdown).**  ``splitstream_pipeline('<stream>')`` returns
a JSON description of the stream pipelines of every continuous view on the
stream (thesis ch. 4: scan -> filters/projections/probes -> grouping sink),
translated to Spark SQL over the micro-batch: one query per pipeline whose
result rows are group keys plus the per-aggregate state columns of
:class:`executor.aggregates.GroupTable` (count: ``cnt``; sum/avg: ``sum`` and
``cnt``; min/max/bool_and/bool_or: ``val`` and ``has``).  Join build sides
(static pipelines over tables) are shipped as data.  Expressions are
translated from the *bound* plan with a whitelist of operators whose Spark
semantics equal PostgreSQL's; anything else makes the stream unpushable
(``pushable: false`` with a reason) and the connector falls back to rows.

``splitstream_batch_applied(key)`` tells a client whether a key was applied
(so a replayed chunk need not even be sent).

Executors ship states with ``splitstream_merge_partial(stream, key,
payload)``.  The payload names the pipeline and carries the description's
fingerprint (a hash over the stream's columns, the set of views on it, their
definitions, translated pipelines, state layouts and build-side data).  The
server recomputes the fingerprint from the current plans and refuses a
payload whose fingerprint differs (stale: a view was created, dropped or
replaced since) or whose shape, types or invariants do not match the
pipeline's state layout (forged).  Accepted states are logged as a stream
WAL record (:class:`PartialRecord`) with their batch key and merged into the
view's global group table exactly as thread-local states are.

Pushdown bypasses the stream's ring buffer: session-window scans of the
stream (``SELECT ... FROM stream``) do not see pushed-down batches.

The ledger itself lives on the :class:`StreamManager`, whose insert, replay
and checkpoint paths consult it; this module holds the record types, the
pipeline description and the validation and merge of partial states.
"""
from __future__ import annotations

import collections
import hashlib
import json
import logging
import math

import numpy as np

from splitstream.catalog import types as sqltypes
from splitstream.catalog.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

from .continuous import PrunedCol

log = logging.getLogger("splitstream.spark")

KEY_SETTING = "splitstream.batch_key"
LEDGER_CAPACITY = 1 << 18
LEDGER_SNAPSHOT_KEY = "__splitstream_batch_ledger__"
MAX_KEY_LEN = 512

STALE = "55000"            # object_not_in_prerequisite_state
INVALID = "22023"          # invalid_parameter_value
UNDEFINED_TABLE = "42P01"


class KeyedRows(list):
    """A stream batch's WAL column list that also carries its batch key."""

    batch_key: str = ""


class PartialRecord(list):
    """A WAL record of merged partial states (empty list + attributes)."""

    batch_key: str = ""
    view_oid: int = 0
    pipe_index: int = 0
    keys: list = []
    states: list = []
    rows_in: int = 0


class NotPushable(Exception):
    pass


# ------------------------------------------------------------------ ledger

class Ledger:
    def __init__(self) -> None:
        self.keys: collections.OrderedDict[str, None] = collections.OrderedDict()

    def __contains__(self, key: str) -> bool:
        return key in self.keys

    def add(self, key: str) -> None:
        self.keys[key] = None
        while len(self.keys) > LEDGER_CAPACITY:
            self.keys.popitem(last=False)

    def admit(self, key: str) -> bool:
        """True (and remember it) if the key is new; call in WAL order."""
        if key in self.keys:
            return False
        self.add(key)
        return True


def check_key(key: str) -> None:
    if len(key) > MAX_KEY_LEN:
        raise PgError(INVALID, f"{KEY_SETTING} is longer than {MAX_KEY_LEN} characters")


# ------------------------------------------------------------------ SQL functions

def register_functions() -> None:
    from .. import functions

    if "splitstream_pipeline" in functions.REGISTRY:
        return

    def pipeline_impl(cols, n, ctx):
        names = cols[0].to_pylist()
        out = [None if nm is None else json.dumps(describe(ctx, nm), separators=(",", ":")) for nm in names]
        return Col.from_pylist(out, type_oids.TEXT)

    def merge_impl(cols, n, ctx):
        a, b, c = (x.to_pylist() for x in cols)
        out = []
        for stream, key, payload in zip(a, b, c):
            if stream is None or payload is None:
                out.append(None)
                continue
            out.append(merge_partial(ctx, stream, key, payload))
        return Col.from_pylist(out, type_oids.TEXT)

    def applied_impl(cols, n, ctx):
        ledger = ctx.engine.streams.spark_ledger
        return Col.from_pylist([None if k is None else k in ledger for k in cols[0].to_pylist()], type_oids.BOOL)

    functions.register("splitstream_pipeline", type_oids.TEXT, [type_oids.TEXT], volatile=True)(pipeline_impl)
    functions.register("splitstream_batch_applied", type_oids.BOOL, [type_oids.TEXT], volatile=True)(applied_impl)
    functions.register("splitstream_merge_partial", type_oids.TEXT, [type_oids.TEXT, type_oids.TEXT, type_oids.TEXT], volatile=True)(merge_impl)


def _resolve(ctx, name: str):
    st = ctx.state
    parts = [p.strip().strip('"') for p in name.split(".")]
    if len(parts) == 2:
        rel = st.lookup(parts[0], parts[1])
    else:
        rel = st.lookup("public", parts[0]) or st.lookup("pg_catalog", parts[0])
    if rel is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
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
    from .. import expr

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
    raise NotPushable(f"aggregate {f}() keeps value lists")


def _translate_pipeline(pipe, input_names: list, build_seq: list) -> dict:
    from .. import operators

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
            items, new = [], []
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
            rcols = []
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
        else:
            fn = {"min": "min", "max": "max", "bool_and": "bool_and", "every": "bool_and", "bool_or": "bool_or"}[spec.func]
            items += [f"{_to_transport(f'{fn}({arg}){filt}', spec.arg_oids[0])} AS s{j}_val", f"{cnt} AS s{j}_has"]
        states.append({"func": spec.func, "kind": kind, "arg_type": sqltypes.type_name(spec.arg_oids[0]) if spec.arg_oids else None})
    items.append("count(*) AS n_rows")
    sql = f"SELECT {', '.join(items)} FROM ({sql}) a" + (f" GROUP BY {', '.join(group_by)}" if group_by else "")
    return {"sql": sql, "builds": [b["name"] for b in builds], "keys": keys, "states": states}


def describe(ctx, name: str) -> dict:
    """The JSON description ``splitstream_pipeline(name)`` returns."""
    mgr = ctx.engine.streams
    rel = _resolve(ctx, name)
    cols = [{"name": c.name, "type": sqltypes.format_type(c.type_oid, c.typmod), "oid": c.type_oid,
             "spark_type": SPARK_TYPES.get(c.type_oid, "string")}
            for c in rel.visible_columns]
    if rel.kind != "f":
        kind = {"r": "table", "v": "view"}.get(rel.kind, rel.kind)
        return {"version": 1, "kind": kind, "name": f"{rel.schema}.{rel.name}", "columns": cols,
                "pushable": False, "reason": f"{kind} is not a stream", "views": [], "fingerprint": None}
    return _describe_stream(ctx, mgr, rel, cols)


def _describe_stream(ctx, mgr, rel, cols) -> dict:
    mgr._ensure_views(ctx.state)
    views = sorted(mgr._views_on(rel.oid), key=lambda cv: cv.rel.oid)
    cache_key = (rel.oid, ctx.state.ddl_version, tuple((cv.rel.oid, id(cv)) for cv in views))
    hit = mgr.spark_pipelines.get(rel.oid)
    if hit is not None and hit[0] == cache_key:
        return hit[1]
    input_names = [None if c.hidden else _qi(c.name) for c in rel.live_columns]
    out_views, reasons, build_seq = [], [], []
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
    desc = {"version": 1, "kind": "stream", "name": f"{rel.schema}.{rel.name}", "oid": rel.oid, "columns": cols,
            "views": out_views, "builds": build_seq, "pushable": not reasons,
            "reason": "; ".join(reasons) or None}
    body = json.dumps({k: v for k, v in desc.items() if k != "fingerprint"}, sort_keys=True, separators=(",", ":"),
                      default=str)
    desc["fingerprint"] = hashlib.sha256(body.encode()).hexdigest()[:32]
    mgr.spark_pipelines[rel.oid] = (cache_key, desc)
    return desc


# ------------------------------------------------------------------ merging

def _bad(msg: str) -> PgError:
    return PgError(INVALID, f"invalid partial state: {msg}",
                   hint="Partial states must be computed by the pipeline splitstream_pipeline() describes.")


def _int_array(vals, what: str, lo=-(2 ** 63), hi=2 ** 63 - 1) -> np.ndarray:
    if not all(type(v) is int and lo <= v <= hi for v in vals):
        raise _bad(f"{what} must be integers in [{lo}, {hi}]")
    return np.array(vals, dtype=np.int64)


def _value_col(vals: list, oid: int, what: str) -> Col:
    """Transport values of one key/state column -> a typed Col (validated)."""
    n = len(vals)
    nulls = np.array([v is None for v in vals], dtype=bool)
    present = [v for v in vals if v is not None]
    if oid in (type_oids.INT2, type_oids.INT4, type_oids.INT8):
        lo, hi = {type_oids.INT2: (-(2 ** 15), 2 ** 15 - 1), type_oids.INT4: (-(2 ** 31), 2 ** 31 - 1)}.get(oid, (-(2 ** 63), 2 ** 63 - 1))
        if not all(type(v) is int and lo <= v <= hi for v in present):
            raise _bad(f"{what}: values of type {sqltypes.type_name(oid)} expected")
        data = np.array([0 if v is None else v for v in vals], dtype=sqltypes.dtype_of(oid))
    elif oid in (type_oids.FLOAT4, type_oids.FLOAT8):
        if not all(type(v) in (int, float) for v in present):
            raise _bad(f"{what}: numbers expected")
        data = np.array([0.0 if v is None else float(v) for v in vals], dtype=sqltypes.dtype_of(oid))
    elif oid == type_oids.BOOL:
        if not all(type(v) is bool for v in present):
            raise _bad(f"{what}: booleans expected")
        data = np.array([False if v is None else v for v in vals], dtype=bool)
    elif oid in _STR:
        if not all(type(v) is str for v in present):
            raise _bad(f"{what}: strings expected")
        data = np.array(vals, dtype=object)
    elif oid in (type_oids.TIMESTAMPTZ, type_oids.DATE):
        if not all(type(v) is int for v in present):
            raise _bad(f"{what}: integers expected")
        unit = "datetime64[us]" if oid == type_oids.TIMESTAMPTZ else "datetime64[D]"
        data = np.array([0 if v is None else v for v in vals], dtype=np.int64).astype(unit)
    else:
        raise _bad(f"{what}: type {sqltypes.type_name(oid)} is not accepted")
    return Col(data, nulls if nulls.any() else None, oid)


def _decode_payload(desc: dict, pipe, payload: dict):
    """Validate one payload against the pipeline's state layout -> (keys, states, rows)."""
    pd = payload
    keys_in, states_in, rows = pd.get("keys"), pd.get("states"), pd.get("rows", [])
    key_oids = [k.oid for k in pipe.agg.keys]
    if not isinstance(keys_in, list) or len(keys_in) != len(key_oids):
        raise _bad(f"expected {len(key_oids)} key columns")
    if not isinstance(states_in, list) or len(states_in) != len(pipe.agg.aggs):
        raise _bad(f"expected {len(pipe.agg.aggs)} aggregate states")
    ng = pd.get("groups")
    if type(ng) is not int or ng < 0:
        raise _bad("'groups' must be a non-negative integer")
    if not key_oids and ng != 1:
        raise _bad("an aggregate without GROUP BY has exactly one group")
    kcols = []
    for i, (vals, oid) in enumerate(zip(keys_in, key_oids)):
        if not isinstance(vals, list) or len(vals) != ng:
            raise _bad(f"key column {i} must have {ng} values")
        kcols.append(_value_col(vals, oid, f"key column {i}"))
    keys = list(zip(*[c.to_pylist() for c in kcols])) if kcols else [()] * ng
    if len(set(keys)) != len(keys):
        raise _bad("duplicate group keys")
    states = []
    for j, (spec, st) in enumerate(zip(pipe.agg.aggs, states_in)):
        kind, fields = _state_layout(spec)
        if not isinstance(st, dict) or sorted(st) != sorted(fields):
            raise _bad(f"state {j} ({spec.func}) must have fields {fields}")
        for f in fields:
            if not isinstance(st[f], list) or len(st[f]) != ng:
                raise _bad(f"state {j} field {f} must have {ng} values")
        cnt = _int_array(st["cnt"] if "cnt" in st else st["has"], f"state {j} counts", 0)
        if kind == "count":
            states.append({"cnt": cnt})
        elif kind == "sum_i":
            s = _int_array(st["sum"], f"state {j} sums")
            if (s[cnt == 0] != 0).any():
                raise _bad(f"state {j}: a sum over no rows must be 0")
            states.append({"sum": s, "cnt": cnt})
        elif kind == "sum_f":
            if not all(type(v) in (int, float) for v in st["sum"]):
                raise _bad(f"state {j}: sums must be numbers")
            s = np.array([float(v) for v in st["sum"]], dtype=np.float64)
            if (s[cnt == 0] != 0).any():
                raise _bad(f"state {j}: a sum over no rows must be 0")
            states.append({"sum": s, "cnt": cnt})
        elif kind == "sum_o":
            try:
                vals = [int(v) if isinstance(v, str) and v.lstrip("-").isdigit() else v for v in st["sum"]]
            except ValueError:
                raise _bad(f"state {j}: sums must be integers")
            if not all(type(v) is int for v in vals):
                raise _bad(f"state {j}: sums must be integers")
            s = np.empty(ng, dtype=object)
            s[:] = vals
            if any(v != 0 for v, c in zip(vals, cnt.tolist()) if c == 0):
                raise _bad(f"state {j}: a sum over no rows must be 0")
            states.append({"sum": s, "cnt": cnt})
        else:
            has = cnt > 0
            vc = _value_col(st["val"], spec.arg_oids[0], f"state {j} values")
            if (vc.null_mask() & has).any() or (~vc.null_mask() & ~has).any():
                raise _bad(f"state {j}: a value must be present exactly where rows were counted")
            states.append({"val": vc.data, "has": has})
    if not isinstance(rows, list) or len(rows) not in (0, ng):
        raise _bad("'rows' must have one count per group")
    rows_in = int(_int_array(rows, "row counts", 0).sum()) if rows else 0
    return keys, states, rows_in


def _build_table(pipe, keys: list, states: list, rows_in: int):
    from ..aggregates import CountState, MinMaxState, SumState

    t = pipe.agg.new_table()
    ng = len(keys)
    if ng:
        t.index.lookup_or_add(keys)
    for st, d in zip(t.states, states):
        st.ensure(ng)
        if isinstance(st, CountState):
            st.cnt[:ng] = d["cnt"]
        elif isinstance(st, SumState):
            st.cnt[:ng] = d["cnt"]
            if st.kind == "o":
                for i, v in enumerate(d["sum"].tolist()):
                    st.sum[i] = v
            else:
                st.sum[:ng] = d["sum"].astype(st.sum.dtype)
        elif isinstance(st, MinMaxState):
            st.has[:ng] = d["has"]
            if st.val.dtype == object:
                for i, v in enumerate(d["val"].tolist()):
                    st.val[i] = v
            else:
                st.val[:ng] = d["val"].astype(st.val.dtype)
        else:
            raise _bad("the pipeline's aggregate state is not mergeable from Spark")
    t.rows_in = rows_in
    return t


def merge_record(mgr, stream_oid: int, rec: PartialRecord) -> None:
    cv = mgr.views.get(rec.view_oid)
    if cv is None:
        return
    pipes = cv.pipelines.get(stream_oid, [])
    if rec.pipe_index >= len(pipes):
        return
    pipe = pipes[rec.pipe_index]
    table = _build_table(pipe, rec.keys, rec.states, rec.rows_in)
    with cv.lock:
        pipe.global_.merge(table)
        cv.version += 1


def merge_partial(ctx, stream: str, key: str | None, payload_text: str) -> str:
    mgr = ctx.engine.streams
    rel = _resolve(ctx, stream)
    if rel.kind != "f":
        raise PgError("42809", f'"{rel.name}" is not a stream')
    try:
        payload = json.loads(payload_text)
    except ValueError as e:
        raise _bad(f"payload is not JSON ({e})")
    if not isinstance(payload, dict):
        raise _bad("payload must be a JSON object")
    cols = [{"name": c.name, "type": sqltypes.format_type(c.type_oid, c.typmod), "oid": c.type_oid,
             "spark_type": SPARK_TYPES.get(c.type_oid, "string")} for c in rel.visible_columns]
    desc = _describe_stream(ctx, mgr, rel, cols)
    fp = payload.get("fingerprint")
    if fp != desc["fingerprint"]:
        raise PgError(STALE, f'partial state for stream "{rel.name}" does not match the current plan of its continuous '
                             f'views (fingerprint {fp!r}, current {desc["fingerprint"]!r})',
                      hint="A view on the stream was created, dropped or replaced since the pipeline was fetched; "
                           "fetch it again with splitstream_pipeline() and recompute, or send rows.")
    if not desc["pushable"]:
        raise PgError(STALE, f'stream "{rel.name}" cannot take partial states: {desc["reason"]}')
    view_oid, idx = payload.get("view_oid"), payload.get("pipeline")
    cv = mgr.views.get(view_oid) if type(view_oid) is int else None
    if cv is None or view_oid not in {v["oid"] for v in desc["views"]} or type(idx) is not int \
            or not 0 <= idx < len(cv.pipelines.get(rel.oid, [])):
        raise _bad(f"no pipeline {idx!r} of a continuous view {view_oid!r} on stream \"{rel.name}\"")
    pipe = cv.pipelines[rel.oid][idx]
    keys, states, rows_in = _decode_payload(desc, pipe, payload)
    _build_table(pipe, keys, states, rows_in)         # shape check before logging
    ledger = mgr.spark_ledger
    if key:
        check_key(key)
        if key in ledger:
            return "skipped"
    rec = PartialRecord()
    rec.batch_key, rec.view_oid, rec.pipe_index = key or "", view_oid, idx
    rec.keys, rec.states, rec.rows_in = keys, states, rows_in
    applied = []

    def apply(seq):
        if key and not ledger.admit(key):
            return
        merge_record(mgr, rel.oid, rec)
        applied.append(True)

    sync = ctx.session.sync_commit
    mgr.engine.db.ingest_stream(rel.oid, rec, apply, sync)
    return f"merged {len(keys)} groups" if applied else "skipped"
