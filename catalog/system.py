"""System relations computed from the catalog state: pg_catalog,
information_schema and splitstream's own views.

Each :class:`VirtualTable` names its columns (name, type OID) and a
producer that turns a :class:`~catalog.database.State` into rows.  The
executor scans them like tables.  Rows are built per catalog object, never
per data row, so plain Python is fine here.
"""
from __future__ import annotations

from typing import Callable

from protocol import oids as O

from . import types as T
from .vector import Batch, Col

REGISTRY: dict[tuple[str, str], "VirtualTable"] = {}


class VirtualTable:
    def __init__(self, schema: str, name: str, columns: list[tuple[str, int]], rows: Callable) -> None:
        self.schema, self.name, self.columns, self.rows = schema, name, columns, rows

    def produce(self, state, ctx) -> Batch:
        rows = list(self.rows(state, ctx))
        cols = []
        for j, (_, oid) in enumerate(self.columns):
            cols.append(Col.from_pylist([r[j] for r in rows], oid))
        return Batch(cols, len(rows))


def table(schema: str, name: str, columns: list[tuple[str, int]]):
    def deco(fn):
        REGISTRY[(schema, name)] = VirtualTable(schema, name, columns, fn)
        return fn

    return deco


def lookup(name: str, schema: str | None, search_path: list[str]) -> VirtualTable | None:
    if schema is not None:
        return REGISTRY.get((schema, name))
    for s in ["pg_catalog"] + search_path:
        vt = REGISTRY.get((s, name))
        if vt is not None:
            return vt
    return None


NS_OID = {"pg_catalog": 11, "public": 2200, "information_schema": 13000, "splitstream": 13100}


def ns_oid(state, schema: str) -> int:
    s = state.schemas.get(schema)
    return s.oid if s is not None else NS_OID.get(schema, 0)


RELKIND = {"r": "r", "f": "f", "v": "v", "S": "S", "i": "i"}


@table("pg_catalog", "pg_namespace", [("oid", O.OID), ("nspname", O.NAME), ("nspowner", O.OID), ("nspacl", O.TEXT)])
def _pg_namespace(state, ctx):
    for s in state.schemas.values():
        yield (s.oid, s.name, 10, None)


@table("pg_catalog", "pg_class", [
    ("oid", O.OID), ("relname", O.NAME), ("relnamespace", O.OID), ("reltype", O.OID), ("reloftype", O.OID),
    ("relowner", O.OID), ("relam", O.OID), ("relfilenode", O.OID), ("reltablespace", O.OID), ("relpages", O.INT4),
    ("reltuples", O.FLOAT4), ("relallvisible", O.INT4), ("reltoastrelid", O.OID), ("relhasindex", O.BOOL),
    ("relisshared", O.BOOL), ("relpersistence", O.CHAR), ("relkind", O.CHAR), ("relnatts", O.INT2),
    ("relchecks", O.INT2), ("relhasrules", O.BOOL), ("relhastriggers", O.BOOL), ("relhassubclass", O.BOOL),
    ("relrowsecurity", O.BOOL), ("relforcerowsecurity", O.BOOL), ("relispopulated", O.BOOL),
    ("relreplident", O.CHAR), ("relispartition", O.BOOL), ("relrewrite", O.OID), ("relfrozenxid", O.XID),
    ("relminmxid", O.XID), ("relacl", O.TEXT), ("reloptions", O.ARRAY_OF[O.TEXT]), ("relpartbound", O.TEXT),
])
def _pg_class(state, ctx):
    for r in state.rels.values():
        has_index = any(x.kind == "i" and x.index_table == r.oid for x in state.rels.values())
        am = 403 if r.kind == "i" else (2 if r.kind == "r" else 0)
        ntuples = float(state.data[r.oid].n_live()) if r.oid in state.data else 0.0
        checks = sum(1 for c in r.constraints if c.kind == "c")
        yield (r.oid, r.name, ns_oid(state, r.schema), 0, 0, 10, am, r.oid, 0, 1, ntuples, 0, 0, has_index, False,
               "p", r.kind, len(r.live_columns), checks, False, False, False, False, False, True, "d", False, 0, 0, 0,
               None, None, None)


