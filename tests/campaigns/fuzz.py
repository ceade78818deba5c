"""Protocol fuzzing campaign: many mutated frontend conversations against one server.

    python -m tests.campaigns.fuzz --seed 1 --messages 100000

Starts its own server (a fresh data directory), creates the few objects the
generated SQL uses, then runs connections from :mod:`.fuzz_gen` a few at a
time.  It fails if the server dies; if a connection neither ends in an
ErrorResponse nor is closed cleanly within the timeout (a hang); if an
ErrorResponse is an internal error (XX000, a server bug) or the backend
stream is malformed; if the control client's ``SELECT 1`` (every
``--control-every`` messages) fails or times out; or if file descriptors,
threads or resident memory grow past a small slack between the warm-up
baseline and the end.  ``--replay N`` runs connection N of the seed alone.
"""
from __future__ import annotations

import argparse
import asyncio
import random

import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from tests.support.servers import SplitstreamServer
from tests.unit.test_protocol_auth import ScramClient

from . import procstat, wire
from .fuzz_gen import Generator, Plan

#: Slack allowed between the warm-up baseline and the end.
FD_SLACK = 4
THREAD_SLACK = 8
RSS_SLACK_KIB = 96 * 1024
RSS_FACTOR = 1.25


@dataclass
class Outcome:
    """How one fuzz connection went."""

    index: int
    messages: int
    ending: str                  # fatal | closed | closed_on_eof | silent | dropped | reset | hang | refused
    internal: list[str] = field(default_factory=list)
    malformed: str | None = None
    sqlstates: Counter[str] = field(default_factory=Counter)


@dataclass
class Report:
    """The whole campaign's figures and findings."""

    seed: int
    messages: int = 0
    connections: int = 0
    duration: float = 0.0
    endings: Counter[str] = field(default_factory=Counter)
    sqlstates: Counter[str] = field(default_factory=Counter)
    control_round_trips: int = 0
    control_max_latency: float = 0.0
    baseline: procstat.ProcStat | None = None
    peak_threads: int = 0
    peak_rss_kib: int = 0
    end: procstat.ProcStat | None = None
    problems: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    silent: list[int] = field(default_factory=list)     # closed without an error before we left (first few)

    def failures(self) -> list[str]:
        """Everything that makes the campaign fail, as readable lines."""
        out = list(self.problems)
        if self.baseline is not None and self.end is not None:
            b, e = self.baseline, self.end
            if e.fds > b.fds + FD_SLACK:
                out.append(f"file descriptors grew: {b.fds} -> {e.fds}")
            if e.threads > b.threads + THREAD_SLACK:
                out.append(f"threads grew: {b.threads} -> {e.threads}")
            if e.rss_kib > b.rss_kib * RSS_FACTOR + RSS_SLACK_KIB:
                out.append(f"memory grew: {b.rss_kib // 1024} MiB -> {e.rss_kib // 1024} MiB")
        out += [f"server log: {line}" for line in self.log_errors]
        return out

    def summary(self) -> str:
        lines = [
            f"seed {self.seed}: {self.messages} messages on {self.connections} connections in {self.duration:.1f}s",
            f"endings: {dict(self.endings)}" + (f" (silent e.g. {self.silent[:5]})" if self.silent else ""),
            f"sqlstates: {dict(self.sqlstates.most_common(12))}",
            f"control SELECT 1: {self.control_round_trips} round trips, max {self.control_max_latency * 1000:.0f} ms",
            f"server: baseline {self.baseline}, end {self.end}, peak threads {self.peak_threads}, "
            f"peak rss {self.peak_rss_kib / 1024:.1f}MiB",
        ]
        fails = self.failures()
        lines.append("PASS" if not fails else "FAIL:\n  " + "\n  ".join(fails[:40]))
        return "\n".join(lines)


def plan_for(seed: int, index: int, tls: bool = False) -> Plan:
    """Connection ``index``'s plan under ``seed``: independent of scheduling.
    With TLS on, every other connection starts with an SSLRequest."""
    plan = Generator(random.Random(f"{seed}:{index}")).plan()
    if tls and not plan.prelude and index % 2 == 0:
        plan.prelude.append(("ssl", wire.ssl_request()))
    return plan


# ---------------------------------------------------------------- one connection

