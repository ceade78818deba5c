"""Continuous views with split maintenance (Winter, thesis ch. 4).

The view's plan is cut at the first grouping above each stream scan:

* static pipelines (join build sides with no stream input) run once, at
  creation, and their hash tables are kept;
* stream pipelines (scan -> filters/projections/probes -> grouping) run
  their thread-local step on every inserted batch, into a local
  :class:`GroupTable`;
* upper pipelines (everything above the groupings) run when the view is
  read, after local states are merged into the global state.

Inserters and readers share a lock and a queue as in Algorithm 4.3: an
inserter that cannot take the lock enqueues its batch and leaves; whoever
holds the lock next drains the queue.  A read with no new input since the
previous one returns the stored result.
"""
from __future__ import annotations

import collections
import copy
import dataclasses
import hashlib
import logging
import re
import threading
import time
from typing import Any

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

from ..backends import interface as backends
from ..execution import expr
from ..execution import operators
from ..execution import plans
from ..execution.rows import RowCtor
from ..execution.aggregates import AggSpec, GroupTable
from ..context import ExecContext
from . import retention, row_cap, sessions, ungrouped, view_states
from ..execution import combine as combine_states
from .panes import copy_table
from .signature import PipelinePool, aggregate_order
from . import sliding

REFUSE = FEATURE_NOT_SUPPORTED
#: a logged batch of at most this many rows waits in its views' queues
#: (``ContinuousView.deliver``) ...
DEFER_ROWS = 64
#: ... until this many stages are queued on a view: the inserter then applies them.
#: Kept small: 256 queued stages (thousands of live objects per view, surviving
#: into older GC generations) made one-row inserts slower than applying each
#: at once (stream with three views, 1 client, --fsync off, alternating runs:
#: ~590 vs ~800 tps); 16 made them faster (~780 vs ~600)
DEFER_STAGES = 16


log = logging.getLogger("splitstream.streams")

class StreamScanOp(operators.Op):
    """Marker leaf for a stream inside a continuous view's plan."""

    is_stream = True

    def __init__(self, rel, alias: str, runtime, before=None) -> None:
        self.rel, self.alias, self.runtime = rel, alias, runtime
        self.before = before        # the statement's cut, taken before the scan starts
        self.children = []
        self.out = [operators.OutCol(c.name, c.type_oid, c.typmod, rel.oid, i + 1, hidden=c.hidden) for i, c in enumerate(rel.live_columns)]

    def _execute(self, ctx):
        if self.before is not None:
            self.before(ctx)
        return self.runtime.session_scan(ctx, self)

    def label(self):
        return f"Stream Scan on {self.rel.name}" + (f" {self.alias}" if self.alias != self.rel.name else "")


def _contains_stream(op) -> bool:
    return isinstance(op, StreamScanOp) or any(_contains_stream(c) for c in op.children)


def _path_to(op, target) -> list | None:
    if op is target:
        return [op]
    for c in op.children:
        p = _path_to(c, target)
        if p is not None:
            return [op] + p
    return None


def _stream_scans(op, seen=None) -> list:
    """Each stream scan once, even when a shared CTE is referenced twice."""
    seen = set() if seen is None else seen
    if id(op) in seen:
        return []
    seen.add(id(op))
    out = [op] if isinstance(op, StreamScanOp) else []
    for c in op.children:
        out += _stream_scans(c, seen)
    return out


def _without_order(plan: operators.Op) -> operators.Op:
    """ORDER BY without LIMIT is dropped (section 4.2.3): the plan below the
    Sort, or a new Project over it."""
    if isinstance(plan, operators.Sort):
        return plan.child
    if isinstance(plan, operators.Project) and isinstance(plan.child, operators.Sort):
        return plans.rebuilt(plan, {id(plan.child): plan.child.child})
    return plan


def _roots(upper: operators.Op) -> list:
    """The upper plan and the plans of its subqueries in expressions."""
    return [upper] + _expression_subplans(upper)


class PrunedCol(Col):
    """A column no operator of a stream pipeline reads (see :func:`needed_columns`):
    filters, join probes and takes carry only its length, so a view does not
    copy the stream columns (or the join build columns) it never looks at.
    ``data`` materialises a placeholder for code paths that gather everything
    (e.g. concatenating the unmatched rows of an outer join)."""

    __slots__ = ("_n", "_data")
    _data: np.ndarray | None

    def __init__(self, n: int, oid: int) -> None:
        self._n, self._data, self.nulls, self.oid = n, None, None, oid

    @property
    def data(self) -> np.ndarray:  # type: ignore[override]
        if self._data is None:
            self._data = sqltypes.empty(self.oid, self._n)
        return self._data

    @data.setter
    def data(self, value: np.ndarray) -> None:
        self._data = value

    def __len__(self) -> int:
        return self._n

    def take(self, idx: np.ndarray) -> Col:
        return PrunedCol(len(idx), self.oid)

    def filter(self, mask: np.ndarray) -> Col:
        return PrunedCol(int(np.count_nonzero(mask)), self.oid)

    def slice(self, a: int, b: int) -> Col:
        return PrunedCol(len(range(*slice(a, b).indices(self._n))), self.oid)

    def null_mask(self) -> np.ndarray:
        return np.zeros(self._n, dtype=bool)

    def valid_mask(self) -> np.ndarray:
        return np.ones(self._n, dtype=bool)


def _expr_refs(exprs) -> set[int] | None:
    """Column indices the expressions read; None when that cannot be proven
    (a node holding an expression it does not list as a child, outer
    references, subqueries)."""
    out: set[int] = set()
    for e in exprs:
        if e is None:
            continue
        for n in e.walk():
            if isinstance(n, (expr.OuterRef, expr.SubqueryExpr)):
                return None
            kids = {id(c) for c in n.children()}
            for held in _held_exprs(n):
                if id(held) not in kids:
                    return None
            if type(n) is expr.ColRef:
                out.add(n.idx)
    return out


def _held_exprs(node) -> list:
    return _exprs_in(vars(node).values())


def _exprs_in(values) -> list:
    """Expressions among ``values``, looking into lists, tuples and aggregate specs."""
    out, stack = [], list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, expr.Expr):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, AggSpec):
            stack.extend(vars(v).values())
    return out


def needed_columns(ops: list, agg) -> tuple[set[int] | None, dict]:
    """Which scan columns (and which build-side columns of each probe) the
    pipeline reads, walking down from the grouping; (None, {}) = all."""
    need = _expr_refs(list(agg.keys) + [e for a in agg.aggs for e in list(a.args) + [a.filter]])
    right: dict = {}
    for op in reversed(ops):
        if need is None:
            return None, {}
        if isinstance(op, operators.Filter):
            got = _expr_refs([op.pred])
            need = None if got is None else need | got
        elif isinstance(op, operators.Project):
            need = _expr_refs([op.exprs[i] for i in sorted(need)])
        elif isinstance(op, operators.HashJoin):
            nl = len(op.left.out)
            res = _expr_refs([op.residual])
            keys = _expr_refs(op.lkeys)
            rkeys = _expr_refs(op.rkeys)     # over the build side; kept for Spark pushdown (spark_translate.py)
            if res is None or keys is None or rkeys is None:
                return None, {}
            above = need if op.kind in ("semi", "anti") else need | res
            right[op] = {i - nl for i in above | res if i >= nl} | rkeys
            need = {i for i in above | res if i < nl} | keys
        else:
            return None, {}
    return need, right


