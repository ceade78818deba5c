"""A small pg_hba.conf (``--hba FILE``): which clients may connect, as whom,
to which database, and how they authenticate.

Each line is ``TYPE DATABASE USER ADDRESS METHOD`` as in PostgreSQL: TYPE is
``host``, ``hostssl`` or ``hostnossl``; DATABASE and USER are ``all`` or
comma-separated names (``sameuser`` for DATABASE); ADDRESS is ``all``, a
CIDR block, or an address followed by a netmask; METHOD is ``trust``,
``reject``, ``scram-sha-256`` or ``md5``.  The first line matching the
connection decides; none matching refuses it.  What PostgreSQL's file
has beyond this (``local`` lines, ``+group`` and ``@file`` names, other
methods, options) is refused when the file is read, never ignored.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass

METHODS = ("trust", "reject", "scram-sha-256", "md5")
TYPES = ("host", "hostssl", "hostnossl")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class HbaError(ValueError):
    """A line the server cannot honour (it refuses to start)."""


@dataclass(frozen=True)
class Rule:
    line: int
    type: str
    databases: tuple[str, ...]      # () = all
    users: tuple[str, ...]          # () = all
    network: Network | None         # None = all
    method: str

    def matches(self, tls: bool, database: str, user: str, address: str) -> bool:
        if (self.type == "hostssl" and not tls) or (self.type == "hostnossl" and tls):
            return False
        if self.databases and database not in self.databases and not ("sameuser" in self.databases and database == user):
            return False
        if self.users and user not in self.users:
            return False
        if self.network is None:
            return True
        try:
            ip = ipaddress.ip_address(address.split("%")[0])
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.version == self.network.version and ip in self.network


def _names(field: str, what: str, line: int) -> tuple[str, ...]:
    if field == "all":
        return ()
    names = tuple(n.strip('"') for n in field.split(",") if n)
    for n in names:
        if n.startswith(("+", "@")) or n == "replication":
            raise HbaError(f"line {line}: {what} {n!r} is not supported (give role or database names, or all)")
    return names


def _network(fields: list[str], line: int) -> tuple[Network | None, list[str]]:
    addr = fields[0]
    if addr == "all":
        return None, fields[1:]
    try:
        if "/" in addr:
            return ipaddress.ip_network(addr, strict=False), fields[1:]
        if len(fields) > 1:
            return ipaddress.ip_network(f"{addr}/{fields[1]}", strict=False), fields[2:]
    except ValueError as e:
        raise HbaError(f"line {line}: invalid address {addr!r}: {e}") from None
    raise HbaError(f"line {line}: address {addr!r} needs a CIDR mask (such as /32) or a netmask")


def parse(text: str) -> list[Rule]:
    rules = []
    for n, raw in enumerate(text.splitlines(), 1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if fields[0] not in TYPES:
            raise HbaError(f"line {n}: connection type {fields[0]!r} is not supported (host, hostssl or hostnossl)")
        if len(fields) < 5:
            raise HbaError(f"line {n}: expected TYPE DATABASE USER ADDRESS METHOD")
        network, rest = _network(fields[3:], n)
        if len(rest) != 1 or rest[0] not in METHODS:
            shown = " ".join(rest) or "(none)"
            raise HbaError(f"line {n}: authentication method {shown!r} is not supported ({', '.join(METHODS)})")
        rules.append(Rule(n, fields[0], _names(fields[1], "database", n), _names(fields[2], "user", n), network,
                          rest[0]))
    return rules


def load(path: str) -> list[Rule]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise HbaError(f"cannot read {path}: {e.strerror}") from None
    return parse(text)


def method_for(rules: list[Rule], tls: bool, database: str, user: str, address: str) -> str | None:
    """The method of the first matching line (None: no line matches)."""
    for rule in rules:
        if rule.matches(tls, database, user, address):
            return rule.method
    return None
