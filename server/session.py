"""The post-authentication protocol state machine, synchronous and socket-free.

The connection hands it complete frontend messages and gets backend bytes
back.  It runs on a worker thread (engine calls may block for a long time),
so it must never touch the event loop; the connection guarantees only one
thread drives it at a time.

Each message is handled either directly (returns bytes) or by a generator
that yields output pieces and, when it needs the client's next message
(COPY FROM STDIN), yields :data:`NEED_MSG` and receives it via ``send``.
That lets one COPY span many network reads while the driver stays a simple
loop, and lets large results be produced in slices so the connection can
apply write back-pressure between them.
"""
from __future__ import annotations

import datetime as dt
import enum
import logging
import os
import time
from collections import deque
from typing import Callable, Final, Generator, Iterable, NamedTuple, ParamSpec, TypeVar

from splitstream.executor.api import (CopyIn, EngineSession, LeanOutcome, Prepared, PreparedFacts, Result, ResultColumn,
                                      SessionInfo)
from splitstream.protocol import bind_runs, cycles, messages
from splitstream.protocol.errors import (
    DUPLICATE_CURSOR,
    DUPLICATE_PREPARED_STATEMENT,
    FEATURE_NOT_SUPPORTED,
    IN_FAILED_SQL_TRANSACTION,
    INTERNAL_ERROR,
    INVALID_CURSOR_NAME,
    INVALID_SQL_STATEMENT_NAME,
    PROTOCOL_VIOLATION,
    QUERY_CANCELED,
    PgError,
)

from .session_settings import timeout_seconds, wire_name
from .batched_binds import run_answer, run_columns
from .portal import ParsedNames, Portal, Statement, check_param_count, decode_params, decode_value, encode_rows, expand_formats, field_descs

log = logging.getLogger("splitstream.session")

#: Inline execution (on the event-loop thread, no worker hop) is allowed for
#: Bind/Execute/Sync cycles of read-only prepared statements whose previous
#: execution took less than this (seconds).  It must stay tiny: while it runs
#: the loop serves nobody else and cannot see a cancel request.
INLINE_BUDGET = float(os.environ.get("SPLITSTREAM_INLINE_BUDGET_MS", "1")) / 1000.0  # 0 disables
#: Largest result encoded on the event-loop thread (a dashboard's few hundred rows).
INLINE_MAX_ROWS = 512
#: Most queued messages (Executes of one INSERT, mostly) run inline as one write cycle.
INLINE_MAX_WRITE_MSGS = 256
#: COPY statements a session remembers as starting on the event loop (ProtocolSession.inline_ok)
MAX_INLINE_COPIES = 16
_INLINE_KINDS = frozenset("BDESHC")  # Describe of a cached read is cheap too (pgbench sends B D E S)


class _Signal(enum.Enum):
    """What a handler can yield besides output bytes."""

    NEED_MSG = "need_msg"
    FLUSH = "flush"


#: Yielded by a handler generator to ask for the next frontend message.
NEED_MSG: Final = _Signal.NEED_MSG
#: Yielded by a handler whose next output may be long in coming (SUBSCRIBE):
#: ``step`` returns what it has so the connection writes it now.
FLUSH: Final = _Signal.FLUSH

#: Rows encoded per slice of a large result (bounds memory per step).
ROW_SLICE = 8192
#: Repeated read cycles remembered per session (see ``replay_cycle``).
CYCLE_CACHE_SIZE = 64
#: CopyData bytes handed to the engine in one step (see ``_feed_copy``).
COPY_FEED_BYTES = 4 << 20
#: Output bytes after which ``step`` returns so the connection can write.
STEP_OUTPUT_CAP = 1 << 20

#: A handler that produces output in pieces: it yields bytes, or NEED_MSG
#: and then receives the next frontend message through ``send``.
Handler = Generator[bytes | _Signal, messages.Message | None, None]
#: What handling one message gives: output now, a Handler, or nothing.
Handled = bytes | Handler | None
#: The raw bodies and kinds of one Bind/[Describe]/Execute/Sync cycle (see ``cycle_signature``).
CycleSig = tuple[tuple[bytes, ...], str]


class _FastCycle(NamedTuple):
    """A cycle shape (``protocol.cycles``) the lean path took before: what
    it needs to take the next one straight from the read chunk."""

    statement: Statement
    head: bytes                          # BindComplete [+ the Describe's answer]
    decoders: tuple[tuple[int, int], ...]  # each parameter's (type oid, format)


class _KeptCycle(NamedTuple):
    """A cycle's response, valid while the engine reports the same result version."""

    statement: Statement
    prepared: Prepared
    version: object
    response: bytes


_P = ParamSpec("_P")
_T = TypeVar("_T")


def internal_error() -> PgError:
    """What a client sees for an unexpected server bug (details stay in the log)."""
    return PgError(INTERNAL_ERROR, "internal error", hint="See the server log for details.")


