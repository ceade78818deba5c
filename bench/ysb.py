"""YSB as Grizzly defines it (section 7.1.2), in process.

    python -m bench.ysb [--events 32000000] [--batch 1000000] [--python-events 300000]

Events carry (event_type smallint, campaign_id bigint, event_time bigint ms,
value int); 33% are views.  The query is the continuous view

    SELECT campaign_id, sum(value) FROM ysb WHERE event_type = 0 GROUP BY campaign_id

evaluated per 10 s tumbling window (10,000 campaign keys).

First, and the figures to quote: the windows done by the engine, a TUMBLE
view grouping by (window_start, campaign_id) (bench/ysb_windows.py), in
process on 1 and 2 threads and end to end over COPY.  Then, as a kernel
reference (``--engine-windows-only`` skips it): batches are
handed straight to the view's stream pipeline (``StreamPipeline.process``),
exactly as the insert path does after decoding; the tumbling-window trigger
runs at batch granularity (events arrive time-ordered, a batch is split at
a window end, the window's result is emitted and the state cleared).

Variants: a pure-Python tuple-at-a-time loop, the vectorised backend, LLVM
generic (hash table) and LLVM specialised (dense array behind a range
guard), each with 1 and 2 threads.  Prints records/s, ratios and the compile
latency of the pipeline.

Peer: the same query in PyFlink (Flink SQL, local mini cluster, event-time
tumbling windows) over a CSV file of events from the same generator, run by
bench/ysb_flink.py in a separate virtualenv (``make flink-venv`` creates
``.venv-flink``; ``--flink-python PATH`` points elsewhere).  Without it the
run says so and goes on.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from . import ysb_events, ysb_windows
from .ysb_events import CAMPAIGNS, WINDOW_MS, ViewPipeline, find_flink_python, make_events, reference

KEY_TYPE = "bigint"          # --key-type: campaign_id bigint (default) or int (4 bytes less per event to stream)
BACKENDS_E2E = ("vector", "llvm", "auto")


def python_tuple_at_a_time(batches, limit: int) -> tuple[float, int]:
    """The reference a plain Python stream processor would be: one record at a time."""
    rows = []
    for et, camp, t, val in batches:
        rows += list(zip(et.tolist(), camp.tolist(), t.tolist(), val.tolist()))
        if len(rows) >= limit:
            break
    rows = rows[:limit]
    t0, c0 = time.perf_counter(), time.process_time()
    state: dict = {}
    win_end = WINDOW_MS
    results = []
    for etype, cid, ts, v in rows:
        if ts >= win_end:                         # pre-trigger (time window)
            results.append(state)
            state = {}
            win_end = (ts // WINDOW_MS + 1) * WINDOW_MS
        if etype == 0:
            state[cid] = state.get(cid, 0) + v
    results.append(state)
    return time.perf_counter() - t0, len(rows), time.process_time() - c0


VIEW = "SELECT campaign_id, sum(value) AS total FROM {stream} WHERE event_type = 0 GROUP BY campaign_id"


def stream_ddl(name: str) -> str:
    return (f"CREATE FOREIGN TABLE {name} (event_type smallint, campaign_id {KEY_TYPE}, event_time bigint, "
            f"value int) SERVER stream")


def Pipeline() -> ViewPipeline:
    """The unwindowed YSB continuous view, instantiated by the real engine."""
    return ViewPipeline(stream_ddl("ysb"), "CREATE VIEW ysb_sum AS " + VIEW.format(stream="ysb"))


def run_engine(batches, backend: str, variant: str | None, threads: int, check: dict | None):
    """Returns (seconds, events, compile_ms, variant_seen, emit seconds,
    (process CPU seconds, process CPU seconds without the emissions))."""
    from splitstream.executor.backends.llvm import jit
    from splitstream.executor.backends.llvm.backend import LLVM

    p = Pipeline()
    pipe = p.pipe
    ctx = p.ctx(backend)
    # pre-split batches at window ends (outside the timed region: it is metadata)
    work = []
    for et, camp, t, val in batches:
        w = t // WINDOW_MS
        cuts = np.flatnonzero(np.diff(w)) + 1
        bounds = [0] + cuts.tolist() + [len(t)]
        for a, b in zip(bounds[:-1], bounds[1:]):
            work.append((int(w[a]), p.to_batch(et[a:b], camp[a:b], t[a:b], val[a:b], timestamp=False)))
    compile_ms = None
    if backend == "llvm":
        # warm: build the sink and compile before timing (compile latency is reported separately)
        pipe.process(work[0][1].slice(0, 1), ctx)
        jit.drain()             # tiered: the optimised code is in place before timing
        pipe.merge()
        pipe.global_ = pipe.agg.new_table()
        sink = LLVM.sink(pipe)
        sink.max_threads = threads
        if variant == "generic":
            sink.force_variant = "generic"
            sink.allow_specialise = False
        sink.tables = []
        v = "gen" if variant == "generic" else "spec"
        sink.module.fn(v)
        sink.module.optimise_async(v)      # tiered: the code a hot pipeline runs (tier 2 comes after TIER2_ROWS)
        jit.drain()                         # ... in place before timing
        compile_ms = sink.module.compile_ms
    results = {}

    emit_s = [0.0, 0.0]          # wall, process CPU

    def emit(win):
        e0, ec = time.perf_counter(), time.process_time()
        pipe.merge()
        res = pipe.global_.result()
        results[win] = res
        pipe.global_ = pipe.agg.new_table()
        emit_s[0] += time.perf_counter() - e0
        emit_s[1] += time.process_time() - ec

    t0, c0 = time.perf_counter(), time.process_time()
    cur = work[0][0]
    for win, b in work:
        if win != cur:
            emit(cur)
            cur = win
        pipe.process(b, ctx)
    emit(cur)
    dt = time.perf_counter() - t0
    cpu = time.process_time() - c0
    seen = "-"
    if backend == "llvm":
        seen = LLVM.sink(pipe).info.variant
    if check is not None:
        for win, res in results.items():
            keys = res.cols[0].data.astype(np.int64)
            sums = res.cols[1].data.astype(np.float64)
            got = np.zeros(CAMPAIGNS)
            got[keys] = sums
            if not np.array_equal(got, check[win]):
                raise SystemExit(f"YSB result mismatch in window {win} ({backend}/{variant})")
    events = sum(len(b[0]) for b in batches)
    p.close()
    return dt, events, compile_ms, seen, emit_s[0], (cpu, cpu - emit_s[1])


TPCH_STREAM = ("CREATE FOREIGN TABLE li (l_orderkey bigint, l_quantity float8, l_extendedprice float8, "
               "l_discount float8, l_tax float8, l_returnflag_id smallint, l_linestatus_id smallint, l_shipdate int) "
               "SERVER stream")
# TPC-H-like pipelines the kernel compiles (dates as day numbers, flags as small ints):
# Q6's filter-and-sum (no key, 5 conjuncts on floats and ints) and a Q1-like
# wide aggregate (2 keys, 8 aggregates), compiled with every NULL mask read.
TPCH_VIEWS = (
    ("TPC-H Q6-like (no key, 5 conjuncts)",
     "SELECT sum(l_extendedprice) AS revenue FROM li WHERE l_shipdate >= 8766 AND l_shipdate < 9131 "
     "AND l_discount >= 0.05 AND l_discount <= 0.07 AND l_quantity < 24", False),
    ("TPC-H Q1-like (2 keys, 8 aggs, nullable)",
     "SELECT l_returnflag_id, l_linestatus_id, sum(l_quantity) AS q, sum(l_extendedprice) AS p, avg(l_discount) AS d, "
     "min(l_tax) AS mt, max(l_extendedprice) AS mp, avg(l_quantity) AS aq, count(l_orderkey) AS c, count(*) AS n "
     "FROM li WHERE l_shipdate <= 10471 GROUP BY l_returnflag_id, l_linestatus_id", True),
)


def pipeline_shapes() -> list:
    """(name, Shape) of the YSB pipeline and the TPC-H-like ones, planned by the real engine."""
    from splitstream.executor.context import SessionInfo
    from splitstream.executor.engine import Engine
    from splitstream.executor.backends.llvm.runtime import CompiledSink

    p = Pipeline()
    out = [(f"YSB (1 key {KEY_TYPE}, 1 conjunct, sum)", CompiledSink(p.pipe.ops, p.pipe.agg).plan.shape)]
    p.close()
    eng = Engine(tempfile.mkdtemp(prefix="ysbshape") + "/data", fsync=False)
    eng.open()
    s = eng.new_session(SessionInfo(settings={}))
    s.execute_sql(TPCH_STREAM)
    for k, (name, sql, nullable) in enumerate(TPCH_VIEWS):
        before = set(eng.streams.views)
        s.execute_sql(f"CREATE VIEW tpch_v{k} AS {sql}")
        cv = eng.streams.views[next(v for v in eng.streams.views if v not in before)]
        pipe = next(iter(cv.pipelines.values()))[0]
        sink = CompiledSink(pipe.ops, pipe.agg)
        if sink.plan is None:
            raise SystemExit(f"{name}: not compiled ({sink.info.reason})")
        shape = sink.plan.shape
        if nullable:
            shape = shape.with_nullable([True] * len(shape.inputs))
        out.append((name, shape))
    eng.close()
    return out


def compile_latency(reps: int = 10) -> list:
    """Fresh compiles (module cache cleared each time) per shape and variant:
    what a pipeline waits for (tier 1 when tiered), as wall time and as the
    compiling thread's CPU time (robust against a loaded machine).  Each
    compile is isolated (background work drained first); ``queued`` compiles
    the next shape right after another one, while that one's background
    work (its tier-2 recompile, as if it were hot at once, and the other
    variant) runs: a pipeline waits for at most the one background compile
    already running (foreground compiles go first).  Returns
    [(name, variant, [(wall, cpu, tier-2 cpu)], [queued wall])]."""
    from splitstream.executor.backends.llvm import jit

    shapes = pipeline_shapes()
    jit.drain()
    out = []
    for name, shape in shapes:
        for variant in ("gen", "spec"):
            runs = []
            for _ in range(reps):
                jit.clear_cache()
                jit.drain()
                w0, c0 = time.perf_counter(), time.thread_time()
                m = jit.compile_shape(shape, variant)           # what a pipeline waits for (tier 1 when tiered)
                wall, cpu = (time.perf_counter() - w0) * 1000, (time.thread_time() - c0) * 1000
                m.optimise_async(variant)                       # the background -O1 recompile (once hot)
                jit.drain()
                runs.append((wall, cpu, m.opt_ms.get(variant)))
            out.append([name, variant, runs, []])
    for _ in range(reps):
        for k, (name, shape) in enumerate(shapes):
            prev = shapes[k - 1][1]
            jit.clear_cache()
            jit.drain()
            m = jit.compile_shape(prev, "gen")
            m.optimise_async("gen")                             # worst case: that pipeline is hot at once
            jit.prefetch(m, "spec")                             # as CompiledSink.run does
            w0 = time.perf_counter()
            jit.compile_shape(shape, "gen")
            out[2 * k][3].append((time.perf_counter() - w0) * 1000)
    jit.drain()
    return out


def pct(xs, q: float) -> float:
    """Nearest-rank percentile (q in 0..1)."""
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(np.ceil(q * len(xs))) - 1))]


def print_compile_latency(lat) -> float:
    """One line per shape and variant; returns the worst median wall ms."""
    print("compile latency per pipeline (fresh compiles, module cache cleared; what a pipeline waits for: "
          "tier 1, -O0 code; the -O1 code then compiles in the background):")
    print(f"  {'pipeline':<42}{'variant':<13}{'wall med':>9}{'p90':>7}{'CPU med':>9}{'p90':>7}"
          f"{'tier-2 CPU':>12}{'queued wall med/p90':>22}")
    worst = 0.0
    for name, variant, runs, queued in lat:
        wall, cpu = [r[0] for r in runs], [r[1] for r in runs]
        opt = [r[2] for r in runs if r[2] is not None]
        worst = max(worst, pct(wall, 0.5))
        q = f"{pct(queued, 0.5):.1f}/{pct(queued, 0.9):.1f}" if queued else "-"
        print(f"  {name:<42}{'generic' if variant == 'gen' else 'specialised':<13}{pct(wall, 0.5):>9.1f}"
              f"{pct(wall, 0.9):>7.1f}{pct(cpu, 0.5):>9.1f}{pct(cpu, 0.9):>7.1f}"
              f"{(pct(opt, 0.5) if opt else float('nan')):>12.1f}{q:>22}")
    print(f"  ({len(lat[0][2])} compiles each, ms; 'queued': the generic kernel compiled right after another "
          f"pipeline's, while its background work runs)")
    cpu_med = pct([r[1] for _n, _v, runs, _q in lat for r in runs], 0.5)
    spin = [cpu_spin(cpu_med) for _ in range(20)]
    print(f"  machine load reference: a pure CPU loop of {cpu_med:.1f} ms (the median compile CPU) took "
          f"{pct(spin, 0.5):.1f} ms wall median, {pct(spin, 0.9):.1f} p90 (load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores): wall above CPU is the machine's other work, not the compiler")
    return worst


def cpu_spin(ms: float) -> float:
    """Wall ms of a loop that burns ``ms`` of this thread's CPU (load reference)."""
    c, w = time.thread_time(), time.perf_counter()
    while time.thread_time() - c < ms / 1000:
        pass
    return (time.perf_counter() - w) * 1000


