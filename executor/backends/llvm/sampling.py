"""The compiled categorical merge of parallel reservoir sampling (Winter,
Algorithm 5.4; issue 18), installed into ``backends.interface`` on import.

Why compiled: the merge is a sequential loop of n draws, each a Fenwick
rank and update (O(log p)); in Python that is ~1 µs per slot, compiled it is
a few ns, which is what makes the categorical merge beat the hypergeometric
one for small n (thesis Fig. 5.3).  Its random numbers are splitmix64 with
Lemire's multiply-shift bounded draw, bit for bit the stream of the Python
fallback in ``execution.reservoir``, so a seeded merge gives the same shares
with or without the compiler.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np
from llvmlite import ir

from .. import interface
from . import jit

MERGE_T = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                           ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
_lock = threading.Lock()
_compiled: dict[bool, tuple] = {}       # branchless -> (engine, fn), once compiled
#: from this many workers on, the Fenwick descent is branchless: its direction
#: is then a coin flip the branch predictor loses half the time (n = 1000 over
#: 512 workers: 51 -> 43 us), while over a few workers a predicted branch wins
#: (n = 10,000 over 2: 75 us branchy, 112 branchless)
BRANCHLESS_FROM = 64


def categorical_shares(counts: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Each worker's share of a size-``n`` sample over ``counts`` (see module doc)."""
    p = len(counts)
    if p == 0:
        return np.zeros(0, dtype=np.int64)
    buf = np.zeros(2 * p + 1, dtype=np.int64)       # Fenwick tree [0, p], then the shares
    total = int(counts.sum())
    addr = buf.__array_interface__["data"][0]        # (ndarray.ctypes costs microseconds)
    _fn(p >= BRANCHLESS_FROM)(counts.__array_interface__["data"][0], addr, addr + 8 * (p + 1), p, min(int(n), total), total,
          1 << (p.bit_length() - 1), ctypes.c_int64(seed & ((1 << 64) - 1)).value)
    return buf[p + 1:]


def _fn(branchless: bool):
    hit = _compiled.get(branchless)
    if hit is None:
        with _lock:
            hit = _compiled.get(branchless)
            if hit is None:
                ir_text = str(_build(branchless))
                with jit._llvm_lock:
                    ee = jit._compile(ir_text, 2, verify=True, speed_level=3)
                hit = _compiled[branchless] = (ee, MERGE_T(ee.get_function_address("categorical_shares")))
    return hit[1]


def _build(branchless: bool) -> ir.Module:
    i64, i128 = ir.IntType(64), ir.IntType(128)
    mod = ir.Module(name="sampling")
    p64 = i64.as_pointer()
    fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), [p64, p64, p64, i64, i64, i64, i64, i64]),
                     "categorical_shares")
    counts, tree, out, p, draws, total, top, seed = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    c = lambda v: ir.Constant(i64, v)      # noqa: E731
    at = lambda arr, k: b.gep(arr, [k])    # noqa: E731

    # Fenwick build, O(p): tree[j] += counts[j-1]; tree[j + lowbit(j)] += tree[j]
    with _loop(b, c(1), b.add(p, c(1))) as j:
        t = b.add(b.load(at(tree, j)), b.load(at(counts, b.sub(j, c(1)))))
        b.store(t, at(tree, j))
        up = b.add(j, b.and_(j, b.neg(j)))
        with b.if_then(b.icmp_signed("<=", up, p)):
            b.store(b.add(b.load(at(tree, up)), t), at(tree, up))

    state, rem = b.alloca(i64), b.alloca(i64)
    slots = (b.alloca(i64), b.alloca(i64), b.alloca(i64), b.alloca(i64))    # entry-block allocas only
    b.store(seed, state)
    b.store(total, rem)
    with _loop(b, c(0), draws):
        # splitmix64, then r = (x * rem) >> 64
        s = b.add(b.load(state), c(0x9E3779B97F4A7C15 - (1 << 64)))
        b.store(s, state)
        z = b.mul(b.xor(s, b.lshr(s, c(30))), c(0xBF58476D1CE4E5B9 - (1 << 64)))
        z = b.mul(b.xor(z, b.lshr(z, c(27))), c(0x94D049BB133111EB - (1 << 64)))
        z = b.xor(z, b.lshr(z, c(31)))
        wide = b.mul(b.zext(z, i128), b.zext(b.load(rem), i128))
        r0 = b.trunc(b.lshr(wide, ir.Constant(i128, 64)), i64)
        thread = _rank(b, tree, p, top, r0, slots[:3], branchless)
        b.store(b.add(b.load(at(out, thread)), c(1)), at(out, thread))
        _decrement(b, tree, p, b.add(thread, c(1)), slots[3])
        b.store(b.sub(b.load(rem), c(1)), rem)
    b.ret_void()
    return mod


