"""Parallel reservoir sampling (issue 18, item 1): uniform however the input
is chunked and dealt to workers, size min(n, N), merge shares hypergeometric,
compiled and Python merges identical."""
from __future__ import annotations

import math

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Col
from splitstream.catalog.storage.tables import TableVersion
from splitstream.executor.commands.table_stats import TableSample
from splitstream.executor.backends.llvm import sampling as compiled
from splitstream.executor.execution import reservoir as R
from splitstream.executor.execution.column_stats import HyperLogLog, hash_values
from splitstream.protocol import oids

Z_1E4 = 3.719      # one-sided normal quantile for p = 1e-4


def chi2_critical(df: int, z: float = Z_1E4) -> float:
    """Wilson-Hilferty approximation of the chi-square quantile (no scipy here)."""
    return df * (1 - 2 / (9 * df) + z * math.sqrt(2 / (9 * df))) ** 3


def chi2(observed: np.ndarray, expected: np.ndarray) -> float:
    return float(((observed - expected) ** 2 / expected).sum())


def skewed_chunks(rng: np.random.Generator, total: int) -> list[int]:
    """Chunk sizes from 1 to most of the input, different in every trial."""
    sizes, left = [], total
    while left:
        k = int(min(left, max(1, rng.geometric(rng.choice([0.5, 0.05, 0.01])))))
        sizes.append(k)
        left -= k
    return sizes


def test_algorithm_l_alone_is_uniform_over_positions():
    N, n, trials = 60, 7, 10_000
    rng = np.random.default_rng(7)
    hits = np.zeros(N)
    for t in range(trials):
        res = R.AlgorithmL(n, np.random.default_rng(t))
        held = np.full(n, -1)
        start = 0
        for m in skewed_chunks(rng, N):
            slots, offs = res.offer(m)
            held[slots] = start + offs
            start += m
        assert res.seen == N and len(set(held.tolist())) == n and held.min() >= 0
        hits[held] += 1
    expected = np.full(N, trials * n / N)
    assert chi2(hits, expected) < chi2_critical(N - 1)


@pytest.mark.parametrize("workers", [1, 3])
def test_parallel_sample_is_uniform_however_chunks_are_dealt(workers):
    N, n, trials = 80, 10, 10_000
    rng = np.random.default_rng(11 + workers)
    hits = np.zeros(N)
    for t in range(trials):
        res = R.ParallelReservoir(n, workers, seed=t)
        start = 0
        for m in skewed_chunks(rng, N):
            # skewed dealing: worker 0 takes most chunks
            w = 0 if rng.random() < 0.7 else int(rng.integers(0, workers))
            res.offer(w, np.arange(start, start + m))
            start += m
        got = res.sample_ids()
        assert len(got) == n and len(np.unique(got)) == n
        hits[got] += 1
    assert chi2(hits, np.full(N, trials * n / N)) < chi2_critical(N - 1)


def test_strata_uniform_with_extreme_worker_imbalance():
    """One worker sees a single row, the other the rest: that row is still
    in the sample with probability n / N (a stratum test of the merge)."""
    N, n, trials = 200, 20, 10_000
    lone = 0
    for t in range(trials):
        res = R.ParallelReservoir(n, 2, seed=t)
        res.offer(1, np.array([0]))
        res.offer(0, np.arange(1, N))
        lone += int(0 in set(res.sample_ids().tolist()))
    p = n / N
    sd = math.sqrt(trials * p * (1 - p))
    assert abs(lone - trials * p) < 4 * sd


@pytest.mark.parametrize("N, n", [(0, 5), (3, 5), (5, 5), (6, 5), (100_000, 5), (100_000, 2000)])
def test_sample_size_is_min_n_N(N, n):
    got = R.sample_positions(N, n, seed=3, workers=2, morsel=997)
    assert len(got) == min(n, N) and len(np.unique(got)) == len(got)
    assert (got >= 0).all() and (got < max(N, 1)).all()


def test_skip_chain_touches_only_chosen_items():
    """After the fill, a chunk writes at most n slots and, far into the
    input, only a few of them: the picks, not the rows."""
    res = R.AlgorithmL(100, np.random.default_rng(1))
    res.offer(100)
    res.offer(10_000_000)
    slots, _ = res.offer(1_000_000)
    assert len(slots) < 60        # ~ n * ln(11/10) = 9.5 picks expected
    assert res.seen == 11_000_100


