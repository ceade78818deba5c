"""Statement analysis: SQL text -> a prepared statement object with run().

Utility statements sqlglot does not parse (transaction control, SET/SHOW,
PREPARE/EXECUTE, CREATE FOREIGN TABLE, ...) are recognised by keyword;
everything else goes through sqlglot's PostgreSQL dialect.
"""
from __future__ import annotations

import dataclasses
import re

from sqlglot import exp

from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    AMBIGUOUS_COLUMN,
    FEATURE_NOT_SUPPORTED,
    GROUPING_ERROR,
    INDETERMINATE_DATATYPE,
    SYNTAX_ERROR,
    UNDEFINED_COLUMN,
    UNDEFINED_FUNCTION,
    UNDEFINED_TABLE,
    PgError,
)

from ..api import Prepared, ResultColumn
from ..sql.binder import is_aggregate_call
from ..sql.dialect import extension_syntax, parse_one
from .plan_facts import inline_insert, lean_insert, reusable_views, side_effect_free_query
from ..sql.planner import Planner
from ..settings import DISPLAY_NAMES
from ..sql.error_positions import name_position, pg_syntax_error, star_call_error
from ..sql.sqltext import blank_comments, first_words, split_args, strip_comments, unquote
from . import ddl, writable_cte
from .base import EmptyStmt, QueryStmt, Stmt, columns_of, remember_reads
from .copy import CopyStmt
from .cursors import cursor_statement
from .explain import ExplainStmt
from .fast_insert import fast_multirow_insert
from .notify import async_statement
from .subscribe import SubscribeStmt
from .maintenance import DiscardStmt, VacuumStmt, create_extension, locking_query, refused
from .matviews import RefreshStmt, strip_with_data
from .tables import unnamed_check
from .matviews import alter_statement as alter_matview
from .prepare import DeallocateStmt, ExecuteStmt, PrepareStmt
from .roles import CreateRoleStmt, DropRoleStmt
from .role_settings import role_setting_statement
from .grants import grant_statement
from .default_privileges import default_privileges_statement
from .functions import function_statement
from .lock import lock_statement
from .identity import add_identity_statement
from .ownership import alter_owner_statement, owned_statement
from .sequences import alter_sequence_statement
from .schemas import CheckpointStmt, foreign_table_comment
from .settings import SHOW_ALL_COLUMNS, ResetStmt, ShowStmt, parse_set
from .streams import CreateStreamStmt, create_server, foreign_table_ddl
from .transactions import TXN_SETTINGS, SetTransactionStmt, TxnModes, TxnStmt, check_transaction_modes


def analyze(session, sql: str, param_oids: list[int]) -> Prepared:
    text = strip_comments(sql)
    if not text.strip().strip(";"):
        return Prepared(sql, [], None, handle=EmptyStmt())
    words = first_words(text, 4)
    text = unnamed_check(foreign_table_comment(strip_with_data(text, words), words), words)
    try:
        stmt = _utility(session, text, words)
        if stmt is not None:
            stmt.sent_as(sql)
            _check_params_typed(param_oids, set() if "$" not in text else None)
        else:
            stmt, param_oids, referenced = _planned(session, sql, text, words, param_oids)
            _check_params_typed(param_oids, referenced)
    except PgError as e:
        raise _located(e, sql, text) from None
    cols = None
    if isinstance(stmt, QueryStmt):
        cols = columns_of(stmt.plan)
    elif hasattr(stmt, "columns"):
        cols = stmt.columns
    elif isinstance(stmt, ShowStmt):
        cols = [ResultColumn(DISPLAY_NAMES.get(stmt.name, stmt.name), type_oids.TEXT)] if stmt.name != "all" else \
            SHOW_ALL_COLUMNS
    elif isinstance(stmt, ExplainStmt):
        cols = [ResultColumn("QUERY PLAN", type_oids.TEXT)]
    typed = [o if o not in (0, type_oids.UNKNOWN) else type_oids.TEXT for o in param_oids]
    return Prepared(sql, typed, cols, handle=stmt,
                    read_only=side_effect_free_query(stmt), reuse_views=reusable_views(stmt),
                    inline_write=inline_insert(stmt), lean=lean_insert(stmt), columns_at_run=stmt.columns_at_run,
                    ends_block=stmt.allowed_in_failed)


