"""The SQL functions of Spark pushdown and exactly-once ingest, which the
connector (``connectors/spark``) calls: ``splitstream_pipeline``,
``splitstream_batch_applied`` and ``splitstream_merge_partial``."""
from __future__ import annotations

import json

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids

from ...execution import functions
from .merge import merge_partial
from .translate import describe


def register_functions() -> None:
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
    # not strict: the batch key may be NULL (no exactly-once key)
    functions.register("splitstream_merge_partial", type_oids.TEXT, [type_oids.TEXT, type_oids.TEXT, type_oids.TEXT],
                       volatile=True, strict=False)(merge_impl)
