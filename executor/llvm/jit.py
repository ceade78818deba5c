"""llvmlite plumbing: one target machine, compile IR to callable functions,
and the process-wide module cache keyed by plan shape.

Pipeline (FACTS.md): parse_assembly -> new pass builder at speed level 3 ->
MCJIT.  Compiles are serialised by a lock (LLVM's global context is not
thread-safe); calling compiled code needs no lock, and ctypes releases the
GIL during the call, so two threads can run kernels at once.
"""
from __future__ import annotations

import ctypes
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor

from . import codegen

KERNEL_T = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
REHASH_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_int64)

_lock = threading.RLock()
_tm = None
_runtime = None
_CACHE_MAX = 256
_cache: "OrderedDict[codegen.Shape, CompiledModule]" = OrderedDict()
_pending: dict = {}
_bg = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llvm-compile")

# running estimate of compile latency (ms), fed by every compile
stats = {"compiles": 0, "compile_ms_total": 0.0, "compile_ms_ewma": 20.0, "cache_hits": 0}


class CompiledModule:
    def __init__(self, shape, engine, gen, spec, compile_ms: float, ir_text: str) -> None:
        self.shape = shape
        self.engine = engine          # keeps the machine code alive
        self.gen = gen
        self.spec = spec
        self.compile_ms = compile_ms
        self.ir = ir_text


def _target_machine():
    global _tm
    if _tm is None:
        import llvmlite.binding as llvm

        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_default_triple()
        _tm = target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
                                           opt=3, jit=True)
    return _tm


def _compile(ir_text: str):
    import llvmlite.binding as llvm

    tm = _target_machine()
    mod = llvm.parse_assembly(ir_text)
    mod.triple = llvm.get_process_triple()
    mod.data_layout = str(tm.target_data)
    mod.verify()
    pto = llvm.PipelineTuningOptions(speed_level=3)
    pb = llvm.PassBuilder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)
    ee = llvm.create_mcjit_compiler(mod, tm)
    ee.finalize_object()
    return ee


def runtime():
    """Shape-independent helpers (``rehash``), compiled once."""
    global _runtime
    with _lock:
        if _runtime is None:
            ee = _compile(codegen.build_runtime_module())
            _runtime = (ee, REHASH_T(ee.get_function_address("rehash")))
        return _runtime[1]


def cached(shape) -> CompiledModule | None:
    with _lock:
        m = _cache.get(shape)
        if m is not None:
            _cache.move_to_end(shape)
            stats["cache_hits"] += 1
        return m


def compile_shape(shape) -> CompiledModule:
    """Compile now (or return the cached module)."""
    m = cached(shape)
    if m is not None:
        return m
    with _lock:
        m = _cache.get(shape)
        if m is not None:
            return m
        runtime()
        t0 = time.perf_counter()
        ir_text = codegen.build_module(shape)
        ee = _compile(ir_text)
        gen = KERNEL_T(ee.get_function_address("gen"))
        spec = KERNEL_T(ee.get_function_address("spec"))
        ms = (time.perf_counter() - t0) * 1000
        m = CompiledModule(shape, ee, gen, spec, ms, ir_text)
        _cache[shape] = m
        while len(_cache) > _CACHE_MAX:
            _cache.popitem(last=False)
        stats["compiles"] += 1
        stats["compile_ms_total"] += ms
        stats["compile_ms_ewma"] = 0.7 * stats["compile_ms_ewma"] + 0.3 * ms
        return m


def compile_async(shape) -> Future:
    """Compile in the background thread; one future per shape."""
    with _lock:
        fut = _pending.get(shape)
        if fut is not None:
            return fut
        m = _cache.get(shape)
        fut = Future()
        if m is not None:
            fut.set_result(m)
            return fut
        fut = _bg.submit(compile_shape, shape)
        _pending[shape] = fut
        fut.add_done_callback(lambda f, s=shape: _pending.pop(s, None))
        return fut


def clear_cache() -> None:
    """Tests: forget compiled modules (the machine code of live users stays alive)."""
    with _lock:
        _cache.clear()
