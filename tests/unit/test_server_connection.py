"""The server's connection state machine, end to end over real loopback sockets.

A fake engine (defined here only) stands in for the executor so these tests
pin down protocol behaviour: startup and auth (trust, SCRAM with a
hand-written client, md5), simple and extended query, error-until-Sync,
portal suspension, COPY in/out, cancel, limits and shutdown.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import os
import shutil
import ssl
import struct
import subprocess
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.executor.api import CopyOut, Prepared, Result, ResultColumn
from splitstream.protocol import auth, messages
from splitstream.protocol.errors import Notice, PgError
from splitstream.server.config import ServerConfig, is_loopback
from splitstream.server.listener import Server
from splitstream.server import session_settings

INT4, TEXT, TIMESTAMPTZ = 23, 25, 1184

pytestmark = pytest.mark.filterwarnings("ignore:Overriding the \"event_loop_policy\" fixture:DeprecationWarning")


# ---------------------------------------------------------------- fake engine

@dataclass
class FakeRole:
    name: str
    password: str | None = None
    superuser: bool = True
    login: bool = True


class FakeCopyIn:
    format = 0
    ncols = 2

    def __init__(self, engine: "FakeEngine") -> None:
        self.engine = engine
        self.data = b""
        self.aborted: str | None = None

    def feed(self, data: bytes) -> None:
        if b"BAD" in data:
            raise PgError("22P02", 'invalid input syntax for type integer: "BAD"')
        self.data += data

    starts_inline = False

    def feed_light(self, payloads: list[bytes]) -> bool:
        """Taken on the loop thread unless a payload is bad (then fed, and refused, by a step)."""
        if any(b"BAD" in p for p in payloads):
            return False
        self.data += b"".join(payloads)
        return True

    def feed_spans(self, buf: bytearray, spans: list[tuple[int, int]]) -> bool:
        """As feed_light, for payloads where they lie in the read buffer."""
        return self.feed_light([bytes(buf[s:e]) for s, e in spans])

    def finish(self) -> str:
        self.engine.copied.append(self.data)
        return "COPY %d" % self.data.count(b"\n")

    def abort(self, reason: str) -> None:
        self.aborted = reason
        self.engine.aborted.append(reason)


def _int_result(values: list[int | None], name: str = "n") -> Result:
    arr = np.array([0 if v is None else v for v in values], dtype=np.int32)
    nulls = np.array([v is None for v in values])
    return Result(tag=f"SELECT {len(values)}", columns=[ResultColumn(name, INT4)],
                  batch=Batch([Col(arr, nulls, INT4)], len(values)))


class FakeSession:
    """Understands a handful of commands, enough to drive every protocol path."""

    def __init__(self, engine: "FakeEngine", info: Any) -> None:
        self.engine = engine
        self.info = info
        self.status = "I"
        self.closed = False
        self.sql_prepared: dict[str, Prepared] = {}     # (no SQL PREPARE here)
        self.protocol_statements: Any = None            # set by the server

    @property
    def txn_status(self) -> str:
        return self.status

    def split(self, sql: str) -> list[str]:
        return [s.strip() for s in sql.split(";") if s.strip()]

    def prepare(self, sql: str, param_oids: list[int]) -> Prepared:
        s = sql.strip().lower()
        if s.startswith("bogus"):
            raise PgError("42601", 'syntax error at or near "bogus"', position=1)
        nparams = s.count("$")
        oids = list(param_oids) + [INT4] * (nparams - len(param_oids))
        cols = None
        if s.startswith("select") or s.startswith("gen"):
            cols = [ResultColumn("n", INT4)]
        if s.startswith("now"):
            cols = [ResultColumn("t", TIMESTAMPTZ)]
        return Prepared(sql, oids, cols)

    def current_plan(self, prepared: Prepared) -> Prepared:
        return prepared

    def execute_deferred(self, prepared: Prepared, params: list[Any]) -> Result:
        return self.execute(prepared, params)

    def sync(self) -> dict[str, str]:
        """Commit point of an extended-protocol batch (nothing to commit here)."""
        return {}

    @property
    def sync_pending(self) -> bool:
        return True

    def reserve_inline_write(self, prepared: Prepared) -> bool:
        return False

    def lean_submit(self, prepared: Prepared, params: list[Any], done: Any) -> bool:
        return False            # never lean: every insert takes the ordinary path here

    def lean_submit_sql(self, sql: str, done: Any) -> bool:
        return False

    def result_version(self, prepared: Prepared) -> object:
        return None

    def declared_cursor(self, name: str) -> Result | None:
        return None

    def execute(self, prepared: Prepared, params: list[Any]) -> Result:
        s = prepared.sql.strip().lower()
        if s.startswith("select $"):
            return _int_result([None if any(p is None for p in params) else sum(int(p) for p in params)])
        if s.startswith("gen"):
            return _int_result(list(range(int(s.split()[1]))))
        return self.execute_sql(prepared.sql)

    def execute_sql(self, sql: str) -> Result:
        s = sql.strip().lower()
        self.engine.log.append(s)
        if self.status == "E" and s not in ("rollback", "commit"):
            raise PgError("25P02", "current transaction is aborted, commands ignored until end of transaction block")
        if s.startswith("select "):
            return _int_result([int(x) if x != "null" else None for x in s[7:].split(",")])
        if s.startswith("gen "):
            return _int_result(list(range(int(s.split()[1]))))
        if s == "now":

            v = np.array([np.datetime64("2024-01-02T03:04:05", "us")])
            return Result(tag="SELECT 1", columns=[ResultColumn("t", TIMESTAMPTZ)], batch=Batch([Col(v, None, TIMESTAMPTZ)], 1))
        if s == "error":
            raise PgError("42601", 'syntax error at or near "error"', position=1)
        if s == "boom":
            raise RuntimeError("secret internal detail")
        if s == "begin":
            self.status = "T"
            return Result(tag="BEGIN")
        if s in ("commit", "rollback"):
            self.status = "I"
            return Result(tag="ROLLBACK" if s == "rollback" else "COMMIT")
        if s == "slow":
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if self.info.cancel_event.is_set():
                    raise PgError("57014", "canceling statement due to user request")
                if self.info.deadline is not None and time.monotonic() > self.info.deadline:
                    raise PgError("57014", "canceling statement due to statement timeout")
                time.sleep(0.005)
            return Result(tag="SLOW")
        if s.startswith("set "):
            _, name, value = s.split(maxsplit=2)
            self.info.settings[name] = value
            return Result(tag="SET", parameter_status={name: value} if name in messages.REPORTED_PARAMETERS else {})
        if s == "notice":
            return Result(tag="DO", notices=[Notice("hello there")])
        if s == "copy in":
            c = FakeCopyIn(self.engine)
            self.engine.copies.append(c)
            return Result(copy_in=c)
        if s == "copy out":
            n = [0]

            def chunks():
                for i in range(3):
                    n[0] += 1
                    yield f"{i}\tx\n".encode()

            return Result(copy_out=CopyOut(0, 2, chunks(), lambda: f"COPY {n[0]}"))
        if s == "whoami":
            return Result(tag="SELECT 1", columns=[ResultColumn("u", TEXT)],
                          batch=Batch([Col(np.array([self.info.user + "@" + self.info.database], dtype=object), None, TEXT)], 1))
        return Result(tag=s.split()[0].upper())

    def on_error(self) -> dict[str, str]:
        if self.status == "T":
            self.status = "E"
        return {}

    def begin_query_block(self) -> None:
        pass

    def end_query_block(self) -> dict[str, str]:
        return {}

    def close(self) -> None:
        self.closed = True
        self.engine.closed_sessions += 1


class FakeEngine:
    def __init__(self) -> None:
        self.roles = {"postgres": FakeRole("postgres"),
                      "alice": FakeRole("alice", auth.make_scram_verifier("wonderland"), superuser=False),
                      "bob": FakeRole("bob", auth.make_md5_hash("builder", "bob")),
                      "nologin": FakeRole("nologin", auth.make_scram_verifier("x"), login=False)}
        self.databases = {"postgres", "other"}
        self.sessions: list[FakeSession] = []
        self.log: list[str] = []
        self.copies: list[FakeCopyIn] = []
        self.copied: list[bytes] = []
        self.aborted: list[str] = []
        self.closed_sessions = 0
        self.closed = False

    def open(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True

    def new_session(self, info: Any) -> FakeSession:
        s = FakeSession(self, info)
        self.sessions.append(s)
        return s

    def lookup_role(self, name: str) -> FakeRole | None:
        return self.roles.get(name)

    def database_exists(self, name: str) -> bool:
        return name in self.databases

    def role_memberships(self, name: str) -> frozenset[str]:
        return frozenset({name}) if name in self.roles else frozenset()

    def check_connect(self, user: str, database: str) -> None:
        pass                      # every role holds CONNECT here


# ---------------------------------------------------------------- raw client

def _msg(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("!i", len(body) + 4) + body


def _cstr(s: str) -> bytes:
    return s.encode() + b"\0"


def err_fields(body: bytes) -> dict[str, str]:
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode()
    return out


class Client:
    """A deliberately literal PostgreSQL v3 client for protocol tests."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.r, self.w = reader, writer
        self.params: dict[str, str] = {}
        self.key: tuple[int, int] | None = None

    @classmethod
    async def open(cls, port: int) -> "Client":
        r, w = await asyncio.open_connection("127.0.0.1", port)
        return cls(r, w)

    def raw(self, data: bytes) -> None:
        self.w.write(data)

    def startup(self, user: str = "alice", database: str | None = "postgres", version: int = 196608, **extra: str) -> None:
        body = struct.pack("!i", version) + _cstr("user") + _cstr(user)
        if database is not None:
            body += _cstr("database") + _cstr(database)
        for k, v in extra.items():
            body += _cstr(k) + _cstr(v)
        body += b"\0"
        self.raw(struct.pack("!i", len(body) + 4) + body)

    async def recv(self, timeout: float = 5.0) -> tuple[str, bytes]:
        head = await asyncio.wait_for(self.r.readexactly(5), timeout)
        kind, ln = struct.unpack("!ci", head)
        body = await asyncio.wait_for(self.r.readexactly(ln - 4), timeout)
        return kind.decode(), body

    async def _recv_fast(self) -> tuple[str, bytes]:
        head = await self.r.readexactly(5)
        kind, ln = struct.unpack("!ci", head)
        return kind.decode(), await self.r.readexactly(ln - 4)

    async def until(self, kind: str = "Z", timeout: float = 10.0) -> list[tuple[str, bytes]]:
        async with asyncio.timeout(timeout):
            return await self._until(kind)

    async def _until(self, kind: str) -> list[tuple[str, bytes]]:
        out = []
        while True:
            m = await self._recv_fast()
            out.append(m)
            if m[0] == "S":
                k, v, _ = m[1].split(b"\0")
                self.params[k.decode()] = v.decode()
            if m[0] == "K":
                self.key = struct.unpack("!ii", m[1])
            if m[0] == kind:
                return out

    async def login(self, user: str = "alice", password: str | None = None, database: str = "postgres",
                    **extra: str) -> list[tuple[str, bytes]]:
        """Start up and authenticate; returns the messages up to (and incl.) ReadyForQuery or the error."""
        self.startup(user, database, **extra)
        msgs: list[tuple[str, bytes]] = []
        while True:
            kind, body = await self.recv()
            msgs.append((kind, body))
            if kind == "E":
                return msgs
            if kind == "R":
                code = struct.unpack_from("!i", body)[0]
                if code == 10:
                    await self._scram(user, password or "", msgs)
                elif code == 5:
                    salt = body[4:8]
                    inner = hashlib.md5((password or "").encode() + user.encode()).hexdigest()
                    resp = "md5" + hashlib.md5(inner.encode() + salt).hexdigest()
                    self.raw(_msg(b"p", _cstr(resp)))
                elif code == 0:
                    msgs += await self.until("Z")
                    return msgs

    async def _scram(self, user: str, password: str, msgs: list) -> None:
        cnonce = base64.b64encode(os.urandom(18)).decode()
        first_bare = f"n=,r={cnonce}"
        first = ("n,," + first_bare).encode()
        self.raw(_msg(b"p", _cstr("SCRAM-SHA-256") + struct.pack("!i", len(first)) + first))
        kind, body = await self.recv()
        msgs.append((kind, body))
        if kind == "E":
            raise AssertionError(err_fields(body))
        assert struct.unpack_from("!i", body)[0] == 11
        server_first = body[4:].decode()
        attrs = dict(a.split("=", 1) for a in server_first.split(","))
        salt = base64.b64decode(attrs["s"])
        salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
        stored_key = hashlib.sha256(client_key).digest()
        without_proof = f"c={base64.b64encode(b'n,,').decode()},r={attrs['r']}"
        auth_msg = f"{first_bare},{server_first},{without_proof}".encode()
        sig = hmac.new(stored_key, auth_msg, hashlib.sha256).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, sig))
        self.raw(_msg(b"p", f"{without_proof},p={base64.b64encode(proof).decode()}".encode()))
        kind, body = await self.recv()
        if kind == "E":
            msgs.append((kind, body))
            # let login() see the error next
            self._pending_error = (kind, body)
            raise _AuthFailed(err_fields(body))
        assert struct.unpack_from("!i", body)[0] == 12
        server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
        expect = base64.b64encode(hmac.new(server_key, auth_msg, hashlib.sha256).digest()).decode()
        assert body[4:].decode() == "v=" + expect, "server signature must verify"

    # -- message builders
    def query(self, sql: str) -> None:
        self.raw(_msg(b"Q", _cstr(sql)))

    def parse(self, sql: str, name: str = "", oids: tuple[int, ...] = ()) -> None:
        self.raw(_msg(b"P", _cstr(name) + _cstr(sql) + struct.pack("!h", len(oids)) + b"".join(struct.pack("!I", o) for o in oids)))

    def bind(self, params: list[bytes | None] = (), portal: str = "", stmt: str = "",
             pfmts: tuple[int, ...] = (), rfmts: tuple[int, ...] = ()) -> None:
        body = _cstr(portal) + _cstr(stmt) + struct.pack("!h", len(pfmts)) + b"".join(struct.pack("!h", f) for f in pfmts)
        body += struct.pack("!h", len(params))
        for p in params:
            body += struct.pack("!i", -1) if p is None else struct.pack("!i", len(p)) + p
        body += struct.pack("!h", len(rfmts)) + b"".join(struct.pack("!h", f) for f in rfmts)
        self.raw(_msg(b"B", body))

    def describe(self, kind: str, name: str = "") -> None:
        self.raw(_msg(b"D", kind.encode() + _cstr(name)))

    def execute(self, portal: str = "", max_rows: int = 0) -> None:
        self.raw(_msg(b"E", _cstr(portal) + struct.pack("!i", max_rows)))

    def close_(self, kind: str, name: str = "") -> None:
        self.raw(_msg(b"C", kind.encode() + _cstr(name)))

    def sync(self) -> None:
        self.raw(_msg(b"S", b""))

    def flush(self) -> None:
        self.raw(_msg(b"H", b""))

    async def close(self) -> None:
        try:
            self.raw(_msg(b"X", b""))
            self.w.close()
            await self.w.wait_closed()
        except (ConnectionError, OSError):
            pass


