"""A lean thread pool for engine calls, tuned for the event-loop round trip.

``loop.run_in_executor`` with a ThreadPoolExecutor costs ~75 µs per hop
on uvloop here (concurrent.futures.Future, wrap_future chaining, thread
count bookkeeping); this pool's hop is ~30 µs: one SimpleQueue put to wake
a worker, one ``call_soon_threadsafe`` to hand the result back.  Every
statement pays this hop, so it is worth its few lines.
"""
from __future__ import annotations

import asyncio
import logging
import queue
import threading
from typing import Any, Callable, TypeVar, TypeVarTuple

log = logging.getLogger("splitstream.workers")

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")
#: One call: the caller's loop, its future, the function and its arguments.
#: Calls of every result type share the queue, hence the Any.
_Job = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Any]", Callable[..., Any], tuple[object, ...]]


def _deliver(fut: asyncio.Future[Any], value: object, error: BaseException | None) -> None:
    """Hand a call's outcome to its awaiting task (runs on the loop's thread)."""
    if fut.done():  # the awaiting task was cancelled meanwhile
        return
    if error is None:
        fut.set_result(value)
    else:
        fut.set_exception(error)


class WorkerPool:
    """Fixed set of daemon threads started lazily, up to ``max_workers``."""

    def __init__(self, max_workers: int = 32, name: str = "splitstream-worker") -> None:
        self.max_workers = max_workers
        self.name = name
        self._q: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        #: Threads waiting for (or about to wait for) an item, and items not yet
        #: picked up.  A new item gets a new thread unless an idle one is left
        #: over for it: counting idle threads alone, two items put back to back
        #: could both be promised to one thread, and if the first blocks (a
        #: transaction waiting for the writer lock) on the second (the lock
        #: holder's COMMIT), the server stalls.
        self._idle = 0
        self._queued = 0
        self._lock = threading.Lock()
        self._closed = False

    def _worker(self) -> None:
        q = self._q
        while True:
            item = q.get()
            with self._lock:
                self._idle -= 1
                self._queued -= 1
            if item is None:
                return
            loop, fut, fn, args = item
            value: object = None
            error: BaseException | None = None
            try:
                value = fn(*args)
            except BaseException as e:  # noqa: BLE001 - forwarded to the awaiting task
                error = e
            with self._lock:
                self._idle += 1
            try:
                loop.call_soon_threadsafe(_deliver, fut, value, error)
            except RuntimeError:  # loop already closed (shutdown race)
                pass

    def _put(self, item: _Job) -> None:
        with self._lock:
            spawn = self._idle <= self._queued and len(self._threads) < self.max_workers
            self._queued += 1
            if spawn:
                t = threading.Thread(target=self._worker, name=f"{self.name}-{len(self._threads)}", daemon=True)
                self._threads.append(t)
                self._idle += 1  # idle from now: the next item is not promised to it again
        self._q.put(item)
        if spawn:
            t.start()

    async def run(self, fn: Callable[[*_Ts], _T], *args: *_Ts) -> _T:
        """Run ``fn(*args)`` on a worker thread and await its result."""
        if self._closed:
            raise RuntimeError("worker pool is shut down")
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[_T] = loop.create_future()
        self._put((loop, fut, fn, args))
        return await fut

    def shutdown(self, wait: bool = False) -> None:
        self._closed = True
        for _ in self._threads:
            self._q.put(None)
        if wait:
            for t in self._threads:
                t.join()
