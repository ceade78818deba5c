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
from .definitions import constraint_oid, index_def
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


PG_DATABASE_OWNER = 6171


def _raw_default(sql: str | None, type_oid: int, typmod: int = -1) -> str | None:
    return sql


#: Turns a stored default expression into PostgreSQL's display text.  The SQL
#: layer installs its deparser here (set_default_formatter); the catalog keeps
#: no SQL knowledge of its own.
_default_formatter: Callable = _raw_default


def set_default_formatter(fn: Callable) -> None:
    global _default_formatter
    _default_formatter = fn
    _DEFAULT_CACHE.clear()


def _default_text(c) -> str | None:
    """A column default as PostgreSQL prints it (pg_get_expr(adbin, adrelid))."""
    if c.default is None:
        return None
    key = (c.default, c.type_oid, c.typmod)
    hit = _DEFAULT_CACHE.get(key)
    if hit is None:
        if len(_DEFAULT_CACHE) > 4096:
            _DEFAULT_CACHE.clear()
        hit = _DEFAULT_CACHE[key] = (_default_formatter(c.default, c.type_oid, c.typmod),)
    return hit[0]


_DEFAULT_CACHE: dict = {}


NS_OID = {"pg_catalog": 11, "public": 2200, "information_schema": 13000, "splitstream": 13100}


def ns_oid(state, schema: str) -> int:
    s = state.schemas.get(schema)
    return s.oid if s is not None else NS_OID.get(schema, 0)


RELKIND = {"r": "r", "f": "f", "v": "v", "S": "S", "i": "i"}


@table("pg_catalog", "pg_namespace", [("oid", O.OID), ("nspname", O.NAME), ("nspowner", O.OID), ("nspacl", O.TEXT)])
def _pg_namespace(state, ctx):
    used = {r.schema for r in state.rels.values()}
    for s in state.schemas.values():
        if s.name == "splitstream" and s.name not in used:
            continue  # internal schema: hidden from \dn until it holds something
        # PostgreSQL 15: public belongs to pg_database_owner
        yield (s.oid, s.name, PG_DATABASE_OWNER if s.name == "public" and s.owner == 10 else s.owner, None)


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
    fk_rels = set()
    for r in state.rels.values():
        for c in r.constraints:
            if c.kind == "f":
                fk_rels.add(r.oid)
                fk_rels.add(c.ref_table)  # foreign keys are triggers on both tables in PostgreSQL
    for r in state.rels.values():
        has_index = any(x.kind == "i" and x.index_table == r.oid for x in state.rels.values())
        am = 403 if r.kind == "i" else (2 if r.kind == "r" else 0)
        ntuples = float(state.data[r.oid].n_live()) if r.oid in state.data else 0.0
        checks = sum(1 for c in r.constraints if c.kind == "c")
        yield (r.oid, r.name, ns_oid(state, r.schema), 0, 0, 10, am, r.oid, 0, 1, ntuples, 0, 0, has_index, False,
               getattr(r, "persistence", "p"), r.kind, len(r.live_columns), checks, False, r.oid in fk_rels, False, False, False, True, "d", False, 0, 0, 0,
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
                   c.not_null, _default_text(c) is not None, False, c.identity, "", False, True, 0, coll, None, None, None)


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
    ("datctype", O.TEXT), ("daticulocale", O.TEXT), ("datcollversion", O.TEXT), ("datacl", O.ARRAY_OF[O.TEXT]),
])
def _pg_database(state, ctx):
    yield (5, "postgres", 10, 6, "c", False, True, -1, 0, 0, 0, 1663, "C", "C", None, None, None)
    yield (1, "template1", 10, 6, "c", True, True, -1, 0, 0, 0, 1663, "C", "C", None, None, ["=c/postgres", "postgres=CTc/postgres"])
    yield (4, "template0", 10, 6, "c", True, False, -1, 0, 0, 0, 1663, "C", "C", None, None, ["=c/postgres", "postgres=CTc/postgres"])


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
    yield ("pg_database_owner", False, True, False, False, False, False, -1, "********", None, False, None,
           PG_DATABASE_OWNER)


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
            yield ("postgres", r.schema, r.name, c.name, i + 1, _default_text(c), "NO" if c.not_null else "YES",
                   T.format_type(c.type_oid) if c.type_oid not in O.ELEMENT_OF else "ARRAY",
                   (c.typmod - 4) if c.typmod > 0 and c.type_oid in (O.VARCHAR, O.BPCHAR) else None,
                   prec, 0 if c.type_oid in (O.INT2, O.INT4, O.INT8) else None, None, T.type_name(c.type_oid),
                   "YES" if c.identity else "NO", "NEVER")


