"""DDL: CREATE / DROP / ALTER of schemas, tables, streams, views, indexes,
sequences and roles.  Every change is a logged catalog operation applied
through the session's transaction, so DDL is transactional."""
from __future__ import annotations

import re

import numpy as np
from sqlglot import exp

from splitstream.catalog import types as sqltypes
from splitstream.catalog.objects import ColumnDef, Constraint, Relation, Role, Schema
from splitstream.catalog.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_COLUMN, DUPLICATE_OBJECT, DUPLICATE_SCHEMA, DUPLICATE_TABLE,
    FEATURE_NOT_SUPPORTED, INVALID_SCHEMA_NAME, SYNTAX_ERROR, UNDEFINED_COLUMN, UNDEFINED_OBJECT, UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE, Notice, PgError, INVALID_TABLE_DEFINITION,
)

from . import expr
from .api import Result
from .binder import datatype_to_oid, ident
from .dialect import parse_one
from .statement import Stmt
from .dialect import DIALECT

STREAM_SERVERS = ("stream", "pipelinedb")
DEFAULT_STREAM_CAPACITY = 1 << 20


def _qual(table: exp.Table) -> tuple[str | None, str]:
    schema = ident(table.args.get("db")) if table.args.get("db") else None
    return schema, ident(table.this)


def _target_schema(planner, schema: str | None, st) -> str:
    s = schema or planner.search_path()[0]
    if s not in st.schemas:
        raise PgError(INVALID_SCHEMA_NAME, f'schema "{s}" does not exist')
    return s


def _name_taken(st, schema: str, name: str) -> None:
    if st.lookup(schema, name) is not None:
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')


class DDLStmt(Stmt):
    cacheable = False

    def __init__(self, fn, tag: str) -> None:
        self.fn, self.tag = fn, tag

    def run(self, session, ctx):
        notices = self.fn(session, ctx) or []
        return Result(tag=self.tag, notices=notices)


def column_defs(planner, cols: list[exp.ColumnDef], table_name: str) -> tuple[list[ColumnDef], list[Constraint], list]:
    out: list[ColumnDef] = []
    cons: list[Constraint] = []
    seqs = []
    for i, cd in enumerate(cols):
        name = ident(cd.this)
        if any(c.name == name for c in out):
            raise PgError(DUPLICATE_COLUMN, f'column "{name}" specified more than once')
        kind = cd.args.get("kind")
        if kind is None:
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{name}"')
        oid, typmod = datatype_to_oid(kind)
        not_null = False
        default = None
        identity = ""
        tname = kind.this.name if hasattr(kind.this, "name") else str(kind.this)
        if tname in ("SERIAL", "BIGSERIAL", "SMALLSERIAL"):
            seqs.append((name, oid))
            default = f"nextval('{table_name}_{name}_seq'::regclass)"
            not_null = True
        for c in cd.args.get("constraints") or []:
            k = c.args.get("kind")
            if isinstance(k, exp.NotNullColumnConstraint):
                not_null = not k.args.get("allow_null")
            elif isinstance(k, exp.PrimaryKeyColumnConstraint):
                not_null = True
                cons.append(Constraint(f"{table_name}_pkey", "p", (name,)))
            elif isinstance(k, exp.UniqueColumnConstraint):
                cons.append(Constraint(f"{table_name}_{name}_key", "u", (name,)))
            elif isinstance(k, exp.DefaultColumnConstraint):
                default = k.this.sql(DIALECT)
            elif isinstance(k, exp.CheckColumnConstraint):
                cons.append(Constraint(f"{table_name}_{name}_check", "c", (name,), check_sql=k.this.sql(DIALECT)))
            elif isinstance(k, exp.GeneratedAsIdentityColumnConstraint):
                identity = "a" if k.this else "d"
                not_null = True
                seqs.append((name, oid))
                default = f"nextval('{table_name}_{name}_seq'::regclass)"
            elif isinstance(k, exp.Reference) or (k is not None and type(k).__name__ == "Reference"):
                cons.append(_fk_from_reference(planner, k, [name], f"{table_name}_{name}_fkey"))
            elif k is not None and type(k).__name__ in ("CollateColumnConstraint",):
                pass
        if c_ref := [c for c in (cd.args.get("constraints") or []) if isinstance(c.args.get("kind"), exp.Reference)]:
            pass
        out.append(ColumnDef(name, oid, typmod, not_null, default, identity, attnum=i + 1))
    return out, cons, seqs


def _fk_from_reference(planner, ref, cols, name) -> Constraint:
    tbl = ref.this
    if isinstance(tbl, exp.Schema):
        table = tbl.this
        ref_cols = tuple(ident(e) for e in tbl.expressions)
    else:
        table = tbl
        ref_cols = ()
    schema, rname = _qual(table)
    target = planner.lookup_relation(rname, schema)
    if target is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{rname}" does not exist')
    if not ref_cols:
        pk = target.primary_key
        if pk is None:
            raise PgError("42830", f'there is no primary key for referenced table "{rname}"')
        ref_cols = pk.columns
    on_delete = "a"
    opts = " ".join(str(o) for o in (ref.args.get("options") or [])).upper()
    if "ON DELETE CASCADE" in opts:
        on_delete = "c"
    elif "ON DELETE SET NULL" in opts:
        on_delete = "n"
    elif "ON DELETE RESTRICT" in opts:
        on_delete = "r"
    return Constraint(name, "f", tuple(cols), ref_table=target.oid, ref_columns=tuple(ref_cols), on_delete=on_delete)


