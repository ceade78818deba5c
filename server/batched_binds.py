"""The server's side of a run of Bind/[Describe]/Execute cycles
(``protocol.bind_runs``): its parameters decoded as columns, and the
answers each cycle would have had on its own.

Only cycles of a statement that returns no rows are taken this way (the
engine then takes them as one batch: ``EngineSession.execute_deferred_run``).
A fixed-width binary parameter is one numpy view; any other (text format,
text, numeric, ...) is decoded value by value, as a Bind would; a value that
fails to decode sends the whole run message by message, so the error is
raised by its own Bind.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from splitstream.protocol import bind_runs, messages
from splitstream.protocol.errors import PgError

from .portal import Statement, decode_value


def run_columns(stmt: Statement, run: bind_runs.BindRun, tz: str) -> list[np.ndarray | list[Any] | None] | None:
    """Per parameter, its values in every cycle (None: NULL in all; a numpy
    column of the type's native dtype, or a list of Python values), typed
    by the statement's parameter types; None if the Binds must be answered
    one by one (a parameter count or value a Bind refuses)."""
    oids = stmt.param_oids
    if len(oids) != len(run.fields):
        return None
    cols: list[np.ndarray | list[Any] | None] = []
    for j, (oid, fmt, f) in enumerate(zip(oids, run.formats, run.fields)):
        if f is None:
            cols.append(None)
            continue
        values = bind_runs.binary_values(run, j, oid) if fmt == 1 else None
        if values is not None:
            cols.append(values)
            continue
        try:
            cols.append([decode_value(oid, fmt, bytes(v), tz) for v in run.column(j)])
        except PgError:
            return None
    return cols


def run_answer(run: bind_runs.BindRun, tag: str) -> bytes:
    """BindComplete, [NoData,] CommandComplete(``tag``) for every cycle."""
    one = messages.bind_complete() + (messages.no_data() if run.described else b"") + messages.command_complete(tag)
    return one * run.count
