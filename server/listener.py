"""The listening server: accepts sockets, owns the engine, the worker pool,
the cancel registry and graceful shutdown.

Engine calls run on a shared ThreadPoolExecutor so a slow query never
blocks the event loop; idle connections cost only a protocol object and a
suspended task.
"""
from __future__ import annotations

import asyncio
import errno
import gc
import hmac
import itertools
import logging
import os
import random
import secrets
import signal
import socket
import threading
from splitstream.executor.api import Engine, EngineFactory
from splitstream.protocol import auth
from splitstream.protocol.copy import preload as preload_copy_decoder
from splitstream.protocol.errors import PgError

from .completions import Completions
from .config import ServerConfig
from .connection import Connection
from .tls import make_server_context
from .workers import WorkerPool

log = logging.getLogger("splitstream.server")


class Server:
    """One splitstream server instance bound to one engine."""

    def __init__(self, config: ServerConfig, engine: Engine) -> None:
        self.config = config
        self.engine = engine
        # Room for every session's one in-flight engine call on top of the
        # pool's own size: sessions waiting for the writer lock each hold a
        # thread, and the lock holder's COMMIT must still find one.
        self.pool = WorkerPool(config.worker_threads + config.max_connections)
        tls = config.tls_files
        self.ssl_context = make_server_context(*tls) if tls is not None else None
        if config.password is not None and config.password_verifier is None:
            config.password_verifier = auth.make_scram_verifier(config.password)
        self.connections: set[Connection] = set()
        self.sessions: dict[int, tuple[Connection, int]] = {}
        #: Connections holding one of max_connections: from the check before
        #: authentication to their end, so logins in flight count too.
        self._admitted: set[Connection] = set()
        # Backend "pids" are fake but unique; start somewhere random so a
        # cancel key from a previous server run never matches by accident.
        self._pids = itertools.count(random.randint(1000, 30000))
        self._servers: list[asyncio.AbstractServer] = []
        self._stopped: asyncio.Event | None = None
        self.sockets: list[tuple[str, int]] = []
        self.unix_socket: str | None = None
        #: engine threads' answers to the event loop (lean inserts), made in start()
        self.completions: Completions | None = None

    # ------------------------------------------------------------ registry

    def track(self, conn: Connection) -> None:
        self.connections.add(conn)

    def untrack(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self._admitted.discard(conn)
        entry = self.sessions.get(conn.pid)
        if entry is not None and entry[0] is conn:
            del self.sessions[conn.pid]

    def session_count(self) -> int:
        """Sessions and logins in progress that hold a connection slot."""
        return len(self._admitted)

    def admit(self, conn: Connection) -> bool:
        """Take a connection slot for ``conn`` unless all max_connections are held.

        Checked and taken in one step on the loop thread: checking here and
        counting the session only after authentication's awaits let a burst
        of logins all pass (the load campaign's connection storm).
        """
        if len(self._admitted) >= self.config.max_connections:
            return False
        self._admitted.add(conn)
        return True

    def sessions_of(self, user: str) -> int:
        """Open sessions of ``user`` (a role's CONNECTION LIMIT counts them)."""
        return sum(1 for conn, _ in self.sessions.values() if conn.info is not None and conn.info.user == user)

    def register(self, conn: Connection) -> tuple[int, int]:
        """Give an authenticated connection its (pid, secret key) for CancelRequest."""
        pid = next(self._pids) & 0x7FFFFFFF
        key = secrets.randbits(31)
        self.sessions[pid] = (conn, key)
        return pid, key

    def cancel_request(self, pid: int, key: int) -> None:
        entry = self.sessions.get(pid)
        if entry is None:
            log.info("cancel request for unknown pid %d", pid)
            return
        conn, secret = entry
        if not hmac.compare_digest(secret.to_bytes(4, "big", signed=True), key.to_bytes(4, "big", signed=True)):
            log.info("cancel request for pid %d with a wrong key", pid)
            return
        conn.cancel()

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.completions = Completions(loop)
        hosts = self.config.hosts
        for host in hosts:
            srv = await loop.create_server(lambda: Connection(self), host, self.config.port,
                                           reuse_address=True, backlog=1024)
            self._servers.append(srv)
            for s in srv.sockets or ():
                name = s.getsockname()
                self.sockets.append((name[0], name[1]))
        if self.config.unix_socket_dir is not None:
            await self._listen_unix(loop, self.config.unix_socket_dir)
        self._stopped = asyncio.Event()

    async def _listen_unix(self, loop: asyncio.AbstractEventLoop, directory: str) -> None:
        """The Unix-domain socket DIR/.s.PGSQL.PORT (PostgreSQL's name, so psql
        -h DIR finds it).  A socket file no server answers on is left over
        from a crash and replaced; one that answers is another server's."""
        path = os.path.join(directory, f".s.PGSQL.{self.port}")
        if os.path.exists(path):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(path)
                raise OSError(errno.EADDRINUSE, f"another server listens on {path}")
            except (ConnectionRefusedError, FileNotFoundError):
                os.unlink(path)
            finally:
                probe.close()
        srv = await loop.create_unix_server(lambda: Connection(self), path, backlog=1024)
        os.chmod(path, 0o777)      # unix_socket_permissions' default: who may connect is pg_hba's business
        self._servers.append(srv)
        self.unix_socket = path

    @property
    def port(self) -> int:
        return self.sockets[0][1] if self.sockets else self.config.port

    async def shutdown(self) -> None:
        """Stop accepting, end sessions (57P01), give busy ones a grace period, then cancel them."""
        for srv in self._servers:
            srv.close()
        conns = list(self.connections)
        for c in conns:
            c.shutdown()
        tasks = [c.task for c in conns if c.task is not None and not c.task.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.config.shutdown_grace)
            if pending:
                for c in conns:
                    c.cancel()
                _, pending = await asyncio.wait(pending, timeout=2.0)
                for c in conns:
                    if c.transport is not None:
                        c.transport.abort()
                if pending:
                    await asyncio.wait(pending, timeout=1.0)
        for srv in self._servers:
            try:
                await asyncio.wait_for(srv.wait_closed(), 1.0)
            except (asyncio.TimeoutError, Exception):
                pass
        if self.unix_socket is not None:
            try:
                os.unlink(self.unix_socket)
            except OSError:
                pass
        if self._stopped is not None:
            self._stopped.set()

    async def close_engine(self) -> None:
        try:
            await self.pool.run(self.engine.close)
        finally:
            self.pool.shutdown(wait=False)

    async def wait_stopped(self) -> None:
        assert self._stopped is not None
        await self._stopped.wait()


#: allocations between young-generation collections (CPython's default is 700)
GC_YOUNG = 50_000


def tune_gc() -> None:
    """Once the engine is open: what was loaded (modules, the catalog, the
    views' state) moves to the permanent generation, and young collections
    run 70 times less often.  The ingest path makes a few objects per batch,
    never one per row, but at the default threshold the cyclic collector
    still took ~5% of a COPY's CPU, most of it re-scanning startup objects."""
    gc.freeze()
    gc.set_threshold(GC_YOUNG, 20, 20)


async def run_server(config: ServerConfig, engine_factory: EngineFactory) -> int:
    """Open the engine, listen until SIGTERM/SIGINT, shut down cleanly; returns the exit code."""
    loop = asyncio.get_running_loop()
    try:
        engine = engine_factory(config.data_dir, fsync=config.fsync)
        # Opening replays the WAL; do it before listening so "port accepts" means "ready".
        await loop.run_in_executor(None, engine.open)
    except PgError as e:      # refused with a reason (e.g. another on-disk format version): no traceback
        log.error("could not open the data directory %s: %s%s", config.data_dir, e.message,
                  f" (hint: {e.hint})" if e.hint else "")
        return 1
    except Exception:
        log.exception("could not open the data directory %s", config.data_dir)
        return 1
    tune_gc()
    server = Server(config, engine)
    threading.Thread(target=preload_copy_decoder, name="preload", daemon=True).start()
    try:
        await server.start()
    except OSError as e:
        log.error("could not listen on %s:%d: %s", config.host, config.port, e.strerror or e)
        await loop.run_in_executor(None, engine.close)
        return 1
    where = ", ".join([f"{h}:{p}" for h, p in server.sockets] + ([server.unix_socket] if server.unix_socket else []))
    log.info("splitstream listening on %s (data dir %s, auth %s, tls %s, pid %d)",
             where, os.path.abspath(config.data_dir),
             "scram-sha-256" if config.password is not None else "trust",
             "on" if server.ssl_context else "off", os.getpid())
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-main thread
            pass
    await stop.wait()
    log.info("shutting down")
    await server.shutdown()
    await server.close_engine()
    log.info("shutdown complete")
    return 0
