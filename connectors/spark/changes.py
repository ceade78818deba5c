"""Structured Streaming source: a continuous view's changes, read by SUBSCRIBE.

    from splitstream.connectors.spark import register_changes_source
    register_changes_source(spark)
    df = (spark.readStream.format("splitstream_changes")
          .option("url", "postgresql://user@host:5432/db").option("view", "v").load())

Columns: ``mz_timestamp`` (long), ``mz_diff`` (long) and the view's columns,
as ``SUBSCRIBE`` sends them (docs/notifications.md): every change the view
goes through, once and in order, a group's old row with ``mz_diff = -1``
and its new row with ``+1``.  Options: ``url`` (JDBC, postgresql:// or libpq
keywords), ``view``, ``user``/``password``, ``snapshot`` (``true``: the
view's current contents first, the default).

Spark's Python data source API (PySpark 4) runs the reader in one Python
process on the driver for the life of the query; that process holds the
subscription, a thread fills a buffer, and a micro-batch is the buffered
changes from its start offset (``{"row": n}``, rows of this subscription).
A micro-batch Spark runs again before its commit reads the same rows.
Across a restart of the query (its checkpoint keeps the offset) there is
no resumption: the new process subscribes again, and its first micro-batch
is the view's contents at that moment, as rows with ``mz_diff > 0`` (or,
with ``snapshot = false``, only later changes); changes made while no query
ran are in that snapshot, not replayed one by one.
"""
from __future__ import annotations

import threading
from decimal import Decimal
from typing import Iterator

from ._wire import conninfo, qident

NAME = "splitstream_changes"

#: PostgreSQL type oid -> Spark SQL type of the column
SPARK_TYPES = {16: "boolean", 20: "long", 21: "short", 23: "int", 700: "float", 701: "double", 1700: "double",
               25: "string", 1043: "string", 1042: "string", 19: "string", 1082: "date", 1114: "timestamp",
               1184: "timestamp"}


def _connect(options: dict):
    import psycopg          # optional dependency (splitstream[spark])

    return psycopg.connect(conninfo(options["url"], options), autocommit=True)


def spark_schema(options: dict) -> str:
    """The DDL schema of the change rows: SUBSCRIBE's columns and the view's."""
    with _connect(options) as conn:
        cur = conn.execute(f"SELECT * FROM {qident(options['view'])} LIMIT 0")
        cols = [(d.name, d.type_code) for d in cur.description or []]
    parts = ["mz_timestamp long", "mz_diff long"]
    for name, oid in cols:
        if oid not in SPARK_TYPES:
            raise ValueError(f"column {name} of {options['view']} has a type (oid {oid}) the changes source "
                             f"does not map to Spark; cast it in the view")
        parts.append(f"`{name}` {SPARK_TYPES[oid]}")
    return ", ".join(parts)


def _value(v):
    return float(v) if isinstance(v, Decimal) else v


class Subscriber:
    """A SUBSCRIBE on its own thread; rows numbered from ``base`` as they arrive."""

    def __init__(self, options: dict, base: int) -> None:
        self.options = options
        self.base = base                   # the number of the first row held in ``rows``
        self.rows: list[tuple] = []
        self.error: BaseException | None = None
        self.lock = threading.Lock()
        self.conn = _connect(options)
        self.thread = threading.Thread(target=self._run, name="splitstream-subscribe", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        snap = "true" if str(self.options.get("snapshot", "true")).lower() in ("true", "on", "1") else "false"
        sql = f"SUBSCRIBE {qident(self.options['view'])} WITH (SNAPSHOT = {snap})"
        try:
            for row in self.conn.cursor().stream(sql):
                with self.lock:
                    self.rows.append(tuple(_value(v) for v in row))
        except BaseException as e:  # noqa: BLE001 - reported to Spark by the next read
            with self.lock:
                self.error = e
        finally:
            # closed by the thread that reads it: libpq must not free a
            # connection another thread is blocked reading (it crashed the process)
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - best effort at shutdown
                pass

    def upto(self) -> int:
        with self.lock:
            if self.error is not None:
                raise RuntimeError(f"the subscription to {self.options['view']} ended: {self.error}")
            return self.base + len(self.rows)

    def between(self, start: int, end: int) -> list[tuple]:
        with self.lock:
            if start < self.base:
                raise RuntimeError(f"rows {start}..{end} of the subscription were committed and dropped")
            return self.rows[start - self.base:end - self.base]

    def drop_before(self, end: int) -> None:
        with self.lock:
            if end > self.base:
                del self.rows[:end - self.base]
                self.base = end

    def close(self) -> None:
        """Cancel the SUBSCRIBE (a cancel request is safe from any thread);
        the reading thread then ends and closes the connection itself."""
        try:
            self.conn.cancel()
        except Exception:  # noqa: BLE001 - best effort at shutdown
            pass
        self.thread.join(timeout=10)


def _classes():
    """The DataSource and its reader (pyspark imported only where Spark runs them)."""
    from pyspark.sql.datasource import DataSource, SimpleDataSourceStreamReader  # optional dependency

    class ChangesReader(SimpleDataSourceStreamReader):
        def __init__(self, options: dict) -> None:
            self.options = options
            self.sub: Subscriber | None = None

        def _subscriber(self, start: int) -> Subscriber:
            if self.sub is None:            # the first read of this process: a restart numbers on from the checkpoint
                self.sub = Subscriber(self.options, start)
            return self.sub

        def initialOffset(self) -> dict:
            return {"row": 0}

        def read(self, start: dict) -> tuple[Iterator[tuple], dict]:
            sub = self._subscriber(start["row"])
            end = sub.upto()
            return iter(sub.between(start["row"], end)), {"row": end}

        def readBetweenOffsets(self, start: dict, end: dict) -> Iterator[tuple]:
            return iter(self._subscriber(start["row"]).between(start["row"], end["row"]))

        def commit(self, end: dict) -> None:
            if self.sub is not None:
                self.sub.drop_before(end["row"])

        def stop(self) -> None:
            if self.sub is not None:
                self.sub.close()

    class ChangesSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return NAME

        def schema(self) -> str:
            return spark_schema(dict(self.options))

        def simpleStreamReader(self, schema):
            if "url" not in self.options or "view" not in self.options:
                raise ValueError(f"the {NAME} source needs the options url and view")
            return ChangesReader(dict(self.options))

    return ChangesSource


def register_changes_source(spark) -> None:
    """Make ``spark.readStream.format("splitstream_changes")`` available in this session."""
    spark.dataSource.register(_classes())