def prune(batch: Batch, keep: set[int]) -> Batch:
    return Batch([c if i in keep or isinstance(c, PrunedCol) else PrunedCol(batch.n, c.oid)
                  for i, c in enumerate(batch.cols)], batch.n)


class StreamPipeline:
    """scan -> streaming operators -> grouping sink, run per inserted batch.

    ``builds`` are the hash tables of the joins it probes (its static
    pipelines, built once at creation): they belong to the view, not to the
    join operators."""

    def __init__(self, scan: StreamScanOp, ops: list, agg: operators.Aggregate,
                 builds: dict[operators.HashJoin, operators.Build], view: str = "") -> None:
        self.scan = scan
        self.ops = ops          # bottom-up: Filter, Project, HashJoin (probe)
        self.agg = agg
        #: the session bounds among the group keys (SESSION windows), merged after every merge of states
        self.session = sessions.session_key(ops, agg, view)
        self._coalesced_at = 0  # groups in ``local`` when its sessions were last merged
        self.local = agg.new_table()
        self.global_ = agg.new_table()
        self.keep, self.keep_right = needed_columns(ops, agg)
        self.builds = dict(builds)
        #: a sliding window's panes (the grouping's last key is the pane), or None
        self.window: sliding.PaneSlider | None = None
        #: a TTL: (position of the timestamp key, ttl in microseconds), or None
        self.ttl: tuple[int, int] | None = None
        #: a row cap (max_rows, row_cap.py): (position of the hidden arrival-time key, rows), or None
        self.cap: tuple[int, int] | None = None
        #: under a window: the view's own grouping (no pane key), which runs a
        #: statement's rows into their pane, and where arrival_timestamp is in the scan
        self.inner: StreamPipeline | None = None
        self.arrival_idx = -1
        #: set (under the view's lock) while a read for combine() runs: results carry their states
        self.want_states = False
        if self.keep is not None:
            for op, cols in self.keep_right.items():
                if op in self.builds:       # the kept build side: drop what no one reads
                    b = self.builds[op]
                    self.builds[op] = b.with_batch(prune(b.batch, cols))

    def pruned(self, batch: Batch) -> Batch:
        """The batch with only the columns this pipeline reads."""
        if self.keep is not None and len(self.keep) < len(batch.cols):
            return prune(batch, self.keep)
        return batch

    def new_stage(self, ctx) -> backends.PipelineStage:
        """A statement's private stage into this pipeline: a compiling
        backend's, or the vector path's; per pane under a sliding window."""
        if self.window is not None and self.inner is not None:
            return sliding.PanedStage(self, ctx)
        return backends.choose(ctx).stream_stage(self, ctx) or VectorStage(self)

    def vector_stage(self) -> "VectorStage":
        return VectorStage(self)

    def process(self, batch: Batch, ctx) -> None:
        """Stage one batch and apply it at once (benchmarks of one pipeline;
        the insert path stages every view before anything is applied)."""
        st = self.new_stage(ctx)
        st.add(self.pruned(batch), ctx)
        st.apply()

    def run_vector(self, batch: Batch, ctx, table) -> None:
        """The vector path for one (pruned) batch: operators, then ``table``."""
        batch = self.run_ops(batch, ctx, self.ops)
        if self.session is not None:
            batch = sessions.sessionize(batch, self.agg, self.session, ctx)
        if batch.n or not self.ops:
            self.agg.consume(table, batch, ctx)

    def run_ops(self, batch: Batch, ctx, ops: list) -> Batch:
        """``ops`` (a prefix of this pipeline's) over one batch, joins probing the kept builds."""
        for op in ops:
            build = self.builds.get(op)
            batch = op.process(batch, ctx) if build is None else op.process(batch, ctx, build)
            if batch.n == 0:
                break
        return batch

    def merge(self) -> None:
        # what a compiling backend holds (native thread-local tables) goes
        # straight into the global state, then what ran on the vector path
        backends.native().stream_flush(self, self.global_)
        self.global_.merge(self.local)
        self.local = self.agg.new_table()
        self._coalesced_at = 0
        if self.session is not None:
            sessions.coalesce(self.global_, self.session)
        if self.window is not None:
            self.window.harvest(self.global_)

    def take_local(self, table: GroupTable) -> None:
        """Merge a statement's (or an executor's) table into the thread-local
        state; sessions merged in it first, and in the local state whenever it
        has doubled since (amortised: about one group per session)."""
        if self.session is not None:
            sessions.coalesce(table, self.session)
        self.local.merge(table)
        if self.session is not None and len(self.local.index) > 2 * self._coalesced_at + 1024:
            sessions.coalesce(self.local, self.session)
            self._coalesced_at = len(self.local.index)

    def expire(self, now_us: int) -> None:
        """Drop what a window or TTL has left behind at ``now_us`` (merged first)."""
        self.merge()
        if self.window is not None:
            self.window.expire(now_us)
        if self.ttl is not None:
            self.global_ = sliding.ttl_filter(self.global_, self.ttl[0], self.ttl[1], now_us)
        if self.cap is not None:
            self.global_ = row_cap.trim(self.global_, *self.cap)

    def state_result(self, ctx) -> Batch:
        """The grouping's rows for a read: the live panes combined at the
        read's clock for a sliding window, the unexpired groups for a TTL."""
        if self.window is not None:
            table = self.window.result_table(sliding.now_us(ctx))
        else:
            if self.ttl is not None:
                self.expire(sliding.now_us(ctx))
            if self.cap is not None:
                self.global_ = row_cap.trim(self.global_, *self.cap)
            table = copy_table(self.global_) if self.want_states else self.global_
        result = table.result()
        if self.cap is not None:        # the arrival-time key is the cap's, not the view's
            result = Batch([c for i, c in enumerate(result.cols) if i != self.cap[0]], result.n)
        if self.want_states:        # a private table: nothing merges into it while the statement combines
            result = Batch(combine_states.with_states(result.cols, table.states, len(table.index.key_oids)), result.n)
        return result

    def state_table(self) -> GroupTable:
        """The state as one table keyed like the grouping (checkpoints)."""
        if self.window is not None:
            return self.window.export_table([k.oid for k in self.agg.keys])
        return self.global_

    def state_groups(self) -> int:
        held = self.window.groups() if self.window is not None else 0
        return held + len(self.global_.index) + len(self.local.index)

    def state_nbytes(self) -> int:
        held = self.window.nbytes() if self.window is not None else 0
        return held + self.global_.nbytes() + self.local.nbytes()

    def rows_in(self) -> int:
        held = self.window.rows_in if self.window is not None else 0
        return held + self.global_.rows_in + self.local.rows_in


class VectorStage:
    """A statement's batches on the vector path, into a private table merged at apply."""

    def __init__(self, pipe: StreamPipeline) -> None:
        self.pipe = pipe
        self.table: GroupTable | None = None

    def add(self, batch: Batch, ctx) -> None:
        if self.table is None:
            self.table = self.pipe.agg.new_table()
        self.pipe.run_vector(batch, ctx, self.table)

    def apply(self) -> None:
        if self.table is not None:
            self.pipe.take_local(self.table)

    def delta(self) -> tuple[GroupTable, None] | None:
        """The private table :meth:`apply` merges (view_deltas.py); None: no row reached it."""
        t = self.table
        return (t, None) if t is not None and (len(t.index) or t.rows_in) else None

    def nbytes(self) -> int:
        return self.table.nbytes() if self.table is not None else 0

    def can_absorb(self, other: Any) -> bool:
        """Never: merging two private tables costs what applying both does."""
        return False

    def absorb(self, other: Any) -> None:
        raise AssertionError("a vector-path stage absorbs nothing (can_absorb is False)")


