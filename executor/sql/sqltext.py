"""Lexical helpers on SQL text: splitting a Query message into statements
and classifying utility commands sqlglot does not parse."""
from __future__ import annotations

import re


class Statement(str):
    """One statement of a Query message; ``offset`` is where it begins in the
    message, so an error position inside it can be reported, as PostgreSQL
    does, in characters of the whole message."""

    offset: int = 0
    semicolon: int | None = None     # where the semicolon ending it is in the message, if one does
    message: str = ""                # the whole message (PREPARE records it as its statement's text)

    def __new__(cls, text: str, offset: int = 0, semicolon: int | None = None, message: str = "") -> "Statement":
        self = super().__new__(cls, text)
        self.offset, self.semicolon, self.message = offset, semicolon, message
        return self


def source_text(sql: str) -> str:
    """The text PostgreSQL's parse state holds for a statement: the whole
    Query message it is one of (or the Parse string, which is ``sql``)."""
    return sql.message if isinstance(sql, Statement) and sql.message else sql


_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$")


def _quoted_end(sql: str, i: int) -> int:
    """End (exclusive) of the quoted token starting at ``i`` ('...', E'...',
    "..." or $tag$...$tag$), or -1 when none starts there.  An unterminated
    one runs to the end of the text, where the parser will complain."""
    ch, n = sql[i], len(sql)
    if ch == "$":
        m = _DOLLAR_TAG.match(sql, i)
        if m is None or (i > 0 and (sql[i - 1].isalnum() or sql[i - 1] == "_")):
            return -1
        j = sql.find(m.group(0), m.end())
        return n if j < 0 else j + len(m.group(0))
    if ch not in "'\"":
        return -1
    escapes = ch == "'" and i > 0 and sql[i - 1] in "eE" and (i < 2 or not (sql[i - 2].isalnum() or sql[i - 2] == "_"))
    j = i + 1
    while j < n:
        c = sql[j]
        if escapes and c == "\\":
            j += 2
            continue
        if c == ch:
            if j + 1 < n and sql[j + 1] == ch:
                j += 2
                continue
            return j + 1
        j += 1
    return n


def _comment_end(sql: str, i: int) -> int:
    """End (exclusive) of the comment starting at ``i``, or -1.  Block
    comments nest, as PostgreSQL's do."""
    if sql.startswith("--", i):
        j = sql.find("\n", i)
        return len(sql) if j < 0 else j
    if not sql.startswith("/*", i):
        return -1
    depth, j, n = 0, i, len(sql)
    while j < n:
        if sql.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif sql.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if depth == 0:
                return j
        else:
            j += 1
    return n


_SPECIAL = re.compile(r"['\"$;()]|--|/\*")


def _lexemes(sql: str):
    """(start, end, kind) of each quoted token ("q"), comment ("c") and
    semicolon or parenthesis ("p"), in order; other text is skipped by one
    regex search, so a long VALUES list costs no Python step per character."""
    i, n = 0, len(sql)
    while i < n:
        m = _SPECIAL.search(sql, i)
        if m is None:
            return
        i = m.start()
        ch = sql[i]
        j = _quoted_end(sql, i) if ch in "'\"$" else _comment_end(sql, i) if ch in "-/" else -1
        if j > 0:
            yield i, j, "q" if ch in "'\"$" else "c"
            i = j
        else:
            if ch in ";()":
                yield i, i + 1, "p"
            i += 1


def split_statements(sql: str) -> list[Statement]:
    """Split on top-level semicolons (quotes, dollar quotes, comments and
    parentheses respected).  Empty statements are dropped; each keeps its
    offset in ``sql``."""
    if not any(c in sql for c in "'\"$;") and "--" not in sql and "/*" not in sql:
        s = sql.strip()      # one statement, nothing to skip over: no walk per character
        return [Statement(s, sql.index(s[0]), message=sql)] if s else []
    out: list[Statement] = []
    begin, depth = 0, 0

    def close(end: int) -> None:
        part = sql[begin:end]
        s = part.strip()
        if s:
            out.append(Statement(s, begin + part.index(s[0]), end if end < len(sql) else None, sql))

    for i, _, kind in _lexemes(sql):
        if kind != "p":
            continue
        ch = sql[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == ";" and depth <= 0:
            close(i)
            begin = i + 1
    close(len(sql))
    return out


def blank_comments(sql: str) -> str:
    """``sql`` with each comment replaced by spaces (its newlines kept), so
    that every other character keeps its position; quoted text is untouched
    (``'--x'`` is a string, not a comment)."""
    if "--" not in sql and "/*" not in sql:
        return sql
    parts, at = [], 0
    for i, j, kind in _lexemes(sql):
        if kind == "c":
            parts.append(sql[at:i])
            parts.append(re.sub(r"[^\n]", " ", sql[i:j]))
            at = j
    parts.append(sql[at:])
    return "".join(parts)


def strip_comments(sql: str) -> str:
    return blank_comments(sql).strip()


def first_words(sql: str, k: int = 3) -> list[str]:
    return [w.upper() for w in re.findall(r"[A-Za-z_]+", strip_comments(sql)[:200])[:k]]


def unquote(name: str) -> str:
    name = name.strip()
    if name.startswith('"') and name.endswith('"'):
        return name[1:-1].replace('""', '"')
    return name.lower()


def split_args(s: str) -> list[str]:
    buf: list[str] = []
    out, depth, q = [], 0, None
    for ch in s:
        if q:
            buf.append(ch)
            if ch == q:
                q = None
            continue
        if ch in "'\"":
            q = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    if "".join(buf).strip():
        out.append("".join(buf).strip())
    return out


def qualified_name_parts(name: str) -> list[str]:
    """A qualified name written as text ('v', 's.v', '"MyV"'), as PostgreSQL
    reads it from a string (regclass input, PipelineDB's view-name
    arguments): split at dots outside quotes, unquoted parts folded to
    lower case, quoted ones kept as written."""
    out, cur, quoted = [], "", False
    for ch in name.strip():
        if ch == '"':
            quoted = not quoted
        if ch == "." and not quoted:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [unquote(p) for p in out + [cur]]
