"""Load campaign: many concurrent connections inserting and reading at once.

    python -m tests.campaigns.load --seed 1 --connections 500 --seconds 60

Starts its own server with ``--max-connections`` the number of clients plus
HEADROOM, connects them all (asyncpg, one event loop), fills the headroom
and checks that one more is refused with PostgreSQL's 53300 "sorry, too
many clients already", then each client runs a seeded mix for the given
time: INSERT into a stream with a continuous view, INSERT into a table (also
in explicit transactions), reads of its own group in the view and of its own
rows in the table, which must show exactly what it had acknowledged (read
your writes); now and then it reconnects, or opens a side connection that
inserts in a transaction and vanishes (its rows must never appear).  At the end the view and the table must
count every acknowledged insert, no unexpected error may have occurred, and
the server's descriptors, threads and memory must be back within bounds.
"""
from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from tests.support.servers import SplitstreamServer

from . import procstat

SCHEMA = [
    "CREATE FOREIGN TABLE ld_s (cid int, v int) SERVER stream",
    "CREATE VIEW ld_v AS SELECT cid, count(*) AS n, sum(v) AS total FROM ld_s GROUP BY cid",
    "CREATE TABLE ld_t (cid int, v int)",
]
#: Seconds one statement may take before the campaign calls it a hang.
OP_TIMEOUT = 60.0
#: Connections allowed beyond the clients: reconnects and vanishing side
#: connections use them (a closed session leaves the count a moment later).
HEADROOM = 32
SIDE_CONNECTIONS = 8
FD_SLACK = 8
RSS_SLACK_KIB = 160 * 1024
#: The worker pool keeps its threads (one per concurrent engine call, up to
#: worker_threads + max_connections): threads are bounded by that, not by the baseline.
POOL_EXTRA = 32


@dataclass
class Client:
    """What one connection acknowledged and saw."""

    cid: int
    stream_rows: int = 0
    stream_sum: int = 0
    table_rows: int = 0
    table_sum: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    slowest: dict[str, float] = field(default_factory=dict)


@dataclass
class LoadReport:
    seed: int
    connections: int
    seconds: float
    connected: int = 0
    ops: Counter[str] = field(default_factory=Counter)
    slowest: dict[str, float] = field(default_factory=dict)     # op -> longest seconds
    errors: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    baseline: procstat.ProcStat | None = None
    peak: procstat.ProcStat | None = None
    end: procstat.ProcStat | None = None
    max_threads: int = 0
    duration: float = 0.0

    def failures(self) -> list[str]:
        out = list(self.problems)
        if self.connected < self.connections:
            out.append(f"only {self.connected} of {self.connections} clients connected")
        out += [f"{n} x {text}" for text, n in self.errors.most_common(10)]
        b, e = self.baseline, self.end
        if b is not None and e is not None:
            if e.fds > b.fds + FD_SLACK:
                out.append(f"file descriptors not released: {b.fds} -> {e.fds}")
            if e.threads > self.max_threads:
                out.append(f"threads beyond the pool's bound: {e.threads} > {self.max_threads}")
            if e.rss_kib > b.rss_kib + RSS_SLACK_KIB + (self.peak.rss_kib - b.rss_kib if self.peak else 0) // 2:
                out.append(f"memory not released: baseline {b.rss_kib // 1024} MiB, "
                           f"peak {self.peak.rss_kib // 1024 if self.peak else '?'} MiB, end {e.rss_kib // 1024} MiB")
        return out

    def summary(self) -> str:
        total = sum(self.ops.values())
        lines = [
            f"seed {self.seed}: {self.connected}/{self.connections} connections, {total} statements "
            f"in {self.seconds:.0f}s of load ({self.duration:.1f}s in all), {total / max(self.seconds, 1e-9):.0f}/s",
            f"statements: {dict(self.ops)}",
            "slowest: " + ", ".join(f"{op} {t * 1000:.0f}ms" for op, t in sorted(self.slowest.items())),
            f"server: baseline {self.baseline}, peak {self.peak}, end {self.end} (thread bound {self.max_threads})",
        ]
        fails = self.failures()
        lines.append("PASS" if not fails else "FAIL:\n  " + "\n  ".join(fails[:40]))
        return "\n".join(lines)


