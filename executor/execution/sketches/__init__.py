"""PipelineDB's approximate aggregates (HyperLogLog, t-digest, count-min,
top-k, Bloom filters) and its exact combinable ones (sets, buckets, keyed
min/max, first values) as mergeable aggregate states, and the functions
reading their values.

Importing this package registers them: the aggregates with
``aggregates.install_aggregate`` (so GROUP BY, continuous views,
checkpoints and ``splitstream.views`` treat them as any other state; their
state classes say ``DECIDES_DISTINCT``: DISTINCT is theirs to honour or
refuse), the functions
reading a sketch value in the function catalog, and their overloads in
:data:`AGGREGATE_SIGNATURES` (listed in pg_proc by ``proc_catalog``).
Sketch values are ``bytea``; docs/sketches.md gives formats and error bounds.
"""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids

from .. import aggregates, functions
from . import bloom, cmsketch, hll, keyed, sets, tdigest, topk

#: The sketch aggregates' overloads, in pg_proc's words.
AGGREGATE_SIGNATURES: dict[str, str] = {
    "hll_agg": "any -> bytea",
    "hll_union_agg": "bytea -> bytea",
    "hll_count_distinct": "any -> int8",
    "approx_count_distinct": "any -> int8",
    "dist_agg": "float8 -> bytea",
    "freq_agg": "any -> bytea",
    "freq_merge_agg": "bytea -> bytea",
    "topk_agg": "anyelement, int4 -> bytea | anyelement, int4, int8 -> bytea | anyelement, int4, int4, int4 -> bytea",
    "bloom_agg": "anyelement -> bytea | anyelement, float8, int8 -> bytea",
    "bloom_union_agg": "bytea -> bytea",
    "bloom_intersection_agg": "bytea -> bytea",
    "set_agg": "anyelement -> anyarray",
    "exact_count_distinct": "anyelement -> int8",
    "keyed_min": "any, anyelement -> anyelement",
    "keyed_max": "any, anyelement -> anyelement",
    "first_values": "int4, anyelement -> anyarray | int4, anyelement, any -> anyarray"
                    " | int4, anyelement, any, any -> anyarray",
    "bucket_agg": "anyelement, int2 -> bytea | anyelement, int2, timestamptz -> bytea",
}

_NUMERIC_INPUTS = (type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.FLOAT4, type_oids.FLOAT8,
                   type_oids.NUMERIC, type_oids.UNKNOWN)


def _result(oid: int, accepts=None):
    """Result type function: -1 (42883 at bind) for argument types with no overload."""
    def result(arg_oids: list[int]) -> int:
        if accepts is not None and (not arg_oids or arg_oids[0] not in accepts):
            return -1
        return oid
    return result


for _name in ("hll_agg", "hll_count_distinct", "approx_count_distinct", "hll_union_agg"):
    _bytes_out = _name in hll.HllState.SKETCH_RESULTS
    _accepts = (type_oids.BYTEA,) if _name == "hll_union_agg" else None
    aggregates.install_aggregate(_name, hll.HllState, _result(type_oids.BYTEA if _bytes_out else type_oids.INT8, _accepts))
aggregates.install_aggregate("dist_agg", tdigest.TDigestState, _result(type_oids.BYTEA, _NUMERIC_INPUTS))
aggregates.install_aggregate("freq_agg", cmsketch.CountMinState, _result(type_oids.BYTEA))
aggregates.install_aggregate("freq_merge_agg", cmsketch.CountMinState, _result(type_oids.BYTEA, (type_oids.BYTEA,)))
_INTS = (type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.UNKNOWN)


def _topk_result(arg_oids: list[int]) -> int:
    if len(arg_oids) not in (2, 3, 4) or any(a not in _INTS for a in arg_oids[1:]):
        return -1
    return type_oids.BYTEA


def _bloom_result(arg_oids: list[int]) -> int:
    if len(arg_oids) == 3 and arg_oids[1] in _NUMERIC_INPUTS and arg_oids[2] in _INTS:
        return type_oids.BYTEA
    return type_oids.BYTEA if len(arg_oids) == 1 else -1