def _check_params_typed(param_oids: list[int], referenced: set[int] | None) -> None:
    """A parameter left without a type (0 or unknown, or skipped by the
    statement: ``$2`` alone leaves ``$1``) is refused, as PostgreSQL's
    exec_parse_message and PrepareQuery refuse it; one the statement refers
    to untyped is text. ``referenced`` None: not known (a utility statement
    that may carry a query), so nothing is refused."""
    if referenced is None:
        return
    for i, oid in enumerate(param_oids):
        if oid in (0, type_oids.UNKNOWN) and i not in referenced:
            raise PgError(INDETERMINATE_DATATYPE, f"could not determine data type of parameter ${i + 1}")


def _located(err: PgError, sql: str, text: str) -> PgError:
    """``err`` with PostgreSQL's cursor position in ``sql`` (the statement as
    the client sent it; ``text`` is it without comments and outer blanks):
    a syntax error worded and placed by PostgreSQL's grammar, an unknown
    relation, column or function placed at its name (``sql/error_positions.py``)."""
    blanked = blank_comments(sql)
    if blanked.strip() != text:
        return err           # rewritten before parsing: offsets in ``text`` are not the client's
    if err.message.startswith("syntax error"):
        err = pg_syntax_error(text) or star_call_error(text) or err
    elif err.position is None and err.sqlstate in (UNDEFINED_TABLE, UNDEFINED_COLUMN, UNDEFINED_FUNCTION,
                                                   AMBIGUOUS_COLUMN, GROUPING_ERROR):
        try:
            position = name_position(parse_one(text), text, err, is_aggregate_call)
        except PgError:
            position = None
        if position is not None:
            err = dataclasses.replace(err, position=position)
    if err.position is None:
        return err
    return dataclasses.replace(err, position=err.position + len(blanked) - len(blanked.lstrip()))


_TXN = {
    ("BEGIN",): "begin", ("START", "TRANSACTION"): "begin", ("COMMIT",): "commit", ("END",): "commit",
    ("ROLLBACK",): "rollback", ("ABORT",): "rollback",
}


def _operand(text: str, keyword: str) -> str:
    """What follows a utility keyword (SHOW x, RESET x, SAVEPOINT x), or
    PostgreSQL's syntax error when nothing does or the keyword runs on
    (``SHOW4x``: first_words splits at the digit, the lexer would not)."""
    parts = text.split(None, 1)
    head = parts[0].rstrip(";") if parts else ""
    if head.upper() != keyword:
        raise PgError(SYNTAX_ERROR, f'syntax error at or near "{head}"')
    rest = parts[1].strip().rstrip(";").strip() if len(parts) > 1 else ""
    if not rest:
        raise PgError(SYNTAX_ERROR, "syntax error at end of input")
    return rest


