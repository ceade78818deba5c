"""The LLVM backend behind the executor's :class:`~splitstream.executor.backends.interface.Backend`
interface: stream pipelines and GROUP BY inputs run through a
:class:`CompiledSink` kept in this module's own cache, keyed by the plan
object it serves (a continuous view's stream pipeline, a GROUP BY operator).
Nothing is stored on the plan: a planned tree is shared by sessions and
threads, and a re-planned one simply gets fresh sinks (compiled modules are
cached by shape in ``jit`` and are reused).  Importing this module installs
the backend."""
from __future__ import annotations

import threading
import time
import weakref
from typing import Any

from splitstream.catalog.datatypes.vector import Batch

from .. import interface as backends
from ...execution import operators
from . import explain as llvm_explain
from . import jit
from .stage import CompiledStage
from .table import float_room
from .runtime import LLVM_CALL_US, LLVM_NS_PER_ROW, MORSEL, SMALL_QUERY_ROWS, CompiledSink, Info, _vec_ns_per_row, \
    count_llvm as _count_llvm


class SinkCache:
    """One CompiledSink per plan object, dropped with the plan."""

    def __init__(self) -> None:
        self._sinks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, key: Any) -> CompiledSink | None:
        return self._sinks.get(key)

    def get_or_make(self, key: Any, ops: list, agg: Any) -> CompiledSink:
        sink = self._sinks.get(key)
        if sink is None:
            with self._lock:
                sink = self._sinks.get(key)
                if sink is None:
                    sink = self._sinks[key] = CompiledSink(ops, agg)
        return sink


class LlvmBackend:
    """Compiled pipelines with the adaptive controller (see ``runtime``)."""

    name = "llvm"

    def __init__(self) -> None:
        self.sinks = SinkCache()

    def sink(self, key: Any) -> CompiledSink | None:
        """The sink kept for a stream pipeline or an Aggregate (benchmarks, tests, EXPLAIN)."""
        return self.sinks.get(key)

    # ------------------------------------------------------------ stream pipelines
    def stream_stage(self, pipe: Any, ctx: Any) -> CompiledStage:
        return CompiledStage(self.sinks.get_or_make(pipe, pipe.ops, pipe.agg), pipe)

    def stream_flush(self, pipe: Any, table: Any) -> None:
        """Native tables -> ``table``."""
        sink = self.sinks.get(pipe)
        if sink is not None and sink.tables:
            sink.flush_into(table, keep=True)

    def native_bytes(self, pipe: Any, holding: bool) -> int:
        sink = self.sinks.get(pipe)
        return sink.native_bytes(holding) if sink is not None else 0

    # ------------------------------------------------------------ GROUP BY queries
    def aggregate(self, agg: Any, ctx: Any) -> Any:
        """A finished GroupTable, or None for the vector path."""
        if agg.grouping_sets is not None:
            return None
        mode = backends.mode(ctx)
        ops = [agg.child] if isinstance(agg.child, operators.Filter) else []
        sink = self.sinks.get_or_make(agg, ops, agg)
        # the plan (and so the sink) is shared: a concurrent execution of the
        # same statement runs on the vector path instead of sharing the tables
        if not sink.busy.acquire(blocking=False):
            return None
        try:
            return self._aggregate(sink, agg, ctx, mode)
        finally:
            sink.busy.release()

    def _aggregate(self, sink: CompiledSink, agg: Any, ctx: Any, mode: str) -> Any:
        sink.info = _fresh_info(sink.info, mode)
        ctx.run.note_backend(agg.child, sink.info)
        if mode == "vector" or not sink.supported:
            sink.info.rows_on_operators = True   # the plain vector path runs
            return None
        plan = sink.plan
        assert plan is not None
        if plan.fused_filter is not None:
            batch = plan.fused_filter.child.execute(ctx)
        else:
            batch = agg.child.execute(ctx)       # includes any (unfused) filter
        table = agg.new_table()
        sink.join()
        sink.tables = []
        sink.deopts_before = 0
        if batch.n:
            _aggregate_batch(sink, batch, table, mode, ctx)
        if plan.fused_filter is not None:
            ctx.run.add_rows(plan.fused_filter, table.rows_in)
        return table

    # ------------------------------------------------------------ EXPLAIN
    def pipeline_tags(self, plan: Any, pipes: list, run: Any, analyze: bool, requested: str) -> list[str]:
        return llvm_explain.pipeline_tags(self.sinks, plan, pipes, run, analyze, requested)

    def stream_tag(self, pipe: Any) -> str:
        return llvm_explain.stream_tag(self.sinks.get(pipe))


def _aggregate_batch(sink: CompiledSink, batch: Batch, table, mode: str, ctx) -> None:
    n = batch.n
    plan, seen = sink.plan, sink.seen_nulls
    assert plan is not None and seen is not None      # a supported sink
    if mode == "auto" and sink.module is None and n < SMALL_QUERY_ROWS and sink.future is None:
        b = batch if plan.fused_filter is None else plan.fused_filter.process(batch, ctx)
        if b.n:                               # tiny input (e.g. a correlated subquery): plain vector
            sink.agg.consume(table, b, ctx)
        sink.info.rows_vector += n
        return
    p = sink.prepare(batch, ctx)
    if p.empty:
        sink.info.backend = "llvm" if sink.module is not None or mode == "llvm" else "vector"
        return
    sink.seen_nulls = [a or b for a, b in zip(seen, p.present)]
    m = sink.module_for(p.present, mode) if sink.ready(mode) else None
    if m is None:                            # auto: decide whether compiling pays for this query
        est_vec = n * (sink.vec_ns or _vec_ns_per_row["ewma"]) / 1e6
        est_llvm = (LLVM_CALL_US * 1e3 + n * LLVM_NS_PER_ROW) / 1e6
        if est_vec - est_llvm > jit.stats["compile_ms_ewma"] or sink.saved_ms > jit.stats["compile_ms_ewma"]:
            sink.start_compile()
        if sink.future is None:               # not compiling: the whole batch on vector, as Aggregate would
            t0 = time.perf_counter()
            sink.run_vector_prepared(p, table, ctx)
            sink.note_vector(n, time.perf_counter() - t0)
            return
        a = 0
        while a < n:                          # vector morsels until the compiled code is ready
            if sink.future is not None and sink.future.done():
                m = sink.module_for(p.present, mode)
                if m is not None:
                    break
            ctx.check_cancel()
            part = batch.slice(a, a + MORSEL)
            t0 = time.perf_counter()
            b = part if plan.fused_filter is None else plan.fused_filter.process(part, ctx)
            if b.n:
                sink.agg.consume(table, b, ctx)
            sink.note_vector(part.n, time.perf_counter() - t0)
            a += MORSEL
        if a >= n:
            return
        p = sink.prepare(batch.slice(a, n), ctx)
        if p.empty:
            return
    if not float_room(p.fbound):            # float8 sums that could overflow: checked, on the vector path
        sink.run_vector_prepared(p, table, ctx)
        return
    sink.run(p, m)
    _count_llvm(sink.info, p.batch.n)
    sink.flush_into(table)


def _fresh_info(old: Info, mode: str) -> Info:
    info = Info()
    info.requested = mode
    info.reason = old.reason
    info.shape_desc = old.shape_desc
    return info


LLVM = LlvmBackend()
backends.install(LLVM)
