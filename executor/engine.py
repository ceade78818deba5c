"""The executor's front door: one :class:`Engine` per server process and
one :class:`Session` per connection.

A statement goes: text -> classify (utility commands by keyword, the rest
through sqlglot) -> plan (cached per session by text and parameter types,
invalidated by DDL) -> run inside the session's transaction -> Result.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import threading
import time
from dataclasses import replace
from typing import Any, Callable


from splitstream.catalog.storage.database import Database, Transaction
from splitstream.catalog.objects import acl
from splitstream.catalog.objects.model import Role
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    FEATURE_NOT_SUPPORTED, IN_FAILED_SQL_TRANSACTION, SYNTAX_ERROR, INSUFFICIENT_PRIVILEGE, OBJECT_NOT_IN_PREREQUISITE_STATE,
    UNDEFINED_OBJECT, Notice, PgError,
)

from .sql import default_text  # noqa: F401  (installs the SQL deparser of column defaults into the catalog)
from .sql import viewdef  # noqa: F401  (installs pg_get_viewdef's deparser into the catalog)
from .backends.llvm import backend as llvm_backend  # noqa: F401  (installs the LLVM backend: executor_backend = auto|llvm)
from .backends.llvm import sampling as llvm_sampling  # noqa: F401  (installs the compiled reservoir merge)
from .execution import clock, operators, privileges
from .execution.privileges import password_expired
from .execution.setting_changes import changed_reported, reported
from .api import LeanOutcome, NoProtocolStatements, Prepared, PreparedFacts, ProtocolStatements, Result
from .lean_insert import LeanIngest, LeanRequest
from .literal_inserts import Literals, normalise
from .insert_batching import MAX_SEGMENTS, FlushStmt, PendingInserts, ProbeStmt, coalescible
from .context import ExecContext, SessionInfo
from .commands.plan_facts import OUTPUT_SETTINGS
from .commands.command_names import command_name, takes_snapshot, writes
from .commands.transactions import TXN_SETTINGS, begin_modes, set_modes
from .settings import DEFAULT_SETTINGS, DISPLAY_NAMES, REPORTED
from .sql.sqltext import Statement, split_statements
from .stream.spark.ledger import KEY_SETTING
from .settings import values as setting_values
from .settings.pg15_settings import SUPERUSER_ONLY
from .settings import pipelinedb as pipelinedb_gucs
from .settings import check_setting, normalize_setting, parse_duration_ms
from .stream.manager import StreamManager
from .execution.system_functions import ADVISORY, sequence_function
from .commands.base import plan_is_current
from .commands.cursors import cursor_rows
from .commands.prepare import prepared_statement_rows
from .commands.dispatch import analyze
from .commands.role_settings import login_settings
from .commands.dml import check_constraints

log = logging.getLogger("splitstream.executor")


class Engine:
    def __init__(self, data_dir: str, *, fsync: bool = True) -> None:
        self.db = Database(data_dir, fsync=fsync)
        self.streams = StreamManager(self, check_constraints)
        self.lean = LeanIngest(self)
        self.lock = threading.Lock()
        self.unique_indexes: dict = {}
        self.started = dt.datetime.now(dt.timezone.utc)

    def open(self) -> None:
        self.streams.install_hooks()
        self.db.open()
        self.streams.recover()

    def close(self) -> None:
        self.lean.close()
        self.db.close()

    def new_session(self, info: SessionInfo) -> "Session":
        return Session(self, info)

    def lookup_role(self, name: str) -> Role | None:
        """The role logging in as ``name``.  Past its VALID UNTIL a role's
        password no longer authenticates (PostgreSQL then fails the login as
        for a wrong password), so it is returned without one."""
        role = self.db.committed.roles.get(name)
        if role is not None and password_expired(role):
            return replace(role, password=None)
        return role

    def database_exists(self, name: str) -> bool:
        return name in self.db.committed.databases

    def role_memberships(self, name: str) -> frozenset[str]:
        st = self.db.committed
        role = st.roles.get(name)
        if role is None:
            return frozenset()
        return frozenset(acl.role_name(st.roles, oid) for oid in acl.member_roles(st.roles, role.oid))

    def check_connect(self, user: str, database: str) -> None:
        st = self.db.committed
        db = st.databases[database]
        if not db.allow_connections:
            raise PgError(OBJECT_NOT_IN_PREREQUISITE_STATE,
                          f'database "{database}" is not currently accepting connections', severity="FATAL")
        role = st.roles.get(user)
        if role is not None and not privileges.has_database_privilege(st, role, db, "c"):
            raise PgError(INSUFFICIENT_PRIVILEGE, f'permission denied for database "{database}"',
                          detail="User does not have CONNECT privilege.", severity="FATAL")

    # planner callbacks -------------------------------------------------
    def sequence_func(self, planner, name, args):
        return sequence_function(self, planner, name, args)

    def sequence_scan(self, rel):
        def fetch(ctx, _rel=rel):
            last, called = self.db.sequences.get(_rel.oid, [_rel.seq_start, False])
            return Batch([Col.from_pylist([last], type_oids.INT8), Col.from_pylist([0], type_oids.INT8), Col.from_pylist([called], type_oids.BOOL)], 1)

        return operators.BatchSource(f"Seq Scan on {rel.name}", [operators.OutCol("last_value", type_oids.INT8), operators.OutCol("log_cnt", type_oids.INT8),
                                                          operators.OutCol("is_called", type_oids.BOOL)], fetch)


class Session:
    """Transaction state, settings and plan cache of one connection."""

    def __init__(self, engine: Engine, info: SessionInfo) -> None:
        self.engine = engine
        self.db = engine.db
        self.info = info

        for k, v in list(info.settings.items()):
            # startup-packet settings get SET's validation; a bad one refuses the connection
            check_setting(k, v)
            info.settings[k] = normalize_setting(k, v)
        #: what RESET returns a setting to: the client's startup value, else the role's or database's
        self.reset_values = {k: info.settings[k] for k in info.client_settings if k in info.settings}
        #: where each reset value came from (pg_settings.source): 'client', or the role's or database's
        self.reset_sources = dict.fromkeys(self.reset_values, "client")
        #: settings changed in the session (SET, set_config): source 'session'; undone with their values
        self.setting_sources: dict[str, str] = {}
        self._apply_role_settings()
        for k, v in DEFAULT_SETTINGS.items():
            info.settings.setdefault(k, v)
        # who authenticated: SET SESSION AUTHORIZATION is checked against them, and DEFAULT returns to them
        self.authenticated_user = info.user
        self.authenticated_login_role = info.login_role
        self.authenticated_superuser = privileges.login_role(self.db.committed, info).superuser
        info.settings["is_superuser"] = "on" if self.authenticated_superuser else "off"
        self.txn: Transaction | None = None       # explicit transaction block
        self.failed = False
        self.plan_cache: dict = {}
        self.sql_prepared: dict[str, Prepared] = {}
        self.sql_prepared_facts: dict[str, PreparedFacts] = {}     # pg_prepared_statements' columns of each
        #: the server's named Parse statements: one namespace with sql_prepared, as in PostgreSQL
        self.protocol_statements: ProtocolStatements = NoProtocolStatements()
        self.cursors: dict[str, Any] = {}        # SQL-level cursors (commands/cursors.Cursor), by name
        self._extended: Transaction | None = None      # implicit block of the extended protocol
        self.pending: list[PendingInserts] = []        # batched INSERT Executes awaiting delivery (insert_batching.py)
        #: reported settings a failed statement's rollback put back, for on_error to report (wire name: value)
        self._restored: dict[str, str] = {}
        #: notifications received when the server gave no sink (in-process use): (sender pid, channel, payload)
        self.notifications: list[tuple[int, str, str]] = []

    # ------------------------------------------------------------ status
    @property
    def txn_status(self) -> str:
        if self.txn is None:
            return "I"
        return "E" if self.failed else "T"

    @property
    def visible_state(self):
        """The catalog a statement is planned against: its transaction
        block's, explicit or implicit (several statements of one message,
        an extended-protocol batch), else the committed one."""
        block = self.txn if self.txn is not None else self._extended
        return block.state if block is not None else self.db.committed

    def split(self, sql: str) -> list[str]:
        return list(split_statements(sql))

    def on_error(self) -> dict[str, str]:
        """A statement failed: an explicit block fails (until ROLLBACK), its
        settings SET since its last savepoint put back at once (PostgreSQL
        aborts the failing subtransaction then); the implicit block of a
        multi-statement Query or of an extended-protocol batch is rolled
        back. The reported settings put back are returned, to send as
        ParameterStatus."""
        before = reported(self.info.settings)
        restored, self._restored = self._restored, {}
        txn = self.txn
        if txn is not None and txn.implicit:
            self.txn, self.failed = None, False
            txn.rollback()
        elif txn is not None:
            self.failed = True
            txn.undo_failed_level()
        self._drop_extended()
        return {**restored, **changed_reported(self.info.settings, before)}

    def begin_query_block(self) -> None:
        """``api.EngineSession.begin_query_block``: the statements of one
        simple Query run in one implicit transaction block, as PostgreSQL
        runs them (an error rolls back them all; BEGIN makes it a block of
        its own, COMMIT ends it and the next statement opens another)."""
        if self.txn is None and self._extended is None:
            self.txn = self._implicit_txn()
            self.failed = False

    def end_query_block(self) -> dict[str, str]:
        """``api.EngineSession.end_query_block``: commit the Query's implicit
        block, if one is open; the reported settings its end put back."""
        txn = self.txn
        if txn is None or not txn.implicit:
            return {}
        self.txn = None
        before = reported(self.info.settings)
        txn.commit(sync=self.info.sync_commit)
        return changed_reported(self.info.settings, before)

    @property
    def notify_sink(self):
        """Where this session's LISTEN delivers (``api.SessionInfo.notify_sink``)."""
        sink = self.info.notify_sink
        return sink if sink is not None else (lambda pid, ch, payload: self.notifications.append((pid, ch, payload)))

    def close(self) -> None:
        ADVISORY.release_all(self.info.pid)     # session-level advisory locks end with the session
        self.db.notifier.unlisten(self.info.pid, None)
        self._drop_extended()
        if self.txn is not None:
            self.txn.rollback()
            self.txn = None

    def cursor_rows(self) -> list[tuple]:
        """pg_cursors' rows: this session's SQL-level cursors."""
        return cursor_rows(self)

    def prepared_statement_rows(self) -> list[tuple]:
        """pg_prepared_statements' rows: this session's named prepared statements."""
        return prepared_statement_rows(self)

    def declared_cursor(self, name: str) -> Result | None:
        """The materialised result of SQL-level cursor ``name`` (DECLARE), if any."""
        cur = self.cursors.get(name)
        return cur.result if cur is not None else None

    # ------------------------------------------------------------ result reuse
    def result_version(self, prepared: Prepared) -> Any:
        """A key that is equal for two executions exactly when they must return
        the same rows: the committed state's version, the continuous views'
        contents (``ContinuousView.content``: queued batches included, so a
        read applying them keeps the key; the views a view over views reads,
        transitively) and the output settings.
        None when the statement or the session state allows no such promise."""
        views = prepared.reuse_views
        if views is None or self.txn is not None or self.pending:
            return None
        ext = self.extended_txn
        if ext is not None and ext.writing:
            return None
        settings = self.info.settings
        key: list[Any] = [self.db.committed.version]
        key.extend(settings.get(k) for k in OUTPUT_SETTINGS)
        live = self.engine.streams.views
        # a view over continuous views gets no batches of its own (its version
        # never moves): the views it reads, transitively, are inputs as well
        todo, seen = list(views), set()
        while todo:
            oid = todo.pop(0)
            if oid in seen:
                continue
            seen.add(oid)
            cv = live.get(oid)
            if cv is None:
                return None
            key.append((oid, cv.content))
            if cv.windowed():       # a window's rows change as the clock moves, with no input
                key.append(cv.time_position(clock.micros(clock.now())))
            todo.extend(cv.upstream_views)
        return tuple(key)

    # ------------------------------------------------------------ extended-protocol blocks
    @property
    def extended_txn(self) -> Transaction | None:
        """The open implicit block of the extended protocol.  While batched
        inserts wait for delivery inside an explicit block it is that block,
        so the server's Sync (which calls :meth:`sync` only when this is set)
        delivers them."""
        if self._extended is None and self.pending:
            return self.txn
        return self._extended

    @extended_txn.setter
    def extended_txn(self, txn: Transaction | None) -> None:
        self._extended = txn

    @property
    def sync_pending(self) -> bool:
        """Sync has work: an implicit block is open or batched inserts wait
        for delivery (the server skips the :meth:`sync` call otherwise)."""
        return self.extended_txn is not None

    def reserve_inline_write(self, prepared: Prepared) -> bool:
        """Open the implicit block of a Bind/Execute/Sync cycle of a batched
        INSERT with the writer lock already held, if that needs no waiting:
        the lock is free, the session is idle and the commit will not flush
        the WAL to disk (an UNLOGGED table, ``synchronous_commit = off`` or
        ``fsync = off``).  The server then runs the cycle on its event-loop
        thread.  False: nothing was done; run the cycle on a worker."""
        if not prepared.inline_write or self.txn is not None or self._extended is not None \
                or self.pending or self.failed:
            return False
        if KEY_SETTING in self.info.settings:
            return False
        rel = prepared.handle.rel
        if rel.persistence != "u" and self.db.fsync and self.info.sync_commit:
            return False
        txn = self._implicit_txn()
        if not txn.try_for_write():
            return False
        self._extended = txn
        return True

    def lean_submit(self, prepared: Prepared, params: list[Any], done: Callable[[LeanOutcome], None]) -> bool:
        """``api.EngineSession.lean_submit``: hand an autocommitted
        Bind/Execute/Sync of a lean INSERT to the engine's lean path
        (executor/lean_insert.py).  Runs on the server's event-loop thread:
        only checks, never waits.  Privileges are checked here, on the
        state the statement would see; a refusal, like any other reason to
        decline, leaves the statement to the ordinary path, which raises it."""
        if not prepared.lean or self.txn is not None or self._extended is not None or self.pending \
                or self.failed:
            return False
        settings = self.info.settings
        if settings.get("default_transaction_read_only") == "on":
            return False                 # the ordinary path refuses it
        if KEY_SETTING in settings or settings.get("statement_timeout", "0") != "0":
            return False
        if prepared.planned_under and prepared.planned_under != self._plan_settings():
            return False
        rel = prepared.handle.rel
        sync = self.info.sync_commit
        if rel.kind == "r" and (rel.persistence == "u" or not self.db.fsync or not sync):
            return False            # no flush due: the inline write path serves it (reserve_inline_write)
        if prepared.ddl_version != self.db.committed.ddl_version:
            # planned before a catalog change: the plan the ordinary path made since, if any (never plan here)
            hit = self.plan_cache.get((prepared.sql, tuple(prepared.param_oids), prepared.planned_under))
            if hit is None or hit[0] != self.db.committed.ddl_version or not hit[1].lean:
                return False
            prepared = hit[1]
        target = self.engine.lean.target(prepared, settings.get("search_path"))
        if target is None:
            return False
        try:
            privileges.authorize(self.db.committed, self.info, target.stmt.needs)
        except PgError:
            return False
        if self.info.cancel_event.is_set():
            self.info.cancel_event.clear()      # a cancel that came while idle (as _run_handle does)
        return self.engine.lean.submit(target, LeanRequest(self, params, sync, done))

    def execute_deferred(self, prepared: Prepared, params: list[Any]) -> Result:
        """Execute for the extended protocol: outside an explicit transaction
        every Execute up to the next Sync forms one implicit transaction, as
        in PostgreSQL, committed by :meth:`sync` (one WAL flush per batch).
        Consecutive Executes of one prepared INSERT are only recorded and
        delivered as one batch at Sync or before the next other statement
        (see executor/insert_batching.py)."""
        prepared = self._replanned(prepared)
        stmt = prepared.handle
        pending = self.pending
        last = pending[-1] if pending else None
        if last is not None and last.stmt is stmt and not last.full and last.accepts(params):
            return Result(tag=last.add(params))
        if not self.failed and coalescible(stmt) and KEY_SETTING not in self.info.settings:
            if last is None or last.stmt is not stmt:
                last = self._open_segment(prepared)
            try:
                if not last.accepts(params):
                    # the row's own error, raised by this Execute (the block then fails as a whole)
                    self._run_handle(ProbeStmt(stmt, prepared.param_oids, params), [], [], defer_commit=True)
                if last.full:
                    self._run_handle(FlushStmt(self.pending, slab=True), [], [], defer_commit=True)
            except BaseException:
                self.pending = []
                raise
            return Result(tag=last.add(params))
        return self.execute(prepared, params, defer_commit=True)

    def execute_deferred_run(self, prepared: Prepared, columns: list[Any], n: int) -> Result | None:
        """``api.EngineSession.execute_deferred_run``: ``n`` Executes of a
        coalescible INSERT recorded as one chunk of parameter columns, when
        every row passes the checks :meth:`PendingInserts.accepts` makes
        per Execute; else None, and the server runs them one by one."""
        prepared = self._replanned(prepared)
        stmt = prepared.handle
        if self.failed or not coalescible(stmt) or KEY_SETTING in self.info.settings:
            return None
        last = self.pending[-1] if self.pending else None
        opened = last is None or last.stmt is not stmt
        if last is None or last.stmt is not stmt:
            last = self._open_segment(prepared)
        cols = last.param_columns(columns, n)
        if cols is None or not last.accepts_columns(cols):
            if opened and self.pending and self.pending[-1] is last:
                self.pending.pop()          # nothing recorded: the Executes come one by one
            return None
        last.add_columns(cols, n)
        if last.full:
            self._run_handle(FlushStmt(self.pending, slab=True), [], [], defer_commit=True)
        return Result(tag=last.tag)

    def _open_segment(self, prepared: Prepared) -> PendingInserts:
        """A new run of buffered Executes of ``prepared``: privileges are
        checked now (refused at this Execute, as PostgreSQL would, not only
        at delivery), and the implicit block opened."""
        stmt = prepared.handle
        privileges.authorize(self.visible_state, self.info, stmt.needs)
        if len(self.pending) >= MAX_SEGMENTS:
            self.flush_pending()
        if self.txn is None and self._extended is None:
            self._extended = self._implicit_txn()
        block = self.txn if self.txn is not None else self._extended
        if block is not None:
            block.refuse_write("INSERT")
        last = PendingInserts(stmt, prepared.param_oids)
        self.pending.append(last)
        return last

    def _deliver_before_commit(self) -> None:
        """Deliver batched inserts ahead of COMMIT.  If that fails the block
        ends rolled back, as a COMMIT failing on a deferred constraint does in
        PostgreSQL: the client sees the error and the session is idle."""
        try:
            self.flush_pending()
        except BaseException:
            txn, self.txn = self.txn, None
            self.failed = False
            self._drop_extended()
            if txn is not None:
                txn.rollback()
            raise

    def flush_pending(self) -> None:
        """Deliver the batched INSERT Executes (if any), all or nothing."""
        pending, self.pending = self.pending, []
        if pending:
            self._run_handle(FlushStmt(pending), [], [], defer_commit=True)

    def sync(self) -> dict[str, str]:
        try:
            self.flush_pending()
        except BaseException:
            if self.txn is not None:
                self.failed = True          # the explicit block fails, as if the Execute had failed
            raise
        txn, self._extended = self._extended, None
        if txn is None:
            return {}
        before = reported(self.info.settings)
        txn.commit(sync=self.info.sync_commit)
        return changed_reported(self.info.settings, before)     # a set_config(..., true) of the block ended

    def _drop_extended(self) -> None:
        self.pending = []
        txn, self._extended = self._extended, None
        if txn is not None:
            txn.rollback()

    # ------------------------------------------------------------ settings
    def _apply_role_settings(self) -> None:
        """ALTER ROLE / DATABASE ... SET: the session starts with them unless
        the client gave the setting (PostgreSQL's process_settings; a value
        no longer valid is skipped, where PostgreSQL warns)."""
        role = privileges.login_role(self.db.committed, self.info)
        for name, value, source in login_settings(self.db.committed, self.info.database, role):
            if name in self.info.client_settings:
                continue
            try:
                check_setting(name, value)
                self.info.settings[name] = self.reset_values[name] = normalize_setting(name, value)
                self.reset_sources[name] = source
            except PgError as e:
                log.warning("session of %s: setting %s=%s of the role or database skipped: %s", role.name, name,
                            value, e.message)

    def set_setting(self, name: str, value: str | None) -> dict[str, str]:
        name = name.lower()
        check_setting(name, value)
        if value is None:
            self.setting_sources.pop(name, None)
            value = self.reset_setting_value(name)
        else:
            self.setting_sources[name] = "session"
        value = normalize_setting(name, value)
        self.info.settings[name] = value
        if name in REPORTED:
            return {DISPLAY_NAMES.get(name, name): value}
        return {}

    def reset_setting_value(self, name: str) -> str:
        """What RESET puts ``name`` back to: the client's startup value, else
        the role's or database's, else splitstream's default, else
        PostgreSQL's boot value."""
        value = self.reset_values.get(name, DEFAULT_SETTINGS.get(name))
        if value is None:
            value = setting_values.boot_value(name) or ""
        return value

    def setting_source(self, name: str) -> str | None:
        """pg_settings.source when it is not a default: 'session' after SET,
        else where the reset value came from; None: a default."""
        return self.setting_sources.get(name) or self.reset_sources.get(name)

    def setting_notices(self, name: str) -> list[Notice]:
        """After SET or set_config(): a PipelineDB setting splitstream does not
        honour says why (settings/pipelinedb.py), never accepted silently."""
        name = name.lower()
        if not pipelinedb_gucs.known(name):
            return []
        why = pipelinedb_gucs.why_not_applied(name, self.info.settings.get(name, ""))
        return [Notice(why, "00000")] if why else []

    def _implicit_txn(self) -> Transaction:
        """The transaction of a statement outside a block, in the session's default modes."""
        txn = Transaction(self.db, implicit=True)
        begin_modes(txn, self.info.settings)
        return txn

    @staticmethod
    def _start_statement(txn: Transaction, sql: str) -> None:
        """Name the statement for a read-only refusal (refused here if it
        writes), and let a query fix the block's modes and snapshot."""
        command = command_name(sql) if sql else ""
        txn.command = command
        if txn.read_only and writes(command):
            txn.refuse_write()
        if takes_snapshot(command):
            txn.begin_query()

    def examine_setting(self, name: str, missing_ok: bool = False) -> str | None:
        """:meth:`show_setting` for SHOW and current_setting(): PostgreSQL's
        superuser-only parameters (paths, libraries, SSL details) are refused
        (42501) to a role without pg_read_all_settings' privileges, even
        with missing_ok, as PostgreSQL does."""
        key = name.lower()
        if key in SUPERUSER_ONLY and not privileges.reads_all_settings(self.visible_state, self.info):
            raise PgError(INSUFFICIENT_PRIVILEGE,
                          f'must be superuser or have privileges of pg_read_all_settings to examine "{key}"')
        return self.show_setting(name, missing_ok)

    def show_setting(self, name: str, missing_ok: bool = False) -> str | None:
        name = name.lower()
        if name == "session_authorization":
            return self.info.user
        if name in TXN_SETTINGS:         # the block's mode, else the default the next block takes
            txn = self.txn
            if txn is not None:
                value = getattr(txn, TXN_SETTINGS[name])
                return value if isinstance(value, str) else "on" if value else "off"
            return self.info.settings.get("default_" + name, "read committed" if name == "transaction_isolation" else "off")
        if name not in self.info.settings:
            boot = setting_values.boot_value(name)
            if boot is not None:
                return boot
            if missing_ok:
                return None
            raise PgError(UNDEFINED_OBJECT, f'unrecognized configuration parameter "{name}"')
        return self.info.settings[name]

    # ------------------------------------------------------------ entry points
    def execute_sql(self, sql: str) -> Result:
        try:
            lit = self._literal_insert(sql)
            if lit is not None:
                prepared, params = lit
                return self.execute(prepared, params)
            result = self.execute(self.prepare(sql, []), [])
        except PgError as e:
            raise _in_message(e, sql) from None
        txn = self.txn
        if txn is not None and txn.implicit and txn.stream_cut:
            # A continuous view goes live at its commit (stream/backfill.py): rows the
            # next statements of this Query insert must find it, as they did when each
            # statement committed alone.  So its CREATE ends the Query's implicit block.
            result.parameter_status = {**result.parameter_status, **self.end_query_block()}
        return result

    def _literal_insert(self, sql: str) -> tuple[Prepared, list[Any]] | None:
        """A one-row ``INSERT ... VALUES`` of literals as its normalised,
        cached plan and the literals' values (executor/literal_inserts.py),
        or None: plan the text as it is (which also raises the exact error
        of a statement the normalised form cannot plan)."""
        lit = _insert_literals(sql)
        if lit is None:
            return None
        try:
            prepared = self.prepare(lit.sql, lit.param_oids)
        except PgError:
            return None
        params = lit.params(prepared.param_oids, self.info.settings.get("timezone", "UTC") or "UTC")
        return (prepared, params) if params is not None else None

    def lean_submit_sql(self, sql: str, done: Callable[[LeanOutcome], None]) -> bool:
        """``api.EngineSession.lean_submit_sql``: a simple Query that is one
        INSERT of literals whose normalised plan is cached already (never
        planned here, on the event loop) goes the lean way."""
        lit = _insert_literals(sql)
        if lit is None:
            return False
        hit = self.plan_cache.get((lit.sql, tuple(lit.param_oids), self._plan_settings()))
        if hit is None or hit[0] != self.db.committed.ddl_version or not hit[1].lean:
            return False
        try:
            params = lit.params(hit[1].param_oids, self.info.settings.get("timezone", "UTC") or "UTC")
        except PgError:
            return False
        return params is not None and self.lean_submit(hit[1], params, done)

    def _plan_settings(self) -> tuple:
        s = self.info.settings
        return tuple(map(s.get, OUTPUT_SETTINGS))   # (no generator: every lean insert asks)

    def prepare(self, sql: str, param_oids: list[int]) -> Prepared:
        if self.failed:
            return self._prepare_in_failed_block(sql, param_oids)
        under = self._plan_settings()
        key = (sql, tuple(param_oids), under)
        state = self.db.committed
        if self.visible_state.ddl_version != state.ddl_version:
            # this transaction changed the catalog: plan against what it sees, and share
            # nothing (another transaction may reach the same version with other changes)
            prepared = analyze(self, sql, list(param_oids))
            prepared.planned_under = under
            return prepared
        hit = self.plan_cache.get(key)
        if hit is not None and hit[0] == state.ddl_version:
            return hit[1]

        prepared = analyze(self, sql, list(param_oids))
        prepared.planned_under = under
        prepared.ddl_version = state.ddl_version
        if len(self.plan_cache) > 1000:
            self.plan_cache.clear()
        if prepared.handle is not None and getattr(prepared.handle, "cacheable", True):
            self.plan_cache[key] = (state.ddl_version, prepared)
        return prepared

    def _prepare_in_failed_block(self, sql: str, param_oids: list[int]) -> Prepared:
        """A failed block parses a statement (a syntax error is reported as
        such) and refuses it before analysis unless it ends the block, as
        PostgreSQL's exec_simple_query and exec_parse_message do: an unknown
        table there is 25P02, not 42P01."""
        try:
            prepared = analyze(self, sql, list(param_oids))
        except PgError as e:
            if e.sqlstate == SYNTAX_ERROR:
                raise
            prepared = None
        if prepared is None or not getattr(prepared.handle, "allowed_in_failed", False):    # (or only comments)
            raise PgError(IN_FAILED_SQL_TRANSACTION,
                          "current transaction is aborted, commands ignored until end of transaction block")
        return prepared

    def _replanned(self, prepared: Prepared) -> Prepared:
        """A prepared statement planned before a change to a relation or
        function it reads, or under other plan settings (another
        search_path or role: its names may resolve to other relations), is
        planned again, as PostgreSQL's plan cache does (a column added, the
        table dropped: then its error is raised); a new plan whose rows
        have another shape is refused, as PostgreSQL refuses it for a
        prepared statement (0A000)."""
        if prepared.handle is None:
            return prepared
        if not prepared.planned_under or prepared.planned_under == self._plan_settings():
            state = self.visible_state
            if prepared.ddl_version == state.ddl_version or prepared.columns_at_run:
                return prepared
            if plan_is_current(prepared.handle, state) and not (
                    prepared.lean and prepared.ddl_version != self.db.committed.ddl_version):
                return prepared
        fresh = self.prepare(prepared.sql, prepared.param_oids)
        if not prepared.columns_at_run and _row_shape(fresh.columns) != _row_shape(prepared.columns):
            raise PgError(FEATURE_NOT_SUPPORTED, "cached plan must not change result type",
                          routine="RevalidateCachedQuery")
        return fresh

    def current_plan(self, prepared: Prepared) -> Prepared:
        """``prepared`` as it must run now (EXECUTE of a SQL-prepared statement)."""
        return self._replanned(prepared)

    def execute(self, prepared: Prepared, params: list[Any], *, defer_commit: bool = False) -> Result:
        prepared = self._replanned(prepared)
        if self.pending:
            h = prepared.handle
            kind = getattr(h, "kind", "") if getattr(h, "transaction_control", False) else ""
            if kind in ("rollback", "rollback_to"):
                self.pending = []     # rolled back before delivery: nothing of it is delivered
            elif kind == "commit":
                self._deliver_before_commit()
            else:
                self.flush_pending()    # batched inserts go first: this statement may read them
        return self._run_handle(prepared.handle, prepared.param_oids, params, defer_commit=defer_commit,
                                sql=prepared.sql)

    def _run_handle(self, stmt: Any, param_oids: list[int], params: list[Any], *, defer_commit: bool,
                    sql: str = "") -> Result:
        if self.failed and not getattr(stmt, "allowed_in_failed", False):
            raise PgError(IN_FAILED_SQL_TRANSACTION,
                          "current transaction is aborted, commands ignored until end of transaction block")
        timeout = _ms(self.info.settings.get("statement_timeout", "0"))
        self.info.deadline = time.monotonic() + timeout / 1000 if timeout > 0 else None
        if self.info.cancel_event.is_set():
            self.info.cancel_event.clear()
        try:
            if getattr(stmt, "transaction_control", False):
                if self._extended is not None and self.txn is None:
                    # BEGIN/COMMIT/ROLLBACK inside an extended batch act on its implicit block
                    self.txn, self._extended = self._extended, None
                    self.txn.implicit = False
                    if getattr(stmt, "kind", "") == "begin":
                        if stmt.modes is not None:     # the block has run a statement: as SET TRANSACTION
                            set_modes(self.txn, stmt.modes)
                        return Result(tag="BEGIN")
                return stmt.run(self, params)
            implicit = self.txn is None
            if implicit and defer_commit:
                if self._extended is None:
                    self._extended = self._implicit_txn()
                txn = self._extended
            else:
                txn = self.txn if self.txn is not None else self._implicit_txn()
            self._start_statement(txn, sql)
            ctx = ExecContext(db=self.db, txn=txn, session=self.info, params=params,
                              param_oids=param_oids, engine=self.engine, now=clock.now())
            ctx.engine_session = self
            before = reported(self.info.settings)
            try:
                result = stmt.run(self, ctx)
            except BaseException:
                if implicit:
                    was = reported(self.info.settings)
                    txn.rollback()
                    # a SET earlier in the extended batch, reported then, is put back: on_error reports it
                    self._restored.update(changed_reported(self.info.settings, was))
                    if txn is self._extended:
                        self._extended = None
                raise
            if implicit and not defer_commit:
                txn.commit(sync=self.info.sync_commit)
            result.notices = ctx.notices + result.notices
            changed = changed_reported(self.info.settings, before)   # set_config() of a reported setting
            if changed:
                result.parameter_status = {**result.parameter_status, **changed}
            return result
        finally:
            self.info.deadline = None


