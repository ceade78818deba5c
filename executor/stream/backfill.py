"""Backfill: ``CREATE VIEW ... WITH (backfill = true)`` over a stream first
runs the new view over the rows the stream's ring buffer still holds, then
goes on with live input, each row counted exactly once (issue 17, scope 8).

Why the seam is exact.  Every stream batch is numbered (``stream_seq``) and
logged under the checkpoint lock; the commit of a continuous view's CREATE
(and of pipelinedb.activate/deactivate/truncate_continuous_view) is logged
under the same lock (``Transaction.stream_cut``), so
``S`` = the last batch number logged before the view exists is exact.  A
batch reaches the stream's recent rows (:class:`RecentRows`, which remember
the batch number of each) and the views in one delivery of the cut
(``manager._publish``).  The view is registered under the cut held
exclusively, so each batch was delivered either wholly before (it is in the
ring: numbers <= S are the backfill, numbers > S were logged after the
CREATE and are the view's live input it has not seen yet) or wholly after;
then a batch staged before the view existed (without it) is staged into it
at delivery (:func:`takes_late`).  WAL replay feeds the view exactly the
batches logged after its CREATE, as live did; without a backfill this is
the seam of every new view.  An activity switch works the same way: each
batch follows the activity in force where it was logged
(:func:`effective_active`), however it was staged.

Why a checkpoint: the backfilled rows were logged before the view existed,
so replay cannot give them to it.  The CREATE takes a checkpoint once the
backfill is in, so the state is saved; a crash in between leaves the view
broken on restart (its reads fail, naming why), never silently short.

What the stream holds: its last ``capacity`` rows (``OPTIONS (capacity
'n')``, the size of its ring buffer) inserted since the server started, kept
by reference to the delivered batches rather than copied into the session
scans' ring (``ring_buffer.py``, filled only while a scan listens), so the
insert path pays no copy per row; they are not durable, so after a restart
none are held.  Rows an INSERT sent to chosen views (pipelinedb.stream_targets)
are held with their targets and given only to those (a view created later
is never one of them, so it does not backfill them).
"""
from __future__ import annotations

import collections

from splitstream.catalog.datatypes.vector import Batch

OPTION = "backfill"


def requested(rel) -> bool:
    return dict(rel.options).get(OPTION, "false") == "true"


class RecentRows:
    """The stream's last ``capacity`` rows, kept as the delivered batches
    themselves with the number of the batch each came from: a reference per
    batch, no copy per row on the insert path (batches are not changed once
    delivered).  Older batches are let go once ``capacity`` newer rows exist."""

    def __init__(self) -> None:
        self.entries: collections.deque[tuple[int, Batch, frozenset[int] | None]] = collections.deque()
        self.rows = 0

    def add(self, seq: int, batches: list[Batch], capacity: int, to: frozenset[int] | None = None) -> None:
        """``to``: the views the batches were sent to (None: all)."""
        for b in batches:
            if b.n:
                self.entries.append((seq, b, to))
                self.rows += b.n
        while self.entries and self.rows - self.entries[0][1].n >= capacity:
            self.rows -= self.entries.popleft()[1].n

    def select(self, wanted, capacity: int, view_oid: int | None = None) -> Batch | None:
        """The held rows (the last ``capacity``) of the batches whose number
        ``wanted(seq)`` accepts and that were sent to ``view_oid``, in
        delivery order."""
        skip = max(0, self.rows - capacity)
        parts = []
        for seq, b, to in self.entries:
            if skip >= b.n:
                skip -= b.n
                continue
            if wanted(seq) and (to is None or view_oid in to):
                parts.append(b if skip == 0 else b.slice(skip, b.n))
            skip = 0
        return Batch.concat(parts) if parts else None


def keep_last(batches: list[Batch], capacity: int) -> None:
    """Drop the oldest batches that ``capacity`` newer rows make unneeded (a
    large COPY keeps only what the stream will hold)."""
    rows = sum(b.n for b in batches)
    while batches and rows - batches[0].n >= capacity:
        rows -= batches.pop(0).n


def ring_rows(rt, wanted, view_oid: int | None = None) -> Batch | None:
    """The rows the stream still holds of the batches ``wanted(seq)`` accepts
    (and sent to ``view_oid``).  Called with deliveries held off (the cut, exclusively)."""
    return rt.held.select(wanted, rt.rel.capacity, view_oid)


def effective_active(cv, seq: int) -> bool:
    """Does batch ``seq`` reach ``cv`` as far as activity goes?  A switch
    (pipelinedb.activate/deactivate) applies to the batches logged after its
    commit, whenever they were staged; without one, the view's option."""
    if cv.switch is not None:
        txn, after = cv.switch
        boundary = txn.stream_seq_at_commit
        if boundary is not None:
            return after if seq > boundary else not after
    return dict(cv.rel.options).get("active", "true") != "false"


def takes_late(cv, seq: int) -> bool:
    """A registered view the batch was not staged into (it did not exist yet,
    or was inactive then): does it take it?  Those logged after its CREATE
    (replay gives them to it), while backfilling the ones before too, when
    it is active for that batch."""
    boundary = cv.stream_boundary
    if boundary is not None and seq <= boundary and not cv.backfilling:
        return False
    return effective_active(cv, seq)