class ProtocolSession:
    """Simple- and extended-query protocol for one authenticated client."""

    def __init__(self, engine_session: EngineSession, info: SessionInfo) -> None:
        self.es = engine_session
        self.info = info
        self.statements: dict[str, Statement] = {}
        engine_session.protocol_statements = ParsedNames(self.statements)   # PREPARE/DEALLOCATE see them
        self.portals: dict[str, Portal] = {}
        self.ignore_till_sync = False
        self.terminated = False          # Terminate received or fatal protocol error
        self.fatal = False               # ... the latter: the connection lingers before closing
        self.running = False             # an engine call is in progress
        self._queue: deque[messages.Message] = deque()
        self._gen: Handler | None = None
        self._gen_waiting = False        # the generator waits for a message (COPY IN)
        self._copy_sink: CopyIn | None = None    # the COPY IN in progress
        #: simple Query bodies that started a COPY IN which may start on the event loop (CopyIn.starts_inline)
        self._inline_copies: set[bytes] = set()
        self._unsynced_writes = False    # a non-read-only statement ran since the last Sync
        self._cycles: dict[CycleSig, _KeptCycle] = {}   # see replay_cycle
        self._errors = 0                 # ErrorResponses and notices sent (a cycle with any is not kept)
        #: the messages and first answers of a cycle handed to the engine's lean path (see lean_cycle)
        #: (the raw chunk of a cycle taken by lean_raw: its messages are made only for a retry)
        #: (and its statement, whose plan pg_prepared_statements counts when the cycle is done)
        self._lean: tuple[list[messages.Message] | bytes, bytes, Statement | None] | None = None
        self._fast: dict[bytes, _FastCycle] = {}   # see lean_raw
        #: the shape of the chunk whose messages are queued now (set by the connection when
        #: lean_raw did not know it): lean_cycle remembers it if it takes that cycle
        self.pending_shape: bytes | None = None
        self._lean_skip = False          # the lean path asked for a retry: run the next cycle as usual
        #: NotificationResponses waiting for the session to be idle (appended from any thread)
        self._notifications: deque[bytes] = deque()
        self._handlers: dict[str, Callable[[bytes], Handled]] = {
            "Q": self._simple_query,
            "P": self._parse,
            "B": self._bind,
            "D": self._describe,
            "E": self._execute,
            "C": self._close,
            "S": self._sync,
            "H": self._flush,
            "X": self._terminate,
            "d": self._ignore, "c": self._ignore, "f": self._ignore,
            "F": self._function_call,
        }

    # ------------------------------------------------------------ driving

    def queue_notification(self, pid: int, channel: str, payload: str) -> None:
        """A NOTIFY this session listens for (any thread): sent when it is idle."""
        self._notifications.append(messages.notification_response(pid, channel, payload))

    def take_notifications(self) -> bytes:
        """The queued NotificationResponses, if the session is outside a
        transaction block (PostgreSQL delivers none inside one)."""
        if not self._notifications or self._txn_status() != "I":
            return b""
        out: list[bytes] = []
        while self._notifications:
            out.append(self._notifications.popleft())
        self._errors += 1            # a cycle that carried them is not kept for replay
        return b"".join(out)

    def idle(self) -> bool:
        """Nothing queued or running: between cycles, where a notification may be written."""
        return not self._queue and self._gen is None and not self.running and not self.terminated

    def _ready(self, status: str) -> bytes:
        """ReadyForQuery, preceded by the notifications due (as PostgreSQL sends them)."""
        return (self.take_notifications() if status == "I" else b"") + messages.ready_for_query(status)

    def push(self, msgs: Iterable[messages.Message]) -> None:
        self._queue.extend(msgs)

    def has_work(self) -> bool:
        """True if ``step`` can make progress without more input."""
        if self.terminated:
            return False
        if self._gen is not None and not self._gen_waiting:
            return True
        return bool(self._queue)

    def inline_ok(self) -> bool:
        """True if every queued message is a cheap step of an already-fast read-only
        statement, or of one Bind/Execute/Sync cycle of a batched INSERT the
        engine could open without waiting (see ``_inline_write_ok``), so
        ``step`` may run on the event-loop thread (saves the thread hop)."""
        if self._gen is not None or self.ignore_till_sync or not self._queue:
            return False
        if len(self._queue) == 1 and self._queue[0].kind == "Q":
            return self._queue[0].body in self._inline_copies
        bound: set[str] = set()
        write: Statement | None = None
        queue = self._queue
        for m in queue:
            kind = m.kind
            if kind not in _INLINE_KINDS:
                return False
            if kind == "S" and self._unsynced_writes:
                return False  # this Sync may commit (and fsync) earlier work: not on the loop thread
            if kind == "B":
                stmt = self._bound_statement(m.body)
                if stmt is None:
                    return False
                if not stmt.inline:
                    if not stmt.inline_write or (write is not None and write is not stmt):
                        return False
                    write = stmt
                bound.add(m.body[:m.body.find(b"\0")].decode("utf-8", "replace"))
            elif kind == "E":
                name = m.body[: m.body.find(b"\0")].decode("utf-8", "replace")
                if name not in bound:
                    portal = self.portals.get(name)
                    if portal is None or not portal.statement.inline:
                        return False
                    res = portal.result
                    if res is not None and res.batch is not None and res.batch.n > INLINE_MAX_ROWS:
                        return False
        return write is None or self._inline_write_ok(write)

    def _inline_write_ok(self, stmt: Statement) -> bool:
        """A write goes inline only as one short pipeline ending in its Sync
        (which commits, releasing the writer lock the engine takes here): a
        second Sync would have to take the lock again, maybe waiting."""
        queue = self._queue
        if len(queue) > INLINE_MAX_WRITE_MSGS or queue[-1].kind != "S" \
                or sum(1 for m in queue if m.kind == "S") != 1:
            return False
        if stmt.prepared is None:
            return False
        try:
            return self.es.reserve_inline_write(stmt.prepared)
        except Exception:
            log.exception("reserving an inline write failed")
            return False

    # ------------------------------------------------------------ lean inserts

    def lean_cycle(self, done: Callable[[LeanOutcome], None]) -> bool:
        """Hand the queued Bind/[Describe]/Execute/Sync of a lean INSERT (the
        engine's ``Prepared.lean``), from an idle session, to the engine's
        lean path: only its parameters are decoded here, on the event-loop
        thread.  True: the cycle is taken; ``done`` is called (from an engine
        thread) with its outcome, which :meth:`lean_finish` turns into the
        answer.  Anything unusual (a Bind error, a session in a block, a
        setting the lean path does not serve) returns False and leaves the
        messages to the ordinary path, which answers them as before."""
        shape, self.pending_shape = self.pending_shape, None
        if self._lean_skip:
            self._lean_skip = False
            return False
        q = self._queue
        if not q or not self._lean_idle():
            return False
        if q[0].kind == "Q":
            return self._lean_query(q[0], done)
        if len(q) < 3 or q[0].kind != "B" or self.portals:
            return False
        described = q[1].kind == "D"
        n = 4 if described else 3
        if len(q) < n or q[n - 2].kind != "E" or q[n - 1].kind != "S" or q[n - 1].body:
            return False
        try:
            return self._lean_submit([q[i] for i in range(n)], described, done, shape if len(q) == n else None)
        except PgError:
            return False            # the ordinary path raises it, in its place

    def _lean_query(self, msg: messages.Message, done: Callable[[LeanOutcome], None]) -> bool:
        """A simple Query holding one INSERT of literals (the engine decides)."""
        try:
            sql = messages.decode_query(msg.body)
        except PgError:
            return False
        if self.portals.get("") is not None:
            return False
        return self._hand_over([msg], b"", lambda: self.es.lean_submit_sql(sql, done), None)

    def _lean_idle(self) -> bool:
        """Nothing pending that a lean cycle would have to follow."""
        return self._gen is None and not self.ignore_till_sync and not self._unsynced_writes \
            and self._lean is None and not self.terminated

    def lean_raw(self, chunk: bytes, cycle: cycles.Cycle, done: Callable[[LeanOutcome], None]) -> bool:
        """:meth:`lean_cycle` for a read chunk that is exactly one cycle
        (``protocol.cycles.split_cycle``) of a shape the ordinary lean path
        took before, with nothing queued: no message objects, no Bind decode;
        the parameter values are decoded as that cycle's were.  False:
        nothing was done (unknown shape, or anything :meth:`lean_cycle`
        would decline); the connection then reads the chunk as usual."""
        shape, raw = cycle
        fast = self._fast.get(shape)
        if fast is None or self._queue or self.portals or self._lean_skip or not self._lean_idle():
            return False
        stmt = fast.statement
        prepared = stmt.prepared
        if self.statements.get(stmt.name) is not stmt or prepared is None or not prepared.lean:
            return False
        tz = self.info.settings.get("timezone") or "UTC"       # (as _tz)
        try:
            params = [None if v is None else decode_value(oid, fmt, v, tz) for v, (oid, fmt) in zip(raw, fast.decoders)]
        except PgError:
            return False            # the ordinary path raises it, in its place
        return self._hand_over(chunk, fast.head, lambda: self.es.lean_submit(prepared, params, done), stmt)

    def _lean_submit(self, msgs: list[messages.Message], described: bool, done: Callable[[LeanOutcome], None],
                     shape: bytes | None = None) -> bool:
        stmt = self._bound_statement(msgs[0].body)      # (cheap: reads only the names)
        prepared = stmt.prepared if stmt is not None else None
        if stmt is None or prepared is None or not prepared.lean or prepared.columns is not None:
            return False
        b = messages.decode_bind(msgs[0].body)
        if messages.decode_execute(msgs[-2].body).portal != b.portal:
            return False
        head = messages.bind_complete()
        if described:
            d = messages.decode_describe(msgs[1].body)
            if d.kind == "P" and d.name == b.portal:
                head += messages.no_data()
            elif d.kind == "S" and d.name == b.statement:
                head += messages.parameter_description(stmt.param_oids) + messages.no_data()
            else:
                return False
        params = decode_params(stmt, b, self._tz)
        if shape is not None:
            if len(self._fast) >= CYCLE_CACHE_SIZE:
                self._fast.clear()
            fmts = expand_formats(b.param_formats, len(params), "parameter")
            self._fast[shape] = _FastCycle(stmt, head, tuple(zip(stmt.param_oids, fmts)))
        return self._hand_over(msgs, head, lambda: self.es.lean_submit(prepared, params, done), stmt)

    def _hand_over(self, msgs: list[messages.Message] | bytes, head: bytes, submit: Callable[[], bool],
                   stmt: Statement | None) -> bool:
        """Take ``msgs`` (queued messages, or a raw chunk never queued) as
        the lean cycle, then ``submit``: its answer may come on an engine
        thread before ``submit`` returns, so the session is in its lean
        state first (and put back if declined)."""
        queued = msgs if isinstance(msgs, list) else None
        if queued is not None:
            for _ in queued:
                self._queue.popleft()
        self._lean = (msgs, head, stmt)
        self.running = True
        taken = False
        try:
            taken = submit()
        finally:
            if not taken:
                self._lean = None
                self.running = False
                if queued is not None:
                    self._queue.extendleft(reversed(queued))
        return taken

    def lean_finish(self, outcome: LeanOutcome) -> bytes:
        """The answer to the cycle :meth:`lean_cycle` took, now that the
        engine reports its outcome (event-loop thread).  A retry puts the
        messages back to run the ordinary way (nothing is answered yet)."""
        taken, self._lean = self._lean, None
        self.running = False
        if taken is None:
            return b""
        msgs, head, stmt = taken
        if outcome.retry:
            self._queue.extendleft(reversed(msgs if isinstance(msgs, list) else messages.split_messages(msgs)))
            self._lean_skip = True
            return b""
        if stmt is not None:
            self._plans_taken(stmt)
        if outcome.error is not None:
            body = self._error(outcome.error, extended=False)
        else:
            body = messages.command_complete(outcome.tag)
        return head + body + self._ready(self._txn_status())

    # ------------------------------------------------------------ repeated reads

    def cycle_signature(self) -> CycleSig | None:
        """Identity of the queued request if it is exactly one Bind/[Describe]/
        Execute/Sync cycle, from idle, with nothing else pending."""
        q = self._queue
        if not 3 <= len(q) <= 4 or self._gen is not None or self.ignore_till_sync or self.portals:
            return None
        kinds = "".join(m.kind for m in q)
        if kinds != "BDES" and kinds != "BES":
            return None
        return tuple(m.body for m in q), kinds

    def replay_cycle(self, sig: CycleSig) -> bytes | None:
        """The response of an identical earlier cycle whose result the engine
        vouches is unchanged (same data versions and output settings): a
        dashboard polling a continuous view then costs a dictionary lookup."""
        hit = self._cycles.get(sig)
        if hit is None:
            return None
        if self.statements.get(hit.statement.name) is not hit.statement or self._txn_status() != "I" \
                or self.es.result_version(hit.prepared) != hit.version:
            return None
        self._queue.clear()
        self._plans_taken(hit.statement)
        return hit.response

    def replay_unparsed(self, sig: CycleSig) -> bytes | None:
        """:meth:`replay_cycle` for a request that was not parsed (the
        connection matched its raw bytes): only from a clean idle state."""
        if self._queue or self._gen is not None or self.ignore_till_sync or self.portals or self.terminated:
            return None
        return self.replay_cycle(sig)

    def has_cycle(self, sig: CycleSig) -> bool:
        """Whether ``sig``'s response is kept for :meth:`replay_cycle`."""
        return sig in self._cycles

    def step_cycle(self, sig: CycleSig) -> bytes:
        """Run one cycle through ``step`` and keep its response for replay_cycle."""
        stmt = self._bound_statement(sig[0][0])
        prepared = stmt.prepared if stmt is not None else None
        version = self.es.result_version(prepared) if prepared is not None else None
        errors = self._errors
        out = self.step()
        if stmt is not None and prepared is not None and version is not None and errors == self._errors \
                and not self._queue and not self.portals and self._txn_status() == "I" \
                and self.statements.get(stmt.name) is stmt:
            if len(self._cycles) >= CYCLE_CACHE_SIZE:
                self._cycles.clear()
            self._cycles[sig] = _KeptCycle(stmt, prepared, version, out)
        return out

    def _bound_statement(self, bind_body: bytes) -> Statement | None:
        a = bind_body.find(b"\0")
        b = bind_body.find(b"\0", a + 1)
        return self.statements.get(bind_body[a + 1:b].decode("utf-8", "replace"))

    def copy_inline(self) -> bool:
        """Feed the CopyData queued in a COPY IN here (the event-loop thread)
        when its sink takes them without work (``CopyIn.feed_light``); True
        if it did."""
        cin, q = self._copy_sink, self._queue
        if cin is None or not self._gen_waiting or not q:
            return False
        bodies = []
        for m in q:
            if m.kind != "d":
                break
            bodies.append(m.body)
        if not bodies or not cin.feed_light(bodies):
            return False
        for _ in bodies:
            q.popleft()
        return True

    def feed_copy_frames(self, buf: bytearray, spans: list[tuple[int, int]]) -> bool:
        """Feed CopyData payloads where they lie in the read buffer
        (``FrontendReader.copy_frames``), here on the event-loop thread, when
        nothing is queued before them and the sink takes them without work
        (``CopyIn.feed_spans``); True if it did (they are consumed)."""
        cin = self._copy_sink
        if cin is None or not self._gen_waiting or self._queue:
            return False
        return cin.feed_spans(buf, spans)

    @property
    def in_copy_in(self) -> bool:
        return self._gen is not None and self._gen_waiting

    def step(self, max_bytes: int = STEP_OUTPUT_CAP) -> bytes:
        """Process queued messages until input runs out or ``max_bytes`` is produced."""
        out: list[bytes] = []
        size = 0
        queue = self._queue
        while size < max_bytes and not self.terminated:
            gen = self._gen
            send: messages.Message | None = None
            if gen is None:
                if not queue:
                    break
                res = self._dispatch(queue.popleft())
                if res is None:
                    continue
                if isinstance(res, bytes):
                    out.append(res)
                    size += len(res)
                    continue
                gen = self._gen = res
            elif self._gen_waiting:
                if not queue:
                    break
                send = queue.popleft()
                self._gen_waiting = False
            try:
                item = gen.send(send)
            except StopIteration:
                self._gen = None
                continue
            except Exception:  # handlers catch their own errors; this is a bug
                log.exception("protocol handler failed")
                self._gen = None
                out.append(messages.error_response(internal_error()))
                self.terminated = self.fatal = True
                break
            if item is NEED_MSG:
                self._gen_waiting = True
                continue
            if item is FLUSH:
                break
            out.append(item)
            size += len(item)
        return b"".join(out)

    def close(self) -> None:
        """Connection ended: abort an unfinished COPY/handler, then the engine session."""
        gen, self._gen = self._gen, None
        if gen is not None:
            try:
                gen.close()
            except Exception:
                log.exception("closing protocol handler failed")
        self._queue.clear()
        try:
            self.es.close()
        except Exception:
            log.exception("engine session close failed")

    def _dispatch(self, msg: messages.Message) -> Handled:
        kind = msg.kind
        if self.ignore_till_sync and kind not in ("S", "X"):
            return None
        if isinstance(msg, messages.RunMessage):
            return self._bind_run(msg.run)
        handler = self._handlers.get(kind)
        if handler is None:
            self.terminated = self.fatal = True
            return messages.error_response(PgError(PROTOCOL_VIOLATION, f"invalid frontend message type {ord(kind)}",
                                            severity="FATAL"))
        try:
            return handler(msg.body)
        except PgError as e:
            return self._error(e, extended=True)
        except Exception:
            log.exception("error handling %r message", kind)
            return self._error(internal_error(), extended=True)

    # ------------------------------------------------------------ helpers

    def _error(self, err: PgError, *, extended: bool) -> bytes:
        """ErrorResponse bytes; marks the transaction failed and, in extended mode, skips to Sync."""
        self._errors += 1
        if extended:
            self.ignore_till_sync = True
        restored: dict[str, str] = {}
        try:
            restored = self.es.on_error() or {}
        except Exception:
            log.exception("engine on_error failed")
        # a rolled-back implicit block put back settings reported when SET: report them again
        return messages.error_response(err) + b"".join(messages.parameter_status(k, v) for k, v in restored.items())

    def _run(self, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Call into the engine with cancel/statement_timeout armed."""
        info = self.info
        ev = info.cancel_event
        if ev.is_set():
            ev.clear()
        timeout = timeout_seconds(info.settings.get("statement_timeout"))
        info.deadline = time.monotonic() + timeout if timeout > 0 else None
        self.running = True
        try:
            return fn(*args, **kwargs)
        finally:
            self.running = False
            info.deadline = None

    @property
    def _tz(self) -> str:
        return self.info.settings.get("timezone", "UTC") or "UTC"

    @property
    def _float_digits(self) -> int:
        try:
            return int(self.info.settings.get("extra_float_digits", "1") or 1)
        except ValueError:
            return 1

    def _prologue(self, res: Result) -> Iterable[bytes]:
        if res.notices or res.parameter_status:
            self._errors += 1
        for n in res.notices:
            yield messages.notice_response(n.severity, n.sqlstate, n.message, n.detail, n.hint)
        for k, v in res.parameter_status.items():
            yield messages.parameter_status(wire_name(k), v)

    def _rows(self, res: Result, formats: list[int] | None, start: int, stop: int) -> Iterable[bytes]:
        tz, digits = self._tz, self._float_digits
        if stop - start <= ROW_SLICE:
            if stop > start:
                yield b"".join(encode_rows(res, formats, tz, start, stop, digits))
            return
        for a in range(start, stop, ROW_SLICE):
            yield b"".join(encode_rows(res, formats, tz, a, min(stop, a + ROW_SLICE), digits))

    def _emit_copy(self, res: Result) -> Handler:
        if res.copy_in is not None:
            yield from self._copy_in(res.copy_in)
        else:
            cout = res.copy_out
            assert cout is not None
            yield messages.copy_out_response(cout.format, cout.ncols)
            for chunk in cout.chunks:
                yield messages.copy_data(chunk) if chunk else FLUSH    # an empty chunk: write what is sent
            yield messages.copy_done()
            yield messages.command_complete(cout.tag_fn())

    def _copy_in(self, cin: CopyIn) -> Handler:
        yield messages.copy_in_response(cin.format, cin.ncols)
        finished = False
        self._copy_sink = cin
        try:
            while True:
                msg = yield NEED_MSG
                assert msg is not None      # step() answers NEED_MSG with a message
                kind = msg.kind
                if kind == "d":
                    self._run(self._feed_copy, cin, msg.body)
                elif kind == "c":
                    tag = self._run(cin.finish)
                    finished = True
                    yield messages.command_complete(tag)
                    return
                elif kind == "f":
                    reason = msg.body.rstrip(b"\0").decode("utf-8", "replace")
                    finished = True
                    cin.abort(reason)
                    raise PgError(QUERY_CANCELED, f"COPY from stdin failed: {reason}")
                elif kind in ("S", "H"):
                    continue  # PostgreSQL ignores Sync/Flush during COPY IN
                else:
                    raise PgError(PROTOCOL_VIOLATION, f"unexpected message type 0x{ord(kind[0]):02X} during COPY from stdin")
        finally:
            self._copy_sink = None
            if not finished:
                try:
                    cin.abort("COPY aborted")
                except Exception:
                    log.exception("COPY abort failed")

    def _feed_copy(self, cin: CopyIn, body: bytes) -> None:
        """Hand this CopyData and any already queued behind it to the engine
        in one step: psql sends 8 kB messages, psycopg 128 kB, and a step per
        message would cost more than the data.  Each payload is only
        appended by the sink (no join here: the sink's buffer is the one copy)."""
        cin.feed(body)
        q = self._queue
        size = len(body)
        while q and q[0].kind == "d" and size < COPY_FEED_BYTES:
            nxt = q.popleft().body
            cin.feed(nxt)
            size += len(nxt)

    # ------------------------------------------------------------ simple query

    def _simple_query(self, body: bytes) -> Handler:
        try:
            sql = messages.decode_query(body)
            self.portals.pop("", None)
            stmts = self._run(self.es.split, sql) if sql.strip() else []
            if not stmts:
                yield messages.empty_query_response()
            block = len(stmts) > 1      # one implicit transaction block, as PostgreSQL runs them
            for stmt in stmts:
                if block:
                    self.es.begin_query_block()
                res: Result = self._run(self.es.execute_sql, stmt)
                yield from self._prologue(res)
                if res.copy_in is not None and not block and res.copy_in.starts_inline \
                        and len(self._inline_copies) < MAX_INLINE_COPIES:
                    self._inline_copies.add(body)
                if res.copy_in is not None or res.copy_out is not None:
                    yield from self._emit_copy(res)
                    continue
                if res.empty:
                    yield messages.empty_query_response()
                    continue
                if res.row_stream is not None:
                    yield from self._row_stream(res)
                    continue
                if res.columns is not None:
                    yield messages.row_description(field_descs(res.columns))
                    n = res.batch.n if res.batch is not None else 0
                    yield from self._rows(res, None, 0, n)
                yield messages.command_complete(res.tag)
            if block:
                restored = self._run(self.es.end_query_block)
                if restored:
                    yield b"".join(messages.parameter_status(k, v) for k, v in restored.items())
        except PgError as e:
            yield self._error(e, extended=False)
        except GeneratorExit:
            raise
        except Exception:
            log.exception("simple query failed")
            yield self._error(internal_error(), extended=False)
        yield self._ready(self._txn_status())

    def _row_stream(self, res: Result) -> Handler:
        """Rows that keep coming (SUBSCRIBE): each batch as DataRows, written at
        once; a PgError from the stream (the cancel that ends it) ends the query."""
        assert res.row_stream is not None and res.columns is not None
        yield messages.row_description(field_descs(res.columns))
        for batch in res.row_stream:
            if batch is None:
                yield FLUSH
                continue
            part = Result(tag=res.tag, columns=res.columns, batch=batch)
            yield from self._rows(part, None, 0, batch.n)
            yield FLUSH

    def _portal_stream(self, portal: Portal, res: Result, max_rows: int) -> Handler:
        """SUBSCRIBE through Execute: DataRows as changes come, until the cancel
        that ends it; with a row limit, that many rows, then PortalSuspended
        (the next Execute of the portal goes on where this one stopped)."""
        assert res.row_stream is not None
        formats = portal.formats(res.columns)
        left = max_rows if max_rows > 0 else -1
        while left != 0:
            if portal.stream_rest is not None:
                (batch, start), portal.stream_rest = portal.stream_rest, None
            else:
                batch, start = next(res.row_stream), 0
            if batch is None:
                yield FLUSH
                continue
            stop = batch.n if left < 0 else min(batch.n, start + left)
            yield from self._rows(Result(tag=res.tag, columns=res.columns, batch=batch), formats, start, stop)
            if stop < batch.n:
                portal.stream_rest = (batch, stop)
            if left > 0:
                left -= stop - start
            yield FLUSH
        portal.suspended = True
        yield messages.portal_suspended()

    def _txn_status(self) -> str:
        try:
            return self.es.txn_status
        except Exception:
            log.exception("txn_status failed")
            return "E"

    # ------------------------------------------------------------ extended query

    def _parse(self, body: bytes) -> bytes:
        p = messages.decode_parse(body)
        prepared = self._run(self.es.prepare, p.query, p.param_oids) if p.query.strip() else None
        if p.name and (p.name in self.statements or p.name in self.es.sql_prepared):
            # (PostgreSQL stores it last: its parse and analysis errors come first)
            raise PgError(DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{p.name}" already exists')
        facts = PreparedFacts(p.query, dt.datetime.now(dt.timezone.utc), False) if p.name else None
        st = self.statements[p.name] = Statement(p.name, p.query, prepared, facts=facts)
        st.inline_candidate = prepared is not None and prepared.read_only
        st.inline_write = prepared is not None and prepared.inline_write and INLINE_BUDGET > 0
        return messages.parse_complete()

    def _statement(self, name: str) -> Statement:
        stmt = self.statements.get(name)
        if stmt is None:
            # an SQL-level PREPAREd one (one namespace, as in PostgreSQL): wrapped, not kept,
            # so a later DEALLOCATE is seen
            prepared = self.es.sql_prepared.get(name) if name else None
            if prepared is None:
                raise PgError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{name}" does not exist')
            stmt = Statement(name, "", prepared, facts=self.es.sql_prepared_facts.get(name))
        return stmt

    def _plans_taken(self, stmt: Statement, times: int = 1) -> None:
        """``times`` Binds of ``stmt`` took a plan from PostgreSQL's plan
        cache: pg_prepared_statements counts them (api.PreparedFacts)."""
        facts = stmt.facts
        if facts is not None:
            facts.planned(bool(stmt.param_oids), self.info.settings.get("plan_cache_mode", "auto"), times)

    def _portal(self, name: str) -> Portal:
        portal = self.portals.get(name)
        if portal is None:
            raise PgError(INVALID_CURSOR_NAME, f'portal "{name}" does not exist')
        return portal

    def _bind(self, body: bytes) -> bytes:
        b = messages.decode_bind(body)
        stmt = self._statement(b.statement)
        if b.portal and b.portal in self.portals:
            raise PgError(DUPLICATE_CURSOR, f'cursor "{b.portal}" already exists')
        if self._txn_status() == "E" and (stmt.prepared is None or not stmt.prepared.ends_block or b.params):
            check_param_count(stmt, b)      # (exec_bind_message's order: the count, then the block, then the plan)
            raise PgError(IN_FAILED_SQL_TRANSACTION,
                          "current transaction is aborted, commands ignored until end of transaction block")
        params = decode_params(stmt, b, self._tz)
        portal = Portal(b.portal, stmt, params, list(b.result_formats))
        self._plans_taken(stmt)           # (GetCachedPlan, before the result formats are checked)
        if stmt.columns is not None:
            portal.formats(stmt.columns)  # validate the count now, as PostgreSQL does at Bind
        self.portals[b.portal] = portal
        return messages.bind_complete()

    def _bind_run(self, run: bind_runs.BindRun) -> bytes | None:
        """A run of Bind/[Describe]/Execute cycles of one statement: taken
        as one batch by the engine when it can (answered as each cycle would
        be), else put back as its messages, answered one by one (so every
        error is raised by its own cycle, as before)."""
        stmt = self.statements.get(run.statement)
        prepared = stmt.prepared if stmt is not None else None
        cols = run_columns(stmt, run, self._tz) if stmt is not None and prepared is not None \
            and prepared.columns is None and not prepared.columns_at_run else None
        res = None
        if cols is not None and stmt is not None and prepared is not None:
            self._unsynced_writes = True
            res = self._run(self.es.execute_deferred_run, prepared, cols, run.count)
        if res is None:
            self._queue.extendleft(reversed([messages.Message(k, b) for k, b in run.cycles()]))
            return None
        assert stmt is not None
        self._plans_taken(stmt, run.count)
        # the unnamed portal is the last cycle's, run to completion (its
        # parameters are not kept: a completed portal is never run again)
        self.portals[""] = Portal("", stmt, [], list(run.result_formats), result=res, done=True)
        return run_answer(run, res.tag)

    def _describe(self, body: bytes) -> bytes:
        d = messages.decode_describe(body)
        if d.kind == "S":
            stmt = self._statement(d.name)
            head = messages.parameter_description(stmt.param_oids)
            cols = self._current_columns(stmt)
            return head + (messages.row_description(field_descs(cols)) if cols is not None else messages.no_data())
        if d.name not in self.portals:
            # a SQL-level cursor (DECLARE) is a portal too: psycopg's server cursors describe it
            cur = self.es.declared_cursor(d.name)
            if cur is not None:
                cols = cur.columns
                return messages.row_description(field_descs(cols)) if cols is not None else messages.no_data()
        portal = self._portal(d.name)
        stmt = portal.statement
        prepared = stmt.prepared
        if portal.result is None and stmt.columns is None and prepared is not None and prepared.columns_at_run:
            # FETCH / EXECUTE: the row shape is the cursor's or statement's; run now, Execute sends the rows
            result = portal.result = self._run(self.es.execute_deferred, prepared, portal.params)
            if result.notices or result.parameter_status:
                result.notices = []
        cols = portal.result.columns if portal.result is not None else self._current_columns(stmt)
        if cols is None:
            return messages.no_data()
        fmts = portal.formats(cols)
        key = (id(cols), tuple(fmts))
        cache = stmt.row_descriptions
        rd = cache.get(key)
        if rd is None:
            # a prepared statement is described on every execution by many clients
            rd = cache[key] = messages.row_description(field_descs(cols, fmts))
        return rd

    def _current_columns(self, stmt: Statement) -> list[ResultColumn] | None:
        """The rows ``stmt`` would return if run now.  PostgreSQL revalidates a
        statement's cached plan when it is described (after DDL on what it
        reads, or under another search_path: the current columns, or the
        error of planning it again), and refuses to describe one returning
        rows in a failed transaction block, where it could not plan."""
        prepared = stmt.prepared
        if prepared is None or prepared.columns is None:
            return None
        if self._txn_status() == "E":
            raise PgError(IN_FAILED_SQL_TRANSACTION,
                          "current transaction is aborted, commands ignored until end of transaction block")
        return self._run(self.es.current_plan, prepared).columns

    def _execute(self, body: bytes) -> bytes | Handler:
        """Execute a portal.  The common case (small result, no COPY) returns
        bytes directly; big results and COPY return a generator so output is
        produced in slices.  PgErrors propagate to ``_dispatch`` (extended mode)."""
        ex = messages.decode_execute(body)
        portal = self._portal(ex.portal)
        prepared = portal.statement.prepared
        if prepared is None:
            return messages.empty_query_response()
        res = portal.result
        head = b""
        if res is None:
            stmt = portal.statement
            t0 = time.perf_counter()
            if not stmt.inline_candidate:
                self._unsynced_writes = True
            res = portal.result = self._run(self.es.execute_deferred, prepared, portal.params)
            if stmt.inline_candidate:
                # a moving average, so one run that lost the CPU does not end inlining
                stmt.run_time = 0.8 * stmt.run_time + 0.2 * (time.perf_counter() - t0)
                stmt.inline = stmt.run_time < INLINE_BUDGET and res.copy_in is None \
                    and res.copy_out is None and (res.batch is None or res.batch.n <= INLINE_MAX_ROWS)
            if res.notices or res.parameter_status:
                head = b"".join(self._prologue(res))
            if res.copy_in is not None or res.copy_out is not None:
                portal.done = True
                return self._guard_extended(head, self._emit_copy(res))
        if res.row_stream is not None:
            return self._guard_extended(head, self._portal_stream(portal, res, ex.max_rows))
        if res.empty:
            return head + messages.empty_query_response()
        if res.columns is None or res.batch is None:
            portal.done = True
            return head + messages.command_complete(res.tag)
        total = res.batch.n
        start = portal.offset
        stop = total if ex.max_rows <= 0 else min(total, start + ex.max_rows)
        formats = portal.formats(res.columns)
        portal.offset = stop
        if stop < total:
            portal.suspended = True
            tail = messages.portal_suspended()
        else:
            portal.done = True
            tag = res.tag_for_rows(stop - start) if portal.suspended or start > 0 else res.tag
            tail = messages.command_complete(tag)
        if stop - start <= ROW_SLICE:
            return head + b"".join(encode_rows(res, formats, self._tz, start, stop, self._float_digits)) + tail
        return self._guard_extended(head, self._rows(res, formats, start, stop), tail)

    def _guard_extended(self, head: bytes, gen: Iterable[bytes | _Signal], tail: bytes = b"") -> Handler:
        """Wrap a slice/COPY generator: errors become ErrorResponse + skip-to-Sync."""
        try:
            if head:
                yield head
            yield from gen
            if tail:
                yield tail
        except PgError as e:
            yield self._error(e, extended=True)
        except GeneratorExit:
            raise
        except Exception:
            log.exception("execute failed")
            yield self._error(internal_error(), extended=True)

    def _close(self, body: bytes) -> bytes:
        c = messages.decode_close(body)
        if c.kind == "S":
            if self.statements.pop(c.name, None) is None and c.name:
                self.es.sql_prepared.pop(c.name, None)   # Close of an SQL-PREPAREd statement drops it
        else:
            self.portals.pop(c.name, None)
        return messages.close_complete()

    def _sync(self, body: bytes) -> bytes:
        # a Sync with a body: PostgreSQL's error (not skipping to a Sync), then this Sync's work
        head = self._error(messages.invalid_format(), extended=False) if body else b""
        self.ignore_till_sync = False
        self._unsynced_writes = False
        err = b""
        try:
            if self.es.sync_pending:
                restored = self._run(self.es.sync)     # commits the implicit block of this batch
                err = b"".join(messages.parameter_status(k, v) for k, v in restored.items())
        except PgError as e:
            err = messages.error_response(e)
        except Exception:
            log.exception("sync failed")
            err = messages.error_response(internal_error())
        status = self._txn_status()
        if status == "I":
            self.portals.clear()  # portals live until their transaction ends
        return head + err + self._ready(status)

    def _flush(self, body: bytes) -> None:
        if body:
            raise messages.invalid_format()
        return None  # the connection writes whatever a step produced

    def _terminate(self, body: bytes) -> None:
        self.terminated = True
        return None

    def _ignore(self, body: bytes) -> None:
        # CopyData/CopyDone/CopyFail outside COPY: a failed COPY's leftovers (PostgreSQL ignores them).
        return None

    def _function_call(self, body: bytes) -> bytes:
        # FunctionCall is a self-contained cycle like Query: error, then ReadyForQuery.
        err = self._error(PgError(FEATURE_NOT_SUPPORTED, "fastpath function calls are not supported"), extended=False)
        return err + messages.ready_for_query(self._txn_status())
