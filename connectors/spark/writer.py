"""Batch writes from Spark into splitstream: rows over COPY, or partial states.

Everything heavy runs on the executors: each partition of the DataFrame is
turned into Arrow record batches (``mapInArrow``), encoded as binary (or
CSV) COPY and streamed over its own psycopg connection.  The driver only
fetches the target's description and collects one small statistics row per
partition.

Exactly-once.  Every COPY into a *stream* is preceded by
``SET splitstream.batch_key = '<query>/<batch>/<partition>/<chunk>'``; the
server logs the key in the same WAL record as the rows and skips a key it
has applied before (``executor/stream/spark/ledger.py``).  For a *table*, the key
is inserted into ``splitstream_spark_batches`` (primary key) in the same
transaction as the COPY; a duplicate key rolls the retry back.  Either way a
Spark task retried, or a micro-batch replayed after a crash, is applied
once -- provided the replay produces the same partitions (true for Spark's
file and rate sources and for deterministic DataFrames).

Pushdown.  With ``pushdown=True`` and a stream whose continuous views can
all be pushed (see ``splitstream_pipeline()``), the executors run each
view's stream pipeline as Spark SQL over the batch and ship only the
resulting group states (``splitstream_merge_partial``), keyed the same way.
A stream that cannot be pushed falls back to rows with a warning.
"""
from __future__ import annotations

import functools
import json
import logging
import time
import uuid
import warnings
from dataclasses import dataclass, field

import numpy as np

from splitstream.executor.stream.spark import sketch_states

from . import _wire

log = logging.getLogger("splitstream.spark")

LEDGER_TABLE = "splitstream_spark_batches"
STATS_SCHEMA = "partition int, rows long, bytes long, skipped long, statements long"


class PushdownFallbackWarning(UserWarning):
    """A stream's views cannot be pushed to Spark; rows were sent instead."""


@dataclass
class WriteResult:
    target: str
    mode: str                       # "rows" or "pushdown"
    rows: int = 0                   # rows sent (rows mode) or rows aggregated (pushdown)
    bytes: int = 0                  # COPY / payload bytes sent by the executors
    skipped: int = 0                # chunks or states skipped as already applied
    statements: int = 0
    seconds: float = 0.0
    reason: str | None = None       # why pushdown fell back
    details: list = field(default_factory=list)


# ------------------------------------------------------------------ description

def describe(url: str, target: str, properties: dict | None = None) -> dict:
    """The server's description of ``target``: columns and, for a stream, the
    pipelines of its continuous views (``SELECT splitstream_pipeline(..)``)."""
    import psycopg  # optional dependency

    with psycopg.connect(_wire.conninfo(url, properties), autocommit=True) as conn:
        row = conn.execute("SELECT splitstream_pipeline(%s)", (target,)).fetchone()
    assert row is not None  # a function call returns one row
    return json.loads(row[0])


def _prepare(df, desc: dict):
    """Select the DataFrame's columns that the target has, cast to its types."""
    from pyspark.sql import functions as spark_functions  # optional dependency

    by_name = {c["name"]: c for c in desc["columns"]}
    lower = {c.lower(): c for c in df.columns}
    missing = [c for c in df.columns if c not in by_name and c.lower() not in by_name]
    if missing:
        raise ValueError(f"{desc['name']} has no column(s) {missing}; its columns are {list(by_name)}")
    cols, names = [], []
    for c in desc["columns"]:
        src = c["name"] if c["name"] in df.columns else lower.get(c["name"].lower())
        if src is None:
            continue
        cols.append(spark_functions.col(f"`{src}`").cast(c["spark_type"]).alias(c["name"]))
        names.append(c["name"])
    return df.select(*cols), names


# ------------------------------------------------------------------ rows (executor side)

