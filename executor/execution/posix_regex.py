"""PostgreSQL's regular expressions (ARE) on Python's ``re``, and the
regexp_* functions of PostgreSQL 15.

Why a module of its own: PostgreSQL's dialect differs from Python's in
bracket classes (``[[:alpha:]]``), word-boundary escapes (``\\m \\M \\y``),
replacement strings (``\\1``, ``\\&``; a missing group is empty), option
letters (``'gi'``, ``'q'``, ``'x'``) and how a split treats empty matches;
the ``~`` operators, SIMILAR TO and every regexp_* function share it.
Character classes follow the database's LC_CTYPE, which splitstream reports
as C: only ASCII letters, digits and spaces belong to them.
"""
from __future__ import annotations

import re
from functools import lru_cache

from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

INVALID_REGULAR_EXPRESSION = "2201B"

_CLASSES = {
    "alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z", "lower": "a-z", "space": r" \t\n\r\f\v",
    "blank": r" \t", "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"), "xdigit": "0-9A-Fa-f",
    "word": "a-zA-Z0-9_", "cntrl": r"\x00-\x1f\x7f", "print": r"\x20-\x7e", "graph": r"\x21-\x7e",
}
_ESCAPES = {"m": r"\b(?=\w)", "M": r"\b(?<=\w)", "y": r"\b", "Y": r"\B"}
_OPTION_LETTERS = set("bceimnpqstwxg")


def _translate(pattern: str) -> str:
    """An ARE as a Python pattern: bracket classes spelled out, PostgreSQL's
    own escapes mapped; everything else is shared syntax."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_bracket = False
    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            out.append(_ESCAPES.get(nxt, ch + nxt) if not in_bracket else ch + nxt)
            i += 2
            continue
        if in_bracket and pattern.startswith("[:", i):
            end = pattern.find(":]", i + 2)
            name = pattern[i + 2:end] if end > 0 else ""
            if name not in _CLASSES:
                raise PgError(INVALID_REGULAR_EXPRESSION, "invalid regular expression: invalid character class")
            out.append(_CLASSES[name])
            i = end + 2
            continue
        if ch == "[" and not in_bracket:
            in_bracket = True
            out.append(ch)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            if i < n and pattern[i] == "]":          # a leading ] is a literal member
                out.append(r"\]")
                i += 1
            continue
        if ch == "]" and in_bracket:
            in_bracket = False
        elif ch == "[" and in_bracket:
            out.append("\\")
        out.append(ch)
        i += 1
    return "".join(out)


_PG_MESSAGES = (
    ("missing ), unterminated subpattern", "parentheses () not balanced"),
    ("unbalanced parenthesis", "parentheses () not balanced"),
    ("unterminated character set", "brackets [] not balanced"),
    ("nothing to repeat", "quantifier operand invalid"),
    ("multiple repeat", "quantifier operand invalid"),
    ("bad escape", "invalid escape \\ sequence"),
)


@lru_cache(maxsize=512)
def compile_regex(pattern: str, flags: str = "", *, icase: bool = False) -> re.Pattern:
    """The compiled pattern with PostgreSQL's option letters applied
    (``i``/``c`` case, ``n``/``m`` newline-sensitive, ``x`` expanded, ``q``
    literal); 2201B with PostgreSQL's words when it does not compile."""
    fl = re.ASCII | re.DOTALL
    literal = False
    for letter in flags:
        if letter == "i":
            icase = True
        elif letter == "c":
            icase = False
        elif letter in "nm":
            fl = (fl & ~re.DOTALL) | re.MULTILINE
        elif letter == "s":
            fl = (fl | re.DOTALL) & ~re.MULTILINE
        elif letter == "x":
            fl |= re.VERBOSE
        elif letter == "q":
            literal = True
    try:
        return re.compile(re.escape(pattern) if literal else _translate(pattern), fl | (re.I if icase else 0))
    except re.error as e:
        words = next((pg for py, pg in _PG_MESSAGES if str(e).startswith(py)), str(e))
        raise PgError(INVALID_REGULAR_EXPRESSION, f"invalid regular expression: {words}") from None


def check_flags(flags: str | None, function: str, *, global_ok: bool) -> str:
    """The option string, or 22023 for an unknown letter (and for ``g`` where
    only one match is returned)."""
    flags = flags or ""
    for letter in flags:
        if letter not in _OPTION_LETTERS:
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid regular expression option: "{letter}"')
        if letter == "g" and not global_ok:
            raise PgError(INVALID_PARAMETER_VALUE, f'{function}() does not support the "global" option',
                          hint=f"Use the {function}es function instead." if function == "regexp_match" else None)
    return flags