class _AuthFailed(Exception):
    pass


def kinds(msgs: list[tuple[str, bytes]]) -> str:
    return "".join(k for k, _ in msgs)


def rows(msgs: list[tuple[str, bytes]]) -> list[list[bytes | None]]:
    out = []
    for k, body in msgs:
        if k != "D":
            continue
        n = struct.unpack_from("!h", body)[0]
        pos, row = 2, []
        for _ in range(n):
            ln = struct.unpack_from("!i", body, pos)[0]
            pos += 4
            if ln < 0:
                row.append(None)
            else:
                row.append(body[pos:pos + ln])
                pos += ln
        out.append(row)
    return out


def tags(msgs: list[tuple[str, bytes]]) -> list[str]:
    return [b.rstrip(b"\0").decode() for k, b in msgs if k == "C"]


def errors(msgs: list[tuple[str, bytes]]) -> list[dict[str, str]]:
    return [err_fields(b) for k, b in msgs if k == "E"]


# ---------------------------------------------------------------- fixtures

def _policies() -> list[Any]:
    out: list[Any] = [pytest.param(asyncio.DefaultEventLoopPolicy(), id="asyncio")]
    try:
        import uvloop

        out.append(pytest.param(uvloop.EventLoopPolicy(), id="uvloop"))
    except ImportError:  # pragma: no cover
        pass
    return out


