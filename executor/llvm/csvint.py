"""A compiled reader for COPY rows made only of integer columns.

COPY of integer rows is the ingest benchmark's shape and a common one for
streams (ids, counters, measurements).  pyarrow's CSV reader handles it
generally -- splitting, typing, conversion -- and was most of a COPY's time
(about 150 ns per row of six ints on one core here).  This loop reads the
strict common grammar in one pass over the bytes, about twice as fast per
core, and splits a large chunk over two threads (ctypes releases the GIL):

    row   := field (DELIM field)* '\\n'        (the last '\\n' may be missing)
    field := '-'? [0-9]{1,18}  |  NULL          (NULL: '' or '\\N', the COPY's null string)

It never decides anything on its own: on the first byte outside that
grammar (a quote, a space, '+', '\\r', a wrong field count, a value out of
the column's range, more than 18 digits, ...) it returns -1 and the caller
uses the general decoder, which gives PostgreSQL's answer or its exact error.
The values it accepts mean the same to PostgreSQL's int2in/int4in/int8in.
"""
from __future__ import annotations

import ctypes
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from protocol import oids as O

PARSE_T = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p,
                           ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
WIDTH = {O.INT2: 2, O.INT4: 4, O.INT8: 8}
DTYPE = {2: np.int16, 4: np.int32, 8: np.int64}
#: below this many bytes one thread reads the chunk; above, two halves run at once
PARALLEL_BYTES = 1 << 20