class ViewStage:
    """One statement's input to one continuous view: a private stage per
    stream pipeline, filled before the statement is logged and applied after
    (all or nothing across the views of a stream, issue 14)."""

    def __init__(self, view: "ContinuousView") -> None:
        self.view = view
        self.parts: dict[int, list[tuple[StreamPipeline, backends.PipelineStage]]] = {}

    def add(self, stream_oid: int, batch: Batch, ctx) -> None:
        parts = self.parts.get(stream_oid)
        if parts is None:
            parts = self.parts[stream_oid] = [(p, p.new_stage(ctx)) for p in self.view.pipelines.get(stream_oid, [])]
        for pipe, stage in parts:
            stage.add(pipe.pruned(batch), ctx)

    def apply(self) -> None:
        for parts in self.parts.values():
            for _pipe, stage in parts:
                stage.apply()

    def nbytes(self) -> int:
        return sum(st.nbytes() for parts in self.parts.values() for _p, st in parts)

    def absorb(self, other: "ViewStage") -> bool:
        """Take ``other`` (a later statement's stage queued behind this one on
        the same view) if every pipeline's stage can take its counterpart,
        so that both apply as one; False: nothing was taken."""
        if other.view is not self.view or other.parts.keys() != self.parts.keys():
            return False
        pairs = []
        for oid, mine in self.parts.items():
            theirs = other.parts[oid]
            if len(theirs) != len(mine):
                return False
            for (pipe, st), (their_pipe, their_st) in zip(mine, theirs):
                if their_pipe is not pipe or not st.can_absorb(their_st):
                    return False
                pairs.append((st, their_st))
        for st, their_st in pairs:
            st.absorb(their_st)
        return True


def merged_stages(stages: list[ViewStage]) -> list[ViewStage]:
    """``stages`` in order, each absorbed by the one before it where it can be."""
    out: list[ViewStage] = []
    for st in stages:
        if not (out and out[-1].absorb(st)):
            out.append(st)
    return out


@dataclasses.dataclass
class ViewProgram:
    """What a continuous view runs, built from its planned tree as new data
    (the planned tree may be a cached plan and is never changed):

    * ``pipelines``: per stream oid, the stream pipelines run per inserted
      batch, each with the builds of its static pipelines (run once, here);
    * ``upper``: the upper pipelines, a new tree in which each grouping of a
      stream reads its pipeline's merged state, ORDER BY without LIMIT is
      dropped and table scans keep the column layout they were planned with;
    * what the view depends on: tables of static pipelines (``static_tables``)
      and of upper pipelines (``upper_tables``), continuous views read
      (``upstream_views``), and the upper joins whose build sides are kept
      between reads (``kept_builds``: view state, lent to each read's run)."""

    upper: operators.Op
    pipelines: dict[int, list[StreamPipeline]]
    static_tables: set[int]
    upper_tables: list[int]
    upstream_views: list[int]
    kept_builds: dict
    #: the upstream views whose aggregate columns the view combine()s: read with their states
    combined_views: frozenset = frozenset()


def compile_view(rel, plan: operators.Op, ctx, reuse: PipelinePool | None = None) -> ViewProgram:
    """The program of continuous view ``rel`` over ``plan`` (raises 0A000 when
    the view cannot be maintained; runs its static pipelines).  ``reuse``:
    the pipelines of the definition it replaces, taken (with their state)
    wherever a new one computes the same thing."""
    return _ViewCompiler(rel, ctx, reuse).compile(plan)