def _table_constraints(planner, exprs, table_name, cols) -> list[Constraint]:
    out = []
    for e in exprs:
        name = None
        if isinstance(e, exp.Constraint):
            name = ident(e.this)
            inner = e.expressions
        else:
            inner = [e]
        for k in inner:
            if isinstance(k, exp.PrimaryKey):
                names = tuple(ident(c.this) if isinstance(c, exp.Ordered) else ident(c) for c in k.expressions)
                out.append(Constraint(name or f"{table_name}_pkey", "p", names))
            elif isinstance(k, (exp.UniqueColumnConstraint, exp.Unique)) if hasattr(exp, "Unique") else isinstance(k, exp.UniqueColumnConstraint):
                target = k.this
                names = tuple(ident(c) for c in (target.expressions if isinstance(target, exp.Schema) else []))
                out.append(Constraint(name or f"{table_name}_{'_'.join(names)}_key", "u", names))
            elif isinstance(k, exp.CheckColumnConstraint):
                out.append(Constraint(name or f"{table_name}_check", "c", (), check_sql=k.this.sql(DIALECT)))
            elif isinstance(k, exp.ForeignKey):
                names = [ident(c) for c in k.expressions]
                ref = k.args.get("reference")
                fk = _fk_from_reference(planner, ref, names, name or f"{table_name}_{'_'.join(names)}_fkey")
                opts = " ".join(str(o) for o in (k.args.get("options") or [])).upper()
                d = k.args.get("delete")
                if d:
                    opts += " ON DELETE " + str(d).upper()
                if "ON DELETE CASCADE" in opts:
                    fk = Constraint(fk.name, "f", fk.columns, ref_table=fk.ref_table, ref_columns=fk.ref_columns, on_delete="c")
                elif "SET NULL" in opts:
                    fk = Constraint(fk.name, "f", fk.columns, ref_table=fk.ref_table, ref_columns=fk.ref_columns, on_delete="n")
                out.append(fk)
    return out


def create_table(session, ctx, planner, tree: exp.Create, text: str):
    schema_node = tree.this
    exists_ok = bool(tree.args.get("exists"))
    st = ctx.txn.for_write(ctx.check_cancel)
    if isinstance(schema_node, exp.Schema):
        table = schema_node.this
        col_nodes = [e for e in schema_node.expressions if isinstance(e, exp.ColumnDef)]
        other = [e for e in schema_node.expressions if not isinstance(e, exp.ColumnDef)]
    else:
        table, col_nodes, other = schema_node, [], []
    schema, name = _qual(table)
    schema = _target_schema(planner, schema, st)
    if st.lookup(schema, name) is not None:
        if exists_ok:
            return [Notice(f'relation "{name}" already exists, skipping', "42P07")]
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
    as_query = tree.args.get("expression")
    rows = None
    if as_query is not None:
        from .planner import Planner
        from . import operators

        pl = Planner(session.engine, ctx.state, session=session.info)
        plan = pl.plan_query(as_query)
        rows = operators.run_plan(plan, ctx)
        names = [ident(c.this) if isinstance(c, exp.ColumnDef) else ident(c) for c in (schema_node.expressions if isinstance(schema_node, exp.Schema) else [])]
        cols = [ColumnDef(names[i] if i < len(names) else c.name, c.oid if c.oid != type_oids.UNKNOWN else type_oids.TEXT, c.typmod, attnum=i + 1)
                for i, c in enumerate(plan.out)]
        cons = []
        seqs = []
    else:
        cols, cons, seqs = column_defs(planner, col_nodes, name)
        cons += _table_constraints(planner, other, name, cols)
    # primary key columns are NOT NULL
    pk_cols = {c for con in cons if con.kind == "p" for c in con.columns}
    if sum(1 for c in cons if c.kind == "p") > 1:
        raise PgError(INVALID_TABLE_DEFINITION, f'multiple primary keys for table "{name}" are not allowed')
    cols = [ColumnDef(c.name, c.type_oid, c.typmod, c.not_null or c.name in pk_cols, c.default, c.identity, attnum=c.attnum) for c in cols]
    for con in cons:
        for cn in con.columns:
            if not any(c.name == cn for c in cols):
                raise PgError(UNDEFINED_COLUMN, f'column "{cn}" named in key does not exist')
    oid = ctx.txn.new_oid()
    notices = []
    for cname, coid in seqs:
        seq_oid = ctx.txn.new_oid()
        ctx.txn.apply(("rel", Relation(seq_oid, schema, f"{name}_{cname}_seq", "S", seq_type=coid,
                                       seq_max=(2**31 - 1) if coid == type_oids.INT4 else (2**15 - 1 if coid == type_oids.INT2 else 2**63 - 1),
                                       owned_by=(oid, cname))))
    final_cons = []
    for con in cons:
        if con.kind in ("p", "u"):
            idx_oid = ctx.txn.new_oid()
            ctx.txn.apply(("rel", Relation(idx_oid, schema, con.name, "i", index_table=oid, index_columns=con.columns,
                                           index_unique=True, index_primary=con.kind == "p",
                                           columns=tuple(c for c in cols if c.name in con.columns))))
            con = Constraint(con.name, con.kind, con.columns, con.check_sql, con.ref_table, con.ref_columns, con.on_delete,
                             con.on_update, idx_oid)
        final_cons.append(con)
    props = tree.args.get("properties")
    unlogged = props is not None and any(isinstance(p, exp.UnloggedProperty) for p in props.expressions)
    rel = Relation(oid, schema, name, "r", tuple(cols), tuple(final_cons), persistence="u" if unlogged else "p")
    ctx.txn.apply(("rel", rel))
    if rows is not None and rows.n:
        from .dml import insert_batch

        insert_batch(session, ctx, rel, rows)
    return notices


def create_view(session, ctx, planner, tree: exp.Create, text: str):
    from .planner import Planner

    table = tree.this
    colnames = []
    if isinstance(table, exp.Schema):
        colnames = [ident(c) for c in table.expressions]
        table = table.this
    schema, name = _qual(table)
    st = ctx.txn.for_write(ctx.check_cancel)
    schema = _target_schema(planner, schema, st)
    existing = st.lookup(schema, name)
    replace = bool(tree.args.get("replace"))
    if existing is not None and not (replace and existing.kind == "v"):
        if tree.args.get("exists"):
            return [Notice(f'relation "{name}" already exists, skipping', "42P07")]
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
    query = tree.args["expression"]
    sql = query.sql(DIALECT)
    pl = Planner(session.engine, ctx.state, session=session.info)
    plan = pl.plan_query(query)
    props = tree.args.get("properties")
    materialized = False
    options = {}
    if props is not None:
        for p in props.expressions:
            if isinstance(p, exp.MaterializedProperty):
                materialized = True
            elif isinstance(p, exp.Property):
                options[str(p.this).lower()] = p.args.get("value").name if hasattr(p.args.get("value"), "name") else str(p.args.get("value"))
    if re.match(r"\s*create\s+materialized\s+view", text, re.I):
        materialized = True
    continuous = bool(pl.streams_used) or any(v.continuous for v in pl.views_used)
    if options.get("action", "materialize").lower() not in ("materialize",):
        raise PgError(FEATURE_NOT_SUPPORTED, f"action={options['action']} is not supported",
                      hint="Use WITH (action=materialize) or plain CREATE VIEW.")
    if materialized and not continuous:
        raise PgError(FEATURE_NOT_SUPPORTED, "materialized views over tables are not supported",
                      hint="Create a plain view, or a view over a stream to get a continuous view.")
    if "action" in options and not continuous:
        # as PipelineDB: asking for a continuous view over tables is an error, not a plain view in disguise
        raise PgError(FEATURE_NOT_SUPPORTED, "continuous views (action=materialize) must read a stream in the FROM clause",
                      hint="Drop WITH (action=materialize) to create a plain view over tables, or join the tables with a stream.")
    cols = tuple(ColumnDef(colnames[i] if i < len(colnames) else c.name, c.oid if c.oid != type_oids.UNKNOWN else type_oids.TEXT, c.typmod, attnum=i + 1)
                 for i, c in enumerate(plan.out))
    oid = existing.oid if existing is not None else ctx.txn.new_oid()
    deps = tuple(sorted({r.oid for r in pl.streams_used} | set(pl.tables_used) | {v.oid for v in pl.views_used}))
    rel = Relation(oid, schema, name, "v", cols, sql=sql, continuous=continuous, depends_on=deps,
                   options=tuple(sorted(options.items())))
    if continuous:
        session.engine.streams.create_view(session, ctx, rel, query)
    ctx.txn.apply(("rel", rel))
    return []


