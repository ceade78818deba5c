"""DDL: CREATE / DROP / ALTER of schemas, tables, streams, views, indexes,
sequences and roles.  Every change is a logged catalog operation applied
through the session's transaction, so DDL is transactional."""
from __future__ import annotations

import re

from dataclasses import replace

import numpy as np
from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.objects.model import ColumnDef, Constraint, Relation
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    CHECK_VIOLATION,
    DEPENDENT_OBJECTS_STILL_EXIST,
    DUPLICATE_COLUMN,
    DUPLICATE_TABLE,
    FEATURE_NOT_SUPPORTED,
    INVALID_PARAMETER_VALUE,
    INVALID_TABLE_DEFINITION,
    SYNTAX_ERROR,
    UNDEFINED_COLUMN,
    UNDEFINED_OBJECT,
    UNDEFINED_TABLE,
    WRONG_OBJECT_TYPE,
    Notice,
    PgError,
)

from ..execution import operators, privileges
from ..sql import collations
from ..sql.binder import collation_of, datatype_to_oid, ident
from ..sql.dialect import DIALECT
from ..sql.planner import Planner
from ..stream.guard import views_reading
from .dml import check_expression, check_unique_existing, eval_default, insert_batch
from .drop import all_dependents, cascade_notice, drop_relation, kind_word
from .names import qual, target_schema
from .schemas import sequence_option_fields
from .sequences import rename_sequence_references


#: pseudo-types no stored column may have (PostgreSQL's CheckAttributeType)
_PSEUDO_TYPES = (type_oids.RECORD, type_oids.ARRAY_OF[type_oids.RECORD], type_oids.VOID, type_oids.ANY)


def stored_column(name: str, oid: int, typmod: int = -1, attnum: int = 0) -> ColumnDef:
    """A column of a table, view or materialized view made from a query's
    output: an unknown-typed one is text, a row value (record) is refused
    with 42P16 as PostgreSQL does (a row has no storage here)."""
    if oid in _PSEUDO_TYPES:
        raise PgError(INVALID_TABLE_DEFINITION, f'column "{name}" has pseudo-type {sqltypes.format_type(oid)}')
    return ColumnDef(name, oid if oid != type_oids.UNKNOWN else type_oids.TEXT, typmod, attnum=attnum)


def column_defs(planner, cols: list[exp.ColumnDef], table_name: str,
                schema: str | None = None) -> tuple[list[ColumnDef], list[Constraint], list]:
    """``schema``: the table's; a serial or identity default names its
    sequence with it unless an unqualified name finds that schema first (the
    default is kept as text and resolved when it runs, so an unqualified name
    would miss a sequence of a schema outside the search path; PostgreSQL
    prints it so too)."""
    out: list[ColumnDef] = []
    first = next((p for p in planner.search_path() if p in planner.state.schemas), None)
    seq_prefix = f"{table_name}_" if schema in (None, first) else f"{schema}.{table_name}_"
    cons: list[Constraint] = []
    seqs: list[tuple[str, int, exp.Expression | None]] = []     # (column, type, its identity options)
    for i, cd in enumerate(cols):
        name = ident(cd.this)
        if any(c.name == name for c in out):
            raise PgError(DUPLICATE_COLUMN, f'column "{name}" specified more than once')
        kind = cd.args.get("kind")
        if kind is None:
            raise PgError(SYNTAX_ERROR, f'syntax error at or near "{name}"')
        oid, typmod = datatype_to_oid(kind)
        stored_column(name, oid)
        not_null = False
        default = None
        identity = ""
        tname = kind.this.name if hasattr(kind.this, "name") else str(kind.this)
        if tname in ("SERIAL", "BIGSERIAL", "SMALLSERIAL"):
            seqs.append((name, oid, None))
            default = f"nextval('{seq_prefix}{name}_seq'::regclass)"
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
                seqs.append((name, oid, k))     # its sequence options: START WITH, INCREMENT BY, ...
                default = f"nextval('{seq_prefix}{name}_seq'::regclass)"
            elif isinstance(k, exp.Reference) or (k is not None and type(k).__name__ == "Reference"):
                cons.append(_fk_from_reference(planner, k, [name], f"{table_name}_{name}_fkey"))
            elif isinstance(k, exp.CollateColumnConstraint):
                _column_collation(k.this, oid)
        if [c for c in (cd.args.get("constraints") or []) if isinstance(c.args.get("kind"), exp.Reference)]:
            pass
        out.append(ColumnDef(name, oid, typmod, not_null, default, identity, attnum=i + 1))
    return out, cons, seqs


