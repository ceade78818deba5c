"""A stream's event-time watermark (``WATERMARK FOR ts AS ts - INTERVAL 'd'``).

Why at the stream, before staging and logging: a row later than the
watermark is dropped by every consumer alike, so it is filtered out of the
batch before the views stage it and before the WAL record is written.  The
log then holds only admitted rows, and replay (which applies logged rows)
needs no late-row decision of its own; it only moves the watermark again.

The watermark is ``max(ts seen) - delay``.  A batch is compared with the
watermark as it stood before the batch (rows of one statement never make
each other late), then the watermark advances to the batch's maximum.  It
advances as rows arrive, even if their statement fails afterwards (as a
source's watermark does).  NULL event times are never late.
"""
from __future__ import annotations

import threading

import numpy as np

from splitstream.catalog.datatypes.vector import Batch

#: options a stream keeps its watermark under (CREATE FOREIGN TABLE ... WATERMARK FOR)
COLUMN_OPTION = "watermark_column"
DELAY_OPTION = "watermark_delay_us"


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

    def admit(self, batch: Batch, keep: bool = False) -> Batch:
        """The batch without its late rows (counted), or all of it when the
        stream's views keep late rows (``late_rows.py``); the watermark advanced."""
        col = batch.cols[self.column]
        us = col.data.astype("datetime64[us]").view(np.int64)
        valid = col.valid_mask()
        with self.lock:
            wm = self.current()
            on_time = None if wm is None or keep else (us >= wm) | ~valid
            self._advance(us, valid)
            if on_time is None or on_time.all():
                return batch
            self.late_rows += int(batch.n - np.count_nonzero(on_time))
        return batch.filter(on_time)

    def observe(self, data: np.ndarray, nulls: np.ndarray | None) -> None:
        """Replay: a logged (admitted) batch moves the watermark as it did live."""
        us = data.astype("datetime64[us]").view(np.int64)
        valid = np.ones(len(us), dtype=bool) if nulls is None else ~nulls
        with self.lock:
            self._advance(us, valid)

    def _advance(self, us: np.ndarray, valid: np.ndarray) -> None:
        if valid.any():
            top = int(us[valid].max())
            if self.max_us is None or top > self.max_us:
                self.max_us = top

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
