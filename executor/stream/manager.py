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
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor


from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.storage.wal_records import PartialMerge, StreamBatch
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol.errors import Notice, PgError

from ..execution import operators
from . import observability  # noqa: F401  (registers splitstream.streams / splitstream.views)
from .continuous import ContinuousView, StateMismatch, StreamScanOp
from .guard import refuse_row_change, visible
from .spark.functions import register_functions
from .spark.ledger import KEY_SETTING, Ledger, check_key
from .spark.merge import merge_record
from .ring_buffer import RingBuffer
from .recovery import BROKEN_KEY, broken_mark, describe
from ..sql.dialect import DIALECT
from ..settings import DEFAULT_SETTINGS, parse_duration_ms
from splitstream.catalog.storage.database import Transaction
from ..context import ExecContext, SessionInfo
import sqlglot
from ..sql.planner import Planner


log = logging.getLogger("splitstream.streams")

PARALLEL_MIN_ROWS = 8192      # batches this large feed the views on two threads
_view_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cv-insert")


def feed_views(views: list[ContinuousView], oid: int, batch: Batch, ctx) -> None:
    """Hand one batch to every view on the stream.

    Views are independent (each has its own lock and state), and most of a
    view's insert work runs without the GIL (compiled kernels via ctypes,
    large numpy operations), so with several views a large batch is split
    over two threads: the views, heaviest first by their measured cost, are
    dealt to the lighter side.  A helper that gets no CPU costs nothing: if
    it has not started by the time this thread is done, its share runs here."""
    if len(views) < 2 or batch.n < PARALLEL_MIN_ROWS:
        for cv in views:
            cv.insert(oid, batch, ctx)
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
            cv.insert(oid, batch, c)

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


class StreamRuntime:
    def __init__(self, rel) -> None:
        self.rel = rel
        self.lock = threading.Lock()
        self.ring: RingBuffer | None = None
        self.listeners = 0
        self.accepted = 0
        self.recent: list[tuple[float, int]] = []

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
        with self.lock:
            self.listeners += 1
        try:
            pos = ring.write_tid
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
            with self.lock:
                self.listeners -= 1
        if skipped:
            ctx.notices.append(Notice(f'stream "{self.rel.name}": {skipped} tuples were overwritten before the scan could read them',
                                      "01000", "NOTICE"))
        return Batch.concat(parts, [c.type_oid for c in self.rel.live_columns])

    def rate(self) -> float:
        now = time.monotonic()
        self.recent = [(t, n) for t, n in self.recent if now - t < 10]
        if not self.recent:
            return 0.0
        span = max(now - self.recent[0][0], 1.0)
        return sum(n for _, n in self.recent) / span



def _hand_on(rt, views: list, rel, batch: Batch, ctx) -> None:
    """A logged batch goes to the ring (only while a scan listens) and the views."""
    if rt.listeners > 0 and rt.ring is not None:
        rt.ring.append([c.data for c in batch.cols], [c.nulls for c in batch.cols])
    feed_views(views, rel.oid, batch, ctx)


