"""Materialize's ``SUBSCRIBE [TO] view [WITH (SNAPSHOT [=] true|false)]``, as
a statement (simple query protocol) and as ``COPY (SUBSCRIBE ...) TO STDOUT``.

Output: ``mz_timestamp`` (int8, milliseconds since the epoch when the change
was read, never decreasing), ``mz_diff`` (int8: how many copies of the row
were added, negative for removed), then the view's columns.  With SNAPSHOT
(the default) the view's contents come first at the first timestamp; then,
each time batches are applied to the view (``stream/change_notify.CHANGES``),
the view is read again and the difference to the last read is sent,
removals first.  It runs until the client cancels (57014) or disconnects.
Each read is a fresh statement over the committed state, so a change is
sent once, after it is durable; changes applied between two reads are sent
as their net difference (a row added and removed again is not shown).
"""
from __future__ import annotations

import re
import time
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
from ..stream.change_notify import CHANGES
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


class Subscription:
    """One SUBSCRIBE: the view's plan, its last rows, and the change batches."""

    def __init__(self, session, ctx, sql: str) -> None:
        m = _RX.match(sql)
        if m is None:
            raise PgError(FEATURE_NOT_SUPPORTED, "SUBSCRIBE supports a view name only", hint=HINT)
        self.snapshot = _snapshot_option(m.group("opts"))
        self.session = session
        tree = parse_one(f"SELECT * FROM {m.group('name')}")
        pl = Planner(session.engine, ctx.state, session=session.info)
        self.plan = pl.plan_query(tree)
        views = [v for v in pl.views_used if v.continuous]
        if not views or pl.tables_used or pl.streams_used:
            raise PgError(FEATURE_NOT_SUPPORTED, "SUBSCRIBE needs a continuous view", hint=HINT)
        privileges.authorize(ctx.state, session.info, pl.needs)
        self.oids = tuple(v.oid for v in views)
        self.view_columns = columns_of(self.plan)
        self.columns = [ResultColumn("mz_timestamp", type_oids.INT8, typlen=8),
                        ResultColumn("mz_diff", type_oids.INT8, typlen=8)] + self.view_columns
        self.last: Counter = Counter()
        self.ts = 0
        self.rows_sent = 0

    def _read(self) -> Counter:
        s = self.session
        ctx = ExecContext(db=s.db, txn=Transaction(s.db, implicit=True), session=s.info, engine=s.engine)
        ctx.engine_session = s
        batch = operators.run_plan(self.plan, ctx)
        cols = [c.to_pylist() for c in batch.cols]
        return Counter(zip(*cols)) if cols else Counter()

    def _diff(self, now: Counter) -> Batch | None:
        """The change from the last read to ``now`` as output rows (removals first)."""
        removed, added = self.last - now, now - self.last
        self.last = now
        if not removed and not added:
            return None
        self.ts = max(self.ts, int(time.time() * 1000))
        rows = [(r, -n) for r, n in removed.items()] + [(r, n) for r, n in added.items()]
        k = len(rows)
        cols = [Col(np.full(k, self.ts, np.int64), None, type_oids.INT8),
                Col(np.array([d for _r, d in rows], np.int64), None, type_oids.INT8)]
        for i, c in enumerate(self.view_columns):
            cols.append(Col.from_pylist([r[i] for r, _d in rows], c.type_oid))
        self.rows_sent += k
        return Batch(cols, k)

    def batches(self) -> Iterator[Batch | None]:
        """Change batches; None when it waited without a change (a point to
        flush what was sent and check for a cancel).  Ends only by an error."""
        seen = sum(CHANGES.generation(o) for o in self.oids)
        first = self._read()
        if self.snapshot:
            out = self._diff(first)
            if out is not None:
                yield out
        else:
            self.last = first
        yield None
        info = self.session.info
        while True:
            if info.cancel_event.is_set():
                info.cancel_event.clear()
                raise PgError("57014", "canceling statement due to user request")
            now = CHANGES.wait(self.oids, seen, WAIT_SLICE)
            if now == seen:
                yield None
                continue
            seen = now
            out = self._diff(self._read())
            yield out


class SubscribeStmt(Stmt):
    """``SUBSCRIBE`` as a statement: a row description, then rows as changes come."""

    cacheable = False

    def __init__(self, sql: str) -> None:
        self.sql = sql

    def run(self, session, ctx):
        sub = Subscription(session, ctx, self.sql)
        return Result(tag="SUBSCRIBE", columns=sub.columns, row_stream=sub.batches())
