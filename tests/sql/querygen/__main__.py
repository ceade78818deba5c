"""``python -m tests.sql.querygen --seeds 1-20 [--count 200] [--ss DSN] [--pg DSN]``

Runs many seeds and prints every disagreement. Without ``--ss``/``--pg`` it
starts its own splitstream server and PostgreSQL 15 (stopped at the end).
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

import psycopg

from tests.support.servers import Postgres15, SplitstreamServer

from .known import tally, unexplained
from .run import load, run_seed

PREFIX = "qg_"


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--ss")
    ap.add_argument("--pg")
    ap.add_argument("--shape", help="only report disagreements of this shape")
    ap.add_argument("--all", action="store_true", help="report the known differences too")
    args = ap.parse_args()
    stop = []
    if not args.pg:
        pg = Postgres15().start()
        stop.append(pg.stop)
        args.pg = pg.dsn
    if not args.ss:
        ss = SplitstreamServer(Path(tempfile.mkdtemp(prefix="querygen-")) / "data").start()
        stop.append(ss.stop)
        args.ss = ss.dsn
    try:
        ssc = psycopg.connect(args.ss, autocommit=True)
        pgc = psycopg.connect(args.pg, autocommit=True)
        load([ssc, pgc], PREFIX)
        total, found = 0, []
        t0 = time.monotonic()
        for seed in _seeds(args.seeds):
            n, d = run_seed(ssc, pgc, seed, args.count, PREFIX)
            total += n
            found += [x for x in d if not args.shape or x.query.shape == args.shape]
            print(f"seed {seed}: {n} queries, {len(d)} disagreements", file=sys.stderr, flush=True)
        shown = found if args.all else unexplained(found)
        for d in shown:
            print(d.report(), "\n")
        print(f"known: {tally(found)}; unexplained: {len(unexplained(found))}")
        kinds = collections.Counter(p.split(" ")[0] + " " + p.split(" ")[1] for d in found for p in d.problems[:1])
        print(f"{total} queries in {time.monotonic() - t0:.0f}s, {len(found)} disagreements: {dict(kinds)}")
    finally:
        for f in stop:
            f()
    return 0


if __name__ == "__main__":
    sys.exit(main())