@pytest.fixture(params=_policies())
def event_loop_policy(request):
    """Run every test on both loops: the server installs uvloop in production."""
    return request.param


async def _start(**cfg: Any) -> tuple[Server, FakeEngine]:
    engine = FakeEngine()
    config = ServerConfig(host="127.0.0.1", port=0, shutdown_grace=0.5, **cfg)
    server = Server(config, engine)
    await server.start()
    return server, engine


@pytest.fixture
async def trust():
    server, engine = await _start()
    yield server, engine
    await server.shutdown()
    server.pool.shutdown(wait=False)


@pytest.fixture
async def secured():
    server, engine = await _start(password="sekrit")
    yield server, engine
    await server.shutdown()
    server.pool.shutdown(wait=False)


async def _client(server: Server, **kw: Any) -> Client:
    c = await Client.open(server.port)
    msgs = await c.login(**kw)
    assert msgs[-1][0] == "Z", errors(msgs)
    return c


# ---------------------------------------------------------------- startup / auth

async def test_trust_startup_reports_parameters(trust):
    server, engine = trust
    c = await Client.open(server.port)
    msgs = await c.login(user="whoever", database="nosuchdb", application_name="app1")
    assert msgs[0] == ("R", struct.pack("!i", 0))
    assert msgs[-1] == ("Z", b"I")
    assert c.params["server_version"] == "15.0"
    assert c.params["client_encoding"] == "UTF8"
    assert c.params["DateStyle"] == "ISO, MDY"
    assert c.params["TimeZone"] == "UTC"
    assert c.params["integer_datetimes"] == "on"
    assert c.params["standard_conforming_strings"] == "on"
    assert c.params["application_name"] == "app1"
    assert c.params["session_authorization"] == "whoever"
    assert c.key is not None and c.key[0] > 0
    c.query("whoami")
    assert rows(await c.until()) == [[b"whoever@postgres"]]  # unknown db mapped to postgres in trust mode
    await c.close()


