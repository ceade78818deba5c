"""Answers handed from engine threads to the event loop, one wake-up per burst.

``loop.call_soon_threadsafe`` wakes the loop with a write done while the
calling thread holds the GIL: on a busy machine the woken loop thread is
scheduled at once, finds the GIL taken and sleeps again, once per answer.
Here an engine thread queues its answers and writes one byte to a pipe
with ``os.write`` (which releases the GIL) only when the loop has not been
woken yet; the loop runs everything queued when it reads the pipe.  A lean
insert group of N statements thus costs the loop one wake-up, not N.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from typing import Any, Callable

log = logging.getLogger("splitstream.completions")


class Completions:
    """A queue of ``fn(arg)`` calls run on the event loop's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._items: deque[tuple[Callable[[Any], None], Any]] = deque()
        self._lock = threading.Lock()
        self._signaled = False
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        loop.add_reader(self._r, self._drain)

    def post(self, fn: Callable[[Any], None], arg: Any) -> None:
        """Run ``fn(arg)`` on the loop soon (from any thread)."""
        self._items.append((fn, arg))
        with self._lock:
            if self._signaled:
                return
            self._signaled = True
        try:
            os.write(self._w, b"\0")
        except (BlockingIOError, OSError):     # full (a wake-up is pending anyway) or closed
            pass

    def _drain(self) -> None:
        try:
            os.read(self._r, 4096)
        except (BlockingIOError, OSError):
            pass
        with self._lock:
            self._signaled = False          # before taking the items: a later post wakes us again
        items = self._items
        while items:
            fn, arg = items.popleft()
            try:
                fn(arg)
            except Exception:
                log.exception("a completion failed")

    def close(self) -> None:
        try:
            self.loop.remove_reader(self._r)
        finally:
            os.close(self._r)
            os.close(self._w)