_IR = r"""
define internal i64 @getc(i8* %d, i64 %len, i64 %p) alwaysinline {
entry:
  %in = icmp slt i64 %p, %len
  br i1 %in, label %rd, label %eof
rd:
  %a = getelementptr i8, i8* %d, i64 %p
  %b = load i8, i8* %a
  %c = zext i8 %b to i64
  ret i64 %c
eof:
  ret i64 10
}

define i64 @parse_ints(i8* %data, i64 %len, i64 %ncols, i64* %widths, i8** %outs, i8** %nulls,
                       i64 %maxrows, i64 %delim, i64 %nullkind) {
entry:
  %pos = alloca i64
  %row = alloca i64
  %col = alloca i64
  %acc = alloca i64
  %nd = alloca i64
  %neg = alloca i1
  %c = alloca i64
  store i64 0, i64* %pos
  store i64 0, i64* %row
  br label %row_start

row_start:
  %p0 = load i64, i64* %pos
  %eof0 = icmp sge i64 %p0, %len
  br i1 %eof0, label %done, label %row_check
row_check:
  %r0 = load i64, i64* %row
  %full = icmp sge i64 %r0, %maxrows
  br i1 %full, label %fail, label %row_begin
row_begin:
  store i64 0, i64* %col
  br label %field_start

field_start:
  store i64 0, i64* %acc
  store i64 0, i64* %nd
  store i1 false, i1* %neg
  %p1 = load i64, i64* %pos
  %c1 = call i64 @getc(i8* %data, i64 %len, i64 %p1)
  %isminus = icmp eq i64 %c1, 45
  br i1 %isminus, label %minus, label %digits
minus:
  store i1 true, i1* %neg
  %p2 = add i64 %p1, 1
  store i64 %p2, i64* %pos
  br label %digits

digits:
  %p3 = load i64, i64* %pos
  %c3 = call i64 @getc(i8* %data, i64 %len, i64 %p3)
  store i64 %c3, i64* %c
  %dg = sub i64 %c3, 48
  %isdig = icmp ult i64 %dg, 10
  br i1 %isdig, label %digit, label %field_end
digit:
  %a0 = load i64, i64* %acc
  %a1 = mul i64 %a0, 10
  %a2 = add i64 %a1, %dg
  store i64 %a2, i64* %acc
  %n0 = load i64, i64* %nd
  %n1 = add i64 %n0, 1
  store i64 %n1, i64* %nd
  %p4 = add i64 %p3, 1
  store i64 %p4, i64* %pos
  %toolong = icmp ugt i64 %n1, 18
  br i1 %toolong, label %fail, label %digits

field_end:
  %ndv = load i64, i64* %nd
  %empty = icmp eq i64 %ndv, 0
  br i1 %empty, label %maybe_null, label %have_value
maybe_null:
  %negv0 = load i1, i1* %neg
  br i1 %negv0, label %fail, label %null_kind
null_kind:
  %nk0 = icmp eq i64 %nullkind, 0
  br i1 %nk0, label %store_null, label %null_bs
null_bs:
  %cv0 = load i64, i64* %c
  %isbs = icmp eq i64 %cv0, 92
  br i1 %isbs, label %null_bs2, label %fail
null_bs2:
  %pp = load i64, i64* %pos
  %pn = add i64 %pp, 1
  %cn = call i64 @getc(i8* %data, i64 %len, i64 %pn)
  %isN = icmp eq i64 %cn, 78
  br i1 %isN, label %null_adv, label %fail
null_adv:
  %pq = add i64 %pp, 2
  store i64 %pq, i64* %pos
  %cq = call i64 @getc(i8* %data, i64 %len, i64 %pq)
  store i64 %cq, i64* %c
  br label %store_null
store_null:
  %colv0 = load i64, i64* %col
  %nslot = getelementptr i8*, i8** %nulls, i64 %colv0
  %nptr = load i8*, i8** %nslot
  %rowv0 = load i64, i64* %row
  %nb = getelementptr i8, i8* %nptr, i64 %rowv0
  store i8 1, i8* %nb
  br label %have_value

have_value:
  %av = load i64, i64* %acc
  %negv = load i1, i1* %neg
  %mv = sub i64 0, %av
  %val = select i1 %negv, i64 %mv, i64 %av
  %colv = load i64, i64* %col
  %rowv = load i64, i64* %row
  %wslot = getelementptr i64, i64* %widths, i64 %colv
  %w = load i64, i64* %wslot
  %oslot = getelementptr i8*, i8** %outs, i64 %colv
  %optr = load i8*, i8** %oslot
  switch i64 %w, label %st8 [ i64 2, label %st2
                              i64 4, label %st4 ]
st2:
  %lo2 = icmp slt i64 %val, -32768
  %hi2 = icmp sgt i64 %val, 32767
  %bad2 = or i1 %lo2, %hi2
  br i1 %bad2, label %fail, label %st2w
st2w:
  %o2 = bitcast i8* %optr to i16*
  %s2 = getelementptr i16, i16* %o2, i64 %rowv
  %t2 = trunc i64 %val to i16
  store i16 %t2, i16* %s2
  br label %after_store
st4:
  %lo4 = icmp slt i64 %val, -2147483648
  %hi4 = icmp sgt i64 %val, 2147483647
  %bad4 = or i1 %lo4, %hi4
  br i1 %bad4, label %fail, label %st4w
st4w:
  %o4 = bitcast i8* %optr to i32*
  %s4 = getelementptr i32, i32* %o4, i64 %rowv
  %t4 = trunc i64 %val to i32
  store i32 %t4, i32* %s4
  br label %after_store
st8:
  %o8 = bitcast i8* %optr to i64*
  %s8 = getelementptr i64, i64* %o8, i64 %rowv
  store i64 %val, i64* %s8
  br label %after_store

after_store:
  %col2 = add i64 %colv, 1
  store i64 %col2, i64* %col
  %cv = load i64, i64* %c
  %isdelim = icmp eq i64 %cv, %delim
  br i1 %isdelim, label %next_field, label %not_delim
not_delim:
  %isnl = icmp eq i64 %cv, 10
  br i1 %isnl, label %end_row, label %fail
next_field:
  %more = icmp sge i64 %col2, %ncols
  br i1 %more, label %fail, label %next_field2
next_field2:
  %pf = load i64, i64* %pos
  %pf1 = add i64 %pf, 1
  store i64 %pf1, i64* %pos
  br label %field_start
end_row:
  %ok = icmp eq i64 %col2, %ncols
  br i1 %ok, label %end_row2, label %fail
end_row2:
  %pe = load i64, i64* %pos
  %pe1 = add i64 %pe, 1
  store i64 %pe1, i64* %pos
  %re = load i64, i64* %row
  %re1 = add i64 %re, 1
  store i64 %re1, i64* %row
  br label %row_start

done:
  %rd = load i64, i64* %row
  ret i64 %rd
fail:
  ret i64 -1
}
"""

