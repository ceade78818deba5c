"""Statement analysis: SQL text -> a prepared statement object with run().

Utility statements sqlglot does not parse (transaction control, SET/SHOW,
PREPARE/EXECUTE, CREATE FOREIGN TABLE, ...) are recognised by keyword;
everything else goes through sqlglot's PostgreSQL dialect.
"""
from __future__ import annotations

import re

import numpy as np

import sqlglot
from sqlglot import exp

from splitstream.catalog.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    ACTIVE_SQL_TRANSACTION, DUPLICATE_PREPARED_STATEMENT, FEATURE_NOT_SUPPORTED, INVALID_SQL_STATEMENT_NAME,
    NO_ACTIVE_SQL_TRANSACTION, SYNTAX_ERROR, Notice, PgError,
)

from .plan_facts import inline_insert, reusable_views, side_effect_free_query
from . import operators
from .dialect import parse_one
from .api import Prepared, Result, ResultColumn
from .planner import Planner
from .sqltext import first_words, strip_comments
from .dialect import DIALECT


def columns_of(op: operators.Op) -> list[ResultColumn]:
    from splitstream.catalog import types as sqltypes

    return [ResultColumn(c.name, c.oid, c.typmod, sqltypes.TYPLEN.get(c.oid, -1), c.table_oid, c.attnum) for c in op.out]


class Stmt:
    cacheable = True
    transaction_control = False
    columns_at_run = False      # row shape known only when run (api.Prepared.columns_at_run)
    allowed_in_failed = False
    tag = ""

    def run(self, session, ctx) -> Result:  # pragma: no cover
        raise NotImplementedError


class QueryStmt(Stmt):
    def __init__(self, plan: operators.Op) -> None:
        self.plan = plan

    def run(self, session, ctx):
        batch = operators.run_plan(self.plan, ctx)
        if any(c.oid in _REG_TYPES for c in batch.cols):
            batch = Batch([_reg_names(c, ctx) if c.oid in _REG_TYPES else c for c in batch.cols], batch.n)
        cols = self.__dict__.get("_columns")
        if cols is None:
            cols = self._columns = columns_of(self.plan)  # fixed per plan; computed once
        return Result(tag=f"SELECT {batch.n}", columns=cols, batch=batch)


_REG_TYPES = (type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGNAMESPACE, type_oids.REGROLE, type_oids.REGPROC)


def _reg_names(col: Col, ctx) -> Col:
    """regclass & co. print as names: resolve OIDs against the catalog."""
    from splitstream.catalog import types as sqltypes

    st = ctx.state
    out = []
    for v in col.to_pylist():
        if v is None:
            out.append(None)
            continue
        v = int(v)
        name = str(v)
        if col.oid == type_oids.REGCLASS and v in st.rels:
            r = st.rels[v]
            name = r.name if r.schema in ("public", "pg_catalog") else f"{r.schema}.{r.name}"
        elif col.oid == type_oids.REGTYPE:
            name = sqltypes.format_type(v) if v in sqltypes.TYPE_NAMES else str(v)
        elif col.oid == type_oids.REGNAMESPACE:
            name = next((s.name for s in st.schemas.values() if s.oid == v), str(v))
        elif col.oid == type_oids.REGROLE:
            name = next((r.name for r in st.roles.values() if r.oid == v), str(v))
        elif col.oid == type_oids.REGPROC:
            name = "-" if v == 0 else str(v)
        out.append(name)
    arr = np.empty(len(out), dtype=object)
    arr[:] = out
    return Col(arr, col.nulls, col.oid)