def _in_message(err: PgError, sql: str) -> PgError:
    """``err`` placed in the whole Query message ``sql`` came from (a
    ``Statement`` knows its offset), as PostgreSQL places it: the parser
    meets the end of a statement at its semicolon, when it has one."""
    if err.position is None or not isinstance(sql, Statement):
        return err
    if err.message == "syntax error at end of input" and sql.semicolon is not None:
        return dataclasses.replace(err, message='syntax error at or near ";"', position=sql.semicolon + 1)
    return dataclasses.replace(err, position=err.position + sql.offset) if sql.offset else err


def _row_shape(columns) -> list[tuple] | None:
    """What a result type is to PostgreSQL's equalTupleDescs: names, types, typmods."""
    return None if columns is None else [(c.name, c.type_oid, c.typmod) for c in columns]


def _insert_literals(sql: str) -> Literals | None:
    """``literal_inserts.normalise`` for a text that starts with INSERT (cheap test first)."""
    head = sql[:16].lstrip()[:6]
    return normalise(sql) if head.upper() == "INSERT" else None


_MS_CACHE: dict[str, int] = {}


def _ms(v: str) -> int:
    """statement_timeout in ms; parsed once per distinct setting text."""
    hit = _MS_CACHE.get(v)
    if hit is not None:
        return hit

    try:
        ms = parse_duration_ms(v)
    except Exception:
        ms = 0
    if len(_MS_CACHE) < 1000:
        _MS_CACHE[v] = ms
    return ms
