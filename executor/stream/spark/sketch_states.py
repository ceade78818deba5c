"""Spark pushdown of the sketch aggregates: executors build the states,
the server checks and merges them.

Why the states themselves: a sketch (HyperLogLog registers, t-digest
centroids, top-k counters, Bloom bits, sets...) cannot be computed by Spark
SQL, and shipping its rows would undo the pushdown.  So the translated
query collects each group's aggregate arguments (``collect_list`` of a
struct), and the executor runs splitstream's own state class over them
(``build``: numpy over the Arrow buffers, no row in Python), settles it and
ships its fields encoded as checkpoints encode them
(``catalog.storage.records``: no pickle), base64 in the JSON payload.  The
server decodes them (``load``), refuses any whose fields, types, shapes or
invariants a state of that aggregate could not have (``_check``), and
merges them like a thread's local state; the write-ahead log keeps the
decoded fields (:class:`PartialMerge`), so replay merges the same.
"""
from __future__ import annotations

import base64
import binascii
import decimal

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.catalog.storage import records
from splitstream.protocol import oids as type_oids

from ...execution.aggregates import AggSpec, AggState
from ...execution.sketches import bloom, cmsketch, hll, tdigest
from ...execution.sketches.entries import EntryState
from ...execution.sketches.keyed import KeyedState

#: Python types of the values an object array of a state may hold, by SQL type
_OBJECT_VALUES: dict[int, type] = {type_oids.TEXT: str, type_oids.VARCHAR: str, type_oids.NAME: str,
                                   type_oids.NUMERIC: decimal.Decimal}


class Refused(ValueError):
    """A shipped state no executor could have built (the message says why)."""


def fields_of(st: AggState) -> dict:
    """A settled state's fields, as a checkpoint saves them."""
    st.settle()
    return {k: v for k, v in vars(st).items() if k != "spec" and not isinstance(v, np.dtype)}


def encode(st: AggState) -> str:
    return base64.b64encode(records.dumps(fields_of(st))).decode("ascii")


def column(values: np.ndarray, valid: np.ndarray | None, oid: int) -> Col:
    """An argument column from transport values (timestamps as microseconds)."""
    nulls = None if valid is None else ~valid
    if oid == type_oids.TIMESTAMPTZ:
        return Col(np.asarray(values, dtype=np.int64).astype("datetime64[us]"), nulls, oid)
    if oid == type_oids.DATE:
        return Col(np.asarray(values, dtype=np.int64).astype("datetime64[D]"), nulls, oid)
    d = sqltypes.dtype_of(oid)
    if d.kind == "O":
        arr = np.empty(len(values), dtype=object)
        arr[:] = list(values)
        return Col(arr, nulls, oid)
    return Col(np.asarray(values).astype(d), nulls, oid)


def build(func: str, arg_oids: list[int], counts: np.ndarray, args: list[tuple[np.ndarray, np.ndarray | None]]) -> str:
    """The encoded state of ``func`` over groups 0..len(counts)-1, group g
    taking ``counts[g]`` consecutive rows of the argument columns."""
    ng = len(counts)
    st = AggSpec(func, [None] * len(arg_oids), arg_oids).make_state()
    st.ensure(ng, exact=True)
    gids = np.repeat(np.arange(ng, dtype=np.int64), counts)
    if len(gids):
        st.update(gids, ng, [column(v, ok, oid) for (v, ok), oid in zip(args, arg_oids)], None)
    return encode(st)


def load(spec: AggSpec, text: object, ng: int) -> dict:
    """The fields of a shipped state of ``spec`` over ``ng`` groups; Refused if
    they are not what an executor builds."""
    if not isinstance(text, str):
        raise Refused("a sketch state must be a base64 string")
    try:
        fields = records.loads(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError, TypeError, KeyError, IndexError) as e:
        raise Refused(f"undecodable sketch state ({e})") from None
    fresh = spec.make_state()
    fresh.ensure(ng, exact=True)
    fresh.settle()
    want = fields_of(fresh)
    if not isinstance(fields, dict):
        raise Refused("a sketch state must be a record of fields")
    # a field may also override a class default (a buffer's count once it was used)
    known = {**{k: getattr(type(fresh), k) for k in fields if isinstance(k, str) and k not in want
                and not k.startswith("_") and isinstance(getattr(type(fresh), k, None), (int, float, np.ndarray))}, **want}
    if not isinstance(fields, dict) or not set(want) <= set(fields) or not set(fields) <= set(known):
        raise Refused(f"{spec.func} state must have fields {sorted(want)}")
    for name, ref in known.items():
        got = fields[name]
        if isinstance(ref, np.ndarray):
            same = got.dtype.kind in _kinds(spec, name) if name in _VALUE_FIELDS else got.dtype == ref.dtype
            if not isinstance(got, np.ndarray) or got.ndim != ref.ndim or not same or not _same_shape(got, ref, ng):
                raise Refused(f"{spec.func} state field {name} has the wrong type or shape")
        elif type(got) is not type(ref) and not (isinstance(ref, (int, float)) and type(got) in (int, float)):
            raise Refused(f"{spec.func} state field {name} has the wrong type")
    st = spec.make_state()
    install(st, fields)
    if st.size < ng:
        raise Refused(f"{spec.func} state holds fewer than {ng} groups")
    _check(spec, st, ng)
    return fields