class TxnStmt(Stmt):
    transaction_control = True

    def __init__(self, kind: str, name: str | None = None, tag: str = "") -> None:
        self.kind, self.name, self.tag = kind, name, tag
        self.allowed_in_failed = kind in ("rollback", "commit", "rollback_to")

    def run(self, session, params):
        from splitstream.catalog.database import Transaction

        k = self.kind
        notices = []
        if k == "begin":
            if session.txn is not None:
                notices.append(Notice("there is already a transaction in progress", ACTIVE_SQL_TRANSACTION, "WARNING"))
            else:
                session.txn = Transaction(session.db, implicit=False)
                session.failed = False
            return Result(tag="BEGIN", notices=notices)
        if k in ("commit", "rollback"):
            if session.txn is None:
                notices.append(Notice("there is no transaction in progress", NO_ACTIVE_SQL_TRANSACTION, "WARNING"))
                return Result(tag="COMMIT" if k == "commit" else "ROLLBACK", notices=notices)
            txn = session.txn
            session.txn = None
            failed = session.failed
            session.failed = False
            if k == "commit" and not failed:
                txn.commit(sync=session.info.sync_commit)
                return Result(tag="COMMIT")
            txn.rollback()
            return Result(tag="ROLLBACK")
        if session.txn is None:
            raise PgError(NO_ACTIVE_SQL_TRANSACTION, f"{self.tag} can only be used in transaction blocks")
        if k == "savepoint":
            if session.failed:
                raise PgError("25P02", "current transaction is aborted, commands ignored until end of transaction block")
            session.txn.savepoint(self.name)
            return Result(tag="SAVEPOINT")
        if k == "release":
            session.txn.release(self.name)
            return Result(tag="RELEASE")
        if k == "rollback_to":
            session.txn.rollback_to(self.name)
            session.failed = False
            return Result(tag="ROLLBACK")
        raise PgError(FEATURE_NOT_SUPPORTED, k)


class SetStmt(Stmt):
    cacheable = True

    def __init__(self, name: str, value: str | None, local: bool = False) -> None:
        self.name, self.value, self.local = name, value, local

    def run(self, session, ctx):
        changed = session.set_setting(self.name, self.value)
        return Result(tag="SET" if self.value is not None or True else "RESET", parameter_status=changed)


class ResetStmt(SetStmt):
    def run(self, session, ctx):
        if self.name == "all":
            from .engine import DEFAULT_SETTINGS

            changed = {}
            for k in list(session.info.settings):
                if k in DEFAULT_SETTINGS:
                    changed.update(session.set_setting(k, None))
            return Result(tag="RESET", parameter_status=changed)
        return Result(tag="RESET", parameter_status=session.set_setting(self.name, None))


class ShowStmt(Stmt):
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, session, ctx):
        if self.name == "all":
            items = sorted(session.info.settings.items())
            b = Batch([Col.from_pylist([k for k, _ in items], type_oids.TEXT), Col.from_pylist([v for _, v in items], type_oids.TEXT),
                       Col.from_pylist(["" for _ in items], type_oids.TEXT)], len(items))
            return Result(tag="SHOW", columns=[ResultColumn("name", type_oids.TEXT), ResultColumn("setting", type_oids.TEXT),
                                               ResultColumn("description", type_oids.TEXT)], batch=b)
        v = session.show_setting(self.name)
        from .engine import DISPLAY_NAMES

        return Result(tag="SHOW", columns=[ResultColumn(DISPLAY_NAMES.get(self.name, self.name).lower() if self.name not in DISPLAY_NAMES else DISPLAY_NAMES[self.name], type_oids.TEXT)],
                      batch=Batch([Col.from_pylist([v], type_oids.TEXT)], 1))


class NoopStmt(Stmt):
    def __init__(self, tag: str, notice: str | None = None) -> None:
        self.tag, self.notice = tag, notice

    def run(self, session, ctx):
        r = Result(tag=self.tag)
        if self.notice:
            r.notices.append(Notice(self.notice))
        return r


class PrepareStmt(Stmt):
    cacheable = False

    def __init__(self, name: str, types: list[str], body: str) -> None:
        self.name, self.types, self.body = name, types, body

    def run(self, session, ctx):
        from .binder import parse_type_name

        if self.name in session.sql_prepared:
            raise PgError(DUPLICATE_PREPARED_STATEMENT, f'prepared statement "{self.name}" already exists')
        oids = [parse_type_name(t)[0] for t in self.types]
        session.sql_prepared[self.name] = session.prepare(self.body, oids)
        return Result(tag="PREPARE")


