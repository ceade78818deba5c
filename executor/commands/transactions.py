"""BEGIN / COMMIT / ROLLBACK / SAVEPOINT / RELEASE (PostgreSQL's xact commands).
"""
from __future__ import annotations

import re

from splitstream.catalog.storage.database import Transaction
from splitstream.protocol.errors import (
    ACTIVE_SQL_TRANSACTION, FEATURE_NOT_SUPPORTED, NO_ACTIVE_SQL_TRANSACTION, SYNTAX_ERROR, Notice, PgError,
)

from ..api import Result
from ..execution.setting_changes import changed_reported, reported
from ..settings import check_setting
from .base import Stmt

_MODE = re.compile(r"\s*(isolation\s+level\s+(serializable|repeatable\s+read|read\s+committed|read\s+uncommitted)"
                   r"|read\s+write|read\s+only|not\s+deferrable|deferrable)(?:\s*,|\s+|$)", re.I)


def check_transaction_modes(modes: str) -> None:
    """The modes of BEGIN / START TRANSACTION / SET TRANSACTION / SET SESSION
    CHARACTERISTICS AS TRANSACTION, checked as the settings they stand for:
    an isolation level or read-only mode splitstream does not provide is
    refused, not accepted and ignored."""
    rest = modes.strip().rstrip(";").strip()
    while rest:
        m = _MODE.match(rest)
        if m is None:
            word = rest.split()[0].rstrip(",;")
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{word}"')
        mode = " ".join(m.group(1).lower().split())
        level = " ".join(m.group(2).lower().split()) if m.group(2) else None
        try:
            if level is not None:
                check_setting("transaction_isolation", level)
            elif mode == "read only":
                check_setting("transaction_read_only", "on")
        except PgError as e:
            what = f"isolation level {level.upper()} is" if level else "read-only transactions are"
            raise PgError(e.sqlstate, f"{what} not supported", hint=e.hint) from None
        rest = rest[m.end():].strip()


class TxnStmt(Stmt):
    transaction_control = True

    def __init__(self, kind: str, name: str | None = None, tag: str = "") -> None:
        self.kind, self.name, self.tag = kind, name, tag
        self.allowed_in_failed = kind in ("rollback", "commit", "rollback_to")

    def run(self, session, params):
        # ending a transaction or savepoint can put back reported settings: PostgreSQL reports them
        before = reported(session.info.settings)
        res = self._run(session)
        res.parameter_status = changed_reported(session.info.settings, before)
        return res

    def _run(self, session) -> Result:
        k = self.kind
        notices = []
        implicit = session.txn is not None and session.txn.implicit     # a multi-statement Query's block
        if k == "begin":
            if implicit:
                session.txn.implicit = False        # it becomes the block BEGIN opens (PostgreSQL: no warning)
            elif session.txn is not None:
                notices.append(Notice("there is already a transaction in progress", ACTIVE_SQL_TRANSACTION, "WARNING"))
            else:
                session.txn = Transaction(session.db, implicit=False)
                session.failed = False
            return Result(tag="BEGIN", notices=notices)
        if k in ("commit", "rollback"):
            if session.txn is None:
                notices.append(Notice("there is no transaction in progress", NO_ACTIVE_SQL_TRANSACTION, "WARNING"))
                return Result(tag="COMMIT" if k == "commit" else "ROLLBACK", notices=notices)
            if implicit:        # ends the implicit block, with PostgreSQL's warning
                notices.append(Notice("there is no transaction in progress", NO_ACTIVE_SQL_TRANSACTION, "WARNING"))
            txn = session.txn
            session.txn = None
            failed = session.failed
            session.failed = False
            if k == "commit" and not failed:
                txn.commit(sync=session.info.sync_commit)
                return Result(tag="COMMIT", notices=notices)
            txn.rollback()
            return Result(tag="ROLLBACK", notices=notices)
        if session.txn is None or implicit:
            raise PgError(NO_ACTIVE_SQL_TRANSACTION, f"{self.tag} can only be used in transaction blocks")
        if k == "savepoint":
            if session.failed:
                raise PgError("25P02", "current transaction is aborted, commands ignored until end of transaction block")
            session.txn.savepoint(self.name)
            return Result(tag="SAVEPOINT")
        if k == "release":
            session.txn.release(self.name)
            return Result(tag="RELEASE")
        if k == "rollback_to":
            session.txn.rollback_to(self.name)
            session.failed = False
            return Result(tag="ROLLBACK")
        raise PgError(FEATURE_NOT_SUPPORTED, k)