def create_index(session, ctx, planner, tree: exp.Create, text: str):
    idx = tree.this
    name = ident(idx.this) if idx.this is not None else None
    table = idx.args.get("table")
    schema, tname = _qual(table)
    st = ctx.txn.for_write(ctx.check_cancel)
    rel = planner.lookup_relation(tname, schema)
    if rel is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{tname}" does not exist')
    params = idx.args.get("params")
    cols = []
    for c in (params.args.get("columns") if params is not None else []) or []:
        node = c.this if isinstance(c, exp.Ordered) else c
        cn = ident(node.this) if isinstance(node, exp.Column) else node.sql(DIALECT)
        if isinstance(node, exp.Column) and rel.column(cn) is None:
            raise PgError(UNDEFINED_COLUMN, f'column "{cn}" does not exist')
        cols.append(cn)
    unique = bool(tree.args.get("unique"))
    if name is None:
        name = f"{tname}_{'_'.join(cols)}_idx"
    if st.lookup(rel.schema, name) is not None:
        if tree.args.get("exists"):
            return [Notice(f'relation "{name}" already exists, skipping', "42P07")]
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
    using = params.args.get("using") if params is not None else None
    method = str(using.name if hasattr(using, "name") else using).lower() if using else "btree"
    oid = ctx.txn.new_oid()
    ctx.txn.apply(("rel", Relation(oid, rel.schema, name, "i", index_table=rel.oid, index_columns=tuple(cols),
                                   index_unique=unique, index_method=method,
                                   columns=tuple(c for c in rel.live_columns if c.name in cols))))
    if unique:
        from .dml import check_unique_existing

        check_unique_existing(session, ctx, rel, cols, name)
        new_cons = rel.constraints + (Constraint(name, "u", tuple(cols), index_oid=oid, from_index=True),)
        ctx.txn.apply(("rel", rel.with_(constraints=new_cons)))
    return []


def create_schema(session, ctx, planner, tree, text):
    t = tree.this
    name = ident(t.args.get("db")) if t.args.get("db") else ident(t.this)
    st = ctx.txn.for_write(ctx.check_cancel)
    if name in st.schemas:
        if tree.args.get("exists"):
            return [Notice(f'schema "{name}" already exists, skipping', "42P06")]
        raise PgError(DUPLICATE_SCHEMA, f'schema "{name}" already exists')
    ctx.txn.apply(("schema", Schema(ctx.txn.new_oid(), name)))
    return []


def create_sequence(session, ctx, planner, tree, text):
    schema, name = _qual(tree.this)
    st = ctx.txn.for_write(ctx.check_cancel)
    schema = _target_schema(planner, schema, st)
    if st.lookup(schema, name) is not None:
        if tree.args.get("exists"):
            return [Notice(f'relation "{name}" already exists, skipping', "42P07")]
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
    kw = {}
    props = tree.args.get("properties")
    if props is not None:
        for p in props.expressions:
            if isinstance(p, exp.SequenceProperties):
                for k in ("start", "increment", "minvalue", "maxvalue"):
                    v = p.args.get(k)
                    if v is not None:
                        kw[k] = int(exp.Neg(this=v.this).sql() if isinstance(v, exp.Neg) else v.sql())
                if p.args.get("cycle"):
                    kw["cycle"] = True
    inc = kw.get("increment", 1)
    mn = kw.get("minvalue", 1 if inc > 0 else -(2**63))
    mx = kw.get("maxvalue", 2**63 - 1 if inc > 0 else -1)
    start = kw.get("start", mn if inc > 0 else mx)
    ctx.txn.apply(("rel", Relation(ctx.txn.new_oid(), schema, name, "S", seq_start=start, seq_increment=inc,
                                   seq_min=mn, seq_max=mx, seq_cycle=kw.get("cycle", False))))
    return []


def dependents(st, oid: int) -> list[Relation]:
    """Objects that must go when ``oid`` goes (views, indexes, sequences)."""
    out = []
    for r in st.rels.values():
        if r.oid == oid:
            continue
        if r.kind == "v" and oid in r.depends_on:
            out.append(r)
        elif r.kind == "i" and r.index_table == oid:
            out.append(r)
        elif r.kind == "S" and r.owned_by and r.owned_by[0] == oid:
            out.append(r)
    return out


