"""INSERT, UPDATE and DELETE on tables (and INSERT into streams).

Rows are built column-wise: the source (VALUES or a query) is planned and
run as a batch, coerced to the target columns, defaults filled, then
constraints checked on whole columns before anything is applied.
"""
from __future__ import annotations

import numpy as np
import sqlglot
from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.objects.model import ColumnDef, Constraint, Relation
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    CARDINALITY_VIOLATION,
    CHECK_VIOLATION,
    FEATURE_NOT_SUPPORTED,
    FOREIGN_KEY_VIOLATION,
    NOT_NULL_VIOLATION,
    SYNTAX_ERROR,
    UNDEFINED_COLUMN,
    UNDEFINED_TABLE,
    UNIQUE_VIOLATION,
    WRONG_OBJECT_TYPE,
    PgError,
)
from splitstream.protocol.types import encode_text

from ..execution import expr, operators
from ..api import Result
from ..sql.binder import ExprBinder, Scope, ScopeCol, ident, referenced_names
from ..sql.dialect import DIALECT
from ..sql.planner import Planner, expr_name, split_conjuncts
from ..sql.planner.base import KEEP_UNKNOWNS
from .base import Stmt, result_columns


def _target_rows(stmt, ctx) -> tuple[Batch, np.ndarray, int]:
    """UPDATE and DELETE: authorized, holding the writer lock, the target rows
    (each once), their positions and the relation's column count."""
    stmt.authorize(ctx)
    ctx.txn.for_write(ctx.check_cancel)
    b = operators.run_plan(stmt.plan, ctx)
    ncol = len(stmt.rel.live_columns)
    b, pos = _once_per_row(b, ncol)
    if ctx.snapshot is not None and b.n:
        # data-modifying WITH: the rows were read at the statement's snapshot; one an earlier part
        # of the statement already updated or deleted is left alone, as PostgreSQL does
        live = np.isin(pos, ctx.txn.state.data[stmt.rel.oid].scan()[1])
        if not live.all():
            b = b.filter(live)
            pos = pos[live]
    return b, pos, ncol


def _target(planner, node) -> tuple[Relation, str]:
    table = node.this if isinstance(node, exp.Schema) else node
    if not isinstance(table, exp.Table) or isinstance(table.this, exp.Parameter):
        # DELETE $1, DELETE t (no FROM), UPDATE $1 ...: no table name where one must be
        tables = node.args.get("tables") if isinstance(node, exp.Delete) else None
        where = table if isinstance(table, exp.Table) else (tables[0] if tables else None)
        near = where.sql(dialect=DIALECT) if where is not None else "DELETE"
        raise PgError("42601", f'syntax error at or near "{near}"')
    schema = ident(table.args.get("db")) if table.args.get("db") else None
    name = ident(table.this)
    rel = planner.lookup_relation(name, schema)
    if rel is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
    if rel.materialized:
        raise PgError(WRONG_OBJECT_TYPE, f'cannot change materialized view "{rel.name}"')
    alias = ident(table.args["alias"].this) if table.args.get("alias") is not None else name
    return rel, alias


def eval_default(session, ctx, col, n: int) -> Col:
    pl = Planner(session.engine, ctx.state, session=session.info)
    e = pl.coerce(ExprBinder(pl, Scope([])).bind(sqlglot.parse_one(col.default, read=DIALECT)), col.type_oid, col.typmod)
    if isinstance(e, expr.Const):
        return Col.const(e.value, col.type_oid, n)
    parts = [e.eval(Batch([], 1), ctx) for _ in range(n)] if getattr(e, "volatile", False) or _volatile(e) else None
    if parts is not None:
        return Col.concat(parts) if parts else Col(sqltypes.empty(col.type_oid, 0), None, col.type_oid)
    c = e.eval(Batch([], 1), ctx)
    v = c.to_pylist()[0]
    return Col.const(v, col.type_oid, n)


def _volatile(e) -> bool:
    return any(isinstance(x, expr.Func) and x.volatile for x in e.walk())


def returning_plan(planner, rel: Relation, alias: str, items, extra_scope: Scope | None = None):
    cols = [ScopeCol(alias, c.name, c.type_oid, c.typmod) for c in rel.live_columns]
    scope = Scope(cols)
    if extra_scope is not None:
        scope = Scope(cols + extra_scope.cols)
    b = ExprBinder(planner, scope, context="RETURNING")

    exprs, out = [], []
    source = operators.table_columns(rel)
    for it in planner.expand_star(items, scope):
        e = b.bind(it.this if isinstance(it, exp.Alias) else it)
        if e.oid == type_oids.UNKNOWN:
            e = planner.coerce(e, type_oids.TEXT)
        exprs.append(e)
        out.append(operators.carried(expr_name(it), e, source))
    return exprs, out


