"""Event-time window bounds (TUMBLE / HOP panes) on whole columns.

Why a node of its own instead of a ``date_bin`` call: the window's width,
origin and slide are constants of the plan, so the bound of every row is one
integer expression over int64 microseconds (numpy, no Python per row), and
the retention reaper (``stream/retention.py``) recognises the pane key of a
continuous view by this node's class.

A pane [start, start + size) holds ``ts`` when
``start = ts - ((ts - origin) mod slide) - hop * slide`` for a hop index
``hop`` in ``0 .. ceil(size / slide) - 1`` (TUMBLE: slide = size, hop = 0).
"""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError

from .expr import ColRef, Expr
from .operators import Filter, Project

#: microseconds per day: an interval's days count as 24 hours, as date_bin does
DAY_US = 86_400_000_000


class WindowBound(Expr):
    """``window_start`` (``end_offset`` = 0) or ``window_end`` (``end_offset``
    = size) of the pane a row falls in; ``hop``: the hop index column of a
    HOP (None for TUMBLE)."""

    def __init__(self, ts: Expr, hop: Expr | None, slide_us: int, origin_us: int, end_offset_us: int,
                 size_us: int, kind: str, oid: int) -> None:
        self.ts, self.hop = ts, hop
        self.slide_us, self.origin_us, self.end_offset_us, self.size_us = slide_us, origin_us, end_offset_us, size_us
        self.kind, self.oid = kind, oid        # kind: 'start' | 'end'

    def children(self) -> list[Expr]:
        return [self.ts] + ([self.hop] if self.hop is not None else [])

    def eval(self, batch: Batch, ctx) -> Col:
        col = self.ts.eval(batch, ctx)
        us = col.data.astype("datetime64[us]", copy=False).view(np.int64)
        out = us - self.origin_us if self.origin_us else us.copy()     # one temporary, the rest in place
        np.mod(out, self.slide_us, out=out)
        np.subtract(us, out, out=out)
        if self.end_offset_us:
            out += self.end_offset_us
        if self.hop is not None:
            out = out - self.hop.eval(batch, ctx).data.astype(np.int64) * self.slide_us
        return Col(out.view("datetime64[us]"), col.nulls, self.oid)

    def __repr__(self) -> str:
        return (f"window_{self.kind}({self.ts!r}, slide={self.slide_us}, size={self.size_us}, "
                f"origin={self.origin_us}{', hop=' + repr(self.hop) if self.hop is not None else ''})")


class SessionBound(Expr):
    """``window_start`` (``offset_us`` = 0) or ``window_end`` (``offset_us`` =
    the gap) of the one-row session a row opens: [ts, ts + gap).

    Why per row: a session's bounds depend on the rows around it, which an
    inserted batch does not know.  Each row is its own session here; a
    continuous view groups by both bounds and merges the sessions that touch
    (``stream/sessions.py``), whatever order the rows came in."""

    def __init__(self, ts: Expr, offset_us: int, kind: str, oid: int) -> None:
        self.ts, self.offset_us, self.kind, self.oid = ts, offset_us, kind, oid

    def children(self) -> list[Expr]:
        return [self.ts]

    def eval(self, batch: Batch, ctx) -> Col:
        col = self.ts.eval(batch, ctx)
        us = col.data.astype("datetime64[us]").view(np.int64) + self.offset_us
        return Col(us.view("datetime64[us]"), col.nulls, self.oid)

    def __repr__(self) -> str:
        return f"session_{self.kind}({self.ts!r}, gap={self.offset_us if self.kind == 'end' else 0})"


class SessionProject(Project):
    """The Project adding a SESSION's bounds.  Only a continuous view's stream
    pipeline runs it (``Project.process``), merging the sessions afterwards;
    run as a query it would return one-row sessions, so it is refused."""

    def _execute(self, ctx):
        raise PgError(FEATURE_NOT_SUPPORTED, "SESSION windows are computed by continuous views only",
                      hint="CREATE VIEW v AS SELECT window_start, window_end, <keys>, <aggregates> FROM "
                           "SESSION(stream, ts, gap) GROUP BY window_start, window_end, <keys>; over stored rows, "
                           "number the sessions with lag() and a running sum.")

    def label(self):
        return "Project (SESSION)"


def trace_bound(e, ops: list) -> "WindowBound | SessionBound | None":
    """The window bound a pipeline's expression is, seen through the
    projections and filters below it (``ops`` bottom-up; None: something else)."""
    for op in reversed(ops):
        if isinstance(e, (WindowBound, SessionBound)):
            return e
        if not isinstance(e, ColRef):
            return None
        if isinstance(op, Project):
            e = op.exprs[e.idx]
        elif not isinstance(op, Filter):
            return None                 # a join: bounds are computed above it
    return e if isinstance(e, (WindowBound, SessionBound)) else None


def same_pane(a: "WindowBound", b: "WindowBound") -> bool:
    """Are ``a`` and ``b`` bounds of one and the same pane (so one is the other plus a constant)?"""
    return a.ts is b.ts and a.hop is b.hop and (a.slide_us, a.origin_us, a.size_us) == (b.slide_us, b.origin_us,
                                                                                         b.size_us)


def is_time(oid: int) -> bool:
    return oid in (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ, type_oids.DATE)
