"""Hammer Slide's Two-Stacks kernels (issue 16) against brute force: the
compiled sliding kernels, their numpy twin, and the fixed-width frames of
window functions (window_aggs), including frames cut at partition edges."""
from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from splitstream.executor.backends.llvm.slide import sliding, sliding_numpy
from splitstream.executor.execution import window_aggs


@pytest.mark.parametrize("n, slide", [(4, 1), (16, 4), (1024, 64), (1024, 1), (1024, 1024), (96, 32), (3, 1), (1, 1)])
@pytest.mark.parametrize("op", ["min", "max", "sum", "avg"])
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_sliding_kernels_equal_naive(n, slide, op, dtype):
    rng = np.random.default_rng(n * 31 + slide)
    f = {"min": np.min, "max": np.max, "sum": np.sum, "avg": lambda w, axis: np.sum(w, axis=axis) / n}[op]
    for size in (0, 1, n - 1, n, n + slide, 5000):
        x = rng.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max, max(size, 0)).astype(dtype)
        m = len(x) // slide * slide
        want = f(sliding_window_view(x[:m].astype(np.int64), n)[::slide], axis=1) if m >= n else np.empty(0)
        for got in (sliding(x, n, slide, op),) + ((sliding_numpy(x, n, slide, op),) if op != "avg" else ()):
            assert len(got) == len(want) and np.array_equal(got, want)


def _brute(fn, x, lo, hi, ident):
    return np.array([fn.reduce(x[a:b + 1]) if b >= a else ident for a, b in zip(lo, hi)], dtype=x.dtype)


@pytest.mark.parametrize("before, after", [(7, 0), (0, 5), (3, 3), (1023, 0)])
@pytest.mark.parametrize("op", ["min", "max"])
def test_fixed_width_frames_with_partitions(before, after, op):
    rng = np.random.default_rng(before * 7 + after)
    n = 3000
    x = rng.normal(size=n) * 10.0 ** rng.integers(-3, 8, n)
    cuts = np.sort(rng.choice(np.arange(1, n), 12, replace=False))
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [n]]) - 1
    part = np.searchsorted(cuts, np.arange(n), side="right")
    ps, pe = starts[part], ends[part]
    i = np.arange(n)
    lo, hi = np.maximum(i - before, ps), np.minimum(i + after, pe)
    fn, ident = (np.fmin, np.inf) if op == "min" else (np.maximum, -np.inf)
    got = window_aggs._range_reduce(fn, x, lo, hi, ps, pe, ident)
    assert window_aggs._fixed_width(fn, x, lo, hi, ps, pe, ident, hi < lo) is not None
    assert np.array_equal(got, _brute(fn, x, lo, hi, ident))