@table("information_schema", "schemata", [("catalog_name", O.NAME), ("schema_name", O.NAME), ("schema_owner", O.NAME)])
def _is_schemata(state, ctx):
    for s in state.schemas.values():
        yield ("postgres", s.name, "postgres")


# ----------------------------------------------------------------- psql support
# Relations psql's describe commands (\d, \dt, \dn, \l, ...) read.  Most of
# them are empty or hold a few fixed rows; the ones computed from the catalog
# are pg_index, pg_constraint, pg_attrdef, pg_foreign_table and the pg_* views.

OIDARR = O.ARRAY_OF[O.OID]
TEXTARR = O.ARRAY_OF[O.TEXT]
INT2ARR = O.ARRAY_OF[O.INT2]
NAMEARR = O.ARRAY_OF[O.NAME]
STREAM_SERVER_OID = 13200
STREAM_FDW_OID = 13201


def _attnum(rel, name: str) -> int:
    for i, c in enumerate(rel.live_columns):
        if c.name == name:
            return i + 1
    return 0


#: default btree operator classes per type (pg_opclass oids), for pg_index.indclass
_OPCLASS = {O.INT4: 1978, O.INT8: 3124, O.INT2: 1979, O.TEXT: 3126, O.VARCHAR: 3126, O.BPCHAR: 426,
            O.FLOAT8: 3123, O.FLOAT4: 1970, O.NUMERIC: 3125, O.BOOL: 424, O.DATE: 3122, O.TIMESTAMP: 3128,
            O.TIMESTAMPTZ: 3127, O.UUID: 2968, O.BYTEA: 428, O.TIME: 1996, O.INTERVAL: 1982, O.OID: 1981}


def _coltype(rel, attnum: int) -> int:
    cols = rel.live_columns
    return cols[attnum - 1].type_oid if 1 <= attnum <= len(cols) else 0


def _con_oid(rel, con) -> int:
    return constraint_oid(rel, con)


def _role_name(state, oid: int) -> str:
    for r in state.roles.values():
        if r.oid == oid:
            return r.name
    return "postgres"


@table("pg_catalog", "pg_am", [("oid", O.OID), ("amname", O.NAME), ("amhandler", O.REGPROC), ("amtype", O.CHAR)])
def _pg_am(state, ctx):
    yield (2, "heap", 3, "t")
    yield (403, "btree", 330, "i")
    yield (405, "hash", 331, "i")


@table("pg_catalog", "pg_index", [
    ("indexrelid", O.OID), ("indrelid", O.OID), ("indnatts", O.INT2), ("indnkeyatts", O.INT2), ("indisunique", O.BOOL),
    ("indnullsnotdistinct", O.BOOL), ("indisprimary", O.BOOL), ("indisexclusion", O.BOOL), ("indimmediate", O.BOOL),
    ("indisclustered", O.BOOL), ("indisvalid", O.BOOL), ("indcheckxmin", O.BOOL), ("indisready", O.BOOL),
    ("indislive", O.BOOL), ("indisreplident", O.BOOL), ("indkey", O.INT2VECTOR), ("indcollation", O.OIDVECTOR),
    ("indclass", O.OIDVECTOR), ("indoption", O.INT2VECTOR), ("indexprs", O.TEXT), ("indpred", O.TEXT),
])
def _pg_index(state, ctx):
    for r in state.rels.values():
        if r.kind != "i":
            continue
        t = state.rels.get(r.index_table)
        if t is None:
            continue
        keys = [_attnum(t, c) for c in r.index_columns]
        n = len(keys)
        yield (r.oid, t.oid, n, n, r.index_unique, False, r.index_primary, False, True, False, True, False, True,
               True, False, keys, [100 if T.is_string(_coltype(t, k)) else 0 for k in keys],
               [_OPCLASS.get(_coltype(t, k), 0) for k in keys], [0 for _ in keys], None, None)


