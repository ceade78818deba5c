"""The lean path of a single-row INSERT (issue 19, scope 2).

An autocommitted Bind/Execute/Sync of a prepared ``INSERT ... VALUES ($1,
...)`` into a stream or a logged table used to cost ~600 us of server CPU:
a worker-thread hop, an implicit transaction, a batch built from one row,
an ExecContext, a staging pass through every view and a WAL record of its
own.  Here the server decodes the Bind's parameters on its event-loop
thread and hands them to :meth:`LeanIngest.submit` (no thread hop per
statement); the statement's plan is made once and shared by every session
that prepared the same text (:class:`LeanTarget`).  Requests queue per
target; one leader at a time takes them all and builds their rows column
by column (``insert_batching.PendingInserts``), so a group of N inserts
costs one build, one constraint check, one staging pass, one WAL record,
one fsync and one delivery.  Each request is answered (``done``) once its
group is durable (fsync on) and applied.

Every guarantee of the ordinary path holds: privileges are checked when
the request is taken (on the submitting session's state); defaults, NOT
NULL, casts and view staging run on the group; a group that fails before
anything is logged runs its members one by one, so a bad row fails only
its own statement with its own SQLSTATE; members whose sessions set
different ``pipelinedb.stream_targets`` are grouped apart (one WAL record
feeds one set of views, ``stream/targets.py``); a target whose relation was
altered or dropped since it was planned answers ``retry`` and the server
runs the messages through the ordinary path, which plans again or raises
what PostgreSQL raises.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from splitstream.catalog.datatypes.vector import Batch
from splitstream.catalog.storage.database import Transaction
from splitstream.protocol.errors import PgError

from .api import LeanOutcome
from .context import ExecContext
from .commands.dml import insert_batch
from .execution import clock
from .insert_batching import PendingInserts
from .stream import targets as stream_targets

log = logging.getLogger("splitstream.lean")

#: a group stops growing at this many statements (later ones lead the next)
GROUP_STATEMENTS = 4096
#: groups smaller than this pass the lead on once logged (pipelined: the next
#: group stages and writes during this one's fsync); larger ones keep it until
#: answered, so that what queues meanwhile makes the next group larger.
#: Measured under load 9 (pgbench, stream with three views): pipelining
#: doubled throughput at 8 clients but cost ~50% more CPU per statement at
#: 128, where the CPU is the cap
PIPELINE_BELOW = 32
#: shared targets kept before the registry starts over
MAX_TARGETS = 1000

Done = Callable[[LeanOutcome], None]


@dataclasses.dataclass(eq=False)
class LeanRequest:
    """One statement's parameters, and where its outcome goes."""

    session: Any                  # the engine Session that sent it
    params: list[Any]
    sync: bool                    # synchronous_commit of that session
    done: Done
    outcome: LeanOutcome | None = None


class LeanTarget:
    """One planned INSERT shared by the sessions that prepared the same text
    under the same settings, and the queue of its requests."""

    def __init__(self, stmt: Any, param_oids: list[int], ddl_version: int) -> None:
        self.stmt = stmt
        self.rel: Any = stmt.rel
        self.param_oids = list(param_oids)
        self.ddl_version = ddl_version
        self.tag = f"INSERT 0 {len(stmt.rows)}"
        self.lock = threading.Lock()
        self.queue: list[LeanRequest] = []
        self.leading = False
        #: the newest group's turn to answer (groups answer in the order they were taken)
        self.last_turn: _Turn | None = None
        self.groups = 0               # observability: groups led and statements in them
        self.statements = 0


