"""Group commit for small stream inserts (issue 19).

Most rows reach a stream one at a time, from many sessions.  Run alone,
each such INSERT pays a whole batch's fixed costs: a pass through every
view, a WAL record, a delivery and an fsync wait.  Here the small inserts
that arrive while a group is being staged and logged queue up; the next
leader takes them all as one batch: one staging pass per view, one WAL
record, one fsync and one delivery serve every statement in it, and each
is acknowledged once the batch is durable and applied, as before.

Leadership passes on as soon as a group is *logged*, so the next group is
staged and written while the previous one waits for its fsync (the WAL's
own group commit then shares the fsyncs too).  Under light load a lone
insert leads at once: its latency stays one fsync.

Errors stay per statement: if the combined batch fails while staging (a
bad row in one of them), no view changed and nothing was logged, so every
member runs again on its own and only the bad one fails.
"""
from __future__ import annotations

import dataclasses
import threading
from typing import Any, Callable

from splitstream.catalog.datatypes.vector import Batch

#: inserts of at most this many rows are combined; larger ones are batches already
SMALL_ROWS = 64
#: a group stops growing at this many rows (later arrivals lead the next one)
GROUP_ROWS = 4096


@dataclasses.dataclass(eq=False)
class Pending:
    """One statement's rows, waiting to be combined."""

    rel: Any
    batch: Batch
    ctx: Any
    sync: bool
    alone: bool = False                    # run again by itself (the group failed to stage)
    advance: Any = None                    # what it does to the stream's watermark (watermark.Advance)
    targets: frozenset[int] | None = None  # the views it feeds (pipelinedb.stream_targets; None: all)
    error: BaseException | None = None
    leads: bool = False                    # handed the lead of the next group
    #: set once: when the statement's group is done, or when it is to lead one
    woken: threading.Event = dataclasses.field(default_factory=threading.Event)


Lead = Callable[[list[Pending], Callable[[], None]], None]


class GroupCommit:
    """The queue of one stream's small inserts and who leads the next group.

    Every waiter sleeps on its own event, so finishing a group wakes just
    its members, and passing the lead wakes just the oldest waiter."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[Pending] = []
        self._leading = False
        self.groups = 0             # groups led, and the inserts they held (observability)
        self.combined = 0

    def submit(self, p: Pending, lead: Lead) -> None:
        """Queue ``p`` and return once its group is done: raises its error, if
        any; ``p.alone`` tells the caller to insert it on its own.
        ``lead(group, release)`` stages, logs and applies a group, and calls
        ``release()`` once it is logged so that the next group may start."""
        with self._lock:
            self._queue.append(p)
            first = not self._leading
            self._leading = True
        if not first:
            p.woken.wait()
        if first or p.leads:
            with self._lock:
                group = self._take()
            self._run(group, lead)
        if p.error is not None:
            raise p.error

    def _take(self) -> list[Pending]:
        """Under the lock: the queued inserts of the next group, oldest first."""
        group: list[Pending] = []
        rows = 0
        for q in self._queue:
            if group and rows + q.batch.n > GROUP_ROWS:
                break
            group.append(q)
            rows += q.batch.n
        del self._queue[:len(group)]
        self.groups += 1
        self.combined += len(group)
        return group

    def _pass_lead(self) -> None:
        """A group is logged (or failed): the oldest waiter leads the next."""
        with self._lock:
            if self._queue:
                nxt = self._queue[0]
                nxt.leads = True
                nxt.woken.set()
            else:
                self._leading = False

    def _run(self, group: list[Pending], lead: Lead) -> None:
        """Lead ``group``; every member learns its outcome."""
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._pass_lead()

        try:
            lead(group, release)
        except BaseException as e:         # every member's statement fails with it
            for q in group:
                if not q.alone:
                    q.error = e
        finally:
            release()
            for q in group:
                q.woken.set()
