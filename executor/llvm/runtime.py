"""Running compiled pipelines: argument marshalling, morsel parallelism,
and the adaptive controller that decides when to compile and switch.

:class:`CompiledSink` runs one analysed pipeline (a stream pipeline of a
continuous view, or the input pipeline of a GROUP BY) into thread-local
:class:`NativeTable` objects and converts them into ``GroupTable`` state on
flush.

Backends (``SET executor_backend``):

* ``vector`` – the numpy path, always.
* ``llvm``   – compile synchronously when the shape is supported; otherwise
  the vector path runs and EXPLAIN says why.
* ``auto``   – start on the vector path and measure it; once the time the
  compiled code would have saved exceeds the (measured) compile latency,
  compile in the background and switch at the next batch (stream) or
  morsel (query) boundary.  A module already in the cache is used at once.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from catalog.vector import Batch, Col

from . import jit
from .analyze import KernelPlan, Unsupported, analyse, eval_param
from .table import NativeTable, double_bits

PAR_MIN_ROWS = 1 << 17          # split a batch over 2 threads from this size on
MORSEL = 1 << 16                # morsel size of the adaptive query path
LLVM_NS_PER_ROW = 6.0           # conservative estimate of compiled cost per input row
LLVM_CALL_US = 30.0             # per-batch overhead of the compiled path (marshalling, ctypes)
THREADS = 2

_pool = ThreadPoolExecutor(max_workers=THREADS - 1, thread_name_prefix="llvm-morsel")
_vec_ns_per_row = {"ewma": 40.0}   # vector cost estimate used before a pipeline has measured its own


class Info:
    """What EXPLAIN shows for one pipeline."""

    def __init__(self) -> None:
        self.requested = "auto"
        self.backend = "vector"
        self.variant = "-"
        self.compile_ms = None
        self.rows_vector = 0
        self.rows_llvm = 0
        self.batches_vector = 0
        self.batches_llvm = 0
        self.deopts = 0
        self.reason = ""
        self.shape_desc = ""
        self.threads = 1
        self.state = ""          # "compiling" while a background compile runs

    def tag(self) -> str:
        if self.backend == "llvm":
            s = f"llvm {self.variant}"
            if self.compile_ms is not None:
                s += f", compile={self.compile_ms:.1f} ms"
            s += f", rows={self.rows_llvm}"
            if self.rows_vector:
                s += f" (+{self.rows_vector} on vector before the switch)"
            if self.deopts:
                s += f", deopts={self.deopts}"
            if self.threads > 1:
                s += f", threads={self.threads}"
            return s
        s = "vector" if self.rows_vector is None else f"vector, rows={self.rows_vector}"
        if self.state:
            s += f", {self.state}"
        if self.reason:
            s += f", llvm fallback: {self.reason}" if self.requested == "llvm" else f", not compiled: {self.reason}"
        return s


class CompiledSink:
    def __init__(self, ops: list, agg) -> None:
        self.agg = agg
        self.info = Info()
        self.plan: KernelPlan | None = None
        try:
            self.plan = analyse(ops, agg)
            self.info.shape_desc = self.plan.describe()
        except Unsupported as e:
            self.info.reason = str(e)
        self.module = None
        self.future = None
        self.tables: list[NativeTable] = []
        self.lock = threading.Lock()
        self.saved_ms = 0.0          # auto: time compiled code would have saved so far
        self.vec_ns = None           # this pipeline's measured vector cost per row
        self.allow_specialise = True
        self.force_variant = None    # benchmarks: "generic" pins the hash table
        self.max_threads = THREADS

    @property
    def supported(self) -> bool:
        return self.plan is not None

    # ------------------------------------------------------------ compile control
    def ensure_module(self, mode: str) -> bool:
        """Is compiled code available for this batch?  (may compile / poll)"""
        if self.module is not None:
            return True
        if self.plan is None:
            return False
        if mode == "llvm":
            self._install(jit.compile_shape(self.plan.shape), waited=True)
            return True
        m = jit.cached(self.plan.shape)
        if m is not None:
            self._install(m, waited=False)
            return True
        if self.future is not None and self.future.done():
            try:
                self._install(self.future.result(), waited=False)
            except Exception as e:  # compile failure: stay on vector, visibly
                self.info.reason = f"compile failed: {e}"
                self.plan = None
                return False
            return True
        return False

    def _install(self, m, waited: bool) -> None:
        self.module = m
        self.info.compile_ms = m.compile_ms
        self.info.state = ""

    def note_vector(self, n: int, seconds: float) -> None:
        """auto: account vector work; start a background compile when it pays."""
        info = self.info
        info.rows_vector += n
        info.batches_vector += 1
        if self.plan is None or self.future is not None or n == 0:
            return
        ns = seconds * 1e9 / n
        self.vec_ns = ns if self.vec_ns is None else 0.8 * self.vec_ns + 0.2 * ns
        _vec_ns_per_row["ewma"] = 0.9 * _vec_ns_per_row["ewma"] + 0.1 * ns
        est_llvm = (LLVM_CALL_US * 1e3 + n * LLVM_NS_PER_ROW) / 1e6
        self.saved_ms += max(0.0, seconds * 1e3 - est_llvm)
        if self.saved_ms > jit.stats["compile_ms_ewma"]:
            self.start_compile()

    def start_compile(self) -> None:
        if self.future is None and self.plan is not None:
            self.future = jit.compile_async(self.plan.shape)
            self.info.state = "compiling in background"

    # ------------------------------------------------------------ running
    def _inputs(self, batch: Batch, ctx):
        """Kernel base args for a post-prefix batch, or None if no row can pass."""
        plan = self.plan
        params = []
        for e, dom in plan.param_exprs:
            v = eval_param(e, dom, ctx)
            if v is None:
                return None, None           # comparison with NULL: no row passes
            params.append(v if dom == "i" else double_bits(v))
        keep = []
        self._cols, self._nulls = [], []
        data_ptrs, null_ptrs = [], []
        from .table import NP

        for e, dt in zip(plan.input_exprs, plan.input_dtypes):
            c = e.eval(batch, ctx)
            d = c.data
            want = NP[dt]
            if d.dtype != want or not d.flags.c_contiguous:
                d = np.ascontiguousarray(d, dtype=want)
            keep.append(d)
            data_ptrs.append(d.ctypes.data)
            nm = None
            if c.nulls is not None:
                nm = np.ascontiguousarray(c.nulls, dtype=np.bool_)
                keep.append(nm)
                null_ptrs.append(nm.ctypes.data)
            else:
                null_ptrs.append(0)
            self._cols.append(d)
            self._nulls.append(nm)
        pm_ptr = 0
        if plan.premask_exprs:
            mask = None
            for e in plan.premask_exprs:
                c = e.eval(batch, ctx)
                m = c.data.astype(bool, copy=False)
                if c.nulls is not None:
                    m = m & ~c.nulls
                mask = m if mask is None else (mask & m)
            mask = np.ascontiguousarray(mask, dtype=np.bool_)
            if not mask.any():
                return None, None
            keep.append(mask)
            pm_ptr = mask.ctypes.data
        return data_ptrs + null_ptrs + [pm_ptr] + params, keep

    def _table(self, k: int) -> NativeTable:
        while len(self.tables) <= k:
            t = NativeTable(self.plan.shape)
            if self.tables and self.tables[0].variant == "specialised":
                t0 = self.tables[0]
                t.specialise(t0.mins[: t.nk], t0.ranges[: t.nk])
            self.tables.append(t)
        return self.tables[k]

    def run_compiled(self, batch: Batch, ctx, prefix_done: bool = False) -> None:
        """Push one batch through prefix ops and the kernel into native tables."""
        plan = self.plan
        self.info.backend = "llvm"
        if not prefix_done:
            self.info.rows_llvm += batch.n
            self.info.batches_llvm += 1
            for op in plan.prefix_ops:
                batch = op.process(batch, ctx)
                if batch.n == 0:
                    return
        n = batch.n
        if n == 0:
            return
        base, keep = self._inputs(batch, ctx)
        if base is not None and not self.tables and n >= 256:
            self._profile_first(base, n)
        if prefix_done:
            self.info.rows_llvm += n
            self.info.batches_llvm += 1
        if base is None:
            return
        events: list = []
        if n >= PAR_MIN_ROWS and self.max_threads > 1:
            mid = n // 2
            t0, t1 = self._table(0), self._table(1)
            fut = _pool.submit(t1.run, self.module, base, mid, n, events)
            t0.run(self.module, base, 0, mid, events)
            fut.result()
            self.info.threads = 2
        else:
            self._table(0).run(self.module, base, 0, n, events)
        del keep
        self._cols = self._nulls = None
        for t in self.tables:
            if self.force_variant != "generic":
                t.maybe_specialise(self.allow_specialise)
        self.info.deopts = sum(t.deopts for t in self.tables)
        self._update_variant()

    def _profile_first(self, base: list, n: int) -> None:
        """First batch: profile the key columns (numpy min/max) and start
        specialised right away when the range is small."""
        if self.force_variant == "generic" or not self.allow_specialise:
            return
        plan = self.plan
        mins, ranges = [], []
        for slot in plan.keys:
            d = self._cols[slot]
            nm = self._nulls[slot]
            v = d if nm is None else d[~nm]
            if len(v) == 0:
                mins.append(0)
                ranges.append(0)
                continue
            lo, hi = int(v.min()), int(v.max())
            mins.append(lo)
            ranges.append(hi - lo + (hi - lo) // 8)
        size = NativeTable.dense_size(len(plan.keys), ranges)
        from .table import MAX_DENSE

        if size <= MAX_DENSE and size <= max(2 * n, 4096):
            self._table(0).specialise(mins, ranges)

    def _update_variant(self) -> None:
        vs = {t.variant for t in self.tables}
        if "specialised" in vs and len(vs) == 1:
            self.info.variant = "specialised"
        elif self.info.deopts:
            self.info.variant = "deoptimised"
        else:
            self.info.variant = "generic" if vs == {"generic"} else "mixed"

    def flush_into(self, table) -> None:
        """Move native state into GroupTable ``table`` (merge), then empty it."""
        for t in self.tables:
            if t.ngroups == 0:
                continue
            if len(table.index) == 0 and table.rows_in == 0:
                t.to_group_table(table)
            else:
                tmp = table.empty_like()
                t.to_group_table(tmp)
                table.merge(tmp)
            t.reset()

    def native_bytes(self) -> int:
        return sum(t.nbytes() for t in self.tables)


# ---------------------------------------------------------------- stream pipelines

def stream_process(pipe, batch: Batch, ctx) -> bool:
    """StreamPipeline.process hook.  True: handled here; False: run the vector path."""
    mode = ctx.setting("executor_backend", "auto")
    sink = getattr(pipe, "_llvm", None)
    if mode == "vector":
        if sink is not None:
            sink.info.requested = "vector"
            sink.info.rows_vector += batch.n
            sink.info.batches_vector += 1
            if sink.module is None:
                sink.info.backend = "vector"
        return False
    if sink is None:
        sink = pipe._llvm = CompiledSink(pipe.ops, pipe.agg)
    sink.info.requested = mode
    if sink.ensure_module(mode):
        sink.run_compiled(batch, ctx)
        return True
    if not sink.supported or mode == "llvm":
        sink.info.rows_vector += batch.n
        sink.info.batches_vector += 1
        return False
    # auto, not compiled yet: run the vector path here so it can be timed
    t0 = time.perf_counter()
    n = batch.n
    for op in pipe.ops:
        batch = op.process(batch, ctx)
        if batch.n == 0:
            break
    else:
        pipe.agg.consume(pipe.local, batch, ctx)
    sink.note_vector(n, time.perf_counter() - t0)
    return True


def stream_flush(pipe) -> None:
    """StreamPipeline.merge hook: native tables -> pipe.local (a GroupTable)."""
    sink = getattr(pipe, "_llvm", None)
    if sink is not None and sink.tables:
        sink.flush_into(pipe.local)


# ---------------------------------------------------------------- GROUP BY queries

_sinks: dict = {}
_sinks_lock = threading.Lock()


def aggregate(agg, ctx):
    """Aggregate._execute hook: a finished GroupTable, or None for the vector path."""
    mode = ctx.setting("executor_backend", "auto")
    if agg.grouping_sets is not None:
        return None
    sink = getattr(agg, "_llvm", None)
    if sink is None:
        child = agg.child
        ops = [child] if isinstance(child, _filter_type()) else []
        sink = agg._llvm = CompiledSink(ops, agg)
    sink.info = _fresh_info(sink.info, mode)
    agg.child.llvm_info = sink.info
    if mode == "vector" or not sink.supported:
        sink.info.rows_vector = None        # the plain vector path runs; rows are on the operators
        return None
    if sink.module is not None:
        sink.info.compile_ms = sink.module.compile_ms
    plan = sink.plan
    if plan.fused_filter is not None:
        flt = plan.fused_filter
        batch = flt.child.execute(ctx)
    else:
        batch = agg.child.execute(ctx)
    table = agg.new_table()
    n = batch.n
    sink.tables = []
    if n == 0:
        return table
    if mode == "auto" and sink.module is None and not sink.ensure_module(mode):
        est_vec = n * (sink.vec_ns or _vec_ns_per_row["ewma"]) / 1e6
        est_llvm = (LLVM_CALL_US * 1e3 + n * LLVM_NS_PER_ROW) / 1e6
        if est_vec - est_llvm > jit.stats["compile_ms_ewma"]:
            sink.start_compile()
        # vector morsels until the compiled code is ready
        a = 0
        while a < n:
            if sink.future is not None and sink.ensure_module(mode):
                break
            ctx.check_cancel()
            part = batch.slice(a, a + MORSEL)
            t0 = time.perf_counter()
            b = part
            if plan.fused_filter is not None:
                b = plan.fused_filter.process(b, ctx)
            if b.n:
                agg.consume(table, b, ctx)
            sink.note_vector(part.n, time.perf_counter() - t0)
            a += MORSEL
        if a >= n:
            if plan.fused_filter is not None:
                plan.fused_filter.rows_out += table.rows_in
            return table
        batch = batch.slice(a, n)
    else:
        sink.ensure_module(mode)
    sink.run_compiled(batch, ctx, prefix_done=True)
    sink.flush_into(table)
    if plan.fused_filter is not None:
        plan.fused_filter.rows_out += table.rows_in
    return table


def _fresh_info(old: Info, mode: str) -> Info:
    info = Info()
    info.requested = mode
    info.reason = old.reason
    info.shape_desc = old.shape_desc
    return info


def _filter_type():
    from ..operators import Filter

    return Filter
