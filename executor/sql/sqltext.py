"""Lexical helpers on SQL text: splitting a Query message into statements
and classifying utility commands sqlglot does not parse."""
from __future__ import annotations

import re


def split_statements(sql: str) -> list[str]:
    """Split on top-level semicolons (quotes, dollar quotes, comments and
    parentheses respected).  Empty statements are dropped."""
    if not any(c in sql for c in "'\"$;") and "--" not in sql and "/*" not in sql:
        s = sql.strip()      # one statement, nothing to skip over: no walk per character
        return [s] if s else []
    out, buf = [], []
    i, n = 0, len(sql)
    depth = 0
    while i < n:
        ch = sql[i]
        if ch == "'" or ch == '"':
            j = i + 1
            while j < n:
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            buf.append(sql[i : j + 1])
            i = j + 1
            continue
        if ch == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            j = n if j < 0 else j
            buf.append(sql[i:j])
            i = j
            continue
        if ch == "/" and sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            j = n if j < 0 else j + 2
            buf.append(sql[i:j])
            i = j
            continue
        if ch == "$":
            m = re.match(r"\$([A-Za-z_][A-Za-z_0-9]*)?\$", sql[i:])
            if m and not (i > 0 and (sql[i - 1].isalnum() or sql[i - 1] == "_")):
                tag = m.group(0)
                j = sql.find(tag, i + len(tag))
                j = n if j < 0 else j + len(tag)
                buf.append(sql[i:j])
                i = j
                continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == ";" and depth <= 0:
            s = "".join(buf).strip()
            if s:
                out.append(s)
            buf = []
            i += 1
            continue
        buf.append(ch)
        i += 1
    s = "".join(buf).strip()
    if s:
        out.append(s)
    return out


def strip_comments(sql: str) -> str:
    s = re.sub(r"/\*.*?\*/", " ", sql, flags=re.S)
    s = re.sub(r"--[^\n]*", " ", s)
    return s.strip()


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
