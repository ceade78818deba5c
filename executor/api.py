"""The contract between the server room and the executor room.

The server speaks the protocol and keeps connections; it hands SQL text to
an :class:`EngineSession` and gets :class:`Result` objects back.  Every call
the server makes into the engine is declared here, as a ``Protocol`` or a
plain value class, so the server imports nothing else of the executor (and
nothing of the catalog).  Nothing here knows about sockets, and nothing in
the server knows about SQL: what a statement *is* (does Describe have to run
it, how its command tag counts rows) the engine says through these types.
"""
from __future__ import annotations

import datetime
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Protocol, Sequence

import numpy as np
import numpy.typing as npt

from splitstream.protocol.errors import Notice, PgError

# ------------------------------------------------------------------ session


@dataclass
class SessionInfo:
    """The part of a server session the executor may read and change.

    The server builds it at login and keeps it: it arms ``cancel_event`` (a
    CancelRequest, a vanished client) and ``deadline`` (statement_timeout)
    from its own threads, while the engine session reads them.
    """

    settings: dict[str, str]
    user: str = "postgres"
    database: str = "postgres"
    #: the role whose privileges the session has ('' = ``user``); trust mode maps every name to the superuser
    login_role: str = ""
    pid: int = 0
    #: settings the client gave at startup: a role's or database's settings do not override them
    client_settings: frozenset[str] = frozenset()
    cancel_event: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None
    #: Where LISTEN's notifications go: called as (sender pid, channel, payload)
    #: from the committing session's thread, so it must only queue (the server
    #: writes a NotificationResponse when the session is idle).  None: the
    #: engine session keeps them in its ``notifications`` list.
    notify_sink: Callable[[int, str, str], None] | None = None

    @property
    def sync_commit(self) -> bool:
        """A commit waits for its WAL flush (``synchronous_commit`` is not off)."""
        return self.settings.get("synchronous_commit", "on") != "off"


# ------------------------------------------------------------------ results


@dataclass
class ResultColumn:
    """One column of a RowDescription."""

    name: str
    type_oid: int
    typmod: int = -1
    typlen: int = -1
    table_oid: int = 0
    attnum: int = 0


class ColumnValues(Protocol):
    """One result column, columnar: a numpy array of values, a null mask
    (True = NULL) and the PostgreSQL type OID (``catalog.vector.Col``)."""

    @property
    def data(self) -> npt.NDArray[Any]: ...     # numpy dtypes, or objects for variable-width types
    @property
    def nulls(self) -> npt.NDArray[np.bool_] | None: ...
    @property
    def oid(self) -> int: ...
    def slice(self, a: int, b: int) -> ColumnValues: ...
    def to_pylist(self) -> list[Any]: ...      # Python values, None for NULL


class RowBatch(Protocol):
    """All rows of a result, columnar (``catalog.vector.Batch``)."""

    @property
    def n(self) -> int: ...
    @property
    def cols(self) -> Sequence[ColumnValues]: ...


@dataclass
class Prepared:
    """A parsed, planned statement (cached by SQL text and parameter types).

    Its flags are the engine's word on what the statement is; the server
    reads them instead of looking at the SQL.
    """

    sql: str
    param_oids: list[int]
    columns: list[ResultColumn] | None      # None: the statement returns no rows (NoData)
    #: The executor's plan.  Opaque to the server; typed by the executor's own
    #: statement classes, which this module cannot import (they import it).
    handle: Any = None
    #: A query that cannot block or write (no volatile function, no stream scan):
    #: the server may run it on its event-loop thread when it proved fast.
    read_only: bool = False
    #: Continuous views a repeatable read depends on, or None when its result
    #: may change with its inputs unchanged (see executor.plan_facts).
    reuse_views: tuple[int, ...] | None = None
    #: A parameterised ``INSERT ... VALUES`` into a plain table that the
    #: extended protocol batches (executor.insert_batching): with the writer lock free
    #: and no WAL flush due, its Bind/Execute/Sync can finish without blocking.
    inline_write: bool = False
    #: An ``INSERT ... VALUES`` of parameters into a stream or a table that an
    #: autocommitted Bind/Execute/Sync may hand to :meth:`EngineSession.lean_submit`.
    lean: bool = False
    #: Its row shape is known only when it runs (FETCH from a SQL cursor,
    #: EXECUTE of a SQL-prepared statement): Describe of its portal runs it.
    columns_at_run: bool = False
    #: Output settings at planning time: constants such as a timestamptz cast to
    #: text are folded with them, so a change of TimeZone means planning again.
    planned_under: tuple[str | None, ...] = ()
    #: The catalog's ``ddl_version`` it was planned against (-1: unknown).
    ddl_version: int = -1
    #: COMMIT, ROLLBACK [TO SAVEPOINT]: what a failed transaction block
    #: still binds and runs (PostgreSQL's IsTransactionExitStmt)
    ends_block: bool = False


