"""The protocol fuzzer's message generator: one seeded plan per connection.

A plan is a short, mostly valid conversation (simple and extended query,
COPY in and out, transactions, portals) with some messages mutated (length
field, type byte, truncation, parameter/format counts, bad UTF-8, oversized
lengths) and some sent out of phase (Bind before Parse, CopyData outside
COPY, a second startup packet, SSLRequest after startup).  Each plan depends
only on (seed, index), so one failing connection replays alone.
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from typing import Callable

from . import wire

#: Objects the campaign creates before fuzzing (see fuzz.setup_schema).
TABLE, STREAM, VIEW = b"fz_t", b"fz_s", b"fz_v"

SQL = [
    b"SELECT 1", b"SELECT $1::int + 1", b"SELECT $1::text, $2::int", b"SELECT a, b FROM fz_t LIMIT 3",
    b"INSERT INTO fz_t VALUES ($1, $2)", b"INSERT INTO fz_s VALUES ($1, $2)", b"SELECT * FROM fz_v",
    b"SELECT generate_series(1, 50)", b"BEGIN", b"COMMIT", b"ROLLBACK", b"SELECT 1/0", b"SELEC garbage",
    b"", b";", b"SELECT $1::bytea", b"SELECT $1::int8, $2::float8", b"SET statement_timeout = '2s'",
    b"COPY fz_t FROM STDIN", b"COPY fz_s FROM STDIN (FORMAT csv)", b"COPY (SELECT 1, 'x') TO STDOUT",
    b"DECLARE c1 CURSOR FOR SELECT 1", b"FETCH 1 FROM c1", b"SELECT 1; SELECT 2", b"SHOW TimeZone",
    b"SELECT count(*) FROM fz_t", b"PREPARE p1 AS SELECT 1", b"EXECUTE p1", b"DEALLOCATE ALL",
]
COPY_IN = [b"COPY fz_t FROM STDIN", b"COPY fz_s FROM STDIN (FORMAT csv)", b"COPY fz_t FROM STDIN (FORMAT binary)"]
COPY_ROWS = [b"1\tone\n", b"2\ttwo\n3\tthree\n", b"x\ty\n", b"4\n", b"5,five\n", b"\\.\n", b"6\t\xff\xfe\n",
             b"PGCOPY\n\xff\r\n\0" + b"\0" * 8, b"7\t" + b"z" * 300 + b"\n"]
PARAMS: list[bytes | None] = [b"1", b"42", b"-7", b"abc", b"", None, b"\xff\xfe\xfd", b"99999999999999999999",
                              b"1.5", b"\x00\x00\x00\x05", b"\x00\x00\x00", b"\xc3\x28", b"NaN", b"x" * 2000]
NAMES = [b"", b"", b"s1", b"s2", b"p1", b"c1", b"\xff\xfe", b"a" * 70]
BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xf0\x28\x8c\x28", b"\xed\xa0\x80", b"\x80\x80"]


@dataclass
class Plan:
    """What one fuzz connection sends, and how it leaves."""

    prelude: list[tuple[str, bytes]] = field(default_factory=list)   # ("ssl", pkt): expects one byte back
    startup: bytes | None = None
    body: list[bytes] = field(default_factory=list)
    broken: bool = False          # a mutation broke the framing: the server cannot resync
    ending: str = "terminate"     # terminate | eof | reset
    chunking: str = "whole"       # whole | random | bytewise
    cancel: bool = False          # after the body, send a CancelRequest for this session on a side connection
    auth_fuzz: str = "none"       # with a password: none | first | final | wrong | skip (what to spoil)
    auth_seed: int = 0            # the rng of an auth message's mutation (the server's nonce varies)
    tls_garbage: bytes = b""      # with TLS on: sent instead of a ClientHello after the server's 'S'

    @property
    def count(self) -> int:
        """Frontend messages this plan sends (prelude, startup and body)."""
        return len(self.prelude) + (self.startup is not None) + len(self.body)


class Generator:
    """Builds one :class:`Plan` from an rng: scenarios, then mutations."""

    def __init__(self, rng: random.Random, body_messages: int = 24) -> None:
        self.rng = rng
        self.target = body_messages

    # ------------------------------------------------------------ plan

    def plan(self) -> Plan:
        r = self.rng
        p = Plan()
        self._prelude(p)
        if p.startup is None and p.prelude and p.prelude[-1][0] == "final":
            return p
        p.startup = self._startup()
        while len(p.body) < self.target:
            frames, breaks = self._scenario()
            p.body.extend(frames)
            p.broken = p.broken or breaks
            if breaks:
                break
        p.ending = r.choices(["terminate", "eof", "reset"], [80, 12, 8])[0]
        p.chunking = r.choices(["whole", "random", "bytewise"], [70, 25, 5])[0]
        if p.chunking == "bytewise":
            p.body = p.body[:6]
        p.cancel = r.random() < 0.05
        p.auth_fuzz = r.choices(["none", "first", "final", "wrong", "skip"], [80, 7, 7, 3, 3])[0]
        p.auth_seed = r.randrange(1 << 30)
        if r.random() < 0.3:
            p.tls_garbage = r.choice([b"GET / HTTP/1.0\r\n\r\n", r.randbytes(r.randrange(1, 600)),
                                      b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc" + r.randbytes(40)])
        return p

    def _prelude(self, p: Plan) -> None:
        r = self.rng
        x = r.random()
        if x < 0.05:
            p.prelude.append(("ssl", wire.ssl_request()))
        elif x < 0.07:
            p.prelude.append(("ssl", wire.gssenc_request()))
        elif x < 0.09:
            p.prelude.append(("final", wire.cancel_request(r.randrange(1 << 31), r.randrange(1 << 31))))
        elif x < 0.10:
            p.prelude.append(("final", wire.ssl_request() + wire.startup({b"user": b"postgres"})))
        elif x < 0.12:
            p.prelude.append(("final", self._bad_startup()))

    def _startup(self) -> bytes:
        r = self.rng
        params = {b"user": b"postgres", b"database": r.choices([b"postgres", b"nosuchdb"], [9, 1])[0]}
        if r.random() < 0.3:
            extra = r.choice([(b"application_name", b"fuzz"), (b"client_encoding", b"UTF8"),
                              (b"DateStyle", b"ISO, MDY"), (b"options", b"-c statement_timeout=5s"),
                              (b"TimeZone", b"UTC"), (b"extra_float_digits", b"3"), (b"_pq_.fuzz", b"1")])
            params[extra[0]] = extra[1]
        version = wire.PROTOCOL_3 | (1 if r.random() < 0.03 else 0)
        return wire.startup(params, version)

    def _bad_startup(self) -> bytes:
        r = self.rng
        kind = r.randrange(9)
        ok = {b"user": b"postgres"}
        if kind == 0:
            return wire.startup({b"database": b"postgres"})                    # no user
        if kind == 1:
            return wire.startup({b"user": b"post" + r.choice(BAD_UTF8)})      # bad UTF-8
        if kind == 2:
            return wire.startup(ok, version=r.choice([2 << 16, 4 << 16, 1234, 0]))
        if kind == 3:
            return wire.startup(ok)[:-1]                                      # truncated (waits)
        if kind == 4:
            return struct.pack("!i", r.choice([0, 3, 7, 10001, 1 << 30, -1])) + b"\0\3\0\0"
        if kind == 5:
            pkt = wire.startup(ok)
            return pkt[:-2] + b"x\0"                                         # no terminator pair
        if kind == 6:
            return wire.untyped(struct.pack("!i", wire.CANCEL_REQUEST) + b"\1\2")   # short cancel
        if kind == 7:
            return wire.startup({b"user": b"postgres", b"options": b"-c " + r.choice(BAD_UTF8)})
        return wire.startup({b"user": b"postgres", b"TimeZone": b"Mars/Phobos", b"DateStyle": b"garbage"})

    # ------------------------------------------------------------ scenarios

    def _scenario(self) -> tuple[list[bytes], bool]:
        r = self.rng
        scenarios: list[tuple[int, Callable[[], list[bytes]]]] = [
            (20, self._simple), (30, self._extended), (10, self._copy_in), (5, self._copy_in_extended),
            (6, self._transaction), (6, self._portal_rows), (12, self._out_of_phase), (3, self._oversized),
        ]
        fn = r.choices([s[1] for s in scenarios], [s[0] for s in scenarios])[0]
        frames = fn()
        breaks = False
        out = []
        for f in frames:
            if r.random() < 0.12:
                f, b = self.mutate(f)
                breaks = breaks or b
            out.append(f)
            breaks = breaks or f[:1] == b"\0"      # an untyped packet after startup: framing is lost
            if breaks:
                break
        return out, breaks

    def _sql(self) -> bytes:
        s = self.rng.choice(SQL)
        if self.rng.random() < 0.05:
            s += self.rng.choice(BAD_UTF8)
        return s

    def _params(self) -> tuple[list[int], list[bytes | None]]:
        r = self.rng
        n = r.choice([0, 1, 2, 2, 3])
        params = [r.choice(PARAMS) for _ in range(n)]
        fmts = r.choice([[], [], [0], [1], [0] * n, [r.choice([0, 1, 2, -1])] * n])
        return fmts, params

    def _simple(self) -> list[bytes]:
        return [wire.query(self._sql())]

    def _extended(self) -> list[bytes]:
        r = self.rng
        name, portal = r.choice(NAMES), r.choice(NAMES[:5])
        fmts, params = self._params()
        oids = r.choice([[], [], [23], [25, 23], [0, 0], [20, 701], [17], [0xFFFFFFFF]])
        out = [wire.parse(name, self._sql(), oids), wire.bind(portal, name, fmts, params, r.choice([[], [0], [1], [1, 0], [5]]))]
        if r.random() < 0.5:
            out.append(wire.describe(r.choice([b"S", b"P"]), r.choice([name, portal])))
        out.append(wire.execute(portal, r.choice([0, 0, 1, 5, -1])))
        if r.random() < 0.2:
            out.append(wire.close(r.choice([b"S", b"P"]), r.choice([name, portal])))
        out.append(r.choice([wire.sync(), wire.sync(), wire.sync(), wire.flush()]))
        return out

    def _copy_rows(self) -> list[bytes]:
        r = self.rng
        return [wire.copy_data(r.choice(COPY_ROWS)) for _ in range(r.randrange(0, 5))]

    def _copy_end(self) -> list[bytes]:
        r = self.rng
        return [r.choice([wire.copy_done(), wire.copy_done(), wire.copy_fail(b"fuzz says no"),
                          wire.sync(), wire.flush(), wire.query(b"SELECT 1")])]

    def _copy_in(self) -> list[bytes]:
        return [wire.query(self.rng.choice(COPY_IN))] + self._copy_rows() + self._copy_end()

    def _copy_in_extended(self) -> list[bytes]:
        r = self.rng
        out = [wire.parse(b"", r.choice(COPY_IN), []), wire.bind(b"", b"", [], [], []), wire.execute(b"", 0)]
        return out + self._copy_rows() + self._copy_end() + [wire.sync()]

    def _transaction(self) -> list[bytes]:
        r = self.rng
        out = [wire.query(b"BEGIN"), wire.query(b"INSERT INTO fz_t VALUES (1, 'tx')")]
        if r.random() < 0.3:
            out.append(wire.query(b"SELECT 1/0"))
        out.append(wire.query(r.choice([b"COMMIT", b"ROLLBACK", b"SELECT 1"])))  # or leave it open
        return out

    def _portal_rows(self) -> list[bytes]:
        r = self.rng
        out = [wire.query(b"BEGIN"), wire.parse(b"", b"SELECT generate_series(1, 30)", []),
               wire.bind(b"pr", b"", [], [], [r.choice([0, 1])])]
        out += [wire.execute(b"pr", r.choice([1, 7, 0])) for _ in range(r.randrange(1, 4))]
        out += [wire.sync(), wire.query(b"COMMIT")]
        return out

    def _out_of_phase(self) -> list[bytes]:
        r = self.rng
        choices: list[Callable[[], list[bytes]]] = [
            lambda: [wire.bind(b"", b"never_parsed", [], [], []), wire.execute(b"", 0), wire.sync()],
            lambda: [wire.execute(b"no_portal", 0), wire.sync()],
            lambda: [wire.describe(b"P", b"no_portal"), wire.describe(b"S", b"no_stmt"), wire.sync()],
            lambda: [wire.copy_data(b"1\tstray\n"), wire.copy_done(), wire.query(b"SELECT 1")],
            lambda: [wire.copy_fail(b"stray")],
            lambda: [wire.startup({b"user": b"postgres"})],                   # startup twice
            lambda: [wire.ssl_request()],                                     # SSLRequest after startup
            lambda: [wire.password(b"secret\0")],                            # password outside auth
            lambda: [wire.function_call(r.randrange(1 << 16), [b"1"])],
            lambda: [wire.sync(), wire.sync(), wire.flush()],
            lambda: [wire.close(b"S", b"never"), wire.close(b"P", b"never"), wire.sync()],
            lambda: [wire.parse(b"dup", b"SELECT 1", []), wire.parse(b"dup", b"SELECT 2", []), wire.sync(),
                     wire.close(b"S", b"dup"), wire.sync()],
            lambda: [wire.typed(bytes([r.randrange(256)]), r.randbytes(r.randrange(0, 16)))],
            lambda: [wire.query(b"INSERT INTO fz_t VALUES (9, 'last')"), wire.terminate(), wire.query(b"SELECT 1")],
        ]
        return r.choice(choices)()

    def _oversized(self) -> list[bytes]:
        r = self.rng
        kind = r.randrange(3)
        if kind == 0:   # a real, large CopyData inside COPY
            return [wire.query(b"COPY fz_s FROM STDIN (FORMAT csv)"),
                    wire.copy_data(b"8,big\n" * r.randrange(1000, 50000)), wire.copy_done()]
        if kind == 1:   # a huge query text
            return [wire.query(b"SELECT '" + b"q" * r.randrange(10000, 1 << 20) + b"'")]
        fmts, params = [], [b"9" * r.randrange(1000, 200000)]
        return [wire.parse(b"", b"SELECT $1::text", []), wire.bind(b"", b"", fmts, params, []),
                wire.execute(b"", 0), wire.sync()]

    # ------------------------------------------------------------ mutations

    def mutate(self, frame: bytes) -> tuple[bytes, bool]:
        """One mutation of a frame; True when the server cannot find the next frame after it."""
        r = self.rng
        if frame[:1] == b"\0" or len(frame) < 5:       # an untyped packet after startup: framing lost anyway
            return frame, True
        kind, body = frame[:1], frame[5:]
        m = r.choices(["length", "type", "truncate_body", "cut_frame", "counts", "utf8", "huge_length",
                       "flip", "append"], [6, 10, 12, 3, 12, 10, 3, 10, 6])[0]
        if m == "length":
            delta = r.choice([-4, -2, -1, 1, 2, 7, 100])
            return kind + struct.pack("!i", max(0, len(body) + 4 + delta)) + body, True
        if m == "type":
            return bytes([r.randrange(256)]) + frame[1:], False
        if m == "truncate_body":
            cut = body[: r.randrange(len(body) + 1)]
            return wire.typed(kind, cut), False
        if m == "cut_frame":
            return frame[: r.randrange(1, len(frame))], True
        if m == "counts":
            return wire.typed(kind, self._mutate_counts(kind, body)), False
        if m == "utf8":
            at = r.randrange(len(body) + 1)
            return wire.typed(kind, body[:at] + r.choice(BAD_UTF8) + body[at:]), False
        if m == "huge_length":
            ln = r.choice([0x7FFFFFFF, 256 * 1024 * 1024 + 1, 100 * 1024 * 1024, -5, 0, 3])
            return kind + struct.pack("!i", ln) + body, True
        if m == "flip":
            if not body:
                return frame, False
            b = bytearray(body)
            for _ in range(r.randrange(1, 4)):
                b[r.randrange(len(b))] = r.randrange(256)
            return wire.typed(kind, bytes(b)), False
        return wire.typed(kind, body + r.randbytes(r.randrange(1, 9))), False

    def _mutate_counts(self, kind: bytes, body: bytes) -> bytes:
        """Rewrite an int16 count field with a hostile value (Bind's/Parse's counts, or any int16)."""
        r = self.rng
        hostile = r.choice([-1, -32768, 32767, 1000, 2, 3, 0])
        if kind == b"B":
            a = body.find(b"\0")
            b = body.find(b"\0", a + 1)
            if b >= 0 and len(body) >= b + 3:
                return body[: b + 1] + struct.pack("!h", hostile) + body[b + 3:]
        if kind == b"P":
            a = body.find(b"\0")
            b = body.find(b"\0", a + 1)
            if b >= 0 and len(body) >= b + 3:
                return body[: b + 1] + struct.pack("!h", hostile) + body[b + 3:]
        if len(body) >= 2:
            at = r.randrange(len(body) - 1)
            return body[:at] + struct.pack("!h", hostile) + body[at + 2:]
        return body
