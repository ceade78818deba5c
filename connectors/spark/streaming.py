"""Structured Streaming sink: ``write_stream(df, target, url, checkpoint)``.

Each micro-batch goes through :func:`connectors.spark.writer.write` inside
``foreachBatch``, keyed by (query id, batch id).  The query id is derived
from the checkpoint location and the target, so a query restarted from its
checkpoint replays a batch under the same key and splitstream skips what it
already applied: exactly-once, with Spark's checkpoint holding the offsets
and splitstream holding the applied keys.
"""
from __future__ import annotations

import hashlib
import logging
import os

from .writer import write

log = logging.getLogger("splitstream.spark")


def stable_query_id(checkpoint: str, target: str) -> str:
    loc = checkpoint if "://" in checkpoint else os.path.abspath(checkpoint)
    return "ss-" + hashlib.sha256(f"{loc}\0{target}".encode()).hexdigest()[:20]


def write_stream(df, target: str, url: str, checkpoint: str, *, pushdown: bool = False,
                 properties: dict | None = None, format: str = "binary", trigger: dict | None = None,
                 query_name: str | None = None, on_batch=None, chunk_rows: int = 1_000_000,
                 output_mode: str = "append"):
    """Start a streaming query that feeds ``target`` (a stream or table).

    ``trigger``: keyword arguments for ``DataStreamWriter.trigger`` (e.g.
    ``{"processingTime": "1 second"}`` or ``{"availableNow": True}``).
    ``on_batch(batch_id, WriteResult)`` is called on the driver after each
    micro-batch.  Returns the ``StreamingQuery``.
    """
    qid = stable_query_id(checkpoint, target)

    def each_batch(batch_df, batch_id):
        res = write(batch_df, target, url, properties=properties, pushdown=pushdown, format=format,
                    query_id=qid, batch_id=int(batch_id), chunk_rows=chunk_rows)
        log.info("batch %s -> %s: %s rows, %s bytes, %s skipped (%s)", batch_id, target, res.rows, res.bytes,
                 res.skipped, res.mode)
        if on_batch is not None:
            on_batch(int(batch_id), res)

    w = df.writeStream.foreachBatch(each_batch).option("checkpointLocation", checkpoint).outputMode(output_mode)
    if trigger:
        w = w.trigger(**trigger)
    if query_name:
        w = w.queryName(query_name)
    return w.start()
