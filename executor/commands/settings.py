"""SET / SHOW / RESET of session settings (PostgreSQL's commands/variable.c).
"""
from __future__ import annotations

import re

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import INSUFFICIENT_PRIVILEGE, SYNTAX_ERROR, Notice, PgError

from ..api import Result, ResultColumn
from ..execution import privileges
from ..settings import DEFAULT_SETTINGS, DISPLAY_NAMES, OWN_SETTINGS, PG15_SETTINGS
from ..settings.listing import show_all_rows
from ..sql.sqltext import split_args
from . import pg_settings_table  # noqa: F401  (registers pg_catalog.pg_settings)
from .base import Stmt
from .session_role import parse_role_setting, undo_on_rollback
from .setting_contexts import CANT_CHANGE_RUNTIME_PARAM, REFUSALS, context_of
from .transactions import TXN_SETTINGS, SetTransactionStmt, TxnModes, check_transaction_modes


class SetStmt(Stmt):
    cacheable = True

    def __init__(self, name: str, value: str | None, local: bool = False) -> None:
        self.name, self.value, self.local = name, value, local

    def run(self, session, ctx):
        check_context(self.name, privileges.current_role(ctx.state, session.info).superuser)
        if self.local and session.txn is None:
            return Result(tag="SET", notices=[Notice("SET LOCAL can only be used in transaction blocks",
                                                     sqlstate="25P01", severity="WARNING")])
        undo_on_rollback(session, ctx, (self.name,), self.local)
        changed = session.set_setting(self.name, self.value)
        notices = session.setting_notices(self.name) if self.value is not None else []
        return Result(tag="SET", parameter_status=changed, notices=notices)


def check_context(name: str, superuser: bool) -> None:
    """set_config_option's refusals by context: a parameter fixed at server
    start, by the configuration file or at connection start cannot be SET
    (55P02), and a superuser parameter needs a superuser (42501)."""
    name = name.lower()
    context = context_of(name)
    if context in REFUSALS:
        raise PgError(CANT_CHANGE_RUNTIME_PARAM, REFUSALS[context].format(name))
    if context == "superuser" and not superuser:
        raise PgError(INSUFFICIENT_PRIVILEGE, f'permission denied to set parameter "{name}"')


#: Settings RESET ALL leaves alone: they follow the role, not a default.
_FOLLOW_THE_ROLE = frozenset({"is_superuser", "session_authorization"})


def _reset_by_all(name: str) -> bool:
    """Whether RESET ALL puts ``name`` back: every parameter a session may
    have SET (PostgreSQL's, splitstream's own, a placeholder such as
    ``myapp.x``), not the ones following the role nor the session's own
    bookkeeping kept among its settings (``__currval_...``)."""
    if name in _FOLLOW_THE_ROLE or name.startswith("__"):
        return False
    return name in DEFAULT_SETTINGS or name in PG15_SETTINGS or name in OWN_SETTINGS or "." in name


class ResetStmt(SetStmt):
    def run(self, session, ctx):
        if self.name in ("role", "session authorization"):    # RESET ROLE, RESET SESSION AUTHORIZATION
            stmt = parse_role_setting(f"RESET {self.name}", reset=True)
            assert stmt is not None
            return stmt.run(session, ctx)
        if self.name == "all":
            undo_on_rollback(session, ctx, tuple(session.info.settings))
            changed = {}
            for k in list(session.info.settings):
                if _reset_by_all(k):
                    changed.update(session.set_setting(k, None))
            # the role went back to the session user's: is_superuser follows it
            su = privileges.current_role(ctx.state, session.info).superuser
            changed.update(session.set_setting("is_superuser", "on" if su else "off"))
            return Result(tag="RESET", parameter_status=changed)
        undo_on_rollback(session, ctx, (self.name,))
        return Result(tag="RESET", parameter_status=session.set_setting(self.name, None))


#: SHOW ALL's columns, as PostgreSQL's
SHOW_ALL_COLUMNS = [ResultColumn("name", type_oids.TEXT), ResultColumn("setting", type_oids.TEXT),
                    ResultColumn("description", type_oids.TEXT)]


