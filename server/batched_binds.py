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


#: One parameter of a run: None (NULL in every cycle), a numpy column and its
#: NULL mask (None: no NULL), or Python values (None: NULL).
RunColumn = tuple[np.ndarray, np.ndarray | None] | list[Any] | None


def run_columns(stmt: Statement, run: bind_runs.BindRun, tz: str) -> list[RunColumn] | None:
    """Per parameter, its values in every cycle, typed by the statement's
    parameter types: fixed-width binary ones as numpy columns, any other
    value by value; None if the Binds must be answered one by one (a
    parameter count or a value a Bind refuses)."""
    oids = stmt.param_oids
    if len(oids) != run.n_params:
        return None
    cols: list[RunColumn] = []
    for j, (oid, fmt) in enumerate(zip(oids, run.formats)):
        if run.all_null(j):
            cols.append(None)
            continue
        values = bind_runs.binary_values(run, j, oid) if fmt == 1 else None
        if values is not None:
            cols.append((values, run.nulls(j)))
            continue
        try:
            cols.append([None if v is None else decode_value(oid, fmt, v, tz) for v in run.values(j)])
        except PgError:
            return None
    return cols


def run_answer(run: bind_runs.BindRun, tag: str) -> bytes:
    """BindComplete, [NoData,] CommandComplete(``tag``) for every cycle."""
    one = messages.bind_complete() + (messages.no_data() if run.described else b"") + messages.command_complete(tag)
    return one * run.count