async def test_startup_options_and_client_encoding(trust):
    server, _ = trust
    c = await Client.open(server.port)
    msgs = await c.login(client_encoding="utf-8", options="-c statement_timeout=5s --search_path=x", TimeZone="Europe/Berlin")
    assert msgs[-1][0] == "Z"
    assert c.params["client_encoding"] == "UTF8"
    assert c.params["TimeZone"] == "Europe/Berlin"
    c2 = await Client.open(server.port)
    msgs = await c2.login(client_encoding="LATIN1")
    assert errors(msgs)[0]["C"] == "22023" and errors(msgs)[0]["S"] == "FATAL"
    await c.close()


async def test_ssl_and_gss_requests_refused_without_cert(trust):
    server, _ = trust
    c = await Client.open(server.port)
    c.raw(struct.pack("!ii", 8, 80877104))
    assert await c.r.readexactly(1) == b"N"
    c.raw(struct.pack("!ii", 8, 80877103))
    assert await c.r.readexactly(1) == b"N"
    msgs = await c.login()
    assert msgs[-1][0] == "Z"
    await c.close()


async def test_unsupported_protocol_version(trust):
    server, _ = trust
    c = await Client.open(server.port)
    c.startup(version=2 << 16)
    k, body = await c.recv()
    assert k == "E" and err_fields(body)["C"] == "0A000"
    assert await c.r.read() == b""


