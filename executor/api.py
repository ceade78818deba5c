"""The contract between the server room and the executor room.

The server speaks the protocol and keeps connections; it hands SQL text to
an :class:`EngineSession` and gets :class:`Result` objects back.  Nothing
here knows about sockets, and nothing in the server knows about SQL.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol

from splitstream.catalog.vector import Batch
from splitstream.protocol.errors import Notice


@dataclass
class ResultColumn:
    name: str
    type_oid: int
    typmod: int = -1
    typlen: int = -1
    table_oid: int = 0
    attnum: int = 0


@dataclass
class Prepared:
    """A parsed, planned statement (cached by SQL text and parameter types)."""

    sql: str
    param_oids: list[int]
    columns: list[ResultColumn] | None      # None: the statement returns no rows (NoData)
    tag_hint: str = ""
    handle: Any = None                       # executor-private plan
    #: A query that cannot block or write (no volatile function, no stream scan):
    #: the server may run it on its event-loop thread when it proved fast.
    read_only: bool = False
    #: Continuous views a repeatable read depends on, or None when its result
    #: may change with its inputs unchanged (see executor.plan_facts).
    reuse_views: tuple[int, ...] | None = None
    #: A parameterised ``INSERT ... VALUES`` into a plain table that the
    #: extended protocol batches (executor.coalesce): with the writer lock free
    #: and no WAL flush due, its Bind/Execute/Sync can finish without blocking.
    inline_write: bool = False
    #: Output settings at planning time: constants such as a timestamptz cast to
    #: text are folded with them, so a change of TimeZone means planning again.
    planned_under: tuple = ()


class CopyIn(Protocol):
    """COPY ... FROM STDIN in progress: the server feeds CopyData payloads."""

    format: int          # 0 text/csv, 1 binary
    ncols: int

    def feed(self, data: bytes) -> None: ...
    def finish(self) -> str: ...             # returns the command tag, e.g. "COPY 3"
    def abort(self, reason: str) -> None: ...


@dataclass
class CopyOut:
    format: int
    ncols: int
    chunks: Iterator[bytes]
    tag_fn: Callable[[], str]


@dataclass
class Result:
    tag: str = ""
    columns: list[ResultColumn] | None = None
    batch: Batch | None = None               # all rows, columnar
    notices: list[Notice] = field(default_factory=list)
    parameter_status: dict[str, str] = field(default_factory=dict)
    copy_in: CopyIn | None = None
    copy_out: CopyOut | None = None
    empty: bool = False                       # EmptyQueryResponse


class EngineSession(Protocol):
    @property
    def txn_status(self) -> str: ...         # 'I', 'T' or 'E'

    def split(self, sql: str) -> list[str]: ...
    def prepare(self, sql: str, param_oids: list[int]) -> Prepared: ...
    def execute(self, prepared: Prepared, params: list[Any]) -> Result: ...
    def execute_sql(self, sql: str) -> Result: ...
    def on_error(self) -> None: ...          # a statement failed: mark the transaction failed
    def result_version(self, prepared: Prepared) -> Any: ...   # equal versions: equal results (None: unknown)
    def close(self) -> None: ...             # connection ended: roll back, free resources
