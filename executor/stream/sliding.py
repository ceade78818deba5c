"""Sliding windows over arrival time (PipelineDB's ``sw``) and TTLs.

A view ``WITH (sw = '5 minutes', step_factor = 5)`` groups its stream by one
more key, the *pane*: ``(arrival_timestamp - 1µs) / width`` with
``width = sw × step_factor / 100``, so a pane covers the arrival times
``(p·width, (p+1)·width]``.  Everything that maintains a grouping -- the LLVM
kernels, split maintenance, checkpoints, WAL replay -- thus applies unchanged.

A read combines the live panes with the clock read at read time (the
statement's time, so reads in one statement agree): pane ``p`` is live while
``p >= floor((now - sw) / width)``.  When ``now - sw`` falls on a pane edge
this is exactly ``arrival_timestamp > now - sw``; between edges the oldest
pane is kept whole, so a row leaves at most one step after ``sw`` has passed
(PipelineDB's step granularity).

Combining panes is Two-Stacks (Hammer Slide §2.2) with per-slide
pre-aggregation and the flip vectorised across the view's keys (§3.2), two
levels deep so that its state stays about 2√panes tables
(:mod:`.two_stacks`): a read merges at most four tables whatever the number
of panes, never rescans the window for min/max, and never subtracts (float
sums keep their precision).  A batch landing in a pane already sealed (a
statement stamped just before a read that sealed it) discards the stacks,
which are rebuilt from the panes.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.types import decode_text

from ..backends import interface as backends
from ..execution import clock, expr, operators
from ..execution.aggregates import GroupTable
from .panes import merge_groups, subset
from .two_stacks import PaneStacks, drop_below, ids_between

#: PipelineDB's default step_factor (percent of ``sw`` per pane) and its range
DEFAULT_STEP_FACTOR = 5
STEP_FACTOR_RANGE = (1, 50)


@dataclasses.dataclass(frozen=True)
class WindowOptions:
    """A view's time options, in microseconds (validated at CREATE VIEW)."""

    sw_us: int | None = None
    step_factor: int = DEFAULT_STEP_FACTOR
    ttl_us: int | None = None
    ttl_column: str | None = None
    #: the pane width when given directly (benchmarks sweeping the pane count), else sw × step_factor / 100
    pane_width_us: int | None = None

    @property
    def pane_us(self) -> int:
        if self.pane_width_us is not None:
            return self.pane_width_us
        assert self.sw_us is not None
        return max(1, self.sw_us * self.step_factor // 100)

    def live_from(self, now_us: int) -> int:
        """The first live pane at ``now_us``."""
        assert self.sw_us is not None
        return (now_us - self.sw_us) // self.pane_us

    def describe(self) -> str | None:
        """The window as ``splitstream.views`` shows it."""
        if self.sw_us is not None:
            return f"sw {_fmt_us(self.sw_us)} step {_fmt_us(self.pane_us)}"
        if self.ttl_us is not None:
            return f"ttl {_fmt_us(self.ttl_us)} on {self.ttl_column}"
        return None


def _fmt_us(us: int) -> str:
    s, frac = divmod(us, 1_000_000)
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return f"{h:02d}:{m:02d}:{sec:02d}" + (f".{frac:06d}".rstrip("0") if frac else "")


def window_options(rel) -> WindowOptions | None:
    """The time options kept among a view's options (strings), or None."""
    opts = dict(rel.options)
    if "sw" not in opts and "ttl" not in opts:
        return None
    return WindowOptions(sw_us=interval_us(opts["sw"]) if "sw" in opts else None,
                         step_factor=int(opts.get("step_factor", DEFAULT_STEP_FACTOR)),
                         ttl_us=interval_us(opts["ttl"]) if "ttl" in opts else None,
                         ttl_column=opts.get("ttl_column"))


def interval_us(text: str) -> int:
    """An interval option's length in microseconds (a month as 30 days, as
    PostgreSQL compares intervals); 22007 when it is not an interval."""
    iv = decode_text(type_oids.INTERVAL, text)
    return int(iv.key())


def pane_start(p: int, width_us: int):
    """When pane ``p`` begins (its arrival times are after this), as a datetime."""
    return clock.EPOCH + dt.timedelta(microseconds=p * width_us)


def now_us(ctx) -> int:
    """The read's clock: the statement's time (``ctx.now``), else the clock's."""
    t = getattr(ctx, "now", None)
    return clock.micros(t if t is not None else clock.now())


class PaneOf(expr.Expr):
    """The pane of an arrival time: ``(t - 1µs) // width`` as int8."""

    oid = type_oids.INT8

    def __init__(self, arg: expr.Expr, width_us: int) -> None:
        self.arg, self.width_us = arg, width_us

    def children(self):
        return [self.arg]

    def eval(self, batch, ctx):
        c = self.arg.eval(batch, ctx)
        return Col((c.data.view(np.int64) - 1) // self.width_us, None, type_oids.INT8)

    def __repr__(self) -> str:
        return f"pane({self.arg!r}, {self.width_us}us)"


class PaneSlider:
    """The panes of one stream pipeline, keyed by the view's keys, and the
    Two-Stacks combining them (:mod:`.two_stacks`).  Used under the view's
    lock."""

    def __init__(self, key_oids: list[int], specs: list, win: WindowOptions) -> None:
        self.key_oids, self.specs, self.win = key_oids, specs, win
        self.panes: dict[int, GroupTable] = {}
        self.rows_in = 0
        self.stacks: PaneStacks | None = None
        self.expired_to: int | None = None          # panes below it are gone
        self.newest = -(1 << 62)                    # the highest pane id held so far

    def _empty(self) -> GroupTable:
        return GroupTable(list(self.key_oids), self.specs)

    # ------------------------------------------------------------ input
    def harvest(self, table: GroupTable) -> None:
        """Move the groups of ``table`` (keyed by the view's keys, then the
        pane) into the panes; ``table`` is emptied."""
        if not len(table.index):
            return
        cols = table.index.key_columns()
        pane = cols[-1].data.astype(np.int64)
        keys = cols[:-1]
        order = np.argsort(pane, kind="stable")
        ids, starts = np.unique(pane[order], return_index=True)
        bounds = list(starts[1:]) + [len(order)]
        for p, a, b in zip(ids.tolist(), starts.tolist(), bounds):
            idx = order[a:b]
            merge_groups(self._pane(p), table, idx, [c.take(idx) for c in keys])
        self.rows_in += table.rows_in
        table.reset()

    def add(self, p: int, table: GroupTable) -> None:
        """Fold ``table`` (keyed by the view's keys) into pane ``p``."""
        self._pane(p).merge(table)
        self.rows_in += table.rows_in

    def _pane(self, p: int) -> GroupTable:
        t = self.panes.get(p)
        if t is None:
            t = self.panes[p] = self._empty()
            self.newest = max(self.newest, p)
            if self.expired_to is not None and p < self.expired_to:
                self.expired_to = None              # a late pane: the next expiry looks again
        if self.stacks is not None and p < self.stacks.sealed_to:
            self.stacks = None                  # a sealed pane changes: rebuild the stacks
        return t

    # ------------------------------------------------------------ time
    def expire(self, now_us: int) -> int:
        """Drop the panes the window has left; seal the ones the clock has
        left (the reaper does this ahead of the reads)."""
        lo = self.win.live_from(now_us)
        if lo != self.expired_to:
            drop_below(self.panes, lo)
            self.expired_to = lo
        stacks = self.stacks
        if stacks is None or stacks.too_sparse() or stacks.sealed_to < lo:
            stacks = self.stacks = PaneStacks(self.key_oids, self.specs, self._panes_per_window(), lo)
        stacks.expire(lo)
        stacks.seal(self.panes, (now_us - 1) // self.win.pane_us)
        stacks.prepare(self.panes, lo)
        return lo

    def _panes_per_window(self) -> int:
        assert self.win.sw_us is not None
        return max(1, self.win.sw_us // self.win.pane_us)

    def result(self, now_us: int) -> Batch:
        """The aggregates over the live panes at ``now_us``."""
        return self.result_table(now_us).result()

    def result_table(self, now_us: int) -> GroupTable:
        """The live panes at ``now_us`` combined into a new table (the caller's own)."""
        lo = self.expire(now_us)
        stacks = self.stacks
        assert stacks is not None
        out = stacks.combined(self.panes, lo)
        for p in ids_between(self.panes, stacks.sealed_to, self.newest + 1):
            stacks.add_unsealed(out, p, self.panes[p])
        return stacks.table(out, self.key_oids)

    # ------------------------------------------------------------ state
    def export_table(self, key_oids: list[int]) -> GroupTable:
        """The panes as one table keyed by the view's keys and the pane (a
        checkpoint's form, the same as the pipeline's own grouping)."""
        out = GroupTable(list(key_oids), self.specs)
        for p in sorted(self.panes):
            t = self.panes[p]
            n = len(t.index)
            if not n:
                continue
            keys = t.index.key_columns() + [Col(np.full(n, p, np.int64), None, type_oids.INT8)]
            merge_groups(out, t, np.arange(n), keys)
        out.rows_in = self.rows_in
        return out

    def groups(self) -> int:
        return sum(len(t.index) for t in self.panes.values())

    def nbytes(self) -> int:
        held = self.stacks.nbytes() if self.stacks is not None else 0
        return held + sum(t.nbytes() for t in self.panes.values())

    def pane_range(self) -> tuple[int, int] | None:
        return (min(self.panes), max(self.panes)) if self.panes else None


def ttl_filter(table: GroupTable, key_pos: int, ttl_us: int, now_us: int) -> GroupTable:
    """``table`` without the groups whose ``key_pos`` key (a timestamp) is
    older than ``now - ttl``; the same object when none is."""
    if not len(table.index):
        return table
    col = table.index.key_columns()[key_pos]
    ts = col.data.view(np.int64)
    old = ts <= now_us - ttl_us
    if col.nulls is not None:
        old &= ~col.nulls
    if not old.any():
        return table
    return subset(table, ~old)


def with_pane_key(scan, chain: list, agg, width_us: int) -> tuple[list, operators.Aggregate]:
    """The stream pipeline ``chain`` -> ``agg`` grouping by the pane of
    ``arrival_timestamp`` too (new operators; the planned ones are shared):
    the arrival time is carried through projections that dropped it."""
    out_chain, idx = carry_arrival(scan, chain)
    nk = len(agg.keys)
    pane = PaneOf(expr.ColRef(idx, type_oids.TIMESTAMPTZ, "arrival_timestamp"), width_us)
    grouped = operators.Aggregate(agg.child, list(agg.keys) + [pane], agg.aggs,
                                  list(agg.out[:nk]) + [operators.OutCol("pane", type_oids.INT8)] + list(agg.out[nk:]))
    return out_chain, grouped


def carry_arrival(scan, chain: list) -> tuple[list, int]:
    """``chain`` with ``arrival_timestamp`` carried through every projection
    that dropped it, and its position in the chain's output."""
    idx = next(i for i, c in enumerate(scan.out) if c.name == "arrival_timestamp")
    out_chain = []
    for op in chain:
        if isinstance(op, operators.Project):
            hit = next((j for j, e in enumerate(op.exprs) if type(e) is expr.ColRef and e.idx == idx), None)
            if hit is None:
                carried = expr.ColRef(idx, type_oids.TIMESTAMPTZ, "arrival_timestamp")
                op = operators.Project(op.child, list(op.exprs) + [carried],
                                       list(op.out) + [operators.OutCol("arrival_timestamp", type_oids.TIMESTAMPTZ)])
                hit = len(op.exprs) - 1
            idx = hit
        out_chain.append(op)
    return out_chain, idx


class PanedStage:
    """A statement's batches into a sliding-window pipeline.

    A statement stamps all its rows with its own time, so its batches fall
    in one pane: they run the view's own grouping (its kernel, one key
    fewer than the pane-keyed one, dense when the keys are) and are folded
    into that pane at apply.  A batch whose arrival times span panes (never
    from one statement, but kept correct) runs the pane-keyed grouping."""

    def __init__(self, pipe: Any, ctx: Any) -> None:
        self.pipe, self.ctx = pipe, ctx
        self.by_pane: dict[int, backends.PipelineStage] = {}
        self.general: backends.PipelineStage | None = None

    def add(self, batch: Batch, ctx) -> None:
        pipe = self.pipe
        arrival = batch.cols[pipe.arrival_idx].data.view(np.int64)
        if not len(arrival):
            return
        width = pipe.window.win.pane_us
        first = int(arrival[0])
        lo = (first - 1) // width
        if int(arrival[-1]) != first or np.ptp(arrival) != 0:     # one statement's rows share one time (ptp: one pass)
            hi = (int(arrival.max()) - 1) // width
            lo = (int(arrival.min()) - 1) // width
        else:
            hi = lo
        if lo != hi:
            if self.general is None:
                self.general = backends.choose(ctx).stream_stage(pipe, ctx) or pipe.vector_stage()
            self.general.add(batch, ctx)
            return
        st = self.by_pane.get(lo)
        if st is None:
            st = self.by_pane[lo] = pipe.inner.new_stage(ctx)
        st.add(batch, ctx)

    def can_absorb(self, other: Any) -> bool:
        """Never: a windowed view applies each batch in its pane's time (no queueing)."""
        return False

    def absorb(self, other: Any) -> None:
        raise AssertionError("a paned stage absorbs nothing (can_absorb is False)")

    def apply(self) -> None:
        """Under the view's lock: the general stage into the pipeline, each
        pane's through the view's grouping straight into its pane."""
        if self.general is not None:
            self.general.apply()
        inner = self.pipe.inner
        for p, st in self.by_pane.items():
            st.apply()
            inner.merge()
            self.pipe.window.add(p, inner.global_)
            inner.global_ = inner.agg.new_table()

    def nbytes(self) -> int:
        parts = list(self.by_pane.values()) + ([self.general] if self.general is not None else [])
        return sum(st.nbytes() for st in parts)
