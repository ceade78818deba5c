"""The native morsel driver (``drive``): two threads take morsels of one
batch through an atomic counter, each into its own table; guard failures
(dense -> hash) and full hash tables return to Python mid-morsel.  Together
the two tables hold exactly the batch's groups, nothing lost or counted twice."""
from __future__ import annotations

import threading

import numpy as np

from splitstream.executor.backends.llvm import jit
from splitstream.executor.backends.llvm.table import NativeTable

from .test_deopt import SHAPE, _native, _reference


def _merged(tables):
    out: dict = {}
    for t in tables:
        for k, (c, s) in _native(t).items():
            c0, s0 = out.get(k, (0, 0))
            out[k] = (c0 + c, s0 + s)
    return out


def _batch(n, seed):
    rng = np.random.default_rng(seed)
    flt = rng.integers(0, 10, n).astype(np.int32)
    keys = rng.integers(0, 500, n).astype(np.int64)
    keys[n // 2:] += rng.integers(-5_000, 5_000, n - n // 2)     # drift: dense guards fail, hash tables grow
    vals = rng.integers(-1000, 1000, n).astype(np.int32)
    return flt, keys, vals


def test_two_threads_share_a_batch_exactly():
    mod = jit.compile_shape(SHAPE, "gen")
    mod.fn("spec")
    n = 300_000
    flt, keys, vals = _batch(n, 11)
    base = [flt.ctypes.data, keys.ctypes.data, vals.ctypes.data, 0, 0, 0, 0, 6]
    tables = [NativeTable(SHAPE), NativeTable(SHAPE)]
    for t in tables:
        t.specialise([0], [499])
    ctl = np.array([0, n, 1 << 12], np.int64)
    th = threading.Thread(target=tables[1].run_driven, args=(mod, base, ctl))
    th.start()
    tables[0].run_driven(mod, base, ctl)
    th.join()
    assert sum(t.deopts for t in tables) >= 1
    assert _merged(tables) == _reference(keys, vals, flt < 6)


def test_one_thread_drives_a_batch_alone():
    mod = jit.compile_shape(SHAPE, "gen")
    n = 100_000
    flt, keys, vals = _batch(n, 12)
    t = NativeTable(SHAPE)
    ctl = np.array([0, n, 1 << 10], np.int64)
    t.run_driven(mod, [flt.ctypes.data, keys.ctypes.data, vals.ctypes.data, 0, 0, 0, 0, 3], ctl)
    assert _merged([t]) == _reference(keys, vals, flt < 3)