@table("pg_catalog", "pg_constraint", [
    ("oid", O.OID), ("conname", O.NAME), ("connamespace", O.OID), ("contype", O.CHAR), ("condeferrable", O.BOOL),
    ("condeferred", O.BOOL), ("convalidated", O.BOOL), ("conrelid", O.OID), ("contypid", O.OID), ("conindid", O.OID),
    ("conparentid", O.OID), ("confrelid", O.OID), ("confupdtype", O.CHAR), ("confdeltype", O.CHAR),
    ("confmatchtype", O.CHAR), ("conislocal", O.BOOL), ("coninhcount", O.INT4), ("connoinherit", O.BOOL),
    ("conkey", INT2ARR), ("confkey", INT2ARR), ("conpfeqop", OIDARR), ("conppeqop", OIDARR), ("conffeqop", OIDARR),
    ("conexclop", OIDARR), ("conbin", O.TEXT),
])
def _pg_constraint(state, ctx):
    for r in state.rels.values():
        for c in r.constraints:
            if c.kind not in ("p", "u", "c", "f") or getattr(c, "from_index", False):
                continue
            ref = state.rels.get(c.ref_table) if c.kind == "f" else None
            fk = c.kind == "f"
            yield (_con_oid(r, c), c.name, ns_oid(state, r.schema), c.kind, False, False, True, r.oid, 0,
                   c.index_oid, 0, ref.oid if ref is not None else 0, c.on_update if fk else " ",
                   c.on_delete if fk else " ", "s" if fk else " ", True, 0, False,
                   [_attnum(r, x) for x in c.columns] or None,
                   [_attnum(ref, x) for x in c.ref_columns] if ref is not None else None,
                   None, None, None, None, c.check_sql if c.kind == "c" else None)


@table("pg_catalog", "pg_inherits", [("inhrelid", O.OID), ("inhparent", O.OID), ("inhseqno", O.INT4),
                                     ("inhdetachpending", O.BOOL)])
def _pg_inherits(state, ctx):
    return iter(())


@table("pg_catalog", "pg_foreign_data_wrapper", [
    ("oid", O.OID), ("fdwname", O.NAME), ("fdwowner", O.OID), ("fdwhandler", O.OID), ("fdwvalidator", O.OID),
    ("fdwacl", O.TEXT), ("fdwoptions", TEXTARR),
])
def _pg_fdw(state, ctx):
    yield (STREAM_FDW_OID, "stream_fdw", 10, 0, 0, None, None)


@table("pg_catalog", "pg_foreign_server", [
    ("oid", O.OID), ("srvname", O.NAME), ("srvowner", O.OID), ("srvfdw", O.OID), ("srvtype", O.TEXT),
    ("srvversion", O.TEXT), ("srvacl", O.TEXT), ("srvoptions", TEXTARR),
])
def _pg_foreign_server(state, ctx):
    yield (STREAM_SERVER_OID, "stream", 10, STREAM_FDW_OID, None, None, None, None)


@table("pg_catalog", "pg_foreign_table", [("ftrelid", O.OID), ("ftserver", O.OID), ("ftoptions", TEXTARR)])
def _pg_foreign_table(state, ctx):
    for r in state.rels.values():
        if r.kind == "f":
            opts = [f"{k}={v}" for k, v in r.options] or None
            yield (r.oid, STREAM_SERVER_OID, opts)


@table("pg_catalog", "pg_description", [("objoid", O.OID), ("classoid", O.OID), ("objsubid", O.INT4),
                                        ("description", O.TEXT)])
def _pg_description(state, ctx):
    for r in state.rels.values():
        if r.comment is not None:
            yield (r.oid, 1259, 0, r.comment)
        for name, text in r.column_comments:
            n = _attnum(r, name)
            if n:
                yield (r.oid, 1259, n, text)
    for s in state.schemas.values():
        if s.comment is not None:
            yield (s.oid, 2615, 0, s.comment)


@table("pg_catalog", "pg_attrdef", [("oid", O.OID), ("adrelid", O.OID), ("adnum", O.INT2), ("adbin", O.TEXT)])
def _pg_attrdef(state, ctx):
    for r in state.rels.values():
        for i, c in enumerate(r.live_columns):
            if not c.hidden and _default_text(c) is not None:
                yield (4_000_000 + (r.oid % 100_000) * 100 + i, r.oid, i + 1, _default_text(c))