class DMLStmt(Stmt):
    cacheable = True
    rel: Relation
    ret: tuple[list[expr.Expr], list[operators.OutCol]] | None   # RETURNING: bound expressions, output columns

    def returning_result(self, ctx, tag, batch: Batch | None) -> Result:
        if self.ret is None:
            return Result(tag=tag)
        exprs, out = self.ret
        b = batch if batch is not None else Batch.empty([])
        cols = [e.eval(b, ctx) for e in exprs]
        rb = Batch(cols, b.n)
        return Result(tag=tag, columns=result_columns(out), batch=rb)

    @property
    def columns(self):
        if self.ret is None:
            return None
        return result_columns(self.ret[1])


# ------------------------------------------------------------------ INSERT

class InsertStmt(DMLStmt):
    targets: list[ColumnDef]                    # the columns the source supplies, in its order
    default_values: bool                        # DEFAULT VALUES (or no source at all)
    source: operators.Op | None                 # INSERT ... SELECT
    rows: list[list[expr.Expr | None]] | None   # VALUES, bound; None items are DEFAULT
    # ON CONFLICT: (arbiter constraint, DO NOTHING, DO UPDATE SET (column index, value), WHERE)
    conflict: tuple[Constraint | None, bool, list[tuple[int, expr.Expr]] | None, expr.Expr | None] | None
    const_batch: Batch | None = None            # all-integer VALUES (fast_insert.int_rows)

    @staticmethod
    def build(session, planner, tree: exp.Insert) -> "InsertStmt":
        first_need = len(planner.needs)     # the target's needs come first, as its range-table entry does
        s = InsertStmt()
        rel, alias = _target(planner, tree.this if tree.this is not False else tree)
        if rel.kind == "v":
            raise PgError(FEATURE_NOT_SUPPORTED if not rel.continuous else WRONG_OBJECT_TYPE,
                          f'cannot insert into view "{rel.name}"',
                          hint="Views over streams are continuous views; insert into their stream instead." if rel.continuous else
                          "Views that do not select from a single table or view are not automatically updatable.")
        if rel.kind not in ("r", "f"):
            raise PgError(WRONG_OBJECT_TYPE, f'cannot insert into "{rel.name}"')
        s.rel = rel
        if tree.args.get("returning") is not None:
            planner.need("r", rel.oid, columns=planner.used_columns(rel))
        conflict = tree.args.get("conflict")
        if conflict is not None and "UPDATE" in str(conflict.args.get("action") or "").upper():
            planner.need("w", rel.oid, columns=planner.used_columns(rel))
            planner.need("r", rel.oid, columns=planner.used_columns(rel))
        live = [c for c in rel.live_columns if not c.hidden]
        if isinstance(tree.this, exp.Schema) and tree.this.expressions:
            names = [ident(e) for e in tree.this.expressions]
            targets: list[ColumnDef] = []
            for nm in names:
                named = rel.column(nm)
                if named is None or named.hidden:
                    raise PgError(UNDEFINED_COLUMN, f'column "{nm}" of relation "{rel.name}" does not exist')
                targets.append(named)
            if len(set(names)) != len(names):
                raise PgError("42701", f'column "{names[0]}" specified more than once')
        else:
            targets = live
        s.targets = targets
        src = tree.expression
        s.default_values = tree.args.get("default") or src is None
        s.source = None
        if not s.default_values:
            if isinstance(src, exp.Values):
                rows: list[list[expr.Expr | None]] = []
                b = ExprBinder(planner, Scope([]), context="VALUES")
                for t in src.expressions:
                    items = t.expressions if isinstance(t, exp.Tuple) else [t]
                    if len(items) > len(targets):
                        raise PgError(SYNTAX_ERROR, "INSERT has more expressions than target columns")
                    if len(items) < len(targets) and not isinstance(tree.this, exp.Schema):
                        pass
                    elif len(items) < len(targets):
                        raise PgError(SYNTAX_ERROR, "INSERT has more target columns than expressions")
                    row: list[expr.Expr | None] = []
                    for it, col in zip(items, targets):
                        if isinstance(it, (exp.Var, exp.Column)) and it.name.upper() == "DEFAULT" and not isinstance(it, exp.Column) or \
                                (isinstance(it, exp.Column) and it.name.upper() == "DEFAULT" and not it.args.get("table") and not (isinstance(it.this, exp.Identifier) and it.this.quoted)):
                            row.append(None)
                        else:
                            e = b.bind(it)
                            row.append(planner.coerce(e, col.type_oid, col.typmod) if e.oid in (type_oids.UNKNOWN,) or isinstance(e, expr.Param) else e)
                    rows.append(row)
                ntarget = len(rows[0]) if rows else len(targets)
                s.targets = targets[:ntarget]
                s.rows = rows
            else:
                if isinstance(src, exp.Select):         # INSERT ... SELECT NULL: the NULL takes the column's type
                    src.meta[KEEP_UNKNOWNS] = True
                plan = planner.plan_query(src)
                if len(plan.out) > len(targets):
                    raise PgError(SYNTAX_ERROR, "INSERT has more expressions than target columns")
                s.source = plan
                s.targets = targets[: len(plan.out)]
                s.rows = None
        # INSERT on the columns given values (DEFAULT VALUES gives none: any column's will do)
        planner.need("a", rel.oid, columns=frozenset(c.name for c in ([] if s.default_values else s.targets)))
        planner.needs.insert(first_need, planner.needs.pop())
        conflict = tree.args.get("conflict")
        s.conflict = None
        if conflict is not None:
            if rel.kind == "f":
                raise PgError(FEATURE_NOT_SUPPORTED, "ON CONFLICT is not supported on streams")
            s.conflict = _plan_conflict(planner, rel, alias, conflict)
        ret = tree.args.get("returning")
        s.ret = returning_plan(planner, rel, alias, ret.expressions) if ret is not None else None
        if rel.kind == "f" and s.ret is not None:
            raise PgError(FEATURE_NOT_SUPPORTED, "RETURNING is not supported for inserts into streams")
        return s

    def _source_batch(self, session, ctx) -> Batch:
        if self.default_values:
            return Batch([], 1)
        if self.const_batch is not None:
            return self.const_batch        # all-integer VALUES (fast_insert.int_rows)
        if self.rows is None:
            assert self.source is not None  # neither DEFAULT VALUES nor VALUES: a query
            return operators.run_plan(self.source, ctx)
        one = Batch([], 1)
        cols = []
        n = len(self.rows)
        for j, col in enumerate(self.targets):
            exprs = [r[j] for r in self.rows]
            consts = [e for e in exprs if isinstance(e, expr.Const)]
            if len(consts) == len(exprs) and n > 1:
                vals = [e.value for e in consts]
                oids = {e.oid for e in consts if e.value is not None}
                oid = oids.pop() if len(oids) == 1 else None
                if oid is not None:
                    cols.append(Col.from_pylist(vals, oid))
                    continue
            evaluated: list[Col | None] = []
            for e in exprs:
                if e is None:
                    evaluated.append(None)
                else:
                    evaluated.append(e.eval(one, ctx))
            parts: list[Col] = []
            if any(p is None for p in evaluated):
                for p in evaluated:
                    if p is None:
                        p = eval_default(session, ctx, col, 1) if col.default else Col(sqltypes.empty(col.type_oid, 1), np.ones(1, bool), col.type_oid)
                    parts.append(p if p.oid == col.type_oid else sqltypes.cast_col(p, col.type_oid, col.typmod, explicit=False))
            else:
                parts = [p for p in evaluated if p is not None]  # (all are)
                # each row's value gets the assignment cast on its own (100 and 50.5 in one
                # numeric column must not be merged as integers first)
                if any(p.oid != parts[0].oid for p in parts):
                    parts = [p if p.oid == col.type_oid else sqltypes.cast_col(p, col.type_oid, col.typmod, explicit=False)
                             for p in parts]
            cols.append(Col.concat(parts))
        return Batch(cols, n)

    def run(self, session, ctx):
        self.authorize(ctx)
        src = self._source_batch(session, ctx)
        full = build_rows(session, ctx, self.rel, self.targets if not self.default_values else [], src, insert=True)
        if self.rel.kind == "f":
            n = session.engine.streams.insert(ctx, self.rel, full)
            return Result(tag=f"INSERT 0 {n}")
        if self.conflict is not None:
            full, updated = apply_conflict(session, ctx, self.rel, full, self.conflict)
            n = insert_batch(session, ctx, self.rel, full) if full.n else 0
            out = Batch.concat([b for b in (full, updated) if b is not None and b.n], [c.type_oid for c in self.rel.live_columns])
            return self.returning_result(ctx, f"INSERT 0 {full.n + (updated.n if updated is not None else 0)}", out if self.ret else None)
        insert_batch(session, ctx, self.rel, full)
        return self.returning_result(ctx, f"INSERT 0 {full.n}", full)


