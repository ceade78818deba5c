"""LOCK TABLE (PostgreSQL's LockTableCommand), in splitstream's concurrency model.

One transaction writes at a time (the database's writer lock) and readers
never block.  So the modes that conflict with writers (ROW EXCLUSIVE and
stronger) take the writer lock until the block ends, which holds off every
other writer as PostgreSQL's lock would (and more); ACCESS SHARE and ROW
SHARE conflict with no reader or writer here and only check privileges.
"""
from __future__ import annotations

from splitstream.protocol.errors import LOCK_NOT_AVAILABLE, UNDEFINED_TABLE, WRONG_OBJECT_TYPE, PgError

from ..api import Result
from ..execution import privileges
from .base import Stmt
from .role_syntax import Reader

NO_ACTIVE_SQL_TRANSACTION = "25P01"

_MODES = ["ACCESS SHARE", "ROW SHARE", "ROW EXCLUSIVE", "SHARE UPDATE EXCLUSIVE", "SHARE ROW EXCLUSIVE",
          "SHARE", "EXCLUSIVE", "ACCESS EXCLUSIVE"]


class LockStmt(Stmt):
    cacheable = False
    tag = "LOCK TABLE"

    def __init__(self, names: list[tuple[str | None, str]], mode: str, nowait: bool) -> None:
        self.names, self.mode, self.nowait = names, mode, nowait

    def _privileges(self) -> str:
        """LockTableAclCheck: which privilege (any of them) the mode needs."""
        if self.mode == "ACCESS SHARE":
            return "r"
        if self.mode == "ROW EXCLUSIVE":
            return "awdD"
        return "wdD"

    def run(self, session, ctx):
        if session.txn is None:
            raise PgError(NO_ACTIVE_SQL_TRANSACTION, "LOCK TABLE can only be used in transaction blocks")
        st = ctx.state
        for schema, name in self.names:
            if schema:
                privileges.check_schema(st, privileges.current_role(st, session.info), schema, "U")
                rel = st.lookup(schema, name)
            else:
                rel = next((r for s in privileges.search_path(session.info) if (r := st.lookup(s, name))), None)
            if rel is None:
                raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
            if rel.kind not in ("r", "v", "f"):
                raise PgError(WRONG_OBJECT_TYPE, f'"{rel.name}" is not a table or view')
            privileges.authorize(st, session.info, [privileges.Need(self._privileges(), rel.oid, any_of=True)])
        if _MODES.index(self.mode) >= _MODES.index("ROW EXCLUSIVE"):
            if self.nowait:
                if not ctx.txn.try_for_write():
                    raise PgError(LOCK_NOT_AVAILABLE, f'could not obtain lock on relation "{self.names[0][1]}"')
            else:
                ctx.txn.for_write(ctx.check_cancel)
        return Result(tag=self.tag)


def lock_statement(text: str) -> LockStmt:
    r = Reader(text)
    r.expect("LOCK")
    r.accept("TABLE")
    r.accept("ONLY")
    names = [r.qualified()]
    r.accept("*")
    while r.accept(","):
        names.append(r.qualified())
        r.accept("*")
    mode = "ACCESS EXCLUSIVE"
    if r.accept("IN"):
        words = []
        while not r.done() and not r.at("MODE"):
            words.append(str(r.next()))
        r.expect("MODE")
        mode = " ".join(words)
        if mode not in _MODES:
            raise r.error()
    nowait = r.accept("NOWAIT")
    r.end()
    return LockStmt(names, mode, nowait)
