"""PipelineDB's approximate aggregates (HyperLogLog, t-digest, count-min) as
mergeable aggregate states, and the functions reading their values.

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

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids

from .. import aggregates, functions
from . import cmsketch, hll, tdigest

#: The sketch aggregates' overloads, in pg_proc's words.
AGGREGATE_SIGNATURES: dict[str, str] = {
    "hll_agg": "any -> bytea",
    "hll_union_agg": "bytea -> bytea",
    "hll_count_distinct": "any -> int8",
    "approx_count_distinct": "any -> int8",
    "dist_agg": "float8 -> bytea",
    "freq_agg": "any -> bytea",
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


@functions.register("hll_cardinality", sigs="bytea -> int8")
def _hll_cardinality(cols: list[Col], n: int, ctx) -> Col:
    return hll.cardinality_col(cols[0])


@functions.register("freq", sigs="bytea, any -> int4")
def _freq(cols: list[Col], n: int, ctx) -> Col:
    return cmsketch.freq_col(cols[0], cols[1])


@functions.register("freq_total", sigs="bytea -> int8")
def _freq_total(cols: list[Col], n: int, ctx) -> Col:
    return cmsketch.total_col(cols[0])


functions.scalar("dist_quantile", sigs="bytea, float8 -> float8")(tdigest.quantile)
functions.scalar("dist_cdf", sigs="bytea, float8 -> float8")(tdigest.cdf)

__all__ = ["AGGREGATE_SIGNATURES", "cmsketch", "hll", "tdigest"]