def end_to_end(n: int) -> list:
    """COPY over the wire into a stream with the unwindowed YSB view, per backend (bigint times)."""
    batches = make_events(n, 1_000_000, 1, seed=9, key_dtype=np.int64 if KEY_TYPE == "bigint" else np.int32)
    want = int(sum(a.sum() for a in reference(batches).values()))

    def verify(conn, view: str) -> None:
        got = conn.execute(f"SELECT sum(total) FROM {view}").fetchone()[0]
        if int(got) != want:
            raise SystemExit(f"end-to-end YSB mismatch: {got} != {want}")

    return ysb_events.end_to_end(batches, "ms", stream_ddl, lambda st: VIEW.format(stream=st),
                                 BACKENDS_E2E, verify)


def parallel_probe(reps: int = 3) -> dict:
    """What limits 2 threads: memory bandwidth, compute, or the CPUs the machine
    gives us.  numpy's read bandwidth (``sum`` releases the GIL) with 1 and 2
    threads; the YSB dense kernel with 1 and 2 threads (own data, own table)
    on data in DRAM and on morsels that stay in cache (no bandwidth needed);
    per run the CPUs used (thread CPU time / wall).  Best of ``reps``."""
    import threading

    from splitstream.executor.backends.llvm import jit
    from splitstream.executor.backends.llvm.runtime import CompiledSink
    from splitstream.executor.backends.llvm.table import NativeTable

    p = Pipeline()
    shape = CompiledSink(p.pipe.ops, p.pipe.agg).plan.shape
    p.close()
    m = jit.compile_shape(shape, "spec")
    m.optimise_async("spec")
    jit.drain()
    kdt = np.int64 if KEY_TYPE == "bigint" else np.int32

    def data(n: int, seed: int):
        rng = np.random.default_rng(seed)
        return (rng.integers(0, CAMPAIGNS, n, dtype=kdt), rng.integers(1, 100, n, dtype=np.int32),
                rng.integers(0, 3, n).astype(np.int16))

    def threads(fn, items) -> tuple[float, float]:
        """(wall s, sum of thread CPU s) of fn(item) on one thread per item."""
        cpu = [0.0] * len(items)

        def run(k):
            c = time.thread_time()
            fn(items[k])
            cpu[k] = time.thread_time() - c
        ts = [threading.Thread(target=run, args=(k,)) for k in range(len(items))]
        w = time.perf_counter()
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return time.perf_counter() - w, sum(cpu)

    def kernel(d, times: int) -> None:
        t = NativeTable(shape)
        t.specialise([0], [CAMPAIGNS])
        base = [x.ctypes.data for x in d] + [0, 0, 0, 0, 0]     # key, value, event_type; no NULLs; event_type = 0
        for _ in range(times):
            t.run(m, base, 0, len(d[0]))

    def best(fn, items, nbytes_or_rows) -> tuple[float, float]:
        runs = [threads(fn, items) for _ in range(reps)]
        w, c = min(runs)
        return nbytes_or_rows / w, c / w

    out = {}
    big = np.ones(24_000_000)                                   # 192 MB: far beyond the caches
    for nt in (1, 2):
        out[("bw", nt)] = best(lambda a: a.sum(), np.array_split(big, nt), big.nbytes)
    del big
    dram = [data(8_000_000, 1), data(8_000_000, 2)]
    small = [data(32_768, 3), data(32_768, 4)]                   # ~330 KB each with its table: stays in L2
    for nt in (1, 2):
        out[("dram", nt)] = best(lambda d: kernel(d, 2), dram[:nt], 2 * 8_000_000 * nt)
        out[("cache", nt)] = best(lambda d: kernel(d, 500), small[:nt], 500 * 32_768 * nt)
    out["bytes_per_record"] = sum(np.dtype(x.dtype).itemsize for x in small[0])
    out["gil"] = gil_probe(lambda: kernel(dram[0], 2))
    return out