class ShowStmt(Stmt):
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, session, ctx):
        if self.name == "all":
            rows = show_all_rows(session, privileges.reads_all_settings(ctx.state, session.info))
            b = Batch([Col.from_pylist([r[j] for r in rows], type_oids.TEXT) for j in range(3)], len(rows))
            return Result(tag="SHOW", columns=SHOW_ALL_COLUMNS, batch=b)
        v = session.examine_setting(self.name)

        return Result(tag="SHOW", columns=[ResultColumn(DISPLAY_NAMES.get(self.name, self.name).lower() if self.name not in DISPLAY_NAMES else DISPLAY_NAMES[self.name], type_oids.TEXT)],
                      batch=Batch([Col.from_pylist([v], type_oids.TEXT)], 1))


def parse_set(text: str) -> Stmt:
    m = re.match(r"\s*set\s+(session\s+|local\s+)?(.*?)\s*;?\s*$", text, re.I | re.S)
    if m is None:   # "SET" alone, or run on ("SET4x"): the dispatcher saw only the word SET
        raise PgError(SYNTAX_ERROR, "syntax error at end of input")
    rest = m.group(2)
    low = rest.lower()
    local = (m.group(1) or "").strip().lower() == "local"
    stmt = _parse_set_rest(text, rest, low)
    if isinstance(stmt, SetStmt):
        stmt.local = local
    return stmt


def _parse_set_rest(text: str, rest: str, low: str) -> Stmt:
    if low.startswith("time zone"):
        v = rest[9:].strip()
        if v.lower() in ("local", "default"):
            return SetStmt("timezone", None)
        return SetStmt("timezone", _time_zone_value(v))
    m_txn = re.match(r"((?:session\s+)?characteristics\s+as\s+)?transaction\s+(.*)$", rest, re.I | re.S)
    if m_txn:
        return SetTransactionStmt(check_transaction_modes(m_txn.group(2)), session_wide=bool(m_txn.group(1)))
    if low.startswith("names"):
        return SetStmt("client_encoding", _setval(rest[5:].strip()))
    if re.match(r"(session\s+authorization|authorization|role)\b", low):
        role_stmt = parse_role_setting(text, reset=False)
        if role_stmt is not None:
            return role_stmt
    mm = re.match(r"([A-Za-z_][\w.]*)\s*(?:=|\bto\b)\s*(.*)$", rest, re.I | re.S)
    if not mm:
        raise PgError(SYNTAX_ERROR, f'syntax error at or near "{rest.split()[0] if rest.split() else "SET"}"')
    name = mm.group(1).lower()
    v = mm.group(2).strip()
    value = None if v.lower() == "default" else _setval(v)
    if name in TXN_SETTINGS:         # the block's own modes (PostgreSQL's check hooks)
        return SetTransactionStmt(TxnModes(), setting=(name, value), outside=None)
    return SetStmt(name, value)


def _time_zone_value(v: str) -> str:
    """SET TIME ZONE's value: a number of hours east (``-7``) or
    ``INTERVAL '+05:30' HOUR TO MINUTE`` is the fixed zone PostgreSQL names
    ``<-07>+07`` / ``<+05:30>-05:30``; anything else as SET TimeZone."""
    m = re.fullmatch(r"interval\s+'([+-]?)(\d{1,2})(?::(\d{2}))?'(?:\s+hour\s+to\s+minute)?|([+-]?\d+(?:\.\d+)?)",
                     v.strip(), re.I)
    if m is None:
        return _setval(v)
    if m.group(4) is not None:
        minutes = round(float(m.group(4)) * 60)
    else:
        minutes = (int(m.group(2)) * 60 + int(m.group(3) or 0)) * (-1 if m.group(1) == "-" else 1)
    hours, rest = divmod(abs(minutes), 60)
    text = f"{hours:02d}" + (f":{rest:02d}" if rest else "")
    east, west = ("-", "+") if minutes < 0 else ("+", "-")
    return f"<{east}{text}>{west}{text}"


def _setval(v: str) -> str:
    parts = split_args(v)
    out = []
    for p in parts:
        p = p.strip()
        if p.startswith("'") and p.endswith("'"):
            p = p[1:-1].replace("''", "'")
        elif p.startswith('"') and p.endswith('"'):
            p = p[1:-1]
        out.append(p)
    return ", ".join(out)