class _Conn:
    """A raw client socket whose backend bytes are parsed as they arrive."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.log = wire.BackendLog()
        self.eof = False
        self.changed = asyncio.Event()
        self.pump: asyncio.Task[None] | None = None

    def start_pump(self) -> None:
        self.pump = asyncio.get_running_loop().create_task(self._pump())

    async def _pump(self) -> None:
        try:
            while True:
                data = await self.reader.read(65536)
                if not data:
                    break
                self.log.feed(data)
                self.changed.set()
        except (ConnectionError, OSError):
            pass
        self.eof = True
        self.changed.set()

    async def wait(self, cond: str, timeout: float, seen: int = 0) -> bool:
        """Wait until ``cond`` holds ('eof'; 'ready'; 'auth': ReadyForQuery or
        authentication request number ``seen``) or the server is done; True if it holds."""
        deadline = time.monotonic() + timeout
        log = self.log
        while True:
            ready = log.ready > 0 or cond == "auth" and len(log.auth) > seen
            if self.eof or (cond != "eof" and (ready or log.fatal)):
                return self.eof if cond == "eof" else ready
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except TimeoutError:
                pass

    async def send(self, data: bytes) -> bool:
        """Write and drain; False if the server already closed."""
        try:
            self.writer.write(data)
            await self.writer.drain()
            return True
        except (ConnectionError, OSError):
            return False

    def half_close(self) -> None:
        try:
            if self.writer.can_write_eof():
                self.writer.write_eof()
        except (ConnectionError, OSError):
            pass

    def reset(self) -> None:
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        self.writer.transport.abort()

    async def close(self) -> None:
        if self.pump is not None:
            self.pump.cancel()
        self.writer.transport.abort()


async def _prelude(conn: _Conn, plan: Plan, timeout: float, tls: ssl.SSLContext | None) -> bool:
    """SSL/GSS requests (one byte back each; with TLS on, the handshake, or
    garbage instead) or a final startup-phase packet; True to go on."""
    for kind, pkt in plan.prelude:
        if not await conn.send(pkt):
            return False
        if kind == "final":
            return False
        try:
            answer = await asyncio.wait_for(conn.reader.read(1), timeout)
        except TimeoutError:
            raise _Hang("no answer to SSLRequest/GSSENCRequest") from None
        is_ssl = int.from_bytes(pkt[4:8], "big") == wire.SSL_REQUEST
        if answer != (b"S" if is_ssl and tls is not None else b"N"):
            conn.log.malformed = f"answer {answer!r} to an SSL/GSS request (TLS {'on' if tls else 'off'})"
            return False
        if answer == b"S":
            assert tls is not None
            if plan.tls_garbage:
                await conn.send(plan.tls_garbage)
                return False
            try:
                await asyncio.wait_for(conn.writer.start_tls(tls), timeout)
            except TimeoutError:
                raise _Hang("TLS handshake") from None
            except (ssl.SSLError, ConnectionError, OSError) as e:
                conn.log.malformed = f"TLS handshake failed: {e!r}"
                return False
    return True


class _Hang(Exception):
    pass


async def _send_body(conn: _Conn, plan: Plan, rng: random.Random) -> bool:
    data = b"".join(plan.body)
    if plan.chunking == "whole":
        return await conn.send(data)
    pos = 0
    while pos < len(data):
        n = 1 if plan.chunking == "bytewise" and pos < 4096 else rng.randrange(1, 2048)
        if not await conn.send(data[pos:pos + n]):
            return False
        pos += n
        await asyncio.sleep(0)      # drain() does not yield while the buffer is low: let the reader read
    return True


async def _cancel(host: str, port: int, key: tuple[int, int]) -> None:
    _, w = await asyncio.open_connection(host, port)
    w.write(wire.cancel_request(*key))
    await w.drain()
    w.close()


async def _finish(conn: _Conn, plan: Plan, timeout: float, sent_ok: bool) -> str:
    """Leave as the plan says and say how the server ended the connection."""
    if conn.eof or not sent_ok:
        await conn.wait("eof", timeout)
        return "fatal" if conn.log.fatal else "silent" if conn.eof else "hang"
    if plan.ending == "reset":
        conn.reset()
        return "reset"
    if plan.ending == "terminate" and not plan.broken:
        # leave a COPY cleanly first: PostgreSQL too takes Terminate during COPY IN as an error
        trailer = wire.copy_fail(b"fuzz ends") + wire.sync() + wire.terminate()
        if await conn.send(trailer) and await conn.wait("eof", timeout):
            return "fatal" if conn.log.fatal else "closed"
    if not conn.writer.can_write_eof():    # TLS has no half-close: leave at once
        conn.reset()
        return "reset"
    conn.half_close()
    if await conn.wait("eof", timeout):
        return "fatal" if conn.log.fatal else "closed_on_eof"
    return "hang"


class _Auth:
    """Answers the server's authentication requests, spoiling one as the plan says."""

    def __init__(self, plan: Plan, password: str | None) -> None:
        self.plan = plan
        secret = password or ""
        self.scram = ScramClient("not " + secret if plan.auth_fuzz == "wrong" else secret)
        self.spoiler = Generator(random.Random(plan.auth_seed))

    def answer(self, request: bytes) -> bytes | None:
        """The message answering ``request`` (an Authentication body), None if none is due."""
        code = int.from_bytes(request[:4], "big", signed=True)
        fuzz = self.plan.auth_fuzz
        if code == 10:
            if fuzz == "skip":
                return wire.query(b"SELECT 1")             # a query instead of the SASL response
            frame = wire.sasl_initial(b"SCRAM-SHA-256", self.scram.first())
            return self.spoiler.mutate(frame)[0] if fuzz == "first" else frame
        if code == 11:
            try:
                frame = wire.password(self.scram.final(request[4:]))
            except (AssertionError, KeyError, ValueError):   # our spoiled first message changed the nonce
                frame = wire.password(b"c=biws,r=spoiled,p=AAAA")
            return self.spoiler.mutate(frame)[0] if fuzz == "final" else frame
        if code in (3, 5):
            return wire.password(b"wrong\0")
        return None                                       # 12 (SASL final): wait for AuthenticationOk


