"""One cut of the input for statements that read several continuous views.

A logged batch reaches the views of its stream one after the other.  A
statement reading one view sees each batch whole (a view applies a batch
under its own lock), but one reading two views could see a batch in one and
not yet in the other.  Delivering a batch to its views holds the cut
*shared*; a statement that reads several views (or views over views) holds
it *exclusively* while it brings them all up to date, so it sees each batch
in all of them or in none.  Deliveries never wait on a view's lock (they
enqueue instead, Algorithm 4.3), so the exclusive holder only waits for
deliveries already under way.

Each delivery is numbered (its epoch: the stream sequence number the WAL
record carries); :attr:`CutLock.epoch` is the last epoch whose delivery
completed, and a statement that takes a cut pins it (``ctx.read_epoch``).
"""
from __future__ import annotations

import contextlib
import threading
from typing import Iterator


class CutLock:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._sharers = 0
        self._exclusive = False
        self._waiting = 0          # exclusive requests queued: new deliveries wait behind them
        self.epoch = 0

    @contextlib.contextmanager
    def delivering(self, epoch: int) -> Iterator[None]:
        with self._cond:
            while self._exclusive or self._waiting:
                self._cond.wait()
            self._sharers += 1
        try:
            yield
        finally:
            with self._cond:
                self._sharers -= 1
                if epoch > self.epoch:
                    self.epoch = epoch
                if not self._sharers:
                    self._cond.notify_all()

    @contextlib.contextmanager
    def cut(self) -> Iterator[int]:
        """Hold off deliveries; yields the epoch every earlier delivery reached."""
        with self._cond:
            self._waiting += 1
            try:
                while self._exclusive or self._sharers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._exclusive = True
        try:
            yield self.epoch
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