def _column_collation(node, type_oid: int) -> None:
    """A column's COLLATE: a collation splitstream honours (they all compare
    as the default one does, so the column keeps no other), on a type with
    collations; checked in PostgreSQL's order (GetColumnDefCollation)."""
    collation_of(node)
    collations.check_collatable(type_oid)


def _fk_from_reference(planner, ref, cols, name) -> Constraint:
    tbl = ref.this
    if isinstance(tbl, exp.Schema):
        table = tbl.this
        ref_cols = tuple(ident(e) for e in tbl.expressions)
    else:
        table = tbl
        ref_cols = ()
    schema, rname = qual(table)
    target = planner.lookup_relation(rname, schema)
    if target is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{rname}" does not exist')
    if not ref_cols:
        pk = target.primary_key
        if pk is None:
            raise PgError("42830", f'there is no primary key for referenced table "{rname}"')
        ref_cols = pk.columns
    on_delete, on_update = _fk_actions(" ".join(str(o) for o in (ref.args.get("options") or [])).upper())
    return Constraint(name, "f", tuple(cols), ref_table=target.oid, ref_columns=tuple(ref_cols), on_delete=on_delete,
                      on_update=on_update)


def _fk_actions(opts: str) -> tuple[str, str]:
    """A foreign key's ON DELETE and ON UPDATE actions (pg_constraint's
    letters); one splitstream does not carry out is refused, never kept and
    ignored: ON DELETE SET DEFAULT and ON UPDATE CASCADE / SET NULL / SET
    DEFAULT (a referenced key cannot change while rows refer to it here)."""
    on_delete = {"CASCADE": "c", "SET NULL": "n", "RESTRICT": "r", "NO ACTION": "a"}
    on_update = {"RESTRICT": "r", "NO ACTION": "a"}
    actions = []
    for when, known in (("DELETE", on_delete), ("UPDATE", on_update)):
        m = re.search(rf"\bON {when} (CASCADE|SET NULL|SET DEFAULT|RESTRICT|NO ACTION)\b", opts)
        word = m.group(1) if m else "NO ACTION"
        if word not in known:
            raise PgError(FEATURE_NOT_SUPPORTED, f"ON {when} {word} is not supported",
                          hint="Foreign keys here carry out ON DELETE CASCADE, ON DELETE SET NULL and NO ACTION / "
                               "RESTRICT; update or delete the referencing rows first."
                               if when == "UPDATE" or word == "SET DEFAULT" else None)
        actions.append(known[word])
    return actions[0], actions[1]


#: the name ``unnamed_check`` gives ALTER TABLE ... ADD CHECK (...) so sqlglot reads it (then named as PostgreSQL names it)
UNNAMED = "splitstream unnamed constraint"
_ADD_CHECK = re.compile(r"(\bADD\s+)(CHECK\s*\()", re.I)


def unnamed_check(text: str, words: list[str]) -> str:
    """ALTER TABLE ... ADD CHECK (...), which sqlglot does not read without a
    constraint name: given a placeholder name, replaced by PostgreSQL's."""
    if words[:2] == ["ALTER", "TABLE"] or words[:3] == ["ALTER", "FOREIGN", "TABLE"]:
        return _ADD_CHECK.sub(lambda m: f'{m.group(1)}CONSTRAINT "{UNNAMED}" {m.group(2)}', text)
    return text