def build_rows(session, ctx, rel: Relation, targets, src: Batch, *, insert: bool = False) -> Batch:
    """Full-width rows for ``rel`` from ``src`` (columns for ``targets``).
    An INSERT (``insert``) may not give a GENERATED ALWAYS identity column a
    value; COPY FROM may, as in PostgreSQL (pg_dump's data restores so)."""
    n = src.n
    cols = []
    by_name = {c.name: i for i, c in enumerate(targets)}
    for col in rel.live_columns:
        if col.hidden:
            cols.append(Col.const(ctx.now, type_oids.TIMESTAMPTZ, n))
            continue
        i = by_name.get(col.name)
        if i is not None:
            c = src.cols[i]
            if insert and col.identity == "a":
                raise PgError("428C9", f'cannot insert a non-DEFAULT value into column "{col.name}"',
                              detail=f'Column "{col.name}" is an identity column defined as GENERATED ALWAYS.',
                              hint="Use OVERRIDING SYSTEM VALUE to override.")
            if c.oid != col.type_oid or col.typmod >= 0:
                if not sqltypes.can_assign(c.oid, col.type_oid):
                    raise PgError("42804", f'column "{col.name}" is of type {sqltypes.format_type(col.type_oid)} but expression is of type {sqltypes.format_type(c.oid)}',
                                  hint="You will need to rewrite or cast the expression.")
                c = sqltypes.cast_col(c, col.type_oid, col.typmod, explicit=False)
            cols.append(c)
        elif col.default is not None:
            cols.append(eval_default(session, ctx, col, n))
        else:
            cols.append(Col(sqltypes.empty(col.type_oid, n), np.ones(n, bool), col.type_oid))
    return Batch(cols, n)


