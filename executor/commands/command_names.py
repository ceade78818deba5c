"""What a statement is called where PostgreSQL names it in an error
("cannot execute INSERT in a read-only transaction": its CreateCommandName),
and whether it is one a read-only transaction refuses or one that takes no
snapshot (SET, SHOW: they may come before SET TRANSACTION).

Why from the text: the refusal must come before the statement runs
(a stream INSERT or a COPY writes without touching the relational state),
and the leading words are what PostgreSQL's name is made of.
"""
from __future__ import annotations

import functools
import re

_COMMENTS = re.compile(r"\s*(?:--[^\n]*\n?|/\*.*?\*/\s*)*", re.S)
_WORDS = re.compile(r"[A-Za-z_]+")
#: leading words that are the whole name, and those whose next word(s) complete it
_OBJECT_WORDS = {"CREATE", "ALTER", "DROP", "COMMENT", "REFRESH", "IMPORT", "SECURITY", "REASSIGN"}
_SKIPPED = {"OR", "REPLACE", "TEMP", "TEMPORARY", "UNLOGGED", "GLOBAL", "LOCAL", "UNIQUE", "RECURSIVE", "TRUSTED",
            "PROCEDURAL", "DEFAULT", "IF", "NOT", "EXISTS", "CONCURRENTLY"}
_TWO_WORD_OBJECTS = {"MATERIALIZED", "FOREIGN", "EVENT", "TEXT", "ACCESS", "USER", "OPERATOR", "DEFAULT"}
#: commands a read-only transaction refuses (PostgreSQL's PreventCommandIfReadOnly and ExecCheckXactReadOnly)
_WRITES = {"INSERT", "UPDATE", "DELETE", "MERGE", "COPY FROM", "TRUNCATE TABLE", "GRANT", "REVOKE", "SELECT INTO",
           "SELECT FOR UPDATE", "SELECT FOR NO KEY UPDATE", "SELECT FOR SHARE", "SELECT FOR KEY SHARE", "REINDEX",
           "CLUSTER"}
#: commands that take no snapshot: the transaction's modes may still change after them
_NO_SNAPSHOT = {"SET", "SHOW", "RESET", "PREPARE", "DEALLOCATE", "LISTEN", "UNLISTEN", "DISCARD", "SAVEPOINT",
                "RELEASE"}
_LOCKING = re.compile(r"\bFOR\s+(NO\s+KEY\s+UPDATE|UPDATE|KEY\s+SHARE|SHARE)\b", re.I)
#: quoted text (strings, E'' strings, dollar quotes, quoted identifiers) and comments: never keywords
_QUOTED = re.compile(r"\b[Ee]'(?:[^'\\]|''|\\.)*'|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\$([A-Za-z_]\w*|)\$.*?\$\1\$"
                     r"|--[^\n]*|/\*.*?\*/", re.S)


#: the statement's start that names most commands (a long INSERT is never scanned whole)
_HEAD_CHARS = 2000


def command_name(sql: str) -> str:
    """PostgreSQL's name of the command ``sql`` starts with (upper case)."""
    return _cached_name(sql) if len(sql) <= _HEAD_CHARS else _name(sql)


@functools.lru_cache(maxsize=1024)
def _cached_name(sql: str) -> str:
    return _name(sql)


def _name(sql: str) -> str:
    start = _QUOTED.sub(" '' ", sql[:_HEAD_CHARS])
    text = _COMMENTS.sub("", start.lstrip("( \t\r\n"), count=1)
    words = [w.upper() for w in _WORDS.findall(text[:200])]
    if not words:
        return ""
    head = words[0]
    if head not in ("WITH", "COPY", "SELECT", "TABLE", "VALUES", "CREATE"):
        return _named(head, words)
    sql = start if len(sql) <= _HEAD_CHARS else _QUOTED.sub(" '' ", sql)
    if head == "WITH":
        return _with_name(sql)
    if head == "COPY":
        return "COPY FROM" if re.search(r"\bFROM\s+(STDIN|'|PROGRAM\b)", sql, re.I) else "COPY"
    if head in ("SELECT", "TABLE", "VALUES"):
        if re.search(r"\bINTO\s+(?!STRICT)", sql, re.I) and head == "SELECT" and not re.search(r"\bINSERT\b", sql, re.I):
            return "SELECT INTO"
        m = _LOCKING.search(sql)
        return f"SELECT FOR {' '.join(m.group(1).upper().split())}" if m else "SELECT"
    name = _named(head, words)
    if name == "CREATE TABLE" and re.search(r"\)\s*AS\b|\bAS\s*(\(|SELECT\b|VALUES\b|TABLE\b|WITH\b)", sql, re.I):
        return "CREATE TABLE AS"
    return name


def _named(head: str, words: list[str]) -> str:
    """The name from the leading words: the keyword, or for CREATE/ALTER/DROP ... the object's kind too."""
    if head == "TRUNCATE":
        return "TRUNCATE TABLE"
    if head not in _OBJECT_WORDS:
        return head
    rest = [w for w in words[1:] if w not in _SKIPPED]
    if not rest:
        return head
    return f"{head} {rest[0] if rest[0] not in _TWO_WORD_OBJECTS or len(rest) < 2 else f'{rest[0]} {rest[1]}'}"


def _with_name(sql: str) -> str:
    """A WITH query is named after the first data-modifying command in it, as PostgreSQL reports it."""
    m = re.search(r"\bAS\s+(?:NOT\s+)?(?:MATERIALIZED\s+)?\(\s*(INSERT|UPDATE|DELETE|MERGE)\b", sql, re.I)
    if m:
        return m.group(1).upper()
    tail = re.search(r"\)\s*(INSERT|UPDATE|DELETE|MERGE)\b[^)]*$", sql, re.I | re.S)
    return tail.group(1).upper() if tail else "SELECT"


def writes(command: str) -> bool:
    """Does a read-only transaction refuse this command?"""
    return command in _WRITES or command.split(" ", 1)[0] in _OBJECT_WORDS


def takes_snapshot(command: str) -> bool:
    return command.split(" ", 1)[0] not in _NO_SNAPSHOT