def drop(session, ctx, planner, tree: exp.Drop, text):
    kind = str(tree.args.get("kind") or "TABLE").upper()
    st = ctx.txn.for_write(ctx.check_cancel)
    notices = []
    cascade = bool(tree.args.get("cascade"))
    if kind == "SCHEMA":
        for t in tree.expressions or [tree.this]:
            name = ident(t.args.get("db")) if isinstance(t, exp.Table) and t.args.get("db") else ident(t.this if isinstance(t, exp.Table) else t)
            if name not in st.schemas:
                if tree.args.get("exists"):
                    notices.append(Notice(f'schema "{name}" does not exist, skipping'))
                    continue
                raise PgError(INVALID_SCHEMA_NAME, f'schema "{name}" does not exist')
            members = [r for r in st.rels.values() if r.schema == name]
            if members and not cascade:
                raise PgError(DEPENDENT_OBJECTS_STILL_EXIST, f"cannot drop schema {name} because other objects depend on it",
                              detail="\n".join(f"{_kind_word(r)} {name}.{r.name} depends on schema {name}" for r in members if r.kind != "i"),
                              hint="Use DROP ... CASCADE to drop the dependent objects too.")
            for r in members:
                _drop_rel(session, ctx, r)
            if members:
                visible = [r for r in members if r.kind not in ("i", "S") or not r.owned_by]
                notices.append(_cascade_notice([r for r in visible if r.kind != "i"], name))
            ctx.txn.apply(("drop_schema", name))
        return [n for n in notices if n]
    want = {"TABLE": "r", "VIEW": "v", "INDEX": "i", "SEQUENCE": "S", "FOREIGN TABLE": "f", "MATERIALIZED VIEW": "v"}.get(kind, "r")
    if tree.args.get("materialized"):
        want = "v"
    targets = tree.args.get("tables") or tree.expressions or [tree.this]
    for t in targets:
        schema, name = _qual(t)
        rel = planner.lookup_relation(name, schema)
        if rel is None or (want == "r" and rel.kind == "f" and kind == "TABLE" and False):
            if tree.args.get("exists"):
                word = {"r": "table", "v": "view", "i": "index", "S": "sequence", "f": "foreign table"}[want]
                notices.append(Notice(f'{word} "{name}" does not exist, skipping'))
                continue
            word = {"r": "table", "v": "view", "i": "index", "S": "sequence", "f": "foreign table"}[want]
            raise PgError(UNDEFINED_TABLE if want != "i" else UNDEFINED_OBJECT, f'{word} "{name}" does not exist')
        if rel.kind != want and not (want == "r" and rel.kind == "f"):
            word = {"r": "a table", "v": "a view", "i": "an index", "S": "a sequence", "f": "a foreign table"}[want]
            raise PgError(WRONG_OBJECT_TYPE, f'"{name}" is not {word}',
                          hint=f"Use DROP {_drop_word(rel)} to remove {_kind_article(rel)}.")
        deps = _all_dependents(st, rel.oid)
        visible = [d for d in deps if d.kind == "v" or (d.kind == "f")]
        fks = [(o, c) for o in st.rels.values() if o.kind == "r" and o.oid != rel.oid
               for c in o.constraints if c.kind == "f" and c.ref_table == rel.oid]
        if fks and not cascade and not visible:
            raise PgError(DEPENDENT_OBJECTS_STILL_EXIST, f"cannot drop table {name} because other objects depend on it",
                          detail="\n".join(f"constraint {c.name} on table {o.name} depends on table {name}" for o, c in fks),
                          hint="Use DROP ... CASCADE to drop the dependent objects too.")
        if visible and not cascade:
            raise PgError(DEPENDENT_OBJECTS_STILL_EXIST, f"cannot drop {_kind_word(rel)} {name} because other objects depend on it",
                          detail="\n".join(f"{_kind_word(d)} {d.name} depends on {_kind_word(rel)} {name}" for d in visible),
                          hint="Use DROP ... CASCADE to drop the dependent objects too.")
        if visible:
            notices.append(_cascade_notice(visible, None))
        for d in deps:
            _drop_rel(session, ctx, d)
        _drop_rel(session, ctx, rel)
    return [n for n in notices if n]


def _all_dependents(st, oid, seen=None) -> list[Relation]:
    seen = seen if seen is not None else set()
    out = []
    for d in dependents(st, oid):
        if d.oid in seen:
            continue
        seen.add(d.oid)
        out += _all_dependents(st, d.oid, seen)
        out.append(d)
    return out


def _cascade_notice(rels, schema):
    if not rels:
        return None
    if len(rels) == 1:
        r = rels[0]
        return Notice(f"drop cascades to {_kind_word(r)} {(schema + '.') if schema else ''}{r.name}")
    return Notice(f"drop cascades to {len(rels)} other objects",
                  detail="\n".join(f"drop cascades to {_kind_word(r)} {(schema + '.') if schema else ''}{r.name}" for r in rels))


def _kind_word(r) -> str:
    return {"r": "table", "v": "view", "i": "index", "S": "sequence", "f": "foreign table"}.get(r.kind, "relation")


def _kind_article(r) -> str:
    return {"r": "a table", "v": "a view", "i": "an index", "S": "a sequence", "f": "a foreign table"}.get(r.kind, "a relation")


def _drop_word(r) -> str:
    return {"r": "TABLE", "v": "VIEW", "i": "INDEX", "S": "SEQUENCE", "f": "FOREIGN TABLE"}.get(r.kind, "TABLE")


def _drop_rel(session, ctx, rel):
    if rel.oid not in ctx.txn.state.rels:
        return
    if rel.kind == "v" and rel.continuous:
        ctx.txn.after_commit.append(lambda oid=rel.oid: session.engine.streams.drop_view(oid))
    if rel.kind == "f":
        ctx.txn.after_commit.append(lambda oid=rel.oid: session.engine.streams.drop_stream(oid))
    # drop foreign keys in other tables that reference this table (CASCADE semantics for constraints)
    st = ctx.txn.state
    for other in list(st.rels.values()):
        if other.kind == "r" and other.oid != rel.oid and any(c.kind == "f" and c.ref_table == rel.oid for c in other.constraints):
            ctx.txn.apply(("rel", other.with_(constraints=tuple(c for c in other.constraints if not (c.kind == "f" and c.ref_table == rel.oid)))))
    if rel.kind == "i":
        tbl = st.rels.get(rel.index_table)
        if tbl is not None:
            ctx.txn.apply(("rel", tbl.with_(constraints=tuple(c for c in tbl.constraints if c.index_oid != rel.oid))))
    ctx.txn.apply(("drop_rel", rel.oid))


