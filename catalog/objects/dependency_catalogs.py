"""pg_depend and pg_init_privs, in PostgreSQL 15's shapes, from the catalog state.

Why: pg_dump (and other tools that order or attribute objects) read them.
pg_dump finds a sequence's owning column (OWNED BY, or the identity column it
serves) through pg_depend, orders a view after what its _RETURN rule reads,
and compares each object's ACL with pg_init_privs' initial one.  The rows are
the ones PostgreSQL records for the same objects (dependency.c's deptypes:
'n' normal, 'a' auto, 'i' internal, 'e' extension member); objects PostgreSQL has and splitstream
has not (toast tables, row types) have none.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Iterator

from splitstream.protocol import oids as type_oids

from . import acl
from .definition_text import constraint_oid
from .system_catalogs import (
    CATALOG_OIDS, PIPELINEDB_EXTENSION_OID, STREAM_FDW_OID, STREAM_SERVER_OID, TEXTARR, attrdef_oid, builtin_procs,
    column_defaults, ns_oid, rule_oid, table,
)

CATALOG_OIDS.update({"pg_depend": 2608, "pg_init_privs": 3394, "pg_shdepend": 1214})

PG_CLASS, PG_NAMESPACE, PG_CONSTRAINT, PG_ATTRDEF, PG_REWRITE, PG_PROC = 1259, 2615, 2606, 2604, 2618, 1255
PG_EXTENSION, PG_FOREIGN_DATA_WRAPPER, PG_FOREIGN_SERVER = 3079, 2328, 1417

#: one pg_depend row: (classid, objid, objsubid, refclassid, refobjid, refobjsubid, deptype)
Dep = tuple[int, int, int, int, int, int, str]

_NEXTVAL = re.compile(r"nextval\('((?:[^']|'')+)'")


@table("pg_catalog", "pg_depend", [
    ("classid", type_oids.OID), ("objid", type_oids.OID), ("objsubid", type_oids.INT4), ("refclassid", type_oids.OID),
    ("refobjid", type_oids.OID), ("refobjsubid", type_oids.INT4), ("deptype", type_oids.CHAR),
])
def _pg_depend(state, ctx) -> Iterator[Dep]:
    for r in state.rels.values():
        if r.kind != "i":
            yield (PG_CLASS, r.oid, 0, PG_NAMESPACE, ns_oid(state, r.schema), 0, "n")
        if r.kind == "S":
            yield from _sequence_deps(state, r)
        elif r.kind == "i":
            yield from _index_deps(state, r)
        elif r.relkind in ("v", "m") and r.sql:
            yield from _rule_deps(state, r)
        yield from _constraint_deps(state, r)
    yield from _default_deps(state)
    yield from _pipelinedb_members(state)


def _pipelinedb_members(state) -> Iterator[Dep]:
    """The extension's members: the stream server and wrapper, its schema and
    the functions in it, so pg_dump writes none of them (no CREATE SCHEMA
    pipelinedb, no CREATE FUNCTION pipelinedb.get_views)."""
    members = [(PG_FOREIGN_DATA_WRAPPER, STREAM_FDW_OID), (PG_FOREIGN_SERVER, STREAM_SERVER_OID),
               (PG_NAMESPACE, ns_oid(state, "pipelinedb"))]
    members += [(PG_PROC, e.oid) for e in builtin_procs() if e.name.startswith("pipelinedb.")]
    for classid, member in members:
        yield (classid, member, 0, PG_EXTENSION, PIPELINEDB_EXTENSION_OID, 0, "e")


def _sequence_deps(state, seq) -> Iterator[Dep]:
    """OWNED BY: auto ('a') on the column; an identity column's sequence is internal ('i') to it."""
    if seq.owned_by is None:
        return
    table_oid, column = seq.owned_by
    owner = state.rels.get(table_oid)
    if owner is None or not owner.attnum(column):
        return
    col = owner.column(column)
    yield (PG_CLASS, seq.oid, 0, PG_CLASS, owner.oid, owner.attnum(column), "i" if col.identity else "a")