_lock = threading.Lock()
_fn = None
_engine = None
_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="copy-int")


def _compile():
    """Compile the reader once (speed level 2: the stack slots become registers)."""
    global _fn, _engine
    with _lock:
        if _fn is not None:
            return _fn
        import llvmlite.binding as llvm

        from . import jit

        with jit._llvm_lock:
            tm = jit._target_machine(2)
            mod = llvm.parse_assembly(_IR)
            mod.triple = llvm.get_process_triple()
            mod.data_layout = str(tm.target_data)
            mod.verify()
            pb = llvm.PassBuilder(tm, llvm.PipelineTuningOptions(speed_level=2))
            pb.getModulePassManager().run(mod, pb)
            ee = llvm.create_mcjit_compiler(mod, tm)
            ee.finalize_object()
        _engine = ee
        _fn = PARSE_T(ee.get_function_address("parse_ints"))
        return _fn


def preload() -> None:
    """Compile ahead of the first COPY (server start, in a background thread)."""
    try:
        _compile()
    except Exception:  # noqa: BLE001 - the general decoder still works
        pass


def eligible(oids, null: str | None) -> bool:
    """Only integer columns, and a NULL string the loop knows."""
    return bool(oids) and all(o in WIDTH for o in oids) and null in ("", "\\N")


def _parse(fn, data, start: int, stop: int, widths: np.ndarray, delim: int, nullkind: int):
    n = stop - start
    ncols = len(widths)
    maxrows = n // ncols + 1
    outs = [np.empty(maxrows, DTYPE[int(w)]) for w in widths]
    nulls = [np.zeros(maxrows, np.bool_) for _ in widths]
    optrs = (ctypes.c_void_p * ncols)(*[a.ctypes.data for a in outs])
    nptrs = (ctypes.c_void_p * ncols)(*[a.ctypes.data for a in nulls])
    base = np.frombuffer(data, np.uint8).ctypes.data + start
    rows = fn(base, n, ncols, widths.ctypes.data, ctypes.addressof(optrs), ctypes.addressof(nptrs), maxrows,
              delim, nullkind)
    if rows < 0:
        return None
    return [(o[:rows], m[:rows]) for o, m in zip(outs, nulls)]


def parse(data: bytes, oids, delimiter: str, null: str) -> list[tuple[np.ndarray, np.ndarray | None]] | None:
    """Columns for ``data`` (complete rows), or None: use the general decoder."""
    if not data:
        return None
    fn = _fn or _compile()
    widths = np.array([WIDTH[o] for o in oids], np.int64)
    delim, nullkind = ord(delimiter), 0 if null == "" else 1
    mid = data.find(b"\n", len(data) // 2) + 1 if len(data) >= PARALLEL_BYTES else 0
    if 0 < mid < len(data):
        fut = _pool.submit(_parse, fn, data, mid, len(data), widths, delim, nullkind)
        first = _parse(fn, data, 0, mid, widths, delim, nullkind)
        second = fut.result()
        if first is None or second is None:
            return None
        parts = [(np.concatenate([a, b]), np.concatenate([m, k])) for (a, m), (b, k) in zip(first, second)]
    else:
        parts = _parse(fn, data, 0, len(data), widths, delim, nullkind)
        if parts is None:
            return None
        parts = [(v.copy(), m.copy()) for v, m in parts]
    return [(v, m if m.any() else None) for v, m in parts]
