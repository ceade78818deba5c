"""What a running statement can see: session settings, parameters, snapshot."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splitstream.protocol.errors import PgError, QUERY_CANCELED, Notice
import time

from .api import SessionInfo

from .execution.run import ExecutionRun

if TYPE_CHECKING:
    from splitstream.catalog.storage.database import Database, State, Transaction


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
    engine_session: Any = None      # the engine.Session running the statement (that module imports this one)
    outer_rows: list = field(default_factory=list)      # correlated subquery bindings
    cte_results: dict = field(default_factory=dict)
    view_snapshots: dict = field(default_factory=dict)  # continuous view reads within one statement
    read_epoch: int = 0             # the input cut a statement reading several views was read at
    read_cut_taken: bool = False    # the statement's views and streams were brought to one cut
    ring_pins: dict = field(default_factory=dict)     # stream oid -> (ring position, release) at that cut
    stats: dict = field(default_factory=dict)
    run: ExecutionRun = field(default_factory=ExecutionRun)   # per-execution operator state (plans stay immutable)
    #: what reads see while a statement with data-modifying WITH queries runs: the database as the
    #: statement began (PostgreSQL's one snapshot); writes and constraint checks use ``txn.state``
    snapshot: "State | None" = None

    @property
    def state(self) -> "State":
        return self.snapshot if self.snapshot is not None else self.txn.state

    def check_cancel(self) -> None:
        s = self.session
        if s.cancel_event.is_set():
            s.cancel_event.clear()
            raise PgError(QUERY_CANCELED, "canceling statement due to user request")
        if s.deadline is not None:
            if time.monotonic() > s.deadline:
                s.deadline = None
                raise PgError(QUERY_CANCELED, "canceling statement due to statement timeout")

    def setting(self, name: str, default: str = "") -> str:
        return self.session.settings.get(name.lower(), default)