def _utility(session, text: str, words: list[str]) -> Stmt | None:
    w0 = words[0] if words else ""
    if w0 in ("BEGIN", "START"):
        m = re.match(r"\s*(?:begin(?:\s+(?:work|transaction)\b)?|start\s+transaction\b)(.*)$", text, re.I | re.S)
        return TxnStmt("begin", modes=check_transaction_modes(m.group(1) if m else ""))
    if w0 in ("COMMIT", "END") and not (len(words) > 1 and words[1] == "PREPARED"):
        return TxnStmt("commit")
    if w0 in ("ROLLBACK", "ABORT"):
        m = re.match(r"\s*(?:rollback|abort)\s+(?:work\s+|transaction\s+)?to\s+(?:savepoint\s+)?(\S+)", text, re.I)
        if m:
            return TxnStmt("rollback_to", unquote(m.group(1).rstrip(";")), tag="ROLLBACK TO SAVEPOINT")
        return TxnStmt("rollback")
    if w0 == "SAVEPOINT":
        return TxnStmt("savepoint", unquote(_operand(text, w0)), tag="SAVEPOINT")
    if w0 == "RELEASE":
        m = re.match(r"\s*release\s+(?:savepoint\s+)?(\S+)", text, re.I)
        if m is None:
            raise PgError(SYNTAX_ERROR, "syntax error at end of input")
        return TxnStmt("release", unquote(m.group(1).rstrip(";")), tag="RELEASE SAVEPOINT")
    if w0 == "SET":
        return parse_set(text)
    if w0 == "RESET":
        name = _operand(text, w0).lower()
        if name in TXN_SETTINGS:
            return SetTransactionStmt(TxnModes(), setting=(name, None),
                                      outside="RESET TRANSACTION can only be used in transaction blocks")
        return ResetStmt(name, None)
    if w0 == "SHOW":
        name = _operand(text, w0).lower()
        name = {"time zone": "timezone", "transaction isolation level": "transaction_isolation"}.get(name, name)
        return ShowStmt(unquote(name))
    if w0 == "PREPARE" and not (len(words) > 1 and words[1] == "TRANSACTION"):
        m = re.match(r"\s*prepare\s+(\S+?)\s*(?:\((.*?)\))?\s+as\s+(.*)$", text, re.I | re.S)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error at or near \"PREPARE\"")
        types = [t.strip() for t in m.group(2).split(",")] if m.group(2) else []
        return PrepareStmt(unquote(m.group(1)), types, m.group(3), body_at=m.start(3))
    if w0 == "EXECUTE":
        m = re.match(r"\s*execute\s+([^\s(]+)\s*(?:\((.*)\))?\s*;?\s*$", text, re.I | re.S)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error at or near \"EXECUTE\"")

        args = split_args(m.group(2)) if m.group(2) else []
        return ExecuteStmt(unquote(m.group(1)), args)
    if w0 == "DEALLOCATE":
        rest = re.sub(r"(?i)^\s*deallocate\s+(prepare\s+)?", "", text).strip().rstrip(";")
        return DeallocateStmt("all" if rest.lower() == "all" else unquote(rest))
    if w0 == "DISCARD":
        return DiscardStmt(words[1] if len(words) > 1 else "")
    if w0 in ("LISTEN", "UNLISTEN", "NOTIFY"):
        return async_statement(text, w0)
    if w0 == "SUBSCRIBE":
        return SubscribeStmt(session, text)
    if w0 in ("VACUUM", "ANALYZE", "ANALYSE"):
        return VacuumStmt("VACUUM" if w0 == "VACUUM" else "ANALYZE", text)
    refusal = refused(words)
    if refusal is not None:
        raise refusal
    if w0 == "CHECKPOINT":
        return CheckpointStmt()
    if w0 == "REFRESH":
        return RefreshStmt.parse(text)
    if words[:3] == ["ALTER", "MATERIALIZED", "VIEW"] and not re.search(r"\bowner\s+to\b", text, re.I):
        return alter_matview(text)
    if w0 == "EXPLAIN":
        m = re.match(r"\s*explain\s*(\((.*?)\)|((?:analyze|verbose|costs|buffers)\s+)*)\s*(.*)$", text, re.I | re.S)
        assert m is not None  # every group of the pattern may be empty
        opts = (m.group(1) or "").lower()
        body = m.group(4)
        analyze_ = "analyze" in opts and "analyze false" not in opts and "analyze off" not in opts
        inner = analyze(session, body, []).handle
        return ExplainStmt(inner, analyze_)
    if w0 == "CREATE" and len(words) > 2 and words[1] == "FOREIGN" and words[2] == "TABLE":
        return CreateStreamStmt.parse(text)
    if w0 == "CREATE" and len(words) > 1 and words[1] == "SERVER":
        return create_server(text)
    if w0 in ("ALTER", "DROP") and len(words) > 2 and words[1] == "FOREIGN" and words[2] == "TABLE":
        owner_stmt = alter_owner_statement(text, session) if w0 == "ALTER" else None    # pg_dump's OWNER TO
        return owner_stmt if owner_stmt is not None else foreign_table_ddl(text, words)
    if w0 == "CREATE" and len(words) > 1 and words[1] in ("ROLE", "USER", "GROUP"):
        return CreateRoleStmt.parse(text, session)
    if w0 == "ALTER" and len(words) > 1 and words[1] in ("ROLE", "USER", "GROUP", "DATABASE"):
        setting = role_setting_statement(text, session)
        if setting is not None:
            return setting
        if words[1] != "DATABASE":
            return CreateRoleStmt.parse(text, session, alter=True)
    if w0 == "DROP" and len(words) > 1 and words[1] in ("ROLE", "USER", "GROUP"):
        return DropRoleStmt.parse(text)
    if len(words) > 1 and words[1] == "DATABASE" and w0 in ("CREATE", "DROP", "ALTER"):
        raise PgError(FEATURE_NOT_SUPPORTED, f"{w0} DATABASE is not supported",
                      hint="splitstream serves one database, postgres; use schemas to keep data apart.")
    if w0 == "COPY":
        return CopyStmt.parse(text)
    if w0 == "ALTER" and len(words) > 1 and words[1] == "DEFAULT":
        return default_privileges_statement(text, session)
    if _function_ddl(words):
        return function_statement(text, session)
    if w0 == "ALTER" and len(words) > 1 and words[1] == "TABLE" and "IDENTITY" in text.upper():
        identity_stmt = add_identity_statement(text)
        if identity_stmt is not None:
            return identity_stmt
    if words[:2] == ["ALTER", "SEQUENCE"]:
        seq_stmt = alter_sequence_statement(text)
        if seq_stmt is not None:
            return seq_stmt
    if w0 == "ALTER" and "OWNER" in text.upper():
        owner_stmt = alter_owner_statement(text, session)
        if owner_stmt is not None:
            return owner_stmt
    if w0 == "GRANT" or w0 == "REVOKE":
        return grant_statement(text, session)
    if w0 in ("REASSIGN", "DROP") and len(words) > 1 and words[1] == "OWNED":
        return owned_statement(text, session)
    if w0 in ("CLOSE", "FETCH", "DECLARE", "MOVE"):
        return cursor_statement(text, words)
    if w0 == "LOCK":
        return lock_statement(text)
    if w0 == "CREATE" and "EXTENSION" in words[1:2]:
        return create_extension(text)
    return None