async def _login(conn: _Conn, plan: Plan, password: str | None, timeout: float) -> bool:
    """Startup and authentication; True once ReadyForQuery came.  After a
    spoiled message the server may rightly wait for bytes that never come:
    then this gives up soon and the caller's EOF must make the server close."""
    assert plan.startup is not None
    if not await conn.send(plan.startup):
        return False
    auth = _Auth(plan, password)
    seen, wait = 0, timeout
    while True:
        if not await conn.wait("auth", wait, seen):
            if wait < timeout or conn.eof or conn.log.fatal:
                return False
            raise _Hang("no answer during startup/authentication")
        if conn.log.ready or conn.log.fatal or conn.eof:
            return conn.log.ready > 0
        frame = auth.answer(conn.log.auth[seen])
        seen += 1
        if plan.auth_fuzz in ("first", "final", "skip"):
            wait = min(timeout, 1.0)
        if frame is not None and not await conn.send(frame):
            return False


async def run_plan(host: str, port: int, index: int, plan: Plan, timeout: float,
                   password: str | None = None, tls: ssl.SSLContext | None = None) -> Outcome:
    """Run one plan on a fresh connection."""
    rng = random.Random(index)
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    conn = _Conn(reader, writer)
    try:
        try:
            go_on = await _prelude(conn, plan, timeout, tls)
            conn.start_pump()
            if go_on and plan.startup is not None:
                if await _login(conn, plan, password, timeout):
                    sent = await _send_body(conn, plan, rng)
                    if plan.cancel and conn.log.key is not None:
                        await _cancel(host, port, conn.log.key)
                    ending = await _finish(conn, plan, timeout, sent)
                else:
                    ending = await _finish(conn, Plan(ending="eof"), timeout, True)
                    ending = "refused" if ending in ("fatal", "closed_on_eof") else ending
            else:
                ending = await _finish(conn, Plan(ending="eof"), timeout, True)
        except _Hang as e:
            conn.log.malformed = conn.log.malformed or f"hang: {e}"
            ending = "hang"
    finally:
        await conn.close()
    if ending == "silent" and plan.startup is not None and not any(f[:1] == b"X" for f in plan.body):
        ending = "dropped"      # the server closed without an error, and the client never said goodbye
    out = Outcome(index, plan.count, ending, malformed=conn.log.malformed)
    for sev, state, msg in conn.log.errors:
        out.sqlstates[state] += 1
        if state == "XX000":
            out.internal.append(msg)
    return out