def _copy_partition(cfg: dict, batches):
    """mapInArrow body: stream one partition's rows over COPY."""
    import psycopg  # optional dependency
    import pyarrow as pa  # optional dependency
    from pyspark import TaskContext  # optional dependency

    ctx = TaskContext.get()
    part = ctx.partitionId() if ctx is not None else 0
    rows = sent = skipped = stmts = 0
    conn = None
    pending: list[pa.RecordBatch] = []
    pending_rows, chunk = 0, 0
    cols_sql = ", ".join(_wire._q1(c) for c in cfg["columns"])
    target = _wire.qident(cfg["target"])

    def flush():
        nonlocal conn, pending, pending_rows, chunk, rows, sent, skipped, stmts
        if not pending_rows:
            return
        table = pa.Table.from_batches(pending)
        pending, pending_rows = [], 0
        key = f"{cfg['query_id']}/{cfg['batch_id']}/{part}/{chunk}"
        chunk += 1
        binary = cfg["format"] == "binary" and _wire.binary_supported(table)
        data = _wire.binary_bytes(table, True, True) if binary else _wire.csv_bytes(table)
        if conn is None:
            conn = psycopg.connect(cfg["conninfo"], autocommit=True)
        copy_sql = f"COPY {target} ({cols_sql}) FROM STDIN (FORMAT {'binary' if binary else 'csv'})"
        if cfg["kind"] == "stream":
            if conn.execute("SELECT splitstream_batch_applied(%s)", (key,)).fetchone()[0]:
                skipped += 1
                stmts += 1
                return
            conn.execute(f"SET splitstream.batch_key = '{key.replace(chr(39), chr(39) * 2)}'")
            _send_copy(conn, copy_sql, data)
            conn.execute("RESET splitstream.batch_key")
            stmts += 3
        else:
            try:
                with conn.transaction():
                    conn.execute(f"INSERT INTO {LEDGER_TABLE} (batch_key, target) VALUES (%s, %s)", (key, cfg["target"]))
                    _send_copy(conn, copy_sql, data)
            except psycopg.errors.UniqueViolation:
                skipped += 1
                return
            finally:
                stmts += 4
        rows += table.num_rows
        sent += len(data)

    try:
        for b in batches:
            if b.num_rows == 0:
                continue
            pending.append(b)
            pending_rows += b.num_rows
            if pending_rows >= cfg["chunk_rows"]:
                flush()
        flush()
    finally:
        if conn is not None:
            conn.close()
    yield pa.RecordBatch.from_pydict({"partition": [part], "rows": [rows], "bytes": [sent], "skipped": [skipped],
                                      "statements": [stmts]},
                                     schema=pa.schema([("partition", pa.int32()), ("rows", pa.int64()),
                                                       ("bytes", pa.int64()), ("skipped", pa.int64()),
                                                       ("statements", pa.int64())]))


def _send_copy(conn, sql: str, data: bytes, piece: int = 1 << 20) -> None:
    with conn.cursor().copy(sql) as cp:
        mv = memoryview(data)
        for i in range(0, len(data), piece):
            cp.write(mv[i:i + piece])


# ------------------------------------------------------------------ pushdown (executor side)

