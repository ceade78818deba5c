"""Spark pushdown, second half: the merge of partial states shipped by executors.

Executors ship states with ``splitstream_merge_partial(stream, key,
payload)``.  The payload names the pipeline and carries the description's
fingerprint (:mod:`spark_translate`).  The server recomputes the fingerprint
from the current plans and refuses a payload whose fingerprint differs
(stale: a view was created, dropped or replaced since) or whose shape, types
or invariants do not match the pipeline's state layout (forged).  Accepted
states are logged as a stream WAL record
(:class:`catalog.wal_records.PartialMerge`, naming the pipeline by its
fingerprint) with their batch key, and merged into the view's global group
table exactly as thread-local states are.
"""
from __future__ import annotations

import functools
import json
import logging

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.catalog.storage.wal_records import PartialMerge
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

from ...execution.aggregates import CountState, MinMaxState, SumState
from ..change_notify import fire
from ..continuous import pipeline_fingerprints
from . import sketch_states
from .ledger import INVALID, check_key
from .translate import _STR, SPARK_TYPES, _describe_stream, _state_layout, resolve

log = logging.getLogger("splitstream.spark")

STALE = "55000"            # object_not_in_prerequisite_state


def _bad(msg: str) -> PgError:
    return PgError(INVALID, f"invalid partial state: {msg}",
                   hint="Partial states must be computed by the pipeline splitstream_pipeline() describes.")


def _int_array(vals, what: str, lo=-(2 ** 63), hi=2 ** 63 - 1) -> np.ndarray:
    if not all(type(v) is int and lo <= v <= hi for v in vals):
        raise _bad(f"{what} must be integers in [{lo}, {hi}]")
    return np.array(vals, dtype=np.int64)


def _value_col(vals: list, oid: int, what: str) -> Col:
    """Transport values of one key/state column -> a typed Col (validated)."""
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
    states: list[dict] = []
    for j, (spec, st) in enumerate(zip(pipe.agg.aggs, states_in)):
        kind, fields = _state_layout(spec)
        if not isinstance(st, dict) or sorted(st) != sorted(fields):
            raise _bad(f"state {j} ({spec.func}) must have fields {fields}")
        if kind == "sketch":
            try:
                states.append({"fields": sketch_states.load(spec, st["state"], ng)})
            except sketch_states.Refused as e:
                raise _bad(f"state {j} ({spec.func}): {e}") from None
            continue
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
                raise _bad(f"state {j}: sums must be integers") from None
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
    t = pipe.agg.new_table()
    ng = len(keys)
    if ng:
        t.index.lookup_or_add(keys)
    for st, d in zip(t.states, states):
        if "fields" in d:
            sketch_states.install(st, d["fields"])      # checked by sketch_states.load
            continue
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


def merge_record(mgr, rec: PartialMerge) -> None:
    """Merge logged partial states into the pipeline of their fingerprint."""
    cv = mgr.views.get(rec.view_oid)
    if cv is None:
        return
    pipe = dict(pipeline_fingerprints(cv)).get(rec.pipeline)
    if pipe is None:
        log.error('partial states for continuous view "%s" name no pipeline of it (%s); not merged',
                  cv.rel.name, rec.pipeline)
        return
    _merge_table(cv, pipe, _build_table(pipe, rec.keys, rec.states, rec.rows_in))


def _merge_table(cv, pipe, table) -> None:
    with cv.lock:
        pipe.global_.merge(table)
        cv.version += 1


def merge_partial(ctx, stream: str, key: str | None, payload_text: str) -> str:
    mgr = ctx.engine.streams
    rel = resolve(ctx, stream, "a")      # merged states are inserts into the stream: INSERT on it
    if rel.kind != "f":
        raise PgError("42809", f'"{rel.name}" is not a stream')
    try:
        payload = json.loads(payload_text)
    except ValueError as e:
        raise _bad(f"payload is not JSON ({e})") from e
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
    table = _build_table(pipe, keys, states, rows_in)         # all that can fail, before logging
    ledger = mgr.spark_ledger
    if key:
        check_key(key)
        if key in ledger:
            return "skipped"
    fingerprint = next(fp for fp, p in pipeline_fingerprints(cv) if p is pipe)
    rec = PartialMerge(rel.oid, cv.rel.oid, fingerprint, keys, states, rows_in, key or "")

    def apply(seq: int) -> None:
        with mgr.cut.delivering(seq):       # and the readers of output_of(view)
            views = mgr.outputs.merged(cv, lambda: _merge_table(cv, pipe, table), functools.cache(mgr.replay_ctx))
        fire(mgr.engine.db.notifier, views, {v.rel.oid for v in views}, ctx.session.pid)   # WITH (notify), SUBSCRIBE

    seq = mgr.engine.db.ingest_partial(rec, apply, ctx.session.sync_commit,
                                       admit=(lambda: ledger.admit(key)) if key else None)
    return f"merged {len(keys)} groups" if seq else "skipped"
