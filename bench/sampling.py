"""Parallel reservoir sampling (issue 18): the thesis's Figs. 5.2 and 5.3 at this machine's scale.

    python -m bench.sampling [--rows 20000000] [--repeat 3]

* Fig. 5.2: sampling throughput with 1 and 2 threads (each thread feeds its
  own Algorithm L reservoir with morsels of an int64 column), as a ratio to a
  plain scan (sum) of the same morsels on the same threads, for reservoir
  sizes 1, 1000 and 10000; then the merge of the thread reservoirs.
* Fig. 5.3: the categorical merge (Algorithm 5.4, compiled) against the
  hypergeometric merge, microseconds per merge, for n from 1 to 10,000 and
  1 to 512 local samples.
"""
from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from splitstream.executor.backends.llvm import sampling as _compiled  # noqa: F401  (installs the compiled merge)
from splitstream.executor.execution import reservoir

MORSEL = 1 << 16


def _on_threads(threads: int, work) -> float:
    """Seconds for ``work(w)`` on each of ``threads`` threads."""
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, range(threads)))
    return time.perf_counter() - t0


def fig_5_2(rows: int, repeat: int) -> None:
    data = np.arange(rows, dtype=np.int64)
    chunks = [data[i: i + MORSEL] for i in range(0, rows, MORSEL)]
    print(f"Fig. 5.2: {rows:,} int64 rows in morsels of {MORSEL:,}; ratio = sampling time / scan (sum) time")
    for threads in (1, 2):
        def scan(w: int, threads=threads) -> None:
            for c in chunks[w::threads]:
                c.sum()
        t_scan = min(_on_threads(threads, scan) for _ in range(repeat))
        for n in (1, 1000, 10000):
            best = (float("inf"), 0.0)
            for _ in range(repeat):
                res = reservoir.ParallelReservoir(n, threads, seed=1)

                def sample(w: int, res=res, threads=threads) -> None:
                    for c in chunks[w::threads]:
                        res.offer(w, c)
                t = _on_threads(threads, sample)
                t0 = time.perf_counter()
                res.sample_ids()
                best = min(best, (t, time.perf_counter() - t0))
            print(f"  threads={threads} n={n:>5}: {rows / best[0] / 1e6:8.1f} M rows/s, ratio to scan "
                  f"{best[0] / t_scan:5.2f}, merge {best[1] * 1e6:8.1f} us")


def fig_5_3(repeat: int) -> None:
    print("Fig. 5.3: merge time in microseconds, categorical (compiled Algorithm 5.4) / hypergeometric")
    rng = np.random.default_rng(3)
    print("  n \\ samples" + "".join(f"{p:>18}" for p in (1, 2, 8, 64, 512)))
    for n in (1, 10, 100, 750, 1000, 10000):
        cells = []
        for p in (1, 2, 8, 64, 512):
            counts = np.full(p, 1_000_000, dtype=np.int64)
            reps = max(20, 2000 // max(1, n // 100))
            t_cat = _per_call(lambda: reservoir.categorical_shares(counts, n, int(rng.integers(1 << 62))), reps, repeat)
            t_hg = _per_call(lambda: reservoir.hypergeometric_shares(counts, n, rng), reps, repeat)
            cells.append(f"{t_cat:8.1f} /{t_hg:8.1f}")
        print(f"  {n:>10}" + "".join(f"{c:>18}" for c in cells))


def _per_call(fn, reps: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=20_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    fig_5_2(a.rows, a.repeat)
    fig_5_3(a.repeat)


if __name__ == "__main__":
    main()
