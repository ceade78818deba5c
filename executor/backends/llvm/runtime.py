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

NULL handling is speculated per input column: a module reads the NULL mask
only of columns that had NULLs when it was compiled.  A batch with NULLs in
another column is a (batch-level) guard failure: ``llvm`` compiles the
wider module at once, ``auto`` runs that batch on the vector backend while
the wider module compiles in the background.  Both backends sink into
mergeable states, so switching per batch is always exact.
"""
from __future__ import annotations

import collections
import threading
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from splitstream.catalog.datatypes.vector import Batch

from ...execution import expr
from ...execution.operators import conjunct_mask
from . import jit
from .analyze import KernelPlan, Unsupported, analyse, eval_param
from .table import MAX_DENSE, NP, NativeTable, double_bits, float_bound, float_room, headroom

_MICROS = np.dtype("datetime64[us]")

PAR_MIN_ROWS = 1 << 17          # split a batch over 2 threads from this size on
MORSEL = 1 << 16                # morsel size of the adaptive query path
PAR_MORSEL = 1 << 14            # morsel of the 2-thread path: taken in native code (an atomic add, no
                                # Python, no GIL), so small morsels balance well at no cost
LLVM_NS_PER_ROW = 6.0           # conservative estimate of compiled cost per input row
LLVM_CALL_US = 30.0             # per-batch overhead of the compiled path (marshalling, ctypes)
THREADS = 2
SMALL_QUERY_ROWS = 4096         # auto: below this a GROUP BY input never compiles
FIRST_PROFILE_MIN = 256         # a first batch this large is profiled for a dense key range

_pool = ThreadPoolExecutor(max_workers=THREADS - 1, thread_name_prefix="llvm-morsel")
_vec_ns_per_row = {"ewma": 40.0}   # vector cost estimate used before a pipeline has measured its own
_zeros = {"buf": np.zeros(1 << 16, np.bool_)}
_zeros_lock = threading.Lock()


def _zero_mask(n: int) -> np.ndarray:
    """A shared all-false NULL mask for nullable-compiled columns without NULLs."""
    buf = _zeros["buf"]
    if len(buf) < n:
        with _zeros_lock:
            buf = _zeros["buf"]
            if len(buf) < n:
                buf = np.zeros(max(n, 2 * len(buf)), np.bool_)
                _zeros["buf"] = buf
    return buf


class Info:
    """What EXPLAIN shows for one pipeline."""

    def __init__(self) -> None:
        self.requested = "auto"
        self.backend = "vector"
        self.variant = "-"
        self.compile_ms = None
        self.compile_detail = ""
        self.progress = ""       # auto: how close compiling is to paying off
        self.rows_vector = 0
        self.rows_on_operators = False   # the plain vector operators ran: EXPLAIN counts rows there
        self.rows_llvm = 0
        self.batches_vector = 0
        self.batches_llvm = 0
        self.deopts = 0
        self.reason = ""
        self.shape_desc = ""
        self.threads = 1
        self.state = ""          # "compiling in background" while a compile runs

    def tag(self) -> str:
        if self.backend == "llvm":
            s = f"llvm {self.variant}"
            if self.compile_ms is not None:
                s += f", compile={self.compile_ms:.1f} ms CPU" + (f" ({self.compile_detail})" if self.compile_detail else "")
            s += f", rows={self.rows_llvm}"
            if self.rows_vector:
                s += f" (+{self.rows_vector} on vector before the switch)"
            if self.deopts:
                s += f", deopts={self.deopts}"
            if self.threads > 1:
                s += f", threads={self.threads}"
            if self.state:
                s += f", {self.state}"
            return s
        s = "vector" if self.rows_on_operators else f"vector, rows={self.rows_vector}"
        if self.state:
            s += f", {self.state}"
        elif self.requested == "auto" and self.progress:
            s += f", {self.progress}"
        if self.reason:
            s += f", llvm fallback: {self.reason}" if self.requested == "llvm" else f", not compiled: {self.reason}"
        return s


def count_vector(info: Info, n: int) -> None:
    info.rows_vector += n
    info.batches_vector += 1


def count_llvm(info: Info, n: int) -> None:
    info.rows_llvm += n
    info.batches_llvm += 1


class KernelInputs:
    """A post-prefix batch with its kernel inputs."""

    __slots__ = ("plan", "batch", "base", "keep", "present", "cols", "nulls", "empty", "fbound")
    plan: KernelPlan                 # the plan it was prepared by (the sink may drop its own)
    batch: Batch
    base: list[int] | None
    keep: list
    present: list[bool]
    cols: list
    nulls: list
    empty: bool
    fbound: float                    # what it may add to a float8 sum (table.float_bound)


def key_bounds(p: KernelInputs, j: int) -> tuple[int, int]:
    """[min, max] of key ``j``'s native values in a batch, for profiling.  A
    pane index (``codegen.Shape.panes``) is monotone in its timestamp, so
    only the timestamps' extremes are turned into panes (no pass computing
    every row's pane; a hop index widens the range by its own extremes)."""
    shape = p.plan.shape
    assert shape is not None
    slot = p.plan.keys[j]
    d, nm = p.cols[slot], p.nulls[slot]
    v = d if nm is None else d[~nm]
    if not len(v):
        return 0, 0
    lo, hi = int(v.min()), int(v.max())
    pane = shape.pane(j)
    if pane is None:
        return lo, hi
    slide, origin, hop = pane
    lo, hi = (lo - origin) // slide, (hi - origin) // slide
    if hop >= 0:
        h = p.cols[hop]
        lo, hi = lo - int(h.max()), hi - int(h.min())
    return lo, hi


