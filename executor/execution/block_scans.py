"""Two-Stacks with flips at fixed block boundaries, in numpy (Hammer Slide
§2.2/§3.2; van Herk / Gil-Werman): over blocks of ``width`` values, the
back stack of a block is its suffix scan and the front its prefix scan, so
any range of exactly ``width`` values is ``op(suffix[lo], prefix[hi])`` --
two scans and one operation per value whatever the width, no rescans and no
inverse.  Window frames over tables (``window_aggs``) and the sliding
kernels' numpy twin (``backends/llvm/slide.py``) share it.
"""
from __future__ import annotations

import numpy as np


def block_scans(fn: np.ufunc, x: np.ndarray, width: int, ident) -> tuple[np.ndarray, np.ndarray]:
    """(prefix, suffix) scans of ``fn`` within blocks of ``width`` values of ``x``."""
    n = len(x)
    blocks = -(-n // width)
    padded = np.full(blocks * width, ident, x.dtype)
    padded[:n] = x
    blk = padded.reshape(blocks, width)
    pre = fn.accumulate(blk, axis=1).ravel()[:n]
    # reversing the whole array reverses each block and their order: the
    # suffix scans run on contiguous rows (a reversed-stride view is ~20x slower)
    rev = np.ascontiguousarray(padded[::-1]).reshape(blocks, width)
    suf = fn.accumulate(rev, axis=1).ravel()[::-1][:n]
    return pre, suf


def fixed_ranges(fn: np.ufunc, x: np.ndarray, lo: np.ndarray, width: int, ident) -> np.ndarray:
    """``fn`` over ``x[lo[i] : lo[i] + width]`` for each i (ranges inside ``x``)."""
    pre, suf = block_scans(fn, x, width, ident)
    back = suf[lo]
    # a range starting on a block's edge is that block: its suffix alone
    # (the prefix would count it twice for a sum)
    return np.where(lo % width == 0, back, fn(back, pre[lo + width - 1]))