def alter_table(session, ctx, planner, tree: exp.Alter, text):
    schema, name = _qual(tree.this)
    st = ctx.txn.for_write(ctx.check_cancel)
    rel = planner.lookup_relation(name, schema)
    if rel is None:
        if tree.args.get("exists"):
            return [Notice(f'relation "{name}" does not exist, skipping')]
        raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
    notices = []
    for action in tree.args.get("actions") or []:
        rel = ctx.txn.state.rels[rel.oid]
        if isinstance(action, exp.ColumnDef):
            _add_column(session, ctx, planner, rel, action)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() == "COLUMN":
            for c in action.args.get("tables") or action.expressions or [action.this]:
                notices += _drop_column(session, ctx, rel, ident(c.this) if isinstance(c, exp.Column) else ident(c),
                                        bool(action.args.get("exists")), bool(action.args.get("cascade")))
                rel = ctx.txn.state.rels[rel.oid]
        elif isinstance(action, exp.RenameColumn):
            old = ident(action.this.this) if isinstance(action.this, exp.Column) else ident(action.this)
            new = ident(action.args["to"].this) if isinstance(action.args["to"], exp.Column) else ident(action.args["to"])
            if rel.column(old) is None:
                raise PgError(UNDEFINED_COLUMN, f'column "{old}" does not exist')
            if rel.column(new) is not None:
                raise PgError(DUPLICATE_COLUMN, f'column "{new}" of relation "{rel.name}" already exists')
            _refuse_rename(ctx, rel, old)
            cols = tuple(ColumnDef(new if c.name == old else c.name, c.type_oid, c.typmod, c.not_null, c.default, c.identity,
                                   c.dropped, c.attnum, c.hidden) for c in rel.columns)
            cons = tuple(Constraint(c.name, c.kind, tuple(new if x == old else x for x in c.columns), c.check_sql,
                                    c.ref_table, c.ref_columns, c.on_delete, c.on_update, c.index_oid) for c in rel.constraints)
            ctx.txn.apply(("rel", rel.with_(columns=cols, constraints=cons)))
        elif isinstance(action, exp.AlterRename):
            new = ident(action.this.this) if isinstance(action.this, exp.Table) else ident(action.this)
            if st.lookup(rel.schema, new) is not None:
                raise PgError(DUPLICATE_TABLE, f'relation "{new}" already exists')
            _refuse_rename(ctx, rel, None)
            ctx.txn.apply(("rel", rel.with_(name=new)))
        elif isinstance(action, exp.AlterColumn):
            _alter_column(ctx, rel, action)
        elif type(action).__name__ in ("AddConstraint",):
            cons = _table_constraints(planner, action.expressions, rel.name, rel.columns)
            ctx.txn.apply(("rel", rel.with_(constraints=rel.constraints + tuple(cons))))
        else:
            raise PgError(FEATURE_NOT_SUPPORTED, f"ALTER TABLE action not supported: {action.sql(DIALECT)[:60]}")
    return notices


def _refuse_rename(ctx, rel, column: str | None) -> None:
    """A continuous view keeps its query as SQL text and plans it again after
    a restart: a relation or column name it uses must stay (PostgreSQL,
    which keeps views as parse trees, allows the rename)."""
    from .stream.guard import views_reading

    views = views_reading(ctx.txn.state, rel, column)
    if views:
        kind = "stream" if rel.kind == "f" else _kind_word(rel)
        what = f'column "{column}" of {kind} "{rel.name}"' if column is not None else f'{kind} "{rel.name}"'
        raise PgError(FEATURE_NOT_SUPPORTED, f'cannot rename {what}: continuous view "{views[0].name}" uses it',
                      hint="A continuous view keeps its defining query as text: drop the view, rename, "
                           "and create the view again.")


def _refuse_retype(ctx, rel, column: str) -> None:
    """As PostgreSQL for any view: the view's plan (and a static table's
    hash table) hold the column's values as they were typed."""
    from .stream.guard import views_reading

    views = views_reading(ctx.txn.state, rel, column)
    if views:
        raise PgError(FEATURE_NOT_SUPPORTED, "cannot alter type of a column used by a view or rule",
                      detail=f'rule _RETURN on view {views[0].name} depends on column "{column}"',
                      hint="Drop the continuous view, alter the column, and create the view again.")


def _alter_column(ctx, rel, action):
    name = ident(action.this)
    c = rel.column(name)
    if c is None:
        raise PgError(UNDEFINED_COLUMN, f'column "{name}" of relation "{rel.name}" does not exist')
    new = c
    from dataclasses import replace

    if action.args.get("drop"):
        new = replace(c, default=None) if action.args.get("drop") and "DEFAULT" in action.sql(DIALECT).upper() else new
        if "NOT NULL" in action.sql(DIALECT).upper():
            new = replace(c, not_null=False)
    elif action.args.get("default") is not None:
        new = replace(c, default=action.args["default"].sql(DIALECT))
    elif action.args.get("allow_null") is False or "SET NOT NULL" in action.sql(DIALECT).upper():
        tv = ctx.txn.state.data.get(rel.oid)
        if tv is not None:
            b, _ = tv.scan()
            if b.cols[rel.column_index(name)].nulls is not None:
                raise PgError("23502", f'column "{name}" of relation "{rel.name}" contains null values')
        new = replace(c, not_null=True)
    elif action.args.get("dtype") is not None:
        _refuse_retype(ctx, rel, name)
        oid, typmod = datatype_to_oid(action.args["dtype"])
        i = rel.column_index(name)
        tv = ctx.txn.state.data[rel.oid]
        b, _ = tv.scan()
        cols = list(b.cols)
        cols[i] = sqltypes.cast_col(cols[i], oid, typmod)
        new = replace(c, type_oid=oid, typmod=typmod)
        oids = [x.type_oid if x.name != name else oid for x in rel.live_columns]
        ctx.txn.apply(("rel", rel.with_(columns=tuple(new if x.name == name else x for x in rel.columns))))
        ctx.txn.apply(("relayout", rel.oid, oids, [(x.data, x.null_mask()) for x in cols]))
        return
    ctx.txn.apply(("rel", rel.with_(columns=tuple(new if x.name == name else x for x in rel.columns))))


def _add_column(session, ctx, planner, rel, cd: exp.ColumnDef):
    cols, cons, seqs = column_defs(planner, [cd], rel.name)
    c = cols[0]
    if rel.column(c.name) is not None:
        raise PgError(DUPLICATE_COLUMN, f'column "{c.name}" of relation "{rel.name}" already exists')
    c = ColumnDef(c.name, c.type_oid, c.typmod, c.not_null, c.default, c.identity, attnum=len(rel.columns) + 1)
    if rel.kind == "f":
        ctx.txn.apply(("rel", rel.with_(columns=rel.columns + (c,))))
        ctx.txn.after_commit.append(lambda: session.engine.streams.alter_stream(rel.oid))
        return
    tv = ctx.txn.state.data[rel.oid]
    b, _ = tv.scan()
    if c.default is not None and b.n:
        from .dml import eval_default

        newcol = eval_default(session, ctx, c, b.n)
    else:
        newcol = Col(sqltypes.empty(c.type_oid, b.n), np.ones(b.n, bool), c.type_oid)
    if c.not_null and b.n and newcol.nulls is not None:
        raise PgError("23502", f'column "{c.name}" of relation "{rel.name}" contains null values')
    new_rel = rel.with_(columns=rel.columns + (c,), constraints=rel.constraints + tuple(cons))
    ctx.txn.apply(("rel", new_rel))
    cols_all = b.cols + [newcol]
    ctx.txn.apply(("relayout", rel.oid, [x.type_oid for x in new_rel.live_columns], [(x.data, x.null_mask()) for x in cols_all]))


