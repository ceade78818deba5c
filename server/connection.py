"""One client connection: startup, TLS upgrade, authentication, then the query loop.

Implemented as an ``asyncio.BufferedProtocol`` plus one task, rather than streams,
because we need to see the peer vanish *while* a query runs on a worker
thread (``connection_lost`` sets the session's cancel event so the query
stops) and we want explicit control over read/write back-pressure.

Threading rule: the FrontendReader and the transport are only touched on
the event-loop thread; the :class:`ProtocolSession` only on one worker
thread at a time (the task awaits each step before doing anything else).
"""
from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import struct
import threading
from typing import TYPE_CHECKING, Any, Callable, cast

from splitstream.executor.api import LeanOutcome, LoginRole, SessionInfo
from splitstream.protocol import auth
from splitstream.protocol import cycles, messages
from splitstream.protocol.errors import (
    ADMIN_SHUTDOWN,
    INTERNAL_ERROR,
    INVALID_AUTHORIZATION_SPECIFICATION,
    INVALID_CATALOG_NAME,
    INVALID_PASSWORD,
    PROTOCOL_VIOLATION,
    TOO_MANY_CONNECTIONS,
    PgError,
)

from . import hba, session_settings
from .session import CycleSig, ProtocolSession

if TYPE_CHECKING:
    from .listener import Server

log = logging.getLogger("splitstream.connection")

#: Pause reading from a client whose unprocessed input exceeds this.
READ_PAUSE_BYTES = 16 * 1024 * 1024
WRITE_HIGH_WATER = 1024 * 1024
#: Seconds a connection ended by a FATAL error keeps draining the client's
#: input after sending FIN (see ``_linger``).
LINGER_SECONDS = 1.0


def _fatal(sqlstate: str, message: str) -> PgError:
    return PgError(sqlstate, message, severity="FATAL")


def negotiate_protocol_version(minor: int, unknown: list[str]) -> bytes:
    """NegotiateProtocolVersion: we speak 3.0 and no ``_pq_`` extensions."""
    body = struct.pack("!ii", minor, len(unknown)) + b"".join(u.encode() + b"\0" for u in unknown)
    return b"v" + struct.pack("!i", len(body) + 4) + body


#: Engine threads write lean answers themselves (``_lean_callback``) only with at
#: least this many connections. Measured on 2 cores (pgbench, prepared one-row
#: INSERT into a stream with three views): at 128 clients direct answers gave
#: 20.1k tps against 14.2k through the loop, but at 8 and 32 clients 2.8k and
#: 3.2k against 4.2k and 8.7k, at three times the CPU per statement (cause not
#: found yet).  The environment variable lets tests take the direct path.
DIRECT_ANSWERS_FROM = int(os.environ.get("SPLITSTREAM_DIRECT_ANSWERS_FROM", "64"))