@table("pg_catalog", "pg_proc", [
    ("oid", O.OID), ("proname", O.NAME), ("pronamespace", O.OID), ("proowner", O.OID), ("prolang", O.OID),
    ("procost", O.FLOAT4), ("prorows", O.FLOAT4), ("provariadic", O.OID), ("prosupport", O.REGPROC),
    ("prokind", O.CHAR), ("prosecdef", O.BOOL), ("proleakproof", O.BOOL), ("proisstrict", O.BOOL),
    ("proretset", O.BOOL), ("provolatile", O.CHAR), ("proparallel", O.CHAR), ("pronargs", O.INT2),
    ("pronargdefaults", O.INT2), ("prorettype", O.OID), ("proargtypes", O.TEXT), ("proallargtypes", OIDARR),
    ("proargmodes", O.ARRAY_OF[O.CHAR]), ("proargnames", TEXTARR), ("proargdefaults", O.TEXT),
    ("protrftypes", OIDARR), ("prosrc", O.TEXT), ("probin", O.TEXT), ("prosqlbody", O.TEXT),
    ("proconfig", TEXTARR), ("proacl", O.TEXT),
])
def _pg_proc(state, ctx):
    return iter(())


@table("pg_catalog", "pg_collation", [
    ("oid", O.OID), ("collname", O.NAME), ("collnamespace", O.OID), ("collowner", O.OID), ("collprovider", O.CHAR),
    ("collisdeterministic", O.BOOL), ("collencoding", O.INT4), ("collcollate", O.TEXT), ("collctype", O.TEXT),
    ("colliculocale", O.TEXT), ("collversion", O.TEXT),
])
def _pg_collation(state, ctx):
    yield (100, "default", 11, 10, "d", True, -1, None, None, None, None)
    yield (950, "C", 11, 10, "c", True, -1, "C", "C", None, None)
    yield (951, "POSIX", 11, 10, "c", True, -1, "POSIX", "POSIX", None, None)


@table("pg_catalog", "pg_tablespace", [("oid", O.OID), ("spcname", O.NAME), ("spcowner", O.OID), ("spcacl", O.TEXT),
                                       ("spcoptions", TEXTARR)])
def _pg_tablespace(state, ctx):
    yield (1663, "pg_default", 10, None, None)
    yield (1664, "pg_global", 10, None, None)


@table("pg_catalog", "pg_trigger", [
    ("oid", O.OID), ("tgrelid", O.OID), ("tgparentid", O.OID), ("tgname", O.NAME), ("tgfoid", O.OID),
    ("tgtype", O.INT2), ("tgenabled", O.CHAR), ("tgisinternal", O.BOOL), ("tgconstrrelid", O.OID),
    ("tgconstrindid", O.OID), ("tgconstraint", O.OID), ("tgdeferrable", O.BOOL), ("tginitdeferred", O.BOOL),
    ("tgnargs", O.INT2), ("tgattr", O.TEXT), ("tgargs", O.BYTEA), ("tgqual", O.TEXT), ("tgoldtable", O.NAME),
    ("tgnewtable", O.NAME),
])
def _pg_trigger(state, ctx):
    return iter(())


@table("pg_catalog", "pg_policy", [
    ("oid", O.OID), ("polname", O.NAME), ("polrelid", O.OID), ("polcmd", O.CHAR), ("polpermissive", O.BOOL),
    ("polroles", OIDARR), ("polqual", O.TEXT), ("polwithcheck", O.TEXT),
])
def _pg_policy(state, ctx):
    return iter(())


@table("pg_catalog", "pg_rewrite", [
    ("oid", O.OID), ("rulename", O.NAME), ("ev_class", O.OID), ("ev_type", O.CHAR), ("ev_enabled", O.CHAR),
    ("is_instead", O.BOOL), ("ev_qual", O.TEXT), ("ev_action", O.TEXT),
])
def _pg_rewrite(state, ctx):
    for r in state.rels.values():
        if r.kind == "v":
            yield (5_000_000 + r.oid % 1_000_000, "_RETURN", r.oid, "1", "O", True, None, None)


@table("pg_catalog", "pg_statistic_ext", [
    ("oid", O.OID), ("stxrelid", O.OID), ("stxname", O.NAME), ("stxnamespace", O.OID), ("stxowner", O.OID),
    ("stxstattarget", O.INT4), ("stxkeys", O.TEXT), ("stxkind", O.ARRAY_OF[O.CHAR]), ("stxexprs", O.TEXT),
])
def _pg_statistic_ext(state, ctx):
    return iter(())


@table("pg_catalog", "pg_publication", [
    ("oid", O.OID), ("pubname", O.NAME), ("pubowner", O.OID), ("puballtables", O.BOOL), ("pubinsert", O.BOOL),
    ("pubupdate", O.BOOL), ("pubdelete", O.BOOL), ("pubtruncate", O.BOOL), ("pubviaroot", O.BOOL),
])
def _pg_publication(state, ctx):
    return iter(())


