"""Materialize's ``SUBSCRIBE [TO] view [WITH (SNAPSHOT [=] true|false)]``, as
a statement (simple query protocol) and as ``COPY (SUBSCRIBE ...) TO STDOUT``.

Output: ``mz_timestamp`` (int8, milliseconds since the epoch when the change
was read, never decreasing), ``mz_diff`` (int8: how many copies of the row
were added, negative for removed), then the view's columns.  With SNAPSHOT
(the default) the view's contents come first at the first timestamp; then,
each batch applied to the view brings one change: the view is read again
on the inserting thread and the difference to the last read is queued
(``stream/change_feed.py``), removals first, sent in the order the batches
were applied.  It runs until the client cancels (57014) or disconnects.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Iterator

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.catalog.storage.database import Transaction
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, SYNTAX_ERROR, PgError

from ..context import ExecContext
from ..execution import operators, privileges
from ..sql.dialect import parse_one
from ..sql.planner import Planner
from ..stream.change_feed import Feed
from ..stream.change_notify import FEEDS
from ..api import Result, ResultColumn
from .base import Stmt, columns_of

_RX = re.compile(r"""\s*subscribe\s+(?:to\s+)?(?P<name>(?:"(?:[^"]|"")+"|[\w$]+)(?:\s*\.\s*(?:"(?:[^"]|"")+"|[\w$]+))?)\s*
                     (?:with\s*\((?P<opts>[^)]*)\))?\s*;?\s*$""", re.I | re.S | re.X)
#: how often a waiting subscription checks for a cancel while no change comes
WAIT_SLICE = 0.1
HINT = "SUBSCRIBE reads a continuous view: SUBSCRIBE [TO] view [WITH (SNAPSHOT = true|false)]."


def is_subscribe(sql: str) -> bool:
    return re.match(r"\s*subscribe\b", sql, re.I) is not None


def _snapshot_option(opts: str | None) -> bool:
    snapshot = True
    for part in filter(None, (p.strip() for p in (opts or "").split(","))):
        m = re.fullmatch(r"(\w+)\s*(?:=\s*)?(\w+)?", part)
        if m is None:
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{part}"')
        name, value = m.group(1).lower(), (m.group(2) or "true").lower()
        if name != "snapshot":
            raise PgError(FEATURE_NOT_SUPPORTED, f"SUBSCRIBE option {name.upper()} is not supported", hint=HINT)
        if value not in ("true", "false", "on", "off"):
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for option "SNAPSHOT": {value}')
        snapshot = value in ("true", "on")
    return snapshot


def _plan_view(session, state, sql: str) -> tuple[bool, operators.Op, Planner, list[ResultColumn]]:
    """SNAPSHOT, the plan of ``SELECT * FROM view``, its planner, and the
    output columns; 0A000 unless it names a continuous view."""
    m = _RX.match(sql)
    if m is None:
        raise PgError(FEATURE_NOT_SUPPORTED, "SUBSCRIBE supports a view name only", hint=HINT)
    snapshot = _snapshot_option(m.group("opts"))
    pl = Planner(session.engine, state, session=session.info)
    plan = pl.plan_query(parse_one(f"SELECT * FROM {m.group('name')}"))
    if not any(v.continuous for v in pl.views_used) or pl.tables_used or pl.streams_used:
        raise PgError(FEATURE_NOT_SUPPORTED, "SUBSCRIBE needs a continuous view", hint=HINT)
    columns = [ResultColumn("mz_timestamp", type_oids.INT8, typlen=8),
               ResultColumn("mz_diff", type_oids.INT8, typlen=8)] + columns_of(plan)
    return snapshot, plan, pl, columns


class Subscription:
    """One SUBSCRIBE: the view's plan, its last rows, and the change batches."""

    def __init__(self, session, ctx, sql: str) -> None:
        self.session = session
        self.snapshot, self.plan, pl, self.columns = _plan_view(session, ctx.state, sql)
        privileges.authorize(ctx.state, session.info, pl.needs)
        watch = session.engine.streams.with_upstream([v.oid for v in pl.views_used if v.continuous], ctx)
        self.feed = Feed(self._read, frozenset(watch))
        self.view_columns = self.columns[2:]
        self.rows_sent = 0

    def _read(self) -> Counter:
        s = self.session
        ctx = ExecContext(db=s.db, txn=Transaction(s.db, implicit=True), session=s.info, engine=s.engine)
        ctx.engine_session = s
        batch = operators.run_plan(self.plan, ctx)
        cols = [c.to_pylist() for c in batch.cols]
        return Counter(zip(*cols)) if cols else Counter()

    def _rows(self, ts: int, rows: list[tuple[tuple, int]]) -> Batch:
        """One change as output rows."""
        k = len(rows)
        cols = [Col(np.full(k, ts, np.int64), None, type_oids.INT8),
                Col(np.array([d for _r, d in rows], np.int64), None, type_oids.INT8)]
        for i, c in enumerate(self.view_columns):
            cols.append(Col.from_pylist([r[i] for r, _d in rows], c.type_oid))
        self.rows_sent += k
        return Batch(cols, k)

    def batches(self) -> Iterator[Batch | None]:
        """Change batches; None when it waited without a change (a point to
        flush what was sent and check for a cancel).  Ends only by an error."""
        try:
            ts, first = FEEDS.attach(self.feed)
            if self.snapshot and first:
                yield self._rows(ts, list(first.items()))
            yield None
            info = self.session.info
            while True:
                if info.cancel_event.is_set():
                    info.cancel_event.clear()
                    raise PgError("57014", "canceling statement due to user request")
                change = FEEDS.wait(self.feed, WAIT_SLICE)
                yield None if change is None else self._rows(*change)
        finally:
            FEEDS.detach(self.feed)


class SubscribeStmt(Stmt):
    """``SUBSCRIBE`` as a statement: a row description, then rows as changes come."""

    cacheable = False

    def __init__(self, session, sql: str) -> None:
        self.sql = sql
        # the row shape, for Describe of a prepared SUBSCRIBE (extended protocol)
        state = session.txn.state if getattr(session, "txn", None) is not None else session.db.committed
        self.columns = _plan_view(session, state, sql)[3]

    def run(self, session, ctx):
        sub = Subscription(session, ctx, self.sql)
        return Result(tag="SUBSCRIBE", columns=sub.columns, row_stream=sub.batches())