class Connection(asyncio.BufferedProtocol):
    """State machine for one client socket."""

    def __init__(self, server: "Server") -> None:
        self.server = server
        self.config = server.config
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.reader = messages.FrontendReader(messages.AUTH_MESSAGE_LIMIT)   # raised once authenticated
        self.pid = 0
        self.secret = 0
        self.info: SessionInfo | None = None
        self.session: ProtocolSession | None = None
        self.peer = "?"
        self.peer_host = ""
        self.closed = False              # the socket is gone
        self.eof = False                 # the client half-closed: answer what it sent, then close
        self.terminating = False         # server shutdown asked us to leave
        self.tls = False
        self.task: asyncio.Task[None] | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._drain_waiter: asyncio.Future[None] | None = None
        self._write_paused = False
        self._read_paused = False
        self._frame_error: PgError | None = None
        self._serving = False            # authenticated: the query loop runs
        self._fatal_sent = False         # a FATAL ends this connection: linger before closing
        self._draining = False           # lingering: what still arrives is dropped
        self._replay_raw: bytes | None = None    # the raw bytes of a replayable cycle (see _replay_again)
        self._replay_sig: CycleSig | None = None
        self._lean_busy = False          # a cycle is on the engine's lean path (see _try_lean)
        #: a dup of the socket's fd, for answers written from engine threads (see _lean_callback);
        #: -1 under TLS or once closed.  Closed under ``_direct_lock``, so a write never hits a reused fd
        self._direct_fd = -1
        self._direct_lock = threading.Lock()
        self._lean_direct = False        # the running lean cycle's answer may be written directly

    # ------------------------------------------------------------ asyncio.BufferedProtocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a stream transport (uvloop's are not asyncio.Transport subclasses, so no isinstance)
        self.transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            except (OSError, AttributeError):
                pass
            try:
                self._direct_fd = os.dup(sock.fileno())
            except (OSError, AttributeError, ValueError):
                self._direct_fd = -1
        peer = transport.get_extra_info("peername")     # '' on the Unix-domain socket
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "[local]"
        self.peer_host = str(peer[0]) if isinstance(peer, tuple) else ""
        self.transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        self.task = self.loop.create_task(self._main())
        self.server.track(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        """The room the next socket read fills: the reader's own buffer, so
        the bytes are not copied out of the loop's and then into ours."""
        return self.reader.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        """A read put ``nbytes`` into the reader.  A read that is the whole
        of a request (nothing was buffered before it) may be a replayed or
        lean cycle, served from its bytes without framing; else, or if it
        is not, its messages are pulled as usual."""
        reader = self.reader
        fresh = not reader.buffered() and not reader.mid_message()
        reader.buffer_updated(nbytes)
        if self._draining:
            reader.discard()
            return
        chunk = None
        if fresh and nbytes <= cycles.MAX_CYCLE_BYTES:
            chunk = reader.unread()
            reader.discard()
            if chunk == self._replay_raw and self._replay_again() or self._lean_chunk(chunk):
                return
            reader.restore(nbytes)
        if not self._read_paused and reader.buffered() > READ_PAUSE_BYTES and self.transport:
            self.transport.pause_reading()
            self._read_paused = True
        w = self._waiter
        if w is None or w.done() or self._lean_busy:
            return  # the task is busy (or a lean insert runs); the new messages are pulled after it
        if self._serving and not self._write_paused and self._step_inline(chunk):
            if self.session is not None:
                self.session.pending_shape = None
            return
        if self.session is not None:
            self.session.pending_shape = None
        w.set_result(None)

    def _lean_chunk(self, data: bytes) -> bool:
        """The chunk is exactly one Bind/[Describe]/Execute/Sync cycle of a
        lean INSERT this session has served before (``protocol.cycles``):
        hand it to the lean path with no framing, no message objects and no
        queue (``ProtocolSession.lean_raw``).  Else (False) it is read as
        usual; a cycle shape the ordinary lean path then takes is
        remembered (``pending_shape``) so the next one comes this way."""
        sess, w = self.session, self._waiter
        if sess is None or w is None or w.done() or not self._serving or self._lean_busy \
                or self._write_paused or self.terminating or self._frame_error is not None:
            return False
        cycle = cycles.split_cycle(data)
        if cycle is None:
            return False
        self._enter_lean()
        if sess.lean_raw(data, cycle, self._lean_callback):
            return True
        self._lean_busy = False
        sess.pending_shape = cycle[0]
        return False

    def _step_inline(self, chunk: bytes | None) -> bool:
        """Answer a fast cached read right here in the protocol callback.

        A prepared read's Bind/Describe/Execute/Sync cycle costs far less than
        waking the connection task would, so when the task is idle and every
        queued message is such a step, run it now.  Returns False (wake the
        task) for anything else: partial input leaves nothing queued and
        returns True, since the task would only go back to sleep.
        """
        sess = self.session
        if sess is None:
            return False
        msgs = self._pull()
        if msgs:
            sess.push(msgs)
        if self._frame_error is not None or self.terminating:
            return False
        if not sess.has_work():
            return True
        if sess.copy_inline() and not sess.has_work():
            return True
        if self._try_lean(sess):
            return True
        if not sess.inline_ok():
            return False
        sig = sess.cycle_signature()
        self.write(self._run_inline(sess, sig))
        if chunk is not None and sig is not None and sess.has_cycle(sig):
            # ``chunk`` held exactly this cycle: the same bytes again can be replayed unparsed
            self._replay_raw, self._replay_sig = chunk, sig
        return not sess.terminated and not sess.has_work()

    def _try_lean(self, sess: ProtocolSession) -> bool:
        """Hand a queued autocommitted INSERT cycle to the engine's lean path
        (``ProtocolSession.lean_cycle``): no worker hop; the answer is written
        by :meth:`_lean_callback` when its group is durable and applied.  Until
        then this connection processes nothing else (its next messages wait)."""
        if self._lean_busy:
            return False
        self._enter_lean()
        if not sess.lean_cycle(self._lean_callback):
            self._lean_busy = False
            return False
        return True

    def _enter_lean(self) -> None:
        """Busy with a lean cycle, set before the hand-over: the answer may
        come (on an engine thread) before the hand-over returns.  Nothing
        else is written until the answer: with nothing queued in the
        transport now, the answer may go straight to the socket."""
        self._lean_busy = True
        self._lean_direct = self._direct_fd >= 0 and not self.tls and self.transport is not None \
            and self.transport.get_write_buffer_size() == 0 and len(self.server.connections) >= DIRECT_ANSWERS_FROM

    def _lean_callback(self, outcome: LeanOutcome) -> None:
        """The engine's answer (called on an engine thread).

        The answer is built and written here, with ``os.write`` on our dup of
        the socket (the GIL is released for the send, so the event loop goes
        on decoding other clients' inserts meanwhile: measured, the send was
        ~40% of the loop thread's GIL time at 128 clients).  The loop is
        woken only if it has something to do for this connection (input that
        came meanwhile, a retry, EOF, shutdown, a send the socket did not
        take whole); else the next request finds the connection idle.
        Without a direct fd (TLS, or output queued in the transport at
        submit) the loop writes the answer (:meth:`_lean_done`)."""
        sess = self.session
        if not self._lean_direct or sess is None:
            self._post(self._lean_done, outcome)
            return
        try:
            out = sess.lean_finish(outcome)   # the loop leaves this session alone while _lean_busy
            rest = self._write_direct(out)
        except Exception:               # a bug: end the connection rather than leave it waiting for ever
            log.exception("%s: writing a lean answer failed", self.peer)
            self._post(self._lean_failed, None)
            return
        if rest:                          # the loop writes it, and only then serves the next request
            self._post(self._lean_resume, rest)
            return
        self._lean_busy = False           # first: the loop's checks below read it after us
        if not out or sess.has_work() or self.reader.buffered() or self.closed or self.eof \
                or self.terminating or sess.terminated:
            self._post(self._lean_resume, b"")

    def _lean_failed(self, _: Any) -> None:
        """The lean answer could not be built (a server bug, logged): FATAL
        internal error, and the connection ends (loop thread)."""
        self.send_fatal(PgError(INTERNAL_ERROR, "internal error", hint="See the server log for details."))
        if self.transport is not None:
            self.transport.close()

    def _write_direct(self, data: bytes) -> bytes:
        """Send ``data`` on the dup'd fd (any thread); returns what the socket
        did not take (the loop writes it).  A dead peer drops it, as the
        transport would; connection_lost follows on the loop."""
        view = memoryview(data)
        with self._direct_lock:
            fd = self._direct_fd
            while view and fd >= 0 and not self.closed:
                try:
                    view = view[os.write(fd, view):]
                except BlockingIOError:
                    break
                except OSError:
                    return b""
        return bytes(view) if view and not self.closed else b""

    def _close_direct(self) -> None:
        with self._direct_lock:
            fd, self._direct_fd = self._direct_fd, -1
        if fd >= 0:
            os.close(fd)

    def _post(self, fn: Callable[[Any], None], arg: Any) -> None:
        """Run ``fn(arg)`` on the event loop (from an engine thread)."""
        completions = self.server.completions
        try:
            if completions is not None:
                completions.post(fn, arg)
            else:
                self.loop.call_soon_threadsafe(fn, arg)
        except RuntimeError:        # the loop is closed: the server is gone
            pass

    def _lean_done(self, outcome: LeanOutcome) -> None:
        """Write the lean cycle's answer on the loop, then go on."""
        self._lean_busy = False
        sess = self.session
        if sess is None:
            return
        self.write(sess.lean_finish(outcome))
        self._lean_resume(b"")

    def _lean_resume(self, rest: bytes) -> None:
        """After a lean answer (loop thread): write what the socket did not
        take, then go on with what the client sent meanwhile: inline if it
        can be, else by waking the task."""
        if rest:                    # _lean_callback left the connection busy until it is written
            self._lean_busy = False
            self.write(rest)
        sess, w = self.session, self._waiter
        if sess is None or self._lean_busy or w is None or w.done():
            return                  # (buffer_updated already took the next request)
        if self.closed or self.eof or self.terminating or self._write_paused or sess.terminated:
            w.set_result(None)
            return
        if not sess.has_work() and self.reader.buffered() <= cycles.MAX_CYCLE_BYTES:
            # the client's next cycle came while the answer was being sent (a
            # client answered at once is quicker than our thread's return)
            if self._lean_chunk(self.reader.unread()):
                self.reader.discard()
                return
        inline = self._step_inline(None)
        sess.pending_shape = None
        if not inline:
            w.set_result(None)

    def _replay_again(self) -> bool:
        """The client sent byte for byte the request it sent last (a polling
        read cycle, pgbench's SELECT), and nothing else is buffered: answer
        from the cycle cache without parsing it, if the engine vouches the
        result is unchanged."""
        w, sess, sig = self._waiter, self.session, self._replay_sig
        if w is None or w.done() or self._write_paused or self.terminating or self.closed or self._lean_busy \
                or self.reader.buffered() or sess is None or sig is None:
            return False
        out = sess.replay_unparsed(sig)
        if out is None:
            self._replay_raw = None
            return False
        self.write(out)
        return True

    @staticmethod
    def _run_inline(sess: ProtocolSession, sig: CycleSig | None) -> bytes:
        """One inline step; a repeated read cycle (``sig``, from
        ``cycle_signature``) is replayed when unchanged."""
        if sig is None:
            return sess.step()
        out = sess.replay_cycle(sig)
        return out if out is not None else sess.step_cycle(sig)

    def eof_received(self) -> bool:
        """The client sent FIN: like PostgreSQL, which reads to EOF, answer every
        message that arrived before it, then close (``_serve``/``_next_startup``).
        Closing at once would drop a pipelined ``INSERT ...; Terminate``."""
        self.eof = True
        self._wake()
        return not self.tls  # keep our side open for the answers; TLS has no half-close (and warns)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._close_direct()
        if self.info is not None:
            self.info.cancel_event.set()  # stop a running query for a vanished client
        self._wake()
        self._release_drain()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._release_drain()

    # ------------------------------------------------------------ small helpers

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _release_drain(self) -> None:
        w = self._drain_waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _wait_data(self) -> None:
        if self._read_paused and self.transport is not None and not self.closed:
            self._read_paused = False
            self.transport.resume_reading()
        self._waiter = self.loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def _drain(self) -> None:
        while self._write_paused and not self.closed:
            self._drain_waiter = self.loop.create_future()
            try:
                await self._drain_waiter
            finally:
                self._drain_waiter = None

    def write(self, data: bytes) -> None:
        if data and not self.closed and self.transport is not None:
            self.transport.write(data)

    def send_fatal(self, err: PgError) -> None:
        err.severity = "FATAL"
        self._fatal_sent = True
        self.write(messages.error_response(err))

    def shutdown(self) -> None:
        """Server is stopping: idle sessions get 57P01 now, busy ones after their step."""
        self.terminating = True
        self._wake()

    def cancel(self) -> None:
        if self.info is not None:
            self.info.cancel_event.set()

    def _notified(self, pid: int, channel: str, payload: str) -> None:
        """The engine's notify sink (any thread): queue the NotificationResponse
        and let the event loop write it if the session idles meanwhile."""
        sess = self.session
        if sess is None or self.closed:
            return
        sess.queue_notification(pid, channel, payload)
        self.loop.call_soon_threadsafe(self._flush_notifications)

    def _flush_notifications(self) -> None:
        """Write queued notifications now if the task waits for the client
        (no step running) and the session is idle outside a transaction
        block; otherwise the next ReadyForQuery carries them."""
        sess, w = self.session, self._waiter
        if sess is None or w is None or w.done() or self.closed or self._lean_busy or not sess.idle():
            return
        self.write(sess.take_notifications())

    # ------------------------------------------------------------ lifecycle

    async def _main(self) -> None:
        try:
            try:
                async with asyncio.timeout(self.config.auth_timeout):
                    ok = await self._startup()
            except TimeoutError:
                log.info("%s: startup/authentication timed out", self.peer)
                ok = False
            if ok:
                await self._serve()
        except Exception:
            log.exception("%s: connection failed", self.peer)
        finally:
            await self._cleanup()

    async def _cleanup(self) -> None:
        self.server.untrack(self)
        self._close_direct()          # before the transport closes: our dup would keep the socket open
        if self.session is not None:
            sess, self.session = self.session, None
            try:
                await self.server.pool.run(sess.close)
            except Exception:
                log.exception("%s: session close failed", self.peer)
        if self._fatal_sent and not (self.closed or self.eof or self.terminating or self.tls):
            await self._linger()
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    async def _linger(self) -> None:
        """Send FIN after the FATAL error and drop the client's input until it
        closes too, for LINGER_SECONDS at most.  Closing a socket with unread
        input makes the kernel answer with a reset, and a reset makes the
        client's kernel discard what it has not read yet: a client still
        sending (a pipeline, a COPY) would lose the error that explains why.
        """
        transport = self.transport
        if transport is None or transport.is_closing() or not transport.can_write_eof():
            return
        self._draining = True
        self.reader = messages.FrontendReader()      # drop what was buffered
        try:
            transport.write_eof()
        except (OSError, RuntimeError):
            return
        if self._read_paused:
            self._read_paused = False
            transport.resume_reading()
        try:
            async with asyncio.timeout(LINGER_SECONDS):
                while not (self.closed or self.eof):
                    await self._wait_data()
        except TimeoutError:
            pass

    async def _next_startup(self) -> messages.StartupPacket | messages.Message | None:
        """Next startup-phase packet (or auth message); None when the client left."""
        while True:
            msg = self.reader.next()
            if msg is not None:
                return msg
            if self.closed or self.terminating or self.eof:
                return None
            await self._wait_data()

    # ------------------------------------------------------------ startup + auth

    async def _startup(self) -> bool:
        while True:
            try:
                msg = await self._next_startup()
            except PgError as e:
                log.info("%s: bad startup packet: %s", self.peer, e.message)
                self.send_fatal(e)
                return False
            if msg is None:
                return False
            if isinstance(msg, (messages.SSLRequest, messages.GSSENCRequest)):
                if self.reader.buffered():
                    self.send_fatal(PgError(PROTOCOL_VIOLATION, "received unencrypted data after SSL request"))
                    return False
                ctx = self.server.ssl_context
                if isinstance(msg, messages.SSLRequest) and ctx is not None and not self.tls \
                        and self.transport is not None and self.peer_host:     # no TLS on the Unix socket
                    self.write(b"S")
                    try:
                        new = await self.loop.start_tls(self.transport, self, ctx, server_side=True,
                                                        ssl_handshake_timeout=30.0)
                    except (OSError, asyncio.TimeoutError, ConnectionError) as e:
                        log.info("%s: TLS handshake failed: %s", self.peer, e)
                        return False
                    except Exception as e:  # ssl.SSLError subclasses OSError; be safe anyway
                        log.info("%s: TLS handshake failed: %s", self.peer, e)
                        return False
                    if new is None:
                        return False
                    self.transport = new
                    self.tls = True
                else:
                    self.write(b"N")
                continue
            if isinstance(msg, messages.CancelRequest):
                self.server.cancel_request(msg.pid, msg.key)
                return False
            if isinstance(msg, messages.StartupMessage):
                self.reader.startup_phase = False
                return await self._accept(msg)
            self.send_fatal(PgError(PROTOCOL_VIOLATION, "unexpected startup packet"))
            return False

    async def _accept(self, msg: messages.StartupMessage) -> bool:
        prm = msg.params
        out: list[bytes] = []
        minor = msg.version & 0xFFFF
        unknown = [k for k in prm if k.startswith("_pq_.")]
        if minor > 0 or unknown:
            out.append(negotiate_protocol_version(0, unknown))
        user = prm.get("user", "")
        if not user:
            self.write(b"".join(out))
            self.send_fatal(PgError(INVALID_AUTHORIZATION_SPECIFICATION, "no PostgreSQL user name specified in startup packet"))
            return False
        database = prm.get("database") or user
        if not self.server.admit(self):
            self.write(b"".join(out))
            self.send_fatal(PgError(TOO_MANY_CONNECTIONS, "sorry, too many clients already"))
            return False
        if out:
            self.write(b"".join(out))
        engine = self.server.engine
        try:
            superuser, database = await self._authenticate(user, database)
            settings = session_settings.startup_settings(prm, user, superuser)
        except PgError as e:
            log.info("%s: connection refused for user %r: %s", self.peer, user, e.message)
            self.send_fatal(e)
            return False
        if self.closed:
            return False
        self.pid, self.secret = self.server.register(self)
        # trust mode (no password): every name is the superuser, as the brief says
        login_role = "" if self.config.password is not None or self.config.hba is not None else "postgres"
        self.info = SessionInfo(settings=settings, user=user, database=database, pid=self.pid, login_role=login_role,
                                client_settings=frozenset(session_settings.client_given(prm)),
                                notify_sink=self._notified)
        try:
            es = await self.server.pool.run(engine.new_session, self.info)
        except PgError as e:
            self.send_fatal(e)
            return False
        self.session = ProtocolSession(es, self.info)
        self.reader.max_message = messages.MAX_MESSAGE
        self.reader.bind_runs = True     # pipelined Bind/Execute runs are read as one (protocol/bind_runs.py)
        parts = [messages.auth_ok()]
        parts += [messages.parameter_status(k, v) for k, v in session_settings.reported(settings)]
        parts.append(messages.backend_key_data(self.pid, self.secret))
        parts.append(messages.ready_for_query("I"))
        self.write(b"".join(parts))
        log.debug("%s: session %d for user %r database %r", self.peer, self.pid, user, database)
        return True

    async def _authenticate(self, user: str, database: str) -> tuple[bool, str]:
        """Run the configured auth method; returns (superuser, database). Raises FATAL PgErrors."""
        engine = self.server.engine
        pool = self.server.pool
        if self.config.password is None and self.config.hba is None:
            # trust: every name maps onto the superuser and (if unknown) the default database
            exists = await pool.run(engine.database_exists, database)
            return True, database if exists else "postgres"
        method = await self._hba_method(user, database)
        role = await pool.run(engine.lookup_role, user)
        if method == "trust":
            if role is None:
                raise _fatal(INVALID_AUTHORIZATION_SPECIFICATION, f'role "{user}" does not exist')
        else:
            await self._check_password(method, role, user)
        if role is not None and not role.login:
            raise _fatal(INVALID_AUTHORIZATION_SPECIFICATION, f'role "{user}" is not permitted to log in')
        limit = getattr(role, "connlimit", -1)
        if role is not None and not role.superuser and 0 <= limit <= self.server.sessions_of(user):
            raise _fatal(TOO_MANY_CONNECTIONS, f'too many connections for role "{user}"')
        if not await pool.run(engine.database_exists, database):
            raise _fatal(INVALID_CATALOG_NAME, f'database "{database}" does not exist')
        await pool.run(engine.check_connect, user, database)
        return role.superuser if role is not None else True, database

    async def _hba_method(self, user: str, database: str) -> str:
        """The --hba file's method for this connection ("password" without one:
        SCRAM, or md5 for an md5-stored password)."""
        rules = self.config.hba
        if rules is None:
            return "password"
        groups = await self.server.pool.run(self.server.engine.role_memberships, user) \
            if hba.needs_membership(rules) else frozenset({user})
        method = hba.method_for(rules, self.tls, database, user, self.peer_host, lambda _u: groups)
        where = f'host "{self.peer_host or "[local]"}", user "{user}", database "{database}", ' \
                f'{"SSL encryption" if self.tls else "no encryption"}'
        if method is None:
            raise _fatal(INVALID_AUTHORIZATION_SPECIFICATION, f"no pg_hba.conf entry for {where}")
        if method == "reject":
            raise _fatal(INVALID_AUTHORIZATION_SPECIFICATION, f"pg_hba.conf rejects connection for {where}")
        return method

    async def _check_password(self, method: str, role: LoginRole | None, user: str) -> None:
        stored: str | None
        if user == "postgres" and self.config.password is not None:
            stored = self.config.password_verifier or self.config.password
        else:
            stored = role.password if role is not None else None
        if stored and auth.is_md5_hash(stored) and method != "scram-sha-256":
            salt = secrets.token_bytes(4)
            self.write(messages.auth_md5(salt))
            body = await self._password_message()
            if not auth.check_md5_response(stored, user, salt, body):
                raise _fatal(INVALID_PASSWORD, f'password authentication failed for user "{user}"')
        else:
            # an md5 hash cannot answer SCRAM: the exchange then fails as for a wrong password
            usable = stored if stored and not auth.is_md5_hash(stored) else None
            await self._scram(usable if (role is not None or user == "postgres") else None, user)

    async def _password_message(self) -> bytes:
        msg = await self._next_startup()
        if msg is None:
            raise _fatal(PROTOCOL_VIOLATION, "client disconnected during authentication")
        if not isinstance(msg, messages.Message) or msg.kind != "p":
            kind = ord(msg.kind) if isinstance(msg, messages.Message) else 0
            raise _fatal(PROTOCOL_VIOLATION, f"expected password response, got message type {kind}")
        return msg.body

    async def _scram(self, stored: str | None, user: str) -> None:
        exchange = auth.ScramExchange(stored, user)
        self.write(messages.auth_sasl([auth.SCRAM_MECHANISM]))
        body = await self._password_message()
        r = messages.BodyReader(body)
        try:
            mech = r.cstring()
            n = r.int32()
            first = r.bytes_(n) if n >= 0 else b""
        except PgError:
            raise _fatal(PROTOCOL_VIOLATION, "malformed SASLInitialResponse message") from None
        if mech != auth.SCRAM_MECHANISM:
            raise _fatal(PROTOCOL_VIOLATION, "client selected an invalid SASL authentication mechanism")
        try:
            self.write(messages.auth_sasl_continue(exchange.handle_client_first(first)))
            final = await self._password_message()
            self.write(messages.auth_sasl_final(exchange.handle_client_final(final)))
        except PgError as e:
            e.severity = "FATAL"
            raise

    # ------------------------------------------------------------ query loop

    def _pull(self) -> list[messages.Message]:
        """Move every complete message from the reader (loop thread only)."""
        msgs: list[messages.Message] = []
        if self._frame_error is not None:
            return msgs
        reader = self.reader
        sess = self.session
        if sess is not None and sess.in_copy_in:
            buf, spans, end, rest = reader.copy_frames()
            if spans and sess.feed_copy_frames(buf, spans):
                reader.skip_to(end, rest)
        try:
            while True:
                m = reader.next_message()
                if m is None:
                    break
                msgs.append(m)
        except PgError as e:
            self._frame_error = e
        return msgs

    async def _serve(self) -> None:
        sess = self.session
        assert sess is not None
        pool = self.server.pool
        self._serving = True
        while True:
            if self.closed:
                return
            if self._lean_busy:         # answered by _lean_done, which wakes us
                await self._wait_data()
                continue
            if sess.terminated:         # Terminate, or a FATAL error (maybe from a step run inline)
                self._fatal_sent = sess.fatal
                return
            if self.terminating:
                self.send_fatal(PgError(ADMIN_SHUTDOWN, "terminating connection due to administrator command"))
                return
            msgs = self._pull()
            if msgs:
                sess.push(msgs)
            if sess.has_work():
                if sess.copy_inline() or self._try_lean(sess):
                    continue
                if sess.inline_ok():
                    out = self._run_inline(sess, sess.cycle_signature())  # fast: no worker-thread hop
                else:
                    out = await pool.run(sess.step)
                self.write(out)
                if sess.terminated:
                    self._fatal_sent = sess.fatal
                    return
                await self._drain()
                continue
            if self._frame_error is not None:
                log.info("%s: protocol error: %s", self.peer, self._frame_error.message)
                self.send_fatal(self._frame_error)
                return
            if self.eof:
                return      # the client left after its last complete message (a COPY IN is aborted)
            if sess.idle():
                self.write(sess.take_notifications())   # any that came while a step ran
            await self._wait_data()
