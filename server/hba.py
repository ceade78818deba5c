"""A small pg_hba.conf (``--hba FILE``): which clients may connect, as whom,
to which database, and how they authenticate.

Each line is ``TYPE DATABASE USER [ADDRESS] METHOD`` as in PostgreSQL: TYPE
is ``local`` (the Unix-domain socket of ``--unix-socket-dir``; no ADDRESS),
``host``, ``hostssl`` or ``hostnossl``.  DATABASE is ``all``, ``sameuser``,
``samerole`` (``samegroup``) or comma-separated names; USER is ``all`` or
names, ``+role`` meaning the members of a role; either may name ``@file``,
a file of names beside this one.  A name in double quotes is just a name.
ADDRESS is ``all``, a CIDR block, or an address followed by a netmask.  METHOD is ``trust``, ``reject``, ``scram-sha-256``
or ``md5``.  The first line matching the connection decides; none matching
refuses it.  What PostgreSQL's file has beyond this (other methods, options,
host names, ``replication``) is refused when the file is read, never ignored.
"""
from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Callable

METHODS = ("trust", "reject", "scram-sha-256", "md5")
TYPES = ("local", "host", "hostssl", "hostnossl")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: user -> the roles it is a member of, directly or not (itself included)
MembershipOf = Callable[[str], frozenset[str]]


class HbaError(ValueError):
    """A line the server cannot honour (it refuses to start)."""


@dataclass(frozen=True)
class Name:
    """A DATABASE or USER token: a keyword (``all``, ``sameuser``, ...) or,
    quoted or not, a name; ``group`` for ``+role``."""

    text: str
    keyword: bool = False
    group: bool = False


@dataclass(frozen=True)
class Rule:
    line: int
    type: str
    databases: tuple[Name, ...]
    users: tuple[Name, ...]
    network: Network | None         # None = all (and local lines)
    method: str

    def matches(self, tls: bool, database: str, user: str, address: str, member_of: MembershipOf) -> bool:
        """``address`` '' is the Unix-domain socket."""
        local = address == ""
        if (self.type == "local") != local:
            return False
        if (self.type == "hostssl" and not tls) or (self.type == "hostnossl" and tls):
            return False
        if not any(_database_matches(n, database, user, member_of) for n in self.databases):
            return False
        if not any(_user_matches(n, user, member_of) for n in self.users):
            return False
        if self.network is None or local:
            return True
        try:
            ip = ipaddress.ip_address(address.split("%")[0])
        except ValueError:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        return ip.version == self.network.version and ip in self.network

    @property
    def needs_membership(self) -> bool:
        return any(n.group for n in self.users) or any(n.keyword and n.text == "samerole" for n in self.databases)


def _database_matches(n: Name, database: str, user: str, member_of: MembershipOf) -> bool:
    """check_db: all, sameuser, samerole (member of a role named as the database), or the name."""
    if n.keyword:
        if n.text == "all":
            return True
        if n.text == "sameuser":
            return database == user
        return database in member_of(user)          # samerole
    return n.text == database


def _user_matches(n: Name, user: str, member_of: MembershipOf) -> bool:
    """check_role: all, +role (a member of it, directly or not), or the name."""
    if n.keyword:
        return True
    if n.group:
        return n.text in member_of(user)
    return n.text == user


_KEYWORDS = {"database": {"all": "all", "sameuser": "sameuser", "samerole": "samerole", "samegroup": "samerole"},
             "user": {"all": "all"}}


def _tokens(field: str) -> list[tuple[str, bool]]:
    """A comma-separated field's items as (text, quoted)."""
    out, cur, quoted, in_q = [], "", False, False
    for ch in field:
        if ch == '"':
            in_q, quoted = not in_q, True
        elif ch == "," and not in_q:
            out.append((cur, quoted))
            cur, quoted = "", False
        else:
            cur += ch
    out.append((cur, quoted))
    return [t for t in out if t[0] or t[1]]


def _names(field: str, what: str, line: int, base: str, depth: int = 0) -> tuple[Name, ...]:
    out: list[Name] = []
    for text, quoted in _tokens(field):
        if quoted:
            out.append(Name(text))
        elif text in _KEYWORDS[what]:
            out.append(Name(_KEYWORDS[what][text], keyword=True))
        elif text == "replication" and what == "database":
            raise HbaError(f"line {line}: database 'replication' is not supported (there is no replication)")
        elif text.startswith("@"):
            out += _included(text[1:], what, line, base, depth)
        elif text.startswith("+") and what == "user":
            out.append(Name(text[1:], group=True))
        else:
            out.append(Name(text))
    if not out:
        raise HbaError(f"line {line}: no {what} given")
    return tuple(out)


def _included(path: str, what: str, line: int, base: str, depth: int) -> list[Name]:
    """@file: names (whitespace or comma separated, # comments) read from a file beside the hba file."""
    if depth > 10:
        raise HbaError(f"line {line}: @{path} nests too deeply")
    full = path if os.path.isabs(path) else os.path.join(base, path)
    try:
        with open(full, encoding="utf-8") as f:
            words = [w for raw in f for w in raw.split("#", 1)[0].replace(",", " ").split()]
    except OSError as e:
        raise HbaError(f"line {line}: cannot read @{path}: {e.strerror}") from None
    out: list[Name] = []
    for w in words:
        out += _names(w, what, line, os.path.dirname(full), depth + 1)
    return out


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


def parse(text: str, base: str = ".", unix_socket: bool = False) -> list[Rule]:
    """The rules of a file's text; ``base`` is its directory (for @file),
    ``unix_socket`` whether the server listens on one (else ``local`` lines are refused)."""
    rules = []
    for n, raw in enumerate(text.splitlines(), 1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        kind = fields[0]
        if kind not in TYPES:
            raise HbaError(f"line {n}: connection type {kind!r} is not supported (local, host, hostssl or hostnossl)")
        if kind == "local" and not unix_socket:
            raise HbaError(f"line {n}: a local line needs the Unix-domain socket (--unix-socket-dir); "
                           "without it the server listens on TCP only")
        if len(fields) < (4 if kind == "local" else 5):
            raise HbaError(f"line {n}: expected TYPE DATABASE USER {'' if kind == 'local' else 'ADDRESS '}METHOD")
        network, rest = (None, fields[3:]) if kind == "local" else _network(fields[3:], n)
        if len(rest) != 1 or rest[0] not in METHODS:
            shown = " ".join(rest) or "(none)"
            raise HbaError(f"line {n}: authentication method {shown!r} is not supported ({', '.join(METHODS)})")
        rules.append(Rule(n, kind, _names(fields[1], "database", n, base), _names(fields[2], "user", n, base),
                          network, rest[0]))
    return rules


def load(path: str, unix_socket: bool = False) -> list[Rule]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise HbaError(f"cannot read {path}: {e.strerror}") from None
    return parse(text, os.path.dirname(os.path.abspath(path)), unix_socket)


def _no_membership(user: str) -> frozenset[str]:
    return frozenset({user})


def method_for(rules: list[Rule], tls: bool, database: str, user: str, address: str,
               member_of: MembershipOf = _no_membership) -> str | None:
    """The method of the first matching line (None: no line matches)."""
    for rule in rules:
        if rule.matches(tls, database, user, address, member_of):
            return rule.method
    return None


def needs_membership(rules: list[Rule]) -> bool:
    """Some line names a +role or samerole: matching needs the user's memberships."""
    return any(r.needs_membership for r in rules)