def _drop_column(session, ctx, rel, name, if_exists, cascade) -> list:
    if rel.column(name) is None:
        if if_exists:
            return [Notice(f'column "{name}" of relation "{rel.name}" does not exist, skipping')]
        raise PgError(UNDEFINED_COLUMN, f'column "{name}" of relation "{rel.name}" does not exist')
    notices = _drop_column_dependents(session, ctx, rel, name, cascade)
    i = rel.column_index(name)
    tv = ctx.txn.state.data.get(rel.oid)
    cols = tuple(ColumnDef(c.name, c.type_oid, c.typmod, c.not_null, c.default, c.identity, True, c.attnum, c.hidden)
                 if c.name == name and not c.dropped else c for c in rel.columns)
    cons = tuple(c for c in rel.constraints if name not in c.columns)
    new_rel = rel.with_(columns=cols, constraints=cons)
    ctx.txn.apply(("rel", new_rel))
    if tv is not None:
        b, _ = tv.scan()
        keep = [c for j, c in enumerate(b.cols) if j != i]
        ctx.txn.apply(("relayout", rel.oid, [x.type_oid for x in new_rel.live_columns], [(x.data, x.null_mask()) for x in keep]))
    return notices


def _drop_column_dependents(session, ctx, rel, name, cascade) -> list:
    """Continuous views reading the column: refused as in PostgreSQL, or
    dropped with CASCADE (with the views built on them)."""
    from .stream.guard import views_reading

    views = views_reading(ctx.txn.state, rel, name)
    if not views:
        return []
    if not cascade:
        raise PgError(DEPENDENT_OBJECTS_STILL_EXIST,
                      f"cannot drop column {name} of {_kind_word(rel)} {rel.name} because other objects depend on it",
                      detail="\n".join(f"view {v.name} depends on column {name} of {_kind_word(rel)} {rel.name}" for v in views),
                      hint="Use DROP ... CASCADE to drop the dependent objects too.")
    st = ctx.txn.state
    doomed = []
    for v in views:
        doomed += [d for d in _all_dependents(st, v.oid) + [v] if d not in doomed]
    for d in doomed:
        _drop_rel(session, ctx, d)
    return [_cascade_notice(doomed, None)]


def truncate(session, ctx, planner, tree, text):
    ctx.txn.for_write(ctx.check_cancel)
    for t in tree.expressions:
        schema, name = _qual(t)
        rel = planner.lookup_relation(name, schema)
        if rel is None:
            raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
        if rel.kind == "f":
            raise PgError(WRONG_OBJECT_TYPE, f'cannot truncate stream "{name}"',
                          hint="Streams are append-only; their ring buffer drops old tuples by itself.")
        if rel.kind != "r":
            raise PgError(WRONG_OBJECT_TYPE, f'"{name}" is not a table')
        ctx.txn.apply(("truncate", rel.oid))
    return []


def comment(session, ctx, planner, tree, text):
    kind = str(tree.args.get("kind")).lower()
    value = tree.expression.this if isinstance(tree.expression, exp.Literal) else None
    ctx.txn.for_write(ctx.check_cancel)
    target = tree.this
    if kind == "column":
        parts = target.sql(DIALECT).split(".")
        tname, cname = parts[-2].strip('"').lower(), parts[-1].strip('"').lower()
        rel = planner.lookup_relation(tname, None)
        if rel is None:
            raise PgError(UNDEFINED_TABLE, f'relation "{tname}" does not exist')
        cc = tuple((k, v) for k, v in rel.column_comments if k != cname) + (((cname, value),) if value is not None else ())
        ctx.txn.apply(("rel", rel.with_(column_comments=cc)))
        return []
    if kind == "schema":
        return []
    schema, name = _qual(target) if isinstance(target, exp.Table) else (None, ident(target))
    rel = planner.lookup_relation(name, schema)
    if rel is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
    ctx.txn.apply(("rel", rel.with_(comment=value)))
    return []


def build(session, planner, tree, text: str) -> Stmt:
    def bind(fn, tag):
        return DDLStmt(lambda s, ctx: fn(s, ctx, planner_for(s, ctx), tree, text), tag)

    def planner_for(s, ctx):
        from .planner import Planner

        return Planner(s.engine, ctx.state, session=s.info)

    if isinstance(tree, exp.Create):
        kind = str(tree.args.get("kind")).upper()
        if kind == "TABLE":
            return bind(create_table, "CREATE TABLE" if tree.args.get("expression") is None else "SELECT")
        if kind == "VIEW":
            is_mat = re.match(r"\s*create\s+(or\s+replace\s+)?materialized", text, re.I)
            return bind(create_view, "CREATE MATERIALIZED VIEW" if is_mat else "CREATE VIEW")
        if kind == "INDEX":
            return bind(create_index, "CREATE INDEX")
        if kind == "SCHEMA":
            return bind(create_schema, "CREATE SCHEMA")
        if kind == "SEQUENCE":
            return bind(create_sequence, "CREATE SEQUENCE")
        if kind == "FUNCTION":
            raise PgError(FEATURE_NOT_SUPPORTED, "CREATE FUNCTION is not supported yet")
        raise PgError(FEATURE_NOT_SUPPORTED, f"CREATE {kind} is not supported")
    if isinstance(tree, exp.Drop):
        kind = str(tree.args.get("kind") or "TABLE").upper()
        tag = "DROP " + ("MATERIALIZED VIEW" if tree.args.get("materialized") else kind)
        return bind(drop, tag)
    if isinstance(tree, exp.Alter):
        kind = str(tree.args.get("kind") or "TABLE").upper()
        if kind == "VIEW":
            return bind(alter_table, "ALTER VIEW")
        return bind(alter_table, "ALTER TABLE" if kind != "INDEX" else "ALTER INDEX")
    if isinstance(tree, exp.TruncateTable):
        return bind(truncate, "TRUNCATE TABLE")
    if isinstance(tree, exp.Comment):
        return bind(comment, "COMMENT")
    if isinstance(tree, exp.Command):
        raise PgError(SYNTAX_ERROR, f'syntax error at or near "{str(tree.this).split()[0] if str(tree.this).split() else tree.this}"')
    raise PgError(FEATURE_NOT_SUPPORTED, f"statement not supported: {type(tree).__name__}")