class _ViewCompiler:
    """Cuts a planned view at the first grouping above each stream scan
    (thesis 4.2.4), reading the plan and building new nodes."""

    def __init__(self, rel, ctx, reuse: PipelinePool | None = None) -> None:
        self.rel, self.ctx, self.reuse = rel, ctx, reuse
        self.pipelines: dict[int, list[StreamPipeline]] = {}
        self.static_tables: set[int] = set()
        self.states: dict[int, operators.Op] = {}      # id(grouping of a stream) -> its state source
        self._stream_plans: set[int] = set()
        self._dropped_order = False

    def compile(self, plan: operators.Op) -> ViewProgram:
        unordered = _without_order(plan)
        self._dropped_order = unordered is not plan     # an ORDER BY without LIMIT, refused in an ungrouped view
        plan = unordered
        # Subqueries in expressions (IN, EXISTS, scalar) are upper pipelines too:
        # a stream inside one is split the same way, its grouping fed at insert time.
        subplans = _expression_subplans(plan)
        # plans reading a stream, themselves or through their own subqueries (known before splitting)
        self._stream_plans = {id(sp) for sp in subplans
                              if _stream_scans(sp) or any(_stream_scans(x) for x in _expression_subplans(sp))}
        done: set[int] = set()
        for root, scan in [(r, sc) for r in [plan] + subplans for sc in _stream_scans(r)]:
            if id(scan) in done:
                continue
            done.add(id(scan))
            self._split_at_grouping(_Root(root, root is plan), scan)
        upper = plans.rebuilt(plan, self.states)
        # the upper plan outlives ALTER TABLE ADD/DROP COLUMN on the tables it reads
        upper = plans.rebuilt(upper, {id(t): t.pinned_copy() for r in _roots(upper) for t in _table_scans(r)})
        roots = _roots(upper)
        hidden = _streams_in_expressions(upper)
        if hidden:
            raise PgError(REFUSE, f'continuous view "{self.rel.name}" reads stream "{hidden[0].rel.name}" inside a subquery expression',
                          hint="Move the stream into the FROM clause: aggregate it in a subquery grouped by the "
                               "correlation keys and join that subquery instead.")
        kept: dict = {}
        for r in roots:
            _keep_table_builds(r, kept)
        return ViewProgram(upper=upper, pipelines=self.pipelines, static_tables=self.static_tables,
                           upper_tables=sorted({t.rel.oid for r in roots for t in _table_scans(r)}),
                           upstream_views=sorted({rel.oid for r in roots for rel in _view_sources(r)}),
                           combined_views=frozenset(oid for r in roots for oid in _combined_sources(r)),
                           kept_builds=kept)

    def _split_at_grouping(self, root_holder, scan) -> None:
        """Everything between ``scan`` and the first grouping above it becomes
        a stream pipeline; the grouping is replaced by its state in the upper plan."""
        path = _path_to(root_holder, scan)      # root_holder ... scan
        assert path is not None
        chain, agg = self._chain_to_grouping(path, scan)
        self._check_insert_time_exprs(agg, scan)
        # static pipelines: build the hash tables of joins on the path once
        builds = {}
        for node in chain:
            if isinstance(node, operators.HashJoin):
                builds[node] = node.build(self.ctx)
                for t in _table_scans(node.right):
                    self.static_tables.add(t.rel.oid)
        pipe = self._windowed(scan, chain, agg, builds)
        order = None
        kept = self.reuse.take(pipe) if self.reuse is not None else None
        if kept is not None:
            # the replaced definition's pipeline, state and all (its aggregates maybe in another order)
            kept.cap = pipe.cap
            order, pipe = aggregate_order(kept.agg, agg), kept
        self.pipelines.setdefault(scan.rel.oid, []).append(pipe)
        src = operators.BatchSource(f"Continuous State ({agg.label()})", agg.out,
                                    lambda c, p=pipe, o=order, k=len(agg.keys): _in_order(p.state_result(c), k, o))
        setattr(src, view_states.GROUPING_ATTR, agg)
        if ungrouped.is_ungrouped(agg):      # the rows' top operator is read back from the kept rows
            self.states[id(agg.child)] = ungrouped.RowsOfCounts(src)
        else:
            self.states[id(agg)] = src

    def _windowed(self, scan, chain: list, agg, builds: dict) -> StreamPipeline:
        """The stream pipeline, grouping by the pane too under ``sw``, with
        its TTL under ``ttl`` (the view's options)."""
        win = sliding.window_options(self.rel)
        cap = row_cap.requested(self.rel)
        if cap is not None:
            return self._capped(scan, chain, agg, builds, cap, win is not None)
        if win is None:
            return StreamPipeline(scan, chain, agg, builds, self.rel.name)
        if win.sw_us is not None:
            run_chain, run_agg = sliding.with_pane_key(scan, chain, agg, win.pane_us)
            pipe = StreamPipeline(scan, run_chain, run_agg, builds, self.rel.name)
            pipe.window = sliding.PaneSlider([k.oid for k in agg.keys], agg.aggs, win)
            pipe.inner = StreamPipeline(scan, chain, agg, builds, self.rel.name)
            pipe.arrival_idx = next(i for i, c in enumerate(scan.out) if c.name == "arrival_timestamp")
            return pipe
        pipe = StreamPipeline(scan, chain, agg, builds, self.rel.name)
        assert win.ttl_us is not None and win.ttl_column is not None
        pipe.ttl = (self._ttl_key(agg, scan, win.ttl_column), win.ttl_us)
        return pipe

    def _capped(self, scan, chain: list, agg, builds: dict, cap: int, windowed: bool) -> StreamPipeline:
        """An ungrouped view under ``max_rows``: its rows keyed by their
        arrival time too (hidden from reads), trimmed to the newest ``cap`` (row_cap.py)."""
        if not ungrouped.is_ungrouped(agg):
            raise row_cap.refuse_grouped(self.rel.name)
        if windowed:
            raise row_cap.refuse_with_window(self.rel.name)
        run_chain, idx = sliding.carry_arrival(scan, chain)
        nk = len(agg.keys)
        arrival = expr.ColRef(idx, sliding.type_oids.TIMESTAMPTZ, "arrival_timestamp")
        run_agg = operators.Aggregate(agg.child, list(agg.keys) + [arrival], agg.aggs,
                                      list(agg.out[:nk]) + [operators.OutCol("arrival_timestamp",
                                                                             sliding.type_oids.TIMESTAMPTZ)]
                                      + list(agg.out[nk:]))
        run_agg.ungrouped = True        # type: ignore[attr-defined]
        pipe = StreamPipeline(scan, run_chain, run_agg, builds, self.rel.name)
        pipe.cap = (nk, cap)
        return pipe

    def _ttl_key(self, agg, scan, column: str) -> int:
        """The grouping key a TTL reads: the view column ``column`` must be a
        timestamp the stream is grouped by."""
        times = [i for i, k in enumerate(agg.keys) if k.oid in (sliding.type_oids.TIMESTAMPTZ, sliding.type_oids.TIMESTAMP)]
        for i in times:
            if agg.out[i].name == column:
                return i
        # the key's name inside the plan may differ from the view's column
        # (an alias): a timestamp column of that name and one timestamp key
        named = [c for c in self.rel.live_columns if c.name == column and c.type_oid == agg.keys[times[0]].oid] \
            if len(times) == 1 else []
        if named:
            return times[0]
        raise PgError(REFUSE, f'ttl_column "{column}" of continuous view "{self.rel.name}" is not a timestamp '
                              f'that stream "{scan.rel.name}" is grouped by',
                      hint="Group the stream by a time bucket (e.g. date_trunc('minute', ts) AS minute) and name "
                           "that column as ttl_column; groups whose bucket is older than the ttl are dropped.")

    def _check_no_rows_kept(self, agg: operators.Aggregate, scan) -> None:
        """A row value (``GROUP BY ROW(a, b)``, ``array_agg((a, b))``) in a
        view's state: refused, since states are checkpointed and a row value
        has no stored form."""
        exprs = list(agg.keys) + [a for spec in agg.aggs for a in spec.args]
        if any(isinstance(n, RowCtor) for e in exprs for n in e.walk()):
            raise PgError(REFUSE, f'continuous view "{self.rel.name}" cannot keep row values of stream "{scan.rel.name}" '
                                  "in its state", hint="Group by the fields themselves: GROUP BY a, b rather than ROW(a, b).")

    def _chain_to_grouping(self, path: list, scan) -> tuple[list, operators.Aggregate]:
        """The streaming operators above ``scan`` (bottom-up; a nested-loop
        join as a new key-less hash join, matching each event against the
        whole kept table) and the grouping that ends them, or a refusal."""
        chain: list = []
        for i in range(len(path) - 2, -1, -1):
            node, below = path[i], path[i + 1]
            if isinstance(node, operators.Aggregate):
                if node.grouping_sets is not None:
                    raise PgError(REFUSE, f'continuous view "{self.rel.name}" cannot group stream "{scan.rel.name}" '
                                          "by GROUPING SETS, ROLLUP or CUBE",
                                  hint="Group by plain keys in the view and compute the roll-ups when you query it.")
                self._check_no_rows_kept(node, scan)
                return chain, node
            if isinstance(node, (operators.Filter, operators.Project)):
                chain.append(node)
                continue
            if isinstance(node, (operators.HashJoin, operators.NestedLoopJoin)):
                self._check_join(node, below, scan)
                if isinstance(node, operators.NestedLoopJoin):
                    node = operators.HashJoin(node.left, node.right, [], [], node.kind, node.pred)
                chain.append(node)
                continue
            if isinstance(node, operators.Sort) and not _groups_above(path[:i]):
                raise ungrouped.refuse_order(self.rel.name)
            if isinstance(node, (_Root, operators.Limit)) and _limit_only_above(path[:i + 1]) and path[0].main:
                if self._dropped_order:
                    raise ungrouped.refuse_order(self.rel.name)
                return chain, ungrouped.grouping(below)
            if isinstance(node, _Root):
                break
            what = _operator_words(node)
            raise PgError(REFUSE, f'continuous view "{self.rel.name}" would keep stream "{scan.rel.name}" ungrouped before {what}',
                          hint="Every stream must be grouped (GROUP BY or an aggregate) before any operator other than "
                               f"filters, projections and joins probing tables (here: {what}); aggregate the stream in a "
                               "subquery first, or query the stream directly.")
        raise PgError(REFUSE, f'continuous view "{self.rel.name}" would keep stream "{scan.rel.name}" ungrouped in a subquery',
                      hint="Only the view's own select list may keep a stream's rows; aggregate the stream in the "
                           "subquery (e.g. SELECT DISTINCT or GROUP BY), or join it in the FROM clause.")

    def _check_join(self, node, below, scan) -> None:
        """A join between ``scan`` (ungrouped, below) and the other input is
        maintainable when each event's output depends on that event and kept
        tables only: the stream probes (left input) an inner, left, semi or
        anti join whose other input holds no stream.  Refuse anything else,
        naming the rule that fails."""
        view, name = self.rel.name, scan.rel.name
        other = node.right if node.left is below else node.left
        if _contains_stream(other):
            raise PgError(REFUSE, f'continuous view "{view}" would join stream "{name}" to another stream '
                                  "before grouping it",
                          hint="Streams are joined only after grouping: group each stream in its own subquery "
                               "(or CTE) and join the grouped results.")
        if node.kind == "full":
            raise PgError(REFUSE, f'continuous view "{view}" cannot maintain a FULL JOIN of ungrouped stream "{name}"',
                          hint="A FULL JOIN also emits the table rows no event has matched yet, and later events "
                               "take them back. Group the stream in a subquery (or CTE) and FULL JOIN the grouped "
                               "result, or use a LEFT JOIN with the stream on the left.")
        if node.left is below and node.kind in ("inner", "left", "semi", "anti"):
            return
        if (node.left is below and node.kind == "right") or (node.right is below and node.kind == "left"):
            raise PgError(REFUSE, f'continuous view "{view}" would put stream "{name}" on the nullable side of an '
                                  "outer join",
                          hint="Unmatched table rows would have to be retracted as events arrive. Put the stream "
                               "on the preserved side (stream LEFT JOIN table, or table RIGHT JOIN stream), or "
                               "group the stream in a subquery (or CTE) before the outer join.")
        if node.kind in ("semi", "anti"):
            raise PgError(REFUSE, f'continuous view "{view}" would test rows against ungrouped stream "{name}" '
                                  f"(IN / EXISTS): the stream would be on the build side of "
                                  f"{'a semi' if node.kind == 'semi' else 'an anti'}-join",
                          hint="Group the stream inside the subquery, e.g. IN (SELECT k FROM stream GROUP BY k), "
                               "so the view keeps its keys.")
        raise PgError(REFUSE, f'continuous view "{view}" would put stream "{name}" on the build side of a join',
                      hint="A stream must probe the tables it joins: write the join as an inner join or with the "
                           "stream on the preserved side of an outer join.")

    def _check_insert_time_exprs(self, agg, scan) -> None:
        """The stream pipeline (the grouping and everything below it) runs
        once per inserted batch: its expressions may read the event and kept
        tables, but neither an enclosing query's row (a correlated subquery the
        planner could not unnest) nor another stream through a subquery, whose
        value changes after the event has been counted."""
        view, name = self.rel.name, scan.rel.name
        if _reads_outer_row(agg, 1):
            raise PgError(REFUSE, f'continuous view "{view}" reads stream "{name}" in a correlated subquery '
                                  "that cannot be unnested",
                          hint="Move the stream into the FROM clause: aggregate it in a subquery grouped by the "
                               "correlation keys (with equality conditions) and join that subquery instead.")
        for sq in _subquery_exprs(agg, set(), _op_exprs):   # aggregate arguments and filters too
            if id(sq.plan) in self._stream_plans:
                raise PgError(REFUSE, f'continuous view "{view}" filters or computes stream "{name}" before grouping '
                                      "with a subquery that reads a stream",
                              hint="An event is counted once, when it arrives, so it cannot depend on an aggregate "
                                   "that later events change. Group both streams and compare the results above the "
                                   "grouping (HAVING, or a join of the grouped subqueries).")

