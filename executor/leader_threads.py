"""Threads that lead lean-insert groups, woken with one lock release.

``ThreadPoolExecutor.submit`` costs a Future, a work item, a queue put (a
condition's lock and notify) and a semaphore probe per call, all under the
GIL, and the lean path submits once per group from the server's event-loop
thread, the thread every connection waits on (issue 19: at 8 clients the
submits were ~5% of the GIL's time).  Here each idle thread sleeps on a lock
of its own; a hand-off is a list pop and that lock's release (one futex
wake).  Past ``limit`` busy threads, work waits in a backlog that finishing
threads take before they go idle (as the pool's queue did).
"""
from __future__ import annotations

import collections
import logging
import threading
from typing import Any, Callable

log = logging.getLogger("splitstream.lean")

Work = tuple[Callable[[Any], None], Any]


class _Slot:
    """One thread's mailbox: the work it is handed and the lock it sleeps on."""

    __slots__ = ("gate", "work")

    def __init__(self) -> None:
        self.gate = threading.Lock()
        self.gate.acquire()                 # held: the thread sleeps until a release
        self.work: Work | None = None


class LeaderThreads:
    def __init__(self, limit: int, name: str) -> None:
        self._limit = limit
        self._name = name
        self._lock = threading.Lock()
        self._idle: list[_Slot] = []
        self._backlog: collections.deque[Work] = collections.deque()
        self._threads = 0
        self._closed = False

    def submit(self, fn: Callable[[Any], None], arg: Any) -> None:
        """Run ``fn(arg)`` on an idle thread (a new one below ``limit``, else
        the next to finish).  RuntimeError once closed, as the pool raised."""
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot schedule new work after shutdown")
            if self._idle:
                slot = self._idle.pop()
            elif self._threads < self._limit:
                self._threads += 1
                slot = _Slot()
                threading.Thread(target=self._serve, args=(slot,), daemon=True,
                                 name=f"{self._name}_{self._threads}").start()
            else:
                self._backlog.append((fn, arg))
                return
        slot.work = (fn, arg)
        slot.gate.release()

    def _serve(self, slot: _Slot) -> None:
        while True:
            slot.gate.acquire()
            work, slot.work = slot.work, None
            if work is None:
                return                       # closed while idle
            while work is not None:
                fn, arg = work
                try:
                    fn(arg)
                except BaseException:  # noqa: BLE001 - a leader's bug must not kill the thread
                    log.exception("a lean-insert leader failed")
                with self._lock:             # the backlog is run even after close (its requests wait for answers)
                    work = self._backlog.popleft() if self._backlog else None
                    if work is None:
                        if self._closed:
                            return
                        self._idle.append(slot)

    def close(self) -> None:
        """No new work; idle threads end (busy ones after their work)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for slot in idle:
            slot.gate.release()              # work None: the thread returns
