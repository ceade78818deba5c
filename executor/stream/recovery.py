"""Views broken at recovery: how the mark is kept, and how a failure reads.

Recovery never refuses to start because of one continuous view: a view whose
maintenance fails on a WAL record (or whose restore fails) is marked broken
by the stream manager, and its reads fail (55000) until it is dropped.  The
mark must outlive the WAL record that caused it, which the next checkpoint
deletes: it is kept in the view's saved state (:func:`broken_mark`), where
the checkpoint keeps the saved state of any broken view, so that a restart
finds it broken still, instead of silently missing the records it failed on.
"""
from __future__ import annotations

from splitstream.protocol.errors import PgError

#: The key of a broken view's saved state that says why it is broken.
BROKEN_KEY = "broken"


def broken_mark(why: str, saved: dict | None) -> dict:
    """The saved state of a view broken at recovery, as checkpoints keep it:
    why, and the state it had been restored with (None: it had none)."""
    return {BROKEN_KEY: why, "state": saved}


def describe(e: Exception) -> str:
    """An error as one line of a log or a message."""
    return e.message if isinstance(e, PgError) else f"{type(e).__name__}: {e}"
