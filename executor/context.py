"""What a running statement can see: session settings, parameters, snapshot."""
from __future__ import annotations

import datetime as dt
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splitstream.protocol.errors import PgError, QUERY_CANCELED, Notice

from .run import ExecutionRun

if TYPE_CHECKING:
    from splitstream.catalog.database import Database, State, Transaction


@dataclass
class SessionInfo:
    """The part of a server session the executor may read and change."""

    settings: dict[str, str]
    user: str = "postgres"
    database: str = "postgres"
    pid: int = 0
    prepared: dict[str, Any] = field(default_factory=dict)       # SQL-level PREPARE
    cursors: dict[str, Any] = field(default_factory=dict)
    cancel_event: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None

    @property
    def sync_commit(self) -> bool:
        """A commit waits for its WAL flush (``synchronous_commit`` is not off)."""
        return self.settings.get("synchronous_commit", "on") != "off"


@dataclass
class ExecContext:
    db: "Database"
    txn: "Transaction"
    session: SessionInfo
    params: list = field(default_factory=list)          # Python values
    param_oids: list[int] = field(default_factory=list)
    now: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))
    notices: list[Notice] = field(default_factory=list)
    engine: Any = None
    outer_rows: list = field(default_factory=list)      # correlated subquery bindings
    cte_results: dict = field(default_factory=dict)
    view_snapshots: dict = field(default_factory=dict)  # continuous view reads within one statement
    stats: dict = field(default_factory=dict)
    run: ExecutionRun = field(default_factory=ExecutionRun)   # per-execution operator state (plans stay immutable)

    @property
    def state(self) -> "State":
        return self.txn.state

    def check_cancel(self) -> None:
        s = self.session
        if s.cancel_event.is_set():
            s.cancel_event.clear()
            raise PgError(QUERY_CANCELED, "canceling statement due to user request")
        if s.deadline is not None:
            import time

            if time.monotonic() > s.deadline:
                s.deadline = None
                raise PgError(QUERY_CANCELED, "canceling statement due to statement timeout")

    def setting(self, name: str, default: str = "") -> str:
        return self.session.settings.get(name.lower(), default)
