"""The lean path's leader threads (executor/leader_threads.py): every handed
work runs once, past the thread limit it waits in a backlog, and after close
new work is refused while work already handed still runs."""
from __future__ import annotations

import threading

import pytest

from splitstream.executor.leader_threads import LeaderThreads


def test_every_work_runs_once_and_a_backlog_forms_past_the_limit():
    pool = LeaderThreads(2, "t-leader")
    gate = threading.Event()
    ran: list[int] = []
    lock = threading.Lock()
    done = threading.Semaphore(0)

    def work(i: int) -> None:
        if i < 2:
            gate.wait(10)               # both threads busy: later work waits in the backlog
        with lock:
            ran.append(i)
        done.release()

    for i in range(10):
        pool.submit(work, i)
    assert len(pool._backlog) == 8 and pool._threads == 2
    gate.set()
    for _ in range(10):
        assert done.acquire(timeout=10)
    assert sorted(ran) == list(range(10))
    for i in range(10, 20):             # idle threads are reused, no new ones
        pool.submit(work, i)
    for _ in range(10):
        assert done.acquire(timeout=10)
    assert sorted(ran) == list(range(20)) and pool._threads == 2
    pool.close()


def test_close_refuses_new_work_and_runs_the_backlog():
    pool = LeaderThreads(1, "t-leader")
    gate = threading.Event()
    ran: list[int] = []
    done = threading.Semaphore(0)

    def work(i: int) -> None:
        if i == 0:
            gate.wait(10)
        ran.append(i)
        done.release()

    pool.submit(work, 0)
    pool.submit(work, 1)                # backlog
    pool.close()
    with pytest.raises(RuntimeError):
        pool.submit(work, 2)
    gate.set()
    assert done.acquire(timeout=10) and done.acquire(timeout=10)
    assert ran == [0, 1]


def test_a_failing_work_does_not_stop_its_thread():
    pool = LeaderThreads(1, "t-leader")
    done = threading.Event()

    def bad(_: object) -> None:
        raise ValueError("a bug")

    pool.submit(bad, None)
    pool.submit(lambda _: done.set(), None)
    assert done.wait(10)
    pool.close()