def _failing_row(batch: Batch, i: int) -> str:
    vals = []
    for c in batch.cols:
        v = c.to_pylist()[i] if len(c) > i else None
        vals.append("null" if v is None else encode_text(c.oid, v).decode())
    return "Failing row contains (" + ", ".join(vals) + ")."


def check_constraints(session, ctx, rel: Relation, rows: Batch, exclude_positions=None) -> None:
    live = [c for c in rel.live_columns]
    visible = Batch([c for c, d in zip(rows.cols, live) if not d.hidden], rows.n)
    for j, col in enumerate(live):
        if col.not_null and (nulls := rows.cols[j].nulls) is not None:
            i = int(np.flatnonzero(nulls)[0])
            raise PgError(NOT_NULL_VIOLATION, f'null value in column "{col.name}" of relation "{rel.name}" violates not-null constraint',
                          detail=_failing_row(visible, i))
    for con in rel.constraints:
        if con.kind == "c":
            check = _check_expr(session, ctx, rel, con.check_sql)
            c = check.eval(rows, ctx)
            bad = ~c.data.astype(bool) & ~c.null_mask()
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise PgError(CHECK_VIOLATION, f'new row for relation "{rel.name}" violates check constraint "{con.name}"',
                              detail=_failing_row(visible, i))
        elif con.kind in ("p", "u"):
            _check_unique(session, ctx, rel, con, rows, exclude_positions)
        elif con.kind == "f":
            _check_fk(session, ctx, rel, con, rows)


_CHECK_CACHE: dict = {}


def check_expression(session, ctx, rel, sql):
    """A CHECK constraint's expression bound over ``rel``'s live columns (cached)."""
    return _check_expr(session, ctx, rel, sql)


def _check_expr(session, ctx, rel, sql):
    key = (rel.oid, tuple(c.name for c in rel.live_columns), sql)
    e = _CHECK_CACHE.get(key)
    if e is None:
        pl = Planner(session.engine, ctx.state, session=session.info)
        scope = Scope([ScopeCol(rel.name, c.name, c.type_oid, c.typmod) for c in rel.live_columns])
        e = pl.coerce(ExprBinder(pl, scope).bind(sqlglot.parse_one(sql, read=DIALECT)), type_oids.BOOL)
        _CHECK_CACHE[key] = e
    return e


def _key_tuples(rows: Batch, idxs: list[int]) -> list[tuple]:
    lists = [rows.cols[i].to_pylist() for i in idxs]
    return list(zip(*lists))


