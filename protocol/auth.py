"""Server-side password authentication (SCRAM-SHA-256, md5, cleartext), sans-IO.

The connection layer moves the bytes; this module only computes them, so it
can be tested without sockets.  Stored secrets use PostgreSQL's own formats
(``SCRAM-SHA-256$iter:salt$StoredKey:ServerKey`` and ``md5<hex>``), which
lets users copy passwords between splitstream and PostgreSQL (RFC 5802/7677).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import unicodedata

from .errors import INVALID_PASSWORD, PROTOCOL_VIOLATION, PgError

SCRAM_MECHANISM = "SCRAM-SHA-256"
DEFAULT_ITERATIONS = 4096
_VERIFIER_RE = re.compile(r"SCRAM-SHA-256\$(\d+):([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+):([A-Za-z0-9+/=]+)")


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _unb64(s: str) -> bytes:
    return base64.b64decode(s.encode("ascii"), validate=True)


def _prep(password: str) -> bytes:
    """An approximation of SASLprep: NFKC for non-ASCII, raw bytes otherwise.

    PostgreSQL also falls back to the raw string when SASLprep fails, so
    ASCII passwords (the common case) hash identically.
    """
    if password.isascii():
        return password.encode()
    return unicodedata.normalize("NFKC", password).encode("utf-8")


def _hmac(key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hashlib.sha256).digest()


def _keys(password: str, salt: bytes, iterations: int) -> tuple[bytes, bytes]:
    salted = hashlib.pbkdf2_hmac("sha256", _prep(password), salt, iterations)
    stored = hashlib.sha256(_hmac(salted, b"Client Key")).digest()
    server = _hmac(salted, b"Server Key")
    return stored, server


def make_scram_verifier(password: str, *, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None) -> str:
    """The rolpassword PostgreSQL stores for a SCRAM-SHA-256 password."""
    salt = secrets.token_bytes(16) if salt is None else salt
    stored, server = _keys(password, salt, iterations)
    return f"{SCRAM_MECHANISM}${iterations}:{_b64(salt)}${_b64(stored)}:{_b64(server)}"


def parse_scram_verifier(stored: str) -> tuple[int, bytes, bytes, bytes] | None:
    """(iterations, salt, StoredKey, ServerKey) or None if not a verifier."""
    m = _VERIFIER_RE.fullmatch(stored or "")
    if not m:
        return None
    try:
        return int(m.group(1)), _unb64(m.group(2)), _unb64(m.group(3)), _unb64(m.group(4))
    except ValueError:
        return None


def make_md5_hash(password: str, role: str) -> str:
    """The md5 password format: 'md5' + md5(password || rolename)."""
    return "md5" + hashlib.md5((password + role).encode()).hexdigest()


def is_md5_hash(stored: str) -> bool:
    return bool(re.fullmatch(r"md5[0-9a-f]{32}", stored or ""))


def sasl_mechanisms() -> bytes:
    """Body of AuthenticationSASL after the Int32(10): the mechanism list."""
    return SCRAM_MECHANISM.encode() + b"\x00\x00"


def _malformed(detail: str) -> PgError:
    return PgError(PROTOCOL_VIOLATION, "malformed SCRAM message", detail=detail)


class ScramExchange:
    """One server-side SCRAM-SHA-256 exchange (no channel binding).

    If the role has no usable secret (unknown role, md5 or empty password) a
    mock exchange runs with a deterministic fake salt and always fails at the
    proof, like PostgreSQL does, so clients can't probe which roles exist.
    """

    def __init__(self, stored: str | None, role: str = "", *, iterations: int = DEFAULT_ITERATIONS,
                 server_nonce: str | None = None) -> None:
        self.role = role
        self._server_nonce = server_nonce  # fixed only in tests (RFC vectors)
        self.state = "initial"
        parsed = parse_scram_verifier(stored) if stored else None
        if parsed is None and stored and not is_md5_hash(stored):
            salt = secrets.token_bytes(16)
            sk, svk = _keys(stored, salt, iterations)
            parsed = (iterations, salt, sk, svk)
        self.mock = parsed is None
        if parsed is None:
            fake_salt = hashlib.sha256(b"splitstream-mock" + role.encode()).digest()[:16]
            parsed = (iterations, fake_salt, secrets.token_bytes(32), secrets.token_bytes(32))
        self.iterations, self.salt, self.stored_key, self.server_key = parsed
        self._client_first_bare = ""
        self._server_first = ""
        self._gs2 = ""
        self.nonce = ""

    def handle_client_first(self, data: bytes) -> bytes:
        """Parse client-first-message; return server-first-message."""
        if self.state != "initial":
            raise _malformed("Unexpected SCRAM message.")
        try:
            msg = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise _malformed("Message is not valid UTF-8.") from None
        if msg.startswith("p="):
            raise PgError(PROTOCOL_VIOLATION, "channel binding is not supported",
                          detail="The client requested SCRAM channel binding (p=), which this server does not offer.")
        if not (msg.startswith("n,") or msg.startswith("y,")):
            raise _malformed('Unexpected channel-binding flag "%s".' % msg[:1])
        rest = msg[2:]
        if rest.startswith("a="):
            comma = rest.find(",")
            if comma < 0:
                raise _malformed("Unexpected end of input.")
            rest = rest[comma + 1:]
        elif rest.startswith(","):
            rest = rest[1:]
        else:
            raise _malformed('Expected "," after channel-binding flag.')
        self._gs2 = msg[: len(msg) - len(rest)]
        self._client_first_bare = rest
        attrs = rest.split(",")
        if len(attrs) < 2 or not attrs[0].startswith("n=") or not attrs[1].startswith("r="):
            if attrs and attrs[0].startswith("m="):
                raise PgError("0A000", "client requires an unsupported SCRAM extension")
            raise _malformed('Expected attribute "n" and "r".')
        cnonce = attrs[1][2:]
        if not cnonce or any(c == "," or not (0x21 <= ord(c) <= 0x7E) for c in cnonce):
            raise _malformed("Invalid client nonce.")
        self.nonce = cnonce + (self._server_nonce or _b64(secrets.token_bytes(18)))
        self._server_first = f"r={self.nonce},s={_b64(self.salt)},i={self.iterations}"
        self.state = "first_done"
        return self._server_first.encode()

    def handle_client_final(self, data: bytes) -> bytes:
        """Verify client-final-message; return server-final-message ('v=...')."""
        if self.state != "first_done":
            raise _malformed("Unexpected SCRAM message.")
        try:
            msg = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            raise _malformed("Message is not valid UTF-8.") from None
        attrs = msg.split(",")
        if len(attrs) < 3 or not attrs[0].startswith("c=") or not attrs[1].startswith("r=") or not attrs[-1].startswith("p="):
            raise _malformed('Expected attributes "c", "r" and "p".')
        try:
            cbind = _unb64(attrs[0][2:]).decode("utf-8")
            proof = _unb64(attrs[-1][2:])
        except (ValueError, UnicodeDecodeError):
            raise _malformed("Invalid base64 in client-final-message.") from None
        if cbind != self._gs2:
            raise PgError(PROTOCOL_VIOLATION, "SCRAM channel binding check failed")
        if not hmac.compare_digest(attrs[1][2:].encode(), self.nonce.encode()):
            raise _malformed("Nonce does not match.")
        if len(proof) != 32:
            raise _malformed("Malformed proof in client-final-message.")
        without_proof = msg[: msg.rfind(",p=")]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        client_sig = _hmac(self.stored_key, auth_message)
        client_key = bytes(a ^ b for a, b in zip(proof, client_sig))
        ok = hmac.compare_digest(hashlib.sha256(client_key).digest(), self.stored_key)
        self.state = "done"
        if not ok or self.mock:
            raise PgError(INVALID_PASSWORD, f'password authentication failed for user "{self.role}"')
        return ("v=" + _b64(_hmac(self.server_key, auth_message))).encode()


def check_md5_response(stored: str, role: str, salt: bytes, response: bytes | str) -> bool:
    """Check a PasswordMessage answering AuthenticationMD5Password.

    ``stored`` is an 'md5...' hash or a plaintext password; a SCRAM verifier
    cannot answer md5 (PostgreSQL fails the same way).
    """
    if isinstance(response, str):
        response = response.encode()
    response = bytes(response).rstrip(b"\x00")
    if not stored or parse_scram_verifier(stored) is not None:
        return False
    inner = stored[3:] if is_md5_hash(stored) else make_md5_hash(stored, role)[3:]
    expected = b"md5" + hashlib.md5(inner.encode() + bytes(salt)).hexdigest().encode()
    return hmac.compare_digest(expected, response)


def check_cleartext(stored: str, role: str, password: str | bytes) -> bool:
    """Check a cleartext PasswordMessage against any stored secret format."""
    if isinstance(password, (bytes, bytearray)):
        password = bytes(password).rstrip(b"\x00").decode("utf-8", "replace")
    if not stored:
        return False
    parsed = parse_scram_verifier(stored)
    if parsed is not None:
        it, salt, sk, svk = parsed
        s2, sv2 = _keys(password, salt, it)
        return hmac.compare_digest(s2 + sv2, sk + svk)
    if is_md5_hash(stored):
        return hmac.compare_digest(make_md5_hash(password, role).encode(), stored.encode())
    return hmac.compare_digest(password.encode(), stored.encode())
