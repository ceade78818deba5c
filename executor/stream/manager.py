"""Streams at run time: ring buffers, the insert path into continuous
views, session-window scans, and their recovery.

Ingest of one batch: log it (WAL, durable at the session's
synchronous_commit level), append it to the ring buffer when a scan is
listening, and hand it to every continuous view on the stream.  The batch
is decoded once and shared by all views; large batches feed the views on
two threads (:func:`feed_views`).
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import time
import weakref
from typing import Any, Callable
from concurrent.futures import ThreadPoolExecutor


from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.storage import wal
from splitstream.catalog.storage.wal_records import PartialMerge, StreamBatch, StreamCommit, StreamDelta, StreamPart
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, Notice, PgError

from ..backends.llvm import crc32 as compiled_crc32
from ..execution import operators
from . import observability  # noqa: F401  (registers splitstream.streams / splitstream.views)
from .continuous import DEFER_ROWS, ContinuousView, StateMismatch, StreamScanOp, ViewStage
from .cut import CutLock
from .group_commit import SMALL_ROWS, GroupCommit, Pending
from .reaper import Reaper
from .guard import refuse_row_change, visible
from .signature import PipelinePool
from .spark.functions import register_functions
from . import backfill, management, targets
from .spark.ledger import KEY_SETTING, Ledger, check_key
from .spark.merge import merge_record
from .ring_buffer import RingBuffer
from . import change_notify, late_rows, output_streams, ungrouped, view_deltas, watermark
from .watermark import Advance, Watermark
from .recovery import BROKEN_KEY, broken_mark, describe
from ..sql.dialect import DIALECT
from ..settings import DEFAULT_SETTINGS, parse_duration_ms
from splitstream.catalog.storage.database import Transaction
from ..context import ExecContext, SessionInfo
import sqlglot
from ..sql.planner import Planner


#: how often the reaper drops panes out of retention (reads reap too)

log = logging.getLogger("splitstream.streams")

PARALLEL_MIN_ROWS = 8192      # batches this large feed the views on two threads
_view_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cv-insert")


def _on_two_threads(views: list[ContinuousView], rows: int, work, ctx) -> None:
    """``work(view, ctx)`` for every view; a large batch over several views on two threads.

    Views are independent (each has its own lock and state), and most of a
    view's work runs without the GIL (compiled kernels via ctypes, large
    numpy operations), so the views, heaviest first by their measured cost,
    are dealt to the lighter side.  A helper that gets no CPU costs nothing:
    if it has not started by the time this thread is done, its share runs
    here.  An error on either side is raised here."""
    if len(views) < 2 or rows < PARALLEL_MIN_ROWS:
        for cv in views:
            work(cv, ctx)
        return
    mine, theirs, a, b = [], [], 0.0, 0.0
    for cv in sorted(views, key=lambda v: -v.insert_cost):
        if a <= b:
            mine.append(cv)
            a += cv.insert_cost
        else:
            theirs.append(cv)
            b += cv.insert_cost

    def run(part: list[ContinuousView], c) -> None:
        for cv in part:
            work(cv, c)

    # the helper gets its own per-evaluation scratch (correlated-row stack, CTE
    # results, stats); settings, notices and the transaction are shared
    helper_ctx = dataclasses.replace(ctx, outer_rows=[], cte_results=dict(ctx.cte_results), stats={}) \
        if isinstance(ctx, ExecContext) else ctx
    fut = _view_pool.submit(run, theirs, helper_ctx)
    try:
        run(mine, ctx)
    finally:
        if fut.cancel():
            run(theirs, ctx)
        else:
            fut.result()


def _lazy(make: Callable[[], Any]) -> Callable[[], Any]:
    """``make()`` on the first call, the same value after: a closure, not
    ``functools.cache`` (whose wrapper setup cost a few microseconds per
    delivered batch, paid by every one-row insert)."""
    made: list[Any] = []

    def get() -> Any:
        if not made:
            made.append(make())
        return made[0]
    return get


def stage_views(views: list[ContinuousView], oid: int, batch: Batch, ctx,
                staged: dict[int, ViewStage] | None = None) -> dict[int, ViewStage]:
    """Step one of an insert for every view on the stream: each view runs the
    batch into a stage private to the statement (``staged``: stages an
    earlier batch of the same statement began).  Raises the first error;
    no view has changed."""
    out = {} if staged is None else staged
    lock = threading.Lock()

    def stage(cv: ContinuousView, c) -> None:
        st = cv.stage(oid, batch, c, out.get(cv.rel.oid))
        with lock:
            out[cv.rel.oid] = st

    _on_two_threads(views, batch.n, stage, ctx)
    return out


def apply_stages(views: list[ContinuousView], staged: dict[int, ViewStage], rows: int, ctx) -> None:
    """Step two, once logged: every view takes its stage (or queues it)."""
    defer = rows <= DEFER_ROWS          # a small batch waits for the next read (ContinuousView.deliver)
    _on_two_threads([cv for cv in views if cv.rel.oid in staged], rows,
                    lambda cv, _c: cv.deliver(staged[cv.rel.oid], defer), ctx)


class StreamRuntime:
    def __init__(self, rel) -> None:
        self.rel = rel
        self.lock = threading.Lock()
        self.ring: RingBuffer | None = None
        self.listeners = 0
        #: the stream's last `capacity` rows with their batch numbers (a new view's backfill)
        self.held = backfill.RecentRows()
        self.accepted = 0
        self.recent: list[tuple[float, int]] = []
        self.group_commit = GroupCommit()

    def ensure_ring(self) -> RingBuffer:
        with self.lock:
            if self.ring is None:
                cols = [(c.name, sqltypes.dtype_of(c.type_oid)) for c in self.rel.live_columns]
                self.ring = RingBuffer(cols, self.rel.capacity)
            return self.ring

    def session_scan(self, ctx, op: StreamScanOp) -> Batch:
        """Scan tuples arriving from now until none arrived for the timeout."""

        timeout = parse_duration_ms(ctx.setting("stream_session_timeout", "100ms")) / 1000.0
        ring = self.ensure_ring()
        pinned = ctx.ring_pins.pop(self.rel.oid, None)
        if pinned is None:
            with self.lock:
                self.listeners += 1
            pos = ring.write_tid
        else:                       # the statement's cut chose where the scan starts
            pos, unlisten = pinned
        try:
            parts = []
            skipped = 0
            while True:
                ctx.check_cancel()
                got = ring.wait_for(pos, timeout)
                if not got:
                    break
                while True:
                    r = ring.scan(pos)
                    skipped += r.skipped
                    if r.end_tid == pos:
                        break
                    cols = [Col(d, m, c.type_oid) for d, m, c in zip(r.columns, r.nulls, self.rel.live_columns)]
                    parts.append(Batch(cols, len(r.columns[0]) if r.columns else 0))
                    pos = r.end_tid
        finally:
            if pinned is None:
                self._unlisten()
            else:
                unlisten()
        if skipped:
            ctx.notices.append(Notice(f'stream "{self.rel.name}": {skipped} tuples were overwritten before the scan could read them',
                                      "01000", "NOTICE"))
        return Batch.concat(parts, [c.type_oid for c in self.rel.live_columns])

    def _unlisten(self) -> None:
        with self.lock:
            self.listeners -= 1

    def pin(self, ctx) -> None:
        """Under the statement's exclusive cut: the scan this statement will run
        starts here, and the ring keeps what arrives from now on (a listener
        from now; released when the scan ends, or with the statement)."""
        ring = self.ensure_ring()
        with self.lock:
            self.listeners += 1
        ctx.ring_pins[self.rel.oid] = (ring.write_tid, weakref.finalize(ctx, self._unlisten))

    def rate(self) -> float:
        now = time.monotonic()
        self.recent = [(t, n) for t, n in self.recent if now - t < 10]
        if not self.recent:
            return 0.0
        span = max(now - self.recent[0][0], 1.0)
        return sum(n for _, n in self.recent) / span



def _count(rt, n: int) -> None:
    """Rows accepted, and the recent ones for the rate in splitstream.streams."""
    rt.accepted += n
    rt.recent.append((time.monotonic(), n))
    if len(rt.recent) > 1000:
        rt.recent = rt.recent[-500:]

@dataclasses.dataclass
class StatementReads:
    """The continuous views and streams one planned statement reads."""

    views: list[int] = dataclasses.field(default_factory=list)
    scans: list[int] = dataclasses.field(default_factory=list)
    #: the views whose aggregate columns combine() re-aggregates: read with their states
    combine: set[int] = dataclasses.field(default_factory=set)


def _statement_reads(planner) -> StatementReads:
    reads = planner.__dict__.get("continuous_reads")
    if reads is None:
        reads = planner.__dict__["continuous_reads"] = StatementReads()
    return reads


class StreamManager:
    def __init__(self, engine, check_rows) -> None:
        """``check_rows(session, ctx, rel, batch)`` enforces a relation's
        constraints on a batch (DML's check, handed in by the engine: the
        stream room sits below the commands)."""
        self.engine = engine
        self.check_rows = check_rows
        self.runtimes: dict[int, StreamRuntime] = {}
        self.views: dict[int, ContinuousView] = {}
        # views whose CREATE VIEW has not been registered yet (uncommitted, or
        # committed with the after-commit hook still to run), with their transaction
        self.created: dict[int, tuple[Transaction, ContinuousView]] = {}
        self.pending_states: dict[int, dict] = {}
        self.saved_as: dict = {}                # oid -> the view's Relation when its pending state was saved
        #: views whose saved state matched none of their pipelines: oid ->
        #: (why, the saved state, kept by later checkpoints: never started over)
        self.broken: dict[int, tuple[str, dict]] = {}
        self.lock = threading.RLock()
        self._replaying = False
        self._replay_groups: dict[int, dict] = {}     # COPY parts replayed, waiting for their commit
        self._replay_tops: dict[int, list] = {}       # their columns, for the watermark at the commit
        self.cut = CutLock()
        # Spark exactly-once: batch keys already applied, in WAL order (spark_ledger.py)
        self.spark_ledger = Ledger()
        self.spark_pipelines: dict = {}
        #: stream oid -> its event-time watermark (streams declaring WATERMARK FOR)
        self.watermarks: dict[int, Watermark] = {}
        self.reaper = Reaper(lambda: list(self.views.values()))
        #: transforms and output_of(...) streams (output_streams.py)
        self.outputs = output_streams.Outputs(self)

    # ------------------------------------------------------------ storage hooks
    def install_hooks(self) -> None:
        """Attach to storage as its :class:`catalog.hooks.StreamStorageHooks`."""
        self.engine.db.attach(self)
        register_functions()
        management.register_functions()

    def replay_ctx(self, state=None):
        txn = Transaction(self.engine.db, implicit=True)
        if state is not None:
            txn._state = state
        ctx = ExecContext(db=self.engine.db, txn=txn, session=SessionInfo(settings=dict(DEFAULT_SETTINGS)), engine=self.engine)
        return ctx

    def replay_stream(self, batch: StreamBatch, state, where: str = "") -> None:
        rel = state.rels.get(batch.oid)
        if rel is None:
            return
        # keyed records are decided again in WAL order, exactly as when they were logged
        if batch.batch_key and not self.spark_ledger.admit(batch.batch_key):
            return
        self._replay_views(state)
        staged = self._replay_stage(rel, batch.columns, {}, state, where, targets.from_log(batch.targets))
        self._replay_apply(staged, state)
        self._observe(rel, [batch.columns], batch.late_rows)

    def replay_part(self, part: StreamPart, state, where: str = "") -> None:
        rel = state.rels.get(part.oid)
        if rel is None:
            return
        self._replay_views(state)
        held = self._replay_groups.setdefault(part.group, {})
        self._replay_tops.setdefault(part.group, []).append(part.columns)
        self._replay_stage(rel, part.columns, held, state, where, targets.from_log(part.targets))

    def replay_commit(self, commit: StreamCommit, state) -> None:
        held = self._replay_groups.pop(commit.group, None)
        parts = self._replay_tops.pop(commit.group, [])
        if held is not None:
            self._replay_apply(held, state)
        rel = state.rels.get(commit.oid)
        if rel is not None:
            self._observe(rel, parts, commit.late_rows)     # the COPY moves the watermark at its commit

    def _replay_views(self, state) -> None:
        """Before a logged record is replayed: the views as of that point of the WAL."""
        self._follow_definitions(state)
        self._ensure_views(state)

    def replay_finished(self) -> None:
        for group in self._replay_groups:
            log.warning("dropped the parts of COPY %d: the WAL ends before its commit (it was never acknowledged)",
                        group)
        self._replay_groups.clear()
        self._replay_tops.clear()

    def _replay_stage(self, rel, cols, staged: dict, state, where: str, sent: targets.Targets = None) -> dict:
        """Stage logged rows into every view on the stream (of the logged
        targets ``sent``, if any: exactly the views the live insert fed).  A view that fails
        is marked broken; the others go on (recovery never refuses to start
        because of one view)."""
        data = Batch([Col(d, m, c.type_oid) for (d, m), c in zip(cols, rel.live_columns)], len(cols[0][0]) if cols else 0)
        ctx = self.replay_ctx(state)
        for cv in self._fed_by(rel.oid, sent):
            try:
                staged[cv.rel.oid] = cv.stage(rel.oid, data, ctx, staged.get(cv.rel.oid))
            except Exception as e:  # noqa: BLE001 - one view's failure must not stop recovery
                self._break(cv.rel, f"replaying the WAL record {where} failed", e)
        try:
            self.outputs.stage(rel.oid, data, ctx, [], staged, sent)
        except Exception as e:  # noqa: BLE001 - as live, where the statement failed and nothing was logged
            log.error("replaying the WAL record %s: a transform failed: %s", where, e)
        return staged

    def _replay_apply(self, staged: dict, state) -> None:
        views = [cv for cv in list(self.views.values()) if cv.rel.oid in staged]
        read_ctx = _lazy(functools.partial(self.replay_ctx, state))
        self.outputs.before_apply(views, read_ctx)
        for cv in views:
            cv.deliver(staged[cv.rel.oid])
        self.outputs.after_apply(views, staged, read_ctx)

    def mark_broken(self, cv: ContinuousView, why: str) -> None:
        """A view that failed to apply a logged batch (a bug): its state can no
        longer be trusted, so every read fails, naming it, until it is
        dropped; the mark survives checkpoints and restarts."""
        log.error('continuous view "%s" is broken: %s; its reads fail until it is dropped and created again',
                  cv.rel.name, why)
        cv.failure = cv.failure or why
        self.views.pop(cv.rel.oid, None)
        self.broken[cv.rel.oid] = (cv.failure, broken_mark(cv.failure, None))

    def replay_partial(self, merge: PartialMerge, state, where: str = "") -> None:
        if state.rels.get(merge.oid) is None:
            return
        if not merge.batch_key or self.spark_ledger.admit(merge.batch_key):
            self._replay_views(state)
            cv = self.views.get(merge.view_oid)
            try:
                if cv is not None:          # as live: the readers of output_of(view) follow
                    self.outputs.merged(cv, lambda: merge_record(self, merge),
                                        _lazy(functools.partial(self.replay_ctx, state)))
                else:
                    merge_record(self, merge)
            except Exception as e:
                if cv is None:
                    raise
                self._break(cv.rel, f"replaying the WAL record {where} failed", e)

    def replay_delta(self, rec: StreamDelta, state, where: str = "") -> None:
        rel = state.rels.get(rec.oid)
        if rel is None:
            return
        self._replay_views(state)
        self._replay_apply(view_deltas.replay(self, rec, where, self._break), state)
        wm = self.watermark(rel)
        if wm is not None:
            wm.apply(Advance(rec.top_us, rec.late_rows))

    def _break(self, rel, what: str, e: Exception) -> None:
        """Mark a view broken during recovery: logged with the record and the
        error, its reads fail (55000) until it is dropped, and the mark is
        kept by checkpoints (in its saved state, :func:`broken_mark`) so it
        survives restarts.  The state it was restored with is kept too."""
        why = f"{what}: {describe(e)}"
        log.error('continuous view "%s" is broken: %s; its reads fail until it is dropped and created again',
                  rel.name, why, exc_info=not isinstance(e, PgError))
        self.views.pop(rel.oid, None)
        self.broken[rel.oid] = (why, broken_mark(why, self.pending_states.get(rel.oid)))

    def _ensure_views(self, state) -> None:
        for rel in state.rels.values():
            if rel.kind == "v" and rel.continuous and rel.oid not in self.views and rel.oid not in self.broken \
                    and rel.oid not in self.outputs.transforms:
                self._instantiate(rel, state)

    def _follow_definitions(self, state) -> None:
        """At WAL replay: a CREATE OR REPLACE VIEW replayed since a view was
        instantiated takes effect before the next batch, keeping the state
        as the live replacement did (same pipelines, same state epoch)."""
        for oid, cv in list(self.views.items()):
            rel = state.rels.get(oid)
            if rel is not None and rel.continuous and _definition(rel) != _definition(cv.rel):
                new = self._compile_over(cv, rel, state)
                if new is None:
                    self.views[oid] = self._compile(rel, state)
                else:
                    cv.redefine(new)

    def _compile(self, rel, state, reuse: PipelinePool | None = None) -> ContinuousView:
        return ContinuousView(self, rel, self.plan_definition(rel, state), self.replay_ctx(state), reuse)

    def plan_definition(self, rel, state=None) -> operators.Op:
        """A continuous view's or transform's query, planned (not compiled)."""
        pl = Planner(self.engine, state if state is not None else self.engine.db.committed)
        return pl.plan_query(sqlglot.parse_one(rel.sql, read=DIALECT))

    def _compile_over(self, old: ContinuousView, rel, state) -> ContinuousView | None:
        """``rel`` compiled over ``old``'s pipelines when it keeps the state (same
        state epoch, the same stream pipelines), else None."""
        if _epoch(rel) != _epoch(old.rel):
            return None
        pool = PipelinePool(old.pipelines)
        new = self._compile(rel, state, pool)
        return new if pool.covers(new.pipelines) else None

    def _instantiate(self, rel, state) -> None:
        # kept (not popped) until recovery ends: a view broken while the WAL
        # replays keeps the state it was restored with
        saved = self.pending_states.get(rel.oid)
        if saved is not None and BROKEN_KEY in saved:
            # broken before a checkpoint: broken still, until dropped
            self.broken[rel.oid] = (saved[BROKEN_KEY], saved)
            return
        saved_as = self.saved_as.get(rel.oid)
        if saved is None and backfill.requested(rel):
            why = ("its backfill was lost: the server stopped before the checkpoint that saves it; "
                   "drop the view and create it again")
            log.error('continuous view "%s" is broken: %s', rel.name, why)
            self.broken[rel.oid] = (why, broken_mark(why, None))
            return
        if output_streams.is_transform(rel):
            self.outputs.transforms[rel.oid] = output_streams.Transform(rel, self.plan_definition(rel, state))
            return
        try:
            cv = self._compile(rel, state)
            if saved is not None and saved_as is not None and _definition(saved_as) != _definition(rel):
                # saved under the checkpoint's definition, replaced since (in the WAL):
                # loaded there, then kept if the replacement kept it live
                cv = self._saved_under(saved_as, saved, cv, state)
            elif saved is not None:
                cv.import_state(saved)
        except StateMismatch as e:
            # never attach state to pipelines it was not saved for, nor
            # silently start the view over: it stays unavailable until replaced
            log.error("%s; the view is unavailable until it is dropped and created again", e)
            self.broken[rel.oid] = (str(e), saved if saved is not None else {})
            return
        except Exception as e:
            self._break(rel, "restoring it failed", e)
            return
        self.views[rel.oid] = cv

    def snapshot_streams(self) -> dict:
        views = {oid: saved for oid, (_why, saved) in list(self.broken.items())}
        views.update((oid, cv.export_state()) for oid, cv in list(self.views.items()))
        return {"views": views, "ledger": list(self.spark_ledger.keys),
                "watermarks": {oid: wm.snapshot() for oid, wm in list(self.watermarks.items())}}

    def restore_streams(self, snap: dict) -> None:
        for k in snap["ledger"]:
            self.spark_ledger.add(k)
        self.pending_states = dict(snap["views"])
        rels = self.engine.db.committed.rels
        for oid, saved in (snap.get("watermarks") or {}).items():     # absent in older checkpoints
            wm = self.watermark(rels[oid]) if oid in rels else None
            if wm is not None:
                wm.restore(saved)
        # the definitions the states were saved under (the checkpoint's catalog)
        rels = self.engine.db.committed.rels
        self.saved_as = {oid: rels[oid] for oid in self.pending_states if oid in rels}

    def recover(self) -> None:
        self._follow_definitions(self.engine.db.committed)
        self._ensure_views(self.engine.db.committed)
        self.pending_states.clear()     # every view has taken (or kept, if broken) its saved state
        self.saved_as.clear()
        # panes, TTL groups and retention that expired while the server was down go now
        self.reaper.reap_once(wait=60.0)
        if any(cv.windowed() for cv in self.views.values()):
            self.reaper.ensure_running()

    def _saved_under(self, saved_as, saved: dict, cv: ContinuousView, state) -> ContinuousView:
        """``cv`` with the state a checkpoint saved under an older definition
        ``saved_as``, when the replacement kept it (same pipelines, same
        epoch); else ``cv`` as it is, started over as its replacement asked."""
        if _epoch(saved_as) != _epoch(cv.rel):
            return cv
        try:
            old = self._compile(saved_as, state)
        except PgError as e:                 # the old definition no longer plans: the state has no home
            raise StateMismatch(cv.rel.name, [f"(saved under an earlier definition: {e.message})"], []) from None
        old.import_state(saved)              # StateMismatch: as any unmatched saved state
        new = self._compile_over(old, cv.rel, state)
        if new is None:
            raise StateMismatch(cv.rel.name, ["(saved under an earlier definition)"], [])
        old.redefine(new)
        return old

    # ------------------------------------------------------------ DDL
    def runtime(self, rel) -> StreamRuntime:
        rt = self.runtimes.get(rel.oid)
        if rt is None or rt.rel is not rel and [c.name for c in rt.rel.live_columns] != [c.name for c in rel.live_columns]:
            rt = StreamRuntime(rel)
            self.runtimes[rel.oid] = rt
        return rt

    def scan_op(self, rel, alias, planner):
        reads = _statement_reads(planner)
        reads.scans.append(rel.oid)
        return StreamScanOp(rel, alias, self.runtime(rel), lambda ctx: self._read_together(reads, ctx))

    def output_scan_op(self, view, alias, planner) -> tuple[operators.Op, list[str]]:
        """``output_of(view)`` in FROM: the scan of the view's output stream
        and each column's qualifier (old/new, or the alias for a transform)."""
        output_streams.refuse_not_view(view.name, view)
        output_streams.refuse_ungrouped(view, self.plan_definition(view, planner.state))
        planner.streams_used.append(output_streams.output_relation(view))
        rel = planner.streams_used[-1]
        return output_streams.OutputScanOp(rel, alias, None), output_streams.column_tables(view, alias)

    def view_read_op(self, rel, alias, planner):
        if output_streams.is_transform(rel):
            raise PgError(FEATURE_NOT_SUPPORTED, f'transform "{rel.name}" keeps no rows',
                          hint=f"A transform writes its rows to its output stream: read them with CREATE VIEW ... "
                               f"AS SELECT ... FROM output_of('{rel.name}').")
        out = [operators.OutCol(c.name, c.type_oid, c.typmod, rel.oid, i + 1) for i, c in enumerate(rel.live_columns)]

        # every view and stream this statement reads (the planner is the
        # statement's): the first read brings them all to one cut of the input
        reads = _statement_reads(planner)
        reads.views.append(rel.oid)

        def fetch(ctx, _oid=rel.oid):
            if _oid not in ctx.view_snapshots:
                self._read_together(reads, ctx)
            cv = self.views.get(_oid)
            if cv is None:
                self._ensure_views(ctx.state)
                cv = self.views.get(_oid)
            if cv is None:
                why = self.broken.get(_oid, ("",))[0]
                raise PgError("55000", f'continuous view "{rel.name}" is not available' + (f": {why}" if why else ""),
                              hint=f'Drop it (DROP VIEW {rel.name}) and create it again.' if why else None)
            return cv.read(ctx, states=True) if _oid in reads.combine else cv.read(ctx)

        op = operators.BatchSource(f"Continuous View Scan on {rel.name}", out, fetch)
        op.continuous_view = rel
        op.combine_reads = reads.combine        # filled while the statement is planned (combine_source)
        return op

    def combine_source(self, rel, attnum: int, planner):
        """The aggregate spec behind column ``attnum`` of continuous view
        ``rel`` for combine(), or None; the planned statement then reads the
        view with its states."""
        cv = self.views.get(rel.oid)
        if cv is None:
            self._ensure_views(planner.state)
            cv = self.views.get(rel.oid)
        spec = cv.combine_spec(attnum) if cv is not None else None
        if spec is not None:
            _statement_reads(planner).combine.add(rel.oid)
        return spec

    def _read_together(self, reads: "StatementReads", ctx) -> None:
        """Once per statement: read several views (and the views they read),
        or views and streams' rings, at one cut, each batch in all of them or
        in none (issue 14).  Under the exclusive cut each view is locked and
        caught up and each scanned stream's ring position is pinned; the cut
        is released before the upper plans run, the locks (taken in oid
        order) only after."""
        if ctx.read_cut_taken:
            return
        ctx.read_cut_taken = True
        views = self._with_upstream(reads.views, ctx)
        if len(views) + (1 if views and reads.scans else 0) < 2:
            return
        held = []
        try:
            with self.cut.cut() as epoch:
                ctx.read_epoch = epoch
                for cv in sorted(views.values(), key=lambda v: v.rel.oid):
                    cv.lock.acquire()
                    held.append(cv)
                    cv.catch_up()
                for oid in set(reads.scans):
                    rt = self.runtimes.get(oid)
                    if rt is not None:
                        rt.pin(ctx)
            done: set[int] = set()
            for cv in views.values():
                self._result_in_order(cv, views, done, ctx, reads.combine)
        finally:
            for cv in held:
                cv.lock.release()

    def _result_in_order(self, cv: ContinuousView, views: dict, done: set[int], ctx, states: set[int]) -> None:
        """A view's result after those of the views it reads (its upstream
        results are then found in ``ctx.view_snapshots``, not read again
        under locks this statement holds)."""
        if cv.rel.oid in done:
            return
        done.add(cv.rel.oid)
        for up in cv.upstream_views:
            if up in views:
                self._result_in_order(views[up], views, done, ctx, states | cv.program.combined_views)
        cv.result_locked(ctx, cv.rel.oid in states)

    def with_upstream(self, oids: list[int], ctx) -> set[int]:
        """The views ``oids`` and every continuous view they read, transitively."""
        return set(self._with_upstream(oids, ctx))

    def _with_upstream(self, oids: list[int], ctx) -> dict[int, ContinuousView]:
        out: dict[int, ContinuousView] = {}
        todo = list(oids)
        while todo:
            oid = todo.pop()
            if oid in out:
                continue
            cv = self.views.get(oid)
            if cv is None:
                self._ensure_views(ctx.state)
                cv = self.views.get(oid)
            if cv is not None:
                out[oid] = cv
                todo.extend(cv.upstream_views)
        return out

    def create_view(self, session, ctx, rel, query, replacing: bool = False, restart: bool = False) -> None:
        """``replacing``: CREATE OR REPLACE of continuous view ``rel.oid``.  Its
        state is kept when the stream pipelines stay the same (only the part
        above the groupings changed); else the replacement is refused unless
        ``restart`` asks for a view that starts empty."""
        pl = Planner(self.engine, ctx.state, session=session.info)
        plan = pl.plan_query(query)
        if output_streams.is_transform(rel):
            t = output_streams.Transform(rel, plan)
            ctx.txn.after_commit.append(lambda: self._register_transform(t))
            return
        old = self.views.get(rel.oid)
        keep = replacing and not restart and old is not None
        pool = PipelinePool(old.pipelines) if keep and old is not None else None
        # validates (raises 0A000), runs static pipelines, takes the old pipelines it can
        cv = ContinuousView(self, rel, plan, ctx, pool)
        ungrouped.notice_unbounded(cv, ctx, old if replacing else None)
        # a view not registered yet (created by this transaction) holds no state to keep
        if replacing and not restart and (old is not None or rel.oid in self.broken):
            if pool is None or not pool.covers(cv.pipelines):
                raise PgError(FEATURE_NOT_SUPPORTED,
                              f'cannot replace continuous view "{rel.name}" without discarding its state',
                              hint="Its stream pipelines change (what is filtered, joined, grouped or aggregated "
                                   "below the groupings), so the state it holds cannot serve the new definition. "
                                   "To start the view over, empty, add WITH (restart = true).")
        self._forget_rolled_back()
        self._check_late_rows(cv, ctx)
        self.created[rel.oid] = (ctx.txn, cv)   # guards its static tables within the transaction already
        txn = ctx.txn
        txn.stream_cut = True       # which batches were logged before it: replay's seam (backfill.py)
        if not keep:
            txn.at_cut.append(lambda seq: self._join_at(cv, seq, txn))
        txn.after_commit.append(lambda: self._register(cv, old if keep else None, txn))

    def _check_late_rows(self, cv: ContinuousView, ctx) -> None:
        """The views of a watermarked stream agree on late_rows (``late_rows.py``)."""
        late_rows.keeps(cv.rel)                              # 22023 for a bad value
        for oid in cv.pipelines:
            stream = ctx.state.rels.get(oid)
            if stream is None or self.watermark(stream) is None:
                continue
            pending = [v for _t, v in self.created.values() if oid in v.pipelines]
            others = [v for v in self._views_on(oid) + pending if v.rel.oid != cv.rel.oid]
            late_rows.check_agree(cv.rel, stream.name, others)

    def _register(self, cv: ContinuousView, kept_from: ContinuousView | None = None, txn=None) -> None:
        """After the commit of its CREATE VIEW (unless a savepoint rolled it back).
        A replacement compiled over the registered view's pipelines
        (``kept_from``) redefines that view in place."""
        if visible(self.engine.db.committed, cv):
            old = self.views.get(cv.rel.oid)
            if kept_from is not None and old is kept_from:
                old.redefine(cv)
            elif txn is not None and txn.stream_seq_at_commit is not None:
                self._register_at(cv, txn.stream_seq_at_commit)
            else:
                self.views[cv.rel.oid] = cv
                self.broken.pop(cv.rel.oid, None)
            if cv.windowed():
                self.reaper.ensure_running()
        if self.created.get(cv.rel.oid, (None, None))[1] is cv:
            del self.created[cv.rel.oid]

    def _join_at(self, cv: ContinuousView, boundary: int, txn) -> Callable[[], None]:
        """The view joins its streams at its CREATE's commit record, under the
        lock that numbers and logs stream batches (``Transaction.at_cut``):
        every batch logged later finds it registered when it is delivered
        (staged without it, it takes it late), as replay feeds it exactly
        the batches after that record; none was delivered in between.  The
        backfill, if asked, follows after the commit (``_register_at``).
        Returns the undo, for a commit that fails after this."""
        oid = cv.rel.oid
        if not visible(txn.state, cv):           # a savepoint rolled the CREATE back
            return lambda: None
        before, was_broken = self.views.get(oid), self.broken.get(oid)
        cv.stream_boundary, cv.backfilling = boundary, False
        self.views[oid] = cv
        self.broken.pop(oid, None)

        def undo() -> None:
            if before is None:
                self.views.pop(oid, None)
            else:
                self.views[oid] = before
            if was_broken is not None:
                self.broken[oid] = was_broken
        return undo

    def _register_transform(self, t: output_streams.Transform) -> None:
        if visible(self.engine.db.committed, t):
            self.outputs.transforms[t.rel.oid] = t

    def _forget_rolled_back(self) -> None:
        """Views of transactions that ended without committing them."""
        committed = self.engine.db.committed
        for oid, (txn, cv) in list(self.created.items()):
            if not txn.writing and not visible(committed, cv):
                self.created.pop(oid, None)

    def drop_view(self, oid) -> None:
        self.views.pop(oid, None)
        self.outputs.forget(oid)
        self.broken.pop(oid, None)

    def drop_stream(self, oid) -> None:
        self.runtimes.pop(oid, None)

    def alter_stream(self, oid) -> None:
        self.runtimes.pop(oid, None)

    def guard_rows(self, txn, table_oid: int) -> None:
        """``StreamStorageHooks.guard_rows``: every operation that changes a table's rows
        passes here.  A table a visible view joins directly with a stream is
        refused (guard.py); the views a transaction created itself count."""
        if self.views or self.created:
            views = list(self.views.values()) + [cv for _, cv in list(self.created.values())]
            refuse_row_change(txn.state, views, table_oid)

    def watermark(self, rel) -> Watermark | None:
        """The stream's watermark state, if it declares one (made on first use)."""
        wm = self.watermarks.get(rel.oid)
        decl = watermark.declared(rel)
        if decl is None:
            return None
        if wm is None or (wm.column, wm.delay_us) != decl:
            old, wm = wm, Watermark(*decl)
            if old is not None:
                wm.max_us, wm.late_rows = old.max_us, old.late_rows
            self.watermarks[rel.oid] = wm
        return wm

    def admit(self, rel, batch: Batch, adv: Advance) -> Batch:
        """``batch`` without the rows later than the stream's watermark,
        unless every view on the stream keeps them (``late_rows.py``); what
        the statement does to the watermark goes into ``adv``, applied by
        :meth:`advanced` once the statement is logged (watermark.py)."""
        wm = self.watermark(rel)
        if wm is None or batch.n == 0:
            return batch
        return wm.admit(batch, adv, late_rows.stream_keeps(self._views_on(rel.oid)))

    def advanced(self, rel, adv: Advance) -> None:
        """A logged statement's advance of its stream's watermark."""
        wm = self.watermark(rel)
        if wm is not None and adv.moves():
            wm.apply(adv)

    def _observe(self, rel, parts: list, late: int) -> None:
        """Replay: logged rows (``parts``: lists of columns) and their late
        count move the watermark as they did live."""
        wm = self.watermark(rel)
        if wm is None:
            return
        adv = Advance(late=late)
        for cols in parts:
            if cols:
                data, nulls = cols[wm.column]
                wm.observed(data, nulls, adv)
        wm.apply(adv)

    def _views_on(self, stream_oid) -> list[ContinuousView]:
        return [cv for cv in list(self.views.values()) if stream_oid in cv.pipelines]

    def _fed_by(self, stream_oid, sent: targets.Targets = None) -> list[ContinuousView]:
        """The views a batch of the stream goes to: the active ones (management.py)
        of the statement's targets (``targets.py``; None: all)."""
        return [cv for cv in self._views_on(stream_oid)
                if management.active(cv.rel) and targets.feeds(sent, cv.rel.oid)]

    def views_on(self, stream_oid) -> list[ContinuousView]:
        """The continuous views reading a stream (or a view's output stream)."""
        return self._views_on(stream_oid)

    # ------------------------------------------------------------ ingest
    def insert(self, ctx, rel, batch: Batch, sync: bool | None = None) -> int:
        """Stage, log and deliver one batch: every view on the stream takes it,
        or none does and nothing is logged (issue 14).  ``sync=None``: the
        session's synchronous_commit."""

        ctx.txn.refuse_write("INSERT")
        if batch.n == 0:
            return 0
        self._refuse_before_view_is_live(ctx, rel)
        # a Spark batch key (SET splitstream.batch_key) is used by this one insert
        key = ctx.session.settings.pop(KEY_SETTING, None) if ctx.session is not None else None
        if key:
            check_key(key)
            if key in self.spark_ledger:
                self._notice_applied(ctx, key, rel)
                return 0
        self.check_rows(ctx.engine_session, ctx, rel, batch)
        to = targets.resolve(ctx)
        sent = batch.n
        adv = Advance()
        batch = self.admit(rel, batch, adv)
        sync = ctx.session.sync_commit if sync is None else sync
        if batch.n == 0:
            if adv.late:            # all late: a record of no rows carries the count
                self._insert(ctx, rel, batch, sync, key, advance=adv, staging=([], {}), to=to)
            return sent
        if not key and batch.n <= SMALL_ROWS:
            p = Pending(rel, batch, ctx, sync, advance=adv, targets=to)
            gc = self.runtime(rel).group_commit
            gc.submit(p, lambda group, release: self._lead(rel, group, release))
            if not p.alone:
                return sent
        return sent if self._insert(ctx, rel, batch, sync, key, advance=adv, to=to) else 0

    def _refuse_before_view_is_live(self, ctx, rel) -> None:
        """An insert into a stream inside the transaction that created a
        continuous view over it.  The view goes live at its CREATE's commit
        (``_join_at``), so these rows would miss it, silently: refused."""
        for txn, cv in list(self.created.values()):
            if txn is ctx.txn and rel.oid in cv.pipelines:
                raise PgError(FEATURE_NOT_SUPPORTED,
                              f'cannot insert into stream "{rel.name}" in the transaction that created '
                              f'continuous view "{cv.rel.name}"',
                              hint="A continuous view starts at the commit of its CREATE VIEW, so rows inserted "
                                   "before it would not reach it. COMMIT first, then insert.")

    def insert_now(self, ctx, rel, batch: Batch, sync: bool, logged: Callable[[], None] | None = None) -> None:
        """A batch that is a group already (the lean path, ``lean_insert.py``):
        check, stage, log and deliver it now, past the group-commit queue.
        Raises before anything is logged (no view changed) when a row fails.
        ``logged()``: called once its WAL record is written."""
        self.check_rows(ctx.engine_session, ctx, rel, batch)
        self._insert(ctx, rel, batch, sync, logged=logged, to=targets.resolve(ctx))

    def _insert(self, ctx, rel, batch: Batch, sync: bool, key: str | None = None,
                logged: Callable[[], None] | None = None, staging: tuple | None = None,
                advance: Advance | None = None, to: targets.Targets = None) -> int:
        """One batch: stage it into every view of its targets ``to`` (unless
        ``staging``: the views and their stages, done already), log it (with
        the late rows of ``advance`` and the targets), deliver it and move
        the watermark."""
        views, staged = staging or self._stage(ctx, rel, batch, to)
        cols = [(c.data, c.null_mask()) for c in batch.cols]
        rt = self.runtime(rel)
        adv = advance or Advance()

        def publish(seq: int) -> None:
            self._publish(rt, views, staged, [batch], seq, ctx, to=to)
            self.advanced(rel, adv)
        seq = self.engine.db.ingest_stream(
            rel.oid, cols, publish, sync, batch_key=key or "",
            admit=(lambda: self.spark_ledger.admit(key)) if key else None, logged=logged, late_rows=adv.late,
            targets=targets.logged(to))
        if not seq:                      # the key was applied by a concurrent insert
            self._notice_applied(ctx, key, rel)
            return 0
        _count(rt, batch.n)
        return batch.n

    def _lead(self, rel, group: list[Pending], release: Callable[[], None]) -> None:
        """Insert a group of small inserts as one batch (group_commit.py).
        Members planned against another version of the stream, members
        sent to other targets than the first (pipelinedb.stream_targets: one
        record has one set), and every member of a group whose combined rows
        fail to stage, run on their own."""
        to = group[0].targets
        same = [p for p in group if p.rel is rel and p.targets == to]
        for p in group:
            p.alone = p.rel is not rel or p.targets != to
        if len(same) == 1:
            self._insert(same[0].ctx, rel, same[0].batch, same[0].sync, logged=release, advance=same[0].advance,
                         to=to)
            return
        batch = Batch.concat([p.batch for p in same])
        adv = Advance()
        for p in same:
            if p.advance is not None:
                adv.join(p.advance)
        try:
            staging = self._stage(same[0].ctx, rel, batch, to)
        except PgError:
            for p in same:
                p.alone = True
            return
        self._insert(same[0].ctx, rel, batch, any(p.sync for p in same), logged=release, staging=staging,
                     advance=adv, to=to)

    def _stage(self, ctx, rel, batch: Batch,
               to: targets.Targets = None) -> tuple[list[ContinuousView], dict[int, ViewStage]]:
        views = self._fed_by(rel.oid, to)
        staged = stage_views(views, rel.oid, batch, ctx)
        self.outputs.stage(rel.oid, batch, ctx, views, staged, to)      # transforms and their readers
        return views, staged

    def copy_staging(self, rel, to: targets.Targets = None) -> "CopyStaging | None":
        """Where a COPY stages its slabs into the stream's views while the
        data still arrives (:class:`CopyStaging`), so that CopyDone is left
        only the last slab, the WAL write and the delivery.  None for a
        stream with transforms: the views reading their output would be
        staged per slab by whatever reads it then, so all waits for CopyDone."""
        return None if self.outputs.transforms_on(rel.oid) else CopyStaging(self, rel, to)

    def copy_logs_deltas(self, rel, to: targets.Targets = None) -> bool:
        """Whether a COPY into ``rel`` starting now may be logged as its
        views' deltas (view_deltas.py): then its rows are not encoded for
        the WAL as they arrive."""
        rt = self.runtime(rel)
        return not self.outputs.transforms_on(rel.oid) and rt.listeners == 0 \
            and view_deltas.eligible(self._fed_by(rel.oid, to), rel.oid, self.outputs.read_sources())

    def insert_copy_delta(self, ctx, rel, group: int, batches: list[Batch], rows: int, advance: Advance,
                          to: targets.Targets, staging: "CopyStaging | None", parts) -> None:
        """A COPY whose slabs (``batches``, all in memory) were staged as they
        arrived, logged as its views' deltas if they still are the stream's
        views and the deltas are small (else as its rows, ``parts()`` as in
        :meth:`insert_parts`), then delivered."""
        row_bytes = sum(c.data.nbytes for b in batches for c in b.cols)
        deltas = view_deltas.export(staging.views, staging.staged, rel.oid, row_bytes) \
            if staging is not None and staging.current() else None
        if deltas is None or staging is None:
            self.insert_parts(ctx, rel, group, parts, rows, advance, to, kept=batches, staging=staging)
            return
        rt = self.runtime(rel)
        commit = StreamCommit(rel.oid, group, len(batches), rows, advance.late)
        rec = StreamDelta(rel.oid, rows, deltas, advance.late, advance.top_us)
        views, staged = staging.views, staging.staged

        def publish(seq: int) -> None:
            self._publish(rt, views, staged, staging.batches, seq, ctx, lambda: batches, to)
            self.advanced(rel, advance)
        self.engine.db.ingest_delta(lambda: rec if staging.current() else None,
                                    lambda: ((h, b) for h, b, _n in parts()), commit, publish,
                                    ctx.session.sync_commit, compiled_crc32.crc32)
        _count(rt, rows)

    def insert_parts(self, ctx, rel, group: int, parts, rows: int, advance: Advance | None = None,
                     to: targets.Targets = None, kept: list[Batch] | None = None,
                     staging: "CopyStaging | None" = None, ahead: Any = None) -> None:
        """A COPY: its slabs (``parts()``: (WAL header, body, rows) of each
        :class:`StreamPart` record, encoded and validated while the data
        arrived) are staged into every view, then logged with their commit
        and delivered as one batch, so readers see all of it or none.
        ``advance``: what the COPY's slabs do to the watermark, logged in the
        commit and applied with it.  ``to``: the COPY's targets (resolved
        when it began and logged in its parts).  ``kept``: the batches of the
        first parts, still in memory (only the ones spilled to disk are
        decoded back).  ``staging``: the slabs staged as they arrived, used
        if the views it staged for are still the stream's (else every slab is
        staged again here).  ``ahead``: the first parts, logged already with
        the checkpoint lock held (``Database.hold_for_parts``)."""
        rt = self.runtime(rel)
        held = kept or []

        def slabs():
            for i, (_head, body, n) in enumerate(parts()):
                if i < len(held):
                    yield held[i]
                    continue
                cols = wal.decode_body(body)[0].columns
                yield Batch([Col(d, m, c.type_oid) for (d, m), c in zip(cols, rel.live_columns)], n)

        if staging is None or not staging.current():
            staging = CopyStaging(self, rel, to)
            for b in slabs():
                staging.add(b, ctx)
        views, staged, batches = staging.views, staging.staged, staging.batches
        adv = advance or Advance()
        commit = StreamCommit(rel.oid, group, staging.nparts, rows, adv.late)

        def publish(seq: int) -> None:
            self._publish(rt, views, staged, batches, seq, ctx, lambda: list(slabs()), to)
            self.advanced(rel, adv)
        self.engine.db.ingest_parts(lambda: ((h, b) for h, b, _n in parts()), commit, publish,
                                    ctx.session.sync_commit, ahead)
        _count(rt, rows)

    def _publish(self, rt, views, staged: dict, batches: list[Batch], seq: int, ctx,
                 every: Callable[[], list[Batch]] | None = None, to: targets.Targets = None) -> None:
        """Logged (and durable, with fsync on): the ring, if a scan listens, the
        stream's recent rows (a backfill's, by reference) and every view take the batch,
        within one delivery of the cut; so does a view registered since the
        batch was staged without it, when it takes it (backfill.takes_late;
        ``every()``: all of a COPY's rows, when ``batches`` holds only its last)."""
        with self.cut.delivering(seq):
            if rt.listeners > 0 and rt.ring is not None:
                for b in batches:
                    rt.ring.append([c.data for c in b.cols], [c.nulls for c in b.cols])
            rt.held.add(seq, batches, rt.rel.capacity, to)
            # a view switched off by a commit logged before this batch does not take it
            taking = [cv for cv in views if cv.switch is None or backfill.effective_active(cv, seq)]
            read_ctx = _lazy(self.replay_ctx)       # made only if a view has readers of its changes
            self.outputs.before_apply(taking, read_ctx)
            apply_stages(taking, staged, sum(b.n for b in batches), ctx)
            self.outputs.after_apply(taking, staged, read_ctx)
            late = [cv for cv in self._views_on(rt.rel.oid) if cv not in views and targets.feeds(to, cv.rel.oid)
                    and (cv.stream_boundary is not None or cv.switch is not None) and backfill.takes_late(cv, seq)]
            if late:
                whole = Batch.concat(every() if every is not None else batches,
                                     [c.type_oid for c in rt.rel.live_columns])
                for cv in late:
                    self._catch_up(cv, rt.rel, whole, ctx)
        change_notify.fire(self.engine.db.notifier, views, staged, ctx.session.pid)

    def _catch_up(self, cv: ContinuousView, rel, batch: Batch, ctx) -> None:
        """Rows logged already, given to one view: a failure breaks that view
        (the rows stand), as when a logged batch fails to apply."""
        if batch.n == 0:
            return
        try:
            cv.deliver(cv.stage(rel.oid, batch, ctx))
        except Exception as e:  # noqa: BLE001 - the batch is logged: only this view can fail
            self.mark_broken(cv, f"taking rows logged before it existed failed: {describe(e)}")

    def _register_at(self, cv: ContinuousView, boundary: int) -> None:
        """After the commit of a new (or truncated) ``cv``, registered at its
        commit record already (``_join_at``), logged after stream batch
        ``boundary`` (backfill.py): with ``backfill``, under the cut, it takes
        the stream's held rows logged up to ``boundary`` (those delivered
        later take it late); a checkpoint then saves the backfilled state,
        which replay cannot rebuild."""
        wanted = backfill.requested(cv.rel) and management.active(cv.rel)
        if wanted:
            ctx = self.replay_ctx(self.engine.db.committed)
            with self.cut.cut():
                for oid in list(cv.pipelines):
                    rt = self.runtimes.get(oid)
                    old = backfill.ring_rows(rt, lambda seq: seq <= boundary, cv.rel.oid) if rt is not None else None
                    if rt is not None and old is not None:
                        self._catch_up(cv, rt.rel, old, ctx)
                        cv.backfilled += old.n
                cv.backfilling = True
        if wanted:
            self.engine.db.checkpoint()

    @staticmethod
    def _notice_applied(ctx, key, rel) -> None:
        ctx.notices.append(Notice(f'batch "{key}" was already applied to stream "{rel.name}"; skipped',
                                  "00000", "NOTICE"))