class ExecuteStmt(Stmt):
    cacheable = False
    columns_at_run = True       # the SQL-prepared statement's rows

    def __init__(self, name: str, args: list[str]) -> None:
        self.name, self.args = name, args

    def run(self, session, ctx):
        p = session.sql_prepared.get(self.name)
        if p is None:
            raise PgError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{self.name}" does not exist')
        if len(self.args) != len(p.param_oids):
            raise PgError(SYNTAX_ERROR, f"wrong number of parameters for prepared statement \"{self.name}\"",
                          detail=f"Expected {len(p.param_oids)} parameters but got {len(self.args)}.")
        # evaluate argument expressions
        vals = []
        for a, oid in zip(self.args, p.param_oids):
            pl = Planner(session.engine, ctx.state, session=session.info)
            from .binder import ExprBinder, Scope

            e = pl.coerce(ExprBinder(pl, Scope([])).bind(sqlglot.parse_one(a, read=DIALECT)), oid or type_oids.TEXT)
            vals.append(e.eval(Batch([], 1), ctx).to_pylist()[0])
        inner_ctx = ctx
        inner_ctx.params = vals
        inner_ctx.param_oids = p.param_oids
        return p.handle.run(session, inner_ctx)


class DeallocateStmt(Stmt):
    cacheable = False

    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, session, ctx):
        if self.name == "all":
            session.sql_prepared.clear()
        elif session.sql_prepared.pop(self.name, None) is None:
            raise PgError(INVALID_SQL_STATEMENT_NAME, f'prepared statement "{self.name}" does not exist')
        return Result(tag="DEALLOCATE ALL" if self.name == "all" else "DEALLOCATE")


class ExplainStmt(Stmt):
    cacheable = False

    def __init__(self, inner: Stmt, analyze: bool) -> None:
        self.inner, self.analyze = inner, analyze

    def run(self, session, ctx):
        from .explain import explain_text

        lines = explain_text(self.inner, session, ctx, self.analyze)
        return Result(tag="EXPLAIN", columns=[ResultColumn("QUERY PLAN", type_oids.TEXT)],
                      batch=Batch([Col.from_pylist(lines, type_oids.TEXT)], len(lines)))


def _unquote(name: str) -> str:
    name = name.strip()
    if name.startswith('"') and name.endswith('"'):
        return name[1:-1].replace('""', '"')
    return name.lower()


def analyze(session, sql: str, param_oids: list[int]) -> Prepared:
    text = strip_comments(sql)
    if not text.strip().strip(";"):
        return Prepared(sql, [], None, handle=_Empty())
    words = first_words(text, 4)
    w0 = words[0] if words else ""
    stmt = _utility(session, text, words)
    if stmt is None:
        stmt, param_oids = _planned(session, sql, text, words, param_oids)
    cols = None
    if isinstance(stmt, QueryStmt):
        cols = columns_of(stmt.plan)
    elif hasattr(stmt, "columns"):
        cols = stmt.columns
    elif isinstance(stmt, ShowStmt):
        from .engine import DISPLAY_NAMES

        cols = [ResultColumn(DISPLAY_NAMES.get(stmt.name, stmt.name), type_oids.TEXT)] if stmt.name != "all" else \
            [ResultColumn("name", type_oids.TEXT), ResultColumn("setting", type_oids.TEXT), ResultColumn("description", type_oids.TEXT)]
    elif isinstance(stmt, ExplainStmt):
        cols = [ResultColumn("QUERY PLAN", type_oids.TEXT)]
    return Prepared(sql, [o if o else type_oids.TEXT for o in param_oids] if param_oids else [], cols, handle=stmt,
                    read_only=side_effect_free_query(stmt), reuse_views=reusable_views(stmt),
                    inline_write=inline_insert(stmt), columns_at_run=stmt.columns_at_run)


class _Empty(Stmt):
    def run(self, session, ctx):
        return Result(empty=True)


_TXN = {
    ("BEGIN",): "begin", ("START", "TRANSACTION"): "begin", ("COMMIT",): "commit", ("END",): "commit",
    ("ROLLBACK",): "rollback", ("ABORT",): "rollback",
}


