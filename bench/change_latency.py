"""Change latency (issue 17's benchmark): how long after an insert is
acknowledged its change reaches a SUBSCRIBE and a LISTEN client, at a
steady 100k events/s.  Target: p99 under 10 ms.

One writer COPYs batches of ``--batch-rows`` rows, paced to ``--rate`` rows
a second, into a stream read by ``v WITH (notify = 'chg') AS SELECT k,
count(*), max(seq) ... GROUP BY k``; every batch carries its number in
``seq``, so the subscriber knows which batch a change belongs to (the
notification for batch i is the i-th: one per applied batch).  A
subscriber process (psycopg ``cursor.stream("SUBSCRIBE v")``, the extended
protocol) and a listener process (``LISTEN chg``, ``conn.notifies()``)
stamp each arrival with the wall clock; the writer stamps each
acknowledgement (COPY's CommandComplete).  Latency = arrival - ack, in
milliseconds; it can be negative, since the change is queued before the
acknowledgement is sent.

    python -m bench.change_latency [--rate 100000] [--batch-rows 1000] [--seconds 10]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import time

import numpy as np

from .common import Servers, connect, dsn, machine_note, section, table

VIEW = ("CREATE VIEW v WITH (notify = 'chg') AS "
        "SELECT k, count(*) AS n, max(seq) AS last_seq FROM s GROUP BY k")


def _subscriber(port: int, batches: int, ready, out) -> None:
    """(batch number, arrival time) for each change, until the last batch's."""
    import psycopg

    got: list[tuple[int, float]] = []
    with psycopg.connect(dsn(port), autocommit=True) as conn:
        ready.set()
        try:
            for _ts, diff, _k, _n, last_seq in conn.cursor().stream("SUBSCRIBE v WITH (SNAPSHOT = false)"):
                if diff > 0:
                    got.append((int(last_seq), time.time()))
                    if last_seq == batches - 1:
                        conn.cancel()
        except psycopg.errors.QueryCanceled:
            pass
    out.put(("subscribe", got))


def _listener(port: int, batches: int, ready, out) -> None:
    """Arrival time of each notification (the i-th is batch i's)."""
    import psycopg

    got: list[tuple[int, float]] = []
    with psycopg.connect(dsn(port), autocommit=True) as conn:
        conn.execute("LISTEN chg")
        ready.set()
        for _n in conn.notifies():
            got.append((len(got), time.time()))
            if len(got) == batches:
                break
    out.put(("listen", got))


def _batch_csv(seq: int, rows: int, groups: int) -> bytes:
    k = (seq % groups) * np.ones(rows, np.int64)
    x = np.arange(rows) % 100
    return "".join(f"{seq},{kk},{xx}\n" for kk, xx in zip(k.tolist(), x.tolist())).encode()


def _write(port: int, batches: int, rows: int, interval: float, groups: int) -> list[float]:
    """Paced COPYs; the wall-clock time each was acknowledged."""
    payloads = [_batch_csv(i, rows, groups) for i in range(batches)]
    acks = []
    with connect(port) as conn:
        cur = conn.cursor()
        start = time.perf_counter()
        for i, data in enumerate(payloads):
            delay = start + i * interval - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            with cur.copy("COPY s FROM STDIN (FORMAT csv)") as cp:
                cp.write(data)
            acks.append(time.time())
    return acks


def _latencies(acks: list[float], got: list[tuple[int, float]]) -> np.ndarray:
    seen = {}
    for seq, t in got:
        seen.setdefault(seq, t)        # the first change that shows the batch
    return np.array([(seen[i] - a) * 1000 for i, a in enumerate(acks) if i in seen])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.change_latency")
    ap.add_argument("--rate", type=int, default=100_000, help="rows per second")
    ap.add_argument("--batch-rows", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--groups", type=int, default=100)
    a = ap.parse_args(argv)
    batches = max(1, int(a.seconds * a.rate / a.batch_rows))
    interval = a.batch_rows / a.rate
    print(f"# bench.change_latency: {a.rate:,} rows/s in batches of {a.batch_rows:,} "
          f"({batches} batches); {machine_note()}", flush=True)
    with Servers(pg=False) as s:
        with connect(s.ss_port) as conn:
            conn.execute("CREATE FOREIGN TABLE s (seq int8, k int, x int) SERVER stream")
            conn.execute(VIEW)
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        readies = [ctx.Event(), ctx.Event()]
        procs = [ctx.Process(target=f, args=(s.ss_port, batches, r, out))
                 for f, r in zip((_subscriber, _listener), readies)]
        for p in procs:
            p.start()
        for r in readies:
            r.wait(60)
        time.sleep(1.0)                    # the SUBSCRIBE is running
        t0 = time.perf_counter()
        acks = _write(s.ss_port, batches, a.batch_rows, interval, a.groups)
        spent = time.perf_counter() - t0
        results = dict(out.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(30)
    section(f"delivery latency from the insert's acknowledgement (achieved {batches * a.batch_rows / spent:,.0f} rows/s)")
    rows = []
    for name in ("subscribe", "listen"):
        lat = _latencies(acks, results[name])
        rows.append([name.upper(), f"{len(lat)}/{batches}", f"{np.percentile(lat, 50):.2f}",
                     f"{np.percentile(lat, 99):.2f}", f"{lat.max():.2f}", f"{(lat < 0).mean():.0%}"])
    table(["client", "batches seen", "p50 ms", "p99 ms", "max ms", "before ack"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