def _definition(rel) -> tuple:
    """What CREATE OR REPLACE VIEW changes: the query and the options."""
    return rel.sql, rel.options


def _epoch(rel) -> str:
    """How many times the view was explicitly restarted (WITH (restart = true))."""
    return dict(rel.options).get("state_epoch", "0")


class CopyStaging:
    """A COPY's slabs staged into the views of its stream as each is
    decoded (step one of an insert, private to the statement), so the
    kernels run while the client still sends rather than all at CopyDone.
    The views are those the stream fed when the COPY began; a view created,
    dropped, switched or redefined meanwhile makes :meth:`current` false and
    the COPY stages again at CopyDone, as before."""

    def __init__(self, manager: StreamManager, rel, to: targets.Targets) -> None:
        self.manager, self.rel, self.to = manager, rel, to
        self.views = manager._fed_by(rel.oid, to)
        self._defs = [(cv, cv.rel) for cv in self.views]
        self.staged: dict = {}
        self.batches: list[Batch] = []
        self.nparts = 0
        rt = manager.runtime(rel)
        self._rt = rt
        self.listened = rt.listeners > 0     # a session scan takes every slab from the ring

    def add(self, b: Batch, ctx) -> None:
        """Stage one slab (its rows validated and admitted); raises the
        statement's error, no view changed."""
        self.nparts += 1
        stage_views(self.views, self.rel.oid, b, ctx, self.staged)
        self.manager.outputs.stage(self.rel.oid, b, ctx, self.views, self.staged, self.to)
        self.batches.append(b)
        if not self.listened:              # else only the stream's last rows are held (backfill.py)
            backfill.keep_last(self.batches, self.rel.capacity)

    def current(self) -> bool:
        """Whether the stream still feeds exactly the views staged, in the
        same definitions, and a scan listens as it did."""
        now = self.manager._fed_by(self.rel.oid, self.to)
        return (self._rt.listeners > 0) == self.listened and len(now) == len(self._defs) \
            and all(cv is old and cv.rel is rel for cv, (old, rel) in zip(now, self._defs))
