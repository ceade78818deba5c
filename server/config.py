"""Server configuration: one immutable object built by the CLI.

Kept separate from the CLI so tests (and embedding code) can build a
server without going through argv parsing.
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field

from .hba import Rule


@dataclass
class ServerConfig:
    """Everything the listener and the connections need to know up front."""

    host: str = "127.0.0.1"
    port: int = 5433
    data_dir: str = "./data"
    password: str | None = None
    #: --hba FILE's rules (server/hba.py); None: trust without a password, else SCRAM/md5 for everyone
    hba: list[Rule] | None = None
    #: directory of the Unix-domain socket (.s.PGSQL.<port>), as PostgreSQL's unix_socket_directories; None: TCP only
    unix_socket_dir: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    max_connections: int = 100
    fsync: bool = True
    worker_threads: int = 32
    #: Seconds a client may take to finish startup + authentication
    #: (PostgreSQL's authentication_timeout defaults to 60s).
    auth_timeout: float = 60.0
    #: Seconds busy sessions get to finish at shutdown before being cancelled.
    shutdown_grace: float = 3.0
    #: Precomputed SCRAM verifier of ``password`` (set by the listener) so
    #: every login does not pay PBKDF2 on the plaintext.
    password_verifier: str | None = field(default=None, repr=False)

    @property
    def hosts(self) -> list[str]:
        """``host`` may be a comma-separated list, like listen_addresses."""
        return [h.strip() for h in self.host.split(",") if h.strip()]

    @property
    def tls_enabled(self) -> bool:
        return self.tls_files is not None

    @property
    def tls_files(self) -> tuple[str, str] | None:
        """(certificate, private key) when TLS is on."""
        return (self.tls_cert, self.tls_key) if self.tls_cert and self.tls_key else None


def is_loopback(host: str) -> bool:
    """True only if every address ``host`` resolves to is a loopback address.

    Used to refuse password-less listening on reachable interfaces; an
    unresolvable name counts as not loopback (refuse rather than guess).
    """
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    if host in ("", "*"):
        return False
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addrs = {str(info[4][0]) for info in infos}
    return bool(addrs) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addrs)