async def test_garbage_startup_closes(trust):
    server, _ = trust
    c = await Client.open(server.port)
    c.raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    data = await asyncio.wait_for(c.r.read(), 5)
    assert data == b"" or data[:1] == b"E"


async def test_newer_minor_version_negotiates(trust):
    server, _ = trust
    c = await Client.open(server.port)
    c.startup(version=(3 << 16) | 2, **{"_pq_.ext": "1"})
    k, body = await c.recv()
    assert k == "v"
    assert struct.unpack_from("!ii", body) == (0, 1)
    assert (await c.until())[-1] == ("Z", b"I")
    await c.close()


async def test_scram_login(secured):
    server, _ = secured
    c = await Client.open(server.port)
    msgs = await c.login(user="alice", password="wonderland")
    assert msgs[0][0] == "R" and struct.unpack_from("!i", msgs[0][1])[0] == 10
    assert b"SCRAM-SHA-256" in msgs[0][1]
    assert msgs[-1] == ("Z", b"I")
    assert c.params["is_superuser"] == "off"
    await c.close()


async def test_scram_superuser_uses_configured_password(secured):
    server, _ = secured
    c = await Client.open(server.port)
    msgs = await c.login(user="postgres", password="sekrit")
    assert msgs[-1] == ("Z", b"I")
    await c.close()


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("ghost", "x"), ("postgres", "nope")])
async def test_scram_failures(secured, user, password):
    server, _ = secured
    c = await Client.open(server.port)
    with pytest.raises(_AuthFailed) as ei:
        await c.login(user=user, password=password)
    f = ei.value.args[0]
    assert f["C"] == "28P01" and f["S"] == "FATAL"
    assert f["M"] == f'password authentication failed for user "{user}"'


async def test_md5_login_and_failure(secured):
    server, _ = secured
    c = await Client.open(server.port)
    msgs = await c.login(user="bob", password="builder")
    assert struct.unpack_from("!i", msgs[0][1])[0] == 5
    assert msgs[-1] == ("Z", b"I")
    c2 = await Client.open(server.port)
    msgs = await c2.login(user="bob", password="bad")
    assert errors(msgs)[0]["C"] == "28P01"


async def test_unknown_database_and_nologin(secured):
    server, _ = secured
    c = await Client.open(server.port)
    msgs = await c.login(user="alice", password="wonderland", database="nope")
    assert errors(msgs)[0]["C"] == "3D000"
    assert errors(msgs)[0]["M"] == 'database "nope" does not exist'
    c = await Client.open(server.port)
    msgs = await c.login(user="nologin", password="x")
    assert errors(msgs)[0]["C"] == "28000"


async def test_max_connections(trust):
    server, _ = trust
    server.config.max_connections = 2
    a = await _client(server)
    b = await _client(server)
    c = await Client.open(server.port)
    msgs = await c.login()
    e = errors(msgs)[0]
    assert e["C"] == "53300" and e["M"] == "sorry, too many clients already"
    await a.close()
    await asyncio.sleep(0.1)
    d = await _client(server)  # a slot was freed
    await b.close()
    await d.close()


# ---------------------------------------------------------------- simple query

async def test_simple_query_rows_and_errors(trust):
    server, engine = trust
    c = await _client(server)
    c.query("select 1,null,3")
    msgs = await c.until()
    assert kinds(msgs) == "TDDDCZ"
    assert rows(msgs) == [[b"1"], [None], [b"3"]]
    assert tags(msgs) == ["SELECT 3"]
    c.query("   ")
    assert kinds(await c.until()) == "IZ"
    c.query("select 1; error; select 2")
    msgs = await c.until()
    assert kinds(msgs) == "TDCEZ"
    assert errors(msgs)[0]["C"] == "42601" and errors(msgs)[0]["P"] == "1"
    assert "select 2" not in engine.log
    c.query("boom")
    msgs = await c.until()
    e = errors(msgs)[0]
    assert e["C"] == "XX000" and "secret" not in e["M"]
    c.query("notice; set timezone Asia/Tokyo")
    msgs = await c.until()
    assert kinds(msgs) == "NCSCZ"
    assert c.params["TimeZone"] == "asia/tokyo"
    await c.close()


async def test_transaction_status_and_invalid_utf8(trust):
    server, _ = trust
    c = await _client(server)
    c.query("begin")
    assert (await c.until())[-1] == ("Z", b"T")
    c.query("error")
    assert (await c.until())[-1] == ("Z", b"E")
    c.query("rollback")
    assert (await c.until())[-1] == ("Z", b"I")
    c.raw(_msg(b"Q", b"select \xff\xfe\0"))
    msgs = await c.until()
    assert errors(msgs)[0]["C"] == "22021"
    await c.close()


async def test_timestamptz_uses_session_timezone(trust):
    server, _ = trust
    c = await _client(server)
    c.query("now")
    assert rows(await c.until()) == [[b"2024-01-02 03:04:05+00"]]
    c.query("set timezone Asia/Tokyo")
    await c.until()
    c.query("now")
    assert rows(await c.until()) == [[b"2024-01-02 12:04:05+09"]]
    await c.close()