class CompiledSink:
    def __init__(self, ops: list, agg) -> None:
        self.agg = agg
        self.info = Info()
        self.plan: KernelPlan | None = None
        try:
            self.plan = analyse(ops, agg)
            self.info.shape_desc = self.plan.describe()
            jit.warm_soon()
        except Unsupported as e:
            self.info.reason = str(e)
        self.module = None
        self.future: Future | None = None
        self.future_shape = None
        self.tables: list[NativeTable] = []
        self.seen_nulls: list[bool] = [] if self.plan is None else [False] * len(self.plan.input_exprs)
        self.saved_ms = 0.0          # auto: time compiled code would have saved so far
        self.vec_ns: float | None = None    # this pipeline's measured vector cost per row
        self.allow_specialise = True
        self.force_variant = None    # benchmarks: "generic" pins the hash table
        self.max_threads = THREADS
        self._queue: collections.deque = collections.deque()   # parallel morsels not yet taken
        self._qlock = threading.Lock()
        #: a private table (run_private) emptied after it was added in, reused by the next statement
        self._spare: NativeTable | None = None
        self._spare_lock = threading.Lock()
        self._helper: Future | None = None          # the helper's running drain, if any
        self._helper_table: NativeTable | None = None    # the table it applies morsels into
        self.deopts_before = 0       # deoptimisations of tables freed at earlier flushes
        self.busy = threading.Lock()  # GROUP BY: held by the one execution using the tables

    @property
    def supported(self) -> bool:
        return self.plan is not None

    # ------------------------------------------------------------ compile control
    def _shape(self, nullable) -> object:
        assert self.plan is not None and self.plan.shape is not None     # only supported sinks compile
        return self.plan.shape.with_nullable(tuple(bool(x) for x in nullable))

    def _covers(self, m, present) -> bool:
        return all(c or not p for c, p in zip(m.shape.nullable, present))

    def module_for(self, present, mode: str):
        """A module whose NULL speculation covers ``present``; None = not ready."""
        m = self.module
        if m is not None and self._covers(m, present):
            return m
        want = present if m is None else [a or b for a, b in zip(m.shape.nullable, present)]
        want = [a or b for a, b in zip(want, self.seen_nulls)]
        shape = self._shape(want)
        if mode == "llvm":            # variants compile synchronously on first use (see run)
            jit.runtime()
            return self._install(jit._module(shape))
        got = jit.cached(shape)
        if got is not None:
            return self._install(got)
        if self.future is not None and self.future.done():
            fut, self.future = self.future, None
            try:
                got = fut.result()
            except Exception as e:  # compile failure: stay on vector, visibly
                self.info.reason = f"compile failed: {e}"
                self.plan = None
                return None
            if self._covers(got, present):
                return self._install(got)
        if self.future is None:         # compile (or widen the NULL speculation) in the background
            self.start_compile(shape)
        return None

    def _install(self, m):
        self.module = m
        self.info.compile_ms = m.compile_ms
        self.info.state = ""
        return m

    def ready(self, mode: str) -> bool:
        """auto/llvm: is (or could be, in llvm mode) compiled code in place?"""
        if self.plan is None:
            return False
        if self.module is not None or mode == "llvm":
            return True
        if jit.cached(self._shape(self.seen_nulls)) is not None:
            return True
        return self.future is not None and self.future.done()

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
        info.progress = (f"auto: compiles once the estimated saving ({self.saved_ms:.1f} ms so far) "
                         f"exceeds the compile cost (~{jit.stats['compile_ms_ewma']:.1f} ms)")
        if self.saved_ms > jit.stats["compile_ms_ewma"] and self.module is None:
            self.start_compile()

    def observe_nulls(self, batch: Batch) -> None:
        """auto, before compiling: which input columns carry NULLs."""
        plan = self.plan
        if plan is None:
            return
        for k, e in enumerate(plan.input_exprs):
            if plan.prefix_ops or not isinstance(e, expr.ColRef):
                self.seen_nulls[k] = True
            elif batch.cols[e.idx].nulls is not None:
                self.seen_nulls[k] = True

    def start_compile(self, shape=None) -> None:
        if self.future is None and self.plan is not None:
            shape = shape or self._shape(self.seen_nulls)
            self.future = jit.compile_async(shape)
            self.info.state = "compiling in background"

    # ------------------------------------------------------------ running
    def prepare(self, batch: Batch, ctx, run_ops=None) -> KernelInputs:
        """Kernel inputs of one batch.  ``run_ops(batch, ctx, ops)``: a stream
        pipeline's runner of its vector prefix (the pipeline holds the builds
        its joins probe); None: the batch is already past it (GROUP BY)."""
        plan = self.plan
        assert plan is not None          # only supported sinks run
        p = KernelInputs()
        p.plan = plan
        p.empty = False
        p.fbound = 0.0
        if run_ops is not None and plan.prefix_ops:
            batch = run_ops(batch, ctx, plan.prefix_ops)
        p.batch = batch
        p.base = None
        if batch.n == 0:
            p.empty = True
            return p
        params = []
        for e, dom in plan.param_exprs:
            v = eval_param(e, dom, ctx)
            if v is None:
                p.empty = True          # comparison with NULL: no row passes
                return p
            params.append(v if dom == "i" else double_bits(v))
        keep, cols, nulls, present = [], [], [], []
        for e, dt in zip(plan.input_exprs, plan.input_dtypes):
            c = e.eval(batch, ctx)
            d = c.data
            want = NP[dt]
            if d.dtype == _MICROS:
                d = d.view(np.int64)        # a timestamp key: its int64 microseconds, not copied
            if d.dtype != want or not d.flags.c_contiguous:
                d = np.ascontiguousarray(d, dtype=want)
            cols.append(d)
            nm = None if c.nulls is None else np.ascontiguousarray(c.nulls, dtype=np.bool_)
            nulls.append(nm)
            present.append(nm is not None)
        pm_ptr = 0
        if plan.premask_exprs:
            mask = np.ascontiguousarray(conjunct_mask(plan.premask_exprs, batch, ctx), dtype=np.bool_)
            if not mask.any():
                p.empty = True
                return p
            keep.append(mask)
            pm_ptr = mask.ctypes.data
        p.keep, p.cols, p.nulls, p.present = keep, cols, nulls, present
        p.fbound = float_bound(cols, nulls, plan.float_sum_slots)
        p.base = [d.ctypes.data for d in cols] + [0] * len(cols) + [pm_ptr] + params
        return p

    def _table(self, k: int) -> NativeTable:
        while len(self.tables) <= k:
            self.tables.append(self._new_table())
        return self.tables[k]

    def _new_table(self) -> NativeTable:
        """A table of this sink's shape, dense over table 0's range if that one is."""
        assert self.plan is not None and self.plan.shape is not None
        t = NativeTable(self.plan.shape, self.plan.derived, self.plan.pane_out)
        if self.tables and self.tables[0].variant == "specialised":
            t0 = self.tables[0]
            t.specialise(t0.mins[: t.nk], t0.ranges[: t.nk])
        return t

    def _make_float_room(self, fbound: float, k: int) -> None:
        """Before tables 0..k-1 take a batch adding up to ``fbound`` to float8
        sums: a table whose sums could overflow with it is set aside (kept
        in ``tables``, merged with the check at the next flush) and a fresh
        one takes its place, so the kernels' unchecked adds never overflow."""
        for i in range(k):
            t = self._table(i)
            if not float_room(t.fbound, fbound):
                self.join()                  # the helper must not be applying morsels into it
                self.tables[i] = self._new_table()
                self.tables.append(t)

    def _base(self, p: KernelInputs, module) -> tuple[list[int], list]:
        """The kernel's argument addresses for ``p``, NULL masks filled in
        where ``module`` expects them, and the masks to keep alive."""
        n = p.batch.n
        assert p.base is not None         # set for every non-empty batch
        base = list(p.base)
        c = len(p.cols)
        masks = []                    # kept alive with the morsels (the shared zero mask may be regrown)
        for k, nm in enumerate(p.nulls):
            if module.shape.nullable[k]:
                m = nm if nm is not None else _zero_mask(n)
                masks.append(m)
                base[c + k] = m.ctypes.data
        return base, masks

    def private_table(self) -> NativeTable:
        """A table of this sink's shape owned by one statement (issue 14's staging)."""
        assert self.plan is not None and self.plan.shape is not None
        return NativeTable(self.plan.shape, self.plan.derived, self.plan.pane_out)

    def run_into(self, p: KernelInputs, module, table: NativeTable) -> None:
        """Apply a prepared batch to ``table`` on this thread (a statement's private table)."""
        if not p.empty:
            base, _masks = self._base(p, module)
            table.run(module, base, 0, p.batch.n)
            table.fbound += p.fbound

    def run(self, p: KernelInputs, module) -> None:
        """Apply a prepared batch with ``module`` (which must cover its NULLs)."""
        info = self.info
        info.backend = "llvm"
        if p.empty:
            return
        n = p.batch.n
        base, masks = self._base(p, module)
        if not self.tables and n >= FIRST_PROFILE_MIN:
            self._profile_first(p, n)
        parallel = n >= PAR_MIN_ROWS and self.max_threads > 1
        if p.fbound:
            self._make_float_room(p.fbound, 2 if parallel else 1)
            for t in self.tables[: 2 if parallel else 1]:
                t.fbound += p.fbound
        if parallel:
            self._run_parallel((p, masks), module, base, n)
        else:
            t0 = self._table(0)
            t0.run(module, base, 0, n)
            self._maybe_specialise(t0)
        self._ran(module, n, self.tables)

    def run_private(self, inputs: list[tuple[KernelInputs, "object"]]) -> NativeTable:
        """Prepared batches run into one table private to the statement, on
        this thread, as :meth:`run` would run them (profiled and specialised
        like the shared tables, tiering counted): a COPY logged as its views'
        deltas merges this table at apply (stream/view_deltas.py)."""
        self.info.backend = "llvm"
        with self._spare_lock:
            t, self._spare = self._spare, None
        if t is None or not (self.tables and self.tables[0].same_dense(t) and t.shape is self.tables[0].shape):
            t = self._new_table()
        for p, module in inputs:
            if p.empty:
                continue
            n = p.batch.n
            if t.variant != "specialised" and not t.touched and n >= FIRST_PROFILE_MIN:
                self._profile_into(p, t)
            base, _masks = self._base(p, module)
            t.run(module, base, 0, n)
            t.fbound += p.fbound
            self._maybe_specialise(t)
            self._ran(module, n, [t])
        return t

    def take_private(self, t: NativeTable) -> bool:
        """Add a private table of :meth:`run_private` into this sink's first
        table natively, when their dense layouts agree (it becomes that
        table if there is none, or it is empty); False: the caller merges it
        otherwise."""
        if not self.tables:
            self.tables.append(t)
            return True
        if not self.tables[0].touched:          # empty (a read flushed it): the private table takes its place
            self.tables[0] = t
            return True
        if not self.tables[0].absorb(t):
            return False
        t.reset()               # the next statement's private table: its pages are mapped already
        with self._spare_lock:
            self._spare = t
        return True

    def _ran(self, module, n: int, tables: list[NativeTable]) -> None:
        """After a kernel call: tiering, the EXPLAIN figures, background compiles."""
        info = self.info
        for v in {"spec" if t.variant == "specialised" else "gen" for t in tables}:
            module.note_rows(v, n)          # tier 2 once hot
        info.deopts = self.deopts_before + sum(t.deopts for t in self.tables)
        info.compile_ms = module.compile_ms
        info.compile_detail = module.describe() if len(module.ms) > 1 else ""
        self._update_variant(tables)
        # the other variant compiles in the background: generic for a guard
        # failure, dense for a later specialisation
        if not module.has("gen"):
            jit.prefetch(module, "gen")
        if self.allow_specialise and self.force_variant != "generic" and not module.has("spec"):
            jit.prefetch(module, "spec")

    def _run_parallel(self, keep: tuple, module, base: list[int], n: int) -> None:
        """Morsel-driven (Leis et al.): the batch goes on a queue shared by this
        thread and the helper; both take PAR_MORSEL-row morsels from its
        counter in native code (``drive``: one ctypes call, one GIL release per
        thread and batch), each into its own table.  This thread returns as
        soon as no morsel is left, without waiting for one the helper is still
        on: on a loaded machine a descheduled helper must not stall the
        pipeline (that made 2 threads slower than 1).  The queue item keeps
        the batch's arrays alive; ``join`` (every flush) waits for the helper."""
        t0, t1 = self._table(0), self._table(1)
        if self._helper is not None and self._helper_table is not t1:
            self.join()                  # tables were replaced: the old helper must not take new morsels
        ctl = np.array([0, n, PAR_MORSEL], np.int64)   # next row (atomic in the driver), end, morsel size
        job = (keep, module, base, ctl)
        with self._qlock:
            self._queue.append(job)
            if self._helper is None or self._helper.done():
                if self._helper is not None:
                    self._helper.result()            # surface a helper failure
                self._helper = _pool.submit(self._drain, t1, True)
                self._helper_table = t1
        self._drain(t0, False)

    def _drain(self, t: NativeTable, helper: bool) -> None:
        """Work on queued batches into ``t`` until every batch's morsels are taken
        (both threads work on the head batch at once, through its counter)."""
        ran = False
        while True:
            with self._qlock:
                if not self._queue:
                    break
                job = self._queue[0]
            _keep, module, base, ctl = job
            t.run_driven(module, base, ctl)
            ran = True
            with self._qlock:
                if self._queue and self._queue[0] is job:
                    self._queue.popleft()
        if ran:
            self._maybe_specialise(t)         # by the table's own thread
            if helper:
                self.info.threads = 2

    def join(self) -> None:
        """Wait until the helper has applied its last morsel (before tables are read)."""
        fut = self._helper
        if fut is not None:
            self._helper = None
            if not fut.cancel():
                fut.result()
            if self._queue:                   # cancelled before it started: finish here
                self._drain(self._table(0), False)

    def _maybe_specialise(self, t: NativeTable) -> None:
        if self.force_variant != "generic":
            t.maybe_specialise(self.allow_specialise)

    def _profile_first(self, p: KernelInputs, n: int) -> None:
        """First batch: profile the key columns (numpy min/max) and start
        specialised right away when the range is small."""
        self._profile_into(p, self._table(0), n)

    def _profile_into(self, p: KernelInputs, t: NativeTable, n: int | None = None) -> None:
        n = p.batch.n if n is None else n
        if self.force_variant == "generic" or not self.allow_specialise:
            return
        lows, highs = [], []
        for j in range(len(p.plan.keys)):
            lo, hi = key_bounds(p, j)
            lows.append(lo)
            highs.append(hi)
        mins, ranges = headroom(lows, highs, p.plan.pane_out)
        size = NativeTable.dense_size(len(p.plan.keys), ranges)
        if size <= MAX_DENSE and size <= max(2 * n, 4096):
            t.specialise(mins, ranges)

    def _update_variant(self, private: list[NativeTable] | None = None) -> None:
        """EXPLAIN's variant: of the shared tables, or of a statement's
        private table while there are none yet (it becomes the first)."""
        vs = {t.variant for t in (self.tables or private or [])}
        if "specialised" in vs and len(vs) == 1:
            self.info.variant = "specialised"
        elif self.info.deopts:
            self.info.variant = "deoptimised"
        else:
            self.info.variant = "generic" if vs == {"generic"} else "mixed"

    def run_vector_prepared(self, p: KernelInputs, table, ctx) -> None:
        """The vector path for a batch already through the prefix ops (by
        ``p.plan``: a failed compile may have dropped ``self.plan`` since)."""
        b = p.batch
        if b.n and p.plan.peeled is not None:        # the kernel read below it; the vector operators read above
            b = p.plan.peeled.process(b, ctx)
        if b.n and p.plan.fused_filter is not None:
            b = p.plan.fused_filter.process(b, ctx)
        if b.n:
            self.agg.consume(table, b, ctx)

    def flush_into(self, table, keep: bool = False) -> None:
        """Move native state into GroupTable ``table`` (merge).

        ``keep`` (continuous views): the emptied tables stay for the next
        batches.  A view grouped by millions of keys otherwise rebuilt its
        tables after every read or checkpoint: growing from 64 slots by
        rehashing and copying into freshly faulted memory cost more than the
        inserts themselves (AIM at 10M customers).  What is kept stays a
        function of the groups: ``reset`` shrinks a mostly empty hash table,
        and a dense table that its groups no longer fill is dropped.  One-off
        GROUP BY queries free their tables (their plans are cached).  A fresh
        table is allocated (and profiled) by the next batch; np.zeros is lazily
        zeroed."""
        self.join()
        live = [t for t in self.tables if t.touched]
        for t in live[1:]:
            if live[0].absorb(t):          # same dense range: thread-local tables add up natively
                t.reset()
        kept = []
        for t in self.tables:
            m = t.merge_into(table) if t.touched and t.ngroups else 0
            self.deopts_before += t.deopts
            t.deopts = 0
            if keep and t.worth_keeping(m):
                if t.touched:
                    t.reset()
                kept.append(t)
        self.tables = kept

    def native_bytes(self, holding: bool = True) -> int:
        """Bytes of the tables that hold groups (``holding``), or of the emptied ones kept."""
        return sum(t.nbytes() for t in self.tables if t.touched == holding)
