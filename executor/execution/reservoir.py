"""Parallel reservoir sampling (Winter, ch. 5 §5.2; issue 18).

Why this shape: a uniform fixed-size sample of n items, drawn by p workers
that each see an arbitrary subset of the chunks (morsels), with no
communication while sampling (Fig. 5.1):

1. each worker keeps its own reservoir with Algorithm L (Li 1994): the skip
   chain says which positions enter and at which slot, so only chosen items
   are touched; a chunk with no pick costs O(1);
2. the workers report their counts N_i;
3. the coordinator computes each worker's share k_i: the categorical merge
   of Algorithm 5.4 (a Fenwick tree over the counts, integer draws only) for
   small n, one hypergeometric draw per worker for large n;
4. each worker contributes k_i items drawn uniformly from its reservoir.

The sample is uniform however the chunks were dealt (§5.2.3: the shares are
hypergeometric and each local reservoir is a uniform sample of its N_i).

The reservoir itself only decides *slots and offsets*; what a slot holds
(row positions, column values) is the caller's, so one kernel serves table
statistics, TABLESAMPLE RESERVOIR and stream views.  The skip chain is
vectorised with numpy (a chunk is one batch of draws, never a Python step
per row); the categorical merge is compiled when the LLVM backend installed
it (``backends.interface.sampling_kernel``), else it runs the same
algorithm in Python.
"""
from __future__ import annotations

import numpy as np

from ..backends import interface

# Thesis Fig. 5.3: the categorical merge beats the hypergeometric one for
# sample sizes up to ~750.
CATEGORICAL_MAX_N = 750
# numpy's hypergeometric sampler needs ngood + nbad below 10**9.
_HG_LIMIT = 10 ** 9 - 1
_FAR = float(1 << 62)