def _index_deps(state, idx) -> Iterator[Dep]:
    """A constraint's index is internal to the constraint; a plain index is auto on each column."""
    t = state.rels.get(idx.index_table)
    if t is None:
        return
    con = next((c for c in t.constraints if c.index_oid == idx.oid and not c.from_index), None)
    if con is not None:
        yield (PG_CLASS, idx.oid, 0, PG_CONSTRAINT, constraint_oid(t, con), 0, "i")
        return
    for name in idx.index_columns:
        yield (PG_CLASS, idx.oid, 0, PG_CLASS, t.oid, t.attnum(name), "a")


def _constraint_deps(state, r) -> Iterator[Dep]:
    """A constraint is auto on its columns (on the table for a check naming none); a
    foreign key normally depends on the referenced table's key columns."""
    for c in r.constraints:
        if c.kind not in ("p", "u", "c", "f") or c.from_index:
            continue
        oid = constraint_oid(r, c)
        nums = [r.attnum(n) for n in c.columns if r.attnum(n)] or [0]
        for n in nums:
            yield (PG_CONSTRAINT, oid, 0, PG_CLASS, r.oid, n, "a")
        ref = state.rels.get(c.ref_table) if c.kind == "f" else None
        if ref is not None:
            for n in [ref.attnum(x) for x in c.ref_columns] or [0]:
                yield (PG_CONSTRAINT, oid, 0, PG_CLASS, ref.oid, n, "n")


def _rule_deps(state, view) -> Iterator[Dep]:
    """The _RETURN rule is internal to its view and normally depends on what the query reads."""
    rule = rule_oid(view)
    yield (PG_REWRITE, rule, 0, PG_CLASS, view.oid, 0, "i")
    for dep in view.depends_on:
        if dep in state.rels:
            yield (PG_REWRITE, rule, 0, PG_CLASS, dep, 0, "n")
        elif any(f.oid == dep for fns in state.functions.values() for f in fns):
            yield (PG_REWRITE, rule, 0, PG_PROC, dep, 0, "n")


def _default_deps(state) -> Iterator[Dep]:
    """A default is auto on its column and normally depends on a sequence its nextval() names."""
    for r, c, n in column_defaults(state):
        oid = attrdef_oid(r, n)
        yield (PG_ATTRDEF, oid, 0, PG_CLASS, r.oid, n, "a")
        for name in _NEXTVAL.findall(c.default or ""):
            seq = _sequence_named(state, name.replace("''", "'"), r.schema)
            if seq is not None:
                yield (PG_ATTRDEF, oid, 0, PG_CLASS, seq.oid, 0, "n")


def _sequence_named(state, name: str, schema: str):
    parts = [p.strip('"') for p in name.split(".")]
    want_schema = parts[0] if len(parts) > 1 else None
    for s in state.rels.values():
        if s.kind == "S" and s.name == parts[-1] and s.schema == (want_schema or s.schema):
            if want_schema is not None or s.schema in (schema, "public"):
                return s
    return None


@table("pg_catalog", "pg_init_privs", [
    ("objoid", type_oids.OID), ("classoid", type_oids.OID), ("objsubid", type_oids.INT4), ("privtype", type_oids.CHAR),
    ("initprivs", TEXTARR),
])
def _pg_init_privs(state, ctx):
    """The privileges initdb (and the pipelinedb extension, for its schema)
    gave: the built-in schemas' USAGE for PUBLIC (privtype 'i'; 'e' for an
    extension's), so pg_dump prints no GRANT for what every database has."""
    for s in state.schemas.values():
        if s.oid < acl.FIRST_USER_OID and s.name in ("pg_catalog", "public", "pipelinedb"):
            yield (s.oid, PG_NAMESPACE, 0, "e" if s.name == "pipelinedb" else "i",
                   acl.acl_texts(state.roles, acl.schema_acl(replace(s, acl=None))))
