"""A stream's event-time watermark (``WATERMARK FOR ts AS ts - INTERVAL 'd'``).

Why at the stream, before staging and logging: a row later than the
watermark is dropped by every consumer alike, so it is filtered out of the
batch before the views stage it and before the WAL record is written.  The
log then holds only admitted rows, and replay (which applies logged rows)
needs no late-row decision of its own; it only moves the watermark again.

The watermark is ``max(ts seen) - delay``.  A statement's rows are compared
with the watermark as it stood before the statement (rows of one statement,
all the slabs of one COPY included, never make each other late); what they
do to the watermark -- its new top and the rows counted late -- is an
:class:`Advance`, applied only once the statement's record is logged, and
logged with it (``StreamBatch.late_rows``, ``StreamCommit.late_rows``).  So
a statement that fails moves nothing, and replay restores the watermark and
the late-row count exactly as they were applied (a statement whose rows
were all late logs a record of no rows to carry its count).  NULL event
times are never late.
"""
from __future__ import annotations

import dataclasses
import threading

import numpy as np

from splitstream.catalog.datatypes.vector import Batch

#: options a stream keeps its watermark under (CREATE FOREIGN TABLE ... WATERMARK FOR)
COLUMN_OPTION = "watermark_column"
DELAY_OPTION = "watermark_delay_us"


@dataclasses.dataclass
class Advance:
    """What one statement's rows do to their stream's watermark once logged."""

    top_us: int | None = None
    late: int = 0

    def see(self, us: np.ndarray, valid: np.ndarray) -> None:
        if valid.any():
            top = int(us[valid].max())
            if self.top_us is None or top > self.top_us:
                self.top_us = top

    def join(self, other: "Advance") -> None:
        """Another statement's advance, logged in the same record (group commit)."""
        if other.top_us is not None and (self.top_us is None or other.top_us > self.top_us):
            self.top_us = other.top_us
        self.late += other.late

    def moves(self) -> bool:
        return self.top_us is not None or self.late > 0


def _micros(data: np.ndarray) -> np.ndarray:
    return data.astype("datetime64[us]").view(np.int64)


class Watermark:
    """One stream's watermark and its count of late rows."""

    def __init__(self, column: int, delay_us: int) -> None:
        self.column, self.delay_us = column, delay_us
        self.max_us: int | None = None
        self.late_rows = 0
        self.lock = threading.Lock()

    def current(self) -> int | None:
        """The watermark in microseconds since the epoch (None before any row)."""
        return None if self.max_us is None else self.max_us - self.delay_us

    def admit(self, batch: Batch, adv: Advance, keep: bool = False) -> Batch:
        """The batch without its late rows, or all of it when the stream's
        views keep late rows (``late_rows.py``); ``adv`` notes the rows'
        top and the late ones, nothing changes here (:meth:`apply` does)."""
        col = batch.cols[self.column]
        us, valid = _micros(col.data), col.valid_mask()
        with self.lock:
            wm = self.current()
        on_time = None if wm is None or keep else (us >= wm) | ~valid
        adv.see(us, valid)
        if on_time is None or on_time.all():
            return batch
        adv.late += int(batch.n - np.count_nonzero(on_time))
        return batch.filter(on_time)

    def apply(self, adv: Advance) -> None:
        """A logged statement's advance (live, or replayed from its record)."""
        with self.lock:
            if adv.top_us is not None and (self.max_us is None or adv.top_us > self.max_us):
                self.max_us = adv.top_us
            self.late_rows += adv.late

    def observed(self, data: np.ndarray, nulls: np.ndarray | None, adv: Advance | None = None) -> Advance:
        """Replay: the advance of logged (admitted) rows, into ``adv`` if given."""
        adv = adv if adv is not None else Advance()
        us = _micros(data)
        adv.see(us, np.ones(len(us), dtype=bool) if nulls is None else ~nulls)
        return adv

    def snapshot(self) -> list:
        return [self.max_us if self.max_us is not None else "", self.late_rows]

    def restore(self, saved: list) -> None:
        if saved[0] != "" and (self.max_us is None or int(saved[0]) > self.max_us):
            self.max_us = int(saved[0])
        self.late_rows = max(self.late_rows, int(saved[1]))


def declared(rel) -> tuple[int, int] | None:
    """(column index among the live columns, delay in microseconds) of a stream's watermark, or None."""
    opts = dict(rel.options or ())
    name = opts.get(COLUMN_OPTION)
    if name is None:
        return None
    for i, c in enumerate(rel.live_columns):
        if c.name == name:
            return i, int(opts.get(DELAY_OPTION, "0"))
    return None