def _send_states(cfg: dict, batches):
    """mapInArrow body: ship one partition's group states to the server."""
    import psycopg  # optional dependency
    import pyarrow as pa  # optional dependency
    from pyspark import TaskContext  # optional dependency

    ctx = TaskContext.get()
    part = ctx.partitionId() if ctx is not None else 0
    tables = [b for b in batches if b.num_rows]
    rows = sent = skipped = stmts = 0
    if tables:
        t = pa.Table.from_batches(tables)
        collected = {f"s{j}_rows" for j, st in enumerate(cfg["states"]) if st["kind"] == "sketch"}
        data = {name: t.column(name).to_pylist() for name in t.column_names if name not in collected}
        ng = t.num_rows
        states = []
        for j, st in enumerate(cfg["states"]):
            if st["kind"] == "sketch":
                states.append({"state": _sketch_state(st, t.column(f"s{j}_rows"))})
            elif st["kind"] == "count":
                states.append({"cnt": data[f"s{j}_cnt"]})
            elif st["kind"].startswith("sum_"):
                states.append({"sum": data[f"s{j}_sum"], "cnt": data[f"s{j}_cnt"]})
            else:
                states.append({"val": data[f"s{j}_val"], "has": data[f"s{j}_has"]})
        payload = {"fingerprint": cfg["fingerprint"], "view_oid": cfg["view_oid"], "pipeline": cfg["pipeline"],
                   "groups": ng, "keys": [data[f"k{i}"] for i in range(cfg["nkeys"])], "states": states,
                   "rows": data["n_rows"]}
        text = json.dumps(payload, separators=(",", ":"))
        key = f"{cfg['query_id']}/{cfg['batch_id']}/v{cfg['view_oid']}.{cfg['pipeline']}/{part}"
        with psycopg.connect(cfg["conninfo"], autocommit=True) as conn:
            row = conn.execute("SELECT splitstream_merge_partial(%s, %s, %s)", (cfg["target"], key, text)).fetchone()
        assert row is not None  # a function call returns one row
        res = row[0]
        stmts += 1
        skipped += res == "skipped"
        rows = int(sum(data["n_rows"]))
        sent = len(text)
    yield pa.RecordBatch.from_pydict({"partition": [part], "rows": [rows], "bytes": [sent], "skipped": [skipped],
                                      "statements": [stmts]},
                                     schema=pa.schema([("partition", pa.int32()), ("rows", pa.int64()),
                                                       ("bytes", pa.int64()), ("skipped", pa.int64()),
                                                       ("statements", pa.int64())]))


def _sketch_state(st: dict, rows) -> str:
    """One sketch aggregate's state over the partition's groups, built by
    splitstream's own state class from the collected arguments (Arrow
    buffers to numpy, no row in Python)."""
    import pyarrow.compute as pc  # optional dependency

    lists = rows.combine_chunks()
    offsets = lists.offsets.to_numpy()
    counts = np.diff(offsets)
    flat = lists.flatten()
    args = []
    for i in range(len(st["arg_oids"])):
        arr = flat.field(i)
        valid = arr.is_valid().to_numpy(zero_copy_only=False)
        if arr.null_count and not (pa_is_string(arr.type)):
            arr = pc.fill_null(arr, pc.cast(0, arr.type) if not pa_is_bool(arr.type) else False)
        args.append((arr.to_numpy(zero_copy_only=False), None if valid.all() else valid))
    return sketch_states.build(st["func"], st["arg_oids"], counts, args)


def pa_is_string(t) -> bool:
    import pyarrow as pa  # optional dependency

    return pa.types.is_string(t) or pa.types.is_large_string(t)


def pa_is_bool(t) -> bool:
    import pyarrow as pa  # optional dependency

    return pa.types.is_boolean(t)


# ------------------------------------------------------------------ driver

def _collect(stats_df, result: WriteResult) -> WriteResult:
    for r in stats_df.collect():
        result.rows += r["rows"]
        result.bytes += r["bytes"]
        result.skipped += r["skipped"]
        result.statements += r["statements"]
    return result


def _ensure_ledger_table(conninfo: str) -> None:
    import psycopg  # optional dependency

    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} (batch_key text PRIMARY KEY, target text, "
                     f"applied_at timestamptz DEFAULT now())")


def _write_rows(df, desc, cfg, result: WriteResult) -> WriteResult:
    prepared, names = _prepare(df, desc)
    cfg = dict(cfg, columns=names, kind=desc["kind"], target=desc["name"])
    if desc["kind"] == "table":
        _ensure_ledger_table(cfg["conninfo"])
    elif desc["kind"] != "stream":
        raise ValueError(f"{desc['name']} is a {desc['kind']}; write to a stream or a table")
    stats = prepared.mapInArrow(functools.partial(_copy_partition, cfg), STATS_SCHEMA)
    return _collect(stats, result)


