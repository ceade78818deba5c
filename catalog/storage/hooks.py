"""What storage asks of the stream layer, as a typed interface.

The catalog knows nothing of streams' views or of the Spark ledger, yet its
WAL replay, its checkpoints and every change to a table's rows must reach
them.  The executor's stream manager implements :class:`StreamStorageHooks`
and hands itself to :meth:`catalog.database.Database.attach`; storage calls
only these methods (it used to call attributes the executor assigned onto
the database).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .database import State, Transaction
    from .wal_records import PartialMerge, StreamBatch, StreamCommit, StreamDelta, StreamPart


class StreamStorageHooks(Protocol):
    def replay_stream(self, batch: "StreamBatch", state: "State", where: str) -> None:
        """A logged stream batch, at WAL replay (``state``: the state being
        recovered; ``where``: the record's file and offset).  A view that
        cannot take it is marked broken here: one view never stops recovery."""

    def replay_part(self, part: "StreamPart", state: "State", where: str) -> None:
        """One logged slab of a COPY, at WAL replay: held until its commit."""

    def replay_commit(self, commit: "StreamCommit", state: "State") -> None:
        """The end of a COPY's parts, at WAL replay: the parts take effect."""

    def replay_finished(self) -> None:
        """The end of WAL replay: parts whose COPY never committed are dropped."""

    def replay_partial(self, merge: "PartialMerge", state: "State", where: str) -> None:
        """Logged Spark partial states, at WAL replay (as :meth:`replay_stream`)."""

    def replay_delta(self, delta: "StreamDelta", state: "State", where: str) -> None:
        """A COPY logged as its views' deltas, at WAL replay (as :meth:`replay_stream`)."""

    def snapshot_streams(self) -> dict[str, Any]:
        """The stream layer's state for a checkpoint (values of the
        :mod:`catalog.records` kinds), taken while ingest is held off."""

    def restore_streams(self, snapshot: dict[str, Any]) -> None:
        """The snapshot of the last checkpoint, before the WAL after it replays."""

    def guard_rows(self, txn: "Transaction", table_oid: int) -> None:
        """Before any operation of ``txn`` changes the rows of a table,
        whatever statement caused it: the one place that may refuse it."""