async def test_big_result_is_streamed(trust):
    server, _ = trust
    c = await _client(server)
    c.query("gen 100000")
    msgs = await c.until()
    assert len(rows(msgs)) == 100000 and tags(msgs) == ["SELECT 100000"]
    await c.close()


# ---------------------------------------------------------------- extended query

async def test_extended_roundtrip(trust):
    server, _ = trust
    c = await _client(server)
    c.parse("select $1 + $2", "s1")
    c.describe("S", "s1")
    c.bind([b"2", struct.pack("!i", 40)], stmt="s1", pfmts=(0, 1))
    c.describe("P")
    c.execute()
    c.sync()
    msgs = await c.until()
    assert kinds(msgs) == "1tT2TDCZ"
    assert struct.unpack_from("!hII", msgs[1][1]) == (2, INT4, INT4)
    assert rows(msgs) == [[b"42"]]
    assert tags(msgs) == ["SELECT 1"]
    # binary result format
    c.bind([b"1", b"2"], stmt="s1", rfmts=(1,))
    c.describe("P")
    c.execute()
    c.sync()
    msgs = await c.until()
    assert kinds(msgs) == "2TDCZ"
    assert rows(msgs) == [[struct.pack("!i", 3)]]
    assert msgs[1][1][-2:] == b"\0\1"  # format code in RowDescription
    # NULL parameter, close, reuse
    c.bind([None, b"1"], stmt="s1")
    c.execute()
    c.close_("S", "s1")
    c.sync()
    msgs = await c.until()
    assert kinds(msgs) == "2DC3Z" and rows(msgs) == [[None]]
    await c.close()


async def test_unnamed_statement_replaced_and_named_duplicate(trust):
    server, _ = trust
    c = await _client(server)
    c.parse("select $1")
    c.parse("select $1 + $2")
    c.parse("select $1", "dup")
    c.parse("select $1", "dup")
    c.sync()
    msgs = await c.until()
    assert kinds(msgs) == "111EZ"
    assert errors(msgs)[0]["C"] == "42P05"
    c.bind([b"1"])
    c.sync()
    msgs = await c.until()
    e = errors(msgs)[0]
    assert e["C"] == "08P01"
    assert e["M"] == 'bind message supplies 1 parameters, but prepared statement "" requires 2'
    await c.close()


async def test_error_discards_until_sync(trust):
    server, engine = trust
    c = await _client(server)
    c.parse("bogus")
    c.bind()
    c.execute()
    c.parse("select 1", "later")   # ignored too
    c.query("select 7")            # PostgreSQL ignores Query while skipping to Sync
    c.sync()
    msgs = await c.until()
    assert kinds(msgs) == "EZ"
    c.describe("S", "later")
    c.sync()
    msgs = await c.until()
    assert errors(msgs)[0]["C"] == "26000"
    assert "select 7" not in engine.log
    c.execute("nope")
    c.sync()
    assert errors(await c.until())[0]["C"] == "34000"
    await c.close()


async def test_portal_suspension(trust):
    server, _ = trust
    c = await _client(server)
    c.parse("gen 5")
    c.bind()
    c.execute(max_rows=2)
    c.execute(max_rows=2)
    c.execute(max_rows=2)
    c.sync()
    msgs = await c.until()
    assert kinds(msgs) == "12DDsDDsDCZ"
    assert [r[0] for r in rows(msgs)] == [b"0", b"1", b"2", b"3", b"4"]
    assert tags(msgs) == ["SELECT 1"]  # PostgreSQL: rows of the last Execute
    # portal is gone after Sync outside a transaction block
    c.execute()
    c.sync()
    assert errors(await c.until())[0]["C"] == "34000"
    # named portal inside a transaction survives Sync
    c.query("begin")
    await c.until()
    c.bind(portal="p1", stmt="")
    c.execute("p1", 3)
    c.sync()
    msgs = await c.until()
    assert kinds(msgs) == "2DDDsZ" and msgs[-1] == ("Z", b"T")
    c.execute("p1", 0)
    c.sync()
    msgs = await c.until()
    assert kinds(msgs) == "DDCZ" and tags(msgs) == ["SELECT 2"]
    await c.close()


async def test_empty_prepared_statement(trust):
    server, _ = trust
    c = await _client(server)
    c.parse("")
    c.bind()
    c.describe("P")
    c.execute()
    c.sync()
    assert kinds(await c.until()) == "12nIZ"
    await c.close()


# ---------------------------------------------------------------- COPY

async def test_copy_in_simple(trust):
    server, engine = trust
    c = await _client(server)
    c.query("copy in; select 9")
    k, body = await c.recv()
    assert k == "G" and body == struct.pack("!bhhh", 0, 2, 0, 0)
    c.raw(_msg(b"d", b"1\ta\n2\t"))
    c.raw(_msg(b"d", b"b\n"))
    c.raw(_msg(b"c", b""))
    msgs = await c.until()
    assert kinds(msgs) == "CTDCZ" and tags(msgs) == ["COPY 2", "SELECT 1"]
    assert engine.copied == [b"1\ta\n2\tb\n"]
    await c.close()