class ContinuousView:
    def __init__(self, manager, rel, plan: operators.Op, ctx, reuse: PipelinePool | None = None) -> None:
        self.manager = manager
        self.rel = rel
        self.lock = threading.Lock()
        self.queue: collections.deque = collections.deque()
        self.version = 0
        #: moves with what the view holds (a stage delivered, applied or queued; panes
        #: reaped; a redefinition), not when queued stages are applied: the key of
        #: Session.result_version, which a read draining the queue must not move
        self.content = 0
        self.result_version: tuple | None = None
        self.result: Batch | None = None
        self.has_new_input = True
        self.insert_cost = 0.0
        #: why the view can no longer be maintained (an internal error while a
        #: logged batch was applied); every read then fails naming it
        self.failure: str | None = None
        self._zone: tuple = (None, "UTC")      # (definition, the TimeZone its insert-time expressions use)
        self._defers: tuple = (None, False)    # (definition, whether small batches wait in the queue)
        self.refreshes = 0              # reads that merged new input and ran the upper pipelines
        #: the last stream batch logged before the view's CREATE (registered live), so it
        #: takes the batches staged without it that replay gives it (backfill.py); whether
        #: it also takes the ones logged before (a backfill), and how many rows that was
        self.stream_boundary: int | None = None
        self.backfilling = False
        self.backfilled = 0
        #: an activate/deactivate in flight: (its transaction, active after it), so each
        #: batch follows the activity of its place in the WAL (management.py)
        self.switch: tuple | None = None
        self.last_refresh: float | None = None     # wall-clock time (time.time()) of the last one
        self.program = compile_view(rel, plan, ctx, reuse)
        self.plan = self.program.upper
        self.pipelines = self.program.pipelines
        self.static_tables = self.program.static_tables
        self.upper_tables = self.program.upper_tables
        self.upstream_views = self.program.upstream_views
        self._windows: tuple = (None, [], None)    # (definition, [(pipeline, PaneKey)], Retention | None)
        self.windows()                              # a retention option without a window: 22023 now

    # ------------------------------------------------------------ insert path
    def stage(self, stream_oid: int, batch: Batch, ctx, into: ViewStage | None = None) -> ViewStage:
        """Step one of an insert: run the batch into state private to the
        statement (``into``: add to a stage already begun, e.g. by an
        earlier slab of the same COPY).  Raises the statement's error; the
        view is untouched either way.  No lock: the stage is the statement's."""
        st = into if into is not None else ViewStage(self)
        t0 = time.perf_counter()
        st.add(stream_oid, batch, self._with_view_settings(ctx))
        # seconds per row, smoothed: how the stream manager balances views over threads
        per_row = (time.perf_counter() - t0) / max(batch.n, 1)
        self.insert_cost = per_row if self.insert_cost == 0 else 0.8 * self.insert_cost + 0.2 * per_row
        return st

    def _with_view_settings(self, ctx):
        """Insert-time expressions see the TimeZone the view was created in
        (``timezone`` among its options; UTC when none is kept), never the
        inserting session's: the view's state must not depend on who inserts,
        nor change when the WAL replays."""
        rel, tz = self._zone
        if rel is not self.rel:          # the options of the view's current definition, once per definition
            tz = dict(self.rel.options).get("timezone", "UTC")
            self._zone = (self.rel, tz)
        if ctx.setting("timezone", "UTC") == tz or not isinstance(ctx, ExecContext):
            return ctx
        settings = dict(ctx.session.settings)
        settings["timezone"] = tz
        return dataclasses.replace(ctx, session=dataclasses.replace(ctx.session, settings=settings))

    def deliver(self, st: ViewStage, defer: bool = False) -> None:
        """Step two, once the batch is logged: Algorithm 4.3, apply now if the
        lock is free, else enqueue for whoever holds it.  ``defer`` (a small
        batch): enqueue it unless :data:`DEFER_STAGES` are queued, and leave
        it to the next read (which applies the queue first, so it sees every
        acknowledged row) or the inserter that fills the queue; the queued
        stages are applied merged (:func:`merged_stages`), one kernel run for
        many one-row inserts instead of one each on the acknowledgement path."""
        self.queue.append(st)
        self.content += 1       # after the stage is visible to readers, before the acknowledgement
        if defer and len(self.queue) < DEFER_STAGES and self.defers():
            return
        if self.lock.acquire(blocking=False):
            try:
                self._drain()
            finally:
                self.lock.release()

    def defers(self) -> bool:
        """Whether small batches may wait in the queue: not for a view whose
        state also changes with the clock (windows, TTL, retention, row caps),
        whose reaper and panes take batches in their time (once per definition)."""
        rel, ok = self._defers
        if rel is not self.rel:
            ok = not self.windowed()
            self._defers = (self.rel, ok)
        return ok

    def _apply(self, st: ViewStage) -> None:
        if self.failure is None:
            try:
                st.apply()
            except Exception as e:  # noqa: BLE001 - a bug in one view must not fail the others' logged batch
                log.exception('continuous view "%s" failed to apply a logged batch', self.rel.name)
                self.manager.mark_broken(self, f"applying a logged batch failed: {type(e).__name__}: {e}")
        self.version += 1

    def _drain(self) -> None:
        """Under the lock: apply every queued stage, merged where they can be.
        The version moves before any stage leaves the queue, so a result
        cached under (version, queue length) never stands for a state that
        lacks a stage taken off it (``Session.result_version``)."""
        while self.queue:
            self.version += 1
            taken = []
            while True:
                try:
                    taken.append(self.queue.popleft())
                except IndexError:
                    break
            for st in merged_stages(taken) if len(taken) > 1 else taken:
                self._apply(st)

    # ------------------------------------------------------------ read path
    def read(self, ctx, states: bool = False) -> Batch:
        snap = ctx.view_snapshots.get(self.rel.oid)
        if snap is not None:
            return snap
        with self.lock:
            self.catch_up()
            return self.result_locked(ctx, states)

    def combine_spec(self, attnum: int) -> AggSpec | None:
        """The aggregate behind column ``attnum`` (1-based), if combine() may re-aggregate it."""
        return view_states.state_spec(self.plan, attnum - 1)

    def catch_up(self) -> None:
        """Under the lock: apply what inserters queued."""
        self._drain()
        self.check_usable()

    def windows(self) -> list[tuple[StreamPipeline, retention.PaneKey]]:
        """The pipelines grouping by a window pane, with their pane key (once per definition)."""
        rel, panes, keep = self._windows
        if rel is not self.rel:
            panes = [(p, k) for p in self._pipes() for k in [retention.pane_key(p.ops, p.agg)] if k is not None]
            text = dict(self.rel.options).get(retention.OPTION)
            keep = None if text is None else retention.Retention(retention.parse(text))
            if keep is not None and not panes:
                raise PgError(INVALID_PARAMETER_VALUE, f'option "{retention.OPTION}" needs a windowed view',
                              hint="Group the stream by window_start or window_end of TUMBLE(...) or HOP(...) "
                                   "in FROM; retention drops the panes older than it.")
            self._windows = (self.rel, panes, keep)
        return panes

    def retention(self) -> "retention.Retention | None":
        self.windows()
        return self._windows[2]

    def reap_locked(self) -> int:
        """Under the lock: merge the windowed pipelines' local states and drop
        the panes older than the retention (``stream/retention.py``)."""
        keep = self.retention()
        if keep is None:
            return 0
        dropped = 0
        for pipe, key in self.windows():
            pipe.merge()
            dropped += keep.reap(pipe.global_, key)
        if dropped:
            self.version += 1
            self.content += 1
        return dropped

    def result_locked(self, ctx, states: bool = False) -> Batch:
        """Under the lock, caught up: the view's rows, stored for this
        statement (``ctx.view_snapshots``) and reused while no input arrived.
        ``states``: for combine(), computed afresh with the aggregate columns
        carrying private copies of their states (not stored for other reads)."""
        self.reap_locked()
        if states:
            result = self._result_with_states(ctx)
            ctx.view_snapshots[self.rel.oid] = result
            return result
        # Upper pipelines read tables at query time (thesis 4.2.7), so the
        # stored result is only reusable while those tables are unchanged.
        version = (self.version, self._upper_tables_version(ctx), self._upstream_version(ctx), self._time_position(ctx))
        if self.result is not None and _same_version(self.result_version, version):
            result = self.result
        else:
            for pipes in self.pipelines.values():
                for p in pipes:
                    p.merge()
            ctx.run.lend_builds(self.program.kept_builds)
            result = self.plan.execute(ctx)
            self.result, self.result_version = result, version
            self.refreshes += 1
            self.last_refresh = time.time()
        ctx.view_snapshots[self.rel.oid] = result
        return result

    def _result_with_states(self, ctx) -> Batch:
        pipes = self._pipes()
        for p in pipes:
            p.merge()
            p.want_states = True
        try:
            ctx.run.lend_builds(self.program.kept_builds)
            return self.plan.execute(ctx)
        finally:
            for p in pipes:
                p.want_states = False

    def _time_position(self, ctx) -> tuple:
        return self.time_position(sliding.now_us(ctx))

    def time_position(self, now_us: int) -> tuple:
        """What a window's or TTL's result depends on besides the input: the
        first live pane (a stored result is reused within one step), or the
        clock itself for a TTL."""
        out = []
        for p in self._pipes():
            if p.window is not None:
                out.append(p.window.win.live_from(now_us))
            elif p.ttl is not None:
                out.append(now_us)
        return tuple(out)

    def check_usable(self) -> None:
        if self.failure is not None:
            raise PgError("55000", f'continuous view "{self.rel.name}" is broken: {self.failure}',
                          hint=f'DROP VIEW {self.rel.name} and create it again; its other state cannot be trusted.')

    def _upper_tables_version(self, ctx) -> tuple:
        """The tables' data versions themselves, not their ids: a version
        freed after a change could hand its id to a later one."""
        data = ctx.state.data
        return tuple(data.get(oid) for oid in self.upper_tables)

    def _upstream_version(self, ctx) -> tuple:
        """A view over other continuous views gets no batches of its own: its
        stored result is only reusable while theirs are.  Reading them here
        (cached there, and snapshotted in ``ctx`` for the plan that follows)
        yields their current result objects, compared by identity."""
        if not self.upstream_views:
            return ()
        views = [self.manager.views.get(oid) for oid in self.upstream_views]
        combined = self.program.combined_views
        return tuple(object() if cv is None else cv.read(ctx, states=True) if cv.rel.oid in combined else cv.read(ctx)
                     for cv in views)

    def redefine(self, new: "ContinuousView") -> None:
        """Take ``new``'s definition (CREATE OR REPLACE VIEW), compiled over
        this view's own pipelines (``PipelinePool``), so the state stays where
        it is.  Done in place, under the view's lock: the manager keeps routing
        batches to this object, and a batch staged before into the pipelines
        lands in the same ones after."""
        with self.lock:
            self._drain()
            self.rel, self.program, self.plan = new.rel, new.program, new.plan
            self.pipelines, self.static_tables = new.pipelines, new.static_tables
            self.upper_tables, self.upstream_views = new.upper_tables, new.upstream_views
            self.result, self.result_version = None, None
            self.version += 1
            self.content += 1

    def state_bytes(self) -> int:
        """Global plus thread-local state, native (compiled) tables holding groups included."""
        return sum(p.state_nbytes() + _native_bytes(p, holding=True) for p in self._pipes())

    def buffer_bytes(self) -> int:
        """Emptied native tables kept for the next batches (no groups, not state)."""
        return sum(_native_bytes(p, holding=False) for p in self._pipes())

    def _pipes(self) -> list[StreamPipeline]:
        return [p for ps in self.pipelines.values() for p in ps]

    def groups(self) -> int:
        return sum(p.state_groups() for p in self._pipes())

    def windowed(self) -> bool:
        """Does a window, TTL or retention drop state as time passes (the reaper's views)?"""
        return any(p.window is not None or p.ttl is not None or p.cap is not None for p in self._pipes()) \
            or self.retention() is not None

    def window_info(self) -> tuple:
        """(window, panes held, oldest pane's start, newest pane's start) for
        splitstream.views; NULLs without a window.  Expired panes are
        reaped first, at the clock's time, so the figures are the bound the
        view holds -- unless the view's lock stays taken for a second (by a
        read, maybe of this very statement), then as they stand."""
        win = sliding.window_options(self.rel)
        if self.windowed():
            self.reap(sliding.now_us(None), wait=1.0)
        sliders = [p.window for p in self._pipes() if p.window is not None]
        ranges = [r for r in (s.pane_range() for s in list(sliders)) if r is not None]
        if not sliders:
            return (win.describe() if win is not None else None, None, None, None)
        panes = sum(len(s.panes) for s in sliders)
        if not ranges:
            return (sliders[0].win.describe(), panes, None, None)
        width = sliders[0].win.pane_us
        return (sliders[0].win.describe(), panes, sliding.pane_start(min(r[0] for r in ranges), width),
                sliding.pane_start(max(r[1] for r in ranges), width))

    def reap(self, now_us: int, wait: float = 0.0) -> bool:
        """Drop expired panes and groups.  Takes the view's lock only when
        free, or within ``wait`` seconds (inserters never wait on it: they
        queue; a bounded wait cannot deadlock with a thread holding it)."""
        if not (self.lock.acquire(timeout=wait) if wait > 0 else self.lock.acquire(blocking=False)):
            return False
        try:
            self._drain()
            if self.failure is None:
                for p in self._pipes():
                    p.expire(now_us)
                self.reap_locked()          # event-time panes past their retention
            return True
        finally:
            self.lock.release()

    # ------------------------------------------------------------ checkpoints
    def export_state(self) -> dict:
        """The view's state for a checkpoint: each pipeline's global table,
        named by the pipeline's fingerprint (never by its position: a
        re-plan after a restart may order the pipelines differently)."""
        with self.lock:
            self._drain()
            out = []
            for fp, p in pipeline_fingerprints(self):
                p.merge()
                out.append({"fingerprint": fp, "table": export_table(p.state_table())})
            saved = {"version": self.version, "pipelines": out}
            if self.backfilled:
                saved["backfilled"] = self.backfilled
            return saved

    def import_state(self, saved: dict) -> None:
        """Load the states of :meth:`export_state` into the pipelines of the
        same fingerprint.  A saved state that matches no pipeline (or a
        pipeline left without one) is refused with :class:`StateMismatch`
        before any state is loaded: attaching it elsewhere would be wrong."""
        pipes = dict(pipeline_fingerprints(self))
        by_fp = {st["fingerprint"]: st["table"] for st in saved["pipelines"]}
        if set(by_fp) != set(pipes):
            raise StateMismatch(self.rel.name, sorted(set(by_fp) - set(pipes)), sorted(set(pipes) - set(by_fp)))
        for fp, table in by_fp.items():
            import_table(pipes[fp].global_, table)
        self.version = saved["version"] + 1
        self.backfilled = saved.get("backfilled", 0)


