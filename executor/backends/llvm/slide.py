"""Hammer Slide's optimised Two-Stacks as compiled kernels (issue 16).

Sliding aggregation over an array of values, window ``n`` and ``slide``
(``n`` a multiple of ``slide``), one result per slide, in two kernels:

* ``reduce``: per-slide pre-aggregation (the paper's bulk insertion), one
  partial per slide; a plain loop that LLVM vectorises (§3.2's SIMD);
* ``slide``: Two-Stacks over the ``k = n / slide`` partials, with the flip at
  fixed block boundaries (the back stack of a block is its suffix scan,
  computed backwards into a k-entry scratch that stays in L1; the front is a
  running prefix over the next block), so each result is one ``op`` of a
  back-stack entry and the front's aggregate: O(1) per slide, no rescan for
  min/max, and no subtraction for sums;
* ``avg_running``: integer averages at slide 1, where the partials are the
  values themselves, as a running sum (exact on integers).

Kernels are specialised per (op, type) and compiled once per process with
llvmlite for the host CPU.  ``sliding`` is the Python entry point; the
numpy twin :func:`sliding_numpy` (same algorithm) serves where LLVM is not
wanted and as a check.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Callable

import numpy as np

from ...execution.block_scans import fixed_ranges
from . import jit

#: op -> (accumulator type per input dtype); sums widen int32 to int64
_ACC = {("min", "i32"): "i32", ("max", "i32"): "i32", ("sum", "i32"): "i64",
        ("min", "i64"): "i64", ("max", "i64"): "i64", ("sum", "i64"): "i64"}
_NP = {"i32": np.int32, "i64": np.int64}
_IDENT = {("min", "i32"): np.iinfo(np.int32).max, ("max", "i32"): np.iinfo(np.int32).min,
          ("min", "i64"): np.iinfo(np.int64).max, ("max", "i64"): np.iinfo(np.int64).min,
          ("sum", "i64"): 0}

_lock = threading.Lock()
_kernels: dict[tuple[str, str], dict[str, Callable]] = {}
_engines: list = []          # keep the machine code alive


def _op(op: str, t: str, r: str, a: str, b: str) -> str:
    """IR computing ``r = op(a, b)`` of type ``t``."""
    if op == "sum":
        return f"  {r} = add i64 {a}, {b}\n"
    cmp = "slt" if op == "min" else "sgt"
    return f"  {r}.c = icmp {cmp} {t} {a}, {b}\n  {r} = select i1 {r}.c, {t} {a}, {t} {b}\n"


def _ir(op: str, src: str) -> str:
    acc = _ACC[(op, src)]
    ident = _IDENT[(op, acc)]
    widen = (f"  %v = sext {src} %xv to {acc}\n" if acc != src else f"  %v = add {src} %xv, 0\n")
    return f"""
define void @reduce(ptr noalias %x, i64 %np, i64 %l, ptr noalias %out) {{
entry:
  %any = icmp sgt i64 %np, 0
  br i1 %any, label %pane, label %done
pane:
  %p = phi i64 [0, %entry], [%p1, %pane_end]
  %base = mul i64 %p, %l
  br label %inner
inner:
  %j = phi i64 [0, %pane], [%j1, %inner]
  %a = phi {acc} [{ident}, %pane], [%r, %inner]
  %ix = add i64 %base, %j
  %xp = getelementptr {src}, ptr %x, i64 %ix
  %xv = load {src}, ptr %xp
{widen}{_op(op, acc, "%r", "%a", "%v")}  %j1 = add i64 %j, 1
  %more = icmp slt i64 %j1, %l
  br i1 %more, label %inner, label %pane_end
pane_end:
  %outp = getelementptr {acc}, ptr %out, i64 %p
  store {acc} %r, ptr %outp
  %p1 = add i64 %p, 1
  %pm = icmp slt i64 %p1, %np
  br i1 %pm, label %pane, label %done
done:
  ret void
}}

""" + _slide_ir("slide", op, acc, acc) + _slide_ir("slide_wide", op, acc, src) + \
        (_slide_ir("avg", op, acc, acc, avg=True) + _slide_ir("avg_wide", op, acc, src, avg=True) +
         _running_avg_ir(src) if op == "sum" else "")


def _running_avg_ir(src: str) -> str:
    """``avg_running``: integer averages at slide 1 as a running sum, each
    step adding the entering value and taking the leaving one (exact: the
    sums are integers, so nothing is lost, as Hammer Slide's SoE for
    invertible aggregates), one carried add per result instead of
    Two-Stacks' two passes; each block of results divided in place as the
    Two-Stacks kernels do."""
    return f"""
