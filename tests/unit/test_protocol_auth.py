"""Tests for protocol.auth: SCRAM-SHA-256 against RFC 7677 and a real PostgreSQL 15."""
from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

import pytest

from splitstream.protocol.auth import (
    ScramExchange,
    check_cleartext,
    check_md5_response,
    make_md5_hash,
    make_scram_verifier,
    parse_scram_verifier,
    sasl_mechanisms,
)
from splitstream.protocol.errors import PgError
from tests.support.servers import Postgres15, postgres15_available


class ScramClient:
    """Client side of SCRAM-SHA-256 written from RFC 5802 section 3."""

    def __init__(self, password: str, nonce: str | None = None, user: str = "") -> None:
        self.password = password
        self.nonce = nonce or base64.b64encode(secrets.token_bytes(18)).decode()
        self.first_bare = f"n={user},r={self.nonce}"

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        sf = server_first.decode()
        attrs = dict(a.split("=", 1) for a in sf.split(","))
        assert attrs["r"].startswith(self.nonce)
        salt, it = base64.b64decode(attrs["s"]), int(attrs["i"])
        salted = hashlib.pbkdf2_hmac("sha256", self.password.encode(), salt, it)
        client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
        stored_key = hashlib.sha256(client_key).digest()
        without_proof = f"c=biws,r={attrs['r']}"
        auth = f"{self.first_bare},{sf},{without_proof}".encode()
        sig = hmac.new(stored_key, auth, hashlib.sha256).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, sig))
        server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
        self.expected_server = b"v=" + base64.b64encode(hmac.new(server_key, auth, hashlib.sha256).digest())
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()


def test_rfc7677_vector() -> None:
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    verifier = make_scram_verifier("pencil", salt=salt, iterations=4096)
    ex = ScramExchange(verifier, "user", server_nonce="%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
    sf = ex.handle_client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert sf == b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    final = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
             b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert ex.handle_client_final(final) == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


@pytest.mark.parametrize("stored_plain", [True, False])
def test_exchange_with_client(stored_plain: bool) -> None:
    stored = "s3cr3t" if stored_plain else make_scram_verifier("s3cr3t")
    client = ScramClient("s3cr3t", user="ignored-name")
    ex = ScramExchange(stored, "alice")
    sf = ex.handle_client_first(client.first())
    assert ex.handle_client_final(client.final(sf)) == client.expected_server


def test_wrong_password() -> None:
    client = ScramClient("nope")
    ex = ScramExchange(make_scram_verifier("right"), "bob")
    sf = ex.handle_client_first(client.first())
    with pytest.raises(PgError) as ei:
        ex.handle_client_final(client.final(sf))
    assert ei.value.sqlstate == "28P01"
    assert ei.value.message == 'password authentication failed for user "bob"'


def test_mock_exchange_for_missing_role_fails() -> None:
    for stored in (None, make_md5_hash("pw", "x")):
        client = ScramClient("pw")
        ex = ScramExchange(stored, "x")
        sf = ex.handle_client_first(client.first())
        with pytest.raises(PgError) as ei:
            ex.handle_client_final(client.final(sf))
        assert ei.value.sqlstate == "28P01"


def test_channel_binding_and_malformed() -> None:
    with pytest.raises(PgError) as ei:
        ScramExchange("pw").handle_client_first(b"p=tls-server-end-point,,n=,r=abc")
    assert ei.value.sqlstate == "08P01"
    with pytest.raises(PgError) as ei:
        ScramExchange("pw").handle_client_first(b"garbage")
    assert ei.value.sqlstate == "08P01"
    ex = ScramExchange("pw")
    ex.handle_client_first(b"y,,n=,r=abc")  # client supports CB, thinks we don't: fine
    with pytest.raises(PgError) as ei:
        ex.handle_client_final(b"c=biws,r=abcWRONG,p=" + base64.b64encode(b"x" * 32))
    assert ei.value.sqlstate == "08P01"  # gs2 header mismatch ('y,,' is eSws)
    with pytest.raises(PgError):
        ScramExchange("pw").handle_client_final(b"c=biws,r=x,p=x")  # out of order


def test_verifier_format() -> None:
    v = make_scram_verifier("pw", iterations=10, salt=b"0123456789abcdef")
    assert v.startswith("SCRAM-SHA-256$10:MDEyMzQ1Njc4OWFiY2RlZg==$")
    it, salt, sk, svk = parse_scram_verifier(v)  # type: ignore[misc]
    assert (it, salt, len(sk), len(svk)) == (10, b"0123456789abcdef", 32, 32)
    assert parse_scram_verifier("md5abc") is None
    assert sasl_mechanisms() == b"SCRAM-SHA-256\x00\x00"


def test_md5_and_cleartext() -> None:
    stored = make_md5_hash("pw", "carol")
    assert stored == "md5" + hashlib.md5(b"pwcarol").hexdigest()
    salt = b"\x01\x02\x03\x04"
    resp = b"md5" + hashlib.md5(stored[3:].encode() + salt).hexdigest().encode() + b"\x00"
    assert check_md5_response(stored, "carol", salt, resp)
    assert check_md5_response("pw", "carol", salt, resp)
    assert not check_md5_response("other", "carol", salt, resp)
    assert not check_md5_response(make_scram_verifier("pw"), "carol", salt, resp)
    assert check_cleartext(stored, "carol", "pw")
    assert check_cleartext("pw", "carol", b"pw\x00")
    assert check_cleartext(make_scram_verifier("pw"), "carol", "pw")
    assert not check_cleartext(make_scram_verifier("pw"), "carol", "px")
    assert not check_cleartext("", "carol", "")


@pytest.mark.skipif(not postgres15_available(), reason="PostgreSQL 15 not available")
def test_verifier_accepted_by_real_postgres() -> None:
    psycopg = pytest.importorskip("psycopg")
    with Postgres15() as pg:
        hba = pg.data_dir / "pg_hba.conf"
        old = hba.read_text()
        with open(hba, "w") as f:  # keeps the file's owner
            f.write("host all scramuser 127.0.0.1/32 scram-sha-256\n" + old)
        verifier = make_scram_verifier("correct horse", iterations=4096)
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE ROLE scramuser LOGIN PASSWORD '{verifier}'")
            conn.execute("SELECT pg_reload_conf()")
            stored = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname='scramuser'").fetchone()[0]
        assert stored == verifier
        dsn = f"host={pg.host} port={pg.port} dbname=postgres user=scramuser"
        with psycopg.connect(dsn + " password='correct horse'") as c2:
            assert c2.execute("select current_user").fetchone()[0] == "scramuser"
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(dsn + " password=wrong").close()
        # and the reverse: PostgreSQL's own verifier works with our exchange
        with psycopg.connect(pg.dsn, autocommit=True) as conn:
            conn.execute("SET password_encryption = 'scram-sha-256'")
            conn.execute("ALTER ROLE scramuser PASSWORD 'hunter2'")
            pg_verifier = conn.execute("SELECT rolpassword FROM pg_authid WHERE rolname='scramuser'").fetchone()[0]
        client = ScramClient("hunter2")
        ex = ScramExchange(pg_verifier, "scramuser")
        assert ex.handle_client_final(client.final(ex.handle_client_first(client.first()))) == client.expected_server
        assert check_cleartext(pg_verifier, "scramuser", "hunter2")