def _in_order(batch: Batch, nkeys: int, order: list[int] | None) -> Batch:
    """A kept pipeline's result with its aggregates in the new definition's
    order (``order[i]``: the old position of the i-th aggregate)."""
    if order is None or order == sorted(order):
        return batch
    cols = batch.cols[:nkeys] + [batch.cols[nkeys + j] for j in order] + batch.cols[nkeys + len(order):]
    return Batch(cols, batch.n)


class StateMismatch(Exception):
    """Saved view state whose pipelines are not the view's current ones."""

    def __init__(self, view: str, unknown: list[str], missing: list[str]) -> None:
        super().__init__(f'saved state of continuous view "{view}" does not match its pipelines '
                         f"(saved for unknown pipelines {unknown}, no state for pipelines {missing})")
        self.unknown, self.missing = unknown, missing


def pipeline_fingerprints(cv: ContinuousView) -> list[tuple[str, StreamPipeline]]:
    """Each stream pipeline of the view with its fingerprint: a sha256 of a
    canonical description -- the view's SQL, the stream, the scan, the
    pipeline's filters and joins (with the tables they probe) and its
    grouping (keys, aggregates and their types).  Stable across processes
    (no id(), no hash()) and across re-plans that only move columns (an
    accepted ALTER TABLE on a joined table): expressions are described by
    column names, not positions.  Identical descriptions (pipelines holding
    the same state) are told apart by a counter."""
    out = []
    seen: collections.Counter = collections.Counter()
    for oid in sorted(cv.pipelines):
        for p in cv.pipelines[oid]:
            desc = "\n".join([f"view {cv.rel.sql}", f"stream {oid}", *_pipeline_words(p)])
            fp = hashlib.sha256(desc.encode()).hexdigest()[:32]
            seen[fp] += 1
            out.append((fp if seen[fp] == 1 else f"{fp}#{seen[fp]}", p))
    return out


