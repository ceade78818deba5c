"""The server's side of a run of Bind/[Describe]/Execute cycles
(``protocol.bind_runs``): its parameters decoded as columns, and the
answers each cycle would have had on its own.

Only cycles of a statement that returns no rows are taken this way, and
only when every parameter is NULL throughout or a fixed-width binary value
(the engine then takes them as one batch: ``EngineSession.execute_deferred_run``).
Anything else is answered message by message, as before.
"""
from __future__ import annotations

import numpy as np

from splitstream.protocol import bind_runs, messages

from .portal import Statement


def run_columns(stmt: Statement, run: bind_runs.BindRun) -> list[np.ndarray | None] | None:
    """Per parameter, its values in every cycle (None: NULL in all), typed
    by the statement's parameter types; None if some parameter needs the
    per-value path (text format, a type or value decoded one by one, a
    parameter count the Bind must refuse)."""
    oids = stmt.param_oids
    if len(oids) != len(run.fields):
        return None
    cols: list[np.ndarray | None] = []
    for j, (oid, fmt, f) in enumerate(zip(oids, run.formats, run.fields)):
        if f is None:
            cols.append(None)
            continue
        if fmt != 1:
            return None
        values = bind_runs.binary_values(run, j, oid)
        if values is None:
            return None
        cols.append(values)
    return cols


def run_answer(run: bind_runs.BindRun, tag: str) -> bytes:
    """BindComplete, [NoData,] CommandComplete(``tag``) for every cycle."""
    one = messages.bind_complete() + (messages.no_data() if run.described else b"") + messages.command_complete(tag)
    return one * run.count
