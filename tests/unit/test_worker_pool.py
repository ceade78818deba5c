"""The worker pool must never promise one idle thread to two items.

A transaction waiting for the writer lock holds its worker until the lock
holder's next statement (its COMMIT) runs; if that statement sits queued
behind it with no thread to take it, the whole server stalls.  Both items
are put back to back from one event-loop step, before the idle worker wakes.
"""
import asyncio
import threading

from splitstream.server.workers import WorkerPool


def test_back_to_back_items_never_share_one_idle_thread() -> None:
    async def main() -> None:
        pool = WorkerPool(max_workers=8)
        await pool.run(lambda: None)  # one thread, now idle
        for _ in range(50):
            released = threading.Event()
            waited = pool.run(released.wait, 5.0)   # blocks until the second item runs
            release = pool.run(released.set)
            assert await asyncio.gather(waited, release) == [True, None]
        pool.shutdown(wait=True)

    asyncio.run(main())


def test_threads_are_reused_when_idle() -> None:
    async def main() -> None:
        pool = WorkerPool(max_workers=8)
        for _ in range(100):
            await pool.run(lambda: None)
        assert len(pool._threads) == 1
        pool.shutdown(wait=True)

    asyncio.run(main())
