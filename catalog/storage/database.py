"""The database: committed state, transactions, the WAL and checkpoints.

All durable change goes through *operations* (small tuples).  A transaction
applies them to its private copy of the state and, at commit, writes them to
the WAL as one record and publishes its state.  Recovery loads the last
checkpoint and applies the logged operations again with the same function,
so the live path and the replay path cannot drift apart.

Concurrency: readers take the committed :class:`State` pointer and never
block.  One transaction at a time may write (``writer_lock``), which the
relational-core issue allows; it is taken at the first write and held to
commit or rollback.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import threading
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator


from splitstream.protocol.errors import PgError

from . import records
from .checkpoint_files import (CHECKPOINT_MAGIC, TableFiles, check_file, read_file, table_from_record, table_record,
                               write_durably)
from .hooks import StreamStorageHooks
from .notify import Notifier, PendingAsync, Sink
from ..objects import acl
from ..objects.predefined_roles import with_predefined
from ..objects.model import DatabaseDef, DefaultAcl, Function, Relation, Role, RoleSetting, Schema
from .tables import TableVersion
from ..datatypes.vector import Col
from .wal import Salvage, Wal, check_segment, encode as wal_encode
from .wal_records import ColumnArrays, PartialMerge, StreamBatch, StreamCommit, StreamDelta, StreamPart
from .writer_lock import FairLock

log = logging.getLogger("splitstream.storage")

#: A logged operation as :func:`apply_op` takes it: its kind, then its fields
#: in the order of :data:`catalog.wal_records.OP_FIELDS` (named on disk).
Op = tuple[Any, ...]

INVALID_SAVEPOINT_SPECIFICATION = "3B001"
READ_ONLY_SQL_TRANSACTION = "25006"
SERIALIZATION_FAILURE = "40001"
#: isolation levels that read one snapshot, taken at the transaction's first query
SNAPSHOT_LEVELS = frozenset({"repeatable read", "serializable"})
SEQUENCE_GENERATOR_LIMIT_EXCEEDED = "2200H"

FIRST_USER_OID = 16384
CHECKPOINT_WAL_BYTES = 256 * 1024 * 1024


def _one(record: int) -> tuple[int, int]:
    return record, record


class State:
    """One version of the whole database; treat as immutable once published."""

    __slots__ = ("rels", "by_name", "schemas", "roles", "functions", "data", "next_oid", "version", "ddl_version",
                 "databases", "default_acls", "role_settings")

    def __init__(self) -> None:
        self.rels: dict[int, Relation] = {}
        self.by_name: dict[tuple[str, str], int] = {}
        self.schemas: dict[str, Schema] = {}
        self.roles: dict[str, Role] = {}
        self.functions: dict[str, list[Function]] = {}
        self.data: dict[int, TableVersion] = {}
        self.next_oid = FIRST_USER_OID
        self.version = 0
        self.ddl_version = 0
        #: pg_database rows by name (their ACLs and owners)
        self.databases: dict[str, DatabaseDef] = {}
        #: pg_default_acl rows by (role, schema OID or 0, object type)
        self.default_acls: dict[tuple[int, int, str], DefaultAcl] = {}
        #: pg_db_role_setting rows by (database OID or 0, role OID or 0)
        self.role_settings: dict[tuple[int, int], RoleSetting] = {}

    def clone(self) -> "State":
        s = State()
        s.rels = dict(self.rels)
        s.by_name = dict(self.by_name)
        s.schemas = dict(self.schemas)
        s.roles = dict(self.roles)
        s.functions = {k: list(v) for k, v in self.functions.items()}
        s.data = dict(self.data)
        s.next_oid = self.next_oid
        s.version = self.version
        s.ddl_version = self.ddl_version
        s.databases = dict(self.databases)
        s.default_acls = dict(self.default_acls)
        s.role_settings = dict(self.role_settings)
        return s

    def lookup(self, schema: str, name: str) -> Relation | None:
        oid = self.by_name.get((schema, name))
        return self.rels.get(oid) if oid is not None else None

    def relations(self, kind: str | None = None) -> list[Relation]:
        return [r for r in self.rels.values() if kind is None or r.kind == kind]

    def to_record(self) -> records.Record:
        """This state as a "state" record (a checkpoint holds it)."""
        return records.Record("state", {
            "relations": list(self.rels.values()), "schemas": list(self.schemas.values()),
            "roles": list(self.roles.values()), "functions": [f for fs in self.functions.values() for f in fs],
            "tables": {oid: table_record(tv) for oid, tv in self.data.items()},
            "next_oid": self.next_oid, "version": self.version, "ddl_version": self.ddl_version,
            "databases": list(self.databases.values()), "default_acls": list(self.default_acls.values()),
            "role_settings": list(self.role_settings.values())})

    @staticmethod
    def from_record(rec: records.Record) -> "State":
        f = rec.fields
        s = State()
        s.rels = {r.oid: r for r in f["relations"]}
        s.by_name = {(r.schema, r.name): r.oid for r in f["relations"]}
        s.schemas = {sch.name: sch for sch in f["schemas"]}
        # checkpoints written before the pipelinedb schema was bootstrapped lack it
        s.schemas.setdefault(PIPELINEDB_SCHEMA.name, PIPELINEDB_SCHEMA)
        # checkpoints written before the predefined roles were kept lack them
        s.roles = with_predefined({r.name: r for r in f["roles"]})
        for fn in f["functions"]:
            s.functions.setdefault(fn.name, []).append(fn)
        s.data = {oid: table_from_record(t) for oid, t in f["tables"].items()}
        s.next_oid, s.version, s.ddl_version = f["next_oid"], f["version"], f["ddl_version"]
        # checkpoints written before databases, default privileges and role settings were kept lack them
        s.databases = {d.name: d for d in f.get("databases", BOOTSTRAP_DATABASES)}
        s.default_acls = {(d.role, d.schema, d.objtype): d for d in f.get("default_acls", ())}
        s.role_settings = {(r.database, r.role): r for r in f.get("role_settings", ())}
        return s


records.register("state", 1, ("relations", "schemas", "roles", "functions", "tables", "next_oid", "version",
                              "ddl_version", "databases", "default_acls", "role_settings"))
records.register("checkpoint", 1, ("state", "table_files", "sequences", "wal_gen", "streams", "stream_seq", "time"))


#: pg_database as initdb leaves it (the templates' ACLs are PostgreSQL's).
BOOTSTRAP_DATABASES = (
    DatabaseDef(5, "postgres"),
    DatabaseDef(1, "template1", acl=((0, 10, "c", ""), (10, 10, "CTc", "")), is_template=True),
    DatabaseDef(4, "template0", acl=((0, 10, "c", ""), (10, 10, "CTc", "")), is_template=True, allow_connections=False),
)


#: PipelineDB's schema (its install script's CREATE SCHEMA pipelinedb): the
#: extension is always installed here, so the schema is there from the start
PIPELINEDB_SCHEMA = Schema(13200, "pipelinedb")


def bootstrap_state() -> State:
    s = State()
    s.databases = {d.name: d for d in BOOTSTRAP_DATABASES}
    s.schemas = {
        "pg_catalog": Schema(11, "pg_catalog"),
        "public": Schema(2200, "public", comment="standard public schema"),
        "information_schema": Schema(13000, "information_schema"),
        "splitstream": Schema(13100, "splitstream"),
        PIPELINEDB_SCHEMA.name: PIPELINEDB_SCHEMA,
    }
    s.roles = with_predefined({"postgres": Role(10, "postgres", superuser=True, login=True, createdb=True,
                                                createrole=True, replication=True, bypassrls=True)})
    return s


# ------------------------------------------------------------ operations

def apply_op(state: State, op: Op) -> None:
    """Apply one logged operation to a private state (live and replay)."""
    kind = op[0]
    if kind not in ("insert", "delete", "truncate"):
        state.ddl_version += 1
    if kind == "rel":                      # create or replace a relation
        rel: Relation = op[1]
        old = state.rels.get(rel.oid)
        if old is not None:
            state.by_name.pop((old.schema, old.name), None)
        state.rels[rel.oid] = rel
        state.by_name[(rel.schema, rel.name)] = rel.oid
        if rel.kind in ("r", "f") and rel.oid not in state.data and rel.kind == "r":
            state.data[rel.oid] = TableVersion([c.type_oid for c in rel.live_columns])
        state.next_oid = max(state.next_oid, rel.oid + 1)
    elif kind == "drop_rel":
        dropped = state.rels.pop(op[1], None)
        if dropped is not None:
            state.by_name.pop((dropped.schema, dropped.name), None)
        state.data.pop(op[1], None)
    elif kind == "schema":
        sch: Schema = op[1]
        state.schemas[sch.name] = sch
        state.next_oid = max(state.next_oid, sch.oid + 1)
    elif kind == "drop_schema":            # its default privileges go with it (pg_default_acl's dependency)
        gone = state.schemas.pop(op[1], None)
        if gone is not None:
            state.default_acls = {k: d for k, d in state.default_acls.items() if d.schema != gone.oid}
    elif kind == "role":
        state.roles[op[1].name] = op[1]
        state.next_oid = max(state.next_oid, op[1].oid + 1)
    elif kind == "drop_role":
        state.roles.pop(op[1], None)
    elif kind == "function":               # create, replace, rename or re-own (by OID)
        fn = op[1]
        _remove_function(state, fn.oid)
        lst = [f for f in state.functions.get(fn.name, [])
               if not (f.arg_types == fn.arg_types and f.schema == fn.schema)]
        state.functions[fn.name] = lst + [fn]
        state.next_oid = max(state.next_oid, fn.oid + 1)
    elif kind == "drop_function":          # every overload of a name (kept for old WAL records)
        state.functions.pop(op[1], None)
    elif kind == "database":
        state.databases[op[1].name] = op[1]
    elif kind == "default_acl":
        d: DefaultAcl = op[1]
        state.default_acls[(d.role, d.schema, d.objtype)] = d
        state.next_oid = max(state.next_oid, d.oid + 1)
    elif kind == "drop_default_acl":
        state.default_acls.pop((op[1], op[2], op[3]), None)
    elif kind == "role_setting":            # no settings left: the row goes
        rs: RoleSetting = op[1]
        if rs.config:
            state.role_settings[(rs.database, rs.role)] = rs
        else:
            state.role_settings.pop((rs.database, rs.role), None)
    elif kind == "drop_function_oid":
        _remove_function(state, op[1])
    elif kind == "insert":
        _, oid, cols = op
        tv = state.data[oid]
        state.data[oid] = tv.append_arrays(cols)
    elif kind == "delete":
        _, oid, positions = op
        state.data[oid] = state.data[oid].delete(positions)
    elif kind == "relayout":
        _, oid, oids, cols = op
        state.data[oid] = TableVersion(oids).with_columns(oids, [Col(d, m, o) for (d, m), o in zip(cols, oids)])
    elif kind == "truncate":
        tv = state.data[op[1]]
        state.data[op[1]] = TableVersion(tv.oids)
    else:
        raise ValueError(f"unknown op {kind}")


def _with_default_privileges(st: State, obj: Relation | Schema) -> Relation | Schema:
    """A relation or schema being created gets the ACL ALTER DEFAULT
    PRIVILEGES gave its owner's new objects (PostgreSQL applies them in
    heap_create_with_catalog and CreateSchemaCommand; views and streams
    count as tables, indexes have no ACL).  Computed here, once, so the
    logged operation carries the ACL and replay does not depend on the
    default privileges of the time it runs."""
    if not st.default_acls:
        return obj
    if isinstance(obj, Schema):
        if any(s.oid == obj.oid for s in st.schemas.values()):
            return obj
        return replace(obj, acl=acl.initial_acl(st.default_acls, "schema", obj.owner, 0))
    if obj.oid in st.rels or obj.kind == "i":
        return obj
    sch = st.schemas.get(obj.schema)
    cls = acl.object_class(obj.kind)
    return obj.with_(acl=acl.initial_acl(st.default_acls, cls, obj.owner, sch.oid if sch is not None else 0))
def _remove_function(state: State, oid: int) -> None:
    for name, fns in list(state.functions.items()):
        kept = [f for f in fns if f.oid != oid]
        if len(kept) != len(fns):
            if kept:
                state.functions[name] = kept
            else:
                del state.functions[name]


def changes_rows(state: State, op: Op) -> bool:
    """Whether ``op`` adds, removes or replaces rows of a table (a relayout
    by ALTER TABLE keeps them: its DDL checks what it may change)."""
    kind = op[0]
    if kind == "insert":
        return not op[2] or len(op[2][0][0]) > 0
    if kind == "delete":
        return len(op[2]) > 0
    if kind == "truncate":
        tv = state.data.get(op[1])
        return tv is not None and tv.n_live() > 0
    return False


class Transaction:
    """A session's transaction: reads the committed state until it writes.

    Isolation: at READ COMMITTED each statement reads the state committed
    when it runs.  At REPEATABLE READ and SERIALIZABLE the transaction reads
    the state committed at its first query (``begin_query``) until it
    writes; its first write is refused with 40001 if any transaction
    committed since that snapshot.  Writers are serialized (one holds the
    writer lock from its first write to its end), so such a transaction
    runs as if alone at its snapshot: serializable, and stricter than
    PostgreSQL's REPEATABLE READ, which refuses only a write to a row that
    changed.  A read-only transaction refuses every write with 25006."""

    def __init__(self, db: "Database", implicit: bool) -> None:
        self.db = db
        self.implicit = implicit
        self._state: State | None = None
        self.ops: list[Op] = []
        #: (name, state snapshot, number of ops, where its LISTEN/NOTIFY started,
        #: how many on_rollback and on_end hooks were registered before it)
        self.savepoints: list[tuple[str, State | None, int, tuple[int, int], tuple[int, int]]] = []
        #: LISTEN / UNLISTEN / NOTIFY of this transaction, applied after it commits
        self.pending_async: PendingAsync | None = None
        self.after_commit: list[Callable[[], None]] = []
        #: Run when the transaction ends either way (transaction-scoped advisory locks).
        self.on_end: list[Callable[[], None]] = []
        #: undo of session state changed inside the block (SET ROLE): run when it rolls back
        self.on_rollback: list[Callable[[], None]] = []
        #: plain SETs (not SET LOCAL) made per setting name, kept by the executor's undo hooks
        self.setting_writes: dict[str, int] = {}
        self.failed = False
        #: set by a statement that must know which stream batches were logged before its
        #: commit (a continuous view's backfill): the commit is logged under the checkpoint
        #: lock, and ``stream_seq_at_commit`` is the last stream batch logged before it
        self.stream_cut = False
        self.stream_seq_at_commit: int | None = None
        #: run at that point, still under the lock, with ``stream_seq_at_commit`` (a new continuous
        #: view joins its stream there: no batch is logged in between); each returns its undo, run
        #: if the commit then fails
        self.at_cut: list[Callable[[int], Callable[[], None]]] = []
        self.isolation = "read committed"
        self.read_only = False
        self.deferrable = False
        #: the snapshot a REPEATABLE READ / SERIALIZABLE transaction reads (see the class)
        self._snapshot: State | None = None
        #: a query ran: the isolation level and read-write mode are fixed
        self.queried = False
        #: the running statement's command, as a read-only refusal names it
        self.command = ""

    @property
    def state(self) -> State:
        if self._state is not None:
            return self._state
        if self._snapshot is not None:
            return self._snapshot
        return self.db.committed

    def begin_query(self) -> None:
        """A query starts: the first one fixes the modes and, in a block,
        takes the snapshot.  A statement outside a block (autocommit, at
        default_transaction_isolation = 'repeatable read') reads as at READ
        COMMITTED: it is its own transaction, and pinning a snapshot there
        would only turn a concurrent commit into a 40001 for its write."""
        if not self.queried:
            self.queried = True
            if self.isolation in SNAPSHOT_LEVELS and self._state is None and not self.implicit:
                self._snapshot = self.db.committed

    def refuse_write(self, command: str | None = None) -> None:
        """25006 in a read-only transaction, naming the statement (or
        ``command``: ``nextval()``) as PostgreSQL does."""
        if self.read_only:
            raise PgError(READ_ONLY_SQL_TRANSACTION,
                          f"cannot execute {command or self.command or 'this command'} in a read-only transaction")

    @property
    def writing(self) -> bool:
        return self._state is not None

    def for_write(self, cancel_check: Callable[[], None] | None = None) -> State:
        if self._state is None:
            self.refuse_write()
            self.db.acquire_writer(cancel_check)
            return self._start_writing()
        return self._state

    def try_for_write(self) -> bool:
        """``for_write`` without waiting: False when another transaction
        writes (a caller on the event-loop thread must never block), or
        where ``for_write`` would refuse (the ordinary path raises it)."""
        if self._state is None:
            if self.read_only or self._snapshot is not None or not self.db.try_acquire_writer():
                return False
            self._state = self.db.committed.clone()
        return True

    def _start_writing(self) -> State:
        """With the writer lock: the private state to write, or 40001 if
        the snapshot read so far is no longer the committed state."""
        committed = self.db.committed
        if self._snapshot is not None and committed.version != self._snapshot.version:
            self.db.release_writer()
            raise PgError(SERIALIZATION_FAILURE, "could not serialize access due to concurrent update",
                          hint="A transaction committed since this one took its snapshot; retry the transaction.")
        self._state = state = committed.clone()
        return state

    def apply(self, op: Op) -> None:
        st = self.for_write()
        if self.db.hooks is not None and changes_rows(st, op):
            self.db.hooks.guard_rows(self, op[1])
        if op[0] == "rel" and any(not c.oid for c in op[1].constraints):
            op = ("rel", self._number_constraints(op[1]))
        if op[0] in ("rel", "schema") and op[1].acl is None:
            op = (op[0], _with_default_privileges(st, op[1]))
        apply_op(st, op)
        self.ops.append(op)

    def _number_constraints(self, rel: Relation) -> Relation:
        """Give each new constraint its own OID, as PostgreSQL does: stable
        across restarts (the logged relation carries it) and unique, so
        pg_constraint rows and pg_get_constraintdef never mix two up."""
        cons = tuple(c if c.oid else replace(c, oid=self.new_oid()) for c in rel.constraints)
        return rel.with_(constraints=cons)

    def new_oid(self) -> int:
        st = self.for_write()
        oid = st.next_oid
        st.next_oid += 1
        return oid

    def async_queue(self, pid: int, sink: Sink | None) -> PendingAsync:
        """This transaction's LISTEN/NOTIFY queue (made on first use)."""
        if self.pending_async is None:
            self.pending_async = PendingAsync(self.db.notifier, pid, sink)
        return self.pending_async

    def _async_mark(self) -> tuple[int, int]:
        return self.pending_async.mark() if self.pending_async is not None else (0, 0)

    def savepoint(self, name: str) -> None:
        snap = self._state.clone() if self._state is not None else None
        self.savepoints.append((name, snap, len(self.ops), self._async_mark(), (len(self.on_rollback), len(self.on_end))))

    def rollback_to(self, name: str) -> None:
        for i in range(len(self.savepoints) - 1, -1, -1):
            if self.savepoints[i][0] == name:
                _, snap, nops, amark, hooks = self.savepoints[i]
                del self.savepoints[i + 1 :]
                if self._state is not None:
                    self._state = snap.clone() if snap is not None else self.db.committed.clone()
                    del self.ops[nops:]
                if self.pending_async is not None:
                    self.pending_async.rollback_to(amark)
                self._undo_since(*hooks)
                self.failed = False
                return
        raise PgError(INVALID_SAVEPOINT_SPECIFICATION, f'savepoint "{name}" does not exist')

    def _undo_since(self, nrollback: int, nend: int) -> None:
        """What a rolled-back subtransaction did to the session ends with it,
        as in PostgreSQL: SET / SET LOCAL / SET ROLE are undone, cursors it
        declared close, transaction-level advisory locks it took are released;
        newest first, as at the end of the transaction."""
        undo, self.on_rollback[nrollback:] = self.on_rollback[nrollback:], []
        ended, self.on_end[nend:] = self.on_end[nend:], []
        for fn in reversed(undo):
            fn()
        for fn in reversed(ended):
            fn()

    def undo_failed_level(self) -> None:
        """A statement failed in the block: PostgreSQL aborts the innermost
        (sub)transaction at once, so the settings SET in it since its last
        savepoint are back before the ROLLBACK (TO) that ends the block
        (the undo hooks run again then, putting back the same values)."""
        mark = self.savepoints[-1][4][0] if self.savepoints else 0
        for fn in reversed(self.on_rollback[mark:]):
            fn()

    def release(self, name: str) -> None:
        for i in range(len(self.savepoints) - 1, -1, -1):
            if self.savepoints[i][0] == name:
                del self.savepoints[i:]
                return
        raise PgError(INVALID_SAVEPOINT_SPECIFICATION, f'savepoint "{name}" does not exist')

    def _end(self) -> None:
        # newest first: two SET LOCALs of one setting end at the value before both
        hooks, self.on_end = self.on_end, []
        for fn in reversed(hooks):
            fn()

    def commit(self, sync: bool = True) -> None:
        if self.on_end:
            self._end()
        if self._state is not None:
            self._commit_writes(sync)
        pending, self.pending_async = self.pending_async, None
        if pending is not None:
            pending.commit()      # after the commit is durable, as PostgreSQL's AtCommit_Notify

    def _commit_writes(self, sync: bool) -> None:
        assert self._state is not None
        try:
            if self.ops:
                self._state.version = self.db.committed.version + 1
                logged = [op for op in self.ops if not self._unlogged_data(op)]
                if logged and self.stream_cut:
                    self._commit_at_cut(logged, sync)
                elif logged:
                    self.db.wal.append(logged, sync=sync and self.db.fsync)
            self.db.committed = self._state
        finally:
            self._state = None
            self.db.release_writer()
        for fn in self.after_commit:
            fn()
        self.db.maybe_checkpoint()

    def _commit_at_cut(self, logged: list[Op], sync: bool) -> None:
        """Log the commit under the checkpoint lock, where stream batches are
        numbered and logged, so the batches before it are exactly those
        numbered up to ``stream_seq_at_commit``; ``at_cut`` runs there too."""
        with self.db._ckpt_lock:
            record = self.db.wal.append(logged, sync=False)
            seq = self.stream_seq_at_commit = self.db.stream_seq
            undo = [fn(seq) for fn in self.at_cut]
        try:
            if sync and self.db.fsync:
                self.db.wal.sync_upto(record)
        except BaseException:
            for fn in reversed(undo):
                fn()
            raise

    def _unlogged_data(self, op: Op) -> bool:
        """Rows of UNLOGGED tables skip the WAL, as in PostgreSQL: after a
        crash such a table is empty; a clean shutdown's checkpoint keeps it."""
        if op[0] not in ("insert", "delete", "truncate", "relayout"):
            return False
        rel = self.state.rels.get(op[1])
        return rel is not None and rel.persistence == "u"

    def rollback(self) -> None:
        undo, self.on_rollback = self.on_rollback, []
        for fn in reversed(undo):
            fn()
        if self.on_end:
            self._end()
        if self._state is not None:
            self._state = None
            self.db.release_writer()
        self.ops = []
        self.pending_async = None


