"""SQL-level cursors (DECLARE / FETCH / CLOSE), materialised at DECLARE."""
from __future__ import annotations

import re

from splitstream.protocol.errors import DUPLICATE_CURSOR, FEATURE_NOT_SUPPORTED, INVALID_CURSOR_NAME, SYNTAX_ERROR, PgError

from ..api import Result
from .base import Stmt


def _ident(s: str) -> str:
    """A cursor name as PostgreSQL folds it: "Quoted" keeps its case, bare names are lowercased."""
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1].replace('""', '"')
    return s.lower()


def cursor_statement(text: str, words: list[str]) -> Stmt:
    w0 = words[0]
    if w0 == "DECLARE":
        m = re.match(r"\s*declare\s+(\S+)\s+.*?cursor\s+((?:with|without)\s+hold\s+)?for\s+(.*)$", text, re.I | re.S)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error in DECLARE")
        name, query = _ident(m.group(1)), m.group(3)
        hold = (m.group(2) or "").lower().startswith("with")

        class _Declare(Stmt):
            cacheable = False

            def run(self, session, ctx):
                if name in session.cursors:
                    raise PgError(DUPLICATE_CURSOR, f'cursor "{name}" already exists')
                p = session.prepare(query, [])
                if getattr(p.handle, "modifies_in_with", False):     # writable_cte.WritesThenStmt
                    raise PgError(FEATURE_NOT_SUPPORTED, "DECLARE CURSOR must not contain data-modifying statements in WITH")
                res = p.handle.run(session, ctx)
                session.cursors[name] = [res, 0]
                if session.txn is not None and not hold:    # closed when its transaction block ends
                    ctx.txn.on_end.append(lambda: session.cursors.pop(name, None))
                return Result(tag="DECLARE CURSOR")

        return _Declare()
    if w0 in ("FETCH", "MOVE"):
        m = re.match(r"\s*(?:fetch|move)\s+(?:(next|all|forward\s+all|forward\s+\d+|\d+)\s+)?(?:from\s+|in\s+)?(\S+?)\s*;?\s*$", text, re.I)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error in FETCH")
        how = (m.group(1) or "next").lower()
        name = _ident(m.group(2))

        class _Fetch(Stmt):
            cacheable = False
            columns_at_run = w0 == "FETCH"      # the cursor's rows (MOVE returns none)

            def run(self, session, ctx):
                cur = session.cursors.get(name)
                if cur is None:
                    raise PgError(INVALID_CURSOR_NAME, f'cursor "{name}" does not exist')
                res, pos = cur
                total = res.batch.n if res.batch is not None else 0
                if "all" in how:
                    k = total - pos
                elif how == "next":
                    k = 1
                else:
                    k = int(how.split()[-1])
                k = max(0, min(k, total - pos))
                cur[1] = pos + k
                if w0 == "MOVE":
                    return Result(tag=f"MOVE {k}")
                return Result(tag=f"FETCH {k}", columns=res.columns, batch=res.batch.slice(pos, pos + k))

        return _Fetch()
    m = re.match(r"\s*close\s+(\S+?)\s*;?\s*$", text, re.I)
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
