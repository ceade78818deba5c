"""BEGIN / COMMIT / ROLLBACK / SAVEPOINT / RELEASE (PostgreSQL's xact commands).
"""
from __future__ import annotations

import dataclasses
import re

from splitstream.catalog.storage.database import Transaction
from splitstream.protocol.errors import (
    ACTIVE_SQL_TRANSACTION, FEATURE_NOT_SUPPORTED, NO_ACTIVE_SQL_TRANSACTION, SYNTAX_ERROR, Notice, PgError,
)

from ..api import Result
from ..execution.setting_changes import changed_reported, reported
from ..settings import check_setting, normalize_setting
from .base import Stmt

_MODE = re.compile(r"\s*(isolation\s+level\s+(serializable|repeatable\s+read|read\s+committed|read\s+uncommitted)"
                   r"|read\s+write|read\s+only|not\s+deferrable|deferrable)(?:\s*,|\s+|$)", re.I)


@dataclasses.dataclass
class TxnModes:
    """The modes a BEGIN / SET TRANSACTION names (None: not named)."""

    isolation: str | None = None
    read_only: bool | None = None
    deferrable: bool | None = None


def check_transaction_modes(modes: str) -> TxnModes:
    """The modes of BEGIN / START TRANSACTION / SET TRANSACTION / SET SESSION
    CHARACTERISTICS AS TRANSACTION, each checked as the setting it stands for."""
    out = TxnModes()
    rest = modes.strip().rstrip(";").strip()
    while rest:
        m = _MODE.match(rest)
        if m is None:
            word = rest.split()[0].rstrip(",;")
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{word}"')
        mode = " ".join(m.group(1).lower().split())
        if m.group(2):
            out.isolation = " ".join(m.group(2).lower().split())
            check_setting("transaction_isolation", out.isolation)
        elif mode in ("read only", "read write"):
            out.read_only = mode == "read only"
        else:
            out.deferrable = mode == "deferrable"
        rest = rest[m.end():].strip()
    return out


def begin_modes(txn: Transaction, settings: dict, modes: TxnModes | None = None) -> None:
    """A transaction block's modes: those BEGIN names, else the session's defaults."""
    modes = modes or TxnModes()
    txn.isolation = modes.isolation or settings.get("default_transaction_isolation", "read committed")
    txn.read_only = modes.read_only if modes.read_only is not None \
        else settings.get("default_transaction_read_only", "off") == "on"
    txn.deferrable = modes.deferrable if modes.deferrable is not None \
        else settings.get("default_transaction_deferrable", "off") == "on"


def set_modes(txn: Transaction, modes: TxnModes) -> None:
    """SET TRANSACTION in a block: as PostgreSQL's check hooks, the level
    and READ WRITE only before the block's first query."""
    if modes.isolation is not None and modes.isolation != txn.isolation and txn.queried:
        raise PgError(ACTIVE_SQL_TRANSACTION, "SET TRANSACTION ISOLATION LEVEL must be called before any query")
    if modes.read_only is False and txn.read_only and txn.queried:
        raise PgError(ACTIVE_SQL_TRANSACTION, "transaction read-write mode must be set before any query")
    if modes.isolation is not None:
        txn.isolation = modes.isolation
    if modes.read_only is not None:
        txn.read_only = modes.read_only
    if modes.deferrable is not None:
        txn.deferrable = modes.deferrable


#: the settings that are the current block's modes, and the TxnModes field of each
TXN_SETTINGS = {"transaction_isolation": "isolation", "transaction_read_only": "read_only",
                "transaction_deferrable": "deferrable"}


class SetTransactionStmt(Stmt):
    """SET TRANSACTION modes (the current block) / SET SESSION CHARACTERISTICS
    AS TRANSACTION modes (the defaults of the blocks that follow) / SET or
    RESET of transaction_isolation, transaction_read_only or
    transaction_deferrable (``setting``: its name and value, None for the
    default), which are the block's modes as in PostgreSQL.  Outside a
    block SET TRANSACTION and RESET warn and change nothing; a plain SET
    changes nothing silently (it would last only for its own statement)."""

    def __init__(self, modes: TxnModes, session_wide: bool = False, setting: tuple[str, str | None] | None = None,
                 outside: str | None = "SET TRANSACTION can only be used in transaction blocks") -> None:
        self.modes, self.session_wide, self.setting, self.outside = modes, session_wide, setting, outside

    def run(self, session, ctx) -> Result:
        m = self.modes if self.setting is None else self._setting_modes(session.info.settings)
        if self.session_wide:
            for name, value in (("default_transaction_isolation", m.isolation),
                                ("default_transaction_read_only", _on_off(m.read_only)),
                                ("default_transaction_deferrable", _on_off(m.deferrable))):
                if value is not None:
                    session.set_setting(name, value)
            return Result(tag="SET")
        tag = "RESET" if self.setting is not None and self.setting[1] is None and self.outside else "SET"
        txn = session.txn
        if txn is None or txn.implicit:
            notices = [Notice(self.outside, NO_ACTIVE_SQL_TRANSACTION, "WARNING")] if self.outside else []
            return Result(tag=tag, notices=notices)
        set_modes(txn, m)
        return Result(tag=tag)

    def _setting_modes(self, settings: dict) -> TxnModes:
        assert self.setting is not None
        name, value = self.setting
        if value is None:
            value = settings.get("default_" + name, "read committed" if name == "transaction_isolation" else "off")
        check_setting(name, value)
        checked = normalize_setting(name, value)
        if name == "transaction_isolation":
            return TxnModes(isolation=" ".join(checked.lower().split()))
        if name == "transaction_read_only":
            return TxnModes(read_only=checked == "on")
        return TxnModes(deferrable=checked == "on")


def _on_off(flag: bool | None) -> str | None:
    return None if flag is None else "on" if flag else "off"


class TxnStmt(Stmt):
    transaction_control = True

    def __init__(self, kind: str, name: str | None = None, tag: str = "", modes: TxnModes | None = None) -> None:
        self.kind, self.name, self.tag, self.modes = kind, name, tag, modes
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
                begin_modes(session.txn, session.info.settings, self.modes)
            elif session.txn is not None:
                notices.append(Notice("there is already a transaction in progress", ACTIVE_SQL_TRANSACTION, "WARNING"))
            else:
                session.txn = Transaction(session.db, implicit=False)
                begin_modes(session.txn, session.info.settings, self.modes)
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

