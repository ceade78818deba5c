"""llvmlite plumbing: one target machine, compile IR to callable functions,
and the process-wide module cache keyed by plan shape.

Pipeline: IR text (codegen, emitted in final form: no IR passes) ->
parse_assembly -> a shared MCJIT engine per code generator level (-O0 for
tier 1, -O1 for the background tier 2).  Compiles are serialised by a lock
(LLVM's global context is not thread-safe); calling compiled code needs no lock, and ctypes releases the
GIL during the call, so two threads can run kernels at once.
"""
from __future__ import annotations

import ctypes
import itertools
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor

import llvmlite.binding as llvm

from . import codegen

KERNEL_T = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
DRIVE_T = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
REHASH_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_int64)

CODEGEN_OPT = 1        # measured: -O1 instruction selection is as fast as -O2 here, and compiles faster
# Tiered compilation: a variant is first compiled with the fast code generator
# (-O0: fast instruction selection, fast register allocation; codegen ~4x
# cheaper, code ~2x slower), which is the latency a pipeline waits for; the
# -O1 code is compiled in the background and replaces it at the next kernel
# call (callers look the function up per call).
TIERED = True
FAST_CODEGEN_OPT = 0
# Tier 2 compiles once a variant has processed this many rows on tier-1 code
# (the -O1 code saves ~2-4 ns per row and costs ~15-30 ms CPU to compile: it
# pays off after a few million rows).  A pipeline that never gets hot (a
# small GROUP BY, a view that sees little data) costs no background compile,
# which on two cores competes with the morsel threads and holds LLVM's lock
# a newly created pipeline then waits for.
TIER2_ROWS = 1 << 20
VERIFY = False         # the IR builder produces well-formed IR; tests turn this on

_lock = threading.RLock()           # the cache dict


class _LLVMLock:
    """LLVM's global context (parse, emit) is used by one thread at a time
    (llvmlite serialises its calls anyway).  A compile a pipeline waits for
    (tier 1 on a query or insert thread) goes before queued background work
    (tier-2 recompiles, prefetched variants, auto-mode compiles): it waits
    at most for the one background compile already running."""

    def __init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._held = False
        self._fg_waiting = 0

    def __enter__(self) -> None:
        fg = threading.current_thread().name.startswith(_BG_PREFIX) is False
        with self._cv:
            if fg:
                self._fg_waiting += 1
            while self._held or (not fg and self._fg_waiting):
                self._cv.wait()
            if fg:
                self._fg_waiting -= 1
            self._held = True

    def __exit__(self, *exc) -> None:
        with self._cv:
            self._held = False
            self._cv.notify_all()


_BG_PREFIX = "llvm-compile"
_llvm_lock = _LLVMLock()
_tm = None
_runtime = None
_CACHE_MAX = 256
_cache: "OrderedDict[codegen.Shape, CompiledModule]" = OrderedDict()
_pending: dict = {}
_bg = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_BG_PREFIX)

# running estimate of compile latency (ms CPU per variant), fed by every compile;
# starts at what bench.ysb measures for a fresh tier-1 compile (3-7 ms)
stats = {"compiles": 0, "compile_ms_total": 0.0, "compile_ms_ewma": 6.0, "cache_hits": 0}


