"""Tokens and names of the role and privilege statements (GRANT, REVOKE,
CREATE/ALTER/DROP ROLE, SET ROLE): sqlglot does not parse them, and they are
a small regular language."""
from __future__ import annotations

import re

from .token_cursor import TokenCursor
from splitstream.protocol.errors import SYNTAX_ERROR, PgError

_TOKEN = re.compile(r"""\s*(?:('(?:[^']|'')*')|("(?:[^"]|"")*")|(-?\d+)|([A-Za-z_][\w$]*)|(\S))""")


class Tok(str):
    """A token: ``kind`` is 'str' (a quoted literal), 'ident' (quoted name),
    'num', 'word' (folded to upper case) or 'punct'; ``text`` its value."""

    kind: str
    text: str

    @staticmethod
    def make(kind: str, text: str, key: str) -> "Tok":
        t = Tok(key)
        t.kind, t.text = kind, text
        return t


def tokens(text: str) -> list[Tok]:
    out: list[Tok] = []
    pos = 0
    text = text.strip().rstrip(";")
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        s, q, n, w, p = m.groups()
        if s is not None:
            out.append(Tok.make("str", s[1:-1].replace("''", "'"), "'"))
        elif q is not None:
            out.append(Tok.make("ident", q[1:-1].replace('""', '"'), '"'))
        elif n is not None:
            out.append(Tok.make("num", n, n))
        elif w is not None:
            out.append(Tok.make("word", w.lower(), w.upper()))
        elif p is not None:
            out.append(Tok.make("punct", p, p))
    return out


class Reader(TokenCursor[Tok]):
    """A cursor over tokens with PostgreSQL-like syntax errors."""

    def __init__(self, text: str) -> None:
        self.toks = tokens(text)
        self.i = 0

    def at(self, *words: str) -> bool:
        return all(self.peek(k) == w for k, w in enumerate(words))

    def error(self) -> PgError:
        t = self.peek()
        if t is None:
            return PgError(SYNTAX_ERROR, "syntax error at end of input")
        return PgError(SYNTAX_ERROR, f'syntax error at or near "{t.text if t.kind != "word" else str(t).lower()}"')

    def name(self) -> str:
        """An identifier: quoted as given, unquoted folded to lower case."""
        t = self.next()
        if t.kind not in ("word", "ident"):
            self.i -= 1
            raise self.error()
        return t.text

    def names(self) -> list[str]:
        out = [self.name()]
        while self.accept(","):
            out.append(self.name())
        return out

    def string(self) -> str:
        t = self.next()
        if t.kind != "str":
            self.i -= 1
            raise self.error()
        return t.text

    def qualified(self) -> tuple[str | None, str]:
        first = self.name()
        if self.accept("."):
            return first, self.name()
        return None, first