def _set_result(arg_oids: list[int]) -> int:
    return type_oids.ARRAY_OF.get(arg_oids[0], -1) if len(arg_oids) == 1 else -1


aggregates.install_aggregate("topk_agg", topk.TopKState, _topk_result)
aggregates.install_aggregate("bloom_agg", bloom.BloomState, _bloom_result)
for _name in ("bloom_union_agg", "bloom_intersection_agg"):
    aggregates.install_aggregate(_name, bloom.BloomState, _result(type_oids.BYTEA, (type_oids.BYTEA,)))
aggregates.install_aggregate("set_agg", sets.SetState, _set_result)
aggregates.install_aggregate("exact_count_distinct", sets.SetState, _result(type_oids.INT8))
aggregates.install_aggregate("bucket_agg", sets.BucketState, sets.bucket_agg_result)
for _name in ("keyed_min", "keyed_max"):
    aggregates.install_aggregate(_name, keyed.KeyedState, keyed.keyed_result)
aggregates.install_aggregate("first_values", keyed.FirstValuesState, keyed.first_values_result)


@functions.register("hll_cardinality", sigs="bytea -> int8")
def _hll_cardinality(cols: list[Col], n: int, ctx) -> Col:
    return hll.cardinality_col(cols[0])


@functions.register("freq", sigs="bytea, any -> int4")
def _freq(cols: list[Col], n: int, ctx) -> Col:
    return cmsketch.freq_col(cols[0], cols[1])


@functions.register("freq_total", sigs="bytea -> int8")
def _freq_total(cols: list[Col], n: int, ctx) -> Col:
    return cmsketch.total_col(cols[0])


@functions.register("freq_add", sigs="bytea, anyelement -> bytea | bytea, text -> bytea | bytea, anyelement, int4 -> bytea",
                    strict=False)
def _freq_add(cols: list[Col], n: int, ctx) -> Col:
    """The three-argument form is declared ``RETURNS float8`` in
    pipelinedb--1.0.0.sql, a slip: its C returns the cmsketch, as here."""
    return cmsketch.add_col(cols[0], cols[1], cols[2] if len(cols) > 2 else None)


@functions.register("freq_norm", sigs="bytea, anyelement -> float8", strict=False)
def _freq_norm(cols: list[Col], n: int, ctx) -> Col:
    return cmsketch.norm_col(cols[0], cols[1])


@functions.register("hll_add", sigs="bytea, anyelement -> bytea | bytea, text -> bytea", strict=False)
def _hll_add(cols: list[Col], n: int, ctx) -> Col:
    return hll.add_col(cols[0], cols[1])


@functions.register("hll_union", sigs="variadic bytea -> bytea", strict=False)
def _hll_union(cols: list[Col], n: int, ctx) -> Col:
    return hll.union_col(cols)


@functions.register("dist_add", sigs="bytea, float8 -> bytea | bytea, float8, int4 -> bytea", strict=False)
def _dist_add(cols: list[Col], n: int, ctx) -> Col:
    return tdigest.add_col(cols[0], cols[1], cols[2] if len(cols) > 2 else None)


functions.scalar("dist_quantile", sigs="bytea, float8 -> float8")(tdigest.quantile)
functions.scalar("dist_cdf", sigs="bytea, float8 -> float8")(tdigest.cdf)



@functions.register("topk_values", sigs="bytea -> _text | bytea, anyarray -> anyarray", strict=False)
def _topk_values(cols: list[Col], n: int, ctx) -> Col:
    return topk.values_col(cols[0], cols[1] if len(cols) > 1 else None)


@functions.register("topk_freqs", sigs="bytea -> _int8")
def _topk_freqs(cols: list[Col], n: int, ctx) -> Col:
    return topk.freqs_col(cols[0])


@functions.register("topk_increment", sigs="bytea, anyelement -> bytea | bytea, anyelement, int8 -> bytea", strict=False)
def _topk_increment(cols: list[Col], n: int, ctx) -> Col:
    return topk.increment_col(cols[0], cols[1], cols[2] if len(cols) > 2 else None)