@dataclass
class LeanOutcome:
    """How a statement handed to :meth:`EngineSession.lean_submit` ended:
    its command tag, its error, or ``retry`` (run it the ordinary way: its
    relation changed since it was planned)."""

    tag: str = ""
    error: PgError | None = None
    retry: bool = False


class CopyIn(Protocol):
    """COPY ... FROM STDIN in progress: the server feeds CopyData payloads."""

    @property
    def format(self) -> int: ...             # 0 text/csv, 1 binary
    @property
    def ncols(self) -> int: ...

    def feed(self, data: bytes) -> None: ...
    def feed_light(self, payloads: list[bytes]) -> bool: ...   # fed if that only hands them on (see CopySink)
    def feed_spans(self, buf: bytearray, spans: list[tuple[int, int]]) -> bool: ...   # as feed_light, in place
    def finish(self) -> str: ...             # returns the command tag, e.g. "COPY 3"
    def abort(self, reason: str) -> None: ...
    @property
    def starts_inline(self) -> bool: ...     # the same statement may start on the event loop (see CopySink)


@dataclass
class CopyOut:
    """COPY ... TO STDOUT: chunks of CopyData, then the tag (known at the end)."""

    format: int
    ncols: int
    chunks: Iterator[bytes]
    tag_fn: Callable[[], str]


@dataclass
class Result:
    """What one statement produced."""

    tag: str = ""
    columns: list[ResultColumn] | None = None
    batch: RowBatch | None = None              # all rows, columnar
    notices: list[Notice] = field(default_factory=list)
    parameter_status: dict[str, str] = field(default_factory=dict)
    copy_in: CopyIn | None = None
    copy_out: CopyOut | None = None
    empty: bool = False                       # EmptyQueryResponse
    #: rows that keep coming (SUBSCRIBE) instead of ``batch``: each item is a batch to
    #: send, or None where the server should write what it has; ends by an error (a cancel)
    row_stream: Iterator[RowBatch | None] | None = None

    def tag_for_rows(self, rows: int) -> str:
        """The command tag when one Execute sent only ``rows`` of the result
        (a portal run with a row limit): PostgreSQL counts a SELECT's rows
        per Execute, while FETCH and DML ... RETURNING keep their own tag."""
        return f"SELECT {rows}" if self.tag.startswith("SELECT") else self.tag


# ------------------------------------------------------------------ engine


#: how many custom plans PostgreSQL's plan cache builds before it weighs the generic one (plancache.c)
_CUSTOM_FIRST = 5