def hypergeom_pmf(k: int, good: int, total: int, n: int) -> float:
    return math.comb(good, k) * math.comb(total - good, n - k) / math.comb(total, n)


@pytest.mark.parametrize("merge", ["categorical", "hypergeometric"])
def test_merge_shares_are_hypergeometric(merge):
    counts, n, trials = np.array([30, 70, 5]), 12, 10_000
    rng = np.random.default_rng(5)
    seen = np.zeros(n + 1)
    for t in range(trials):
        k = (R.categorical_shares(counts, n, t) if merge == "categorical"
             else R.hypergeometric_shares(counts, n, rng))
        assert k.sum() == n and (k <= counts).all()
        seen[k[0]] += 1
    exp = np.array([trials * hypergeom_pmf(k, 30, 105, n) for k in range(n + 1)])
    keep = exp >= 5                      # pool sparse tails
    obs = np.append(seen[keep], seen[~keep].sum())
    ex = np.append(exp[keep], exp[~keep].sum())
    assert chi2(obs, ex) < chi2_critical(len(obs) - 1)


def test_compiled_merge_draws_what_the_python_merge_draws():
    """Both compiled descents (branchy below BRANCHLESS_FROM workers,
    branchless from it, where loads run past p) draw the Python merge's shares."""
    rng = np.random.default_rng(9)
    sizes = [int(rng.integers(1, 40)) for _ in range(50)] + [int(rng.integers(40, 700)) for _ in range(30)]
    sizes += [compiled.BRANCHLESS_FROM - 1, compiled.BRANCHLESS_FROM, 512, 513]
    for p in sizes:
        counts = rng.integers(0, 1000, p)
        n = int(rng.integers(0, 3000))
        seed = int(rng.integers(0, 1 << 63))
        a = compiled.categorical_shares(np.ascontiguousarray(counts, dtype=np.int64), n, seed)
        b = R._categorical_py(np.asarray(counts, dtype=np.int64), n, seed)
        assert a.tolist() == b.tolist()
        assert a.sum() == min(n, counts.sum())


def test_seeded_sample_is_reproducible():
    a = R.sample_positions(50_000, 300, seed=42)
    b = R.sample_positions(50_000, 300, seed=42)
    c = R.sample_positions(50_000, 300, seed=43)
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()


@pytest.mark.parametrize("n", [10, 1000, 200_000])
def test_hyperloglog_estimate_and_merge(n):
    """The column sketch behind n_distinct: within 3% (p = 14: 0.8% standard
    error), and merging two sketches is the sketch of the union."""
    a, b, both = HyperLogLog(), HyperLogLog(), HyperLogLog()
    lo = np.arange(n, dtype=np.int64)
    hi = np.arange(n // 2, n + n // 2, dtype=np.int64)
    a.add_hashes(hash_values(Col(lo, None, oids.INT8)))
    b.add_hashes(hash_values(Col(hi, None, oids.INT8)))
    both.add_hashes(hash_values(Col(np.concatenate([lo, hi]), None, oids.INT8)))
    a.merge(b)
    assert (a.reg == both.reg).all()
    union = n + n // 2 + (n % 2)
    assert abs(a.estimate() - union) <= max(1, 0.03 * union)


def test_table_sample_is_uniform_over_live_rows_with_skewed_appends_and_deletes():
    """A table's maintained sample (executor/commands/table_stats.py): rows
    appended in skewed chunks, caught up at random moments, some rows deleted;
    over 10,000 trials every live row is in the sample with the same probability."""
    N, n, trials = 48, 8, 10_000
    rng = np.random.default_rng(17)
    dead = np.arange(0, N, 6)                     # deleted before the last look
    live = np.setdiff1d(np.arange(N), dead)
    hits = np.zeros(N)
    for t in range(trials):
        tv = TableVersion([oids.INT8])
        sample = TableSample(n, 1, seed=t)
        start = 0
        for m in skewed_chunks(rng, N):
            tv = tv.append([Col(np.arange(start, start + m, dtype=np.int64), None, oids.INT8)])
            start += m
            if rng.random() < 0.4:
                sample.catch_up(tv)
        tv = tv.delete(dead)
        sample.catch_up(tv)
        got = sample.rows(tv)[0].data
        assert set(got.tolist()) <= set(live.tolist())
        hits[got] += 1
    exp = hits[live].sum() / len(live)
    assert hits[dead].sum() == 0
    assert ((hits[live] - exp) ** 2 / exp).sum() < chi2_critical(len(live) - 1)