def _autogroup_note() -> str:
    """Linux CFS autogroup shares CPU time per session, not per thread."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
            on = f.read().strip() == "1"
    except OSError:
        return ""
    return ("; CFS autogroup is on, so CPU time is shared per session: with other sessions busy this process gets "
            "its session's share however many threads it runs") if on else ""


def gil_probe(work) -> float:
    """Does a kernel call hold the GIL?  Python loop iterations per second on
    this thread while ``work`` runs on another, relative to the loop alone
    (~0 if the GIL were held for the call; under a CPU share, the share)."""
    import threading

    flag = [False]

    def loop_rate(t_end: float) -> float:
        n, w = 0, time.perf_counter()
        while not flag[0] and time.perf_counter() < t_end:       # the same work per iteration in both runs
            n += 1
        return n / (time.perf_counter() - w)

    def run() -> None:
        work()
        flag[0] = True

    solo = loop_rate(time.perf_counter() + 0.05)
    th = threading.Thread(target=run)
    th.start()
    busy = loop_rate(float("inf"))
    th.join()
    return busy / solo


def print_parallel_probe(pr: dict, spec1_cpu_rate: float, used: dict, per_cpu_pipe: float) -> None:
    """The 2-thread diagnosis: measured figures, then the explanation they support."""
    bpr = pr["bytes_per_record"]
    print(f"2 threads, what limits them (YSB dense kernel; it reads {bpr} B per record: event_type, campaign_id, value):")
    for key, label, unit in (("bw", "numpy read bandwidth (sum of 192 MB)", "GB/s"),
                             ("dram", "dense kernel, data in DRAM (8M rows per thread)", "M rec/s"),
                             ("cache", "dense kernel, cache-resident morsels (32K rows per thread)", "M rec/s")):
        (r1, u1), (r2, u2) = pr[(key, 1)], pr[(key, 2)]
        print(f"  {label:<58} 1 thread {r1 / 1e9 if unit == 'GB/s' else r1 / 1e6:7.1f} {unit} ({u1:.2f} CPUs)   "
              f"2 threads {r2 / 1e9 if unit == 'GB/s' else r2 / 1e6:7.1f} {unit} ({u2:.2f} CPUs)   x{r2 / r1:.2f}")
    (bw1, bu1), (bw2, bu2) = pr[("bw", 1)], pr[("bw", 2)]
    need1 = spec1_cpu_rate * bpr
    print(f"  the pipeline at its 1-thread CPU rate ({spec1_cpu_rate / 1e6:.0f} M rec per CPU-s) reads "
          f"{need1 / 1e9:.1f} GB/s per core; numpy's sum reads {bw1 / bu1 / 1e9:.1f} GB per CPU-second on 1 thread, "
          f"{bw2 / bu2 / 1e9:.1f} per CPU-second with 2 threads ({bw2 / 1e9:.1f} GB/s on the {bu2:.2f} CPUs it got): "
          f"the kernel needs {need1 / (bw1 / bu1):.0%} of one core's read bandwidth")
    u2 = used.get(("llvm specialised (dense)", 2), 0.0)
    c1, c2 = pr[("cache", 1)], pr[("cache", 2)]
    d1, d2 = pr[("dram", 1)], pr[("dram", 2)]
    per_cpu_cache = (c2[0] / c2[1]) / (c1[0] / c1[1])        # rate per CPU-second, 2 vs 1 thread
    print(f"  GIL: a Python loop ran at {pr['gil']:.0%} of its solo speed while a kernel call ran on another thread "
          f"(~0% if the call held the GIL); the 2-thread pipeline makes one call per thread and batch (morsels are "
          f"taken in native code); per CPU-second 2 threads do {per_cpu_pipe:.2f}x the work of 1 in the pipeline, "
          f"{per_cpu_cache:.2f}x in the cache probe")
    if c2[1] < 1.5:
        why = (f"the machine gave the 2-thread runs only {c2[1]:.2f} CPUs (1 thread: {c1[1]:.2f}; pipeline run: "
               f"{u2:.2f}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores){_autogroup_note()}: other "
               f"processes hold the second core, so 2 threads cannot beat 1 here"
               + ("" if min(per_cpu_cache, per_cpu_pipe) >= 0.85 else
                  "; time-sharing that CPU, the 2 threads also lose per CPU-second (context switches, cache refills)"))
    elif per_cpu_cache < 0.75:
        why = (f"with 2 CPUs busy each does {per_cpu_cache:.2f}x the work per CPU-second even on cache-resident data: "
               f"the 2 vCPUs share a physical core (SMT) or are throttled, not a memory-bandwidth limit")
    elif d2[0] / d1[0] < 0.8 * c2[0] / c1[0] and 2 * need1 > 0.7 * bw2:     # both runs had ~2 CPUs here
        why = (f"compute scales x{c2[0] / c1[0]:.2f} on cache-resident data but only x{d2[0] / d1[0]:.2f} from DRAM: "
               f"2 threads need {2 * need1 / 1e9:.1f} GB/s of the {bw2 / 1e9:.1f} GB/s the machine reads: memory bandwidth")
    else:
        why = (f"the kernel scales x{d2[0] / d1[0]:.2f} from DRAM and x{c2[0] / c1[0]:.2f} in cache with {c2[1]:.2f} "
               f"CPUs: the pipeline's own 2-thread figure is limited by its per-batch serial work (batch split, "
               f"prepare, window emission) and by the CPUs it got ({u2:.2f})")
    print(f"  diagnosis: {why}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.ysb")
    ap.add_argument("--events", type=int, default=32_000_000)
    ap.add_argument("--batch", type=int, default=1_000_000)
    ap.add_argument("--windows", type=int, default=2, help="10 s tumbling windows the events span")
    ap.add_argument("--python-events", type=int, default=300_000)
    ap.add_argument("--reps", type=int, default=3, help="best of N runs per variant")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--e2e-events", type=int, default=2_000_000,
                    help="events COPYed over the wire per backend (0: skip the end-to-end run)")
    ap.add_argument("--key-type", choices=("bigint", "int"), default="bigint",
                    help="type of campaign_id (int: 4-byte keys, 10 instead of 14 bytes per event)")
    ap.add_argument("--flink-python", default=None,
                    help="python of a virtualenv with apache-flink (default: .venv-flink in the repo root)")
    ap.add_argument("--flink-events", type=int, default=2_000_000, help="events for the PyFlink peer (0: skip it)")
    ap.add_argument("--flink-timeout", type=float, default=900.0)
    ap.add_argument("--engine-windows-only", action="store_true",
                    help="only the TUMBLE view (windows in the engine), not the harness-triggered kernel reference")
    a = ap.parse_args(argv)
    global KEY_TYPE
    KEY_TYPE = a.key_type

    print(f"# YSB (Grizzly 7.1.2) in process: {a.events:,} events, batches of {a.batch:,}, "
          f"{CAMPAIGNS:,} campaigns (campaign_id {KEY_TYPE}), {a.windows} x 10 s tumbling windows, 33% views; {os.cpu_count()} cores; "
          f"load average {os.getloadavg()[0]:.1f}")
    t0 = time.perf_counter()
    batches = make_events(a.events, a.batch, a.windows, key_dtype=np.int64 if KEY_TYPE == "bigint" else np.int32)
    check = None if a.no_check else reference(batches)
    print(f"# generated in {time.perf_counter() - t0:.1f} s; results checked against numpy: {not a.no_check}")
    flink = None
    if a.flink_events:
        py, why = find_flink_python(a.flink_python)
        flink = ysb_windows.flink_figures(py, why, a.flink_events, a.batch, a.windows, a.flink_timeout)
    engine = ysb_windows.report(batches, check, KEY_TYPE, a.reps, a.e2e_events, BACKENDS_E2E, flink)
    if a.engine_windows_only:
        return 0
    print()
    print("kernel reference: the unwindowed view, windows triggered by the harness (batches split at window ends, "
          "each window's state emitted and cleared):")

    rows = []
    dt, n, cpu = python_tuple_at_a_time(batches, a.python_events)
    rows.append(("python tuple-at-a-time", 1, n / dt, n / dt, n / max(cpu, 1e-9), n / max(cpu, 1e-9)))
    configs = [(name, backend, variant, threads)
               for name, backend, variant in (("vector (numpy)", "vector", None),
                                              ("llvm generic (hash)", "llvm", "generic"),
                                              ("llvm specialised (dense)", "llvm", "specialised"))
               for threads in ((1,) if backend == "vector" else (1, 2))]   # numpy holds the GIL: vector is 1 thread
    best: dict = {}
    for rep in range(a.reps):          # reps interleaved: a burst of load on the machine hits every variant alike
        for cfg in configs:
            name, backend, variant, threads = cfg
            r = run_engine(batches, backend, variant, threads, check)
            dt, n, cms, seen, emit, (cpu, pcpu) = r
            old = best.get(cfg)
            best[cfg] = (min(dt, old[0]) if old else dt, n, min(dt - emit, old[2]) if old else dt - emit,
                         min(cpu, old[3]) if old else cpu, seen, min(pcpu, old[5]) if old else pcpu,
                         cpu / dt if old is None or dt < old[0] else old[6])      # CPUs used in the best run
            print(f"  .. rep {rep + 1} {name:<26} threads={threads}  {n / dt / 1e6:8.1f} M records/s wall "
                  f"({n / (dt - emit) / 1e6:.1f} M/s without the window emissions, {emit * 1000:.0f} ms; "
                  f"{n / cpu / 1e6:.0f} M/CPU-s, {n / pcpu / 1e6:.0f} without emissions); variant: {seen}", flush=True)
    for cfg in configs:
        dt, n, pdt, cpu, seen, pcpu, _used = best[cfg]
        rows.append((cfg[0], cfg[3], n / dt, n / pdt, n / cpu, n / pcpu))
    base = {r[0]: r for r in rows if r[1] == 1}
    vec = base["vector (numpy)"]
    py = base["python tuple-at-a-time"]
    print()
    print("M records/s: 'wall' includes the window emissions (merge into GroupTable + result batch);")
    print("'pipeline' excludes them; 'CPU-s' divides by process CPU time (all threads; robust against load),")
    print("'pipe CPU-s' by the process CPU time without the emissions.")
    print(f"(best of {a.reps} interleaved runs each; load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"{'variant':<28}{'threads':>8}{'wall':>9}{'pipeline':>10}{'CPU-s':>8}{'pipe CPU-s':>12}{'x vector':>10}"
          f"{'x python':>10}{'x 1 thread':>12}{'CPUs used':>11}")
    used = {(c[0], c[3]): best[c][6] for c in configs}
    for name, threads, rate, prate, crate, pcrate in rows:
        scale = f"{rate / base[name][2]:>12.2f}" if threads > 1 else f"{'':>12}"
        u = used.get((name, threads))
        print(f"{name:<28}{threads:>8}{rate / 1e6:>9.1f}{prate / 1e6:>10.1f}{crate / 1e6:>8.1f}{pcrate / 1e6:>12.1f}"
              f"{rate / vec[2]:>10.2f}{rate / py[2]:>10.1f}{scale}{'' if u is None else f'{u:>11.2f}'}")
    print("('CPUs used': process CPU time / wall time of the best run: how much of the machine the run got)")
    print()
    spec = {r[1]: r[5] for r in rows if r[0] == "llvm specialised (dense)"}
    print_parallel_probe(parallel_probe(), spec[1], used, spec[2] / spec[1])
    lat = compile_latency()
    print()
    worst = print_compile_latency(lat)
    if a.e2e_events:
        print()
        print(f"end to end: COPY (csv, {a.e2e_events:,} events in chunks of 100,000 rows) over the wire into a stream "
              f"with the YSB continuous view, splitstream --fsync off")
        e2e = end_to_end(a.e2e_events)
        v = e2e[0][1]
        for backend, rate, line in e2e:
            print(f"  {backend:<7} {rate / 1e6:6.2f} M events/s  x vector {rate / v:5.2f}   [{line}]")
    if engine.get(("pyflink", 1)):
        print_flink(rows, e2e if a.e2e_events else None, engine)
    spec2 = max(r[2] for r in rows if r[0].startswith("llvm specialised"))
    spec_pipe = max(r[3] for r in rows if r[0].startswith("llvm specialised"))
    vec = vec[2]
    print(f"targets: specialised >= 337 M records/s (Grizzly, 4 cores): {spec2 / 1e6:.0f} M wall ({spec_pipe / 1e6:.0f} M without the window emissions) -> "
          f"{'met' if spec2 >= 337e6 else 'NOT met'}; compiled >= 3x vector: {spec2 / vec:.1f}x -> "
          f"{'met' if spec2 >= 3 * vec else 'NOT met'}; compile < 20 ms: "
          f"{'met' if worst < 20 else 'NOT met'} (worst per-pipeline median wall: {worst:.1f} ms)")
    return 0


def print_flink(rows, e2e, engine: dict) -> None:
    """The kernel reference next to the PyFlink peer (run and printed by
    ysb_windows.report: the same generator, query and windows)."""
    ours = {(r[0], r[1]): r[2] for r in rows}
    spec = max(r[2] for r in rows if r[0].startswith("llvm specialised"))
    vec = ours[("vector (numpy)", 1)]
    print()
    for (name, par), rate in engine.items():
        if name != "pyflink":
            continue
        ours_e2e = "" if not e2e else f", unwindowed view end to end (CSV over COPY, best backend) x" \
            f"{max(r[1] for r in e2e) / rate:.1f}"
        print(f"PyFlink parallelism={par} ({rate / 1e6:.2f} M records/s per job): llvm specialised kernel reference "
              f"in process x{spec / rate:.0f}, vector in process x{vec / rate:.1f}{ours_e2e}")


if __name__ == "__main__":
    sys.exit(main())
