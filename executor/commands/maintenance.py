"""Maintenance and session-housekeeping statements: VACUUM, ANALYZE, DISCARD,
LOCK, and the refusals of the ones splitstream cannot honour (CLUSTER,
REINDEX, CREATE DATABASE, CREATE EXTENSION other than pipelinedb).

None of these is accepted and ignored.  VACUUM and ANALYZE check their tables
and VACUUM does nothing else, truthfully: table versions are immutable and
replaced whole by every change (nothing dead to reclaim).  ANALYZE (and
VACUUM ANALYZE) rebuild the tables' samples and statistics
(``table_stats``).  LOCK takes the database's writer lock, which every mode's
conflicts are contained in.
"""
from __future__ import annotations

import re

from splitstream.protocol.errors import (
    ACTIVE_SQL_TRANSACTION, DUPLICATE_OBJECT, FEATURE_NOT_SUPPORTED, LOCK_NOT_AVAILABLE, SYNTAX_ERROR, UNDEFINED_TABLE, PgError,
)

from ..api import Result
from ..execution.system_functions import ADVISORY
from ..sql.sqltext import unquote
from .base import NoopStmt, QueryStmt, Stmt
from .prepare import drop_all_prepared
from .settings import ResetStmt
from . import table_stats

_VACUUM_WORDS = {"FULL", "FREEZE", "VERBOSE", "ANALYZE", "ANALYSE"}


def _outside_block(session, what: str) -> None:
    if session.txn is not None:
        raise PgError(ACTIVE_SQL_TRANSACTION, f"{what} cannot run inside a transaction block")


def _relation(session, ctx, name: str):
    """The relation a maintenance statement names, or PostgreSQL's 42P01."""
    parts = [unquote(p) for p in name.split(".")]
    schema = parts[0] if len(parts) > 1 else None
    state = ctx.state
    for s in ([schema] if schema else _search_path(session)):
        rel = state.lookup(s, parts[-1])
        if rel is not None:
            return rel
    raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')


def _search_path(session) -> list[str]:
    sp = session.info.settings.get("search_path", "public")
    return [p.strip().strip('"') for p in sp.split(",") if p.strip() and p.strip() != '"$user"'] or ["public"]


class VacuumStmt(Stmt):
    """VACUUM / ANALYZE: the named tables must exist; there is nothing to do."""

    cacheable = False

    def __init__(self, word: str, text: str) -> None:
        self.tag = word
        rest = re.sub(r"(?is)^\s*(vacuum|analy[sz]e)\s*", "", text).strip().rstrip(";")
        opts = re.match(r"^\(([^)]*)\)\s*", rest)                 # VACUUM (VERBOSE, ANALYZE) t
        rest = rest[opts.end():] if opts else rest
        words = rest.split()
        self.analyzing = word == "ANALYZE" or bool(opts and re.search(r"(?i)\banaly[sz]e\b", opts.group(1)))
        while words and words[0].upper() in _VACUUM_WORDS:
            self.analyzing = self.analyzing or words[0].upper() in ("ANALYZE", "ANALYSE")
            words.pop(0)
        self.items = table_stats.analyze_items(" ".join(words))

    def run(self, session, ctx):
        if self.tag == "VACUUM":
            _outside_block(session, "VACUUM")
        rels = [(_relation(session, ctx, name), cols) for name, cols in self.items]
        if self.analyzing:           # a fresh sample and statistics (executor/commands/table_stats.py)
            for rel, cols in rels or [(r, None) for r in list(ctx.state.rels.values()) if r.kind == "r"]:
                table_stats.analyze(ctx, rel, cols)
        return Result(tag=self.tag)


