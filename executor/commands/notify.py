"""LISTEN, UNLISTEN and NOTIFY (PostgreSQL's async.c surface).

Each statement only queues its action on the transaction
(``catalog/storage/notify.PendingAsync``); the transaction applies them when
it commits, so a rolled-back NOTIFY is never delivered and a rolled-back
LISTEN never listens.  The grammar is PostgreSQL's: ``LISTEN ColId``,
``UNLISTEN ColId | *``, ``NOTIFY ColId [, Sconst]``.
"""
from __future__ import annotations

import re

from splitstream.catalog.storage.notify import NAMEDATALEN
from splitstream.protocol.errors import Notice, PgError, SYNTAX_ERROR

from ..api import Result
from ..sql.sqltext import strip_comments
from .base import Stmt

_IDENT = re.compile(r'\s*(?:([A-Za-z_\x80-\uffff][A-Za-z0-9_$\x80-\uffff]*)|"((?:[^"]|"")*)")', re.S)
_STRING = re.compile(r"\s*,\s*(?:([Ee])'((?:[^'\\]|''|\\.)*)'|'((?:[^']|'')*)'|\$([A-Za-z_]*)\$(.*?)\$\4\$)\s*$", re.S)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _syntax_error(rest: str) -> PgError:
    rest = rest.strip()
    if not rest:
        return PgError(SYNTAX_ERROR, "syntax error at end of input")
    token = re.match(r"'(?:[^']|'')*'|\w+|\S", rest)
    return PgError(SYNTAX_ERROR, f'syntax error at or near "{token.group(0) if token else rest}"')


def _channel(text: str) -> tuple[str, str, list[Notice]]:
    """The channel identifier at the start of ``text`` and what follows it.
    An unquoted name folds to lower case; a name of 64 bytes or more is
    truncated with PostgreSQL's NOTICE."""
    m = _IDENT.match(text)
    if m is None:
        raise _syntax_error(text)
    if m.group(1) is not None:
        name = m.group(1).lower()
    else:
        name = m.group(2).replace('""', '"')
        if not name:
            raise PgError(SYNTAX_ERROR, 'zero-length delimited identifier at or near """"')
    notices = []
    raw = name.encode()
    if len(raw) >= NAMEDATALEN:
        short = raw[:NAMEDATALEN - 1].decode(errors="ignore")
        notices.append(Notice(f'identifier "{name}" will be truncated to "{short}"', "42622"))
        name = short
    return name, text[m.end():], notices


def _payload(rest: str) -> str:
    m = _STRING.match(rest)
    if m is None:
        raise _syntax_error(rest.lstrip().lstrip(",") if rest.strip().startswith(",") else rest)
    if m.group(1):
        return re.sub(r"\\(.)", lambda e: _ESCAPES.get(e.group(1), e.group(1)), m.group(2).replace("''", "'"))
    if m.group(3) is not None:
        return m.group(3).replace("''", "'")
    return m.group(5)


class AsyncStmt(Stmt):
    """LISTEN / UNLISTEN / NOTIFY, queued on the transaction until it commits."""

    cacheable = False

    def __init__(self, kind: str, channel: str | None, payload: str = "", notices: list[Notice] | None = None) -> None:
        self.kind, self.channel, self.payload = kind, channel, payload
        self.tag = kind.upper()
        self.notices = notices or []

    def run(self, session, ctx):
        queue = ctx.txn.async_queue(ctx.session.pid, session.notify_sink)
        if self.kind == "notify":
            assert self.channel is not None
            queue.notify(self.channel, self.payload)
        else:
            queue.actions.append((self.kind, self.channel))
        return Result(tag=self.tag, notices=list(self.notices))


def async_statement(text: str, keyword: str) -> AsyncStmt:
    """Parse LISTEN / UNLISTEN / NOTIFY (``keyword``, upper case)."""
    body = strip_comments(text).strip().rstrip(";")
    rest = body[len(keyword):]
    if keyword == "UNLISTEN" and rest.strip() == "*":
        return AsyncStmt("unlisten", None)
    channel, rest, notices = _channel(rest)
    if keyword == "NOTIFY":
        payload = _payload(rest) if rest.strip() else ""
        return AsyncStmt("notify", channel, payload, notices)
    if rest.strip():
        raise _syntax_error(rest)
    return AsyncStmt(keyword.lower(), channel, notices=notices)
