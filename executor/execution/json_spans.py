"""Values inside a ``json`` text, as written: the ``json`` type keeps its
input text, so ``->``, ``#>`` and json_extract_path return the member's
own characters (``1.50`` stays ``1.50``, spacing and duplicate keys kept).

Why spans, not parsing: re-serialising a parsed value would change the
text PostgreSQL returns.  Each step scans one object or array level and
lets the standard decoder find where a member ends.
"""
from __future__ import annotations

import json
from json.decoder import scanstring  # type: ignore[attr-defined]

_DECODER = json.JSONDecoder()
_WS = " \t\n\r"


def _skip(s: str, i: int) -> int:
    while i < len(s) and s[i] in _WS:
        i += 1
    return i


def _end(s: str, i: int) -> int:
    """Where the value starting at ``i`` ends."""
    return _DECODER.raw_decode(s, i)[1]


def _members(s: str, start: int):
    """(key or index, value start, value end) of the object or array at ``start``."""
    opener = s[start]
    i = _skip(s, start + 1)
    k = 0
    if i < len(s) and s[i] in "}]":
        return
    while True:
        key: str | int = k
        if opener == "{":
            key, i = scanstring(s, i + 1)
            i = _skip(s, _skip(s, i) + 1)
        end = _end(s, i)
        yield key, i, end
        k += 1
        i = _skip(s, end)
        if s[i] in "}]":
            return
        i = _skip(s, i + 1)


def spans_of(s: str) -> list[tuple[str | int, int, int]]:
    """(key or index, start, end) of each member of the top-level object or array."""
    return list(_members(s, _skip(s, 0)))


def _child(s: str, start: int, step: str | int) -> tuple[int, int] | None:
    """The span of one member: the last one of that key (as PostgreSQL's
    json operators pick), or the array element at an index (negative from the end)."""
    if s[start] == "{" and isinstance(step, str):
        found = None
        for key, a, b in _members(s, start):
            if key == step:
                found = (a, b)
        return found
    if s[start] == "[":
        try:
            i = int(step)
        except ValueError:
            return None
        spans = [(a, b) for _, a, b in _members(s, start)]
        i = i + len(spans) if i < 0 else i
        return spans[i] if 0 <= i < len(spans) else None
    return None


def member(s: str, key: str | int, as_text: bool) -> str | None:
    """``->`` / ``->>``: a text key reads objects only, an integer arrays only."""
    first = s[_skip(s, 0):_skip(s, 0) + 1]
    if (first == "{") != isinstance(key, str):
        return None
    return get(s, [key], as_text)


def span(s: str, path: list) -> tuple[int, int] | None:
    """The span of the value at ``path`` (keys and indexes), or None when absent."""
    a = _skip(s, 0)
    b = _end(s, a)
    for step in path:
        if step is None:
            return None
        got = _child(s, a, step)
        if got is None:
            return None
        a, b = got
    return a, b


def get(s: str, path: list, as_text: bool) -> str | None:
    """``#>`` / ``#>>`` on json text: the member as written, or its string's
    contents as text (``->>`` of a JSON null is SQL NULL)."""
    got = span(s, path)
    if got is None:
        return None
    text = s[got[0]:got[1]]
    if not as_text:
        return text
    if text == "null":
        return None
    return json.loads(text) if text.startswith('"') else text
