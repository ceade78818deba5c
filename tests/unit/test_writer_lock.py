"""The writer lock is handed over in arrival order (catalog/storage/writer_lock.py):
a writer that queued is overtaken by nobody who arrived after it, however
often the lock is released and taken again.  Ordering is forced by waiting
until each waiter is queued, never by sleeping."""
from __future__ import annotations

import threading
import time

import pytest

from splitstream.catalog.storage.database import Database
from splitstream.catalog.storage.writer_lock import FairLock


def _until(cond, what: str) -> None:
    """Wait (boundedly) for a state another thread reaches; not a timing assertion."""
    deadline = time.monotonic() + 10
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"never reached: {what}")
        time.sleep(0.001)


def _queued(db: Database, n: int) -> None:
    _until(lambda: db._writer.waiting == n, f"{n} writers queued")


def test_a_queued_writer_is_not_overtaken_by_a_releasing_holder(tmp_path):
    """The holder releasing and at once taking the lock again (a busy
    session's next write) used to win the lock back every time while the
    queued writer slept between polls."""
    db = Database(tmp_path, fsync=False)
    got = threading.Event()
    db.acquire_writer()

    def queued_writer():
        db.acquire_writer()
        got.set()
        db.release_writer()
    t = threading.Thread(target=queued_writer)
    t.start()
    _queued(db, 1)
    db.release_writer()
    assert not db.try_acquire_writer(), "a new arrival took the lock a writer was queued for"
    db.acquire_writer()                 # queues behind the waiter: returns once it has had its turn
    assert got.is_set()
    db.release_writer()
    t.join()


def test_writers_get_the_lock_in_arrival_order_with_no_overtaking(tmp_path):
    """Five writers queue in a known order, then a barging thread keeps
    taking and releasing the lock: the five are served first, in order;
    the barger's every turn comes after theirs (overtaking bound: zero)."""
    db = Database(tmp_path, fsync=False)
    order: list[str] = []
    db.acquire_writer()

    def writer(name: str) -> None:
        db.acquire_writer()
        order.append(name)
        db.release_writer()
    threads = []
    for i in range(5):
        t = threading.Thread(target=writer, args=(f"w{i}",))
        t.start()
        threads.append(t)
        _queued(db, i + 1)
    stop = threading.Event()

    def barger() -> None:
        while not stop.is_set():
            if db.try_acquire_writer() or db._writer.acquire(timeout=0.01):
                order.append("barger")
                db.release_writer()
    b = threading.Thread(target=barger)
    b.start()
    db.release_writer()
    for t in threads:
        t.join()
    stop.set()
    b.join()
    assert order[:5] == [f"w{i}" for i in range(5)]
    assert set(order[5:]) <= {"barger"}


def test_a_cancelled_or_timed_out_waiter_leaves_the_line(tmp_path):
    """A waiter whose cancel check raises (a cancel request) or whose
    timeout passes gives up its place; the lock then goes to the next one
    and is free when nobody waits."""
    lock = FairLock()
    assert lock.acquire()
    assert lock.acquire(timeout=0.05) is False
    assert lock.waiting == 0
    cancel = threading.Event()
    errors: list[BaseException] = []

    def check() -> None:
        if cancel.is_set():
            raise KeyboardInterrupt("cancelled")

    def cancelled() -> None:
        try:
            lock.acquire(cancel_check=check)
        except KeyboardInterrupt as e:
            errors.append(e)
    first = threading.Thread(target=cancelled)
    first.start()
    _until(lambda: lock.waiting == 1, "the first waiter queued")
    got = threading.Event()

    def second() -> None:
        lock.acquire()
        got.set()
        lock.release()
    t2 = threading.Thread(target=second)
    t2.start()
    _until(lambda: lock.waiting == 2, "the second waiter queued")
    cancel.set()
    first.join()
    assert len(errors) == 1 and lock.waiting == 1
    lock.release()
    t2.join()
    assert got.is_set()
    assert lock.try_acquire()
    lock.release()
    with pytest.raises(RuntimeError):
        lock.release()
