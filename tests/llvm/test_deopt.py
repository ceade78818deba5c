"""Specialisation and deoptimisation (Grizzly 6.2): exact results when keys
leave the profiled range, mid-stream and mid-batch."""
from __future__ import annotations

import numpy as np

from splitstream.executor.backends.llvm import codegen, jit
from splitstream.executor.backends.llvm import table as native_table
from splitstream.executor.backends.llvm.table import NativeTable

from .conftest import Sql, canon, values


def _reference(keys, vals, sel):
    out = {}
    for k, v, s in zip(keys.tolist(), vals.tolist(), sel.tolist()):
        if s:
            c, t = out.get(k, (0, 0))
            out[k] = (c + 1, t + v)
    return out


def _native(t: NativeTable):
    k1, _k2, _fl, rows, aggs = t.groups()
    return {k: (r, s) for k, r, s in zip(k1.tolist(), rows.tolist(), aggs[1][0].tolist())}


SHAPE = codegen.Shape(inputs=("i4", "i8", "i4"), conj=(("<", ("c", 0, None), ("p", 0), "i"),), nparams=1,
                      keys=(1,), aggs=(("star", -1), ("sum_i", 2)))


def test_guard_failure_mid_batch_resumes_exactly():
    mod = jit.compile_shape(SHAPE)
    rng = np.random.default_rng(7)
    n = 50_000
    flt = rng.integers(0, 10, n).astype(np.int32)
    keys = rng.integers(0, 100, n).astype(np.int64)
    keys[20_000:] += rng.integers(-300, 300, n - 20_000)       # drift in the middle of the batch
    keys[-5:] = [2**62, -2**62, 0, 99, -1]                     # extreme values (wrap-around in the guard)
    vals = rng.integers(-1000, 1000, n).astype(np.int32)
    base = [flt.ctypes.data, keys.ctypes.data, vals.ctypes.data, 0, 0, 0, 0, 5]
    t = NativeTable(SHAPE)
    t.specialise([0], [99])
    events = []
    t.run(mod, base, 0, n, events)
    assert t.deopts == 1 and t.variant == "generic" and events and events[0][0] == "deopt"
    assert 20_000 <= events[0][1] < n
    assert _native(t) == _reference(keys, vals, flt < 5)


def test_generic_table_grows_and_respecialises():
    mod = jit.compile_shape(SHAPE)
    rng = np.random.default_rng(3)
    t = NativeTable(SHAPE)
    allk, allv, alls = [], [], []
    for step in range(6):
        n = 20_000
        flt = rng.integers(0, 10, n).astype(np.int32)
        lo = 0 if step < 3 else 5_000 * step            # keys jump: dense range must be abandoned
        keys = rng.integers(lo, lo + 3_000, n).astype(np.int64)
        vals = rng.integers(-5, 5, n).astype(np.int32)
        t.run(mod, [flt.ctypes.data, keys.ctypes.data, vals.ctypes.data, 0, 0, 0, 0, 7], 0, n)
        t.maybe_specialise()
        allk.append(keys)
        allv.append(vals)
        alls.append(flt < 7)
    assert t.specialisations >= 1 and t.deopts >= 1
    assert _native(t) == _reference(np.concatenate(allk), np.concatenate(allv), np.concatenate(alls))


def test_view_result_exact_when_keys_leave_profiled_range(sql: Sql, monkeypatch):
    monkeypatch.setattr(native_table, "PROFILE_ROWS", 64)
    s_vec, s_llvm = sql.name("sv"), sql.name("sl")
    views = []
    for s in (s_vec, s_llvm):
        sql(f"CREATE FOREIGN TABLE {s} (k int, g smallint, x int, f float8) SERVER stream")
        v = sql.name("v")
        sql(f"CREATE VIEW {v} AS SELECT k, g, count(*), sum(x), min(f), max(x) FROM {s} WHERE x <> 3 GROUP BY k, g")
        views.append(v)
    rng = np.random.default_rng(11)
    for step in range(8):
        n = 300
        lo = 0 if step < 4 else -50 * step            # keys leave the profiled range from step 4 on
        k = rng.integers(lo, lo + 40, n)
        rows = [(int(a) if i % 17 else None, int(i % 3), int(b), float(c) / 4)
                for i, (a, b, c) in enumerate(zip(k, rng.integers(0, 9, n), rng.integers(-99, 99, n)))]
        sql.backend("vector")
        sql(f"INSERT INTO {s_vec} VALUES {values(rows)}")
        sql.backend("llvm")
        sql(f"INSERT INTO {s_llvm} VALUES {values(rows)}")
        if step == 3:
            text = "\n".join(sql.lines(f"EXPLAIN ANALYZE SELECT * FROM {views[1]}"))
            assert "llvm specialised" in text, text
    assert canon(sql.rows(f"SELECT * FROM {views[0]}")) == canon(sql.rows(f"SELECT * FROM {views[1]}"))
    text = "\n".join(sql.lines(f"EXPLAIN ANALYZE SELECT * FROM {views[1]}"))
    assert "deopts=" in text, text


#: ts (int64 microseconds), k, x: GROUP BY pane of ts (10 s slide, origin 3 s), k; sum(x) WHERE k < param
PANE_SHAPE = codegen.Shape(inputs=("i8", "i4", "i4"), conj=(("<", ("c", 1, None), ("p", 0), "i"),), nparams=1,
                           keys=(0, 1), aggs=(("star", -1), ("sum_i", 2)), panes=((10_000_000, 3_000_000, -1), None))


def test_dense_pane_range_widens_as_event_time_moves_on():
    """Panes passing the top of a dense range widen it (exact, no deopt);
    a late row (a pane below the range) still deoptimises, exactly."""
    mod = jit.compile_shape(PANE_SHAPE)
    rng = np.random.default_rng(5)
    t = NativeTable(PANE_SHAPE, (), ((10_000_000, 3_000_000), None))
    t.specialise([-1, 0], [1, 40])
    want: dict = {}
    for step in range(12):
        n = 5_000
        ts = np.sort(rng.integers(step * 30_000_000, (step + 1) * 30_000_000, n)) - 2_000_000   # some < origin
        if step == 11:
            ts[-1] = -500_000_000                                                                 # a late row
        ks = rng.integers(0, 40, n).astype(np.int32)
        xs = rng.integers(-9, 9, n).astype(np.int32)
        t.run(mod, [ts.ctypes.data, ks.ctypes.data, xs.ctypes.data, 0, 0, 0, 0, 30], 0, n)
        if step < 11:
            assert t.variant == "specialised" and t.deopts == 0, step
        for p, k, x in zip(((ts - 3_000_000) // 10_000_000).tolist(), ks.tolist(), xs.tolist()):
            if k < 30:
                c, s = want.get((p, k), (0, 0))
                want[(p, k)] = (c + 1, s + x)
    assert t.deopts == 1 and t.variant == "generic"
    k1, k2, _fl, rows, aggs = t.groups()
    got = {(a, b): (r, s) for a, b, r, s in zip(k1.tolist(), k2.tolist(), rows.tolist(), aggs[1][0].tolist())}
    assert got == want
    assert t.native_us(0, np.array([-1, 0, 2])).tolist() == [-7_000_000, 3_000_000, 23_000_000]
