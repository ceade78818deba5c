"""The database's single writer lock, handed over in arrival order.

Why not ``threading.Lock``: it does not serve waiters in order, and a
waiter polling with a timeout (to notice a cancel request) sleeps while the
lock is free, so under load one writer can be overtaken again and again
(a 500-client run saw table writes wait 16 s).  Here every waiter takes a
place in a queue; ``release`` hands the lock straight to the first one, and
an arrival (``acquire`` or ``try_acquire``) never takes a lock that someone
is queued for.  So a writer is overtaken by nobody who arrived after it.
"""
from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable

#: How often a queued writer wakes to run its cancel check.
POLL_SECONDS = 0.05


class _Waiter:
    __slots__ = ("granted",)

    def __init__(self) -> None:
        self.granted = False


class FairLock:
    """A non-reentrant mutex with FIFO hand-off."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._held = False
        self._queue: collections.deque[_Waiter] = collections.deque()

    @property
    def waiting(self) -> int:
        """How many acquirers are queued (tests and observability)."""
        with self._cond:
            return len(self._queue)

    def try_acquire(self) -> bool:
        """Take the lock if it is free and nobody is queued for it."""
        with self._cond:
            if self._held or self._queue:
                return False
            self._held = True
            return True

    def acquire(self, timeout: float | None = None,
                cancel_check: Callable[[], None] | None = None) -> bool:
        """Wait in line for the lock; False after ``timeout`` seconds.
        ``cancel_check`` runs every :data:`POLL_SECONDS` while waiting (it
        raises to give up the place in line)."""
        with self._cond:
            if not self._held and not self._queue:
                self._held = True
                return True
            me = _Waiter()
            self._queue.append(me)
        try:
            return self._wait(me, timeout, cancel_check)
        except BaseException:
            self._leave(me)
            raise

    def _wait(self, me: _Waiter, timeout: float | None, cancel_check: Callable[[], None] | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._cond:
                step = POLL_SECONDS if cancel_check is not None else None
                if deadline is not None:
                    left = deadline - time.monotonic()
                    step = left if step is None else min(step, left)
                if not me.granted and (step is None or step > 0):
                    self._cond.wait(step)
                if me.granted:
                    return True
                if deadline is not None and time.monotonic() >= deadline:
                    self._queue.remove(me)
                    return False
            if cancel_check is not None:
                cancel_check()

    def _leave(self, me: _Waiter) -> None:
        """A waiter gives up (its cancel check raised): out of the line, or,
        when the lock was handed to it meanwhile, on to the next."""
        with self._cond:
            if me.granted:
                self._hand_over()
            else:
                self._queue.remove(me)

    def release(self) -> None:
        with self._cond:
            if not self._held:
                raise RuntimeError("release of an unheld writer lock")
            self._hand_over()

    def _hand_over(self) -> None:
        """Give the held lock to the first in line (it stays held), or free it."""
        if self._queue:
            self._queue.popleft().granted = True
            self._cond.notify_all()
        else:
            self._held = False