class CompiledModule:
    """The compiled kernels of one shape.  Each variant ("gen": hash table,
    "spec": dense array) is its own small module, compiled on first use
    (or ahead, in the background), so the first compiled batch waits for one
    variant only."""

    def __init__(self, shape) -> None:
        self.shape = shape
        self._fns: dict = {}
        self.ms: dict = {}            # per variant: compile CPU ms
        self.wall_ms: dict = {}       # per variant: compile wall ms (includes waiting for the GIL/CPU)
        self.opt_ms: dict = {}        # per variant: CPU ms of the background -O1 recompile (tiered)
        self.addr: dict = {}          # per variant: machine code address (for the native morsel driver)
        self.rows: dict = {}          # per variant: rows run on its tier-1 code
        self._tier2: set = set()      # variants whose tier-2 compile was submitted
        self._engines: list[llvm.ExecutionEngine] = []    # keep the machine code alive
        self.sym: dict = {}           # per variant: its symbol in the shared engines
        self._lock = threading.Lock()

    def has(self, variant: str) -> bool:
        return variant in self._fns

    def fn(self, variant: str):
        f = self._fns.get(variant)
        if f is None:
            with self._lock:
                f = self._fns.get(variant)
                if f is None:
                    t0, c0 = time.perf_counter(), time.thread_time()
                    sym = f"{variant}_{next(_seq)}"      # unique within the shared engine
                    ir_text = codegen.build_module(self.shape, (variant,), (sym,), 1 if TIERED else codegen.SEL_UNROLL)
                    with _llvm_lock:
                        ee, addr = _compile_shared(ir_text, sym, FAST_CODEGEN_OPT if TIERED else CODEGEN_OPT)
                    self.addr[variant] = addr
                    f = KERNEL_T(addr)
                    # CPU time of the compiling thread: the cost, without GIL / core contention
                    ms = (time.thread_time() - c0) * 1000
                    self.wall_ms[variant] = (time.perf_counter() - t0) * 1000
                    if ee not in self._engines:
                        self._engines.append(ee)
                    self.sym[variant] = sym
                    self.ms[variant] = ms
                    self._fns[variant] = f
                    stats["compiles"] += 1
                    stats["compile_ms_total"] += ms
                    stats["compile_ms_ewma"] = 0.7 * stats["compile_ms_ewma"] + 0.3 * ms
        return f

    def note_rows(self, variant: str, n: int) -> None:
        """Count rows run by ``variant``; once hot, its -O1 code compiles in the background."""
        if not TIERED or variant in self._tier2:
            return
        r = self.rows.get(variant, 0) + n
        self.rows[variant] = r
        if r >= TIER2_ROWS:
            self.optimise_async(variant)

    def optimise_async(self, variant: str):
        """Submit the tier-2 compile of ``variant`` (once); a Future, or None when not tiered."""
        if not TIERED:
            return None
        with self._lock:
            if variant in self._tier2:
                return None
            self._tier2.add(variant)
        return _bg.submit(self.optimise, variant)

    def optimise(self, variant: str) -> None:
        """Tier 2: the -O1 code of ``variant`` replaces the fast-compiled one.
        The old machine code stays alive: a thread may be running it."""
        if variant in self.opt_ms:
            return
        c0 = time.thread_time()
        sym = self.sym[variant]
        ir_text = codegen.build_module(self.shape, (variant,), (sym,))     # unrolled
        with _llvm_lock:
            ee, addr = _compile_shared(ir_text, sym, CODEGEN_OPT)
        f = KERNEL_T(addr)
        with self._lock:
            if ee not in self._engines:
                self._engines.append(ee)
            self._fns[variant] = f
            self.addr[variant] = addr
            self.opt_ms[variant] = (time.thread_time() - c0) * 1000

    def address(self, variant: str) -> int:
        """The current code address of ``variant`` (compiled on first use)."""
        self.fn(variant)
        return self.addr[variant]

    @property
    def gen(self):
        return self.fn("gen")

    @property
    def spec(self):
        return self.fn("spec")

    @property
    def compile_ms(self) -> float:
        """Compile CPU time paid so far for this shape (all variants)."""
        return sum(self.ms.values())

    def describe(self) -> str:
        return ", ".join(f"{'generic' if v == 'gen' else 'dense'} {ms:.1f}"
                         + (f" +{self.opt_ms[v]:.1f} optimised in background" if v in self.opt_ms else "")
                         for v, ms in self.ms.items())


def _target_machine(codegen_opt: int = CODEGEN_OPT):
    """A fresh target machine: an MCJIT engine takes ownership of (and frees)
    the one it is created with, so every engine gets its own."""
    global _tm
    if _tm is None:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _tm = (llvm.Target.from_default_triple(), llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten())
    target, cpu, features = _tm
    return target.create_target_machine(cpu=cpu, features=features, opt=codegen_opt, jit=True)


class _Engine:
    """One MCJIT engine per code generator level, shared by many modules.

    Why: a fresh engine per module cost ~2.5 ms of fixed work on every
    compile (target machine, subtarget and code generator set-up on first
    use), more than -O0 code generation of a kernel itself.  Each
    ``finalize_object`` compiles only the modules added since the last one;
    new code goes to fresh pages, so threads running earlier kernels are
    not disturbed (Numba keeps all its modules in one MCJIT engine the same
    way).  After ``ENGINE_MODULES`` modules a new engine starts, so machine
    code is freed once every CompiledModule of an old engine is gone (each
    keeps its engines alive)."""

    def __init__(self, codegen_opt: int) -> None:
        tm = _target_machine(codegen_opt)
        self.triple = llvm.get_process_triple()
        self.data_layout = str(tm.target_data)
        base = llvm.parse_assembly("")
        base.triple, base.data_layout = self.triple, self.data_layout
        self.ee = llvm.create_mcjit_compiler(base, tm)
        self.modules = 0


ENGINE_MODULES = 64
_engines: dict = {}          # codegen opt level -> _Engine (used under _llvm_lock)
_seq = itertools.count(1)


def _shared_engine(codegen_opt: int) -> _Engine:
    e = _engines.get(codegen_opt)
    if e is None or e.modules >= ENGINE_MODULES:
        e = _engines[codegen_opt] = _Engine(codegen_opt)
    return e