def _pipeline_words(p: StreamPipeline) -> list[str]:
    words = [p.scan.label()]
    for op in p.ops:
        if isinstance(op, operators.Filter):
            words.append(f"Filter {_stable_repr(op.pred)}")
        elif isinstance(op, (operators.HashJoin, operators.NestedLoopJoin)):
            build = [c for c in op.children if _path_to(c, p.scan) is None]
            tables = sorted({t.rel.oid for c in build for t in _table_scans(c)})
            keys = [_stable_repr(k) for k in getattr(op, "lkeys", []) + getattr(op, "rkeys", [])]
            words.append(f"{op.label()} keys={keys} tables={tables}")
        else:
            words.append(type(op).__name__)
    agg = p.agg
    words.append(f"{agg.label()} keys={[_stable_repr(k) for k in agg.keys]} key_oids={[k.oid for k in agg.keys]} "
                 f"aggs={[(_stable_repr(a), a.arg_oids) for a in agg.aggs]}")
    return words


def _stable_repr(v) -> str:
    """repr without column positions (``#3:name`` -> ``name``) or memory
    addresses (objects without a repr of their own)."""
    return _POSITION.sub("", _ADDRESS.sub("", repr(v)))


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_POSITION = re.compile(r"#\d+:")


def _native_bytes(pipe: StreamPipeline, holding: bool) -> int:
    """Native tables a compiling backend holds for the pipeline."""
    return backends.native().native_bytes(pipe, holding)


def _limit_only_above(nodes: list) -> bool:
    """``nodes`` (the plan above an ungrouped stream's operators, root first)
    only project or limit: the rows are kept and LIMIT applies at read."""
    return all(isinstance(n, (_Root, operators.Project, operators.Limit)) for n in nodes)


def _groups_above(nodes: list) -> bool:
    return any(isinstance(n, operators.Aggregate) for n in nodes)


class _Root(operators.Op):
    def __init__(self, child, main: bool = False) -> None:
        self.child = child
        self.main = main        # the view's own plan (not a subquery in an expression)
        self.children = [child]
        self.out = child.out