@functions.register("bloom_contains", sigs="bytea, anyelement -> bool")
def _bloom_contains(cols: list[Col], n: int, ctx) -> Col:
    return bloom.contains_col(cols[0], cols[1])


@functions.register("bloom_add", sigs="bytea, anyelement -> bytea", strict=False)
def _bloom_add(cols: list[Col], n: int, ctx) -> Col:
    ok = cols[0].valid_mask() & cols[1].valid_mask()
    out = [bloom.add(f, cols[1].take(np.array([i]))) if good else f
           for i, (f, good) in enumerate(zip(cols[0].to_pylist(), ok.tolist()))]     # per call's row
    return Col.from_pylist(out, type_oids.BYTEA)


functions.scalar("bloom_cardinality", sigs="bytea -> int8")(bloom.cardinality)
functions.scalar("bloom_empty", sigs=" -> bytea | float8, int8 -> bytea")(bloom.empty)


def _variadic_blooms(how: str):
    def impl(cols: list[Col], n: int, ctx) -> Col:
        lists = [c.to_pylist() for c in cols]
        return Col.from_pylist([bloom.combine([col[i] for col in lists], how) for i in range(n)], type_oids.BYTEA)
    return impl


functions.register("bloom_union", sigs="variadic bytea -> bytea", strict=False)(_variadic_blooms("union"))
functions.register("bloom_intersection", sigs="variadic bytea -> bytea", strict=False)(_variadic_blooms("intersection"))
functions.scalar("set_cardinality", sigs="anyarray -> int4")(sets.set_cardinality)
functions.scalar("bucket_cardinality", sigs="bytea -> int8")(lambda b: int(sets.buckets_of(b)[1].sum()))
functions.scalar("bucket_ids", sigs="bytea -> _int2")(lambda b: sets.buckets_of(b)[0].tolist())
functions.scalar("bucket_cardinalities", sigs="bytea -> _int4")(lambda b: sets.buckets_of(b)[1].tolist())

#: PipelineDB's sketch functions and aggregates (builtin.rst, aggregates.rst,
#: pipelinedb--1.0.0.sql) that splitstream refuses: 0A000 with these hints
_SKETCH_PARAMETERS = ("splitstream's sketches have fixed parameters (hyperloglog p = 14; cmsketch epsilon 0.002, "
                      "confidence 0.995; tdigest compression 100): ")
functions.NOT_IMPLEMENTED.update({
    "hll_empty": "A NULL hyperloglog is the empty one: hll_add(NULL, x) starts a sketch.",
    "cmsketch_empty": "A NULL cmsketch is the empty one: freq_add(NULL, x) starts a sketch.",
    "tdigest_empty": "A NULL tdigest is the empty one: dist_add(NULL, x) starts a digest.",
    "topk_empty": "topk_increment(NULL, x) starts a top-k sketch; or topk_agg(x, k) over rows.",
    "topk_merge_agg": "Merge top-k sketches with combine(column) over a continuous view's topk_agg column.",
    **dict.fromkeys(("hll_print", "cmsketch_print", "topk_print", "bloom_print"),
                    "Sketches are bytea values here (docs/sketches.md); read them with their functions "
                    "(hll_cardinality, freq, topk_values, bloom_cardinality ...)."),
    "tdigest_compress": "Digests are kept compressed: dist_agg and dist_add compress as they go.",
    "hll_cache_cardinality": "Use hll_cardinality(hyperloglog).",
    "json_object_int_sum": "Sum per key with GROUP BY key and sum(value) instead.",
})
#: documented overloads with sketch parameters, by (name, number of arguments)
REFUSED_OVERLOADS: dict[tuple[str, int], str] = {
    ("hll_agg", 2): _SKETCH_PARAMETERS + "use hll_agg(x).",
    ("freq_agg", 3): _SKETCH_PARAMETERS + "use freq_agg(x).",
    ("dist_agg", 2): _SKETCH_PARAMETERS + "use dist_agg(x).",
}

__all__ = ["AGGREGATE_SIGNATURES", "bloom", "cmsketch", "hll", "keyed", "sets", "tdigest", "topk"]