def _expand(template: str, m: re.Match) -> str:
    """A replacement: ``\\1``..``\\9`` the groups (empty when absent), ``\\&``
    the match, ``\\\\`` a backslash; other characters as written."""
    out: list[str] = []
    i, n = 0, len(template)
    while i < n:
        ch = template[i]
        if ch == "\\" and i + 1 < n:
            nxt = template[i + 1]
            if nxt.isdigit() and nxt != "0":
                k = int(nxt)
                out.append((m.group(k) or "") if k <= (m.re.groups or 0) else "")
            elif nxt == "&":
                out.append(m.group(0))
            else:
                out.append(nxt if nxt == "\\" else ch + nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def regexp_replace(s: str, pattern: str, replacement: str, flags: str | None = None) -> str:
    flags = check_flags(flags, "regexp_replace", global_ok=True)
    rx = compile_regex(pattern, flags)
    return rx.sub(lambda m: _expand(replacement, m), s, count=0 if "g" in flags else 1)


def regexp_match(s: str, pattern: str, flags: str | None = None) -> list | None:
    rx = compile_regex(pattern, check_flags(flags, "regexp_match", global_ok=False))
    m = rx.search(s)
    if m is None:
        return None
    return list(m.groups()) if rx.groups else [m.group(0)]


def regexp_matches(s: str, pattern: str, flags: str | None = None) -> list[list]:
    """regexp_matches' rows: each match's groups (or the whole match), every
    match with 'g', else the first."""
    flags = check_flags(flags, "regexp_matches", global_ok=True)
    rx = compile_regex(pattern, flags)
    found = rx.finditer(s) if "g" in flags else filter(None, [rx.search(s)])
    return [list(m.groups()) if rx.groups else [m.group(0)] for m in found]


def regexp_split(s: str, pattern: str, flags: str | None = None) -> list[str]:
    """regexp_split_to_table's pieces: an empty match at either end of the
    string, or right after the previous match, does not split."""
    rx = compile_regex(pattern, check_flags(flags, "regexp_split_to_table", global_ok=False))
    pieces, start = [], 0
    for m in rx.finditer(s):
        if m.start() == m.end() and (m.start() in (0, len(s)) or m.start() == start):
            continue
        pieces.append(s[start:m.start()])
        start = m.end()
    pieces.append(s[start:])
    return pieces


def _matches(s: str, pattern: str, start: int, flags: str | None, function: str) -> list[re.Match]:
    if start <= 0:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "start": {start}')
    rx = compile_regex(pattern, check_flags(flags, function, global_ok=False))
    return list(rx.finditer(s, start - 1)) if start - 1 <= len(s) else []


def regexp_count(s: str, pattern: str, start: int = 1, flags: str | None = None) -> int:
    return len(_matches(s, pattern, start, flags, "regexp_count"))


def regexp_like(s: str, pattern: str, flags: str | None = None) -> bool:
    return bool(_matches(s, pattern, 1, flags, "regexp_like"))


def regexp_substr(s: str, pattern: str, start: int = 1, nth: int = 1, flags: str | None = None,
                  subexpr: int = 0) -> str | None:
    if nth <= 0:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "n": {nth}')
    if subexpr < 0:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "subexpr": {subexpr}')
    found = _matches(s, pattern, start, flags, "regexp_substr")
    if len(found) < nth:
        return None
    m = found[nth - 1]
    return m.group(subexpr) if subexpr <= (m.re.groups or 0) else None


def regexp_instr(s: str, pattern: str, start: int = 1, nth: int = 1, endoption: int = 0, flags: str | None = None,
                 subexpr: int = 0) -> int:
    if nth <= 0:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "n": {nth}')
    if endoption not in (0, 1):
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "endoption": {endoption}')
    if subexpr < 0:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "subexpr": {subexpr}')
    found = _matches(s, pattern, start, flags, "regexp_instr")
    if len(found) < nth or subexpr > (found[nth - 1].re.groups or 0) or found[nth - 1].start(subexpr) < 0:
        return 0
    m = found[nth - 1]
    return (m.end(subexpr) if endoption else m.start(subexpr)) + 1


def similar_to_regex(pattern: str, escape: str | None = "\\") -> str:
    """SIMILAR TO's pattern as a regular expression (similar_escape): % and _
    are .* and . outside brackets, ^ and $ are literal there, the escape
    character makes the next one literal; the whole string must match."""
    out: list[str] = []
    in_bracket = False
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if escape and ch == escape and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if in_bracket:
            in_bracket = ch != "]"
            out.append(ch)
        elif ch == "[":
            in_bracket = True
            out.append(ch)
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        elif ch in ".^$":
            out.append("\\" + ch)
        else:
            out.append(ch)
        i += 1
    return "^(?:" + "".join(out) + ")$"