class LeanIngest:
    """The engine's lean-path targets and the threads that lead their groups."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._targets: dict[tuple, LeanTarget] = {}
        self._targets_version = -1
        self._lock = threading.Lock()
        # a leader blocks through its fsync: enough threads that every target can lead
        # and the next group of each can stage meanwhile
        self._pool = ThreadPoolExecutor(max_workers=64, thread_name_prefix="splitstream-lean")

    # ------------------------------------------------------------ targets
    def target(self, prepared: Any, search_path: str | None) -> LeanTarget | None:
        """The shared target of ``prepared`` (planned against the committed
        catalog), or None: not a lean statement, or planned before a
        catalog change (the ordinary path plans again)."""
        stmt = prepared.handle
        if not prepared.lean:
            return None
        state = self.engine.db.committed
        version = state.ddl_version
        if state.rels.get(stmt.rel.oid) is not stmt.rel:
            return None
        key = (prepared.sql, tuple(prepared.param_oids), prepared.planned_under, search_path, stmt.rel.oid)
        with self._lock:
            if self._targets_version != version or len(self._targets) > MAX_TARGETS:
                self._targets = {}
                self._targets_version = version
            t = self._targets.get(key)
            if t is None or t.rel is not stmt.rel:
                t = self._targets[key] = LeanTarget(stmt, prepared.param_oids, version)
        return t

    # ------------------------------------------------------------ queueing
    def submit(self, target: LeanTarget, req: LeanRequest) -> bool:
        """Queue ``req``; a leader is started unless one is running.  False:
        the engine is closing (nothing was queued)."""
        with target.lock:
            target.queue.append(req)
            if target.leading:
                return True
            target.leading = True
        try:
            self._pool.submit(self._lead, target)
        except RuntimeError:            # shut down
            with target.lock:
                target.queue.remove(req)
                target.leading = False
            return False
        return True

    def _lead(self, target: LeanTarget) -> None:
        """Run the queued requests as groups until none is left.  Into a
        stream, the lead passes on once a group's WAL record is *written*
        (``_release``): the next group is built, staged and written while
        this one waits for its fsync, which then covers both if it is late
        enough (the WAL's group commit).  Answers go out in group order, each
        once its group is durable and applied.  Into a table the writer lock
        is held through the fsync anyway: the same thread goes on leading
        (no wake-up between groups)."""
        while True:
            with target.lock:
                group = target.queue[:GROUP_STATEMENTS]
                del target.queue[:len(group)]
                if not group:
                    target.leading = False
                    return
                target.groups += 1
                target.statements += len(group)
                turn = _Turn(target.last_turn)
                target.last_turn = turn
            if log.isEnabledFor(logging.DEBUG):
                log.debug("lean insert into %s: a group of %d statements", target.rel.name, len(group))
            if self._group(target, group, turn):
                return                   # a new leader took over

    def _group(self, target: LeanTarget, group: list[LeanRequest], turn: "_Turn") -> bool:
        """Run and answer one group; whether the lead was passed on meanwhile
        (a group smaller than :data:`PIPELINE_BELOW`, once logged)."""
        pipelined = len(group) < PIPELINE_BELOW
        released = [not pipelined]          # a large group: this thread leads the next

        def release() -> None:
            if not released[0]:
                released[0] = True
                self._release(target)
        try:
            self._run(target, group, release)
        except BaseException:           # a bug: every member fails with an internal error
            log.exception("lean insert group failed")
            err = PgError("XX000", "internal error", hint="See the server log for details.")
            for r in group:
                if r.outcome is None:
                    r.outcome = LeanOutcome(error=err)
        turn.wait_previous()
        try:
            for r in group:
                try:
                    r.done(r.outcome if r.outcome is not None else LeanOutcome(retry=True))
                except Exception:
                    log.exception("answering a lean insert failed")
        finally:
            turn.finish()
        return pipelined and released[0]

    def _release(self, target: LeanTarget) -> None:
        """A group is logged: a new leader takes what queued meanwhile."""
        with target.lock:
            if not target.queue:
                target.leading = False
                return
        try:
            self._pool.submit(self._lead, target)
        except RuntimeError:            # shutting down: the queued requests are answered as retries
            with target.lock:
                queued, target.queue = target.queue, []
                target.leading = False
            for r in queued:
                r.done(LeanOutcome(retry=True))

    # ------------------------------------------------------------ groups
    def _run(self, target: LeanTarget, group: list[LeanRequest], release: Callable[[], None]) -> None:
        """Insert ``group``; on a failure before anything was logged, each
        member runs alone and gets its own outcome.  ``release()`` once the
        group's WAL record is written (a stream's)."""
        if not _current(self.engine.db.committed, target):
            for r in group:
                r.outcome = LeanOutcome(retry=True)     # altered or dropped: the ordinary path decides
            return
        if target.rel.kind == "f":
            parts = _by_stream_targets(group)
            if len(parts) > 1:              # the lead passes on once the last part is logged
                for i, part in enumerate(parts):
                    self._run(target, part, release if i == len(parts) - 1 else _no_release)
                return
        try:
            if self._stream_group(target, group, release) if target.rel.kind == "f" \
                    else self._table_group(target, group):
                for r in group:
                    r.outcome = LeanOutcome(tag=target.tag)
            return                      # (False: the outcomes are set: retry)
        except PgError as e:
            if len(group) == 1:
                group[0].outcome = LeanOutcome(error=e)
                return
        for r in group:
            self._run(target, [r], release)

    def _context(self, req: LeanRequest, txn: Transaction) -> ExecContext:
        s = req.session
        ctx = ExecContext(db=s.db, txn=txn, session=s.info, engine=self.engine, now=clock.now())
        ctx.engine_session = s
        return ctx

    def _rows(self, target: LeanTarget, group: list[LeanRequest], ctx: ExecContext) -> Batch:
        """The group's full-width rows, built column-wise (defaults, casts)."""
        p = PendingInserts(target.stmt, target.param_oids)
        p.executes = [r.params for r in group]
        return p.rows(ctx.engine_session, ctx)

    def _stream_group(self, target: LeanTarget, group: list[LeanRequest], release: Callable[[], None]) -> bool:
        ctx = self._context(group[0], Transaction(self.engine.db, implicit=True))
        rows = self._rows(target, group, ctx)
        self.engine.streams.insert_now(ctx, target.rel, rows, any(r.sync for r in group), logged=release)
        return True

    def _table_group(self, target: LeanTarget, group: list[LeanRequest]) -> bool:
        """One transaction for the group: the writer lock is held through the
        commit's fsync, while the next group queues."""
        txn = Transaction(self.engine.db, implicit=True)
        ctx = self._context(group[0], txn)
        try:
            txn.for_write(ctx.check_cancel)
            if not _current(txn.state, target):
                txn.rollback()
                for r in group:
                    r.outcome = LeanOutcome(retry=True)
                return False
            insert_batch(ctx.engine_session, ctx, target.rel, self._rows(target, group, ctx))
        except BaseException:
            txn.rollback()
            raise
        txn.commit(sync=any(r.sync for r in group))
        return True

    def close(self) -> None:
        self._pool.shutdown(wait=False)


class _Turn:
    """A group's place in the order of answers: it answers once the group
    taken before it has answered."""

    __slots__ = ("previous", "answered")

    def __init__(self, previous: "_Turn | None") -> None:
        self.previous = previous
        self.answered = threading.Event()

    def wait_previous(self) -> None:
        if self.previous is not None:
            self.previous.answered.wait()
            self.previous = None            # no chain of every group ever led

    def finish(self) -> None:
        self.answered.set()
def _no_release() -> None:
    """The release of a group's part that is not its last: the lead stays."""


def _by_stream_targets(group: list[LeanRequest]) -> list[list[LeanRequest]]:
    """The group split by the value of pipelinedb.stream_targets of each
    member's session (read as each runs: a session waits idle for its answer,
    so the value cannot change meanwhile), in order of first appearance."""
    parts: dict[str, list[LeanRequest]] = {}
    for r in group:
        parts.setdefault(stream_targets.requested(r.session.info.settings), []).append(r)
    return list(parts.values())


def _current(state: Any, target: LeanTarget) -> bool:
    """Whether ``state`` holds the relation ``target`` was planned against
    (not altered or dropped since)."""
    return state.rels.get(target.rel.oid) is target.rel