class AlgorithmL:
    """Which positions of a sequence of chunks enter a size-``n`` reservoir.

    ``offer(m)`` consumes the next ``m`` positions and returns ``(slots,
    offsets)``: slot ``slots[j]`` now holds the item at ``offsets[j]`` of
    that chunk (the last write per slot only).  ``seen`` is N_i."""

    __slots__ = ("n", "rng", "seen", "_logw", "_next")

    def __init__(self, n: int, rng: np.random.Generator) -> None:
        if n <= 0:
            raise ValueError("reservoir size must be positive")
        self.n, self.rng = int(n), rng
        self.seen = 0
        self._logw = 0.0           # log W of Algorithm L, once the reservoir is full
        self._next = 0             # position of the pending pick, once full

    @property
    def filled(self) -> int:
        return min(self.n, self.seen)

    def offer(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        slots, offs, self._logw, self._next = offer(self.n, self.seen, self._logw, self._next, int(m), self.rng)
        self.seen += int(m)
        return slots, offs


def offer(n: int, seen: int, logw: float, nxt: int, m: int,
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Algorithm L over the next ``m`` positions of a reservoir that has seen
    ``seen`` (its state: log W and the pending pick ``nxt``, meaningful once
    full).  Returns (slots, offsets into the chunk, log W, next pick); a
    state kept as plain numbers is what a view's aggregate state saves."""
    lo, hi = seen, seen + m
    parts_s: list[np.ndarray] = []
    parts_o: list[np.ndarray] = []
    if lo < n:                                        # fill phase: a slice
        k = min(n, hi) - lo
        parts_s.append(np.arange(lo, lo + k, dtype=np.int64))
        parts_o.append(np.arange(k, dtype=np.int64))
        if lo + k == n:
            logw = float(np.log(rng.random())) / n
            nxt = n - 1 + _skip(logw, rng.random())
    if hi > n:
        while nxt < hi:
            s, p, logw, nxt = _picks(n, logw, nxt, hi, rng)
            parts_s.append(s)
            parts_o.append(p - lo)
    if not parts_s:
        return _EMPTY, _EMPTY, logw, nxt
    slots = np.concatenate(parts_s) if len(parts_s) > 1 else parts_s[0]
    offs = np.concatenate(parts_o) if len(parts_o) > 1 else parts_o[0]
    slots, offs = _last_per_slot(slots, offs)
    return slots, offs, logw, nxt


def _picks(n: int, logw: float, nxt: int, hi: int, rng: np.random.Generator):
    """The picks in [nxt, hi) of one batch of draws (vectorised skip chain)."""
    expected = n * max(np.log(max(hi, 2) / max(nxt, 1)), 0.0)
    k = int(expected * 1.25) + 16
    uw, us = rng.random(k), rng.random(k)
    slots = rng.integers(0, n, k, dtype=np.int64)
    lw = logw + np.cumsum(np.log(uw)) / n                           # W_1 .. W_k
    skips = np.minimum(np.floor(np.log(us) / np.log(-np.expm1(lw))), _FAR) + 1
    pos = np.minimum(nxt + np.concatenate(([0.0], np.cumsum(skips))), _FAR)   # P_0 .. P_k
    a = int(np.searchsorted(pos[:k], hi))                            # picks below hi
    if a:
        logw = float(lw[a - 1])
    return slots[:a], pos[:a].astype(np.int64), logw, int(pos[a])


def _skip(logw: float, u: float) -> int:
    return int(min(np.floor(np.log(u) / np.log(-np.expm1(logw))), _FAR)) + 1


_EMPTY = np.zeros(0, dtype=np.int64)


def _last_per_slot(slots: np.ndarray, offs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep the last write to each slot (picks arrive in position order)."""
    if len(slots) < 2:
        return slots, offs
    rev = slots[::-1]
    uniq, first = np.unique(rev, return_index=True)
    return uniq, offs[::-1][first]


# ------------------------------------------------------------------ merge

def categorical_shares(counts: np.ndarray, n: int, seed: int) -> np.ndarray:
    """Algorithm 5.4: slot by slot, worker i with probability N_i / N, then
    N_i and N decremented (without replacement).  Integer draws over a
    Fenwick tree of the counts: exact, O(p + n log p)."""
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    kernel = interface.sampling_kernel("categorical_shares")
    if kernel is not None:
        return kernel(counts, int(n), int(seed))
    return _categorical_py(counts, int(n), int(seed))


def _categorical_py(counts: np.ndarray, n: int, seed: int) -> np.ndarray:
    p = len(counts)
    tree = [0] * (p + 1)
    for i, c in enumerate(counts.tolist()):          # O(p) build
        j = i + 1
        tree[j] += c
        up = j + (j & -j)
        if up <= p:
            tree[up] += tree[j]
    total = int(counts.sum())
    out = np.zeros(p, dtype=np.int64)
    state = _SplitMix(seed)
    top = 1 << max(p.bit_length() - 1, 0)
    for _ in range(min(n, total)):
        r = state.below(total)
        pos, step = 0, top                              # rank: first prefix sum > r
        while step:
            nxt = pos + step
            if nxt <= p and tree[nxt] <= r:
                pos = nxt
                r -= tree[nxt]
            step >>= 1
        out[pos] += 1
        j = pos + 1
        while j <= p:                                   # add(selThread, -1)
            tree[j] -= 1
            j += j & -j
        total -= 1
    return out


class _SplitMix:
    """splitmix64 with Lemire's multiply-shift bounded draw, the same
    integer stream the compiled merge draws from (same seed, same shares)."""

    __slots__ = ("s",)
    MASK = (1 << 64) - 1

    def __init__(self, seed: int) -> None:
        self.s = seed & self.MASK

    def next(self) -> int:
        self.s = (self.s + 0x9E3779B97F4A7C15) & self.MASK
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def below(self, bound: int) -> int:
        return (self.next() * bound) >> 64


def hypergeometric_shares(counts: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """One hypergeometric draw per worker (the baseline for large n)."""
    counts = np.asarray(counts, dtype=np.int64)
    out = np.zeros(len(counts), dtype=np.int64)
    rem_total, rem_n = int(counts.sum()), min(int(n), int(counts.sum()))
    for i, c in enumerate(counts.tolist()[:-1]):
        if rem_n == 0:
            break
        k = int(rng.hypergeometric(c, rem_total - c, rem_n)) if c and c < rem_total else (rem_n if c else 0)
        out[i] = k
        rem_total -= c
        rem_n -= k
    if len(counts):
        out[-1] += rem_n
    return out


def shares(counts: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Step ③: each worker's share of the global sample."""
    counts = np.asarray(counts, dtype=np.int64)
    if n <= CATEGORICAL_MAX_N or int(counts.sum()) > _HG_LIMIT:
        return categorical_shares(counts, n, int(rng.integers(0, 1 << 63)))
    return hypergeometric_shares(counts, n, rng)


class ParallelReservoir:
    """Fig. 5.1: one Algorithm L reservoir per worker, merged on demand.
    Slots hold item ids (int64: a row position, or the caller's index into
    its own payload)."""

    def __init__(self, n: int, workers: int, seed: int | None = None) -> None:
        root = np.random.SeedSequence(seed)
        kids = root.spawn(workers + 1)
        self.n = int(n)
        self.locals = [AlgorithmL(n, np.random.Generator(np.random.PCG64(s))) for s in kids[:workers]]
        self.ids = [np.zeros(0, dtype=np.int64) for _ in range(workers)]
        self.rng = np.random.Generator(np.random.PCG64(kids[workers]))

    def offer(self, worker: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Worker ``worker`` sees the chunk of items ``ids``; returns (slots, offsets) written."""
        res = self.locals[worker]
        slots, offs = res.offer(len(ids))
        if len(slots):
            buf = self.ids[worker]
            if len(buf) < res.filled:
                grown = np.empty(res.filled, dtype=np.int64)
                grown[: len(buf)] = buf
                buf = self.ids[worker] = grown
            buf[slots] = ids[offs]
        return slots, offs

    def counts(self) -> np.ndarray:
        return np.array([r.seen for r in self.locals], dtype=np.int64)

    def merge(self) -> list[np.ndarray]:
        """Steps ②-④: per worker, the reservoir slots that form the global sample."""
        k = shares(self.counts(), self.n, self.rng)
        return [np.sort(self.rng.choice(r.filled, int(ki), replace=False)) if ki else _EMPTY
                for r, ki in zip(self.locals, k.tolist())]

    def sample_ids(self) -> np.ndarray:
        """The merged sample's item ids (unordered)."""
        picks = self.merge()
        got = [self.ids[w][s] for w, s in enumerate(picks) if len(s)]
        return np.concatenate(got) if got else _EMPTY


def sample_positions(n_rows: int, n: int, seed: int | None, workers: int = 2, morsel: int = 1 << 16) -> np.ndarray:
    """A uniform sample of min(n, n_rows) of the positions 0..n_rows-1, drawn
    as a parallel scan would: morsels dealt round-robin to ``workers``
    reservoirs, then merged; sorted (scan order)."""
    res = ParallelReservoir(n, workers, seed)
    for w, start in enumerate(range(0, n_rows, morsel)):
        res.offer(w % workers, np.arange(start, min(n_rows, start + morsel), dtype=np.int64))
    return np.sort(res.sample_ids())