@dataclass
class PreparedFacts:
    """What pg_prepared_statements says of one named prepared statement
    besides its plan: the text PostgreSQL records (the whole Query or Parse
    string it came in), when it was prepared, whether by SQL PREPARE, and
    how often PostgreSQL's plan cache would have chosen a generic and a
    custom plan for it (counts kept as plancache.c keeps them: we plan
    once, but a client reads these to see what PostgreSQL would do)."""

    statement: str
    prepare_time: datetime.datetime
    from_sql: bool
    generic_plans: int = 0
    custom_plans: int = 0

    def planned(self, with_params: bool, mode: str, times: int = 1) -> None:
        """``times`` executions (Bind, EXECUTE) took a plan, as
        choose_custom_plan decides: no parameters, a generic plan; else
        plan_cache_mode's choice; under ``auto`` a custom plan for the first
        five, then the generic one (PostgreSQL keeps it when it costs less
        than the custom plans' average with their planning charge, which is
        so unless a parameter's value changes the plan's shape)."""
        if not with_params or mode == "force_generic_plan":
            custom = 0
        elif mode == "force_custom_plan":
            custom = times
        else:
            custom = max(0, min(times, _CUSTOM_FIRST - self.custom_plans))
        self.custom_plans += custom
        self.generic_plans += times - custom


class ProtocolStatements(Protocol):
    """The extended protocol's named statements of one connection, held by
    the server.  SQL PREPARE / EXECUTE / DEALLOCATE share their namespace,
    as in PostgreSQL (one hash of prepared statements per backend)."""

    def has(self, name: str) -> bool: ...                 # a named statement, an empty query's too
    def lookup(self, name: str) -> Prepared | None: ...   # None: no such protocol statement (or an empty query)
    def drop(self, name: str) -> bool: ...                # False: no such protocol statement
    def drop_all(self) -> None: ...
    def facts(self, name: str) -> PreparedFacts | None: ...   # pg_prepared_statements' facts of a named one
    #: the named statements for pg_prepared_statements: (name, parameter type oids, facts)
    def listing(self) -> list[tuple[str, list[int], PreparedFacts]]: ...


class NoProtocolStatements:
    """An engine session used without a server (in-process): no protocol statements."""

    def has(self, name: str) -> bool:
        return False

    def lookup(self, name: str) -> Prepared | None:
        return None

    def drop(self, name: str) -> bool:
        return False

    def drop_all(self) -> None:
        return None

    def facts(self, name: str) -> PreparedFacts | None:
        return None

    def listing(self) -> list[tuple[str, list[int], PreparedFacts]]:
        return []


