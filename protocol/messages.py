"""Framing of PostgreSQL v3 messages, sans-IO.

:class:`FrontendReader` turns bytes from a client into message objects;
the ``build_*``/``*_msg`` functions turn backend messages into bytes.  The
server owns the socket; this module never touches one, so it can be tested
with plain byte strings and reused by a test client.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from . import bind_runs
from .errors import PROTOCOL_VIOLATION, PgError, PROGRAM_LIMIT_EXCEEDED, invalid_utf8

PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

#: Largest message we accept; PostgreSQL caps most messages at 1 GB, we cap
#: lower so a hostile length cannot make us reserve absurd buffers.
MAX_MESSAGE = 256 * 1024 * 1024
MAX_STARTUP = 10000
#: PostgreSQL's PQ_SMALL_MESSAGE_LIMIT: the messages that carry no payload
#: (Close, Describe, Execute, Flush, Sync, CopyDone, CopyFail, Terminate) may
#: not be longer, so a hostile length on one of them fails at its header
#: instead of making the server wait for, and buffer, the announced bytes.
SMALL_MESSAGE_LIMIT = 10000
_SMALL_KINDS = frozenset(b"CDEHScfX")
#: Type bytes a client may send (p: password/SASL). Like PostgreSQL, another
#: byte is refused at once, not after waiting for the length it seems to carry
#: (a second startup packet or an SSLRequest after startup starts with 0).
_FRONTEND_KINDS = frozenset(b"BCDEFHPQSXcdfp")
#: Before authentication a client sends only password/SASL messages;
#: PostgreSQL caps them at PG_MAX_AUTH_TOKEN_LENGTH, so an unauthenticated
#: peer cannot make the server buffer a MAX_MESSAGE-sized body.
AUTH_MESSAGE_LIMIT = 65535
#: Free room below which the reader's buffer is compacted or grown before a
#: socket read, and the size it starts with: most connections send small
#: requests, and an idle one keeps its buffer (a bulk sender's grows at once).
MIN_ROOM = 4096
#: Room a busy connection's buffer grows to, for large reads (uvloop's own read size).
READ_ROOM = 256 * 1024
#: A buffer larger than this is let go once it is read out (a huge message, or
#: a COPY that outran its worker, made it grow).
KEEP_ROOM = 16 * 1024 * 1024

_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")
_HDR = struct.Struct("!ci")


# ---------------------------------------------------------------- frontend

@dataclass
class SSLRequest:
    pass


@dataclass
class GSSENCRequest:
    pass


@dataclass
class CancelRequest:
    pid: int
    key: int


@dataclass
class StartupMessage:
    version: int
    params: dict[str, str]


@dataclass
class Message:
    """A typed frontend message: ``kind`` is the type byte as a str."""

    kind: str
    body: bytes


@dataclass
class RunMessage(Message):
    """A run of Bind/[Describe]/Execute cycles read as one (``kind`` is
    ``bind_runs.RUN_KIND``, ``body`` the run's bytes)."""

    run: bind_runs.BindRun


#: What a client sends before its messages carry a type byte.
StartupPacket = SSLRequest | GSSENCRequest | CancelRequest | StartupMessage


class FrontendReader:
    """Incremental decoder of the client's byte stream.

    Before startup completes, messages carry no type byte; afterwards every
    message starts with one.  Bytes come in either straight from the socket,
    as asyncio's BufferedProtocol does it (``get_buffer`` offers the room the
    next read fills, ``buffer_updated`` says how much it did: no copy out of
    the event loop's buffer and then into ours), or by ``feed`` (a copy).
    ``next`` pops one complete message or returns None.
    """

    def __init__(self, max_message: int = MAX_MESSAGE) -> None:
        self._buf = bytearray(MIN_ROOM)
        self._pos = 0                   # next unread byte of _buf
        self._end = 0                   # end of the bytes received into _buf
        #: payload bytes of a CopyData message still to come, its header and
        #: first bytes consumed already (``copy_frames``/``skip_to``)
        self._copy_rest = 0
        self.startup_phase = True
        #: Longest typed message accepted now (the server raises it after authentication).
        self.max_message = max_message
        #: Read runs of identical-shape Bind/[Describe]/Execute cycles as one
        #: :class:`bind_runs.BindRun` (the server turns it on once it serves queries).
        self.bind_runs = False

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the next read goes (BufferedProtocol.get_buffer): the free
        room after the unread bytes, at least MIN_ROOM of it."""
        if self._pos == self._end:
            self._pos = self._end = 0
            if len(self._buf) > KEEP_ROOM:      # after a huge message: do not keep its room
                self._buf = bytearray(READ_ROOM)
        if len(self._buf) - self._end < MIN_ROOM:
            self._room()
        elif self._copy_rest and len(self._buf) < READ_ROOM and self._pos == self._end == 0:
            self._buf = bytearray(READ_ROOM)    # a COPY streams: room for reads as large as before
        return memoryview(self._buf)[self._end:]

    def _room(self) -> None:
        """Free room after the unread bytes: they move to the front when that
        frees a quarter of the buffer, else into a larger buffer (room as
        large as the buffer was, up to READ_ROOM, or as the unread bytes, so
        a long message is copied O(1) times).  A new object, never a resize:
        the read that just ended may still hold a view of the old one."""
        buf, pos, end = self._buf, self._pos, self._end
        unread = end - pos
        if pos and len(buf) - unread >= max(MIN_ROOM, len(buf) // 4):
            with memoryview(buf) as mv:
                mv[:unread] = mv[pos:end]
        else:
            new = bytearray(unread + max(MIN_ROOM, min(len(buf), READ_ROOM), unread))
            new[:unread] = memoryview(buf)[pos:end]
            self._buf = new
        self._pos, self._end = 0, unread

    def buffer_updated(self, nbytes: int) -> None:
        """``nbytes`` were written where ``get_buffer`` pointed."""
        self._end += nbytes

    def feed(self, data: bytes) -> None:
        """Append ``data`` (bytes not read from the socket through ``get_buffer``)."""
        with memoryview(data) as src:
            while len(src):
                with self.get_buffer(len(src)) as room:
                    n = min(len(room), len(src))
                    room[:n] = src[:n]
                self.buffer_updated(n)
                src = src[n:]

    def buffered(self) -> int:
        return self._end - self._pos

    def unread(self) -> bytes:
        """A copy of what is buffered and not yet read (see ``discard``)."""
        return bytes(self._buf[self._pos:self._end])

    def discard(self) -> None:
        """Drop what is buffered: the caller served it from ``unread``."""
        self._pos = self._end

    def restore(self, n: int) -> None:
        """Undo a ``discard`` of ``n`` bytes (nothing was received since)."""
        self._pos = self._end - n

    def copy_frames(self) -> tuple[bytearray, list[tuple[int, int]], int, int]:
        """The CopyData payloads at the head of what is buffered, without
        reading them: the buffer, each payload's (start, end) in it, where
        the bytes after them begin, and how much of the last payload is
        still to come (for :meth:`skip_to`).  A COPY's sink copies the
        payloads out of the buffer once, where its parse reads them, instead
        of each becoming a bytes object of its own and then being joined.
        A payload begun but not all received counts with what came of it
        (the rest is the first span next time): no message waits whole in
        the buffer, to be moved to its front as more room is needed (that
        moved 60% of a COPY's bytes once more).  The spans are valid until
        the next read."""
        buf, pos, end = self._buf, self._pos, self._end
        spans: list[tuple[int, int]] = []
        rest = self._copy_rest
        if rest:
            take = min(rest, end - pos)
            if not take:
                return buf, spans, pos, rest
            spans.append((pos, pos + take))
            pos += take
            rest -= take
            if rest:
                return buf, spans, pos, rest
        limit = self.max_message
        while end - pos >= 5 and buf[pos] == 0x64:     # 'd'
            (length,) = _I32.unpack_from(buf, pos + 1)
            if length < 4 or length > limit:
                break       # bad: next_message says so
            if length + 1 > end - pos:
                if end - pos > 5:
                    spans.append((pos + 5, end))
                    return buf, spans, end, length + 1 - (end - pos)
                break
            spans.append((pos + 5, pos + 1 + length))
            pos += 1 + length
        return buf, spans, pos, 0

    def skip_to(self, pos: int, rest: int = 0) -> None:
        """The bytes before ``pos`` were consumed, and ``rest`` bytes of a
        CopyData payload are still to come (see :meth:`copy_frames`)."""
        self._pos = pos
        self._copy_rest = rest

    def mid_message(self) -> bool:
        """The next bytes received continue a message begun (no message starts there)."""
        return self._copy_rest > 0

    def next(self) -> StartupPacket | Message | None:
        """The next complete packet: untyped while ``startup_phase``, typed after."""
        if self.startup_phase:
            return self._next_startup()
        return self.next_message()

    def _next_startup(self) -> StartupPacket | None:
        avail = self._end - self._pos
        if avail < 4:
            return None
        (length,) = _I32.unpack_from(self._buf, self._pos)
        if length < 8 or length > MAX_STARTUP:
            raise PgError(PROTOCOL_VIOLATION, "invalid length of startup packet")
        if avail < length:
            return None
        body = bytes(self._buf[self._pos + 4 : self._pos + length])
        self._pos += length
        return _decode_startup(body)

    def next_message(self) -> Message | None:
        """The next complete typed message (after the startup phase)."""
        buf = self._buf
        pos = self._pos
        avail = self._end - pos
        if self._copy_rest:
            return self._copy_rest_message(avail)
        if avail >= 5:
            # the common case first: one typed message already complete
            kind, length = _HDR.unpack_from(buf, pos)
            if kind == b"B" and self.bind_runs and avail > length * bind_runs.MIN_RUN:
                run = bind_runs.scan(buf, pos, avail, self.max_message)
                if run is not None:
                    self._pos = pos + run[1]
                    return RunMessage(bind_runs.RUN_KIND, run[0].raw, run[0])
            if 4 <= length <= avail - 1 and length <= self.max_message and kind[0] in _FRONTEND_KINDS \
                    and (length <= SMALL_MESSAGE_LIMIT or kind[0] not in _SMALL_KINDS):
                self._pos = pos + length + 1
                if length < 512:
                    return Message(_KINDS[kind[0]], bytes(buf[pos + 5: pos + length + 1]))
                with memoryview(buf) as mv:     # one copy, not two, for COPY payloads
                    return Message(_KINDS[kind[0]], bytes(mv[pos + 5: pos + length + 1]))
        if avail and buf[pos] not in _FRONTEND_KINDS:
            raise PgError(PROTOCOL_VIOLATION, f"invalid frontend message type {buf[pos]}")
        if avail < 5:
            return None
        kind, length = _HDR.unpack_from(buf, pos)
        if length < 4 or length > SMALL_MESSAGE_LIMIT and kind[0] in _SMALL_KINDS:
            raise PgError(PROTOCOL_VIOLATION, f"invalid message length {length}")
        if length > self.max_message:
            raise PgError(PROGRAM_LIMIT_EXCEEDED,
                          f"message length {length} exceeds the limit of {self.max_message} bytes")
        return None     # (incomplete)

    def _copy_rest_message(self, avail: int) -> Message | None:
        """What came of a CopyData payload begun (``copy_frames``), as a
        CopyData message of its own: where its bytes go is only their order."""
        take = min(avail, self._copy_rest)
        if not take:
            return None
        pos = self._pos
        self._pos = pos + take
        self._copy_rest -= take
        with memoryview(self._buf) as mv:
            return Message(_KINDS[0x64], bytes(mv[pos:pos + take]))


def split_messages(raw: bytes) -> list[Message]:
    """The typed messages of ``raw``, complete ones (a chunk read straight
    from the socket, put back to be served the ordinary way)."""
    reader = FrontendReader()
    reader.startup_phase = False
    reader.feed(raw)
    out: list[Message] = []
    while (m := reader.next_message()) is not None:
        out.append(m)
    return out


#: Type byte -> one-character str, so framing does not decode per message.
_KINDS = [chr(i) for i in range(256)]


def _decode_startup(body: bytes) -> StartupPacket:
    (code,) = _I32.unpack_from(body, 0)
    if code == SSL_REQUEST:
        return SSLRequest()
    if code == GSSENC_REQUEST:
        return GSSENCRequest()
    if code == CANCEL_REQUEST:
        if len(body) != 12:
            raise PgError(PROTOCOL_VIOLATION, "invalid cancel request")
        pid, key = struct.unpack_from("!ii", body, 4)
        return CancelRequest(pid, key)
    major = code >> 16
    if major != 3:
        raise PgError(
            "0A000",
            f"unsupported frontend protocol {major}.{code & 0xFFFF}: server supports 3.0 to 3.0",
        )
    parts = body[4:].split(b"\0")
    params: dict[str, str] = {}
    try:
        it = iter(parts)
        for k in it:
            if not k:
                break
            v = next(it)
            params[k.decode("utf-8")] = v.decode("utf-8")
    except (StopIteration, UnicodeDecodeError) as e:
        raise PgError(PROTOCOL_VIOLATION, "invalid startup packet layout: expected terminator as last byte") from e
    return StartupMessage(code, params)


class BodyReader:
    """Cursor over a message body with PostgreSQL's primitive decoders."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _need(self, n: int) -> None:
        if self.pos + n > len(self.data):
            raise PgError(PROTOCOL_VIOLATION, "insufficient data left in message")

    def int16(self) -> int:
        self._need(2)
        v: int
        (v,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return v

    def int32(self) -> int:
        self._need(4)
        v: int
        (v,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return v

    def byte(self) -> str:
        self._need(1)
        v = self.data[self.pos : self.pos + 1].decode("latin-1")
        self.pos += 1
        return v

    def cstring(self) -> str:
        end = self.data.find(b"\0", self.pos)
        if end < 0:
            raise PgError(PROTOCOL_VIOLATION, "invalid string in message")
        raw = self.data[self.pos : end]
        self.pos = end + 1
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise invalid_utf8(raw, e.start) from None

    def bytes_(self, n: int) -> bytes:
        self._need(n)
        v = self.data[self.pos : self.pos + n]
        self.pos += n
        return v

    def rest(self) -> bytes:
        v = self.data[self.pos :]
        self.pos = len(self.data)
        return v

    def end(self) -> None:
        """PostgreSQL's pq_getmsgend: bytes left over mean a malformed message."""
        if self.pos != len(self.data):
            raise invalid_format()


def invalid_format() -> PgError:
    """A message with bytes beyond its last field (PostgreSQL checks every frontend message)."""
    return PgError(PROTOCOL_VIOLATION, "invalid message format")


@dataclass
class Parse:
    name: str
    query: str
    param_oids: list[int]


@dataclass
class Bind:
    portal: str
    statement: str
    param_formats: list[int]
    params: list[bytes | None]
    result_formats: list[int]


@dataclass
class Describe:
    kind: str  # 'S' or 'P'
    name: str


@dataclass(frozen=True)
class Execute:
    portal: str
    max_rows: int


_EXECUTE_UNNAMED_ALL = Execute("", 0)   # what nearly every client sends


@dataclass
class Close:
    kind: str
    name: str


def decode_parse(body: bytes) -> Parse:
    r = BodyReader(body)
    name = r.cstring()
    query = r.cstring()
    n = r.int16() & 0xFFFF      # unsigned, as PostgreSQL reads it: "-1" is 65535 types, not none
    oids = [r.int32() & 0xFFFFFFFF for _ in range(n)]
    r.end()
    return Parse(name, query, oids)


def decode_bind(body: bytes) -> Bind:
    # fast path: no format codes, no parameters, no result formats (pgbench -M prepared)
    a = body.find(b"\0")
    b = body.find(b"\0", a + 1) if a >= 0 else -1
    if b >= 0 and len(body) == b + 7 and body[b + 1:] == b"\0\0\0\0\0\0":
        try:
            return Bind(body[:a].decode("utf-8"), body[a + 1:b].decode("utf-8"), [], [], [])
        except UnicodeDecodeError:
            pass
    try:
        return _decode_bind_raw(body)
    except (struct.error, IndexError):
        raise PgError(PROTOCOL_VIOLATION, "insufficient data left in message") from None


def _decode_bind_raw(body: bytes) -> Bind:
    """Bind without a reader object: drivers send thousands per second (JDBC batches)."""
    a = body.find(b"\0")
    b = body.find(b"\0", a + 1)
    if a < 0 or b < 0:
        raise PgError(PROTOCOL_VIOLATION, "invalid string in message")
    try:
        portal, stmt = body[:a].decode("utf-8"), body[a + 1:b].decode("utf-8")
    except UnicodeDecodeError as e:
        raise invalid_utf8(e.object, e.start) from None
    pos = b + 1
    (nf,) = _I16.unpack_from(body, pos)
    fmts = list(struct.unpack_from(f"!{nf}h", body, pos + 2)) if nf > 0 else []
    pos += 2 + 2 * max(nf, 0)
    (np_,) = _I16.unpack_from(body, pos)
    pos += 2
    if np_ < 0:
        raise PgError(PROTOCOL_VIOLATION, "invalid parameter count")
    params: list[bytes | None] = []
    unpack = _I32.unpack_from
    end = len(body)
    for _ in range(np_):
        (ln,) = unpack(body, pos)
        pos += 4
        if ln == -1:
            params.append(None)
            continue
        if ln < 0 or pos + ln > end:
            raise PgError(PROTOCOL_VIOLATION, "insufficient data left in message")
        params.append(body[pos:pos + ln])
        pos += ln
    (nr,) = _I16.unpack_from(body, pos)
    rfmts = list(struct.unpack_from(f"!{nr}h", body, pos + 2)) if nr > 0 else []
    if pos + 2 + 2 * max(nr, 0) > end:
        raise PgError(PROTOCOL_VIOLATION, "insufficient data left in message")
    if pos + 2 + 2 * max(nr, 0) < end:
        raise invalid_format()
    return Bind(portal, stmt, fmts, params, rfmts)


def decode_describe(body: bytes) -> Describe:
    r = BodyReader(body)
    kind = r.byte()
    if kind not in ("S", "P"):
        raise PgError(PROTOCOL_VIOLATION, f"invalid DESCRIBE message subtype {ord(kind)}")
    d = Describe(kind, r.cstring())
    r.end()
    return d


def decode_execute(body: bytes) -> Execute:
    if body == b"\0\0\0\0\0":
        return _EXECUTE_UNNAMED_ALL
    r = BodyReader(body)
    ex = Execute(r.cstring(), r.int32())
    r.end()
    return ex


def decode_close(body: bytes) -> Close:
    r = BodyReader(body)
    kind = r.byte()
    if kind not in ("S", "P"):
        raise PgError(PROTOCOL_VIOLATION, f"invalid CLOSE message subtype {ord(kind)}")
    c = Close(kind, r.cstring())
    r.end()
    return c


def decode_query(body: bytes) -> str:
    r = BodyReader(body)
    sql = r.cstring()
    r.end()
    return sql


# ---------------------------------------------------------------- backend

def _msg(kind: bytes, payload: bytes) -> bytes:
    return kind + _I32.pack(len(payload) + 4) + payload


def _cstr(s: str) -> bytes:
    return s.encode("utf-8") + b"\0"


def auth_ok() -> bytes:
    return _msg(b"R", _I32.pack(0))


def auth_cleartext() -> bytes:
    return _msg(b"R", _I32.pack(3))


def auth_md5(salt: bytes) -> bytes:
    return _msg(b"R", _I32.pack(5) + salt)


def auth_sasl(mechanisms: list[str]) -> bytes:
    return _msg(b"R", _I32.pack(10) + b"".join(_cstr(m) for m in mechanisms) + b"\0")


def auth_sasl_continue(data: bytes) -> bytes:
    return _msg(b"R", _I32.pack(11) + data)


def auth_sasl_final(data: bytes) -> bytes:
    return _msg(b"R", _I32.pack(12) + data)


#: Run-time parameters reported with ParameterStatus (PostgreSQL's GUC_REPORT
#: set): lower-case setting name -> the name on the wire.  The server reports
#: them at login, the engine when a statement changes one.
REPORTED_PARAMETERS = {
    "application_name": "application_name",
    "client_encoding": "client_encoding",
    "datestyle": "DateStyle",
    "default_transaction_read_only": "default_transaction_read_only",
    "in_hot_standby": "in_hot_standby",
    "integer_datetimes": "integer_datetimes",
    "intervalstyle": "IntervalStyle",
    "is_superuser": "is_superuser",
    "server_encoding": "server_encoding",
    "server_version": "server_version",
    "session_authorization": "session_authorization",
    "standard_conforming_strings": "standard_conforming_strings",
    "timezone": "TimeZone",
}


def parameter_status(name: str, value: str) -> bytes:
    return _msg(b"S", _cstr(name) + _cstr(value))


def backend_key_data(pid: int, key: int) -> bytes:
    return _msg(b"K", struct.pack("!ii", pid, key))


def notification_response(pid: int, channel: str, payload: str) -> bytes:
    """NotificationResponse ('A'): a NOTIFY the session listens for, from backend ``pid``."""
    return _msg(b"A", _I32.pack(pid) + _cstr(channel) + _cstr(payload))


_READY = {st: b"Z\0\0\0\5" + st.encode("ascii") for st in "ITE"}


def ready_for_query(status: str) -> bytes:
    return _READY[status]


@dataclass
class FieldDesc:
    """One column of a RowDescription."""

    name: str
    type_oid: int
    type_size: int = -1
    type_mod: int = -1
    table_oid: int = 0
    column_attnum: int = 0
    format: int = 0


def row_description(fields: list[FieldDesc]) -> bytes:
    parts = [_I16.pack(len(fields))]
    for f in fields:
        parts.append(_cstr(f.name))
        parts.append(struct.pack("!ihihih", f.table_oid, f.column_attnum, f.type_oid, f.type_size, f.type_mod, f.format))
    return _msg(b"T", b"".join(parts))


_NULL = _I32.pack(-1)


def data_row(values: list[bytes | None]) -> bytes:
    parts = [_I16.pack(len(values))]
    for v in values:
        if v is None:
            parts.append(_NULL)
        else:
            parts.append(_I32.pack(len(v)))
            parts.append(v)
    payload = b"".join(parts)
    return b"D" + _I32.pack(len(payload) + 4) + payload


_TAGS: dict[str, bytes] = {}


def command_complete(tag: str) -> bytes:
    msg = _TAGS.get(tag)
    if msg is None:
        msg = _msg(b"C", _cstr(tag))
        if len(_TAGS) < 4096:      # "SELECT 1", "INSERT 0 1": a few tags recur endlessly
            _TAGS[tag] = msg
    return msg


def empty_query_response() -> bytes:
    return _msg(b"I", b"")


def _fields(severity: str, sqlstate: str, message: str, detail: str | None, hint: str | None,
            position: int | None, context: str | None, routine: str | None = None) -> bytes:
    parts = [b"S" + _cstr(severity), b"V" + _cstr(severity), b"C" + _cstr(sqlstate), b"M" + _cstr(message)]
    if detail:
        parts.append(b"D" + _cstr(detail))
    if hint:
        parts.append(b"H" + _cstr(hint))
    if position:
        parts.append(b"P" + _cstr(str(position)))
    if context:
        parts.append(b"W" + _cstr(context))
    if routine:
        parts.append(b"R" + _cstr(routine))
    return b"".join(parts) + b"\0"


def error_response(err: PgError) -> bytes:
    return _msg(b"E", _fields(err.severity, err.sqlstate, err.message, err.detail, err.hint, err.position, err.context,
                              err.routine))


def notice_response(severity: str, sqlstate: str, message: str, detail: str | None = None, hint: str | None = None) -> bytes:
    return _msg(b"N", _fields(severity, sqlstate, message, detail, hint, None, None))


def parse_complete() -> bytes:
    return b"1\0\0\0\4"


def bind_complete() -> bytes:
    return b"2\0\0\0\4"


def close_complete() -> bytes:
    return b"3\0\0\0\4"


def no_data() -> bytes:
    return b"n\0\0\0\4"


def portal_suspended() -> bytes:
    return b"s\0\0\0\4"


def parameter_description(oids: list[int]) -> bytes:
    return _msg(b"t", _I16.pack(len(oids)) + b"".join(struct.pack("!I", o) for o in oids))


def copy_in_response(fmt: int, ncols: int) -> bytes:
    return _msg(b"G", struct.pack("!bh", fmt, ncols) + _I16.pack(fmt) * ncols)


def copy_out_response(fmt: int, ncols: int) -> bytes:
    return _msg(b"H", struct.pack("!bh", fmt, ncols) + _I16.pack(fmt) * ncols)


def copy_data(data: bytes) -> bytes:
    return _msg(b"d", data)


def copy_done() -> bytes:
    return b"c\0\0\0\4"