@table("pg_catalog", "pg_attribute", [
    ("attrelid", O.OID), ("attname", O.NAME), ("atttypid", O.OID), ("attstattarget", O.INT4), ("attlen", O.INT2),
    ("attnum", O.INT2), ("attndims", O.INT4), ("attcacheoff", O.INT4), ("atttypmod", O.INT4), ("attbyval", O.BOOL),
    ("attalign", O.CHAR), ("attstorage", O.CHAR), ("attcompression", O.CHAR), ("attnotnull", O.BOOL),
    ("atthasdef", O.BOOL), ("atthasmissing", O.BOOL), ("attidentity", O.CHAR), ("attgenerated", O.CHAR),
    ("attisdropped", O.BOOL), ("attislocal", O.BOOL), ("attinhcount", O.INT4), ("attcollation", O.OID),
    ("attacl", O.TEXT), ("attoptions", O.TEXT), ("attfdwoptions", O.TEXT),
])
def _pg_attribute(state, ctx):
    for r in state.rels.values():
        for i, c in enumerate(r.live_columns):
            if c.hidden:
                continue
            coll = 100 if T.is_string(c.type_oid) else 0
            yield (r.oid, c.name, c.type_oid, -1, T.TYPLEN.get(c.type_oid, -1), i + 1, 1 if c.type_oid in O.ELEMENT_OF else 0,
                   -1, c.typmod, c.type_oid in (O.INT4, O.INT2, O.INT8, O.BOOL, O.FLOAT4, O.FLOAT8, O.DATE), "i", "p", "",
                   c.not_null, c.default is not None, False, c.identity, "", False, True, 0, coll, None, None, None)


def _type_rows():
    seen = set()
    for oid, name in T.TYPE_NAMES.items():
        if oid in seen:
            continue
        seen.add(oid)
        elem = O.ELEMENT_OF.get(oid, 0)
        arr = O.ARRAY_OF.get(oid, 0)
        cat = "A" if elem else {O.BOOL: "B", O.DATE: "D", O.TIMESTAMP: "D", O.TIMESTAMPTZ: "D", O.TIME: "D",
                                 O.INTERVAL: "T", O.TEXT: "S", O.VARCHAR: "S", O.BPCHAR: "S", O.NAME: "S",
                                 O.JSON: "U", O.JSONB: "U", O.UUID: "U", O.BYTEA: "U"}.get(oid, "N" if oid in O.NUMERIC_TYPES else "U")
        yield oid, name, elem, arr, cat


@table("pg_catalog", "pg_type", [
    ("oid", O.OID), ("typname", O.NAME), ("typnamespace", O.OID), ("typowner", O.OID), ("typlen", O.INT2),
    ("typbyval", O.BOOL), ("typtype", O.CHAR), ("typcategory", O.CHAR), ("typispreferred", O.BOOL),
    ("typisdefined", O.BOOL), ("typdelim", O.CHAR), ("typrelid", O.OID), ("typsubscript", O.OID), ("typelem", O.OID),
    ("typarray", O.OID), ("typinput", O.REGPROC), ("typoutput", O.REGPROC), ("typreceive", O.REGPROC),
    ("typsend", O.REGPROC), ("typmodin", O.REGPROC), ("typmodout", O.REGPROC), ("typanalyze", O.REGPROC),
    ("typalign", O.CHAR), ("typstorage", O.CHAR), ("typnotnull", O.BOOL), ("typbasetype", O.OID),
    ("typtypmod", O.INT4), ("typndims", O.INT4), ("typcollation", O.OID), ("typdefaultbin", O.TEXT),
    ("typdefault", O.TEXT), ("typacl", O.TEXT),
])
def _pg_type(state, ctx):
    for oid, name, elem, arr, cat in _type_rows():
        yield (oid, name, 11, 10, T.TYPLEN.get(oid, -1), oid in (O.INT4, O.INT2, O.INT8, O.BOOL, O.FLOAT8, O.FLOAT4, O.DATE),
               "p" if oid in (O.VOID, O.RECORD, O.UNKNOWN, O.ANY) else "b", cat, oid in (O.TEXT, O.FLOAT8, O.BOOL, O.TIMESTAMPTZ),
               True, ",", 0, 0, elem, arr, 0, 0, 0, 0, 0, 0, 0, "i", "p", False, 0, -1, 0, 100 if T.is_string(oid) else 0,
               None, None, None)