@table("pg_catalog", "pg_publication_rel", [("oid", O.OID), ("prpubid", O.OID), ("prrelid", O.OID),
                                            ("prqual", O.TEXT), ("prattrs", O.ARRAY_OF[O.INT2])])
def _pg_publication_rel(state, ctx):
    return iter(())


@table("pg_catalog", "pg_publication_namespace", [("oid", O.OID), ("pnpubid", O.OID), ("pnnspid", O.OID)])
def _pg_publication_namespace(state, ctx):
    return iter(())


@table("pg_catalog", "pg_publication_tables", [("pubname", O.NAME), ("schemaname", O.NAME), ("tablename", O.NAME),
                                               ("attnames", NAMEARR), ("rowfilter", O.TEXT)])
def _pg_publication_tables(state, ctx):
    return iter(())


@table("pg_catalog", "pg_extension", [
    ("oid", O.OID), ("extname", O.NAME), ("extowner", O.OID), ("extnamespace", O.OID), ("extrelocatable", O.BOOL),
    ("extversion", O.TEXT), ("extconfig", OIDARR), ("extcondition", TEXTARR),
])
def _pg_extension(state, ctx):
    yield (13500, "plpgsql", 10, 11, False, "1.0", None, None)


@table("pg_catalog", "pg_views", [("schemaname", O.NAME), ("viewname", O.NAME), ("viewowner", O.NAME),
                                  ("definition", O.TEXT)])
def _pg_views(state, ctx):
    for r in state.rels.values():
        if r.kind == "v":
            yield (r.schema, r.name, _role_name(state, r.owner), " " + r.sql.strip().rstrip(";") + ";")


@table("pg_catalog", "pg_tables", [
    ("schemaname", O.NAME), ("tablename", O.NAME), ("tableowner", O.NAME), ("tablespace", O.NAME),
    ("hasindexes", O.BOOL), ("hasrules", O.BOOL), ("hastriggers", O.BOOL), ("rowsecurity", O.BOOL),
])
def _pg_tables(state, ctx):
    for r in state.rels.values():
        if r.kind == "r":
            has_index = any(x.kind == "i" and x.index_table == r.oid for x in state.rels.values())
            yield (r.schema, r.name, _role_name(state, r.owner), None, has_index, False, False, False)


@table("pg_catalog", "pg_indexes", [("schemaname", O.NAME), ("tablename", O.NAME), ("indexname", O.NAME),
                                    ("tablespace", O.NAME), ("indexdef", O.TEXT)])
def _pg_indexes(state, ctx):
    for r in state.rels.values():
        if r.kind == "i":
            t = state.rels.get(r.index_table)
            if t is not None:
                yield (t.schema, t.name, r.name, None, index_def(state, r.oid))


@table("pg_catalog", "pg_sequence", [
    ("seqrelid", O.OID), ("seqtypid", O.OID), ("seqstart", O.INT8), ("seqincrement", O.INT8), ("seqmax", O.INT8),
    ("seqmin", O.INT8), ("seqcache", O.INT8), ("seqcycle", O.BOOL),
])
def _pg_sequence(state, ctx):
    for r in state.rels.values():
        if r.kind == "S":
            yield (r.oid, r.seq_type, r.seq_start, r.seq_increment, r.seq_max, r.seq_min, 1, r.seq_cycle)


@table("pg_catalog", "pg_sequences", [
    ("schemaname", O.NAME), ("sequencename", O.NAME), ("sequenceowner", O.NAME), ("data_type", O.REGTYPE),
    ("start_value", O.INT8), ("min_value", O.INT8), ("max_value", O.INT8), ("increment_by", O.INT8),
    ("cycle", O.BOOL), ("cache_size", O.INT8), ("last_value", O.INT8),
])
def _pg_sequences(state, ctx):
    for r in state.rels.values():
        if r.kind == "S":
            yield (r.schema, r.name, _role_name(state, r.owner), r.seq_type, r.seq_start, r.seq_min, r.seq_max,
                   r.seq_increment, r.seq_cycle, 1, None)