class DiscardStmt(Stmt):
    """DISCARD ALL / PLANS / SEQUENCES / TEMP, as PostgreSQL does them (a
    pooler such as PgBouncer resets a connection with DISCARD ALL)."""

    cacheable = False

    def __init__(self, what: str) -> None:
        what = what.upper()
        if what == "TEMPORARY":
            what = "TEMP"
        if what not in ("ALL", "PLANS", "SEQUENCES", "TEMP"):
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{what or "DISCARD"}"')
        self.what = what
        self.tag = f"DISCARD {what}"

    def run(self, session, ctx) -> Result:
        changed: dict[str, str] = {}
        if self.what == "ALL":
            _outside_block(session, "DISCARD ALL")
            changed = ResetStmt("all", None).run(session, ctx).parameter_status
            drop_all_prepared(session)
            session.cursors.clear()
            ADVISORY.release_all(session.info.pid)
            ctx.txn.async_queue(session.info.pid, session.notify_sink).actions.append(("unlisten", None))  # UNLISTEN *
        if self.what in ("ALL", "PLANS"):
            session.plan_cache.clear()
        if self.what in ("ALL", "SEQUENCES"):
            for k in [k for k in session.info.settings if k.startswith(("__currval_", "__lastval"))]:
                del session.info.settings[k]
        # TEMP: there are no temporary tables (CREATE TEMP TABLE is refused), so nothing to drop
        return Result(tag=self.tag, parameter_status=changed)




def take_writer_lock(ctx, nowait: bool, busy: str) -> None:
    """The database's writer lock for the rest of the transaction; NOWAIT
    fails with 55P03 (``busy``) instead of waiting for another writer."""
    if not nowait:
        ctx.txn.for_write(ctx.check_cancel)
    elif not ctx.txn.try_for_write():
        raise PgError(LOCK_NOT_AVAILABLE, busy)


class LockingQueryStmt(QueryStmt):
    """SELECT ... FOR UPDATE / NO KEY UPDATE / SHARE / KEY SHARE: the writer
    lock is taken before the rows are read, so no other transaction changes
    them until this one ends (every row lock's promise, kept for the whole
    database).  Not a plain QueryStmt: never answered inline or reused."""

    def __init__(self, plan, nowait: bool) -> None:
        super().__init__(plan)
        self.nowait = nowait

    def run(self, session, ctx):
        take_writer_lock(ctx, self.nowait, "could not obtain lock on row in relation")
        return super().run(session, ctx)


def locking_query(plan, locks: list) -> QueryStmt:
    """The statement of a SELECT with locking clauses (sqlglot's Lock: wait
    True is NOWAIT, False is SKIP LOCKED)."""
    if any(lk.args.get("wait") is False for lk in locks):
        raise PgError(FEATURE_NOT_SUPPORTED, "SKIP LOCKED is not supported",
                      hint="Row locks are taken for the whole database, so every row would be skipped or "
                           "none; use FOR UPDATE (waits) or FOR UPDATE NOWAIT.")
    return LockingQueryStmt(plan, any(lk.args.get("wait") is True for lk in locks))


def create_extension(text: str) -> Stmt:
    """pipelinedb is built in, and plpgsql is there as in every PostgreSQL
    database: both already exist; any other extension cannot be installed."""
    m = re.match(r'(?is)^\s*create\s+extension\s+(if\s+not\s+exists\s+)?("[^"]+"|[\w-]+)', text)
    if m is None:
        raise PgError(SYNTAX_ERROR, 'syntax error at or near "EXTENSION"')
    name = unquote(m.group(2))
    if name not in ("pipelinedb", "plpgsql"):
        raise PgError(FEATURE_NOT_SUPPORTED, f'extension "{name}" is not available',
                      hint="splitstream installs no extensions; streams and continuous views (PipelineDB's "
                           "features) are built in.")
    if m.group(1):
        return NoopStmt("CREATE EXTENSION", f'extension "{name}" already exists, skipping')
    raise PgError(DUPLICATE_OBJECT, f'extension "{name}" already exists',
                  hint="Streams and continuous views are built into splitstream.")


#: statements PostgreSQL would act on and splitstream cannot: why, and what to do
REFUSED = {
    ("CREATE", "DATABASE"): "splitstream serves one database, postgres; separate objects with CREATE SCHEMA.",
    ("CLUSTER",): "Tables keep no physical order to rewrite; read them with ORDER BY.",
    ("REINDEX",): "Indexes are kept consistent with every change; there is nothing to rebuild.",
    ("CREATE", "USER", "MAPPING"): "The only foreign server is stream, which needs no user mapping.",
}


def refused(words: list[str]) -> PgError | None:
    """The 0A000 refusal of a statement in REFUSED, or None."""
    for key, hint in REFUSED.items():
        if tuple(words[: len(key)]) == key:
            return PgError(FEATURE_NOT_SUPPORTED, f"{' '.join(key)} is not supported", hint=hint)
    return None