def _check_name(table_name: str, check: exp.Expression, taken: set[str]) -> str:
    """An unnamed CHECK's name, as PostgreSQL chooses it: after the one
    column it reads, else after the table alone, numbered past names taken."""
    cols = {ident(c.this) for c in check.find_all(exp.Column)}
    base = f"{table_name}_{cols.pop()}_check" if len(cols) == 1 else f"{table_name}_check"
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}{k}"
    return name


def _table_constraints(planner, exprs, table_name, cols, taken: frozenset[str] = frozenset()) -> list[Constraint]:
    out: list[Constraint] = []
    for e in exprs:
        name = None
        if isinstance(e, exp.Constraint):
            name = ident(e.this)
            name = None if name == UNNAMED else name
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
                name = name or _check_name(table_name, k.this, set(taken) | {c.name for c in out})
                out.append(Constraint(name, "c", (), check_sql=k.this.sql(DIALECT)))
            elif isinstance(k, exp.ForeignKey):
                fk_names = [ident(c) for c in k.expressions]
                ref = k.args.get("reference")
                fk = _fk_from_reference(planner, ref, fk_names, name or f"{table_name}_{'_'.join(fk_names)}_fkey")
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


#: heap storage parameters of PostgreSQL 15 (WITH (...)): they tune page
#: layout, TOAST and autovacuum, none of which splitstream has, so they are inert
_STORAGE_PARAMETERS = frozenset({
    "fillfactor", "toast_tuple_target", "parallel_workers", "user_catalog_table", "vacuum_index_cleanup",
    "vacuum_truncate", "log_autovacuum_min_duration", "autovacuum_enabled"})

_TABLE_PROPERTIES_REFUSED = {
    exp.TemporaryProperty: ("temporary tables are not supported",
                            "Tables are shared and permanent; create a regular table and drop it when done."),
    exp.PartitionedByProperty: ("partitioned tables are not supported", "Use one table."),
    exp.PartitionedOfProperty: ("partitioned tables are not supported", "Use one table."),
    exp.InheritsProperty: ("table inheritance is not supported", "Use one table, or a view over a UNION ALL."),
}


def check_table_properties(tree: exp.Create) -> None:
    """Refuse what CREATE TABLE would otherwise accept and ignore: a
    temporary, partitioned or inheriting table (0A000), another tablespace
    than pg_default (42704, there is no other), an unknown storage parameter
    (22023).  UNLOGGED is honoured; known storage parameters are inert."""
    props = tree.args.get("properties")
    for p in props.expressions if props is not None else []:
        if isinstance(p, exp.UnloggedProperty):
            continue
        if isinstance(p, exp.TableSpaceProperty):
            ts = ident(p.this) if isinstance(p.this, exp.Identifier) else p.this.name
            if ts != "pg_default":
                raise PgError(UNDEFINED_OBJECT, f'tablespace "{ts}" does not exist')
            continue
        if type(p) is exp.Property:
            key = p.name.lower()
            if key == "oids" and p.args["value"].sql(DIALECT).lower() in ("false", "off", "0"):
                continue                                 # WITH (OIDS = FALSE): the only kind of table there is
            if key not in _STORAGE_PARAMETERS and not key.startswith(("autovacuum_", "toast.")):
                raise PgError(INVALID_PARAMETER_VALUE, f'unrecognized parameter "{key}"')
            continue
        message, hint = _TABLE_PROPERTIES_REFUSED.get(type(p), (f"CREATE TABLE ... {p.sql(DIALECT)} is not supported",
                                                                "Create the table without this option."))
        raise PgError(FEATURE_NOT_SUPPORTED, message, hint=hint)


