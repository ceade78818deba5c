"""The server's clock, with a test-only hook to stop and move it.

Sliding windows (``sw``) and TTLs depend on the clock twice: inserts stamp
``arrival_timestamp`` with it and reads decide which panes are live by it.
Tests must tick that clock deterministically, so ``now()`` returns a frozen
time once :func:`set_frozen` was called.  Ordinary users cannot reach the
hook: the SQL function ``splitstream_test_clock(timestamptz)`` that calls it
exists only in a server started with ``SPLITSTREAM_TEST_CLOCK=1`` in its
environment, and then only for superusers (see :mod:`.system_functions`);
in-process tests call :func:`set_frozen` directly.
"""
from __future__ import annotations

import datetime as dt
import os
import threading

#: the environment switch that exposes the hook to SQL (tests' servers only)
TEST_CLOCK_ENV = "SPLITSTREAM_TEST_CLOCK"

_lock = threading.Lock()
_frozen: dt.datetime | None = None


def test_clock_enabled() -> bool:
    """Is the SQL hook enabled in this process (never in a production server)?"""
    return os.environ.get(TEST_CLOCK_ENV) == "1"


def now() -> dt.datetime:
    """The current time in UTC: the frozen test time when one is set."""
    f = _frozen
    return f if f is not None else dt.datetime.now(dt.timezone.utc)


def set_frozen(t: dt.datetime | None) -> None:
    """Stop the clock at ``t`` (aware datetime), or let it run again (None)."""
    global _frozen
    with _lock:
        _frozen = t if t is None or t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)


def micros(t: dt.datetime) -> int:
    """Microseconds since the Unix epoch (timestamptz's storage unit)."""
    d = t - EPOCH
    return (d.days * 86_400 + d.seconds) * 1_000_000 + d.microseconds


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