def _rank(b: ir.IRBuilder, tree, p, top, r0, cells, branchless: bool):
    """The worker whose prefix-sum range holds r0 (Fenwick descent)."""
    i64 = ir.IntType(64)
    pos, step, r = cells
    b.store(ir.Constant(i64, 0), pos)
    b.store(top, step)
    b.store(r0, r)
    head = b.append_basic_block("rank.head")
    body = b.append_basic_block("rank.body")
    done = b.append_basic_block("rank.done")
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(b.icmp_signed(">", b.load(step), ir.Constant(i64, 0)), body, done)
    b.position_at_end(body)
    if branchless:
        # nxt < 2 * top <= 2p stays inside the caller's buffer (the tree, then
        # the shares), so the load past p is harmless and its value unused
        cur, rv = b.load(pos), b.load(r)
        nxt = b.add(cur, b.load(step))
        t = b.load(b.gep(tree, [nxt]))
        take = b.and_(b.icmp_signed("<=", nxt, p), b.icmp_signed("<=", t, rv))
        b.store(b.select(take, nxt, cur), pos)
        b.store(b.select(take, b.sub(rv, t), rv), r)
    else:
        nxt = b.add(b.load(pos), b.load(step))
        with b.if_then(b.icmp_signed("<=", nxt, p)):
            t = b.load(b.gep(tree, [nxt]))
            with b.if_then(b.icmp_signed("<=", t, b.load(r))):
                b.store(nxt, pos)
                b.store(b.sub(b.load(r), t), r)
    b.store(b.lshr(b.load(step), ir.Constant(i64, 1)), step)
    b.branch(head)
    b.position_at_end(done)
    return b.load(pos)


def _decrement(b: ir.IRBuilder, tree, p, j0, j) -> None:
    """Fenwick add(j0, -1): the chosen worker's N_i and every range holding it."""
    i64 = ir.IntType(64)
    b.store(j0, j)
    head = b.append_basic_block("dec.head")
    body = b.append_basic_block("dec.body")
    done = b.append_basic_block("dec.done")
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(b.icmp_signed("<=", b.load(j), p), body, done)
    b.position_at_end(body)
    jv = b.load(j)
    slot = b.gep(tree, [jv])
    b.store(b.sub(b.load(slot), ir.Constant(i64, 1)), slot)
    b.store(b.add(jv, b.and_(jv, b.neg(jv))), j)
    b.branch(head)
    b.position_at_end(done)


class _loop:
    """``for i in range(lo, hi)`` in IR, as a context manager yielding i."""

    def __init__(self, b: ir.IRBuilder, lo, hi) -> None:
        self.b, self.lo, self.hi = b, lo, hi

    def __enter__(self):
        b = self.b
        self.i = b.alloca(ir.IntType(64))
        b.store(self.lo, self.i)
        self.head = b.append_basic_block("loop.head")
        self.body = b.append_basic_block("loop.body")
        self.done = b.append_basic_block("loop.done")
        b.branch(self.head)
        b.position_at_end(self.head)
        b.cbranch(b.icmp_signed("<", b.load(self.i), self.hi), self.body, self.done)
        b.position_at_end(self.body)
        return b.load(self.i)

    def __exit__(self, *exc) -> None:
        b = self.b
        b.store(b.add(b.load(self.i), ir.Constant(ir.IntType(64), 1)), self.i)
        b.branch(self.head)
        b.position_at_end(self.done)


interface.install_sampling_kernel("categorical_shares", categorical_shares)
