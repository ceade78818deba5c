"""CRC-32 (zlib's: polynomial 0x04C11DB7, reflected) by carry-less multiplication.

The WAL frames every record with ``zlib.crc32`` of its body, and a COPY's
stream slabs are checksummed on the decode threads: 4.5% of the server's
CPU on YSB, at zlib 1.2.13's ~5 GB/s.  With PCLMULQDQ the body is folded
64 bytes per step (four 128-bit lanes, two carry-less products each),
then folded to 128 bits, reduced to 64 and by Barrett to the 32-bit CRC
(Gopal et al., "Fast CRC Computation for Generic Polynomials Using
PCLMULQDQ Instruction", Intel 2009); the constants are x^k mod P for the
fold distances, bit-reflected, as that paper derives them (and as Linux's
crc32-pclmul uses them).  The result is exactly ``zlib.crc32``: the on-disk
format does not change.  The kernel takes whole 16-byte blocks (at least
four); zlib does a tail of under 16 bytes.  Where the CPU lacks PCLMULQDQ
or LLVM is missing, and while the kernel compiles (in the background, on
first use), :func:`crc32` is ``zlib.crc32``.
"""
from __future__ import annotations

import ctypes
import threading
import zlib

import numpy as np
from llvmlite import binding as llvm

from . import jit

#: below this many bytes zlib is faster: a call costs ~1.8 us (measured: even at 8 kB, 16 kB 3.1 us vs 2.4 us)
MIN_BYTES = 16 << 10

_FOLD_T = ctypes.CFUNCTYPE(ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int64)

# Fold constants (reflected): by 512 bits (R1, R2), by 128 bits (R3, R4), 64 -> 32 (R5), Barrett (P', mu)
_R1, _R2 = 0x154442BD4, 0x1C6E41596
_R3, _R4 = 0x1751997D0, 0x0CCAA009E
_R5 = 0x163CD6124
_P, _MU = 0x1DB710641, 0x1F7011641


def _loop(name: str, before: str, start: str, step: int, after: str, carried: list[tuple[str, str, str]]) -> str:
    """The head of a loop over ``step``-byte blocks from ``start`` while a
    whole one is left (``%n``): its offset ``%{name}_at``, and the ``carried``
    vectors (name, value from ``before``, value from the loop's body)."""
    phis = "".join(f"\n  %{v} = phi <2 x i64> [ %{init}, %{before} ], [ %{upd}, %{name}_body ]"
                   for v, init, upd in carried)
    return (f"{name}:\n  %{name}_at = phi i64 [ {start}, %{before} ], [ %{name}_next, %{name}_body ]{phis}\n"
            f"  %{name}_end = add i64 %{name}_at, {step}\n  %{name}_more = icmp sle i64 %{name}_end, %n\n"
            f"  br i1 %{name}_more, label %{name}_body, label %{after}")


