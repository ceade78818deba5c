"""SQL-level cursors (DECLARE / FETCH / MOVE / CLOSE), materialised at DECLARE.

A cursor holds its query's whole result, so every FETCH direction of
PostgreSQL is position arithmetic over it: the position runs from 0 (before
the first row) to N + 1 (after the last), as in PostgreSQL's portal.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
from typing import Any

from splitstream.protocol.errors import (DUPLICATE_CURSOR, FEATURE_NOT_SUPPORTED, INVALID_CURSOR_DEFINITION,
                                         INVALID_CURSOR_NAME, NO_ACTIVE_SQL_TRANSACTION,
                                         OBJECT_NOT_IN_PREREQUISITE_STATE, SYNTAX_ERROR, PgError)

from ..api import Result
from ..sql.sqltext import blank_comments
from .base import Stmt
from .cursor_scroll import scrollable
from .maintenance import LockingQueryStmt


@dataclasses.dataclass
class Cursor:
    result: Result
    statement: str                 # the DECLARE as written (pg_cursors.statement)
    hold: bool
    scroll: bool                   # SCROLL, or neither and PostgreSQL's plan could scroll; else NO SCROLL
    created: dt.datetime
    pos: int = 0                   # 0: before the first row; n + 1: after the last

    @property
    def rows(self) -> int:
        return self.result.batch.n if self.result.batch is not None else 0


def _ident(s: str) -> str:
    """A cursor name as PostgreSQL folds it: "Quoted" keeps its case, bare names are lowercased."""
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1].replace('""', '"')
    return s.lower()


_DECLARE = re.compile(r"\s*declare\s+(\"(?:[^\"]|\"\")+\"|\S+)\s+((?:(?:binary|insensitive|asensitive|no\s+scroll|scroll)\s+)*)"
                      r"cursor\s+((?:with|without)\s+hold\s+)?for\s+(.*)$", re.I | re.S)
_COUNT = r"[+-]?\d+"
_FETCH = re.compile(r"\s*(fetch|move)\s+(?:(next|prior|first|last|absolute\s+" + _COUNT + r"|relative\s+" + _COUNT
                    + r"|all|forward(?:\s+all|\s+" + _COUNT + r")?|backward(?:\s+all|\s+" + _COUNT + r")?|"
                    + _COUNT + r")\s+)?(?:from\s+|in\s+)?(\"(?:[^\"]|\"\")+\"|\S+?)\s*;?\s*$", re.I | re.S)


def cursor_statement(text: str, words: list[str]) -> Stmt:
    w0 = words[0]
    if w0 == "DECLARE":
        return _declare(text)
    if w0 in ("FETCH", "MOVE"):
        return _fetch(text, w0)
    m = re.match(r"\s*close\s+(\"(?:[^\"]|\"\")+\"|\S+?)\s*;?\s*$", text, re.I)
    name = _ident(m.group(1)) if m else "all"

    class _Close(Stmt):
        cacheable = False

        def run(self, session, ctx):
            if name == "all":
                session.cursors.clear()
            elif session.cursors.pop(name, None) is None:
                raise PgError(INVALID_CURSOR_NAME, f'cursor "{name}" does not exist')
            return Result(tag="CLOSE CURSOR")

    return _Close()


def _declare(text: str) -> Stmt:
    m = _DECLARE.match(text)
    if not m:
        raise PgError(SYNTAX_ERROR, "syntax error in DECLARE")
    name, options, query = _ident(m.group(1)), " ".join(m.group(2).lower().split()), m.group(4)
    hold = (m.group(3) or "").lower().split()[:1] == ["with"]      # (WITHOUT HOLD is the default)
    binary = "binary" in options.split()
    if "no scroll" in options and re.search(r"(?<!no )scroll", options):
        raise PgError(INVALID_CURSOR_DEFINITION, "cannot specify both SCROLL and NO SCROLL")
    scroll = False if "no scroll" in options else (True if "scroll" in options else None)
    statement = text.strip().rstrip(";").strip()
    query_at = text.index(query)
    first = re.match(r"[\s(]*(\w+)", query)
    if first is None or first.group(1).lower() not in ("select", "values", "table", "with"):
        word = first.group(1) if first is not None else query.strip()[:1]
        at = query_at + (first.start(1) if first is not None else 0) + 1
        raise PgError(SYNTAX_ERROR, f'syntax error at or near "{word}"', position=at)

    class _Declare(Stmt):
        cacheable = False
        lead = 0            # blanks and comments before the DECLARE, which ``text`` has not

        def sent_as(self, sql: str) -> None:
            blanked = blank_comments(sql)
            self.lead = len(blanked) - len(blanked.lstrip())

        def run(self, session, ctx):
            # PerformCursorOpen's order: the query's analysis, the block, then the portal's name
            try:
                p = session.prepare(query, [])
            except PgError as e:            # placed in the DECLARE, as PostgreSQL analyses it there
                if e.position is None:
                    raise
                raise dataclasses.replace(e, position=e.position + query_at + self.lead) from None
            if isinstance(p.handle, LockingQueryStmt):
                _read_only_cursor(query, hold, scroll is True, "insensitive" in options.split())
            if session.txn is None and not hold:
                # a Query's implicit block counts, as in PostgreSQL (IsTransactionBlock); an
                # extended-protocol batch before Sync does not
                raise PgError(NO_ACTIVE_SQL_TRANSACTION, "DECLARE CURSOR can only be used in transaction blocks")
            if binary:
                raise PgError(FEATURE_NOT_SUPPORTED, "binary cursors are not supported",
                              hint="Declare the cursor without BINARY: FETCH returns its rows as text.")
            if getattr(p.handle, "modifies_in_with", False):     # writable_cte.WritesThenStmt
                raise PgError(FEATURE_NOT_SUPPORTED, "DECLARE CURSOR must not contain data-modifying statements in WITH")
            if name in session.cursors:
                raise PgError(DUPLICATE_CURSOR, f'cursor "{name}" already exists')
            res = p.handle.run(session, ctx)
            chosen = scroll
            if chosen is None:          # as PostgreSQL's PortalStart chooses from the plan
                plan = getattr(p.handle, "plan", None)
                chosen = plan is None or scrollable(plan, isinstance(p.handle, LockingQueryStmt))
            session.cursors[name] = Cursor(res, statement, hold, chosen, dt.datetime.now(dt.timezone.utc))
            if session.txn is not None:     # closed when its block ends; WITH HOLD: only if it rolls back
                hooks = ctx.txn.on_rollback if hold else ctx.txn.on_end
                hooks.append(lambda: session.cursors.pop(name, None))
            return Result(tag="DECLARE CURSOR")

    return _Declare()


#: PostgreSQL's row locking clauses, strongest first (a relation locked twice keeps the stronger)
_LOCKS = ("update", "no key update", "share", "key share")


def _read_only_cursor(query: str, hold: bool, scroll: bool, insensitive: bool) -> None:
    """A cursor over SELECT ... FOR UPDATE/SHARE can be none of WITH HOLD,
    SCROLL, INSENSITIVE (transformDeclareCursorStmt's checks, in its order)."""
    found = {" ".join(m.split()).lower() for m in re.findall(r"(?i)\bfor\s+((?:no\s+)?key\s+\w+|update|share)\b", query)}
    lock = "FOR " + next((k for k in _LOCKS if k in found), "update").upper()
    if hold:
        raise PgError(FEATURE_NOT_SUPPORTED, f"DECLARE CURSOR WITH HOLD ... {lock} is not supported",
                      detail="Holdable cursors must be READ ONLY.")
    if scroll:
        raise PgError(FEATURE_NOT_SUPPORTED, f"DECLARE SCROLL CURSOR ... {lock} is not supported",
                      detail="Scrollable cursors must be READ ONLY.")
    if insensitive:
        raise PgError(INVALID_CURSOR_DEFINITION, f"DECLARE INSENSITIVE CURSOR ... {lock} is not valid",
                      detail="Insensitive cursors must be READ ONLY.")


def _fetch(text: str, w0: str) -> Stmt:
    m = _FETCH.match(text)
    if not m:
        raise PgError(SYNTAX_ERROR, f"syntax error in {w0}")
    direction = _direction(" ".join((m.group(2) or "next").lower().split()))
    name = _ident(m.group(3))

    class _Fetch(Stmt):
        cacheable = False
        columns_at_run = w0 == "FETCH"      # the cursor's rows (MOVE returns none)

        def run(self, session, ctx):
            cur = session.cursors.get(name)
            if cur is None:
                raise PgError(INVALID_CURSOR_NAME, f'cursor "{name}" does not exist')
            rows = _move(cur, direction, w0 == "MOVE")
            if w0 == "MOVE":
                return Result(tag=f"MOVE {len(rows)}")
            res = cur.result
            batch = res.batch.take(rows) if res.batch is not None else None
            return Result(tag=f"FETCH {len(rows)}", columns=res.columns, batch=batch)

    return _Fetch()


@dataclasses.dataclass(frozen=True)
class _Direction:
    """A FETCH/MOVE direction, read once: ABSOLUTE k (FIRST is 1, LAST -1),
    or a run of ``count`` rows (None: ALL; never negative) one way."""
    absolute: int | None
    count: int | None
    forward: bool
    single: bool = False        # RELATIVE: only the row the run lands on


def _direction(how: str) -> _Direction:
    word, _, arg = how.partition(" ")
    if word in ("first", "last", "absolute"):
        return _Direction(1 if word == "first" else (-1 if word == "last" else int(arg)), None, True)
    if word == "relative":
        k = int(arg)
        return _Direction(None, abs(k), k >= 0, k != 0)
    count: int | None
    if word in ("forward", "backward"):
        count, forward = (None if arg == "all" else (int(arg) if arg else 1)), word == "forward"
    else:
        count = {"next": 1, "prior": 1, "all": None}[word] if word in ("next", "prior", "all") else int(word)
        forward = word != "prior"
    if count is not None and count < 0:
        forward, count = not forward, -count
    return _Direction(None, count, forward)


def _move(cur: Cursor, d: _Direction, move: bool) -> list[int]:
    """Move ``cur`` as PostgreSQL's FETCH (MOVE: ``move``) in direction ``d``
    does; the 0-based row numbers it returns, in order."""
    if not cur.scroll and _scans_back(cur, d, move):
        raise PgError(OBJECT_NOT_IN_PREREQUISITE_STATE, "cursor can only scan forward",
                      hint="Declare it with SCROLL option to enable backward scan.")
    n = cur.rows
    if d.absolute is not None:
        k = d.absolute
        target = max(0, min(k if k > 0 else n + 1 + k if k < 0 else 0, n + 1))
        cur.pos = target
        return [target - 1] if 1 <= target <= n else []
    return _run(cur, d.count, d.forward, d.single)


def _scans_back(cur: Cursor, d: _Direction, move: bool) -> bool:
    """Would PostgreSQL's portal read backwards (or rewind) for this, which a
    NO SCROLL cursor refuses?  As DoPortalRunFetch decides: a backward run;
    FETCH 0 on a row (it steps back to read it again; MOVE 0 only counts);
    ABSOLUTE from the end, or to a row not ahead, or nearer the start than
    the position, which rewinds (a no-op at the start)."""
    n, p = cur.rows, cur.pos
    if d.absolute is not None:
        k = d.absolute
        if k < 0:
            return True
        portal_pos = min(p, n)
        if k == 0 or k - 1 <= portal_pos // 2:
            return p != 0                      # a rewind
        return k <= portal_pos + (1 if p == n + 1 else 0)
    if d.count == 0:            # MOVE 0 only counts; FETCH 0 reads the row again, or reads nothing backwards
        return not move and (1 <= p <= n or not d.forward)
    return not d.forward


def _run(cur: Cursor, count: int | None, forward: bool, single: bool = False) -> list[int]:
    """FETCH [FORWARD|BACKWARD] count|ALL from the position: the rows passed
    (``single``: RELATIVE, only the row it lands on)."""
    n, p = cur.rows, cur.pos
    if count == 0:              # the current row, without moving
        return [p - 1] if 1 <= p <= n else []
    if forward:
        last = n if count is None else min(p + count, n)          # 1-based, inclusive
        cur.pos = n + 1 if count is None or p + count > n else p + count
        rows = list(range(p, last)) if p <= n else []
    else:
        first = 1 if count is None else max(p - count, 1)
        cur.pos = 0 if count is None or p - count < 1 else p - count
        rows = [i - 1 for i in range(min(p - 1, n), first - 1, -1)]
    if single:
        return [cur.pos - 1] if 1 <= cur.pos <= n else []
    return rows


def cursor_rows(session: Any) -> list[tuple]:
    """pg_cursors' rows for ``session`` (an engine session, or None)."""
    out = []
    for name, cur in list((getattr(session, "cursors", None) or {}).items()):
        out.append((name, cur.statement, cur.hold, False, cur.scroll, cur.created))
    return out