def create_table(session, ctx, planner, tree: exp.Create, text: str):
    props = tree.args.get("properties")
    if props is not None and any(isinstance(p, exp.TemporaryProperty) for p in props.expressions):
        privileges.check_temporary(ctx.state, session.info)     # refused below, but 42501 comes first
    check_table_properties(tree)
    schema_node = tree.this
    exists_ok = bool(tree.args.get("exists"))
    st = ctx.txn.for_write(ctx.check_cancel)
    if isinstance(schema_node, exp.Schema):
        table = schema_node.this
        col_nodes = [e for e in schema_node.expressions if isinstance(e, exp.ColumnDef)]
        other = [e for e in schema_node.expressions if not isinstance(e, exp.ColumnDef)]
    else:
        table, col_nodes, other = schema_node, [], []
    schema, name = qual(table)
    as_query = tree.args.get("expression")
    if as_query is not None:        # the query's privileges are checked first, as PostgreSQL's executor does
        pl = Planner(session.engine, ctx.state, session=session.info)
        pl.use_columns_of(as_query)
        plan = pl.plan_query(as_query)
        privileges.authorize(ctx.state, session.info, pl.needs)
    schema = target_schema(planner, schema, st)
    if st.lookup(schema, name) is not None:
        if exists_ok:
            return [Notice(f'relation "{name}" already exists, skipping', "42P07")]
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
    rows = None
    if as_query is not None:
        rows = operators.run_plan(plan, ctx)
        names = [ident(c.this) if isinstance(c, exp.ColumnDef) else ident(c) for c in (schema_node.expressions if isinstance(schema_node, exp.Schema) else [])]
        cols = [stored_column(names[i] if i < len(names) else c.name, c.oid, c.typmod, i + 1) for i, c in enumerate(plan.out)]
        cons: list[Constraint] = []
        seqs: list[tuple[str, int, exp.Expression | None]] = []
    else:
        cols, cons, seqs = column_defs(planner, col_nodes, name, schema)
        cons += _table_constraints(planner, other, name, cols, frozenset(c.name for c in cons))
    # primary key columns are NOT NULL
    pk_cols = {c for con in cons if con.kind == "p" for c in con.columns}
    if sum(1 for c in cons if c.kind == "p") > 1:
        raise PgError(INVALID_TABLE_DEFINITION, f'multiple primary keys for table "{name}" are not allowed')
    cols = [ColumnDef(c.name, c.type_oid, c.typmod, c.not_null or c.name in pk_cols, c.default, c.identity, attnum=c.attnum) for c in cols]
    for con in cons:
        for cn in con.columns:
            if not any(c.name == cn for c in cols):
                raise PgError(UNDEFINED_COLUMN, f'column "{cn}" named in key does not exist')
    seq_oids = [ctx.txn.new_oid() for _ in seqs]      # serial sequences come first, as PostgreSQL creates them
    oid = ctx.txn.new_oid()
    owner = privileges.current_role(st, session.info).oid
    notices: list[Notice] = []
    for (cname, coid, options), seq_oid in zip(seqs, seq_oids):
        type_max = (2**31 - 1) if coid == type_oids.INT4 else (2**15 - 1 if coid == type_oids.INT2 else 2**63 - 1)
        ctx.txn.apply(("rel", Relation(seq_oid, schema, f"{name}_{cname}_seq", "S", seq_type=coid, owner=owner,
                                       owned_by=(oid, cname), **sequence_option_fields(options, type_max))))
    final_cons = [_with_index(ctx, schema, owner, oid, cols, con) if con.kind in ("p", "u") else con for con in cons]
    props = tree.args.get("properties")
    unlogged = props is not None and any(isinstance(p, exp.UnloggedProperty) for p in props.expressions)
    rel = Relation(oid, schema, name, "r", tuple(cols), tuple(final_cons), persistence="u" if unlogged else "p",
                   owner=owner)
    ctx.txn.apply(("rel", rel))
    if rows is not None and rows.n:
        insert_batch(session, ctx, rel, rows)
    return notices


#: PostgreSQL 15's index access methods (an index here only speeds lookups, whatever the method)
_INDEX_METHODS = frozenset({"btree", "hash", "gist", "gin", "spgist", "brin"})