@table("pg_catalog", "pg_database", [
    ("oid", O.OID), ("datname", O.NAME), ("datdba", O.OID), ("encoding", O.INT4), ("datlocprovider", O.CHAR),
    ("datistemplate", O.BOOL), ("datallowconn", O.BOOL), ("datconnlimit", O.INT4), ("datlastsysoid", O.OID),
    ("datfrozenxid", O.XID), ("datminmxid", O.XID), ("dattablespace", O.OID), ("datcollate", O.TEXT),
    ("datctype", O.TEXT), ("daticulocale", O.TEXT), ("datcollversion", O.TEXT), ("datacl", O.TEXT),
])
def _pg_database(state, ctx):
    yield (5, "postgres", 10, 6, "c", False, True, -1, 0, 0, 0, 1663, "C", "C", None, None, None)
    yield (1, "template1", 10, 6, "c", True, True, -1, 0, 0, 0, 1663, "C", "C", None, None, "{=c/postgres,postgres=CTc/postgres}")
    yield (4, "template0", 10, 6, "c", True, False, -1, 0, 0, 0, 1663, "C", "C", None, None, "{=c/postgres,postgres=CTc/postgres}")


@table("pg_catalog", "pg_roles", [
    ("rolname", O.NAME), ("rolsuper", O.BOOL), ("rolinherit", O.BOOL), ("rolcreaterole", O.BOOL),
    ("rolcreatedb", O.BOOL), ("rolcanlogin", O.BOOL), ("rolreplication", O.BOOL), ("rolconnlimit", O.INT4),
    ("rolpassword", O.TEXT), ("rolvaliduntil", O.TIMESTAMPTZ), ("rolbypassrls", O.BOOL), ("rolconfig", O.ARRAY_OF[O.TEXT]),
    ("oid", O.OID),
])
def _pg_roles(state, ctx):
    for r in state.roles.values():
        yield (r.name, r.superuser, True, r.createrole, r.createdb, r.login, r.superuser, -1, "********", None,
               r.superuser, None, r.oid)


@table("pg_catalog", "pg_settings", [("name", O.TEXT), ("setting", O.TEXT), ("unit", O.TEXT), ("category", O.TEXT),
                                     ("short_desc", O.TEXT), ("context", O.TEXT), ("vartype", O.TEXT), ("source", O.TEXT)])
def _pg_settings(state, ctx):
    for k, v in sorted(ctx.session.settings.items()):
        yield (k, v, None, "splitstream", "", "user", "string", "session")


@table("information_schema", "tables", [
    ("table_catalog", O.NAME), ("table_schema", O.NAME), ("table_name", O.NAME), ("table_type", O.TEXT),
    ("self_referencing_column_name", O.NAME), ("reference_generation", O.TEXT), ("user_defined_type_catalog", O.NAME),
    ("user_defined_type_schema", O.NAME), ("user_defined_type_name", O.NAME), ("is_insertable_into", O.TEXT),
    ("is_typed", O.TEXT), ("commit_action", O.TEXT),
])
def _is_tables(state, ctx):
    for r in state.rels.values():
        if r.kind not in ("r", "v", "f"):
            continue
        tt = {"r": "BASE TABLE", "v": "VIEW", "f": "FOREIGN"}[r.kind]
        yield ("postgres", r.schema, r.name, tt, None, None, None, None, None, "YES" if r.kind != "v" else "NO", "NO", None)


@table("information_schema", "columns", [
    ("table_catalog", O.NAME), ("table_schema", O.NAME), ("table_name", O.NAME), ("column_name", O.NAME),
    ("ordinal_position", O.INT4), ("column_default", O.TEXT), ("is_nullable", O.TEXT), ("data_type", O.TEXT),
    ("character_maximum_length", O.INT4), ("numeric_precision", O.INT4), ("numeric_scale", O.INT4),
    ("datetime_precision", O.INT4), ("udt_name", O.NAME), ("is_identity", O.TEXT), ("is_generated", O.TEXT),
])
def _is_columns(state, ctx):
    for r in state.rels.values():
        if r.kind not in ("r", "v", "f"):
            continue
        for i, c in enumerate(r.visible_columns):
            prec = {O.INT2: 16, O.INT4: 32, O.INT8: 64, O.FLOAT4: 24, O.FLOAT8: 53}.get(c.type_oid)
            yield ("postgres", r.schema, r.name, c.name, i + 1, c.default, "NO" if c.not_null else "YES",
                   T.format_type(c.type_oid) if c.type_oid not in O.ELEMENT_OF else "ARRAY",
                   (c.typmod - 4) if c.typmod > 0 and c.type_oid in (O.VARCHAR, O.BPCHAR) else None,
                   prec, 0 if c.type_oid in (O.INT2, O.INT4, O.INT8) else None, None, T.type_name(c.type_oid),
                   "YES" if c.identity else "NO", "NEVER")


@table("information_schema", "schemata", [("catalog_name", O.NAME), ("schema_name", O.NAME), ("schema_owner", O.NAME)])
def _is_schemata(state, ctx):
    for s in state.schemas.values():
        yield ("postgres", s.name, "postgres")