def _compile_shared(ir_text: str, sym: str, codegen_opt: int):
    """Add ``ir_text`` to the shared engine of ``codegen_opt`` and generate its
    code; returns (engine, address of ``sym``).  Caller holds _llvm_lock."""
    e = _shared_engine(codegen_opt)
    mod = llvm.parse_assembly(ir_text)
    mod.triple, mod.data_layout = e.triple, e.data_layout
    if VERIFY:
        mod.verify()
    e.ee.add_module(mod)
    e.modules += 1
    e.ee.finalize_object()
    return e.ee, e.ee.get_function_address(sym)


def _compile(ir_text: str, codegen_opt: int = CODEGEN_OPT, *, verify: bool = VERIFY, speed_level: int = 0):
    """A module in its own engine (the runtime helpers, compiled once; the
    COPY parser, with the IR optimised at ``speed_level`` first)."""
    tm = _target_machine(codegen_opt)
    mod = llvm.parse_assembly(ir_text)
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    if verify:
        mod.verify()
    if speed_level:
        pb = llvm.PassBuilder(tm, llvm.PipelineTuningOptions(speed_level=speed_level))
        pb.getModulePassManager().run(mod, pb)
    ee = llvm.create_mcjit_compiler(mod, tm)
    ee.finalize_object()
    return ee


def warm() -> None:
    """Ready the runtime helpers and the tier-1 engine (LLVM initialisation,
    target machine and code generator set-up: ~15 ms CPU once per process),
    on the background thread (see :func:`warm_soon`), so the first pipeline
    compiled waits only for its own kernel."""
    runtime()
    with _llvm_lock:
        _compile_shared(codegen.build_module(_WARM_SHAPE, ("gen",), ("warm",)), "warm",
                        FAST_CODEGEN_OPT if TIERED else CODEGEN_OPT)


def runtime():
    """Shape-independent helpers (``rehash``), compiled once."""
    global _runtime
    with _llvm_lock:
        if _runtime is None:
            ee = _compile(codegen.build_runtime_module())
            _runtime = (ee, REHASH_T(ee.get_function_address("rehash")), DRIVE_T(ee.get_function_address("drive")))
        return _runtime[1]


def driver():
    """The native morsel loop (``drive``), compiled once with ``rehash``."""
    runtime()
    return _runtime[2]


def cached(shape) -> CompiledModule | None:
    with _lock:
        m = _cache.get(shape)
        if m is not None and not m._fns:
            return None
        if m is not None:
            _cache.move_to_end(shape)
            stats["cache_hits"] += 1
        return m


def _module(shape) -> CompiledModule:
    warm_soon()
    with _lock:
        m = _cache.get(shape)
        if m is None:
            m = CompiledModule(shape)
            _cache[shape] = m
            while len(_cache) > _CACHE_MAX:
                _cache.popitem(last=False)
        return m


def compile_shape(shape, variant: str = "gen") -> CompiledModule:
    """Compile ``variant`` now (a no-op when cached); the module of ``shape``."""
    runtime()
    m = _module(shape)
    m.fn(variant)
    return m


def prefetch(m: CompiledModule, variant: str) -> None:
    """Compile another variant in the background (e.g. the dense one while
    the generic one already runs)."""
    if not m.has(variant):
        _bg.submit(m.fn, variant)


def compile_async(shape) -> Future:
    """Compile both variants in the background thread; one future per shape."""
    with _lock:
        fut = _pending.get(shape)
        if fut is not None:
            return fut
        m = _cache.get(shape)
        if m is not None and m.has("gen") and m.has("spec"):
            fut = Future()
            fut.set_result(m)
            return fut

        def work(s=shape):
            mod = compile_shape(s, "gen")
            mod.fn("spec")
            return mod

        fut = _bg.submit(work)
        _pending[shape] = fut
        fut.add_done_callback(lambda f: _pending.pop(shape, None))
        return fut


def clear_cache() -> None:
    """Tests: forget compiled modules (the machine code of live users stays alive)."""
    with _lock:
        _cache.clear()


def drain() -> None:
    """Wait until queued background compiles are done (tests, benchmarks)."""
    _bg.submit(lambda: None).result()


_WARM_SHAPE = codegen.Shape(inputs=("i8",), conj=(), nparams=0, keys=(0,), aggs=(("star", -1),))
_warm_lock = threading.Lock()
_warm_started = False


def warm_soon() -> None:
    """Start :func:`warm` on the background thread, once, when the first
    compilable pipeline appears.  Not at import: loading and initialising
    LLVM costs ~70 MB resident, which an idle server must not carry."""
    global _warm_started
    if _warm_started:
        return
    with _warm_lock:
        if not _warm_started:
            _warm_started = True
            _bg.submit(warm)