define void @avg_running(ptr noalias %x, i64 %m, i64 %k, ptr noalias %out, ptr noalias %suf, i64 %div) {{
entry:
  %nout = sub i64 %m, %k
  %nout1 = add i64 %nout, 1
  %any = icmp sgt i64 %nout1, 0
  br i1 %any, label %init, label %done
init:
  %ii = phi i64 [0, %entry], [%ii1, %init]
  %ia = phi i64 [0, %entry], [%ia1, %init]
  %ip = getelementptr {src}, ptr %x, i64 %ii
{_load('%iv', '%ip', src, 'i64')}  %ia1 = add i64 %ia, %iv
  %ii1 = add i64 %ii, 1
  %im = icmp slt i64 %ii1, %k
  br i1 %im, label %init, label %block
block:
  %s = phi i64 [0, %init], [%s1, %block_end]
  %acc0 = phi i64 [%ia1, %init], [%accn, %block_end]
  %left = sub i64 %nout1, %s
  %c0 = icmp slt i64 %left, 1024
  %cnt = select i1 %c0, i64 %left, i64 1024
  br label %run
run:
  %j = phi i64 [0, %block], [%j1, %run]
  %acc = phi i64 [%acc0, %block], [%accn, %run]
  %oi = add i64 %s, %j
  %op = getelementptr i64, ptr %out, i64 %oi
  store i64 %acc, ptr %op
  %hi = add i64 %oi, %k
  %inb = icmp slt i64 %hi, %m
  %hic = select i1 %inb, i64 %hi, i64 %oi
  %hp = getelementptr {src}, ptr %x, i64 %hic
{_load('%hv', '%hp', src, 'i64')}  %lp = getelementptr {src}, ptr %x, i64 %oi
{_load('%lv', '%lp', src, 'i64')}  %dlt = sub i64 %hv, %lv
  %accn = add i64 %acc, %dlt
  %j1 = add i64 %j, 1
  %more = icmp slt i64 %j1, %cnt
  br i1 %more, label %run, label %divide
divide:
{_divide_block(True)}block_end:
  %s1 = add i64 %s, 1024
  %sm = icmp slt i64 %s1, %nout1
  br i1 %sm, label %block, label %done
done:
  ret void
}}
"""


def _load(r: str, ptr: str, src: str, acc: str) -> str:
    """IR loading ``r`` (of type ``acc``) from ``ptr`` holding a ``src``."""
    if src == acc:
        return f"  {r} = load {acc}, ptr {ptr}\n"
    return f"  {r}.n = load {src}, ptr {ptr}\n  {r} = sext {src} {r}.n to {acc}\n"


def _store(v: str, ptr: str, acc: str) -> str:
    """IR storing result ``v`` (an average's sum stays an integer here and is
    divided by :func:`_divide_block` once its block is done)."""
    return f"  store {acc} {v}, ptr {ptr}"


def _divide_block(avg: bool) -> str:
    """IR turning the block's ``%cnt`` sums at ``out[%s..]`` into averages in
    place (double ``sum / %div``): a loop without a carried dependency over
    8 KB still in L1, which LLVM vectorises, where one scalar division per
    result in the Two-Stacks loop would bound it."""
    if not avg:
        return "  br label %block_end\n"
    return """  %dd = sitofp i64 %div to double
  br label %dv
dv:
  %di = phi i64 [0, %divide], [%di1, %dv]
  %dx = add i64 %s, %di
  %dp = getelementptr i64, ptr %out, i64 %dx
  %dsum = load i64, ptr %dp
  %df = sitofp i64 %dsum to double
  %dq = fdiv double %df, %dd
  store double %dq, ptr %dp
  %di1 = add i64 %di, 1
  %dm = icmp slt i64 %di1, %cnt
  br i1 %dm, label %dv, label %block_end
"""


def _slide_ir(name: str, op: str, acc: str, src: str, avg: bool = False) -> str:
    """Two-Stacks over partials of type ``src`` (widened to ``acc`` as loaded);
    ``avg``: each result divided by ``%div`` and stored as a double."""
    ident = _IDENT[(op, acc)]
    out_t = acc
    return f"""
