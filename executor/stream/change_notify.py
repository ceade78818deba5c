"""``CREATE VIEW v WITH (notify = 'channel') AS ...``: NOTIFY a channel when
a continuous view changes.

After each batch a stream delivers is durable (logged, fsynced with fsync
on) and applied to the view, every session listening on the channel gets one
NotificationResponse whose payload is the view's name (unqualified, as
``pg_class.relname``) and whose sender pid is the inserting session's.  One
per applied batch: an INSERT statement, a COPY, a batch of extended-protocol
Executes delivered at Sync, a Spark partial-state merge.  Replay at start-up notifies nobody (no session
listens yet).  A client then reads the view, which already holds the batch.
"""
from __future__ import annotations

import threading

from splitstream.catalog.storage.notify import Notifier, check_notification

from .continuous import ContinuousView

OPTION = "notify"


def parse(channel: str, view: str = "v") -> str:
    """The channel, checked as ``pg_notify`` checks one (22023 if empty or too long)."""
    check_notification(channel, view)
    return channel


def channel_of(cv: ContinuousView) -> str | None:
    return dict(cv.rel.options).get(OPTION)


class ViewChanges:
    """A counter per continuous view, moved when a batch is applied to it, for
    SUBSCRIBE (``commands/subscribe.py``) to wait on instead of polling."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._gen: dict[int, int] = {}

    def generation(self, oid: int) -> int:
        with self._cond:
            return self._gen.get(oid, 0)

    def bump(self, oids) -> None:
        with self._cond:
            for oid in oids:
                self._gen[oid] = self._gen.get(oid, 0) + 1
            self._cond.notify_all()

    def wait(self, oids: tuple[int, ...], seen: int, timeout: float) -> int:
        """The summed generation of ``oids`` once it differs from ``seen``, or after ``timeout``."""
        with self._cond:
            self._cond.wait_for(lambda: sum(self._gen.get(o, 0) for o in oids) != seen, timeout)
            return sum(self._gen.get(o, 0) for o in oids)


#: every applied batch moves its views' counters (one engine per process)
CHANGES = ViewChanges()


def fire(notifier: Notifier, views: list[ContinuousView], applied, sender: int) -> None:
    """Notify the channels of the views in ``applied`` (oids that took the batch)."""
    CHANGES.bump([cv.rel.oid for cv in views if cv.rel.oid in applied])
    for cv in views:
        chan = channel_of(cv)
        if chan is not None and cv.rel.oid in applied:
            notifier.publish(sender, [(chan, cv.rel.name)])
