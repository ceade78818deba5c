"""Frontend message builders and a backend-stream parser for the campaigns.

Hand-built bytes rather than a driver, because the fuzzer must be able to
send what no driver would: wrong lengths, wrong counts, messages out of
phase.  The parser checks the other direction: whatever the server sends
must be well framed, whatever we sent.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

#: Type bytes a PostgreSQL v3 backend may send.
BACKEND_KINDS = frozenset(b"RSKZTDCEINtn123sGHWdcvA")


def untyped(payload: bytes) -> bytes:
    """A startup-phase packet: length (self-inclusive) then payload."""
    return struct.pack("!i", len(payload) + 4) + payload


def startup(params: dict[bytes, bytes], version: int = PROTOCOL_3) -> bytes:
    body = struct.pack("!i", version) + b"".join(k + b"\0" + v + b"\0" for k, v in params.items()) + b"\0"
    return untyped(body)


def ssl_request() -> bytes:
    return untyped(struct.pack("!i", SSL_REQUEST))


def gssenc_request() -> bytes:
    return untyped(struct.pack("!i", GSSENC_REQUEST))


def cancel_request(pid: int, key: int) -> bytes:
    return untyped(struct.pack("!iii", CANCEL_REQUEST, pid, key))


def typed(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def cstr(s: bytes) -> bytes:
    return s + b"\0"


def query(sql: bytes) -> bytes:
    return typed(b"Q", cstr(sql))


def parse(name: bytes, sql: bytes, oids: list[int]) -> bytes:
    return typed(b"P", cstr(name) + cstr(sql) + struct.pack("!h", len(oids))
                 + b"".join(struct.pack("!I", o & 0xFFFFFFFF) for o in oids))


def bind_body(portal: bytes, stmt: bytes, fmts: list[int], params: list[bytes | None], rfmts: list[int],
              counts: tuple[int, int, int] | None = None) -> bytes:
    """Bind's body; ``counts`` overrides the three counts written (format, parameter, result)."""
    nf, np_, nr = counts if counts is not None else (len(fmts), len(params), len(rfmts))
    out = [cstr(portal), cstr(stmt), struct.pack("!h", nf), b"".join(struct.pack("!h", f) for f in fmts),
           struct.pack("!h", np_)]
    for p in params:
        out.append(struct.pack("!i", -1) if p is None else struct.pack("!i", len(p)) + p)
    out.append(struct.pack("!h", nr))
    out.append(b"".join(struct.pack("!h", f) for f in rfmts))
    return b"".join(out)


def bind(portal: bytes, stmt: bytes, fmts: list[int], params: list[bytes | None], rfmts: list[int]) -> bytes:
    return typed(b"B", bind_body(portal, stmt, fmts, params, rfmts))


def describe(kind: bytes, name: bytes) -> bytes:
    return typed(b"D", kind + cstr(name))


def execute(portal: bytes, max_rows: int = 0) -> bytes:
    return typed(b"E", cstr(portal) + struct.pack("!i", max_rows))


def close(kind: bytes, name: bytes) -> bytes:
    return typed(b"C", kind + cstr(name))


def sync() -> bytes:
    return typed(b"S", b"")


def flush() -> bytes:
    return typed(b"H", b"")


def terminate() -> bytes:
    return typed(b"X", b"")


def copy_data(data: bytes) -> bytes:
    return typed(b"d", data)


def copy_done() -> bytes:
    return typed(b"c", b"")


def copy_fail(reason: bytes) -> bytes:
    return typed(b"f", cstr(reason))


def password(data: bytes) -> bytes:
    return typed(b"p", data)


def sasl_initial(mechanism: bytes, data: bytes) -> bytes:
    return typed(b"p", cstr(mechanism) + struct.pack("!i", len(data)) + data)


def function_call(oid: int, args: list[bytes | None]) -> bytes:
    body = struct.pack("!ih", oid, 0) + struct.pack("!h", len(args))
    for a in args:
        body += struct.pack("!i", -1) if a is None else struct.pack("!i", len(a)) + a
    return typed(b"F", body + struct.pack("!h", 0))


# ---------------------------------------------------------------- backend side

@dataclass
class BackendLog:
    """What one connection received, parsed incrementally."""

    buf: bytearray = field(default_factory=bytearray)
    messages: int = 0
    ready: int = 0                       # ReadyForQuery count
    errors: list[tuple[str, str, str]] = field(default_factory=list)   # (severity, sqlstate, message)
    malformed: str | None = None         # first framing anomaly, if any
    key: tuple[int, int] | None = None   # BackendKeyData (pid, secret)
    auth: list[bytes] = field(default_factory=list)   # Authentication requests other than AuthenticationOk

    def feed(self, data: bytes) -> None:
        self.buf += data
        pos = 0
        buf = self.buf
        while self.malformed is None and len(buf) - pos >= 5:
            kind = buf[pos]
            (length,) = struct.unpack_from("!i", buf, pos + 1)
            if kind not in BACKEND_KINDS or length < 4:
                self.malformed = f"bad backend frame: type {kind!r} length {length} at byte {pos}"
                break
            if len(buf) - pos < length + 1:
                break
            self._message(kind, bytes(buf[pos + 5: pos + 1 + length]))
            pos += length + 1
        del buf[:pos]

    def _message(self, kind: int, body: bytes) -> None:
        self.messages += 1
        if kind == ord("Z"):
            self.ready += 1
        elif kind == ord("K") and len(body) == 8:
            self.key = struct.unpack("!ii", body)
        elif kind == ord("E"):
            self.errors.append(error_fields(body))
        elif kind == ord("R") and body[:4] != b"\0\0\0\0":
            self.auth.append(body)

    @property
    def fatal(self) -> bool:
        return any(sev in ("FATAL", "PANIC") for sev, _, _ in self.errors)


def error_fields(body: bytes) -> tuple[str, str, str]:
    """(severity, sqlstate, message) of an ErrorResponse body."""
    fields: dict[str, str] = {}
    for part in body.split(b"\0"):
        if part:
            fields[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return fields.get("V", fields.get("S", "?")), fields.get("C", "?"), fields.get("M", "?")