async def test_copy_fail_and_feed_error(trust):
    server, engine = trust
    c = await _client(server)
    c.query("copy in")
    assert (await c.recv())[0] == "G"
    c.raw(_msg(b"d", b"1\ta\n"))
    c.raw(_msg(b"f", _cstr("client gave up")))
    msgs = await c.until()
    e = errors(msgs)[0]
    assert e["C"] == "57014" and e["M"] == "COPY from stdin failed: client gave up"
    assert engine.aborted == ["client gave up"]
    # an error from feed(): reported at once; the client's remaining copy messages are ignored
    c.query("copy in")
    assert (await c.recv())[0] == "G"
    c.raw(_msg(b"d", b"BAD\n"))
    msgs = await c.until()
    assert kinds(msgs) == "EZ" and errors(msgs)[0]["C"] == "22P02"
    c.raw(_msg(b"d", b"more\n") + _msg(b"c", b""))
    c.query("select 5")
    msgs = await c.until()
    assert kinds(msgs) == "TDCZ"
    assert len(engine.aborted) == 2
    await c.close()


def _copy_rows(n: int) -> bytes:
    return b"".join(b"%d\tv%d\n" % (i, i) for i in range(n))


async def test_copy_in_any_read_boundaries(trust):
    """CopyData of 100 kB and 8 kB messages reach the sink whole and in order
    however the client's writes cut them (the first bytes one by one, so
    headers split across reads), with CopyDone and the next query in the
    same write as the data's tail."""
    server, engine = trust
    c = await _client(server)
    c.query("copy in")
    assert (await c.recv())[0] == "G"
    data = _copy_rows(30000)
    stream = b"".join(_msg(b"d", data[i:i + 100_000]) for i in range(0, 200_000, 100_000)) \
        + b"".join(_msg(b"d", data[i:i + 8192]) for i in range(200_000, len(data), 8192)) \
        + _msg(b"c", b"") + _msg(b"Q", _cstr("select 9"))
    pos = 0
    for size in [1] * 12 + [3, 7, 1000, 65536, 5, 100_003, 1, 131072]:
        c.raw(stream[pos:pos + size])
        await c.w.drain()
        await asyncio.sleep(0.001)
        pos += size
    c.raw(stream[pos:])
    msgs = await c.until()
    msgs += await c.until()
    assert kinds(msgs) == "CZTDCZ" and tags(msgs) == ["COPY 30000", "SELECT 1"]
    assert engine.copied == [data]
    await c.close()


async def test_copy_terminate_mid_run(trust):
    """Terminate in the middle of a COPY's data is, as in PostgreSQL's
    CopyGetData, an unexpected message: 08P01, the COPY aborted with nothing
    copied; the connection goes on."""
    server, engine = trust
    c = await _client(server)
    c.query("copy in")
    assert (await c.recv())[0] == "G"
    c.raw(_msg(b"d", _copy_rows(20000)) + _msg(b"d", b"1\ta\n") + _msg(b"X", b""))
    msgs = await c.until()
    assert kinds(msgs) == "EZ"
    e = errors(msgs)[0]
    assert e["C"] == "08P01" and e["M"] == "unexpected message type 0x58 during COPY from stdin"
    assert engine.aborted and not engine.copied
    c.query("select 5")
    assert kinds(await c.until()) == "TDCZ"
    await c.close()


async def test_copy_in_extended_ignores_sync_inside(trust):
    server, engine = trust
    c = await _client(server)
    c.parse("copy in")
    c.bind()
    c.execute()
    c.sync()
    msgs = await c.until("G")
    assert kinds(msgs) == "12G"
    c.raw(_msg(b"d", b"x\n") + _msg(b"c", b""))
    c.sync()
    msgs = await c.until()
    assert kinds(msgs) == "CZ" and tags(msgs) == ["COPY 1"]
    await c.close()


async def test_copy_out(trust):
    server, _ = trust
    c = await _client(server)
    c.query("copy out")
    msgs = await c.until()
    assert kinds(msgs) == "HdddcCZ"
    assert tags(msgs) == ["COPY 3"]
    assert msgs[1][1] == b"0\tx\n"
    await c.close()


async def test_client_vanishing_mid_copy_aborts_and_closes_session(trust):
    server, engine = trust
    c = await _client(server)
    c.query("copy in")
    assert (await c.recv())[0] == "G"
    c.raw(_msg(b"d", b"1\ta\n"))
    await asyncio.sleep(0.05)
    c.w.transport.abort()
    for _ in range(100):
        if engine.closed_sessions:
            break
        await asyncio.sleep(0.02)
    assert engine.closed_sessions == 1
    assert engine.aborted and not engine.copied
    assert server.session_count() == 0


# ---------------------------------------------------------------- cancel / timeout / shutdown