# ------------------------------------------------------------------ streams

class CreateStreamStmt(Stmt):
    """CREATE FOREIGN TABLE name (cols) SERVER stream [OPTIONS (capacity 'n')]."""

    cacheable = False
    tag = "CREATE FOREIGN TABLE"

    def __init__(self, head: str, cols: str, server: str, options: dict, exists_ok: bool) -> None:
        self.head, self.cols, self.server, self.options, self.exists_ok = head, cols, server, options, exists_ok

    @staticmethod
    def parse(text: str) -> "CreateStreamStmt":
        m = re.match(r"\s*create\s+foreign\s+table\s+(if\s+not\s+exists\s+)?(.+?)\s*\((.*)\)\s*server\s+(\"?[\w]+\"?)\s*(?:options\s*\((.*)\))?\s*;?\s*$",
                     text, re.I | re.S)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error in CREATE FOREIGN TABLE",
                          hint="Write CREATE FOREIGN TABLE name (column type, ...) SERVER stream.")
        opts = {}
        if m.group(5):
            for k, v in re.findall(r"(\w+)\s+'([^']*)'", m.group(5)):
                opts[k.lower()] = v
        server = m.group(4).strip('"')
        if not (m.group(4).startswith('"')):
            server = server.lower()
        return CreateStreamStmt(m.group(2).strip(), m.group(3), server, opts, bool(m.group(1)))

    def run(self, session, ctx):
        from .planner import Planner

        if self.server not in STREAM_SERVERS:
            raise PgError(UNDEFINED_OBJECT, f'server "{self.server}" does not exist',
                          hint="Streams are foreign tables on the reserved server \"stream\" (or \"pipelinedb\").")
        tree = parse_one(f"CREATE TABLE {self.head} ({self.cols})")
        planner = Planner(session.engine, ctx.state, session=session.info)
        st = ctx.txn.for_write(ctx.check_cancel)
        schema, name = _qual(tree.this.this)
        schema = _target_schema(planner, schema, st)
        if st.lookup(schema, name) is not None:
            if self.exists_ok:
                return Result(tag=self.tag, notices=[Notice(f'relation "{name}" already exists, skipping', "42P07")])
            raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
        cols, cons, seqs = column_defs(planner, [e for e in tree.this.expressions if isinstance(e, exp.ColumnDef)], name)
        if any(c.kind in ("p", "u", "f") for c in cons) or seqs:
            raise PgError(FEATURE_NOT_SUPPORTED, "streams do not support keys, unique constraints or serial columns",
                          hint="Declare plain columns on the stream; put keys on tables.")
        if any(c.name == "arrival_timestamp" for c in cols):
            raise PgError(DUPLICATE_COLUMN, 'column "arrival_timestamp" is implicit on streams')
        cap = int(self.options.get("capacity", DEFAULT_STREAM_CAPACITY))
        if cap <= 0:
            raise PgError("22023", "capacity must be a positive number of rows")
        cols = tuple(cols) + (ColumnDef("arrival_timestamp", type_oids.TIMESTAMPTZ, hidden=True, attnum=len(cols) + 1),)
        rel = Relation(ctx.txn.new_oid(), schema, name, "f", cols, tuple(c for c in cons if c.kind == "c"),
                       server=self.server, capacity=cap, options=tuple(sorted(self.options.items())))
        ctx.txn.apply(("rel", rel))
        return Result(tag=self.tag)


def create_server(text: str) -> Stmt:
    m = re.match(r"\s*create\s+server\s+(if\s+not\s+exists\s+)?(\"?\w+\"?)", text, re.I)
    name = m.group(2).strip('"').lower() if m else ""

    class _S(Stmt):
        def run(self, session, ctx):
            if name in STREAM_SERVERS:
                raise PgError(DUPLICATE_OBJECT, f'server "{name}" already exists',
                              hint=f'The server name "{name}" is reserved for streams: create streams with CREATE FOREIGN TABLE ... SERVER {name}.')
            raise PgError(FEATURE_NOT_SUPPORTED, "foreign servers other than the stream server are not supported")

    return _S()


def foreign_table_ddl(text: str, words: list[str]) -> Stmt:
    if words[0] == "DROP":
        rewritten = re.sub(r"(?i)^\s*drop\s+foreign\s+table", "DROP TABLE", text)
        tree = parse_one(rewritten)

        class _D(Stmt):
            cacheable = False

            def run(self, session, ctx):
                from .planner import Planner

                pl = Planner(session.engine, ctx.state, session=session.info)
                for t in tree.args.get("tables") or tree.expressions or [tree.this]:
                    schema, name = _qual(t)
                    rel = pl.lookup_relation(name, schema)
                    if rel is not None and rel.kind != "f":
                        raise PgError(WRONG_OBJECT_TYPE, f'"{name}" is not a foreign table', hint=f"Use DROP {_drop_word(rel)} to remove {_kind_article(rel)}.")
                    if rel is None and not tree.args.get("exists"):
                        raise PgError(UNDEFINED_TABLE, f'foreign table "{name}" does not exist')
                tree.set("kind", "FOREIGN TABLE")
                notices = drop(session, ctx, pl, tree, text)
                return Result(tag="DROP FOREIGN TABLE", notices=notices)

        return _D()
    rewritten = re.sub(r"(?i)^\s*alter\s+foreign\s+table", "ALTER TABLE", text)
    tree = parse_one(rewritten)

    class _A(Stmt):
        cacheable = False

        def run(self, session, ctx):
            from .planner import Planner

            pl = Planner(session.engine, ctx.state, session=session.info)
            for action in tree.args.get("actions") or []:
                if not isinstance(action, (exp.ColumnDef, exp.AlterRename, exp.RenameColumn)):
                    raise PgError(FEATURE_NOT_SUPPORTED, "only ADD COLUMN and RENAME are supported on streams")
            return Result(tag="ALTER FOREIGN TABLE", notices=alter_table(session, ctx, pl, tree, text))

    return _A()


