"""A background compile that fails leaves the pipeline on the vector backend.

``CompiledSink.module_for`` drops the sink's kernel plan when the compile
fails; the batch already prepared for the kernel must still run on the vector
path with the plan it was prepared by (its fused WHERE included) instead of
failing the INSERT (mypy found the unguarded ``self.plan.fused_filter``)."""
from __future__ import annotations

from concurrent.futures import Future

from splitstream.executor.backends.llvm import jit
from splitstream.executor.backends.llvm.backend import LLVM

from .conftest import Sql, canon, values


def _failed(shape) -> Future:
    fut: Future = Future()
    fut.set_exception(RuntimeError("injected compile failure"))
    return fut


def test_stream_pipeline_survives_failed_compile(sql: Sql, monkeypatch):
    s, v = sql.name("cf"), sql.name("cfv")
    sql(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
    sql(f"CREATE VIEW {v} AS SELECT k, count(*), sum(x) FROM {s} WHERE x > 0 GROUP BY k")
    monkeypatch.setattr(jit, "compile_async", _failed)
    monkeypatch.setattr(jit, "cached", lambda shape: None)
    monkeypatch.setitem(jit.stats, "compile_ms_ewma", 0.0)     # compiling pays at once
    sql.backend("auto")
    rows = [(i % 7, i % 5 - 2) for i in range(300)]
    sql(f"INSERT INTO {s} VALUES {values(rows)}")       # vector; starts the (failing) compile
    sql(f"INSERT INTO {s} VALUES {values(rows)}")       # meets the failure
    sql(f"INSERT INTO {s} VALUES {values(rows)}")       # no kernel plan left: vector
    (cv,) = [c for c in sql.engine.streams.views.values() if c.rel.name == v]
    (pipe,) = [p for ps in cv.pipelines.values() for p in ps]
    sink = LLVM.sink(pipe)
    assert not sink.supported and sink.info.reason.startswith("compile failed")
    expected: dict = {}
    for k, x in rows * 3:
        if x > 0:
            c, t = expected.get(k, (0, 0))
            expected[k] = (c + 1, t + x)
    assert canon(sql.rows(f"SELECT * FROM {v}")) == canon([(k, c, t) for k, (c, t) in expected.items()])