def _fmt_key(cols: tuple, key: tuple, oids: list[int]) -> str:
    return f"Key ({', '.join(cols)})=({', '.join('null' if v is None else encode_text(o, v).decode() for v, o in zip(key, oids))})"


class UniqueIndex:
    """Key -> row position for one unique constraint, for the writer only.

    It reflects exactly one TableVersion; any other version (after a
    rollback, or another writer's commit) triggers a rebuild.
    """

    def __init__(self) -> None:
        self.version = None
        self.keys: dict = {}

    def sync(self, tv, idxs: list[int]) -> None:
        if self.version is tv:
            return
        b, pos = tv.scan()
        self.keys = {}
        for k, p in zip(_key_tuples(b, idxs), pos.tolist()):
            if None not in k:
                self.keys[k] = p
        self.version = tv


def _unique_index(session, rel, con) -> UniqueIndex:
    key = (rel.oid, con.name)
    idx = session.engine.unique_indexes.get(key)
    if idx is None:
        idx = session.engine.unique_indexes[key] = UniqueIndex()
    return idx


def _check_unique(session, ctx, rel, con, rows: Batch, exclude_positions) -> None:
    idxs = [rel.column_index(c) for c in con.columns]
    tv = ctx.txn.state.data[rel.oid]
    ui = _unique_index(session, rel, con)
    ui.sync(tv, idxs)
    excl = set(exclude_positions.tolist()) if exclude_positions is not None else set()
    seen = set()
    oids = [rel.live_columns[i].type_oid for i in idxs]
    for k in _key_tuples(rows, idxs):
        if None in k:
            continue
        p = ui.keys.get(k)
        if (p is not None and p not in excl) or k in seen:
            raise PgError(UNIQUE_VIOLATION, f'duplicate key value violates unique constraint "{con.name}"',
                          detail=f"{_fmt_key(con.columns, k, oids)} already exists.")
        seen.add(k)


def check_unique_existing(session, ctx, rel, cols, name) -> None:
    tv = ctx.txn.state.data.get(rel.oid)
    if tv is None:
        return
    b, _ = tv.scan()
    idxs = [rel.column_index(c) for c in cols]
    seen = set()
    for k in _key_tuples(b, idxs):
        if None in k:
            continue
        if k in seen:
            raise PgError(UNIQUE_VIOLATION, f'could not create unique index "{name}"',
                          detail=f"{_fmt_key(tuple(cols), k, [rel.live_columns[i].type_oid for i in idxs])} is duplicated.")
        seen.add(k)


def _check_fk(session, ctx, rel, con, rows: Batch) -> None:
    parent = ctx.txn.state.rels.get(con.ref_table)
    if parent is None:
        return
    idxs = [rel.column_index(c) for c in con.columns]
    keys = [k for k in _key_tuples(rows, idxs) if None not in k]
    if not keys:
        return
    pb, _ = ctx.txn.state.data[parent.oid].scan()
    pidx = [parent.column_index(c) for c in con.ref_columns]
    pkeys = set(_key_tuples(pb, pidx))
    if parent.oid == rel.oid:
        pkeys |= set(_key_tuples(rows, pidx))
    for k in keys:
        if k not in pkeys:
            raise PgError(FOREIGN_KEY_VIOLATION, f'insert or update on table "{rel.name}" violates foreign key constraint "{con.name}"',
                          detail=f'{_fmt_key(con.columns, k, [rel.live_columns[i].type_oid for i in idxs])} is not present in table "{parent.name}".')


def insert_batch(session, ctx, rel: Relation, rows: Batch) -> int:
    if rows.n == 0:
        return 0
    ctx.txn.for_write(ctx.check_cancel)
    check_constraints(session, ctx, rel, rows)
    tv_before = ctx.txn.state.data[rel.oid]
    base = tv_before.n_total
    ctx.txn.apply(("insert", rel.oid, [(c.data, c.nulls) for c in rows.cols]))
    tv_after = ctx.txn.state.data[rel.oid]
    for con in rel.constraints:
        if con.kind in ("p", "u"):
            ui = _unique_index(session, rel, con)
            if ui.version is tv_before:
                idxs = [rel.column_index(c) for c in con.columns]
                for j, k in enumerate(_key_tuples(rows, idxs)):
                    if None not in k:
                        ui.keys[k] = base + j
                ui.version = tv_after
    return rows.n


# ------------------------------------------------------------------ ON CONFLICT