# ---------------------------------------------------------------- the campaign

SCHEMA = [
    "CREATE TABLE IF NOT EXISTS fz_t (a int, b text)",
    "CREATE FOREIGN TABLE IF NOT EXISTS fz_s (a int, b text) SERVER stream",
    "CREATE VIEW fz_v AS SELECT a, count(*) AS n FROM fz_s GROUP BY a",
]


async def setup_schema(dsn: str) -> None:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True, connect_timeout=10) as c:
        for sql in SCHEMA:
            try:
                await c.execute(sql)
            except psycopg.errors.DuplicateTable:
                pass


class Campaign:
    """Drives the connections, the control client and the process samples."""

    def __init__(self, server: SplitstreamServer, seed: int, messages: int, *, concurrency: int = 8,
                 control_every: int = 500, timeout: float = 15.0) -> None:
        self.server = server   # with a password, every connection logs in by SCRAM (and some spoil it)
        self.seed, self.target = seed, messages
        self.concurrency, self.control_every, self.timeout = concurrency, control_every, timeout
        self.report = Report(seed)
        self.tls = client_tls() if server.tls_cert is not None else None
        self.next_index = 0
        self.stop = False

    @property
    def pid(self) -> int:
        assert self.server.pid is not None
        return self.server.pid

    async def _worker(self, limit: int) -> None:
        rep = self.report
        while not self.stop and rep.messages < limit:
            index = self.next_index
            self.next_index += 1
            plan = plan_for(self.seed, index, self.tls is not None)
            rep.messages += plan.count
            try:
                out = await run_plan(self.server.host, self.server.port, index, plan, self.timeout,
                                     self.server.password, self.tls)
            except (OSError, TimeoutError) as e:
                self._problem(f"connection {index}: could not connect: {e!r}")
                continue
            self._record(out)

    def _record(self, out: Outcome) -> None:
        rep = self.report
        rep.connections += 1
        rep.endings[out.ending] += 1
        rep.sqlstates.update(out.sqlstates)
        if out.ending == "silent" and len(rep.silent) < 10:
            rep.silent.append(out.index)
        if out.ending == "dropped":
            self._problem(f"connection {out.index}: closed by the server without an ErrorResponse")
        if out.ending == "hang":
            self._problem(f"connection {out.index}: hang ({out.malformed or 'no close after EOF'})")
        elif out.malformed:
            self._problem(f"connection {out.index}: {out.malformed}")
        for msg in out.internal:
            self._problem(f"connection {out.index}: internal error XX000: {msg}")

    def _problem(self, text: str) -> None:
        if len(self.report.problems) < 200:
            self.report.problems.append(text)

    async def _control(self, conn: psycopg.AsyncConnection) -> None:
        """SELECT 1 every ``control_every`` messages, each within the timeout."""
        rep = self.report
        due = self.control_every
        # one round trip per control_every messages, however fast they went:
        # behind, it catches up (also once the workers are done)
        while not self.stop or rep.messages >= due:
            if rep.messages < due:
                await asyncio.sleep(0.05)
                continue
            due += self.control_every
            t0 = time.monotonic()
            try:
                async with asyncio.timeout(self.timeout):
                    cur = await conn.execute("SELECT 1")
                    row = await cur.fetchone()
                if row != (1,):
                    self._problem(f"control client got {row!r}")
            except (TimeoutError, psycopg.Error) as e:
                self._problem(f"control client failed after {rep.messages} messages: {e!r}")
                self.stop = True
                return
            rep.control_round_trips += 1
            rep.control_max_latency = max(rep.control_max_latency, time.monotonic() - t0)
            self._sample()

    def _sample(self) -> None:
        if not procstat.alive(self.pid):
            self._problem(f"server died after {self.report.messages} messages")
            self.stop = True
            return
        s = procstat.sample(self.pid)
        self.report.peak_threads = max(self.report.peak_threads, s.threads)
        self.report.peak_rss_kib = max(self.report.peak_rss_kib, s.rss_kib)

    async def _phase(self, limit: int, control: psycopg.AsyncConnection) -> None:
        ctl = asyncio.get_running_loop().create_task(self._control(control))
        await asyncio.gather(*(self._worker(limit) for _ in range(self.concurrency)))
        self.stop, keep = True, self.stop
        await ctl
        self.stop = keep

    async def _settled(self) -> procstat.ProcStat:
        """A sample once closing sockets are gone (fds stop falling), at most a few seconds."""
        prev = procstat.sample(self.pid)
        for _ in range(20):
            await asyncio.sleep(0.25)
            cur = procstat.sample(self.pid)
            if cur.fds >= prev.fds and cur.threads >= prev.threads:
                return cur
            prev = cur
        return prev

    async def run(self) -> Report:
        rep = self.report
        await setup_schema(self.server.dsn)
        t0 = time.monotonic()
        async with await psycopg.AsyncConnection.connect(self.server.dsn, autocommit=True,
                                                         connect_timeout=10) as control:
            warm = max(200, min(self.target // 10, 2000))
            await self._phase(warm, control)
            if not self.stop and procstat.alive(self.pid):
                rep.baseline = await self._settled()
                await self._phase(self.target, control)
            if procstat.alive(self.pid):
                rep.end = await self._settled()
            else:
                self._problem("server died")
        rep.duration = time.monotonic() - t0
        rep.log_errors = log_errors(self.server.log_text())
        return rep


def log_errors(text: str, limit: int = 20) -> list[str]:
    """The distinct exception lines of tracebacks in the server log (each a bug to look at)."""
    found: list[str] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("Traceback (most recent call last)"):
            continue
        last = next((ln for ln in lines[i + 1:] if ln[:1].strip()), "?")
        if last not in found:
            found.append(last)
    return found[:limit]


def client_tls() -> ssl.SSLContext:
    """A client context that takes the campaign's self-signed certificate."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def make_certificate(folder: Path) -> tuple[Path, Path]:
    """A throwaway self-signed certificate and key (openssl must be installed)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("--tls needs the openssl command")
    cert, key = folder / "server.crt", folder / "server.key"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return cert, key


def start_server(data_root: Path, password: str | None = None, tls: bool = False) -> SplitstreamServer:
    cert, key = make_certificate(data_root) if tls else (None, None)
    server = SplitstreamServer(data_root / "data", password=password, tls_cert=cert, tls_key=key,
                               extra_args=["--fsync", "off"])
    return server.start(timeout=60)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.campaigns.fuzz", description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--control-every", type=int, default=500)
    p.add_argument("--timeout", type=float, default=15.0)
    p.add_argument("--password", default=None, help="run the server with this password: logins use SCRAM")
    p.add_argument("--tls", action="store_true", help="run the server with TLS: SSLRequests get 'S' and a "
                   "handshake (or garbage instead)")
    p.add_argument("--replay", type=int, default=None, help="run only connection N of the seed, and print it")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ss-fuzz-") as tmp:
        server = start_server(Path(tmp), args.password, args.tls)
        try:
            if args.replay is not None:
                return asyncio.run(_replay(server, args.seed, args.replay, args.timeout,
                                           client_tls() if args.tls else None))
            camp = Campaign(server, args.seed, args.messages, concurrency=args.concurrency,
                            control_every=args.control_every, timeout=args.timeout)
            rep = asyncio.run(camp.run())
        finally:
            server.stop()
    print(rep.summary())
    return 1 if rep.failures() else 0


async def _replay(server: SplitstreamServer, seed: int, index: int, timeout: float,
                  tls: ssl.SSLContext | None) -> int:
    await setup_schema(server.dsn)
    plan = plan_for(seed, index, tls is not None)
    for kind, pkt in plan.prelude:
        print("prelude", kind, pkt[:200])
    print("startup", plan.startup)
    for frame in plan.body:
        print("body", frame[:200], f"({len(frame)} bytes)" if len(frame) > 200 else "")
    print("ending", plan.ending, "broken", plan.broken, "chunking", plan.chunking, "auth", plan.auth_fuzz)
    out = await run_plan(server.host, server.port, index, plan, timeout, server.password, tls)
    print(out)
    errs = log_errors(server.log_text())
    print(server.log_text()[-6000:] if errs else "no tracebacks in the server log")
    return 1 if out.ending == "hang" or out.internal or out.malformed or errs else 0


if __name__ == "__main__":
    sys.exit(main())