def create_index(session, ctx, planner, tree: exp.Create, text: str):
    idx = tree.this
    name = ident(idx.this) if idx.this is not None else None
    table = idx.args.get("table")
    schema, tname = qual(table)
    st = ctx.txn.for_write(ctx.check_cancel)
    rel = planner.lookup_relation(tname, schema)
    if rel is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{tname}" does not exist')
    privileges.require_relation_owner(st, session.info, rel)
    params = idx.args.get("params")
    cols = []
    for c in (params.args.get("columns") if params is not None else []) or []:
        node = c.this if isinstance(c, exp.Ordered) else c
        if isinstance(node, exp.Collate):
            _index_collation(rel, node)
            node = node.this
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
    if method not in _INDEX_METHODS:
        raise PgError(UNDEFINED_OBJECT, f'access method "{method}" does not exist')
    if unique and params is not None and params.args.get("where") is not None:
        # enforced over every row it would refuse duplicates PostgreSQL allows
        raise PgError(FEATURE_NOT_SUPPORTED, "partial unique indexes are not supported",
                      hint="Drop the WHERE clause, or keep the rows that must be unique in a table of their own.")
    oid = ctx.txn.new_oid()
    ctx.txn.apply(("rel", Relation(oid, rel.schema, name, "i", index_table=rel.oid, index_columns=tuple(cols), owner=rel.owner,
                                   index_unique=unique, index_method=method,
                                   columns=tuple(c for c in rel.live_columns if c.name in cols))))
    if unique:
        check_unique_existing(session, ctx, rel, cols, name)
        new_cons = rel.constraints + (Constraint(name, "u", tuple(cols), index_oid=oid, from_index=True),)
        ctx.txn.apply(("rel", rel.with_(constraints=new_cons)))
    return []


def _index_collation(rel: Relation, node: exp.Collate) -> None:
    """An index column's COLLATE, checked as for an expression (an index
    sorts by code point, as every collation splitstream honours)."""
    collation_of(node.expression)
    col = rel.column(ident(node.this)) if isinstance(node.this, exp.Column) else None
    if col is not None:
        collations.check_collatable(col.type_oid)


def _refuse_column_change_of_matview(rel: Relation, action) -> None:
    """A materialized view's columns are its query's (PostgreSQL 15's error)."""
    if not rel.materialized:
        return
    word = "ADD COLUMN" if isinstance(action, exp.ColumnDef) else (
        "DROP COLUMN" if isinstance(action, exp.Drop) and str(action.args.get("kind")).upper() == "COLUMN" else None)
    if word is not None:
        raise PgError(WRONG_OBJECT_TYPE, f'ALTER action {word} cannot be performed on relation "{rel.name}"',
                      detail="This operation is not supported for materialized views.")


def alter_table(session, ctx, planner, tree: exp.Alter, text):
    schema, name = qual(tree.this)
    st = ctx.txn.for_write(ctx.check_cancel)
    rel = planner.lookup_relation(name, schema)
    if rel is None:
        if tree.args.get("exists"):
            return [Notice(f'relation "{name}" does not exist, skipping')]
        raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
    privileges.require_relation_owner(st, session.info, rel)
    notices = []
    for action in tree.args.get("actions") or []:
        rel = ctx.txn.state.rels[rel.oid]
        _refuse_column_change_of_matview(rel, action)
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
            for seq in _owned_sequences(ctx.txn.state, rel, old):
                ctx.txn.apply(("rel", seq.with_(owned_by=(rel.oid, new))))
        elif isinstance(action, exp.AlterRename):
            new = ident(action.this.this) if isinstance(action.this, exp.Table) else ident(action.this)
            if st.lookup(rel.schema, new) is not None:
                raise PgError(DUPLICATE_TABLE, f'relation "{new}" already exists')
            _refuse_rename(ctx, rel, None)
            if rel.kind == "S":
                rename_sequence_references(ctx, planner, rel, new)
            ctx.txn.apply(("rel", ctx.txn.state.rels[rel.oid].with_(name=new)))
        elif isinstance(action, exp.AlterColumn):
            _alter_column(ctx, rel, action)
        elif type(action).__name__ in ("AddConstraint",):
            _add_constraints(session, ctx, planner, rel, action)
        else:
            raise PgError(FEATURE_NOT_SUPPORTED, f"ALTER TABLE action not supported: {action.sql(DIALECT)[:60]}")
    return notices


