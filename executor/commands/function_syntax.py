"""The syntax of CREATE FUNCTION / PROCEDURE, DROP and ALTER FUNCTION, and
function signatures in GRANT (PostgreSQL's CreateFunctionStmt grammar).

Why a module of its own: sqlglot does not parse these statements (dollar
quoting, argument modes, RETURNS TABLE, the option list), and they are a
small regular language.  Types and default expressions are kept as the text
written; the command binds them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .token_cursor import TokenCursor
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_FUNCTION_DEFINITION, SYNTAX_ERROR, PgError

_LEX = re.compile(r"""
    (?P<dollar>\$(?P<tag>[A-Za-z_]\w*)?\$)
  | (?P<str>[EeNn]?'(?:[^']|'')*')
  | (?P<ident>"(?:[^"]|"")*")
  | (?P<num>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)
  | (?P<word>[A-Za-z_][\w$]*)
  | (?P<op>::|:=|=>|<=|>=|<>|!=|\|\||[-+*/%^<>=~!@#&|`?])
  | (?P<punct>[(),.;\[\]])
""", re.X)


@dataclass
class Tok:
    kind: str          # dollar/str (text: the contents), ident, num, word (upper), op, punct
    text: str
    start: int
    end: int

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and self.kind == "word" and self.text == other


def lex(text: str) -> list[Tok]:
    out: list[Tok] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if text.startswith("--", pos):
            nl = text.find("\n", pos)
            pos = len(text) if nl < 0 else nl + 1
            continue
        if pos >= len(text):
            return out
        m = _LEX.match(text, pos)
        if m is None:
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{text[pos]}"')
        kind = m.lastgroup if m.lastgroup != "tag" else "dollar"
        if kind == "dollar":
            close = text.find(m.group(0), m.end())
            if close < 0:
                raise PgError(SYNTAX_ERROR, f'unterminated dollar-quoted string at or near "{text[pos:pos + 20]}"')
            out.append(Tok("str", text[m.end():close], pos, close + len(m.group(0))))
            pos = close + len(m.group(0))
            continue
        s = m.group(0)
        if kind == "str":
            body = s[s.index("'") + 1:-1].replace("''", "'")
            out.append(Tok("str", body, pos, m.end()))
        elif kind == "ident":
            out.append(Tok("ident", s[1:-1].replace('""', '"'), pos, m.end()))
        elif kind == "word":
            out.append(Tok("word", s.upper(), pos, m.end()))
        else:
            out.append(Tok(kind or "punct", s, pos, m.end()))
        pos = m.end()


class Reader(TokenCursor[Tok]):
    def __init__(self, text: str) -> None:
        self.text = text.strip().rstrip(";").rstrip()
        self.toks = lex(self.text)
        self.i = 0

    def at(self, *words: str) -> bool:
        for k, w in enumerate(words):
            t = self.peek(k)
            if t is None or not (t.text == w and t.kind in ("word", "punct", "op")):
                return False
        return True

    def error(self) -> PgError:
        t = self.peek()
        if t is None:
            return PgError(SYNTAX_ERROR, "syntax error at end of input")
        shown = t.text.lower() if t.kind == "word" else self.text[t.start:t.end]
        return PgError(SYNTAX_ERROR, f'syntax error at or near "{shown}"')

    def name(self) -> str:
        t = self.next()
        if t.kind == "word":
            return t.text.lower()
        if t.kind == "ident":
            return t.text
        self.i -= 1
        raise self.error()

    def qualified(self) -> tuple[str | None, str]:
        first = self.name()
        if self.accept("."):
            return first, self.name()
        return None, first

    def string(self) -> str:
        t = self.next()
        if t.kind != "str":
            self.i -= 1
            raise self.error()
        return t.text

    def until(self, stops: tuple[str, ...]) -> str:
        """The text up to a stop word or punctuation at depth 0 (not consumed)."""
        depth, start = 0, self.i
        while not self.done():
            t = self.toks[self.i]
            if depth == 0 and t.kind in ("word", "punct", "op") and t.text in stops:
                break
            if t.text in ("(", "["):
                depth += 1
            elif t.text in (")", "]"):
                if depth == 0:
                    break
                depth -= 1
            self.i += 1
        if self.i == start:
            raise self.error()
        return self.text[self.toks[start].start:self.toks[self.i - 1].end]


@dataclass
class ArgDef:
    mode: str            # i (IN), o (OUT), b (INOUT), v (VARIADIC)
    name: str
    type_text: str
    default: str = ""


@dataclass
class FunctionDef:
    """What CREATE FUNCTION / PROCEDURE said."""

    schema: str | None
    name: str
    kind: str = "f"
    replace: bool = False
    args: list[ArgDef] = field(default_factory=list)
    returns: str | None = None
    retset: bool = False
    table: list[tuple[str, str]] = field(default_factory=list)
    language: str | None = None
    volatility: str | None = None
    strict: bool | None = None
    body: str | None = None
    sql_body: str | None = None      # BEGIN ATOMIC ... END / RETURN expr
    parallel: str | None = None      # s, r, u
    leakproof: bool | None = None
    cost: float | None = None
    rows: float | None = None


_MODES = {"IN": "i", "OUT": "o", "INOUT": "b", "VARIADIC": "v"}
_TYPE_WORDS = {"DOUBLE", "CHARACTER", "TIMESTAMP", "TIME", "BIT", "NATIONAL", "INTERVAL"}


def _arg(r: Reader) -> ArgDef:
    mode = "i"
    t = r.peek()
    if t is not None and t.kind == "word" and t.text in _MODES and r.peek(1) is not None and \
            r.peek(1).text not in (",", ")"):                      # type: ignore[union-attr]
        mode = _MODES[t.text]
        r.i += 1
    name = ""
    t, nxt = r.peek(), r.peek(1)
    if t is not None and t.kind in ("word", "ident") and t.text not in _TYPE_WORDS and nxt is not None and \
            nxt.kind in ("word", "ident") and nxt.text not in ("DEFAULT",):
        name = r.name()
    type_text = r.until((",", "DEFAULT", "="))
    default = ""
    if r.accept("DEFAULT") or r.accept("="):
        default = r.until((",",))
    return ArgDef(mode, name, type_text, default)


def parse_args(r: Reader) -> list[ArgDef]:
    r.expect("(")
    args: list[ArgDef] = []
    if r.accept(")"):
        return args
    while True:
        args.append(_arg(r))
        if r.accept(")"):
            return args
        r.expect(",")


def parse_create(text: str) -> FunctionDef:
    r = Reader(text)
    r.expect("CREATE")
    replace = r.accept("OR", "REPLACE")
    if r.accept("PROCEDURE"):
        kind = "p"
    else:
        r.expect("FUNCTION")
        kind = "f"
    schema, name = r.qualified()
    fd = FunctionDef(schema, name, kind, replace, parse_args(r))
    while not r.done():
        parse_option(r, fd)
    return fd


def parse_option(r: Reader, fd: FunctionDef) -> None:
    if r.accept("RETURNS", "NULL", "ON", "NULL", "INPUT") or r.accept("STRICT"):
        fd.strict = _once(fd.strict, True)
    elif r.accept("CALLED", "ON", "NULL", "INPUT"):
        fd.strict = _once(fd.strict, False)
    elif r.accept("RETURNS"):
        if fd.returns is not None or fd.table:
            raise r.error()
        if r.accept("TABLE"):
            r.expect("(")
            while True:
                col = r.name()
                fd.table.append((col, r.until((",",))))
                if r.accept(")"):
                    break
                r.expect(",")
            fd.retset = True
        else:
            fd.retset = r.accept("SETOF")
            fd.returns = r.until(("LANGUAGE", "AS", "IMMUTABLE", "STABLE", "VOLATILE", "STRICT", "CALLED",
                                  "RETURNS", "SECURITY", "PARALLEL", "COST", "ROWS", "LEAKPROOF", "NOT", "SET",
                                  "BEGIN", "RETURN", "WINDOW", "EXTERNAL", "SUPPORT", "TRANSFORM"))
    elif r.accept("LANGUAGE"):
        t = r.next()
        fd.language = _once(fd.language, t.text.lower() if t.kind == "word" else t.text)
    elif r.at("IMMUTABLE") or r.at("STABLE") or r.at("VOLATILE"):
        fd.volatility = _once(fd.volatility, r.next().text[0].lower())
    elif r.accept("AS"):
        body = r.string()
        if r.accept(","):
            raise PgError(FEATURE_NOT_SUPPORTED, "object files (AS 'obj_file', 'link_symbol') are not supported",
                          hint="Write the function in LANGUAGE sql.")
        fd.body = _once(fd.body, body)
    elif r.at("BEGIN") or r.at("RETURN"):
        start = r.peek()
        assert start is not None
        fd.sql_body = r.text[start.start:]
        r.i = len(r.toks)
    elif r.accept("SECURITY", "DEFINER") or r.accept("EXTERNAL", "SECURITY", "DEFINER"):
        raise PgError(FEATURE_NOT_SUPPORTED, "SECURITY DEFINER functions are not supported",
                      hint="Functions run with the caller's privileges (SECURITY INVOKER).")
    elif r.accept("SECURITY", "INVOKER") or r.accept("EXTERNAL", "SECURITY", "INVOKER"):
        pass
    elif r.accept("PARALLEL"):
        word = r.next()
        if word.text not in ("SAFE", "UNSAFE", "RESTRICTED"):
            raise PgError(SYNTAX_ERROR, 'parameter "parallel" must be SAFE, RESTRICTED, or UNSAFE')
        fd.parallel = _once(fd.parallel, word.text[0].lower())
    elif r.accept("LEAKPROOF"):
        fd.leakproof = _once(fd.leakproof, True)
    elif r.accept("NOT", "LEAKPROOF"):
        fd.leakproof = _once(fd.leakproof, False)
    elif r.at("COST") or r.at("ROWS"):
        option = r.next().text
        sign = -1.0 if r.accept("-") else 1.0
        t = r.next()
        if t.kind != "num":
            r.i -= 1
            raise r.error()
        if option == "COST":
            fd.cost = _once(fd.cost, sign * float(t.text))
        else:
            fd.rows = _once(fd.rows, sign * float(t.text))
    elif r.at("SET") or r.at("WINDOW") or r.at("SUPPORT") or r.at("TRANSFORM"):
        raise PgError(FEATURE_NOT_SUPPORTED, f"CREATE FUNCTION ... {r.next().text} is not supported",
                      hint="Leave the option out.")
    else:
        raise r.error()


def _once(current, value):
    if current is not None:
        raise PgError(SYNTAX_ERROR, "conflicting or redundant options")
    return value


@dataclass
class FunctionRef:
    """A function named by DROP / ALTER / GRANT: with argument types, or without (name alone)."""

    schema: str | None
    name: str
    arg_types: list[str] | None = None


def parse_ref(r: Reader) -> FunctionRef:
    schema, name = r.qualified()
    if not r.at("("):
        return FunctionRef(schema, name)
    args = parse_args(r)
    return FunctionRef(schema, name, [a.type_text for a in args if a.mode != "o"])


def parse_refs(r: Reader) -> list[FunctionRef]:
    refs = [parse_ref(r)]
    while r.accept(","):
        refs.append(parse_ref(r))
    return refs


def refuse_language(language: str) -> PgError:
    if language in ("plpgsql", "c", "internal", "plpython3u", "plperl", "pltcl", "plv8"):
        return PgError(FEATURE_NOT_SUPPORTED, f"functions in LANGUAGE {language} are not supported",
                       hint="Write the function in LANGUAGE sql.")
    return PgError("42704", f'language "{language}" does not exist')


def no_language() -> PgError:
    return PgError(INVALID_FUNCTION_DEFINITION, "no language specified")
