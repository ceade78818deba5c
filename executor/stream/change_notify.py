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

from splitstream.catalog.storage.notify import Notifier, check_notification

from .change_feed import Feeds
from .continuous import ContinuousView

OPTION = "notify"


def parse(channel: str, view: str = "v") -> str:
    """The channel, checked as ``pg_notify`` checks one (22023 if empty or too long)."""
    check_notification(channel, view)
    return channel


def channel_of(cv: ContinuousView) -> str | None:
    return dict(cv.rel.options).get(OPTION)


#: SUBSCRIBE's per-batch change queues (``change_feed.py``), refreshed by every applied batch
FEEDS = Feeds()


def fire(notifier: Notifier, views: list[ContinuousView], applied, sender: int) -> None:
    """Notify the channels of the views in ``applied`` (oids that took the batch)."""
    took = [cv.rel.oid for cv in views if cv.rel.oid in applied]
    FEEDS.publish(took)
    for cv in views:
        chan = channel_of(cv)
        if chan is not None and cv.rel.oid in applied:
            notifier.publish(sender, [(chan, cv.rel.name)])