def _plan_conflict(planner, rel, alias, conflict):
    action = conflict.args.get("action")
    do_nothing = bool(conflict.args.get("nothing")) or (action is not None and "NOTHING" in str(action).upper())
    keys = conflict.args.get("conflict_keys") or []
    key_cols = tuple(ident(k.this) if isinstance(k, exp.Column) else ident(k) for k in keys)
    con = None
    for c in rel.constraints:
        if c.kind in ("p", "u") and (not key_cols or tuple(c.columns) == key_cols or set(c.columns) == set(key_cols)):
            con = c
            break
    if con is None and (key_cols or not do_nothing):
        raise PgError("42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification")
    sets = None
    where = None
    if not do_nothing:
        cols = [ScopeCol(alias, c.name, c.type_oid, c.typmod) for c in rel.live_columns]
        cols += [ScopeCol("excluded", c.name, c.type_oid, c.typmod) for c in rel.live_columns]
        scope = Scope(cols)
        b = ExprBinder(planner, scope, context="ON CONFLICT")
        sets = []
        for e in conflict.args.get("expressions") or []:
            name = ident(e.this.this) if isinstance(e.this, exp.Column) else ident(e.this)
            col = rel.column(name)
            if col is None:
                raise PgError(UNDEFINED_COLUMN, f'column "{name}" of relation "{rel.name}" does not exist')
            sets.append((rel.column_index(name), planner.coerce(b.bind(e.expression), col.type_oid, col.typmod)))
        w = conflict.args.get("where")
        if w is not None:
            where = planner.coerce(b.bind(w.this), type_oids.BOOL)
    return (con, do_nothing, sets, where)


def apply_conflict(session, ctx, rel, rows: Batch, conflict):
    con, do_nothing, sets, where = conflict
    if con is None:
        return rows, None
    idxs = [rel.column_index(c) for c in con.columns]
    tv = ctx.txn.state.data[rel.oid]
    ui = _unique_index(session, rel, con)
    ui.sync(tv, idxs)
    keys = _key_tuples(rows, idxs)
    keep = np.ones(rows.n, bool)
    conflict_rows = []
    conflict_pos = []
    seen = {}
    for i, k in enumerate(keys):
        if None in k:
            continue
        if k in seen:
            if do_nothing:
                keep[i] = False
                continue
            raise PgError(CARDINALITY_VIOLATION, "ON CONFLICT DO UPDATE command cannot affect row a second time",
                          hint="Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")
        seen[k] = i
        p = ui.keys.get(k)
        if p is not None:
            keep[i] = False
            conflict_rows.append(i)
            conflict_pos.append(p)
    new_rows = rows.filter(keep)
    if do_nothing or not conflict_rows:
        return new_rows, None
    existing_b, positions = tv.scan()
    pos_index = {p: j for j, p in enumerate(positions.tolist())}
    ex = existing_b.take(np.array([pos_index[p] for p in conflict_pos], dtype=np.int64))
    prop = rows.take(np.array(conflict_rows, dtype=np.int64))
    combined = Batch(ex.cols + prop.cols, ex.n)
    mask = np.ones(ex.n, bool)
    if where is not None:
        w = where.eval(combined, ctx)
        mask = w.data.astype(bool) & ~w.null_mask()
    new_cols = list(ex.cols)
    for j, e in sets:
        v = e.eval(combined, ctx)
        new_cols[j] = v if v.oid == new_cols[j].oid else sqltypes.cast_col(v, new_cols[j].oid)
    updated = Batch(new_cols, ex.n).filter(mask)
    upd_pos = np.array(conflict_pos, dtype=np.int64)[mask]
    if updated.n:
        check_constraints(session, ctx, rel, updated, exclude_positions=upd_pos)
        ctx.txn.apply(("delete", rel.oid, upd_pos))
        ctx.txn.apply(("insert", rel.oid, [(c.data, c.null_mask()) for c in updated.cols]))
    return new_rows, updated


# ------------------------------------------------------------------ UPDATE / DELETE

def _plan_target_scan(planner, rel, alias, tree, from_items):
    """Scan of the target with positions, joined with FROM/USING items,
    filtered by WHERE.  Output: target columns, __pos, then other columns."""
    scan = operators.TableScan(rel, alias, with_positions=True)
    scope = Scope([ScopeCol(alias, c.name, c.oid, c.typmod, hidden=c.hidden) for c in scan.out], tables=[alias])
    op: operators.Op = scan
    where_conj = []

    w = tree.args.get("where")
    if w is not None:
        where_conj = split_conjuncts(w.this)
    for item in from_items:
        rop, rscope = planner.plan_from_item(item, None, None)
        op, scope = planner.join(op, scope, rop, rscope, "cross", None, None, where_conj)
    if where_conj:
        b = ExprBinder(planner, scope, context="WHERE")
        preds = [planner.coerce(b.bind(c), type_oids.BOOL) for c in where_conj]
        op = planner.push_filters(op, preds)
    return op, scope


