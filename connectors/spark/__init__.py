"""PySpark connector for splitstream (``pip install splitstream[spark]``).

* :func:`write` -- batch write of a DataFrame into a stream or table; rows are
  streamed over COPY from the executors, never through the driver.
* :func:`write_stream` -- Structured Streaming sink, exactly-once per
  micro-batch.
* ``pushdown=True`` -- executors run the insert-time half of the target
  stream's continuous views (split maintenance, thesis ch. 4) as Spark SQL
  and ship mergeable partial states instead of rows.
* :func:`describe` -- the server's description of a target and its pipelines.
* :func:`register_changes_source` -- ``spark.readStream.format("splitstream_changes")``:
  a continuous view's changes, read by SUBSCRIBE (PySpark 4's Python data sources).

Plain JDBC (``df.write.jdbc`` / ``spark.read.jdbc`` with pgjdbc) works too;
see the README's "Spark" section.
"""
from .changes import register_changes_source
from .streaming import stable_query_id, write_stream
from .writer import PushdownFallbackWarning, WriteResult, describe, write

__all__ = ["write", "write_stream", "describe", "WriteResult", "PushdownFallbackWarning", "stable_query_id",
           "register_changes_source"]