_ROUTINES = ("FUNCTION", "PROCEDURE", "ROUTINE", "AGGREGATE")


def _function_ddl(words: list[str]) -> bool:
    """CREATE [OR REPLACE] FUNCTION / PROCEDURE, DROP / ALTER FUNCTION, CALL."""
    if not words:
        return False
    if words[0] == "CALL":
        return True
    if words[0] == "CREATE":
        rest = words[3:4] if words[1:3] == ["OR", "REPLACE"] else words[1:2]
        return bool(rest) and rest[0] in ("FUNCTION", "PROCEDURE")
    return words[0] in ("DROP", "ALTER") and len(words) > 1 and words[1] in _ROUTINES[:3]


#: statements whose every text PostgreSQL's grammar must accept (no extension of ours needs another)
_PG_GRAMMAR = frozenset({"SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "VALUES", "TABLE"})


def _planned(session, sql: str, text: str, words: list[str], param_oids: list[int]):
    state = session.visible_state
    if words and words[0] == "INSERT" and len(text) > 2000:
        planner = Planner(session.engine, state, param_oids, session=session.info)
        fast = fast_multirow_insert(session, planner, text)
        if fast is not None:
            remember_reads(fast, planner)
            return fast, planner.param_oids, planner.params_referenced
    tree = parse_one(text)
    if words and words[0] in _PG_GRAMMAR and not extension_syntax(text):
        # sqlglot reads other dialects too (INSERT ... VALUE, a trailing comma):
        # PostgreSQL's grammar has the last word on what is SQL here
        refused = pg_syntax_error(text)
        if refused is not None:
            raise refused
    planner = Planner(session.engine, state, param_oids, session=session.info)
    planner.use_columns_of(tree)
    writable_cte.allow_writes(session, planner, tree)
    if isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery)):
        if isinstance(tree, exp.Select) and tree.args.get("into") is not None:
            raise PgError(FEATURE_NOT_SUPPORTED, "SELECT INTO is not supported", hint="Use CREATE TABLE ... AS SELECT.")
        plan = planner.plan_query(tree)
        locks = tree.args.get("locks") if isinstance(tree, exp.Select) else None
        return _with_needs(locking_query(plan, locks) if locks else QueryStmt(plan), planner), planner.param_oids, planner.params_referenced
    if isinstance(tree, (exp.Insert, exp.Update, exp.Delete)):
        return _with_needs(writable_cte.dml_statement(session, planner, tree), planner), planner.param_oids, planner.params_referenced
    stmt = ddl.build(session, planner, tree, text)
    # (a definition whose query is planned when it runs has seen none of its parameters yet)
    seen = planner.params_referenced if planner.params_referenced or "$" not in text else None
    return stmt, planner.param_oids, seen


def _with_needs(stmt: Stmt, planner) -> Stmt:
    """The privileges the planner found the statement needs (checked when it
    runs), and the catalog objects its plan depends on; run after its
    data-modifying WITH queries, if it has any."""
    stmt = writable_cte.with_writes(stmt, planner)
    remember_reads(stmt, planner)
    return stmt