def _utility(session, text: str, words: list[str]) -> Stmt | None:
    w0 = words[0] if words else ""
    if w0 in ("BEGIN", "START"):
        return TxnStmt("begin")
    if w0 in ("COMMIT", "END") and not (len(words) > 1 and words[1] == "PREPARED"):
        return TxnStmt("commit")
    if w0 in ("ROLLBACK", "ABORT"):
        m = re.match(r"\s*(?:rollback|abort)\s+(?:work\s+|transaction\s+)?to\s+(?:savepoint\s+)?(\S+)", text, re.I)
        if m:
            return TxnStmt("rollback_to", _unquote(m.group(1).rstrip(";")), tag="ROLLBACK TO SAVEPOINT")
        return TxnStmt("rollback")
    if w0 == "SAVEPOINT":
        return TxnStmt("savepoint", _unquote(text.split()[1].rstrip(";")), tag="SAVEPOINT")
    if w0 == "RELEASE":
        m = re.match(r"\s*release\s+(?:savepoint\s+)?(\S+)", text, re.I)
        return TxnStmt("release", _unquote(m.group(1).rstrip(";")), tag="RELEASE SAVEPOINT")
    if w0 == "SET":
        return _parse_set(text)
    if w0 == "RESET":
        name = text.split(None, 1)[1].strip().rstrip(";").lower()
        return ResetStmt(name, None)
    if w0 == "SHOW":
        name = text.split(None, 1)[1].strip().rstrip(";").strip().lower()
        name = {"time zone": "timezone", "transaction isolation level": "transaction_isolation"}.get(name, name)
        return ShowStmt(_unquote(name))
    if w0 == "PREPARE" and not (len(words) > 1 and words[1] == "TRANSACTION"):
        m = re.match(r"\s*prepare\s+(\S+?)\s*(?:\((.*?)\))?\s+as\s+(.*)$", text, re.I | re.S)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error at or near \"PREPARE\"")
        types = [t.strip() for t in m.group(2).split(",")] if m.group(2) else []
        return PrepareStmt(_unquote(m.group(1)), types, m.group(3))
    if w0 == "EXECUTE":
        m = re.match(r"\s*execute\s+([^\s(]+)\s*(?:\((.*)\))?\s*;?\s*$", text, re.I | re.S)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error at or near \"EXECUTE\"")

        args = _split_args(m.group(2)) if m.group(2) else []
        return ExecuteStmt(_unquote(m.group(1)), args)
    if w0 == "DEALLOCATE":
        rest = re.sub(r"(?i)^\s*deallocate\s+(prepare\s+)?", "", text).strip().rstrip(";")
        return DeallocateStmt("all" if rest.lower() == "all" else _unquote(rest))
    if w0 in ("DISCARD",):
        session.sql_prepared.clear()
        return NoopStmt("DISCARD " + (words[1] if len(words) > 1 else "ALL"))
    if w0 in ("LISTEN", "UNLISTEN", "NOTIFY"):
        return NoopStmt(w0)
    if w0 in ("VACUUM", "ANALYZE"):
        return NoopStmt(w0)
    if w0 == "CHECKPOINT":
        class _Ckpt(Stmt):
            def run(self, session, ctx):
                session.db.checkpoint()
                return Result(tag="CHECKPOINT")

        return _Ckpt()
    if w0 == "EXPLAIN":
        m = re.match(r"\s*explain\s*(\((.*?)\)|((?:analyze|verbose|costs|buffers)\s+)*)\s*(.*)$", text, re.I | re.S)
        opts = (m.group(1) or "").lower()
        body = m.group(4)
        analyze_ = "analyze" in opts and "analyze false" not in opts and "analyze off" not in opts
        inner = analyze(session, body, []).handle
        return ExplainStmt(inner, analyze_)
    if w0 == "CREATE" and len(words) > 2 and words[1] == "FOREIGN" and words[2] == "TABLE":
        from .ddl import CreateStreamStmt

        return CreateStreamStmt.parse(text)
    if w0 == "CREATE" and len(words) > 1 and words[1] == "SERVER":
        from .ddl import create_server

        return create_server(text)
    if w0 in ("ALTER", "DROP") and len(words) > 2 and words[1] == "FOREIGN" and words[2] == "TABLE":
        from .ddl import foreign_table_ddl

        return foreign_table_ddl(text, words)
    if w0 == "CREATE" and ("ROLE" in words[1:3] or "USER" in words[1:2]):
        from .ddl import CreateRoleStmt

        return CreateRoleStmt.parse(text)
    if w0 == "ALTER" and len(words) > 1 and words[1] in ("ROLE", "USER"):
        from .ddl import CreateRoleStmt

        return CreateRoleStmt.parse(text, alter=True)
    if w0 == "DROP" and len(words) > 1 and words[1] in ("ROLE", "USER"):
        from .ddl import DropRoleStmt

        return DropRoleStmt.parse(text)
    if w0 == "CREATE" and len(words) > 1 and words[1] == "DATABASE":
        return NoopStmt("CREATE DATABASE")
    if w0 == "COPY":
        from .copy import CopyStmt

        return CopyStmt.parse(text)
    if w0 == "GRANT" or w0 == "REVOKE":
        return NoopStmt(w0)
    if w0 in ("CLOSE", "FETCH", "DECLARE", "MOVE"):
        from .cursors import cursor_statement

        return cursor_statement(text, words)
    if w0 == "LOCK":
        return NoopStmt("LOCK TABLE")
    if w0 == "CREATE" and "EXTENSION" in words[1:2]:
        return NoopStmt("CREATE EXTENSION")
    return None