_IR = f"""
declare <2 x i64> @llvm.x86.pclmulqdq(<2 x i64>, <2 x i64>, i8)

define internal <2 x i64> @fold(<2 x i64> %x, <2 x i64> %k) alwaysinline {{
  %lo = call <2 x i64> @llvm.x86.pclmulqdq(<2 x i64> %x, <2 x i64> %k, i8 0)
  %hi = call <2 x i64> @llvm.x86.pclmulqdq(<2 x i64> %x, <2 x i64> %k, i8 17)
  %r = xor <2 x i64> %lo, %hi
  ret <2 x i64> %r
}}

define internal <2 x i64> @block(i8* %p, i64 %i) alwaysinline {{
  %q = getelementptr i8, i8* %p, i64 %i
  %v = bitcast i8* %q to <2 x i64>*
  %x = load <2 x i64>, <2 x i64>* %v, align 1
  ret <2 x i64> %x
}}

; the CRC of n bytes at p (n a multiple of 16, at least 64), continuing zlib's crc
define i32 @crc32_fold(i32 %crc, i8* %p, i64 %n) {{
entry:
  %state = xor i32 %crc, -1
  %s64 = zext i32 %state to i64
  %s = insertelement <2 x i64> zeroinitializer, i64 %s64, i32 0
  %a0 = call <2 x i64> @block(i8* %p, i64 0)
  %a = xor <2 x i64> %a0, %s
  %b = call <2 x i64> @block(i8* %p, i64 16)
  %c = call <2 x i64> @block(i8* %p, i64 32)
  %d = call <2 x i64> @block(i8* %p, i64 48)
  br label %wide

{_loop("wide", "entry", "64", 64, "narrow_start", [(f"x{k}", v, f"y{k}") for k, v in zip(range(1, 5), "abcd")])}

wide_body:
  %f1 = call <2 x i64> @fold(<2 x i64> %x1, <2 x i64> <i64 {_R1}, i64 {_R2}>)
  %f2 = call <2 x i64> @fold(<2 x i64> %x2, <2 x i64> <i64 {_R1}, i64 {_R2}>)
  %f3 = call <2 x i64> @fold(<2 x i64> %x3, <2 x i64> <i64 {_R1}, i64 {_R2}>)
  %f4 = call <2 x i64> @fold(<2 x i64> %x4, <2 x i64> <i64 {_R1}, i64 {_R2}>)
  %i16 = add i64 %wide_at, 16
  %i32 = add i64 %wide_at, 32
  %i48 = add i64 %wide_at, 48
  %l1 = call <2 x i64> @block(i8* %p, i64 %wide_at)
  %l2 = call <2 x i64> @block(i8* %p, i64 %i16)
  %l3 = call <2 x i64> @block(i8* %p, i64 %i32)
  %l4 = call <2 x i64> @block(i8* %p, i64 %i48)
  %y1 = xor <2 x i64> %f1, %l1
  %y2 = xor <2 x i64> %f2, %l2
  %y3 = xor <2 x i64> %f3, %l3
  %y4 = xor <2 x i64> %f4, %l4
  %wide_next = add i64 %wide_at, 64
  br label %wide

narrow_start:
  %g1 = call <2 x i64> @fold(<2 x i64> %x1, <2 x i64> <i64 {_R3}, i64 {_R4}>)
  %h1 = xor <2 x i64> %g1, %x2
  %g2 = call <2 x i64> @fold(<2 x i64> %h1, <2 x i64> <i64 {_R3}, i64 {_R4}>)
  %h2 = xor <2 x i64> %g2, %x3
  %g3 = call <2 x i64> @fold(<2 x i64> %h2, <2 x i64> <i64 {_R3}, i64 {_R4}>)
  %h3 = xor <2 x i64> %g3, %x4
  br label %narrow

{_loop("narrow", "narrow_start", "%wide_at", 16, "reduce", [("z", "h3", "z2")])}

narrow_body:
  %gz = call <2 x i64> @fold(<2 x i64> %z, <2 x i64> <i64 {_R3}, i64 {_R4}>)
  %lz = call <2 x i64> @block(i8* %p, i64 %narrow_at)
  %z2 = xor <2 x i64> %gz, %lz
  %narrow_next = add i64 %narrow_at, 16
  br label %narrow

reduce:
  ; 128 -> 64 bits: the low half times R4, plus the high half
  %t1 = call <2 x i64> @llvm.x86.pclmulqdq(<2 x i64> %z, <2 x i64> <i64 0, i64 {_R4}>, i8 16)
  %zhi = shufflevector <2 x i64> %z, <2 x i64> zeroinitializer, <2 x i32> <i32 1, i32 2>
  %r64 = xor <2 x i64> %t1, %zhi
  ; 64 -> 32 bits: the low 32 bits times R5, plus the rest shifted down 32
  %lo32 = and <2 x i64> %r64, <i64 4294967295, i64 0>
  %t2 = call <2 x i64> @llvm.x86.pclmulqdq(<2 x i64> %lo32, <2 x i64> <i64 {_R5}, i64 0>, i8 0)
  %w = bitcast <2 x i64> %r64 to i128
  %ws = lshr i128 %w, 32
  %r64s = bitcast i128 %ws to <2 x i64>
  %r32 = xor <2 x i64> %t2, %r64s
  ; Barrett reduction to the 32-bit remainder
  %b1 = and <2 x i64> %r32, <i64 4294967295, i64 0>
  %b2 = call <2 x i64> @llvm.x86.pclmulqdq(<2 x i64> %b1, <2 x i64> <i64 {_P}, i64 {_MU}>, i8 16)
  %b3 = and <2 x i64> %b2, <i64 4294967295, i64 0>
  %b4 = call <2 x i64> @llvm.x86.pclmulqdq(<2 x i64> %b3, <2 x i64> <i64 {_P}, i64 {_MU}>, i8 0)
  %b5 = xor <2 x i64> %b4, %r32
  %q = bitcast <2 x i64> %b5 to <4 x i32>
  %out = extractelement <4 x i32> %q, i32 1
  %res = xor i32 %out, -1
  ret i32 %res
}}
"""

_lock = threading.Lock()
_state: dict[str, object] = {}      # "fn": the kernel, "engine": its engine, "failed": True


def crc32(data: bytes | bytearray | memoryview | np.ndarray, value: int = 0) -> int:
    """``zlib.crc32(data, value)``, by the folding kernel once it is built."""
    fn = _state.get("fn")
    arr = np.frombuffer(data, np.uint8)          # type: ignore[call-overload]  # any buffer
    n = len(arr)
    if fn is None or n < max(MIN_BYTES, 64):       # the kernel reads at least four 16-byte blocks
        if fn is None and "failed" not in _state and n >= MIN_BYTES:
            _start()
        return zlib.crc32(arr.data, value)
    whole = n & ~15
    crc = fn(value, arr.ctypes.data, whole)          # type: ignore[operator]
    return zlib.crc32(arr[whole:].data, crc) if whole < n else int(crc)


def ready(wait: bool = True) -> bool:
    """Build the kernel now (``wait``) or in the background; whether it is in use."""
    fut = _start()
    if wait and fut is not None:
        fut.result()
    return "fn" in _state


def _start():
    with _lock:
        if "fn" in _state or "failed" in _state:
            return None
        fut = _state.get("future")
        if fut is None:
            fut = _state["future"] = jit._bg.submit(_build)
        return fut


def _build() -> None:
    try:
        features = llvm.get_host_cpu_features()
        if not features.get("pclmul") or not features.get("sse4.1"):
            _state["failed"] = True
            return
        with jit._llvm_lock:
            ee = jit._compile(_IR, 2, verify=True, speed_level=2)
        _state["engine"] = ee                    # keeps the machine code alive
        fn = _FOLD_T(ee.get_function_address("crc32_fold"))
        probe = bytes(range(256)) * 3
        if fn(0, probe, len(probe)) != zlib.crc32(probe):      # never trust a miscompile with the WAL
            _state["failed"] = True
            return
        _state["fn"] = fn
    except Exception:          # noqa: BLE001 - no LLVM / no target: zlib is exact anyway
        _state["failed"] = True
