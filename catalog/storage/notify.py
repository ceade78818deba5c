"""LISTEN / NOTIFY: who listens on which channel, and delivery at commit.

PostgreSQL's async.c keeps a shared queue that each listening backend reads
when it is idle.  One process holds every session here, so the queue is a
call: a committed transaction hands its notifications to :meth:`Notifier.publish`,
which calls the sink of every session listening on the channel (the sender
included, as in PostgreSQL).  A sink must not block: the server's sink only
queues the notification for its event loop, which writes it when the
session is idle (see ``server/connection.py``).

A transaction's LISTEN, UNLISTEN and NOTIFY are kept in
:class:`PendingAsync` until it commits (a rollback drops them, a savepoint
rolled back to drops those made after it), as PostgreSQL does.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

#: A sink: (sender pid, channel, payload).
Sink = Callable[[int, str, str], None]
#: PostgreSQL's NAMEDATALEN and NOTIFY_PAYLOAD_MAX_LENGTH (BLCKSZ - NAMEDATALEN - 128)
NAMEDATALEN = 64
PAYLOAD_MAX = 8000


def check_notification(channel: str | None, payload: str | None) -> None:
    """PostgreSQL's Async_Notify checks, with its wording."""
    if not channel:
        raise PgError(INVALID_PARAMETER_VALUE, "channel name cannot be empty")
    if len(channel.encode()) >= NAMEDATALEN:
        raise PgError(INVALID_PARAMETER_VALUE, "channel name too long")
    if payload is not None and len(payload.encode()) >= PAYLOAD_MAX:
        raise PgError(INVALID_PARAMETER_VALUE, "payload string too long")


@dataclass
class _Listener:
    sink: Sink
    channels: list[str] = field(default_factory=list)     # in LISTEN order, as pg_listening_channels shows


class Notifier:
    """The channels each session (by backend pid) listens on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: dict[int, _Listener] = {}

    def listen(self, pid: int, channel: str, sink: Sink) -> None:
        with self._lock:
            lst = self._listeners.setdefault(pid, _Listener(sink))
            lst.sink = sink
            if channel not in lst.channels:
                lst.channels.append(channel)

    def unlisten(self, pid: int, channel: str | None) -> None:
        """Stop listening on ``channel`` (None: on every channel, UNLISTEN *)."""
        with self._lock:
            lst = self._listeners.get(pid)
            if lst is None:
                return
            if channel is not None and channel in lst.channels:
                lst.channels.remove(channel)
            if channel is None or not lst.channels:
                del self._listeners[pid]

    def channels(self, pid: int) -> list[str]:
        with self._lock:
            lst = self._listeners.get(pid)
            return list(lst.channels) if lst is not None else []

    def publish(self, sender: int, items: list[tuple[str, str]]) -> None:
        """Deliver a committed transaction's notifications, in the order it sent them."""
        with self._lock:
            targets = [(lst.sink, set(lst.channels)) for lst in self._listeners.values()]
        for channel, payload in items:
            for sink, chans in targets:
                if channel in chans:
                    sink(sender, channel, payload)


class PendingAsync:
    """One transaction's LISTEN / UNLISTEN / NOTIFY, applied at its commit."""

    def __init__(self, notifier: Notifier, pid: int, sink: Sink | None) -> None:
        self.notifier, self.pid, self.sink = notifier, pid, sink
        #: ("listen" | "unlisten", channel or None) in statement order
        self.actions: list[tuple[str, str | None]] = []
        #: (channel, payload), duplicates folded as PostgreSQL does
        self.notifies: list[tuple[str, str]] = []
        self._seen: set[tuple[str, str]] = set()

    def mark(self) -> tuple[int, int]:
        """Where a savepoint starts (see :meth:`rollback_to`)."""
        return len(self.actions), len(self.notifies)

    def rollback_to(self, mark: tuple[int, int]) -> None:
        del self.actions[mark[0]:]
        del self.notifies[mark[1]:]
        self._seen = set(self.notifies)

    def notify(self, channel: str | None, payload: str | None) -> None:
        check_notification(channel, payload)
        assert channel is not None
        key = (channel, payload or "")
        if key not in self._seen:
            self._seen.add(key)
            self.notifies.append(key)

    def commit(self) -> None:
        """LISTEN/UNLISTEN take effect first, so a session that listens and
        notifies in one transaction hears itself (PostgreSQL's PreCommit_Notify order)."""
        for kind, channel in self.actions:
            if kind == "listen" and channel is not None and self.sink is not None:
                self.notifier.listen(self.pid, channel, self.sink)
            elif kind == "unlisten":
                self.notifier.unlisten(self.pid, channel)
        if self.notifies:
            self.notifier.publish(self.pid, self.notifies)