define void @{name}(ptr noalias %p, i64 %m, i64 %k, ptr noalias %out, ptr noalias %suf, i64 %div) {{
entry:
  %nout = sub i64 %m, %k
  %nout1 = add i64 %nout, 1
  %any = icmp sgt i64 %nout1, 0
  br i1 %any, label %block, label %done
block:
  %s = phi i64 [0, %entry], [%s1, %block_end]
  %sk = add i64 %s, %k
  %e0 = icmp slt i64 %sk, %m
  %e = select i1 %e0, i64 %sk, i64 %m
  %last = sub i64 %e, 1
  %lp = getelementptr {src}, ptr %p, i64 %last
{_load('%lv', '%lp', src, acc)}  %lo = sub i64 %last, %s
  %ls = getelementptr {acc}, ptr %suf, i64 %lo
  store {acc} %lv, ptr %ls
  %has_back = icmp sgt i64 %lo, 0
  br i1 %has_back, label %back, label %front0
back:
  %bi = phi i64 [%lo, %block], [%bi1, %back]
  %bacc = phi {acc} [%lv, %block], [%br, %back]
  %bi1 = sub i64 %bi, 1
  %bx = add i64 %s, %bi1
  %bxp = getelementptr {src}, ptr %p, i64 %bx
{_load('%bv', '%bxp', src, acc)}{_op(op, acc, "%br", "%bv", "%bacc")}  %bsp = getelementptr {acc}, ptr %suf, i64 %bi1
  store {acc} %br, ptr %bsp
  %bmore = icmp sgt i64 %bi1, 0
  br i1 %bmore, label %back, label %front0
front0:
  %left = sub i64 %nout1, %s
  %cnt0 = icmp slt i64 %left, %k
  %cnt = select i1 %cnt0, i64 %left, i64 %k
  %s0 = load {acc}, ptr %suf
  %o0 = getelementptr {out_t}, ptr %out, i64 %s
{_store('%s0', '%o0', acc)}
  %more0 = icmp sgt i64 %cnt, 1
  br i1 %more0, label %front, label %divide
front:
  %j = phi i64 [1, %front0], [%j1, %front]
  %pre = phi {acc} [{ident}, %front0], [%pr, %front]
  %fx = add i64 %sk, %j
  %fx1 = sub i64 %fx, 1
  %fxp = getelementptr {src}, ptr %p, i64 %fx1
{_load('%fv', '%fxp', src, acc)}{_op(op, acc, "%pr", "%pre", "%fv")}  %sp = getelementptr {acc}, ptr %suf, i64 %j
  %sv = load {acc}, ptr %sp
{_op(op, acc, "%res", "%sv", "%pr")}  %oi = add i64 %s, %j
  %op = getelementptr {out_t}, ptr %out, i64 %oi
{_store('%res', '%op', acc)}
  %j1 = add i64 %j, 1
  %fm = icmp slt i64 %j1, %cnt
  br i1 %fm, label %front, label %divide
divide:
{_divide_block(avg)}block_end:
  %s1 = add i64 %s, %k
  %sm = icmp slt i64 %s1, %nout1
  br i1 %sm, label %block, label %done
done:
  ret void
}}
"""


_REDUCE_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p)
_SLIDE_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_int64)


def kernels(op: str, src: str) -> dict[str, Callable]:
    """The kernels compiled for ``op`` over ``src`` values (cached): reduce,
    slide (over partials), slide_wide (over ``src`` values, widened as
    loaded), and for sums avg / avg_wide (results divided, as doubles)."""
    key = (op, src)
    got = _kernels.get(key)
    if got is None:
        with _lock:
            got = _kernels.get(key)
            if got is None:
                with jit._llvm_lock:
                    ee = jit._compile(_ir(op, src), 3, verify=True, speed_level=3)
                names = ["slide", "slide_wide"] + (["avg", "avg_wide", "avg_running"] if op == "sum" else [])
                got = {"reduce": _REDUCE_T(ee.get_function_address("reduce"))}
                got.update((nm, _SLIDE_T(ee.get_function_address(nm))) for nm in names)
                _engines.append(ee)
                _kernels[key] = got
    return got


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def sliding(x: np.ndarray, n: int, slide: int, op: str, out: np.ndarray | None = None) -> np.ndarray:
    """One ``op`` (min, max, sum, avg) per ``slide`` values over windows of
    ``n`` values of ``x`` (int32 or int64; n a multiple of slide): result
    ``i`` covers ``x[i*slide : i*slide + n]``.  Sums come back as int64,
    averages as float64.  ``out``: a buffer to write into (at least as long
    as the result, of the result's type), so a caller running many batches
    does not fault fresh pages in each time."""
    src = "i32" if x.dtype == np.int32 else "i64"
    x = np.ascontiguousarray(x, dtype=_NP[src])
    if n % slide:
        raise ValueError("the window must be a multiple of the slide")
    base = "sum" if op == "avg" else op
    ks = kernels(base, src)
    acc = _NP[_ACC[(base, src)]]
    m, k = len(x) // slide, n // slide
    name = "avg" if op == "avg" else "slide"
    if slide == 1:
        parts = x                   # one value per slide: no partials, widened as loaded if need be
        name = "avg_running" if op == "avg" else name + "_wide"
    else:
        parts = np.empty(m, acc)
        ks["reduce"](_ptr(x), m, slide, _ptr(parts))
    res_t = np.float64 if op == "avg" else acc
    nout = max(m - k + 1, 0)
    out = np.empty(nout, res_t) if out is None or len(out) < nout or out.dtype != res_t else out[:nout]
    if nout:
        suf = np.empty(k, acc)
        ks[name](_ptr(parts), m, k, _ptr(out), _ptr(suf), n)
    return out


_UFUNC = {"min": np.minimum, "max": np.maximum, "sum": np.add}


def sliding_numpy(x: np.ndarray, n: int, slide: int, op: str) -> np.ndarray:
    """The same algorithm in numpy: pane partials, then block scans
    (executor/execution/block_scans.py, shared with window frames)."""
    f = _UFUNC[op]
    acc = np.int64 if op == "sum" else x.dtype
    k, m = n // slide, len(x) // slide
    xs = x[: m * slide].astype(acc, copy=False)
    p = xs if slide == 1 else f.reduce(xs.reshape(m, slide), axis=1)
    nout = m - k + 1
    if nout <= 0:
        return np.empty(0, acc)
    ident = 0 if op == "sum" else (np.iinfo(acc).max if op == "min" else np.iinfo(acc).min)
    return fixed_ranges(f, p, np.arange(nout), k, ident)
