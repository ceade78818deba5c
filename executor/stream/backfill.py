"""Backfill: ``CREATE VIEW ... WITH (backfill = true)`` over a stream first
runs the new view over the rows the stream's ring buffer still holds, then
goes on with live input, each row counted exactly once (issue 17, scope 8).

Why the seam is exact.  Every stream batch is numbered (``stream_seq``) and
logged under the checkpoint lock; the CREATE's commit is logged under the
same lock when a backfill is asked for (``Transaction.stream_cut``), so
``S`` = the last batch number logged before the view exists is exact.  A
batch reaches the ring and the views in one delivery of the cut
(``manager._publish``), and the ring remembers which batch numbers its rows
came from (:class:`Published`).  The view is registered under the cut held
exclusively, so each batch was delivered either wholly before (it is in the
ring: numbers <= S are the backfill, numbers > S were logged after the
CREATE and are the view's live input it has not seen yet) or wholly after;
then a batch staged before the view existed (without it) is staged into it
at delivery (:func:`takes_late`).  WAL replay feeds the view exactly the
batches logged after its CREATE, as live did.

Why a checkpoint: the backfilled rows were logged before the view existed,
so replay cannot give them to it.  The CREATE takes a checkpoint once the
backfill is in, so the state is saved; a crash in between leaves the view
broken on restart (its reads fail, naming why), never silently short.

What the ring holds: the last ``capacity`` rows of the stream (its
``OPTIONS (capacity 'n')``) inserted since the server started; the ring is
not durable, so after a restart it starts empty.
"""
from __future__ import annotations

import collections

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col

OPTION = "backfill"


def requested(rel) -> bool:
    return dict(rel.options).get(OPTION, "false") == "true"


class Published:
    """The batch numbers of the ring's rows: (seq, first tid, end tid) per
    delivered batch, forgotten once the ring has overwritten them."""

    def __init__(self) -> None:
        self.entries: collections.deque[tuple[int, int, int]] = collections.deque()

    def add(self, seq: int, first: int, end: int, oldest_tid: int) -> None:
        self.entries.append((seq, first, end))
        while self.entries and self.entries[0][2] <= oldest_tid:
            self.entries.popleft()


def ring_rows(rt, wanted) -> tuple[Batch | None, int]:
    """The rows the ring still holds of the batches whose number ``wanted(seq)``
    accepts, as one batch in ring order, and how many of them were already
    overwritten.  Called with deliveries held off (the cut, exclusively)."""
    ring, published = rt.ring, rt.published
    spans = [(first, end) for seq, first, end in published.entries if wanted(seq)]
    if ring is None or not spans:
        return None, 0
    start = min(f for f, _ in spans)
    r = ring.scan(start)
    tids = np.arange(r.first_tid, r.end_tid, dtype=np.int64)
    keep = np.zeros(len(tids), dtype=bool)
    for first, end in spans:
        keep |= (tids >= first) & (tids < end)
    lost = sum(end - first for first, end in spans) - int(keep.sum())
    cols = [Col(d[keep], None if m is None else m[keep], c.type_oid)
            for d, m, c in zip(r.columns, r.nulls, rt.rel.live_columns)]
    return Batch(cols, int(keep.sum())), lost


def takes_late(cv, seq: int) -> bool:
    """A batch delivered after ``cv`` was registered but staged before
    (without it): does the view take it?  Those logged after its CREATE
    (replay gives them to it) and, backfilling, the ones logged before."""
    boundary = cv.stream_boundary
    return boundary is not None and (seq > boundary or requested(cv.rel))
