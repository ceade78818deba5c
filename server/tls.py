"""Server-side TLS context for SSLRequest upgrades."""
from __future__ import annotations

import ssl


def make_server_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """Build the context once at startup so a bad cert/key fails the launch,
    not the first client that asks for TLS."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert_file, key_file)
    # PostgreSQL clients never use ALPN/NPN for the SSLRequest upgrade;
    # libpq 17's direct-TLS mode sends 'postgresql', which we accept.
    try:
        ctx.set_alpn_protocols(["postgresql"])
    except (NotImplementedError, ssl.SSLError):  # pragma: no cover
        pass
    return ctx
