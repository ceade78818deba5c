"""Settings changed inside a transaction, undone as PostgreSQL's GUC stack
undoes them, and the reported settings (ParameterStatus) a statement changed.

Why a module of its own (in execution): SET, SET ROLE and RESET (commands)
and set_config() (an expression) change settings the same way, and the
session reports what changed after any of them.
"""
from __future__ import annotations

from splitstream.protocol.errors import NULL_VALUE_NOT_ALLOWED, PgError
from splitstream.protocol.messages import REPORTED_PARAMETERS


def undo_on_rollback(session, ctx, names: tuple[str, ...], local: bool = False, block_only: bool = True) -> None:
    """Inside a transaction block, a ROLLBACK (or a ROLLBACK TO a savepoint
    set before) restores these settings, as PostgreSQL undoes SET, RESET and
    SET ROLE. SET LOCAL's value also ends with the block when it commits,
    unless a plain SET of the setting came after it (PostgreSQL's GUC stack:
    SET overrides any earlier SET LOCAL at commit). Unless ``block_only``,
    the statement's implicit transaction counts as a block (set_config():
    a local value ends with the statement, a failed statement undoes it).
    The implicit block of an extended-protocol batch (up to Sync) is a block
    too: a failure in it rolls back a SET before it, as in PostgreSQL."""
    txn = ctx.txn
    if session.txn is None and block_only and txn is not session.extended_txn:
        return
    settings = session.info.settings
    keys = tuple(n.lower() for n in names)
    saved = {n: settings.get(n) for n in keys}
    sources = session.setting_sources          # pg_settings.source follows the value back
    saved_sources = {n: sources.get(n) for n in keys}
    writes = txn.setting_writes
    saved_writes = {n: writes.get(n, 0) for n in keys}
    user, login = session.info.user, session.info.login_role
    undone = [False]

    def restore() -> None:
        # the values as they were (already checked), put back as they were:
        # an undo never fails, whatever the statement that set them did
        session.info.user, session.info.login_role = user, login
        for n, v in saved.items():
            if v is None and "." in n:
                settings[n] = ""          # a custom setting stays defined, empty (PostgreSQL's placeholder)
            elif v is None:
                settings.pop(n, None)
            else:
                settings[n] = v
        for n, src in saved_sources.items():
            if src is None:
                sources.pop(n, None)
            else:
                sources[n] = src

    def undo() -> None:
        undone[0] = True
        restore()
        writes.update(saved_writes)

    def end_local() -> None:
        if not undone[0] and all(writes.get(n, 0) == saved_writes[n] for n in keys):
            restore()

    txn.on_rollback.append(undo)
    if local:
        txn.on_end.append(end_local)
    else:
        for n in keys:
            writes[n] = writes.get(n, 0) + 1


def reported(settings: dict[str, str]) -> dict[str, str | None]:
    """The reported settings' values (by setting name), to compare later."""
    return {n: settings.get(n) for n in REPORTED_PARAMETERS}


def changed_reported(settings: dict[str, str], before: dict[str, str | None]) -> dict[str, str]:
    """The reported settings whose value is not what it was (by wire name:
    TimeZone, DateStyle, ...): PostgreSQL sends a ParameterStatus for each."""
    return {REPORTED_PARAMETERS[n]: v for n in REPORTED_PARAMETERS
            if (v := settings.get(n)) is not None and v != before[n]}


def set_config_rows(session, ctx, names: list, values: list, local_flags: list) -> list[str | None]:
    """``set_config(name, value, is_local)`` row by row, in order, as
    PostgreSQL calls it once per row: each sets the parameter (a NULL value
    resets it, a NULL is_local is false) and answers what SHOW then prints.
    A NULL name is PostgreSQL's 22004."""
    out: list[str | None] = []
    for name, value, local in zip(names, values, local_flags):
        if name is None:
            raise PgError(NULL_VALUE_NOT_ALLOWED, "SET requires parameter name")
        undo_on_rollback(session, ctx, (name,), bool(local), block_only=False)
        session.set_setting(name, value)
        ctx.notices.extend(session.setting_notices(name))
        out.append(session.show_setting(name))
    return out


def current_setting_rows(session, names: list, missing_ok: list | None) -> list[str | None]:
    """``current_setting(name [, missing_ok])`` row by row (a strict
    function: a NULL argument gives NULL)."""
    flags = missing_ok if missing_ok is not None else [False] * len(names)
    return [None if name is None or ok is None else session.examine_setting(name, ok)
            for name, ok in zip(names, flags)]