class Load:
    """Connects the clients, runs the mix, checks the totals."""

    def __init__(self, server: SplitstreamServer, seed: int, connections: int, seconds: float) -> None:
        self.server = server
        self.report = LoadReport(seed, connections, seconds)
        self.rng = random.Random(seed)
        self.side = asyncio.Semaphore(SIDE_CONNECTIONS)

    @property
    def pid(self) -> int:
        assert self.server.pid is not None
        return self.server.pid

    def _error(self, where: str, e: BaseException) -> None:
        state = getattr(e, "sqlstate", None)
        self.report.errors[f"{where}: {type(e).__name__} {state or ''} {e}"[:200]] += 1

    async def _connect(self, sem: asyncio.Semaphore) -> asyncpg.Connection | None:
        async with sem:
            try:
                return await asyncpg.connect(self.server.url, timeout=OP_TIMEOUT)
            except (OSError, asyncpg.PostgresError, TimeoutError) as e:
                self._error("connect", e)
                return None

    async def _refused_beyond_limit(self, burst: int = 8) -> None:
        """A burst of HEADROOM + ``burst`` logins at once: exactly HEADROOM get
        in, the others get 53300 with PostgreSQL's wording."""
        async def one() -> asyncpg.Connection | BaseException:
            try:
                return await asyncpg.connect(self.server.url, timeout=OP_TIMEOUT)
            except (OSError, asyncpg.PostgresError, TimeoutError) as e:
                return e
        got = await asyncio.gather(*(one() for _ in range(HEADROOM + burst)))
        extras = [g for g in got if isinstance(g, asyncpg.Connection)]
        refused = [g for g in got if isinstance(g, asyncpg.TooManyConnectionsError)]
        others = [g for g in got if isinstance(g, BaseException) and g not in refused]
        if len(extras) != HEADROOM or len(refused) != burst:
            self.report.problems.append(f"a burst of {HEADROOM + burst} logins with {HEADROOM} slots free: "
                                        f"{len(extras)} accepted, {len(refused)} refused with 53300")
        if any(str(e) != "sorry, too many clients already" for e in refused):
            self.report.problems.append(f"53300 with the wrong message: {refused[0]}")
        for e in others[:3]:
            self.report.problems.append(f"connection beyond the limit: {type(e).__name__} {e}")
        await asyncio.gather(*(x.close() for x in extras), return_exceptions=True)
        await asyncio.sleep(0.5)        # the server counts a session until its cleanup ran

    async def _client(self, conn: asyncpg.Connection, c: Client, seed: int, deadline: float) -> None:
        rng = random.Random(seed)
        ops = ["stream_insert", "table_insert", "view_read", "table_read", "stream_batch", "table_txn",
               "reconnect", "vanish"]
        weights = [33, 22, 20, 15, 5, 3, 1, 1]
        while time.monotonic() < deadline:
            op = rng.choices(ops, weights)[0]
            t0 = time.monotonic()
            try:
                async with asyncio.timeout(OP_TIMEOUT):
                    if op == "reconnect":
                        async with self.side:
                            await conn.close(timeout=OP_TIMEOUT)
                            conn = await asyncpg.connect(self.server.url, timeout=OP_TIMEOUT)
                    elif op == "vanish":
                        async with self.side:
                            await self._vanish(c, rng)
                    else:
                        await self._op(conn, c, op, rng)
            except TimeoutError:
                self.report.problems.append(f"client {c.cid}: {op} took over {OP_TIMEOUT}s")
                break
            except (asyncpg.PostgresError, OSError, asyncpg.InterfaceError) as e:
                self._error(op, e)
                if isinstance(e, (OSError, asyncpg.InterfaceError)):
                    break
            c.ops[op] += 1
            c.slowest[op] = max(c.slowest.get(op, 0.0), time.monotonic() - t0)
        try:
            await conn.close(timeout=OP_TIMEOUT)
        except (asyncpg.InterfaceError, OSError, TimeoutError):
            conn.terminate()

    async def _vanish(self, c: Client, rng: random.Random) -> None:
        """A side connection inserts into the client's group in a transaction,
        then drops the socket: the rollback must leave no trace of it."""
        side = await asyncpg.connect(self.server.url, timeout=OP_TIMEOUT)
        await side.execute("BEGIN")
        await side.execute("INSERT INTO ld_t VALUES ($1, $2)", c.cid, rng.randrange(1, 1000))
        side.terminate()

    async def _op(self, conn: asyncpg.Connection, c: Client, op: str, rng: random.Random) -> None:
        if op == "stream_insert":
            v = rng.randrange(1, 1000)
            await conn.execute("INSERT INTO ld_s VALUES ($1, $2)", c.cid, v)
            c.stream_rows += 1
            c.stream_sum += v
        elif op == "stream_batch":
            vs = [rng.randrange(1, 1000) for _ in range(rng.randrange(2, 20))]
            await conn.executemany("INSERT INTO ld_s VALUES ($1, $2)", [(c.cid, v) for v in vs])
            c.stream_rows += len(vs)
            c.stream_sum += sum(vs)
        elif op == "table_txn":
            vs = [rng.randrange(1, 1000) for _ in range(2)]
            async with conn.transaction():
                for v in vs:
                    await conn.execute("INSERT INTO ld_t VALUES ($1, $2)", c.cid, v)
            c.table_rows += len(vs)
            c.table_sum += sum(vs)
        elif op == "table_insert":
            v = rng.randrange(1, 1000)
            await conn.execute("INSERT INTO ld_t VALUES ($1, $2)", c.cid, v)
            c.table_rows += 1
            c.table_sum += v
        elif op == "view_read":
            row = await conn.fetchrow("SELECT n, total FROM ld_v WHERE cid = $1", c.cid)
            got = (row["n"], row["total"]) if row is not None else (0, 0)
            if got != (c.stream_rows, c.stream_sum):
                self.report.problems.append(f"client {c.cid} read {got} from the view after acknowledging "
                                            f"{(c.stream_rows, c.stream_sum)}")
        else:
            row = await conn.fetchrow("SELECT count(*) AS n, coalesce(sum(v), 0) AS total FROM ld_t WHERE cid = $1",
                                      c.cid)
            got = (row["n"], row["total"])
            if got != (c.table_rows, c.table_sum):
                self.report.problems.append(f"client {c.cid} read {got} from the table after acknowledging "
                                            f"{(c.table_rows, c.table_sum)}")

    async def _check_totals(self, clients: list[Client]) -> None:
        conn = await asyncpg.connect(self.server.url, timeout=OP_TIMEOUT)
        try:
            view = {r["cid"]: (r["n"], r["total"]) for r in await conn.fetch("SELECT cid, n, total FROM ld_v")}
            table = {r["cid"]: (r["n"], r["total"]) for r in await conn.fetch(
                "SELECT cid, count(*) AS n, sum(v) AS total FROM ld_t GROUP BY cid")}
        finally:
            await conn.close()
        want_view = {c.cid: (c.stream_rows, c.stream_sum) for c in clients if c.stream_rows}
        want_table = {c.cid: (c.table_rows, c.table_sum) for c in clients if c.table_rows}
        for name, got, want in (("view", view, want_view), ("table", table, want_table)):
            wrong = [cid for cid in set(got) | set(want) if got.get(cid) != want.get(cid)]
            if wrong:
                cid = min(wrong)
                self.report.problems.append(f"{name}: {len(wrong)} groups differ from the acknowledged inserts, "
                                            f"e.g. cid {cid}: {got.get(cid)} != {want.get(cid)}")

    async def run(self) -> LoadReport:
        rep = self.report
        t0 = time.monotonic()
        setup = await asyncpg.connect(self.server.url, timeout=OP_TIMEOUT)
        for sql in SCHEMA:
            await setup.execute(sql)
        await setup.close()
        await asyncio.sleep(0.5)
        rep.baseline = procstat.sample(self.pid)
        sem = asyncio.Semaphore(64)
        conns = await asyncio.gather(*(self._connect(sem) for _ in range(rep.connections)))
        live = [(c, Client(i)) for i, c in enumerate(conns) if c is not None]
        rep.connected = len(live)
        if rep.connected == rep.connections:
            await self._refused_beyond_limit()
        deadline = time.monotonic() + rep.seconds
        sampler = asyncio.get_running_loop().create_task(self._sample_until(deadline))
        await asyncio.gather(*(self._client(conn, c, self.rng.randrange(1 << 30), deadline) for conn, c in live))
        await sampler
        for _, c in live:
            rep.ops.update(c.ops)
            for op, t in c.slowest.items():
                rep.slowest[op] = max(rep.slowest.get(op, 0.0), t)
        if not procstat.alive(self.pid):
            rep.problems.append("server died")
            return rep
        await self._check_totals([c for _, c in live])
        rep.end = await self._settled()
        rep.duration = time.monotonic() - t0
        return rep

    async def _sample_until(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if not procstat.alive(self.pid):
                return
            s = procstat.sample(self.pid)
            if self.report.peak is None or s.rss_kib > self.report.peak.rss_kib:
                self.report.peak = s
            await asyncio.sleep(1.0)

    async def _settled(self) -> procstat.ProcStat:
        """A sample once the closed connections' sockets are gone (a few seconds at most)."""
        assert self.report.baseline is not None
        s = procstat.sample(self.pid)
        for _ in range(40):
            if s.fds <= self.report.baseline.fds + FD_SLACK:
                break
            await asyncio.sleep(0.25)
            s = procstat.sample(self.pid)
        return s


def start_server(data_root: Path, connections: int) -> SplitstreamServer:
    server = SplitstreamServer(data_root / "data",
                               extra_args=["--fsync", "off", "--max-connections", str(connections + HEADROOM)])
    return server.start(timeout=60)


def run(server: SplitstreamServer, seed: int, connections: int, seconds: float) -> LoadReport:
    load = Load(server, seed, connections, seconds)
    rep = asyncio.run(load.run())
    # every session's one engine call at a time, plus the pool's own size (server/listener.py)
    rep.max_threads = (rep.baseline.threads if rep.baseline else 0) + POOL_EXTRA + connections + HEADROOM
    return rep


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.campaigns.load", description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--connections", type=int, default=500)
    p.add_argument("--seconds", type=float, default=60.0)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ss-load-") as tmp:
        server = start_server(Path(tmp), args.connections)
        try:
            rep = run(server, args.seed, args.connections, args.seconds)
        finally:
            server.stop()
            tail = server.log_text()
    print(rep.summary())
    if "Traceback" in tail:
        print("server log has tracebacks:\n" + tail[-4000:])
        return 1
    return 1 if rep.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
