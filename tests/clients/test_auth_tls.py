"""Authentication (SCRAM-SHA-256, md5) and TLS with a self-signed certificate."""
from __future__ import annotations

import hashlib
import shutil
import subprocess

import asyncio

import asyncpg
import psycopg
import pytest

from .conftest import psql
from .test_bad_input import Raw, startup_packet

PASSWORD = "s3cret pass'word"


def dsn(server, user: str, password: str, **extra: str) -> str:
    parts = {"host": server.host, "port": str(server.port), "user": user, "dbname": "postgres",
             "password": password, "connect_timeout": "10", **extra}
    return " ".join(f"{k}='" + v.replace("\\", "\\\\").replace("'", "\\'") + "'" for k, v in parts.items())


def refused(server, user: str, password: str, database: str = "postgres", ssl=None) -> str:
    """Connect with asyncpg (which reports the FATAL's SQLSTATE) and return that SQLSTATE;
    also check libpq (psycopg) is refused with the same message."""
    async def attempt():
        try:
            c = await asyncpg.connect(host=server.host, port=server.port, user=user, password=password,
                                      database=database, ssl=ssl, timeout=10)
        except asyncpg.PostgresError as e:
            return e.sqlstate, e.args[0] if e.args else str(e)
        await c.close()
        return None, "connected"

    state, message = asyncio.run(attempt())
    with pytest.raises(psycopg.OperationalError) as ei:
        psycopg.connect(dsn(server, user, password, dbname=database, sslmode="require" if ssl else "prefer"))
    assert message in str(ei.value)
    return state


def auth_request_code(server, user: str) -> int:
    """What the server asks a client for: 10 = SASL (SCRAM), 5 = md5."""
    r = Raw(server)
    r.send(startup_packet(user=user))
    kind, body = r.read()
    r.close()
    assert kind == b"R"
    return int.from_bytes(body[:4], "big")


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    from tests.support.servers import SplitstreamServer

    server = SplitstreamServer(tmp_path_factory.mktemp("ss_auth") / "data", password=PASSWORD,
                               extra_args=["--fsync", "off"])
    server.start()
    try:
        with psycopg.connect(dsn(server, "postgres", PASSWORD), autocommit=True) as c:
            c.execute("CREATE ROLE scram_user LOGIN PASSWORD 'scram-pw'")
            c.execute("SET password_encryption = 'md5'")
            c.execute("CREATE ROLE md5_user LOGIN PASSWORD 'md5-pw'")
            stored = "md5" + hashlib.md5(b"md5-pw2" + b"md5_user2").hexdigest()
            c.execute(f"CREATE ROLE md5_user2 LOGIN PASSWORD '{stored}'")
        yield server
    finally:
        server.stop()


def test_scram_superuser(auth_server):
    assert auth_request_code(auth_server, "postgres") == 10
    with psycopg.connect(dsn(auth_server, "postgres", PASSWORD)) as c:
        assert c.execute("SELECT current_user").fetchone() == ("postgres",)
    assert refused(auth_server, "postgres", "wrong") == "28P01"


@pytest.mark.parametrize("user,password,code", [
    ("scram_user", "scram-pw", 10), ("md5_user", "md5-pw", 5), ("md5_user2", "md5-pw2", 5),
])
def test_roles_scram_and_md5(auth_server, user, password, code):
    assert auth_request_code(auth_server, user) == code
    with psycopg.connect(dsn(auth_server, user, password)) as c:
        assert c.execute("SELECT current_user").fetchone() == (user,)
    assert refused(auth_server, user, password + "x") == "28P01"

    async def via_asyncpg():
        c = await asyncpg.connect(host=auth_server.host, port=auth_server.port, user=user, password=password,
                                  database="postgres")
        try:
            return await c.fetchval("SELECT 1")
        finally:
            await c.close()

    assert asyncio.run(via_asyncpg()) == 1


def test_unknown_role_and_database(auth_server):
    assert refused(auth_server, "nobody", "x") == "28P01"
    assert refused(auth_server, "postgres", PASSWORD, database="nodb") == "3D000"


def test_psql_with_password(auth_server):
    out = psql(auth_server.host, auth_server.port, "SELECT 'ok' AS r", password=PASSWORD)
    assert " ok\n" in out
    bad = psql(auth_server.host, auth_server.port, "SELECT 1", password="wrong", check=False)
    assert "password authentication failed" in bad


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "server.crt", d / "server.key"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return cert, key


def test_tls_sslmode_require(ss_server_factory, tls_files):
    cert, key = tls_files
    server = ss_server_factory(password=PASSWORD, tls_cert=cert, tls_key=key, extra_args=["--fsync", "off"])
    with psycopg.connect(dsn(server, "postgres", PASSWORD, sslmode="require")) as c:
        assert c.pgconn.ssl_in_use
        assert c.execute("SELECT 'over tls'").fetchone() == ("over tls",)
        with c.cursor() as cur:  # a larger result and COPY through the TLS transport
            cur.execute("SELECT g, repeat('x', 100) FROM generate_series(1, 5000) g")
            assert len(cur.fetchall()) == 5000
    assert refused(server, "postgres", "wrong", ssl="require") == "28P01"
    # clients that do not ask for TLS are still served
    with psycopg.connect(dsn(server, "postgres", PASSWORD, sslmode="disable")) as c:
        assert not c.pgconn.ssl_in_use
    out = psql(server.host, server.port, r"\conninfo", password=PASSWORD)
    assert "SSL connection (protocol: TLSv1." in out

    async def via_asyncpg():
        c = await asyncpg.connect(host=server.host, port=server.port, user="postgres", password=PASSWORD,
                                  database="postgres", ssl="require")
        try:
            return await c.fetchval("SELECT $1::text", "tls")
        finally:
            await c.close()

    assert asyncio.run(via_asyncpg()) == "tls"


def test_sslmode_require_refused_without_tls(ss_server):
    with pytest.raises(psycopg.OperationalError) as ei:
        psycopg.connect(ss_server.dsn + " sslmode=require connect_timeout=10")
    assert "SSL" in str(ei.value)