def _with_index(ctx, schema: str, owner: int, table_oid: int, cols, con: Constraint) -> Constraint:
    """A primary key or unique constraint with the index that enforces it, made now."""
    idx_oid = ctx.txn.new_oid()
    ctx.txn.apply(("rel", Relation(idx_oid, schema, con.name, "i", index_table=table_oid, index_columns=con.columns,
                                   owner=owner, index_unique=True, index_primary=con.kind == "p",
                                   columns=tuple(c for c in cols if c.name in con.columns))))
    return replace(con, index_oid=idx_oid)


def _add_constraints(session, ctx, planner, rel: Relation, action) -> None:
    """ALTER TABLE ADD CONSTRAINT.  A primary key or unique constraint is
    checked against the rows and gets its index, as CREATE TABLE's (pg_dump
    adds them so, after the data); a primary key's columns become NOT NULL."""
    for con in _table_constraints(planner, action.expressions, rel.name, rel.columns,
                                  frozenset(c.name for c in rel.constraints)):
        rel = ctx.txn.state.rels[rel.oid]
        if con.kind in ("p", "u"):
            if con.kind == "p" and rel.primary_key is not None:
                raise PgError(INVALID_TABLE_DEFINITION, f'multiple primary keys for table "{rel.name}" are not allowed')
            if ctx.txn.state.lookup(rel.schema, con.name) is not None:
                raise PgError(DUPLICATE_TABLE, f'relation "{con.name}" already exists')
            check_unique_existing(session, ctx, rel, list(con.columns), con.name)
            if con.kind == "p":
                rel = _set_not_null(ctx, rel, con.columns)
            con = _with_index(ctx, rel.schema, rel.owner, rel.oid, rel.live_columns, con)
        elif con.kind == "c":
            _check_existing_rows(session, ctx, rel, con)
        ctx.txn.apply(("rel", rel.with_(constraints=rel.constraints + (con,))))


def _check_existing_rows(session, ctx, rel: Relation, con) -> None:
    """A CHECK added to a table holds for its rows, as PostgreSQL validates
    it (23514 naming the constraint; a NULL result passes)."""
    tv = ctx.txn.state.data.get(rel.oid)
    if tv is None:
        return
    b = tv.scan()[0]
    if not b.n:
        return
    rows = Batch([b.cols[rel.column_index(c.name)] for c in rel.live_columns], b.n)
    c = check_expression(session, ctx, rel, con.check_sql).eval(rows, ctx)
    if (~c.data.astype(bool) & ~c.null_mask()).any():
        raise PgError(CHECK_VIOLATION, f'check constraint "{con.name}" of relation "{rel.name}" is violated by some row')


def _set_not_null(ctx, rel: Relation, names) -> Relation:
    """The columns ``names`` made NOT NULL (23502 when one holds a null)."""
    tv = ctx.txn.state.data.get(rel.oid)
    b = tv.scan()[0] if tv is not None else None
    for name in names:
        if b is not None and b.cols[rel.column_index(name)].nulls is not None:
            raise PgError("23502", f'column "{name}" of relation "{rel.name}" contains null values')
    rel = rel.with_(columns=tuple(replace(c, not_null=True) if c.name in names else c for c in rel.columns))
    ctx.txn.apply(("rel", rel))
    return rel


def _refuse_rename(ctx, rel, column: str | None) -> None:
    """A continuous view keeps its query as SQL text and plans it again after
    a restart: a relation or column name it uses must stay (PostgreSQL,
    which keeps views as parse trees, allows the rename)."""

    views = views_reading(ctx.txn.state, rel, column)
    if views:
        kind = "stream" if rel.kind == "f" else kind_word(rel)
        what = f'column "{column}" of {kind} "{rel.name}"' if column is not None else f'{kind} "{rel.name}"'
        raise PgError(FEATURE_NOT_SUPPORTED, f'cannot rename {what}: continuous view "{views[0].name}" uses it',
                      hint="A continuous view keeps its defining query as text: drop the view, rename, "
                           "and create the view again.")