def _write_pushdown(df, desc, cfg, result: WriteResult) -> WriteResult:
    import pyspark.sql.types as spark_types  # optional dependency

    spark = df.sparkSession
    prepared, _ = _prepare(df, desc)
    tag = _wire.safe_name(uuid.uuid4().hex[:12])
    views = [f"__ss_in_{tag}"]
    prepared.createOrReplaceTempView(views[0])
    try:
        build_names = {}
        for b in desc.get("builds", []):
            schema = spark_types.StructType([spark_types.StructField(c["name"], _spark_type(c["spark_type"]), True) for c in b["columns"]])
            rows = list(zip(*b["rows"])) if b["rows"] else []
            name = f"__ss_{b['name']}_{tag}"
            spark.createDataFrame(rows, schema).createOrReplaceTempView(name)
            views.append(name)
            build_names[b["name"]] = name
        nparts = max(1, cfg.get("state_partitions") or spark.sparkContext.defaultParallelism)
        for v in desc["views"]:
            for p in v["pipelines"]:
                sql = p["sql"].replace("{input}", views[0])
                for bname, real in build_names.items():
                    sql = sql.replace("{" + bname + "}", real)
                states_df = spark.sql(sql).coalesce(nparts)
                pcfg = dict(cfg, target=desc["name"], fingerprint=desc["fingerprint"], view_oid=v["oid"],
                            pipeline=p["index"], nkeys=len(p["keys"]), states=p["states"])
                before = result.rows
                _collect(states_df.mapInArrow(functools.partial(_send_states, pcfg), STATS_SCHEMA), result)
                result.details.append({"view": v["view"], "pipeline": p["index"], "rows": result.rows - before})
    finally:
        for name in views:
            spark.catalog.dropTempView(name)
    if desc["views"]:
        # every pipeline sees every row; report rows once
        result.rows = result.details[0]["rows"] if result.details else 0
    return result


def _spark_type(name: str):
    import pyspark.sql.types as spark_types  # optional dependency

    return {"boolean": spark_types.BooleanType(), "smallint": spark_types.ShortType(), "int": spark_types.IntegerType(),
            "bigint": spark_types.LongType(), "float": spark_types.FloatType(), "double": spark_types.DoubleType(),
            "string": spark_types.StringType(), "date": spark_types.DateType(), "timestamp": spark_types.TimestampType()}[name]


def write(df, target: str, url: str, *, properties: dict | None = None, pushdown: bool = False,
          format: str = "binary", chunk_rows: int = 1_000_000, query_id: str | None = None,
          batch_id: int | str = 0, state_partitions: int | None = None, description: dict | None = None) -> WriteResult:
    """Write a DataFrame into a splitstream stream or table from the executors.

    ``url``: ``jdbc:postgresql://host:port/db?user=..``, ``postgresql://..`` or
    a libpq string.  ``format``: ``binary`` (default; CSV is used for
    columns the binary encoder does not handle) or ``csv``.  ``pushdown``:
    ship partial states of the stream's continuous views instead of rows.
    ``query_id``/``batch_id`` form the exactly-once key; a fresh query id is
    drawn when none is given (then only task retries are deduplicated).
    """
    if format not in ("binary", "csv"):
        raise ValueError("format must be 'binary' or 'csv'")
    t0 = time.perf_counter()
    ci = _wire.conninfo(url, properties)
    desc = description or describe(ci, target)
    cfg = {"conninfo": ci, "query_id": query_id or uuid.uuid4().hex, "batch_id": batch_id, "format": format,
           "chunk_rows": int(chunk_rows), "state_partitions": state_partitions}
    result = WriteResult(target=desc["name"], mode="rows")
    if pushdown and desc["kind"] == "stream":
        if desc["pushable"]:
            result.mode = "pushdown"
            _write_pushdown(df, desc, cfg, result)
            result.seconds = time.perf_counter() - t0
            return result
        result.reason = desc["reason"]
        msg = f"splitstream: cannot push the views of {desc['name']} to Spark ({desc['reason']}); sending rows"
        warnings.warn(msg, PushdownFallbackWarning, stacklevel=2)
        log.warning(msg)
    _write_rows(df, desc, cfg, result)
    result.seconds = time.perf_counter() - t0
    return result
