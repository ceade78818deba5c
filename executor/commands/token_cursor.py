"""A cursor over the tokens of a utility statement that sqlglot does not
parse (roles, grants, functions): one place for the stepping, each grammar's
reader brings its tokens, what a word matches and how a syntax error reads."""
from __future__ import annotations

from typing import Generic, TypeVar

from splitstream.protocol.errors import PgError

T = TypeVar("T")


class TokenCursor(Generic[T]):
    toks: list[T]
    i: int

    def peek(self, k: int = 0) -> T | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at(self, *words: str) -> bool:
        raise NotImplementedError

    def error(self) -> PgError:
        raise NotImplementedError

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            raise self.error()

    def next(self) -> T:
        t = self.peek()
        if t is None:
            raise self.error()
        self.i += 1
        return t

    def done(self) -> bool:
        return self.i >= len(self.toks)

    def end(self) -> None:
        if not self.done():
            raise self.error()