@table("pg_catalog", "pg_user", [
    ("usename", O.NAME), ("usesysid", O.OID), ("usecreatedb", O.BOOL), ("usesuper", O.BOOL), ("userepl", O.BOOL),
    ("usebypassrls", O.BOOL), ("passwd", O.TEXT), ("valuntil", O.TIMESTAMPTZ), ("useconfig", TEXTARR),
])
def _pg_user(state, ctx):
    for r in state.roles.values():
        if r.login:
            yield (r.name, r.oid, r.createdb, r.superuser, r.superuser, r.superuser, "********", None, None)


@table("pg_catalog", "pg_authid", [
    ("oid", O.OID), ("rolname", O.NAME), ("rolsuper", O.BOOL), ("rolinherit", O.BOOL), ("rolcreaterole", O.BOOL),
    ("rolcreatedb", O.BOOL), ("rolcanlogin", O.BOOL), ("rolreplication", O.BOOL), ("rolbypassrls", O.BOOL),
    ("rolconnlimit", O.INT4), ("rolpassword", O.TEXT), ("rolvaliduntil", O.TIMESTAMPTZ),
])
def _pg_authid(state, ctx):
    for r in state.roles.values():
        yield (r.oid, r.name, r.superuser, True, r.createrole, r.createdb, r.login, r.superuser, r.superuser, -1,
               None, None)


@table("pg_catalog", "pg_auth_members", [("oid", O.OID), ("roleid", O.OID), ("member", O.OID), ("grantor", O.OID),
                                         ("admin_option", O.BOOL)])
def _pg_auth_members(state, ctx):
    return iter(())


@table("pg_catalog", "pg_stat_activity", [
    ("datid", O.OID), ("datname", O.NAME), ("pid", O.INT4), ("leader_pid", O.INT4), ("usesysid", O.OID),
    ("usename", O.NAME), ("application_name", O.TEXT), ("client_addr", O.TEXT), ("client_hostname", O.TEXT),
    ("client_port", O.INT4), ("backend_start", O.TIMESTAMPTZ), ("xact_start", O.TIMESTAMPTZ),
    ("query_start", O.TIMESTAMPTZ), ("state_change", O.TIMESTAMPTZ), ("wait_event_type", O.TEXT),
    ("wait_event", O.TEXT), ("state", O.TEXT), ("backend_xid", O.XID), ("backend_xmin", O.XID),
    ("query_id", O.INT8), ("query", O.TEXT), ("backend_type", O.TEXT),
])
def _pg_stat_activity(state, ctx):
    return iter(())


@table("pg_catalog", "pg_range", [
    ("rngtypid", O.OID), ("rngsubtype", O.OID), ("rngmultitypid", O.OID), ("rngcollation", O.OID),
    ("rngsubopc", O.OID), ("rngcanonical", O.REGPROC), ("rngsubdiff", O.REGPROC),
])
def _pg_range(state, ctx):
    return iter(())


_OPCLASS_NAMES = {1978: "int4_ops", 3124: "int8_ops", 1979: "int2_ops", 3126: "text_ops", 426: "bpchar_ops",
                  3123: "float8_ops", 1970: "float4_ops", 3125: "numeric_ops", 424: "bool_ops", 3122: "date_ops",
                  3128: "timestamp_ops", 3127: "timestamptz_ops", 2968: "uuid_ops", 428: "bytea_ops", 1996: "time_ops",
                  1982: "interval_ops", 1981: "oid_ops"}


@table("pg_catalog", "pg_opclass", [
    ("oid", O.OID), ("opcmethod", O.OID), ("opcname", O.NAME), ("opcnamespace", O.OID), ("opcowner", O.OID),
    ("opcfamily", O.OID), ("opcintype", O.OID), ("opcdefault", O.BOOL), ("opckeytype", O.OID),
])
def _pg_opclass(state, ctx):
    by_oid = {v: k for k, v in _OPCLASS.items() if k not in (O.VARCHAR,)}
    for oid, name in _OPCLASS_NAMES.items():
        yield (oid, 403, name, 11, 10, oid, by_oid.get(oid, 0), True, 0)


@table("pg_catalog", "pg_cursors", [
    ("name", O.TEXT), ("statement", O.TEXT), ("is_holdable", O.BOOL), ("is_binary", O.BOOL),
    ("is_scrollable", O.BOOL), ("creation_time", O.TIMESTAMPTZ),
])
def _pg_cursors(state, ctx):
    info = getattr(ctx, "session", None)
    for name in list((getattr(info, "cursors", None) or {}).keys()):
        yield (name, None, False, False, False, None)
