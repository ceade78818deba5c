"""Per-batch changes of a continuous view, for SUBSCRIBE: every change once, in order.

While a view has subscribers it has a :class:`Feed`.  Each time a delivered
batch reaches the view (or a view it reads), the inserting thread, after the
batch is durable and applied and before the INSERT is acknowledged, reads the
view and hands the difference to the last read to every subscriber's queue.
The read and the diff happen under the feed's lock, so two batches delivered
at once are diffed one after the other against each other's results: each
change is queued exactly once, and queues receive them in the order the
view's results followed one another.  A subscription registers its feed
before it reads its snapshot, and every diff is taken against the result
actually read last, so a batch is either in the snapshot or in a queued
change, never in both and never in neither.

The read costs one evaluation of the view per applied batch, paid only while
someone subscribes.  Changes that do not come from a batch (a sliding
window's or a TTL's expiry, a retention drop) are seen with the next batch.
A subscriber that does not keep up holds its queued changes in memory.
"""
from __future__ import annotations

import collections
import threading
import time
from collections import Counter
from typing import Callable

#: (millisecond timestamp, [(row, diff), ...]) — one entry per change of the view
Change = tuple[int, list[tuple[tuple, int]]]


class Feed:
    """The changes of one subscription's view (``read()`` gives its rows as a
    Counter, evaluated as the subscribing session would)."""

    def __init__(self, read: Callable[[], Counter], watch: frozenset[int]) -> None:
        self.read = read
        self.watch = watch                 # the view and every view it reads
        self.lock = threading.Lock()
        self.last: Counter | None = None
        self.ts = 0
        self.queue: collections.deque[Change] = collections.deque()
        self.error: Exception | None = None      # a read that failed: ends the subscription

    def start(self) -> tuple[int, Counter]:
        """The snapshot's timestamp and the rows the first queued change starts from."""
        with self.lock:
            if self.last is None:
                self.last = self.read()
            self.ts = max(self.ts, int(time.time() * 1000))
            return self.ts, Counter(self.last)

    def refresh(self, cond: threading.Condition) -> None:
        """After a batch reached the view: queue the difference to the last read."""
        with self.lock:
            try:
                now = self.read()
            except Exception as e:  # noqa: BLE001 - the subscriber gets it; the insert stands
                with cond:
                    self.error = e
                    cond.notify_all()
                return
            if self.last is None:           # not started: the snapshot will hold it
                self.last = now
                return
            removed, added = self.last - now, now - self.last
            self.last = now
            if not removed and not added:
                return
            # increasing, so a client can tell one batch's change from the next
            # (runs ahead of the clock only while a view changes more than once a millisecond)
            self.ts = max(self.ts + 1, int(time.time() * 1000))
            rows = [(r, -n) for r, n in removed.items()] + [(r, n) for r, n in added.items()]
            with cond:
                self.queue.append((self.ts, rows))
                cond.notify_all()


class Feeds:
    """The feeds of one stream manager's subscriptions."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self._feeds: list[Feed] = []

    def attach(self, feed: Feed) -> tuple[int, Counter]:
        """Registered first, then started: a batch applied before the snapshot
        is in it, one applied after is queued (each diff is against the actual
        last result, so neither both nor none)."""
        with self.cond:
            self._feeds.append(feed)
        return feed.start()

    def detach(self, feed: Feed) -> None:
        with self.cond:
            self._feeds = [f for f in self._feeds if f is not feed]

    def publish(self, applied) -> None:
        """Every feed watching a view that took the batch refreshes (on the inserting thread)."""
        if not self._feeds:
            return
        with self.cond:
            feeds = [f for f in self._feeds if f.watch & set(applied)]
        for f in feeds:
            f.refresh(self.cond)

    def wait(self, feed: Feed, timeout: float) -> Change | None:
        """The feed's next change, or None after ``timeout``."""
        with self.cond:
            if not feed.queue:
                self.cond.wait_for(lambda: bool(feed.queue) or feed.error is not None, timeout)
            if not feed.queue and feed.error is not None:
                raise feed.error
            return feed.queue.popleft() if feed.queue else None