def _split_args(s: str) -> list[str]:
    out, depth, buf, q = [], 0, [], None
    for ch in s:
        if q:
            buf.append(ch)
            if ch == q:
                q = None
            continue
        if ch in "'\"":
            q = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    if "".join(buf).strip():
        out.append("".join(buf).strip())
    return out


def _parse_set(text: str) -> Stmt:
    m = re.match(r"\s*set\s+(session\s+|local\s+)?(.*?)\s*;?\s*$", text, re.I | re.S)
    rest = m.group(2)
    local = bool(m.group(1) and m.group(1).strip().lower() == "local")
    low = rest.lower()
    if low.startswith("time zone"):
        v = rest[9:].strip()
        if v.lower() in ("local", "default"):
            return SetStmt("timezone", None)
        return SetStmt("timezone", _setval(v))
    if low.startswith("transaction") or low.startswith("session characteristics") or low.startswith("characteristics"):
        return NoopStmt("SET")
    if low.startswith("names"):
        return SetStmt("client_encoding", _setval(rest[5:].strip()))
    if low.startswith("session authorization") or low.startswith("role"):
        return NoopStmt("SET")
    mm = re.match(r"([A-Za-z_][\w.]*)\s*(?:=|\bto\b)\s*(.*)$", rest, re.I | re.S)
    if not mm:
        raise PgError(SYNTAX_ERROR, f'syntax error at or near "{rest.split()[0] if rest.split() else "SET"}"')
    name = mm.group(1).lower()
    v = mm.group(2).strip()
    if v.lower() == "default":
        return SetStmt(name, None)
    return SetStmt(name, _setval(v))


def _setval(v: str) -> str:
    parts = _split_args(v)
    out = []
    for p in parts:
        p = p.strip()
        if p.startswith("'") and p.endswith("'"):
            p = p[1:-1].replace("''", "'")
        elif p.startswith('"') and p.endswith('"'):
            p = p[1:-1]
        out.append(p)
    return ", ".join(out)


def _planned(session, sql: str, text: str, words: list[str], param_oids: list[int]):
    from . import ddl, dml

    state = session.db.committed if session.txn is None else session.txn.state
    if words and words[0] == "INSERT" and len(text) > 2000:
        from .fast_insert import fast_multirow_insert

        planner = Planner(session.engine, state, param_oids, session=session.info)
        fast = fast_multirow_insert(session, planner, text)
        if fast is not None:
            return fast, planner.param_oids
    tree = parse_one(text)
    planner = Planner(session.engine, state, param_oids, session=session.info)
    if isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery)):
        if isinstance(tree, exp.Select) and tree.args.get("into") is not None:
            raise PgError(FEATURE_NOT_SUPPORTED, "SELECT INTO is not supported", hint="Use CREATE TABLE ... AS SELECT.")
        plan = planner.plan_query(tree)
        stmt = QueryStmt(plan)
        stmt.planner = planner
        return stmt, planner.param_oids
    if isinstance(tree, exp.Insert):
        return dml.InsertStmt.build(session, planner, tree), planner.param_oids
    if isinstance(tree, exp.Update):
        return dml.UpdateStmt.build(session, planner, tree), planner.param_oids
    if isinstance(tree, exp.Delete):
        return dml.DeleteStmt.build(session, planner, tree), planner.param_oids
    stmt = ddl.build(session, planner, tree, text)
    return stmt, planner.param_oids
