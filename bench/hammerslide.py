"""Hammer Slide's HS-size and HS-slide experiments (issue 16), one thread.

    python -m bench.hammerslide [--tuples 4194304] [--repeat 3] [--max-log2 21]

int32 uniform data, min and avg (avg = the sliding sum / n; every window is
full, so its count is n).  Side by side in one run:

* ``kernel``: splitstream's compiled Two-Stacks (executor/backends/llvm/slide.py:
  per-slide pre-aggregation + block flips; integer avg at slide 1 as an
  exact running sum);
* ``naive``: numpy recomputation of every window (``sliding_window_view``);
* ``two-stacks``: plain Two-Stacks (the classic algorithm, one (value, agg)
  push/pop per tuple), in numpy-free Python over a sample (it is slow, so it
  runs on ``--plain-tuples`` tuples and is scaled per tuple);
* ``duckdb``: DuckDB's window query ``min(x) OVER (ORDER BY i ROWS
  BETWEEN n-1 PRECEDING AND CURRENT ROW)`` (slide 1; for a larger slide, the
  same query keeping one row per slide).

HS-size: slide 1, n = 8 .. 2^max-log2.  HS-slide: n = 1024, slides 1 .. 1024.
Throughput is input tuples per second of the best of ``--repeat`` runs, the
kernel and naive alternating so that load on a shared machine hits both (for
naive, tuples slid per second over a prefix bounded to ``NAIVE_WORK`` element
visits, since its cost grows with n).  The plain Two-Stacks runs in Python:
it shows the algorithm's flat cost over n, not a compiled peer's speed.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from splitstream.executor.backends.llvm.slide import sliding

from .common import fmt_rate, ratio, section, table


#: element visits the naive recomputation is given per case (it is O(n) per window)
NAIVE_WORK = 1 << 26


def _best(fn, repeat: int) -> float:
    return _best_of(repeat, fn)[0]


def _best_of(repeat: int, *fns) -> list[float]:
    """Best time of each of ``fns``, run in turn ``repeat`` times: peers
    alternate, so a burst of load on the shared machine hits all of them."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def kernel(x: np.ndarray, n: int, slide: int, agg: str, out: dict) -> np.ndarray:
    """``out``: reused result buffers per type, as a stream operator keeps its own between batches."""
    return sliding(x, n, slide, agg, out["f8" if agg == "avg" else "i4"])


def naive(x: np.ndarray, n: int, slide: int, agg: str) -> np.ndarray:
    m = len(x) // slide * slide
    w = sliding_window_view(x[:m], n)[::slide]
    return w.min(axis=1) if agg == "min" else w.sum(axis=1, dtype=np.int64) / n


def plain_two_stacks(x: list[int], n: int, agg: str) -> list:
    """The classic Two-Stacks queue (slide 1), pushes and pops per tuple."""
    op = min if agg == "min" else (lambda a, b: a + b)
    front: list[tuple[int, int]] = []
    back: list[tuple[int, int]] = []
    out = []
    for v in x:
        front.append((v, op(front[-1][1], v) if front else v))
        if len(front) + len(back) > n:
            if not back:
                while front:
                    fv, _ = front.pop()
                    back.append((fv, op(fv, back[-1][1]) if back else fv))
            back.pop()
        if len(front) + len(back) == n:
            a = front[-1][1] if front else None
            b = back[-1][1] if back else None
            r = b if a is None else a if b is None else op(b, a)
            out.append(r if agg == "min" else r / n)
    return out


def duck_rate(con, rows: int, n: int, slide: int, agg: str, repeat: int) -> float:
    fn = "min" if agg == "min" else "avg"
    keep = f"WHERE i % {slide} = {(n - 1) % slide}" if slide > 1 else ""
    q = (f"SELECT sum(m) FROM (SELECT i, {fn}(x) OVER (ORDER BY i ROWS BETWEEN {n - 1} PRECEDING AND CURRENT ROW) "
         f"AS m FROM hs) t {keep}")
    return rows / _best(lambda: con.execute(q).fetchall(), repeat)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.hammerslide")
    ap.add_argument("--tuples", type=int, default=1 << 22)
    ap.add_argument("--duck-tuples", type=int, default=1 << 20)
    ap.add_argument("--plain-tuples", type=int, default=1 << 17)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--max-log2", type=int, default=21)
    a = ap.parse_args(argv)
    import duckdb

    rng = np.random.default_rng(16)
    x = rng.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max, a.tuples, dtype=np.int32)
    out = {"i4": np.ones(a.tuples, np.int32), "f8": np.ones(a.tuples)}
    con = duckdb.connect()
    con.execute("SET threads TO 1")
    con.execute("CREATE TABLE hs AS SELECT range AS i, 0::INTEGER AS x FROM range(0)")
    con.register("xs", {"i": np.arange(a.duck_tuples), "x": x[: a.duck_tuples]})
    con.execute("INSERT INTO hs SELECT i, x FROM xs")
    plain = x[: a.plain_tuples].tolist()
    header = ["agg", "n", "slide", "kernel", "naive", "two-stacks", "duckdb", "kernel/naive", "kernel/duckdb"]
    for title, cases in (("HS-size (slide 1)", [(1 << e, 1) for e in range(3, a.max_log2 + 1)]),
                         ("HS-slide (n = 1024)", [(1024, 1 << e) for e in range(0, 11)])):
        section(title)
        rows = []
        for agg in ("min", "avg"):
            for n, slide in cases:
                # naive costs n per window: on a prefix of NAIVE_WORK / n windows, per slid tuple
                xn = x[: min(len(x), n + max(slide, NAIVE_WORK // n * slide))]
                got = kernel(xn, n, slide, agg, out)
                assert np.array_equal(got, naive(xn, n, slide, agg)), f"kernel differs from naive at n={n} slide={slide} {agg}"
                tk, tn = _best_of(a.repeat, lambda: kernel(x, n, slide, agg, out), lambda: naive(xn, n, slide, agg))
                k, nv = a.tuples / tk, (len(xn) - n + slide) / tn
                ts = None
                if slide == 1 and n <= len(plain):
                    ts = len(plain) / _best(lambda: plain_two_stacks(plain, n, agg), 1)
                dk = duck_rate(con, a.duck_tuples, n, slide, agg, a.repeat) if n < a.duck_tuples else None
                rows.append([agg, n, slide, fmt_rate(k), fmt_rate(nv), fmt_rate(ts), fmt_rate(dk), ratio(k, nv), ratio(k, dk)])
                print("  ..", *rows[-1], flush=True)
        table(header, rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