def _once_per_row(b: Batch, ncol: int) -> tuple[Batch, np.ndarray]:
    """A joined UPDATE/DELETE may match a target row several times (FROM,
    USING); PostgreSQL changes each row once."""
    pos = b.cols[ncol].data
    if len(np.unique(pos)) != len(pos):
        _, first = np.unique(pos, return_index=True)
        m = np.zeros(len(pos), bool)
        m[first] = True
        b = b.filter(m)
        pos = b.cols[ncol].data
    return b, pos


def _read_columns(tree: exp.Expression, rel: Relation, alias: str, values: list) -> frozenset[str] | None:
    """The target's columns UPDATE/DELETE reads (WHERE, SET values,
    RETURNING), on which PostgreSQL needs SELECT as well; None: it reads none."""
    names: set[str] = set()
    reads = False
    returning = tree.args.get("returning")
    if isinstance(returning, exp.Expression):
        reads = True
        if referenced_names(returning) is None:       # RETURNING *
            names.update(c.name for c in rel.live_columns if not c.hidden)
    for part in (tree.args.get("where"), returning, *values):
        if not isinstance(part, exp.Expression):
            continue
        for col in part.find_all(exp.Column):
            name = ident(col.this) if isinstance(col.this, exp.Identifier) else col.name
            if (col.table and col.table == alias) or (not col.table and rel.column(name) is not None):
                reads = True
                names.add(name)
    return frozenset(names) if reads else None


def _refuse_non_table(rel: Relation, verb: str, stream_hint: str) -> None:
    """UPDATE and DELETE change table rows only: a stream is append-only."""
    if rel.kind == "f":
        raise PgError(FEATURE_NOT_SUPPORTED, f'cannot {verb} stream "{rel.name}"', hint=stream_hint)
    if rel.kind != "r":
        raise PgError(WRONG_OBJECT_TYPE, f'cannot {verb} "{rel.name}"')


class UpdateStmt(DMLStmt):
    plan: operators.Op                          # target rows with positions (_plan_target_scan)
    sets: list[tuple[int, expr.Expr | None]]    # (column index, new value); None is DEFAULT

    @staticmethod
    def build(session, planner, tree: exp.Update) -> "UpdateStmt":
        s = UpdateStmt()
        if not tree.expressions:  # sqlglot accepts "UPDATE t SET" with nothing to set
            raise PgError(SYNTAX_ERROR, 'syntax error at end of input')
        rel, alias = _target(planner, tree.this if tree.this is not False else tree)
        _refuse_non_table(rel, "update", "Streams are append-only: insert new events instead.")
        s.rel = rel
        targets = frozenset(ident(e.this.this) if isinstance(e.this, exp.Column) else ident(e.this)
                            for e in tree.expressions)
        planner.need("w", rel.oid, columns=targets)
        read = _read_columns(tree, rel, alias, [e.expression for e in tree.expressions])
        if read is not None:
            planner.need("r", rel.oid, columns=read)
        from_ = tree.args.get("from") or tree.args.get("from_")
        items = ([from_.this] + list(from_.expressions or [])) if from_ is not None else []
        s.plan, scope = _plan_target_scan(planner, rel, alias, tree, items)
        b = ExprBinder(planner, scope, context="UPDATE")
        s.sets = []
        for e in tree.expressions:
            target = e.this
            name = ident(target.this) if isinstance(target, exp.Column) else ident(target)
            col = rel.column(name)
            if col is None:
                raise PgError(UNDEFINED_COLUMN, f'column "{name}" of relation "{rel.name}" does not exist')
            rhs = e.expression
            if isinstance(rhs, exp.Column) and rhs.name.upper() == "DEFAULT" and not rhs.args.get("table"):
                s.sets.append((rel.column_index(name), None))
                continue
            v = b.bind(rhs)
            s.sets.append((rel.column_index(name), planner.coerce(v, col.type_oid, col.typmod) if v.oid == type_oids.UNKNOWN or isinstance(v, expr.Param) else v))
        ret = tree.args.get("returning")
        s.ret = None
        if ret is not None:
            s.ret = returning_plan(planner, rel, alias, ret.expressions, Scope(scope.cols[len(rel.live_columns) + 1:]))
        return s

    def run(self, session, ctx):
        b, pos, ncol = _target_rows(self, ctx)
        new_cols = list(b.cols[:ncol])
        for j, e in self.sets:
            col = self.rel.live_columns[j]
            if e is None:
                v = eval_default(session, ctx, col, b.n) if col.default else Col(sqltypes.empty(col.type_oid, b.n), np.ones(b.n, bool), col.type_oid)
            else:
                v = e.eval(b, ctx)
            if v.oid != col.type_oid or col.typmod >= 0:
                v = sqltypes.cast_col(v, col.type_oid, col.typmod, explicit=False)
            new_cols[j] = v
        new = Batch(new_cols, b.n)
        if b.n:
            check_constraints(session, ctx, self.rel, new, exclude_positions=pos)
            _check_referenced(session, ctx, self.rel, Batch(b.cols[:ncol], b.n), new)
            ctx.txn.apply(("delete", self.rel.oid, pos))
            ctx.txn.apply(("insert", self.rel.oid, [(c.data, c.null_mask()) for c in new.cols]))
        ret_batch = Batch(new.cols + b.cols[ncol + 1:], b.n) if self.ret else None
        return self.returning_result(ctx, f"UPDATE {b.n}", ret_batch)