def _same_shape(got: np.ndarray, ref: np.ndarray, ng: int) -> bool:
    """Per-group arrays hold the shipped groups; rows of registers, centroids
    or counters are as wide as this server's."""
    if ng and len(ref) == ng and len(got) != ng:
        return False
    return ref.ndim < 2 or not ref.shape[1] or got.shape[1:] == ref.shape[1:]


#: fields holding argument values: their dtype is the argument's (object for text, numeric)
_VALUE_FIELDS = {"e_v": -1, "key": 0, "val": 1}


def _kinds(spec: AggSpec, name: str) -> str:
    """numpy kinds a value field may have: the argument's, or object while empty."""
    pos = _VALUE_FIELDS[name]
    if spec.func == "first_values" or spec.func in ("keyed_min", "keyed_max"):
        oid = spec.arg_oids[pos if pos >= 0 else 1]
    else:
        oid = spec.arg_oids[0]
    if oid in (type_oids.TIMESTAMPTZ, type_oids.DATE):
        return "MO"
    return sqltypes.dtype_of(oid).kind + "O"


def install(st: AggState, fields: dict) -> None:
    for k, v in fields.items():
        setattr(st, k, v)


def _check(spec: AggSpec, st, ng: int) -> None:
    """Invariants of each kind of state that its operations rely on."""
    if isinstance(st, hll.HllState):
        if st.regs.shape[1:] != (hll.M,) or (len(st.regs) and int(st.regs.max()) > hll.Q + 1) or st.npend:
            raise Refused("hll registers out of range")
    elif isinstance(st, cmsketch.CountMinState):
        rows = st.counts.reshape(len(st.counts), cmsketch.DEPTH, cmsketch.WIDTH).sum(axis=2, dtype=np.int64)
        if (st.total < 0).any() or len(st.counts) != len(st.total) or (rows != st.total[:, None]).any():
            raise Refused("count-min counters do not add up to the row count")
    elif isinstance(st, tdigest.TDigestState):
        if st.npend or not (np.isfinite(st.means).all() and (st.weights >= 0).all()):
            raise Refused("t-digest centroids out of range")
    elif isinstance(st, bloom.BloomState):
        if st.npend or (len(st.words) and st.words.shape[1] != st.width) or (st.m, st.k) != _bloom_shape(spec, st):
            raise Refused("bloom filter of another size")
    elif isinstance(st, EntryState):
        _check_entries(spec, st, ng)
    elif isinstance(st, KeyedState):
        _check_objects(st.val, st.void)
        _check_objects(st.key, st.koid)
    else:
        raise Refused(f"{spec.func} states are not taken from Spark")


def _bloom_shape(spec, st) -> tuple[int, int]:
    return (st.m, st.k) if len(spec.arg_oids) == 3 else bloom.shape(bloom.DEFAULT_P, bloom.DEFAULT_N)


def _check_entries(spec, st: EntryState, ng: int) -> None:
    ent = st.entries()
    if st.nent != st.nfold or any(len(getattr(st, "e_" + f)) != st.nent for f in st._fields()):
        raise Refused("entries not folded")
    if len(ent["g"]) and (int(ent["g"].min()) < 0 or int(ent["g"].max()) >= ng):
        raise Refused("entries of groups that are not shipped")
    if "c" in ent and len(ent["c"]) and int(ent["c"].min()) < 0:
        raise Refused("negative counts")
    for name in ("total", "err"):
        arr = getattr(st, name, None)
        if arr is not None and len(arr) and int(arr.min()) < 0:
            raise Refused(f"negative {name}")
    if getattr(st, "k", 1) < 1 and len(ent["g"]):
        raise Refused("top-k of k < 1")
    if "v" in ent:
        _check_objects(ent["v"], spec.arg_oids[-1] if spec.func == "first_values" else spec.arg_oids[0])


def _check_objects(values: np.ndarray, oid: int) -> None:
    """An object array of values holds Python values of the argument's type only."""
    if values.dtype.kind != "O" or not len(values):
        return
    kind = _OBJECT_VALUES.get(oid)
    if kind is None or not all(v is None or type(v) is kind for v in values.tolist()):
        raise Refused(f"values of type {sqltypes.type_name(oid)} expected")