class EngineSession(Protocol):
    """One connection's statements, transaction and plan cache.  Calls come
    from one thread at a time; any of them may raise ``PgError``."""

    #: SQL-level PREPAREd statements by name (Parse, Bind, Describe and Close
    #: of the protocol reach them too); the server sets ``protocol_statements``
    #: so that PREPARE, EXECUTE and DEALLOCATE reach the protocol's
    sql_prepared: dict[str, Prepared]
    #: pg_prepared_statements' facts of each ``sql_prepared`` statement (a Bind of one counts its plan)
    sql_prepared_facts: dict[str, PreparedFacts]
    protocol_statements: ProtocolStatements

    @property
    def txn_status(self) -> str: ...         # 'I', 'T' or 'E'

    @property
    def sync_pending(self) -> bool:
        """Sync has work: an implicit extended-protocol block is open or
        batched inserts wait for delivery (False: Sync may skip :meth:`sync`)."""
        ...

    def split(self, sql: str) -> list[str]: ...   # a simple Query's statements, each with its .offset in it
    def prepare(self, sql: str, param_oids: list[int]) -> Prepared: ...
    def execute_sql(self, sql: str) -> Result: ...   # one statement of a simple Query

    def current_plan(self, prepared: Prepared) -> Prepared:
        """``prepared`` as it would run now: planned again when DDL changed
        what it reads or a plan setting (search_path, role) moved, as
        PostgreSQL revalidates a cached plan (Describe describes that plan);
        PgError when it can no longer be planned, or its row type changed."""
        ...

    def execute_deferred(self, prepared: Prepared, params: list[Any]) -> Result:
        """Execute of the extended protocol: commits at :meth:`sync`, not now.
        ``params`` are the Bind values decoded to Python values (None: NULL)."""
        ...

    def sync(self) -> dict[str, str]:
        """Sync: commit the implicit block of the batch; the reported settings
        (wire name: value) its end put back, to send as ParameterStatus."""
        ...
    def reserve_inline_write(self, prepared: Prepared) -> bool:
        """Take the writer lock for a Bind/Execute/Sync cycle of ``prepared``
        if that needs no waiting, so the server may run it on its event loop."""
        ...

    def lean_submit(self, prepared: Prepared, params: list[Any], done: Callable[[LeanOutcome], None]) -> bool:
        """Hand an autocommitted Bind/Execute/Sync of a ``Prepared.lean``
        statement, from an idle session, to the engine's lean path without
        waiting: ``done`` is called once (from an engine thread) when it is
        durable and applied, or failed.  False: nothing was done (the
        session is not idle, a setting or privilege needs the ordinary
        path); run the messages as usual."""
        ...

    def execute_deferred_run(self, prepared: Prepared, columns: list[Any], n: int) -> Result | None:
        """``n`` Executes of ``prepared`` at once (a run of pipelined cycles,
        ``protocol.bind_runs``): ``columns`` holds each parameter's values as a
        (numpy column of its type's native dtype, NULL mask or None) pair,
        a list of Python values, or None for NULL throughout.
        The Result is each Execute's; None: declined, nothing was done (run
        them one by one, so a failing row fails its own Execute)."""
        ...

    def lean_submit_sql(self, sql: str, done: Callable[[LeanOutcome], None]) -> bool:
        """:meth:`lean_submit` for a simple Query's text (one INSERT of
        literals whose normalised plan is cached)."""
        ...

    def result_version(self, prepared: Prepared) -> object:
        """Equal versions: equal results (None: no such promise)."""
        ...

    def on_error(self) -> dict[str, str]:
        """A statement failed: mark an explicit block failed, roll back an
        implicit one; the reported settings (wire name: value) that rollback
        put back, to send as ParameterStatus."""
        ...

    def begin_query_block(self) -> None:
        """Before each statement of a simple Query holding several: open the
        implicit transaction block they share, unless a block is open."""
        ...

    def end_query_block(self) -> dict[str, str]:
        """After the last statement of such a Query: commit its implicit
        block (if still open); the reported settings its end put back."""
        ...

    def declared_cursor(self, name: str) -> Result | None:
        """The materialised result of SQL-level cursor ``name`` (DECLARE), if
        it exists: a client may Describe it as a portal."""
        ...

    def close(self) -> None: ...             # connection ended: roll back, free resources


class LoginRole(Protocol):
    """What authentication needs to know about a role."""

    @property
    def password(self) -> str | None: ...    # SCRAM verifier, md5 hash or None
    @property
    def login(self) -> bool: ...
    @property
    def superuser(self) -> bool: ...
    @property
    def connlimit(self) -> int: ...          # CONNECTION LIMIT (-1: none)


class Engine(Protocol):
    """One per server process: the data directory and its sessions."""

    def open(self) -> None: ...              # recover the data directory (may take long)
    def close(self) -> None: ...
    def new_session(self, info: SessionInfo) -> EngineSession: ...
    def lookup_role(self, name: str) -> LoginRole | None: ...
    def database_exists(self, name: str) -> bool: ...

    def role_memberships(self, name: str) -> frozenset[str]:
        """The roles role ``name`` is a member of, directly or not, itself
        included (empty for no such role): pg_hba.conf's ``+role`` and ``samerole``."""
        ...

    def check_connect(self, user: str, database: str) -> None:
        """May role ``user`` connect to ``database`` (CheckMyDatabase: it
        accepts connections and the role holds CONNECT)?  Raises a FATAL
        ``PgError`` when not."""
        ...


class EngineFactory(Protocol):
    """How the command line gets an engine without importing the executor:
    the composition root (``splitstream.cli``) passes one in."""

    def __call__(self, data_dir: str, *, fsync: bool) -> Engine: ...
