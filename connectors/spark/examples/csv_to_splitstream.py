"""Structured Streaming from a directory of CSV files into splitstream.

    python connectors/spark/examples/csv_to_splitstream.py \
        --url postgresql://postgres@127.0.0.1:5433/postgres \
        --input ./events-in --checkpoint ./events-ckpt [--pushdown] [--once] [--generate 5]

Creates (if missing) the stream ``spark_events`` (not the quickstart's
``events``, whose columns differ) and the continuous view
``cost_by_entity``, then watches ``--input`` for CSV files with lines
``entity_id,duration,cost,region`` and feeds each micro-batch through the
splitstream connector: rows over COPY from the executors, or, with
``--pushdown``, the view's partial group states.  Restarting with the same
``--checkpoint`` continues where it stopped, without loss or duplicates.
``--generate N`` first writes N sample files into ``--input``;
``--once`` processes what is there and exits (``availableNow``).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from .._wire import conninfo
from .. import write_stream

SCHEMA = "entity_id int, duration int, cost double, region string"
STREAM = "spark_events"
DDL = [
    f"CREATE FOREIGN TABLE IF NOT EXISTS {STREAM} (entity_id int, duration int, cost float8, region text) SERVER stream",
    "CREATE VIEW cost_by_entity AS SELECT entity_id, count(*) AS calls, sum(duration) AS duration, "
    f"sum(cost) AS cost, max(cost) AS max_cost FROM {STREAM} GROUP BY entity_id",
]


def generate(directory: Path, files: int, rows: int = 1000) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(7)
    start = len(list(directory.glob("*.csv")))
    for i in range(start, start + files):
        tmp = directory / f".events-{i:05d}.tmp"
        with open(tmp, "w") as f:
            for _ in range(rows):
                f.write(f"{rnd.randrange(100)},{rnd.randrange(600)},{rnd.randrange(400) / 4},r{rnd.randrange(5)}\n")
        tmp.rename(directory / f"events-{i:05d}.csv")      # atomic: Spark never sees half a file


def ensure_schema(url: str) -> None:
    import psycopg  # optional dependency


    with psycopg.connect(conninfo(url), autocommit=True) as conn:
        conn.execute(DDL[0])
        if conn.execute("SELECT 1 FROM pg_class WHERE relname = 'cost_by_entity'").fetchone() is None:
            conn.execute(DDL[1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", default=os.environ.get("SPLITSTREAM_URL", "postgresql://postgres@127.0.0.1:5433/postgres"))
    ap.add_argument("--input", default="./events-in")
    ap.add_argument("--checkpoint", default="./events-ckpt")
    ap.add_argument("--master", default=os.environ.get("SPARK_MASTER", "local[2]"))
    ap.add_argument("--pushdown", action="store_true")
    ap.add_argument("--once", action="store_true", help="process the files present, then exit")
    ap.add_argument("--generate", type=int, default=0, metavar="N", help="write N sample CSV files first")
    ap.add_argument("--files-per-batch", type=int, default=2)
    args = ap.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession  # optional dependency


    if args.generate:
        generate(Path(args.input), args.generate)
    ensure_schema(args.url)
    spark = (SparkSession.builder.master(args.master).appName("splitstream-csv-example")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    events = (spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", args.files_per_batch)
              .csv(str(Path(args.input).resolve())))

    def report(batch_id, res):
        print(f"batch {batch_id}: {res.rows} rows, {res.bytes} bytes sent ({res.mode}"
              f"{', %d already applied' % res.skipped if res.skipped else ''})", flush=True)

    trigger = {"availableNow": True} if args.once else {"processingTime": "2 seconds"}
    query = write_stream(events, STREAM, args.url, args.checkpoint, pushdown=args.pushdown,
                         trigger=trigger, on_batch=report, query_name="csv_to_splitstream")
    try:
        if args.once:
            query.awaitTermination()
        else:
            while query.isActive:
                time.sleep(1)
    except KeyboardInterrupt:
        query.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