def _subquery_exprs(op, seen: set, exprs_of=None) -> list:
    """SubqueryExpr nodes in the expressions of ``op`` and of its subtree,
    each operator once.  ``exprs_of(op)`` lists an operator's expressions;
    by default those it holds directly, in lists, or first in tuples."""
    if id(op) in seen:
        return []
    seen.add(id(op))
    out = [n for e in (exprs_of or _listed_exprs)(op) for n in e.walk() if isinstance(n, expr.SubqueryExpr)]
    for c in op.children:
        out += _subquery_exprs(c, seen, exprs_of)
    return out


def _listed_exprs(op) -> list:
    out = []
    for v in vars(op).values():
        for e in (v if isinstance(v, list) else [v]):
            if isinstance(e, tuple):
                e = e[0] if e else None
            if isinstance(e, expr.Expr):
                out.append(e)
    return out


def _expression_subplans(op, seen=None) -> list:
    """Plans of subqueries used inside expressions, nested ones included."""
    seen = set() if seen is None else seen
    out = []
    for sq in _subquery_exprs(op, seen):
        if id(sq.plan) not in seen:
            out.append(sq.plan)
            out += _expression_subplans(sq.plan, seen)
    return out


def _operator_words(node) -> str:
    """How a user wrote the operator a refusal names."""
    if isinstance(node, operators.SetOp):
        return node.kind.upper() + (" ALL" if node.all else "")
    if type(node).__name__ == "WindowOp":
        return "a window function"
    return {operators.Sort: "ORDER BY ... LIMIT", operators.Limit: "LIMIT", operators.Distinct: "DISTINCT"}.get(type(node), node.label())


def _op_exprs(op) -> list:
    """The expressions an operator holds (keys, predicates, projections,
    aggregate arguments and filters), not those of its children."""
    return _exprs_in(v for k, v in vars(op).items() if k != "children")


def _reads_outer_row(op, depth: int) -> bool:
    """Does the subtree read a row of a query enclosing it ``depth`` levels
    up (an OuterRef reaching past it)?  Subqueries and LATERAL right sides
    add a level."""
    for e in _op_exprs(op):
        for n in e.walk():
            if isinstance(n, expr.OuterRef) and n.depth >= depth:
                return True
            if isinstance(n, expr.SubqueryExpr) and _reads_outer_row(n.plan, depth + 1):
                return True
    return any(_reads_outer_row(c, depth + 1 if isinstance(op, operators.LateralJoin) and c is op.right else depth)
               for c in op.children)


def _streams_in_expressions(op) -> list:
    """Stream scans still reachable only through expressions: those would be
    re-scanned at read time, so the view is refused."""
    return [scan for sq in _subquery_exprs(op, set()) for scan in _stream_scans(sq.plan)]


_PURE_EXPRS = ("ColRef", "Const", "Cast", "Compare", "And", "Or", "Not", "IsNull", "IsBool", "IsDistinct",
               "Arith", "Neg", "InList", "Case", "Coalesce")


def _pure_table_subtree(op) -> bool:
    """Only table scans, filters and projections whose expressions are
    immutable (no functions, parameters or subqueries): its result changes
    only when a table's data does."""
    if isinstance(op, operators.TableScan):
        return True
    if isinstance(op, operators.Filter):
        exprs = [op.pred]
    elif isinstance(op, operators.Project):
        exprs = list(op.exprs)
    else:
        return False
    if any(type(n).__name__ not in _PURE_EXPRS for e in exprs for n in e.walk()):
        return False
    if _expr_refs(exprs) is None:
        return False
    return all(_pure_table_subtree(c) for c in op.children)


class KeptBuild:
    """The build side of an upper-pipeline join that reads only tables, kept
    between reads while those tables' data versions are unchanged (compared
    by identity and held, so an id cannot be reused).  View state, lent to
    each read's run (``ExecutionRun.lend_builds``); reads hold the view lock."""

    def __init__(self, oids: list[int]) -> None:
        self.oids = oids
        self.built_for: tuple | None = None
        self.build: operators.Build | None = None

    def current(self, join: operators.HashJoin, ctx) -> operators.Build:
        version = tuple(ctx.state.data.get(o) for o in self.oids)
        stale = self.built_for is None or len(self.built_for) != len(version) or \
            any(a is not b for a, b in zip(self.built_for, version))
        if self.build is None or stale:
            self.build = join.build(ctx)
            self.built_for = version
        return self.build


def _keep_table_builds(op, kept: dict, seen=None) -> dict:
    """Upper pipelines run at every read after new input: a join whose build
    side reads only (unchanged) tables keeps its hash table between reads,
    keyed by the tables' data versions, like the view's stored result."""
    seen = set() if seen is None else seen
    if id(op) in seen:
        return kept
    seen.add(id(op))
    if isinstance(op, operators.HashJoin) and op.kind in ("inner", "left", "semi", "anti") \
            and _pure_table_subtree(op.right) \
            and all(type(n).__name__ in _PURE_EXPRS for e in op.rkeys for n in e.walk()):
        kept[op] = KeptBuild(sorted({t.rel.oid for t in _table_scans(op.right)}))
    for c in op.children:
        _keep_table_builds(c, kept, seen)
    return kept


def _same_version(a, b) -> bool:
    """(input version, table versions, upstream view results, time position):
    the middle two compare by identity (objects kept referenced, so no id can
    be reused), the others by value."""
    return isinstance(a, tuple) and a[0] == b[0] and a[3:] == b[3:] and all(
        len(x) == len(y) and all(p is q for p, q in zip(x, y)) for x, y in zip(a[1:3], b[1:3]))


def _view_sources(op) -> list:
    """Continuous views read by the plan (scans of views over streams)."""
    rel = getattr(op, "continuous_view", None)
    out = [rel] if rel is not None else []
    for c in op.children:
        out += _view_sources(c)
    return out


def _combined_sources(op) -> list[int]:
    """The continuous views the plan reads whose columns it combine()s."""
    rel = getattr(op, "continuous_view", None)
    out = [rel.oid] if rel is not None and rel.oid in getattr(op, "combine_reads", ()) else []
    for c in op.children:
        out += _combined_sources(c)
    return out


def _table_scans(op) -> list:
    out = [op] if isinstance(op, operators.TableScan) else []
    for c in op.children:
        out += _table_scans(c)
    return out


def export_table(t: GroupTable, copy_values: bool = True) -> dict:
    """A copy of the table's state, taken while ingest is held off
    (``copy_values`` False: the arrays themselves, for a table nothing
    changes any more, as a statement's delta: view_deltas.py).

    The checkpoint encodes it later, concurrently with new batches that
    update the live arrays in place: exporting references instead of copies
    would let rows logged after the checkpoint leak into it and be counted
    twice on recovery.  Each aggregate state is a dict of its fields by name
    (the spec and what derives from it are rebuilt from the plan).
    """
    value = _snapshot_value if copy_values else _same
    states = [{k: value(v) for k, v in vars(st).items() if k != "spec" and not isinstance(v, np.dtype)}
              for st in t.states]
    return {"index": t.index.snapshot(), "states": states, "rows_in": t.rows_in}


def _snapshot_value(v):
    """Copy of one piece of aggregate state: arrays by memcpy, anything else
    (sets of DISTINCT values...) deeply."""
    if isinstance(v, np.ndarray) and v.dtype != object:
        return v.copy()
    return copy.deepcopy(v)


def _same(v):
    return v


def import_table(t: GroupTable, saved: dict) -> None:
    t.index.load_snapshot(saved["index"])
    for st, d in zip(t.states, saved["states"]):
        for k, v in d.items():
            setattr(st, k, v)
    t.rows_in = saved["rows_in"]