def _check_referenced(session, ctx, rel, old: Batch, new: Batch | None) -> list:
    """Foreign keys pointing at ``rel``: refuse removing referenced keys,
    or cascade / set null as declared."""
    st = ctx.txn.state
    for child in list(st.rels.values()):
        for con in child.constraints:
            if con.kind != "f" or con.ref_table != rel.oid:
                continue
            pidx = [rel.column_index(c) for c in con.ref_columns]
            removed = set(k for k in _key_tuples(old, pidx) if None not in k)
            if new is not None:
                removed -= set(_key_tuples(new, pidx))
            if not removed:
                continue
            cb, cpos = st.data[child.oid].scan()
            cidx = [child.column_index(c) for c in con.columns]
            hits = [i for i, k in enumerate(_key_tuples(cb, cidx)) if k in removed]
            if not hits:
                continue
            if con.on_delete == "c" and new is None:
                ctx.txn.apply(("delete", child.oid, cpos[hits]))
                _check_referenced(session, ctx, child, cb.take(np.array(hits)), None)
                continue
            if con.on_delete == "n" and new is None:
                rows = cb.take(np.array(hits))
                cols = list(rows.cols)
                for i in cidx:
                    cols[i] = Col(cols[i].data, np.ones(rows.n, bool), cols[i].oid)
                ctx.txn.apply(("delete", child.oid, cpos[hits]))
                ctx.txn.apply(("insert", child.oid, [(c.data, c.null_mask()) for c in cols]))
                continue
            k = _key_tuples(cb, cidx)[hits[0]]
            raise PgError(FOREIGN_KEY_VIOLATION,
                          f'update or delete on table "{rel.name}" violates foreign key constraint "{con.name}" on table "{child.name}"',
                          detail=f'{_fmt_key(con.ref_columns, k, [child.live_columns[i].type_oid for i in cidx])} is still referenced from table "{child.name}".')
    return []


class DeleteStmt(DMLStmt):
    plan: operators.Op                          # target rows with positions (_plan_target_scan)

    @staticmethod
    def build(session, planner, tree: exp.Delete) -> "DeleteStmt":
        s = DeleteStmt()
        rel, alias = _target(planner, tree.this if tree.this is not False else tree)
        _refuse_non_table(rel, "delete from", "Streams are append-only; old tuples leave the ring buffer by themselves.")
        s.rel = rel
        planner.need("d", rel.oid)
        read = _read_columns(tree, rel, alias, [])
        if read is not None:
            planner.need("r", rel.oid, columns=read)
        items = list(tree.args.get("using") or [])
        s.plan, scope = _plan_target_scan(planner, rel, alias, tree, items)
        ret = tree.args.get("returning")
        s.ret = returning_plan(planner, rel, alias, ret.expressions, Scope(scope.cols[len(rel.live_columns) + 1:])) if ret is not None else None
        return s

    def run(self, session, ctx):
        b, pos, ncol = _target_rows(self, ctx)
        if b.n:
            _check_referenced(session, ctx, self.rel, Batch(b.cols[:ncol], b.n), None)
            ctx.txn.apply(("delete", self.rel.oid, pos))
        ret_batch = Batch(b.cols[:ncol] + b.cols[ncol + 1:], b.n) if self.ret else None
        return self.returning_result(ctx, f"DELETE {b.n}", ret_batch)