def _count(rt, n: int) -> None:
    """Rows accepted, and the recent ones for the rate in splitstream.streams."""
    rt.accepted += n
    rt.recent.append((time.monotonic(), n))
    if len(rt.recent) > 1000:
        rt.recent = rt.recent[-500:]

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
        #: views whose saved state matched none of their pipelines: oid ->
        #: (why, the saved state, kept by later checkpoints: never started over)
        self.broken: dict[int, tuple[str, dict]] = {}
        self.lock = threading.RLock()
        self._replaying = False
        # Spark exactly-once: batch keys already applied, in WAL order (spark_ledger.py)
        self.spark_ledger = Ledger()
        self.spark_pipelines: dict = {}

    # ------------------------------------------------------------ storage hooks
    def install_hooks(self) -> None:
        """Attach to storage as its :class:`catalog.hooks.StreamStorageHooks`."""
        self.engine.db.attach(self)
        register_functions()

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
        self._ensure_views(state)
        cols = batch.columns
        data = Batch([Col(d, m, c.type_oid) for (d, m), c in zip(cols, rel.live_columns)], len(cols[0][0]) if cols else 0)
        ctx = self.replay_ctx(state)
        # view by view, so that one view failing on the record breaks that view
        # alone: recovery never refuses to start because of one view
        for cv in self._views_on(batch.oid):
            try:
                cv.insert(batch.oid, data, ctx)
            except Exception as e:
                self._break(cv.rel, f"replaying the WAL record {where} failed", e)

    def replay_partial(self, merge: PartialMerge, state, where: str = "") -> None:
        if state.rels.get(merge.oid) is None:
            return
        if not merge.batch_key or self.spark_ledger.admit(merge.batch_key):
            self._ensure_views(state)
            cv = self.views.get(merge.view_oid)
            try:
                merge_record(self, merge)
            except Exception as e:
                if cv is None:
                    raise
                self._break(cv.rel, f"replaying the WAL record {where} failed", e)

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
            if rel.kind == "v" and rel.continuous and rel.oid not in self.views and rel.oid not in self.broken:
                self._instantiate(rel, state)

    def _instantiate(self, rel, state) -> None:
        # kept (not popped) until recovery ends: a view broken while the WAL
        # replays keeps the state it was restored with
        saved = self.pending_states.get(rel.oid)
        if saved is not None and BROKEN_KEY in saved:
            # broken before a checkpoint: broken still, until dropped
            self.broken[rel.oid] = (saved[BROKEN_KEY], saved)
            return
        try:
            ctx = self.replay_ctx(state)
            pl = Planner(self.engine, state)
            plan = pl.plan_query(sqlglot.parse_one(rel.sql, read=DIALECT))
            cv = ContinuousView(self, rel, plan, ctx)
            if saved is not None:
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
        return {"views": views, "ledger": list(self.spark_ledger.keys)}

    def restore_streams(self, snap: dict) -> None:
        for k in snap["ledger"]:
            self.spark_ledger.add(k)
        self.pending_states = dict(snap["views"])

    def recover(self) -> None:
        self._ensure_views(self.engine.db.committed)
        self.pending_states.clear()     # every view has taken (or kept, if broken) its saved state

    # ------------------------------------------------------------ DDL
    def runtime(self, rel) -> StreamRuntime:
        rt = self.runtimes.get(rel.oid)
        if rt is None or rt.rel is not rel and [c.name for c in rt.rel.live_columns] != [c.name for c in rel.live_columns]:
            rt = StreamRuntime(rel)
            self.runtimes[rel.oid] = rt
        return rt

    def scan_op(self, rel, alias, planner):
        return StreamScanOp(rel, alias, self.runtime(rel))

    def view_read_op(self, rel, alias, planner):
        out = [operators.OutCol(c.name, c.type_oid, c.typmod, rel.oid, i + 1) for i, c in enumerate(rel.live_columns)]

        def fetch(ctx, _oid=rel.oid):
            cv = self.views.get(_oid)
            if cv is None:
                self._ensure_views(ctx.state)
                cv = self.views.get(_oid)
            if cv is None:
                why = self.broken.get(_oid, ("",))[0]
                raise PgError("55000", f'continuous view "{rel.name}" is not available' + (f": {why}" if why else ""),
                              hint=f'Drop it (DROP VIEW {rel.name}) and create it again.' if why else None)
            return cv.read(ctx)

        op = operators.BatchSource(f"Continuous View Scan on {rel.name}", out, fetch)
        op.continuous_view = rel
        return op

    def create_view(self, session, ctx, rel, query) -> None:
        pl = Planner(self.engine, ctx.state, session=session.info)
        plan = pl.plan_query(query)
        cv = ContinuousView(self, rel, plan, ctx)   # validates (raises 0A000) and runs static pipelines
        self._forget_rolled_back()
        self.created[rel.oid] = (ctx.txn, cv)   # guards its static tables within the transaction already
        ctx.txn.after_commit.append(lambda: self._register(cv))

    def _register(self, cv: ContinuousView) -> None:
        """After the commit of its CREATE VIEW (unless a savepoint rolled it back)."""
        if visible(self.engine.db.committed, cv):
            self.views[cv.rel.oid] = cv
        if self.created.get(cv.rel.oid, (None, None))[1] is cv:
            del self.created[cv.rel.oid]

    def _forget_rolled_back(self) -> None:
        """Views of transactions that ended without committing them."""
        committed = self.engine.db.committed
        for oid, (txn, cv) in list(self.created.items()):
            if not txn.writing and not visible(committed, cv):
                self.created.pop(oid, None)

    def drop_view(self, oid) -> None:
        self.views.pop(oid, None)
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

    def _views_on(self, stream_oid) -> list[ContinuousView]:
        return [cv for cv in list(self.views.values()) if stream_oid in cv.pipelines]

    # ------------------------------------------------------------ ingest
    def deliver_logged(self, ctx, rel, head: bytes, body: bytes, n: int, load_cols) -> None:
        """Log a batch whose WAL record a COPY encoded ahead, and hand it to the
        ring (if a scan listens) and the views.  ``load_cols()`` decodes the
        columns only when someone consumes them: a stream without views or
        listeners just logs.  No fsync: the COPY syncs once at the end."""
        rt = self.runtime(rel)
        views = self._views_on(rel.oid)
        batch = None
        if views or (rt.listeners > 0 and rt.ring is not None):
            cols = load_cols()
            batch = Batch([Col(d, m, c.type_oid) for (d, m), c in zip(cols, rel.live_columns)], n)

        def apply(seq):
            if batch is not None:
                _hand_on(rt, views, rel, batch, ctx)

        self.engine.db.ingest_stream_record(head, body, n, apply, sync=batch is not None and ctx.session.sync_commit)
        _count(rt, n)

    def insert(self, ctx, rel, batch: Batch, sync: bool | None = None) -> int:
        """Log and deliver one batch.  ``sync=False`` leaves the WAL fsync to the
        caller, which must sync before it acknowledges (a COPY syncs once for
        all its slabs, not once per slab)."""

        if batch.n == 0:
            return 0
        # a Spark batch key (SET splitstream.batch_key) is used by this one insert
        key = ctx.session.settings.pop(KEY_SETTING, None) if ctx.session is not None else None
        if key:
            check_key(key)
            if key in self.spark_ledger:
                ctx.notices.append(Notice(f'batch "{key}" was already applied to stream "{rel.name}"; skipped',
                                          "00000", "NOTICE"))
                return 0
        self.check_rows(ctx.engine_session, ctx, rel, batch)
        rt = self.runtime(rel)
        views = self._views_on(rel.oid)
        cols = [(c.data, c.null_mask()) for c in batch.cols]
        if sync is None:
            sync = ctx.session.sync_commit

        def apply(seq):
            # under the checkpoint lock, in WAL order
            if not key or self.spark_ledger.admit(key):
                _hand_on(rt, views, rel, batch, ctx)

        # the key goes into the same WAL record as the rows
        self.engine.db.ingest_stream(rel.oid, cols, apply, sync, batch_key=key or "")
        _count(rt, batch.n)
        return batch.n