async def test_cancel_request(trust):
    server, _ = trust
    c = await _client(server)
    c.query("slow")
    await asyncio.sleep(0.1)
    # a wrong key does nothing
    bad = await Client.open(server.port)
    bad.raw(struct.pack("!iiii", 16, 80877102, c.key[0], c.key[1] ^ 1))
    assert await asyncio.wait_for(bad.r.read(), 5) == b""
    await asyncio.sleep(0.1)
    x = await Client.open(server.port)
    x.raw(struct.pack("!iiii", 16, 80877102, *c.key))
    assert await asyncio.wait_for(x.r.read(), 5) == b""
    msgs = await c.until()
    assert errors(msgs)[0]["C"] == "57014"
    assert errors(msgs)[0]["M"] == "canceling statement due to user request"
    c.query("select 1")  # next statement is not affected by the old cancel
    assert kinds(await c.until()) == "TDCZ"
    await c.close()


async def test_statement_timeout(trust):
    server, _ = trust
    c = await _client(server)
    c.query("set statement_timeout 50ms")
    await c.until()
    t0 = time.monotonic()
    c.query("slow")
    msgs = await c.until()
    assert errors(msgs)[0]["M"] == "canceling statement due to statement timeout"
    assert time.monotonic() - t0 < 3
    await c.close()


async def test_other_clients_not_blocked_by_slow_query(trust):
    server, _ = trust
    a = await _client(server)
    b = await _client(server)
    a.query("slow")
    await asyncio.sleep(0.05)
    t0 = time.monotonic()
    b.query("select 1")
    assert kinds(await b.until()) == "TDCZ"
    assert time.monotonic() - t0 < 1
    server.cancel_request(*a.key)
    await a.until()
    await a.close()
    await b.close()


async def test_shutdown_terminates_idle_sessions():
    server, engine = await _start()
    c = await _client(server)
    await server.shutdown()
    await server.close_engine()
    msgs = await c.until("E")
    e = errors(msgs)[0]
    assert e["C"] == "57P01" and e["S"] == "FATAL"
    assert e["M"] == "terminating connection due to administrator command"
    assert engine.closed and engine.closed_sessions == 1


async def test_terminate_and_pipelined_queries(trust):
    server, engine = trust
    c = await _client(server)
    for i in range(50):
        c.query(f"select {i}")
    msgs = []
    for _ in range(50):
        msgs += await c.until()
    assert [r[0] for r in rows(msgs)] == [str(i).encode() for i in range(50)]
    await c.close()
    for _ in range(50):
        if engine.closed_sessions:
            break
        await asyncio.sleep(0.02)
    assert engine.closed_sessions == 1


# ---------------------------------------------------------------- TLS

@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed")
async def test_tls_upgrade(tmp_path):
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost"], check=True, capture_output=True)
    server, engine = await _start(tls_cert=str(cert), tls_key=str(key))
    try:
        c = await Client.open(server.port)
        c.raw(struct.pack("!ii", 8, 80877103))
        assert await c.r.readexactly(1) == b"S"
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        await c.w.start_tls(ctx)
        msgs = await c.login()
        assert msgs[-1] == ("Z", b"I")
        c.query("select 1")
        assert rows(await c.until()) == [[b"1"]]
        # a COPY through TLS: 128 kB messages, decrypted into the reader's buffer
        c.query("copy in")
        assert (await c.recv())[0] == "G"
        data = _copy_rows(40000)
        c.raw(b"".join(_msg(b"d", data[i:i + 131072]) for i in range(0, len(data), 131072)) + _msg(b"c", b""))
        msgs = await c.until()
        assert kinds(msgs) == "CZ" and tags(msgs) == ["COPY 40000"]
        assert engine.copied == [data]
        await c.close()
    finally:
        await server.shutdown()
        server.pool.shutdown(wait=False)


# ---------------------------------------------------------------- pure helpers

def test_params_helpers():
    assert session_settings.timeout_seconds("0") == 0
    assert session_settings.timeout_seconds("1500") == 1.5
    assert session_settings.timeout_seconds("5s") == 5
    assert session_settings.timeout_seconds("2min") == 120
    assert session_settings.parse_options(r"-c a=b --c-d=e -c x=hello\ world") == {"a": "b", "c_d": "e", "x": "hello world"}
    s = session_settings.startup_settings({"user": "u", "DateStyle": "ISO", "application_name": "a"}, "u")
    assert s["datestyle"] == "ISO, MDY" and s["session_authorization"] == "u"
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")


def test_cli_refuses_public_address_without_password(monkeypatch, capsys):
    from splitstream.server.cli import parse_config

    monkeypatch.delenv("SPLITSTREAM_PASSWORD", raising=False)
    with pytest.raises(SystemExit) as ei:
        parse_config(["serve", "--host", "0.0.0.0"])
    assert ei.value.code == 2
    assert "password" in capsys.readouterr().err
    cfg, _ = parse_config(["--host", "0.0.0.0", "--password", "x", "--fsync", "off"])
    assert cfg.password == "x" and not cfg.fsync and cfg.port == 5433
    monkeypatch.setenv("SPLITSTREAM_PASSWORD", "envpw")
    cfg, _ = parse_config(["serve", "--host", "0.0.0.0"])
    assert cfg.password == "envpw"