def _refuse_retype(ctx, rel, column: str) -> None:
    """As PostgreSQL for any view: the view's plan (and a static table's
    hash table) hold the column's values as they were typed."""

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

    if action.args.get("drop"):
        new = replace(c, default=None) if action.args.get("drop") and "DEFAULT" in action.sql(DIALECT).upper() else new
        if "NOT NULL" in action.sql(DIALECT).upper():
            new = replace(c, not_null=False)
    elif action.args.get("default") is not None:
        new = replace(c, default=action.args["default"].sql(DIALECT))
    elif action.args.get("allow_null") is False or "SET NOT NULL" in action.sql(DIALECT).upper():
        _set_not_null(ctx, rel, (name,))
        return
    elif action.args.get("dtype") is not None:
        _refuse_retype(ctx, rel, name)
        oid, typmod = datatype_to_oid(action.args["dtype"])
        if isinstance(action.args.get("collate"), exp.Expression):     # (sqlglot sets False when absent)
            _column_collation(action.args["collate"], oid)
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
    cols, cons, seqs = column_defs(planner, [cd], rel.name, rel.schema)
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
    for seq in _owned_sequences(ctx.txn.state, rel, name):     # pg_depend 'a': the column's sequences go with it
        drop_relation(session, ctx, seq)
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


def _owned_sequences(st, rel: Relation, column: str) -> list[Relation]:
    """The sequences OWNED BY ``rel``'s ``column`` (its serial or identity, or ALTER SEQUENCE ... OWNED BY)."""
    return [s for s in st.rels.values() if s.kind == "S" and s.owned_by == (rel.oid, column)]


def _drop_column_dependents(session, ctx, rel, name, cascade) -> list:
    """Continuous views reading the column: refused as in PostgreSQL, or
    dropped with CASCADE (with the views built on them)."""

    views = views_reading(ctx.txn.state, rel, name)
    if not views:
        return []
    if not cascade:
        raise PgError(DEPENDENT_OBJECTS_STILL_EXIST,
                      f"cannot drop column {name} of {kind_word(rel)} {rel.name} because other objects depend on it",
                      detail="\n".join(f"view {v.name} depends on column {name} of {kind_word(rel)} {rel.name}" for v in views),
                      hint="Use DROP ... CASCADE to drop the dependent objects too.")
    st = ctx.txn.state
    doomed = []
    for v in views:
        doomed += [d for d in all_dependents(st, v.oid) + [v] if d not in doomed]
    for d in doomed:
        drop_relation(session, ctx, d)
    return [cascade_notice(doomed, None)]


def truncate(session, ctx, planner, tree, text):
    ctx.txn.for_write(ctx.check_cancel)
    for t in tree.expressions:
        schema, name = qual(t)
        rel = planner.lookup_relation(name, schema)
        if rel is None:
            raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
        if rel.kind == "f":
            raise PgError(WRONG_OBJECT_TYPE, f'cannot truncate stream "{name}"',
                          hint="Streams are append-only; their ring buffer drops old tuples by itself.")
        if rel.relkind != "r":
            raise PgError(WRONG_OBJECT_TYPE, f'"{name}" is not a table')
        planner.need("D", rel.oid)
        privileges.authorize(ctx.state, session.info, planner.needs)
        ctx.txn.apply(("truncate", rel.oid))
        if str(tree.args.get("identity") or "").upper() == "RESTART":
            _restart_owned_sequences(session, ctx, rel)
    return []


def _restart_owned_sequences(session, ctx, rel) -> None:
    """TRUNCATE ... RESTART IDENTITY: the sequences the table's columns own
    start over, when the transaction commits (as PostgreSQL's, undone by a rollback)."""
    for seq in list(ctx.state.rels.values()):
        if seq.kind == "S" and seq.owned_by is not None and seq.owned_by[0] == rel.oid:
            ctx.txn.after_commit.append(lambda s=seq: session.engine.db.setval(s.oid, s.seq_start, called=False))


# ------------------------------------------------------------------ streams