class CreateRoleStmt(Stmt):
    cacheable = False

    def __init__(self, name, password, superuser, login, alter) -> None:
        self.name, self.password, self.superuser, self.login, self.alter = name, password, superuser, login, alter
        self.tag = "ALTER ROLE" if alter else "CREATE ROLE"

    @staticmethod
    def parse(text: str, alter: bool = False) -> "CreateRoleStmt":
        m = re.match(r"\s*(?:create|alter)\s+(role|user)\s+(\"[^\"]+\"|\w+)\s*(.*)$", text, re.I | re.S)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error in role statement")
        name = m.group(2).strip('"') if m.group(2).startswith('"') else m.group(2).lower()
        rest = m.group(3)
        pw = re.search(r"password\s+'((?:[^']|'')*)'", rest, re.I)
        su = re.search(r"\bsuperuser\b", rest, re.I) and not re.search(r"\bnosuperuser\b", rest, re.I)
        login = m.group(1).lower() == "user" or bool(re.search(r"\blogin\b", rest, re.I))
        if re.search(r"\bnologin\b", rest, re.I):
            login = False
        return CreateRoleStmt(name, pw.group(1).replace("''", "'") if pw else None, bool(su), login, alter)

    def run(self, session, ctx):

        st = ctx.txn.for_write(ctx.check_cancel)
        existing = st.roles.get(self.name)
        if self.alter:
            if existing is None:
                raise PgError(UNDEFINED_OBJECT, f'role "{self.name}" does not exist')
            from dataclasses import replace

            pw = existing.password
            if self.password is not None:
                pw = _stored_password(ctx, self.name, self.password)
            ctx.txn.apply(("role", replace(existing, password=pw)))
            return Result(tag="ALTER ROLE")
        if existing is not None:
            raise PgError(DUPLICATE_OBJECT, f'role "{self.name}" already exists')
        pw = None
        if self.password is not None:
            pw = _stored_password(ctx, self.name, self.password)
        ctx.txn.apply(("role", Role(ctx.txn.new_oid(), self.name, superuser=self.superuser, login=self.login, password=pw)))
        return Result(tag="CREATE ROLE")


def _stored_password(ctx, role: str, password: str) -> str:
    """What PostgreSQL stores for PASSWORD '...': a given hash as is, else a SCRAM verifier
    or (SET password_encryption = 'md5') an md5 hash."""
    from splitstream.protocol.auth import is_md5_hash, make_md5_hash, make_scram_verifier

    if password.startswith("SCRAM-SHA-256$") or is_md5_hash(password):
        return password
    if ctx.setting("password_encryption", "scram-sha-256").lower() == "md5":
        return make_md5_hash(password, role)
    return make_scram_verifier(password)


class DropRoleStmt(Stmt):
    cacheable = False
    tag = "DROP ROLE"

    def __init__(self, name, exists_ok):
        self.name, self.exists_ok = name, exists_ok

    @staticmethod
    def parse(text):
        m = re.match(r"\s*drop\s+(?:role|user)\s+(if\s+exists\s+)?(\"[^\"]+\"|\w+)", text, re.I)
        return DropRoleStmt(m.group(2).strip('"') if m.group(2).startswith('"') else m.group(2).lower(), bool(m.group(1)))

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        if self.name not in st.roles:
            if self.exists_ok:
                return Result(tag="DROP ROLE", notices=[Notice(f'role "{self.name}" does not exist, skipping')])
            raise PgError(UNDEFINED_OBJECT, f'role "{self.name}" does not exist')
        ctx.txn.apply(("drop_role", self.name))
        return Result(tag="DROP ROLE")


def sequence_function(engine, planner, name, args):
    from splitstream.catalog.vector import Col

    def find(st, v):
        if isinstance(v, int):
            rel = st.rels.get(v)
        else:
            parts = str(v).split(".")
            rel = planner.lookup_relation(parts[-1].strip('"').lower(), parts[0] if len(parts) > 1 else None)
        if rel is None or rel.kind != "S":
            raise PgError(UNDEFINED_TABLE, f'relation "{v}" does not exist')
        return rel

    if name == "nextval":
        def impl(cols, n, ctx):
            vals = cols[0].to_pylist()
            out = [engine.db.nextval(find(ctx.state, v).oid, find(ctx.state, v)) for v in vals]
            if out:
                ctx.session.settings["__lastval"] = str(out[-1])
                ctx.session.settings[f"__currval_{find(ctx.state, vals[-1]).oid}"] = str(out[-1])
            return Col.from_pylist(out, type_oids.INT8)

        return expr.Func("nextval", impl, [planner.coerce(args[0], type_oids.TEXT) if args[0].oid == type_oids.UNKNOWN else args[0]], type_oids.INT8, volatile=True)
    if name == "currval":
        def impl2(cols, n, ctx):
            rel = find(ctx.state, cols[0].to_pylist()[0])
            v = ctx.session.settings.get(f"__currval_{rel.oid}")
            if v is None:
                raise PgError("55000", f'currval of sequence "{rel.name}" is not yet defined in this session')
            return Col.const(int(v), type_oids.INT8, n)

        return expr.Func("currval", impl2, [planner.coerce(args[0], type_oids.TEXT) if args[0].oid == type_oids.UNKNOWN else args[0]], type_oids.INT8, volatile=True)
    if name == "lastval":
        def impl3(cols, n, ctx):
            v = ctx.session.settings.get("__lastval")
            if v is None:
                raise PgError("55000", "lastval is not yet defined in this session")
            return Col.const(int(v), type_oids.INT8, n)

        return expr.Func("lastval", impl3, [], type_oids.INT8, volatile=True)
    if name == "setval":
        def impl4(cols, n, ctx):
            rel = find(ctx.state, cols[0].to_pylist()[0])
            v = cols[1].to_pylist()[0]
            called = cols[2].to_pylist()[0] if len(cols) > 2 else True
            engine.db.setval(rel.oid, int(v), bool(called))
            return Col.const(int(v), type_oids.INT8, n)

        a = [planner.coerce(args[0], type_oids.TEXT) if args[0].oid == type_oids.UNKNOWN else args[0], planner.coerce(args[1], type_oids.INT8)] + \
            ([planner.coerce(args[2], type_oids.BOOL)] if len(args) > 2 else [])
        return expr.Func("setval", impl4, a, type_oids.INT8, volatile=True)
    raise PgError("42883", f"function {name} does not exist")