class Database:
    """Owns the data directory."""

    def __init__(self, data_dir: str | os.PathLike[str], *, fsync: bool = True,
                 hooks: StreamStorageHooks | None = None) -> None:
        self.dir = Path(data_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.fsync = fsync
        self.committed = bootstrap_state()
        self.wal = Wal(self.dir / "wal", preallocate=fsync)
        self._writer = FairLock()           # writers are served in arrival order (writer_lock.py)
        self.sequences: dict[int, list[Any]] = {}     # oid -> [last_value, is_called]
        self.seq_lock = threading.Lock()
        #: The stream layer (catalog knows nothing of views): replays stream
        #: records, snapshots and restores view states, and guards every
        #: change to a table's rows (:class:`StreamStorageHooks`).
        self.hooks = hooks
        self._ckpt_lock = threading.Lock()
        self._inflight = 0              # stream batches logged and not yet applied
        self._inflight_cond = threading.Condition()
        self._ckpt_running = threading.Lock()
        self._table_files = TableFiles(self.dir / "tables")
        self.stream_seq = 0
        #: LISTEN/NOTIFY's channels and listeners (``notify.py``)
        self.notifier = Notifier()

    def attach(self, hooks: StreamStorageHooks) -> None:
        """Give storage its stream layer (before :meth:`open`)."""
        self.hooks = hooks

    # ---------------------------------------------------------- locking
    def acquire_writer(self, cancel_check: Callable[[], None] | None = None) -> None:
        self._writer.acquire(cancel_check=cancel_check)

    def try_acquire_writer(self) -> bool:
        return self._writer.try_acquire()

    def release_writer(self) -> None:
        self._writer.release()

    # ---------------------------------------------------------- recovery
    def check_format(self) -> None:
        """Refuse a data directory written in another on-disk format version
        (:class:`records.FormatVersionError`), before anything in it changes."""
        ckpt = self.dir / "checkpoint"
        if ckpt.exists():
            check_file(ckpt, CHECKPOINT_MAGIC)
        for gen in self.wal.segments():
            check_segment(self.wal.path(gen))

    def open(self) -> None:
        self.check_format()
        ckpt = self.dir / "checkpoint"
        start_gen = 0
        stream_snapshot = None
        if ckpt.exists():
            saved = read_file(ckpt, CHECKPOINT_MAGIC).fields
            self.committed = State.from_record(saved["state"])
            self.sequences = {oid: [s["last"], s["called"]] for oid, s in saved["sequences"].items()}
            start_gen = saved["wal_gen"]
            stream_snapshot = saved["streams"]
            self._table_files.check(saved["table_files"])
            self._table_files.load(self.committed, saved["table_files"])
            self.stream_seq = saved["stream_seq"]
        if stream_snapshot is not None and self.hooks is not None:
            self.hooks.restore_streams(stream_snapshot)
        state = self.committed.clone()
        for where, ops in self.wal.replay(start_gen):
            self._replay(state, ops, where)
        if self.hooks is not None:
            self.hooks.replay_finished()
        marker = self.dir / "clean_shutdown"
        if ckpt.exists() and not marker.exists():
            # crash recovery: UNLOGGED tables come back empty, as in PostgreSQL
            for rel in state.rels.values():
                if rel.kind == "r" and rel.persistence == "u" and rel.oid in state.data:
                    state.data[rel.oid] = TableVersion(state.data[rel.oid].oids)
        marker.unlink(missing_ok=True)
        self.committed = state
        gens = self.wal.segments()
        self.wal.open_segment((gens[-1] + 1) if gens else max(start_gen, 1))

    def salvage_wal(self) -> Salvage:
        """``splitstream recover`` (server stopped): cut the WAL the next
        start replays at its first damaged record, as pg_resetwal does, and
        say what was dropped.  Every record before the damage is kept."""
        ckpt = self.dir / "checkpoint"
        start_gen = read_file(ckpt, CHECKPOINT_MAGIC).fields["wal_gen"] if ckpt.exists() else 0
        return self.wal.salvage(start_gen)

    def _replay(self, state: State, ops: list[Any], where: str) -> None:
        """Apply one WAL record (``where``: its file and offset, which the
        stream layer logs if a view cannot take it)."""
        changed = False
        for op in ops:
            if isinstance(op, StreamBatch):
                self.stream_seq = max(self.stream_seq, op.seq)
                if self.hooks is not None:
                    self.hooks.replay_stream(op, state, where)
            elif isinstance(op, StreamPart):
                if self.hooks is not None:
                    self.hooks.replay_part(op, state, where)
            elif isinstance(op, StreamCommit):
                if self.hooks is not None:
                    self.hooks.replay_commit(op, state)
            elif isinstance(op, PartialMerge):
                if self.hooks is not None:
                    self.hooks.replay_partial(op, state, where)
            elif isinstance(op, StreamDelta):
                if self.hooks is not None:
                    self.hooks.replay_delta(op, state, where)
            elif op[0] == "setval":
                self.sequences[op[1]] = [op[2], True]
            elif op[0] == "setval_uncalled":
                self.sequences[op[1]] = [op[2], False]
            else:
                apply_op(state, op)
                changed = True
        if changed:
            state.version += 1

    # ---------------------------------------------------------- sequences
    def nextval(self, oid: int, rel: Relation) -> int:
        with self.seq_lock:
            last, called = self.sequences.get(oid, [rel.seq_start, False])
            v: int
            if not called:
                v = last
            else:
                v = last + rel.seq_increment
                if v > rel.seq_max or v < rel.seq_min:
                    if not rel.seq_cycle:
                        raise PgError(SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
                                      f'nextval: reached maximum value of sequence "{rel.name}" ({rel.seq_max})')
                    v = rel.seq_min if rel.seq_increment > 0 else rel.seq_max
            self.sequences[oid] = [v, True]
            self.wal.append([("setval", oid, v)], sync=False)
            return v

    def setval(self, oid: int, value: int, called: bool = True) -> None:
        with self.seq_lock:
            self.sequences[oid] = [value, called]
            self.wal.append([("setval" if called else "setval_uncalled", oid, value)], sync=False)

    # ---------------------------------------------------------- streams
    def ingest_stream(self, oid: int, cols: list[ColumnArrays], apply: Callable[[int], None], sync: bool,
                      batch_key: str = "", admit: Callable[[], bool] | None = None,
                      logged: Callable[[], None] | None = None, late_rows: int = 0,
                      targets: list[int] | None = None) -> int:
        """Log a stream batch, make it durable, then hand it on (``apply(seq)``).

        The caller has already run the batch through every view into private
        stages (issue 14), so nothing that can fail on the rows is left:
        what is logged is applied, and what fails is never logged.  The
        record is written under the checkpoint lock; the fsync happens after
        it is released, so concurrent inserters share it (group commit), and
        the views take the batch only once it is durable (``sync``).  A
        checkpoint waits for batches written but not yet applied, so it
        either holds a batch's effect or keeps the WAL that holds its record.
        ``batch_key``: the Spark exactly-once key, logged in the same record
        as the rows; ``admit()``, called under the lock, may still decline
        the batch (a key applied meanwhile): then nothing is logged and 0 is
        returned.  ``logged()`` is called once the record is written (the
        next group of small inserts may start, group_commit.py).
        ``late_rows``: the statement's rows dropped as late, logged with it;
        ``targets``: the views it feeds (None: all), logged with it.
        """
        rec = functools.partial(StreamBatch, oid, cols, batch_key=batch_key, late_rows=late_rows, targets=targets)
        return self._ingest(lambda s: _one(self.wal.append([rec(seq=s)], sync=False)),
                            apply, sync, admit, logged)

    def ingest_partial(self, merge: PartialMerge, apply: Callable[[int], None], sync: bool,
                       admit: Callable[[], bool] | None = None) -> int:
        """:meth:`ingest_stream` for Spark partial states merged into a view."""
        return self._ingest(lambda s: _one(self.wal.append([merge], sync=False)), apply, sync, admit)

    def ingest_parts(self, records: Callable[[], Iterable[tuple[bytes, Any]]], commit: StreamCommit,
                     apply: Callable[[int], None], sync: bool, ahead: "PartsAhead | None" = None) -> int:
        """:meth:`ingest_stream` for a COPY: its parts, encoded ahead
        (``wal.encode`` of ``[StreamPart]``), then ``commit``, all written
        under one hold of the checkpoint lock (a checkpoint never separates
        parts from their commit), with one fsync.  ``ahead``: the first
        parts, written already (:meth:`hold_for_parts`) under the hold
        this continues."""
        def write(seq: int) -> tuple[int, int]:
            first = ahead.first if ahead is not None else None
            for head, body in itertools.islice(records(), ahead.count if ahead is not None else 0, None):
                r = self.wal.append_record(head, body)
                first = r if first is None else first
            last = self.wal.append([commit], sync=False)
            return (last if first is None else first), last
        return self._ingest(write, apply, sync, held=ahead)

    def ingest_delta(self, delta: Callable[[], StreamDelta | None],
                     records: Callable[[], Iterable[tuple[bytes, Any]]], commit: StreamCommit,
                     apply: Callable[[int], None], sync: bool, crc32: Callable[..., int] = zlib.crc32) -> int:
        """:meth:`ingest_stream` for a COPY logged as its views' deltas:
        ``delta()``, asked under the checkpoint lock, gives the record, or
        None when the views it was staged for are no longer exactly the
        stream's (a view created or switched meanwhile would miss the rows
        at replay): then the COPY is logged as its rows, ``records()`` (the
        encoded parts) and ``commit``, as :meth:`ingest_parts` does.
        ``crc32``: frames the delta record (``wal.frame``; a COPY passes the
        executor's compiled one: a delta can be megabytes)."""
        def write(seq: int) -> tuple[int, int]:
            rec = delta()
            if rec is not None:
                n = self.wal.append_record(*wal_encode([rec], crc32))
                return n, n
            first = None
            for head, body in records():
                r = self.wal.append_record(head, body)
                first = r if first is None else first
            last = self.wal.append([commit], sync=False)
            return (last if first is None else first), last
        return self._ingest(write, apply, sync)

    def hold_for_parts(self) -> "PartsAhead | None":
        """The checkpoint lock for a COPY that logs its first parts while
        its last slab is still being parsed (:meth:`PartsAhead.write`, on
        another thread), if it is free now (never waited for: the thread
        that would write them must not wait on a COPY that waits on it).
        :meth:`ingest_parts` then writes the rest and the commit under the
        same hold, or :meth:`PartsAhead.release` gives it up if the COPY
        fails (parts without a commit are dropped at replay, as a crash
        before the commit leaves them)."""
        if not self._ckpt_lock.acquire(blocking=False):
            return None
        return PartsAhead(self._ckpt_lock, self.wal)

    def _ingest(self, write: Callable[[int], tuple[int, int]], apply: Callable[[int], None], sync: bool,
                admit: Callable[[], bool] | None = None, logged: Callable[[], None] | None = None,
                held: "PartsAhead | None" = None) -> int:
        """Number and log a stream batch (``write(seq)``: the numbers of its
        first and last WAL records) under the checkpoint lock, make it
        durable, then ``apply`` it.  A failed write or fsync (53100/58030)
        fails the statement before anything is applied.  ``held``: the
        lock is held already, by that (released here)."""
        with (held.holding() if held is not None else self._ckpt_lock):
            if admit is not None and not admit():
                return 0
            self.stream_seq += 1
            seq = self.stream_seq
            first, last = write(seq)
            with self._inflight_cond:
                self._inflight += 1
        if logged is not None:
            logged()
        try:
            if sync and self.fsync:
                self.wal.sync_upto(last, first)
            apply(seq)
        finally:
            with self._inflight_cond:
                self._inflight -= 1
                if not self._inflight:
                    self._inflight_cond.notify_all()
        return seq

    def _wait_for_inflight(self) -> None:
        """Under the checkpoint lock: until every logged batch has been applied."""
        with self._inflight_cond:
            while self._inflight:
                self._inflight_cond.wait()

    # ---------------------------------------------------------- checkpoint
    def maybe_checkpoint(self) -> None:
        if self.wal.size > CHECKPOINT_WAL_BYTES and not self._ckpt_running.locked():
            threading.Thread(target=self._checkpoint_in_background, daemon=True).start()

    def _checkpoint_in_background(self) -> None:
        """An automatic checkpoint: a failure (a full disk) is logged, and
        the WAL it did not replace stays; the next one tries again."""
        try:
            self.checkpoint()
        except PgError as e:
            log.error("automatic checkpoint failed: %s", e.message)

    def checkpoint(self) -> None:
        """Write a consistent snapshot, then drop the WAL it covers.

        Commits and stream batches are held off only while the state pointer
        and the stream states are captured, not while the file is written.
        One checkpoint runs at a time (an explicit CHECKPOINT waits for an
        automatic one): two would write the same temporary file.
        """
        with self._ckpt_running:
            self._checkpoint()

    def _checkpoint(self) -> None:
        if not self._writer.acquire(timeout=30):
            return
        try:
            with self._ckpt_lock:
                self._wait_for_inflight()
                state = self.committed
                streams = self.hooks.snapshot_streams() if self.hooks is not None else None
                with self.seq_lock:
                    sequences = {k: list(v) for k, v in self.sequences.items()}
                new_gen = self.wal.gen + 1
                self.wal.close()
                self.wal.open_segment(new_gen)
                stream_seq = self.stream_seq
        finally:
            self._writer.release()
        kept = state.clone()
        files = self._table_files.write(kept, new_gen)   # large tables: own files, kept while unchanged
        write_durably(self.dir / "checkpoint", CHECKPOINT_MAGIC, records.Record("checkpoint", {
            "state": kept.to_record(), "table_files": files,
            "sequences": {oid: {"last": last, "called": called} for oid, (last, called) in sequences.items()},
            "wal_gen": new_gen, "streams": streams, "stream_seq": stream_seq, "time": time.time()}))
        self._table_files.remove_unused()
        self.wal.remove_before(new_gen)

    def close(self) -> None:
        """Checkpoint and close.  If the checkpoint cannot be written (a full
        disk), the shutdown goes on without it: the WAL keeps everything, and
        the next start recovers from it as after a crash."""
        try:
            self.checkpoint()
        except PgError as e:
            log.error("shutdown checkpoint failed: %s; the next start replays the WAL", e.message)
        else:
            (self.dir / "clean_shutdown").touch()
        finally:
            self.wal.close()


class PartsAhead:
    """The checkpoint lock held by a COPY whose first parts are written
    (:meth:`Database.hold_for_parts`), until its commit is or it fails.
    Taken on one thread, released on another: a plain lock."""

    def __init__(self, lock: Any, wal: Any) -> None:
        self._lock, self._wal = lock, wal
        self.first: int | None = None       # the WAL number of the first part
        self.count = 0                      # parts written
        self.held = True

    def write(self, records: list[tuple[bytes, Any]]) -> "PartsAhead":
        """Append the parts (under the hold); a failed write releases it."""
        try:
            for head, body in records:
                r = self._wal.append_record(head, body)
                self.first = r if self.first is None else self.first
                self.count += 1
        except BaseException:
            self.release()
            raise
        return self

    def release(self) -> None:
        if self.held:
            self.held = False
            self._lock.release()

    @contextlib.contextmanager
    def holding(self) -> Iterator[None]:
        """The rest of the locked section, then the release."""
        try:
            yield
        finally:
            self.release()

