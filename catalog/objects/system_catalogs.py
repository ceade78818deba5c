"""System relations computed from the catalog state: pg_catalog,
information_schema and splitstream's own views.

Each :class:`VirtualTable` names its columns (name, type OID) and a
producer that turns a :class:`~catalog.database.State` into rows.  The
executor scans them like tables.  Rows are built per catalog object, never
per data row, so plain Python is fine here.
"""
from __future__ import annotations

import zlib
from typing import Callable, NamedTuple

from splitstream.protocol import oids as type_oids

from ..datatypes import sqltypes
from .definition_text import constraint_oid, index_def
from ..datatypes.vector import Batch, Col
from . import acl
from .cast_rows import CASTS

TEXTARR = type_oids.ARRAY_OF[type_oids.TEXT]

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

    def produce_scan(self, state, ctx) -> Batch:
        """The rows followed by the system column ``tableoid`` (this relation's
        regclass on every row), which a scan carries hidden from ``*`` as
        PostgreSQL's do: pg_dump reads ``tableoid`` of every catalog to tell
        which catalog an object (a comment's, a dependency's) belongs to."""
        b = self.produce(state, ctx)
        return Batch(b.cols + [Col.from_pylist([relation_oid(self)] * b.n, type_oids.OID)], b.n)


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


#: PostgreSQL 15's OIDs of its system catalogs, fixed in their catalog headers: what
#: ``'pg_class'::regclass`` is (the views, whose OIDs initdb assigns, get a stable number of ours)
CATALOG_OIDS = {
    "pg_aggregate": 2600, "pg_am": 2601, "pg_attrdef": 2604, "pg_attribute": 1249, "pg_auth_members": 1261,
    "pg_authid": 1260, "pg_cast": 2605, "pg_class": 1259, "pg_collation": 3456, "pg_constraint": 2606,
    "pg_database": 1262, "pg_db_role_setting": 2964, "pg_default_acl": 826, "pg_description": 2609,
    "pg_extension": 3079, "pg_foreign_data_wrapper": 2328, "pg_foreign_server": 1417, "pg_foreign_table": 3118,
    "pg_index": 2610, "pg_inherits": 2611, "pg_language": 2612, "pg_namespace": 2615, "pg_opclass": 2616,
    "pg_policy": 3256, "pg_proc": 1255, "pg_publication": 6104, "pg_publication_namespace": 6237,
    "pg_publication_rel": 6106, "pg_range": 3541, "pg_rewrite": 2618, "pg_sequence": 2224, "pg_statistic": 2619,
    "pg_statistic_ext": 3381, "pg_tablespace": 1213, "pg_trigger": 2620, "pg_type": 1247,
}


def relation_oid(vt: VirtualTable) -> int:
    """The OID a system relation has as a regclass."""
    fixed = CATALOG_OIDS.get(vt.name) if vt.schema == "pg_catalog" else None
    return fixed if fixed is not None else zlib.crc32(vt.name.encode()) % 10000 + 1000   # the same in every process


def relation_by_oid(oid: int) -> VirtualTable | None:
    """The system relation whose regclass is ``oid``, if any."""
    return next((vt for vt in REGISTRY.values() if relation_oid(vt) == oid), None)


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


def format_default(sql: str, type_oid: int) -> str | None:
    """A default expression as PostgreSQL prints it (pg_get_expr), for a function's parameter."""
    return _default_formatter(sql, type_oid)


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


NS_OID = {"pg_catalog": 11, "public": 2200, "information_schema": 13000, "splitstream": 13100, "pipelinedb": 13200}


def ns_oid(state, schema: str) -> int:
    s = state.schemas.get(schema)
    return s.oid if s is not None else NS_OID.get(schema, 0)


RELKIND = {"r": "r", "f": "f", "v": "v", "S": "S", "i": "i"}


@table("pg_catalog", "pg_namespace", [("oid", type_oids.OID), ("nspname", type_oids.NAME), ("nspowner", type_oids.OID), ("nspacl", TEXTARR)])
def _pg_namespace(state, ctx):
    used = {r.schema for r in state.rels.values()}
    for s in state.schemas.values():
        if s.name == "splitstream" and s.name not in used:
            continue  # internal schema: hidden from \dn until it holds something
        # PostgreSQL 15: public belongs to pg_database_owner
        yield (s.oid, s.name, acl.schema_owner(s),
               acl.acl_texts(state.roles, acl.schema_acl_shown(s)))


@table("pg_catalog", "pg_class", [
    ("oid", type_oids.OID), ("relname", type_oids.NAME), ("relnamespace", type_oids.OID), ("reltype", type_oids.OID), ("reloftype", type_oids.OID),
    ("relowner", type_oids.OID), ("relam", type_oids.OID), ("relfilenode", type_oids.OID), ("reltablespace", type_oids.OID), ("relpages", type_oids.INT4),
    ("reltuples", type_oids.FLOAT4), ("relallvisible", type_oids.INT4), ("reltoastrelid", type_oids.OID), ("relhasindex", type_oids.BOOL),
    ("relisshared", type_oids.BOOL), ("relpersistence", type_oids.CHAR), ("relkind", type_oids.CHAR), ("relnatts", type_oids.INT2),
    ("relchecks", type_oids.INT2), ("relhasrules", type_oids.BOOL), ("relhastriggers", type_oids.BOOL), ("relhassubclass", type_oids.BOOL),
    ("relrowsecurity", type_oids.BOOL), ("relforcerowsecurity", type_oids.BOOL), ("relispopulated", type_oids.BOOL),
    ("relreplident", type_oids.CHAR), ("relispartition", type_oids.BOOL), ("relrewrite", type_oids.OID), ("relfrozenxid", type_oids.XID),
    ("relminmxid", type_oids.XID), ("relacl", TEXTARR), ("reloptions", type_oids.ARRAY_OF[type_oids.TEXT]), ("relpartbound", type_oids.TEXT),
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
        am = 403 if r.kind == "i" else (2 if r.relkind in ("r", "m") else 0)
        ntuples = float(state.data[r.oid].n_live()) if r.oid in state.data else 0.0
        checks = sum(1 for c in r.constraints if c.kind == "c")
        yield (r.oid, r.name, ns_oid(state, r.schema), 0, 0, r.owner, am, r.oid, 0, 1, ntuples, 0, 0, has_index, False,
               getattr(r, "persistence", "p"), r.relkind, len(r.live_columns), checks, False, r.oid in fk_rels, False, False, False, True, "d", False, 0, 0, 0,
               acl.acl_texts(state.roles, r.acl), view_reloptions(r), None)


#: a continuous view's options the server keeps for itself (CREATE VIEW takes no such option)
_OWN_VIEW_OPTIONS = frozenset({"state_epoch", "timezone"})


def view_reloptions(rel) -> list[str] | None:
    """pg_class.reloptions of a view: its WITH options as ``name=value`` (sw,
    ttl, action, ...), which pg_dump writes back into CREATE VIEW ... WITH."""
    if rel.kind != "v":
        return None
    shown = [f"{k}={v}" for k, v in rel.options if k not in _OWN_VIEW_OPTIONS]
    return shown or None


@table("pg_catalog", "pg_attribute", [
    ("attrelid", type_oids.OID), ("attname", type_oids.NAME), ("atttypid", type_oids.OID), ("attstattarget", type_oids.INT4), ("attlen", type_oids.INT2),
    ("attnum", type_oids.INT2), ("attndims", type_oids.INT4), ("attcacheoff", type_oids.INT4), ("atttypmod", type_oids.INT4), ("attbyval", type_oids.BOOL),
    ("attalign", type_oids.CHAR), ("attstorage", type_oids.CHAR), ("attcompression", type_oids.CHAR), ("attnotnull", type_oids.BOOL),
    ("atthasdef", type_oids.BOOL), ("atthasmissing", type_oids.BOOL), ("attidentity", type_oids.CHAR), ("attgenerated", type_oids.CHAR),
    ("attisdropped", type_oids.BOOL), ("attislocal", type_oids.BOOL), ("attinhcount", type_oids.INT4), ("attcollation", type_oids.OID),
    ("attacl", TEXTARR), ("attoptions", TEXTARR), ("attfdwoptions", TEXTARR), ("attmissingval", TEXTARR),
])
def _pg_attribute(state, ctx):
    for r in state.rels.values():
        for i, c in enumerate(r.columns):
            if c.hidden:
                continue
            coll = 100 if sqltypes.is_string(c.type_oid) else 0
            live = not c.dropped
            # a dropped column keeps its number, size and storage; PostgreSQL renames it and forgets its type
            yield (r.oid, c.name if live else f"........pg.dropped.{i + 1}........", c.type_oid if live else 0,
                   -1 if live else 0, sqltypes.TYPLEN.get(c.type_oid, -1), i + 1,
                   1 if c.type_oid in type_oids.ELEMENT_OF else 0, -1, c.typmod,
                   c.type_oid in (type_oids.INT4, type_oids.INT2, type_oids.INT8, type_oids.BOOL, type_oids.FLOAT4, type_oids.FLOAT8, type_oids.DATE), "i",
                   typstorage(c.type_oid), "",
                   live and c.not_null, live and r.kind != "i" and not c.identity and _default_text(c) is not None, False, c.identity if live else "", "",
                   not live, True, 0, coll, acl.acl_texts(state.roles, c.acl) if live else None, None, None, None)


_EXTENDED = frozenset({type_oids.TEXT, type_oids.VARCHAR, type_oids.BPCHAR, type_oids.BYTEA, type_oids.JSON,
                       type_oids.JSONB})


def typstorage(oid: int) -> str:
    """pg_type.typstorage (and a column's attstorage): x for the varlena types
    PostgreSQL compresses and moves out of line, m for numeric, p for the rest."""
    if oid in _EXTENDED or oid in type_oids.ELEMENT_OF:
        return "x"
    return "m" if oid == type_oids.NUMERIC else "p"


def _type_rows():
    seen = set()
    for oid, name in sqltypes.TYPE_NAMES.items():
        if oid in seen:
            continue
        seen.add(oid)
        elem = type_oids.ELEMENT_OF.get(oid, 0)
        arr = type_oids.ARRAY_OF.get(oid, 0)
        cat = "A" if elem else {type_oids.BOOL: "B", type_oids.DATE: "D", type_oids.TIMESTAMP: "D", type_oids.TIMESTAMPTZ: "D", type_oids.TIME: "D", type_oids.TIMETZ: "D",
                                 type_oids.INTERVAL: "T", type_oids.TEXT: "S", type_oids.VARCHAR: "S", type_oids.BPCHAR: "S", type_oids.NAME: "S",
                                 type_oids.JSON: "U", type_oids.JSONB: "U", type_oids.UUID: "U", type_oids.BYTEA: "U"}.get(oid, "N" if oid in type_oids.NUMERIC_TYPES else "U")
        yield oid, name, elem, arr, cat


@table("pg_catalog", "pg_type", [
    ("oid", type_oids.OID), ("typname", type_oids.NAME), ("typnamespace", type_oids.OID), ("typowner", type_oids.OID), ("typlen", type_oids.INT2),
    ("typbyval", type_oids.BOOL), ("typtype", type_oids.CHAR), ("typcategory", type_oids.CHAR), ("typispreferred", type_oids.BOOL),
    ("typisdefined", type_oids.BOOL), ("typdelim", type_oids.CHAR), ("typrelid", type_oids.OID), ("typsubscript", type_oids.OID), ("typelem", type_oids.OID),
    ("typarray", type_oids.OID), ("typinput", type_oids.REGPROC), ("typoutput", type_oids.REGPROC), ("typreceive", type_oids.REGPROC),
    ("typsend", type_oids.REGPROC), ("typmodin", type_oids.REGPROC), ("typmodout", type_oids.REGPROC), ("typanalyze", type_oids.REGPROC),
    ("typalign", type_oids.CHAR), ("typstorage", type_oids.CHAR), ("typnotnull", type_oids.BOOL), ("typbasetype", type_oids.OID),
    ("typtypmod", type_oids.INT4), ("typndims", type_oids.INT4), ("typcollation", type_oids.OID), ("typdefaultbin", type_oids.TEXT),
    ("typdefault", type_oids.TEXT), ("typacl", type_oids.TEXT),
])
def _pg_type(state, ctx):
    for oid, name, elem, arr, cat in _type_rows():
        yield (oid, name, 11, 10, sqltypes.TYPLEN.get(oid, -1), oid in (type_oids.INT4, type_oids.INT2, type_oids.INT8, type_oids.BOOL, type_oids.FLOAT8, type_oids.FLOAT4, type_oids.DATE),
               "p" if oid in (type_oids.VOID, type_oids.RECORD, type_oids.UNKNOWN, type_oids.ANY) else "b", cat, oid in (type_oids.TEXT, type_oids.FLOAT8, type_oids.BOOL, type_oids.TIMESTAMPTZ),
               True, ",", 0, 0, elem, arr, 0, 0, 0, 0, 0, 0, 0, "i", typstorage(oid), False, 0, -1, 0, 100 if sqltypes.is_string(oid) else 0,
               None, None, None)


#: the comments initdb gives the databases pg_database lists (shobj_description, psql's \\l+)
DATABASE_COMMENTS = {5: "default administrative connection database", 1: "default template for new databases",
                     4: "unmodifiable empty database"}


@table("pg_catalog", "pg_database", [
    ("oid", type_oids.OID), ("datname", type_oids.NAME), ("datdba", type_oids.OID), ("encoding", type_oids.INT4), ("datlocprovider", type_oids.CHAR),
    ("datistemplate", type_oids.BOOL), ("datallowconn", type_oids.BOOL), ("datconnlimit", type_oids.INT4), ("datlastsysoid", type_oids.OID),
    ("datfrozenxid", type_oids.XID), ("datminmxid", type_oids.XID), ("dattablespace", type_oids.OID), ("datcollate", type_oids.TEXT),
    ("datctype", type_oids.TEXT), ("daticulocale", type_oids.TEXT), ("datcollversion", type_oids.TEXT), ("datacl", type_oids.ARRAY_OF[type_oids.TEXT]),
])
def _pg_database(state, ctx):
    for d in state.databases.values():
        yield (d.oid, d.name, d.owner, 6, "c", d.is_template, d.allow_connections, -1, 0, 0, 0, 1663, "C", "C", None,
               None, acl.acl_texts(state.roles, d.acl))


@table("pg_catalog", "pg_roles", [
    ("rolname", type_oids.NAME), ("rolsuper", type_oids.BOOL), ("rolinherit", type_oids.BOOL), ("rolcreaterole", type_oids.BOOL),
    ("rolcreatedb", type_oids.BOOL), ("rolcanlogin", type_oids.BOOL), ("rolreplication", type_oids.BOOL), ("rolconnlimit", type_oids.INT4),
    ("rolpassword", type_oids.TEXT), ("rolvaliduntil", type_oids.TIMESTAMPTZ), ("rolbypassrls", type_oids.BOOL), ("rolconfig", type_oids.ARRAY_OF[type_oids.TEXT]),
    ("oid", type_oids.OID),
])
def _pg_roles(state, ctx):
    for r in state.roles.values():
        yield (r.name, r.superuser, r.inherit, r.createrole, r.createdb, r.login, r.replication, r.connlimit,
               "********", r.valid_until, r.bypassrls, _rolconfig(state, r.oid), r.oid)


def _rolconfig(state, role: int) -> list[str] | None:
    """rolconfig / useconfig: the role's settings for every database."""
    rs = state.role_settings.get((0, role))
    return list(rs.config) if rs is not None else None


@table("pg_catalog", "pg_db_role_setting", [("setdatabase", type_oids.OID), ("setrole", type_oids.OID),
                                            ("setconfig", TEXTARR)])
def _pg_db_role_setting(state, ctx):
    for rs in state.role_settings.values():
        yield (rs.database, rs.role, list(rs.config))


@table("information_schema", "tables", [
    ("table_catalog", type_oids.NAME), ("table_schema", type_oids.NAME), ("table_name", type_oids.NAME), ("table_type", type_oids.TEXT),
    ("self_referencing_column_name", type_oids.NAME), ("reference_generation", type_oids.TEXT), ("user_defined_type_catalog", type_oids.NAME),
    ("user_defined_type_schema", type_oids.NAME), ("user_defined_type_name", type_oids.NAME), ("is_insertable_into", type_oids.TEXT),
    ("is_typed", type_oids.TEXT), ("commit_action", type_oids.TEXT),
])
def _is_tables(state, ctx):
    for r in state.rels.values():
        if r.relkind not in ("r", "v", "f") or not acl.may_see(state, ctx.session, r):
            continue
        tt = {"r": "BASE TABLE", "v": "VIEW", "f": "FOREIGN"}[r.kind]
        yield ("postgres", r.schema, r.name, tt, None, None, None, None, None, "YES" if r.kind != "v" else "NO", "NO", None)


@table("information_schema", "columns", [
    ("table_catalog", type_oids.NAME), ("table_schema", type_oids.NAME), ("table_name", type_oids.NAME), ("column_name", type_oids.NAME),
    ("ordinal_position", type_oids.INT4), ("column_default", type_oids.TEXT), ("is_nullable", type_oids.TEXT), ("data_type", type_oids.TEXT),
    ("character_maximum_length", type_oids.INT4), ("numeric_precision", type_oids.INT4), ("numeric_scale", type_oids.INT4),
    ("datetime_precision", type_oids.INT4), ("udt_name", type_oids.NAME), ("is_identity", type_oids.TEXT), ("is_generated", type_oids.TEXT),
])
def _is_columns(state, ctx):
    for r in state.rels.values():
        if r.relkind not in ("r", "v", "f") or not acl.may_see(state, ctx.session, r):
            continue
        for c, n in zip(r.live_columns, r.live_attnums):
            if c.hidden or not acl.may_see(state, ctx.session, r, c):
                continue
            prec = {type_oids.INT2: 16, type_oids.INT4: 32, type_oids.INT8: 64, type_oids.FLOAT4: 24, type_oids.FLOAT8: 53}.get(c.type_oid)
            yield ("postgres", r.schema, r.name, c.name, n, _default_text(c), "NO" if c.not_null else "YES",
                   sqltypes.format_type(c.type_oid) if c.type_oid not in type_oids.ELEMENT_OF else "ARRAY",
                   (c.typmod - 4) if c.typmod > 0 and c.type_oid in (type_oids.VARCHAR, type_oids.BPCHAR) else None,
                   prec, 0 if c.type_oid in (type_oids.INT2, type_oids.INT4, type_oids.INT8) else None, None, sqltypes.type_name(c.type_oid),
                   "YES" if c.identity else "NO", "NEVER")


@table("information_schema", "schemata", [("catalog_name", type_oids.NAME), ("schema_name", type_oids.NAME), ("schema_owner", type_oids.NAME)])
def _is_schemata(state, ctx):
    """PostgreSQL 15 lists the schemas the current role has the owner's privileges of, or USAGE or CREATE on."""
    me = acl.current_role(state, ctx.session)
    mine = acl.privileged_roles(state.roles, me.oid)
    for s in state.schemas.values():
        owner = acl.schema_owner(s)
        if acl.has_owner_rights(state, me, owner) or acl.aclmask(acl.schema_acl(s), mine)[0]:
            yield ("postgres", s.name, acl.role_name(state.roles, owner))


@table("information_schema", "table_privileges", [
    ("grantor", type_oids.NAME), ("grantee", type_oids.NAME), ("table_catalog", type_oids.NAME),
    ("table_schema", type_oids.NAME), ("table_name", type_oids.NAME), ("privilege_type", type_oids.TEXT),
    ("is_grantable", type_oids.TEXT), ("with_hierarchy", type_oids.TEXT),
])
def _is_table_privileges(state, ctx):
    """One row per privilege in each relation's ACL (its default when NULL),
    shown when the current role has the grantor's or the grantee's privileges
    or the grantee is PUBLIC."""
    me = acl.current_role(state, ctx.session)
    for r in state.rels.values():
        if r.relkind not in ("r", "v", "f"):
            continue
        for grantee, grantor, privs, options in acl.relation_acl(r):
            if grantee != acl.PUBLIC and not (acl.has_owner_rights(state, me, grantor)
                                              or acl.has_owner_rights(state, me, grantee)):
                continue
            owner_rights = grantee != acl.PUBLIC and r.owner in acl.privileged_roles(state.roles, grantee)
            for c in privs:
                yield (acl.role_name(state.roles, grantor), "PUBLIC" if grantee == acl.PUBLIC else
                       acl.role_name(state.roles, grantee), "postgres", r.schema, r.name, acl.KEYWORD_OF[c],
                       "YES" if c in options or owner_rights else "NO", "YES" if c == "r" else "NO")


# ----------------------------------------------------------------- psql support
# Relations psql's describe commands (\d, \dt, \dn, \l, ...) read.  Most of
# them are empty or hold a few fixed rows; the ones computed from the catalog
# are pg_index, pg_constraint, pg_attrdef, pg_foreign_table and the pg_* views.

OIDARR = type_oids.ARRAY_OF[type_oids.OID]
INT2ARR = type_oids.ARRAY_OF[type_oids.INT2]
NAMEARR = type_oids.ARRAY_OF[type_oids.NAME]
STREAM_SERVER_OID = 13200
STREAM_FDW_OID = 13201
PIPELINEDB_EXTENSION_OID = 13501


def _attnum(rel, name: str) -> int:
    return int(rel.attnum(name))


#: default btree operator classes per type (pg_opclass oids), for pg_index.indclass
_OPCLASS = {type_oids.INT4: 1978, type_oids.INT8: 3124, type_oids.INT2: 1979, type_oids.TEXT: 3126, type_oids.VARCHAR: 3126, type_oids.BPCHAR: 426,
            type_oids.FLOAT8: 3123, type_oids.FLOAT4: 1970, type_oids.NUMERIC: 3125, type_oids.BOOL: 424, type_oids.DATE: 3122, type_oids.TIMESTAMP: 3128,
            type_oids.TIMESTAMPTZ: 3127, type_oids.UUID: 2968, type_oids.BYTEA: 428, type_oids.TIME: 1996, type_oids.INTERVAL: 1982, type_oids.OID: 1981}


def _coltype(rel, attnum: int) -> int:
    col = rel.column_at(attnum)
    return col.type_oid if col is not None else 0


def _con_oid(rel, con) -> int:
    return constraint_oid(rel, con)


def _role_name(state, oid: int) -> str:
    for r in state.roles.values():
        if r.oid == oid:
            return r.name
    return "postgres"


@table("pg_catalog", "pg_am", [("oid", type_oids.OID), ("amname", type_oids.NAME), ("amhandler", type_oids.REGPROC), ("amtype", type_oids.CHAR)])
def _pg_am(state, ctx):
    yield (2, "heap", 3, "t")
    yield (403, "btree", 330, "i")
    yield (405, "hash", 331, "i")


@table("pg_catalog", "pg_index", [
    ("indexrelid", type_oids.OID), ("indrelid", type_oids.OID), ("indnatts", type_oids.INT2), ("indnkeyatts", type_oids.INT2), ("indisunique", type_oids.BOOL),
    ("indnullsnotdistinct", type_oids.BOOL), ("indisprimary", type_oids.BOOL), ("indisexclusion", type_oids.BOOL), ("indimmediate", type_oids.BOOL),
    ("indisclustered", type_oids.BOOL), ("indisvalid", type_oids.BOOL), ("indcheckxmin", type_oids.BOOL), ("indisready", type_oids.BOOL),
    ("indislive", type_oids.BOOL), ("indisreplident", type_oids.BOOL), ("indkey", type_oids.INT2VECTOR), ("indcollation", type_oids.OIDVECTOR),
    ("indclass", type_oids.OIDVECTOR), ("indoption", type_oids.INT2VECTOR), ("indexprs", type_oids.TEXT), ("indpred", type_oids.TEXT),
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
               True, False, keys, [100 if sqltypes.is_string(_coltype(t, k)) else 0 for k in keys],
               [_OPCLASS.get(_coltype(t, k), 0) for k in keys], [0 for _ in keys], None, None)


@table("pg_catalog", "pg_constraint", [
    ("oid", type_oids.OID), ("conname", type_oids.NAME), ("connamespace", type_oids.OID), ("contype", type_oids.CHAR), ("condeferrable", type_oids.BOOL),
    ("condeferred", type_oids.BOOL), ("convalidated", type_oids.BOOL), ("conrelid", type_oids.OID), ("contypid", type_oids.OID), ("conindid", type_oids.OID),
    ("conparentid", type_oids.OID), ("confrelid", type_oids.OID), ("confupdtype", type_oids.CHAR), ("confdeltype", type_oids.CHAR),
    ("confmatchtype", type_oids.CHAR), ("conislocal", type_oids.BOOL), ("coninhcount", type_oids.INT4), ("connoinherit", type_oids.BOOL),
    ("conkey", INT2ARR), ("confkey", INT2ARR), ("conpfeqop", OIDARR), ("conppeqop", OIDARR), ("conffeqop", OIDARR),
    ("conexclop", OIDARR), ("conbin", type_oids.TEXT),
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


@table("pg_catalog", "pg_inherits", [("inhrelid", type_oids.OID), ("inhparent", type_oids.OID), ("inhseqno", type_oids.INT4),
                                     ("inhdetachpending", type_oids.BOOL)])
def _pg_inherits(state, ctx):
    return iter(())


@table("pg_catalog", "pg_foreign_data_wrapper", [
    ("oid", type_oids.OID), ("fdwname", type_oids.NAME), ("fdwowner", type_oids.OID), ("fdwhandler", type_oids.OID), ("fdwvalidator", type_oids.OID),
    ("fdwacl", type_oids.TEXT), ("fdwoptions", TEXTARR),
])
def _pg_fdw(state, ctx):
    yield (STREAM_FDW_OID, "stream_fdw", 10, 0, 0, None, None)


@table("pg_catalog", "pg_foreign_server", [
    ("oid", type_oids.OID), ("srvname", type_oids.NAME), ("srvowner", type_oids.OID), ("srvfdw", type_oids.OID), ("srvtype", type_oids.TEXT),
    ("srvversion", type_oids.TEXT), ("srvacl", type_oids.TEXT), ("srvoptions", TEXTARR),
])
def _pg_foreign_server(state, ctx):
    yield (STREAM_SERVER_OID, "stream", 10, STREAM_FDW_OID, None, None, None, None)


@table("pg_catalog", "pg_foreign_table", [("ftrelid", type_oids.OID), ("ftserver", type_oids.OID), ("ftoptions", TEXTARR)])
def _pg_foreign_table(state, ctx):
    for r in state.rels.values():
        if r.kind == "f":
            opts = [f"{k}={v}" for k, v in r.options] or None
            yield (r.oid, STREAM_SERVER_OID, opts)


@table("pg_catalog", "pg_description", [("objoid", type_oids.OID), ("classoid", type_oids.OID), ("objsubid", type_oids.INT4),
                                        ("description", type_oids.TEXT)])
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


@table("pg_catalog", "pg_attrdef", [("oid", type_oids.OID), ("adrelid", type_oids.OID), ("adnum", type_oids.INT2), ("adbin", type_oids.TEXT)])
def _pg_attrdef(state, ctx):
    for r, c, n in column_defaults(state):
        yield (attrdef_oid(r, n), r.oid, n, _default_text(c))


def column_defaults(state):
    """(relation, column, attnum) of each column with a pg_attrdef row: a
    DEFAULT of a table's or view's column; an identity column's sequence is
    no default (atthasdef false, as PostgreSQL), nor are an index's columns."""
    for r in state.rels.values():
        if r.kind == "i":
            continue
        for c, n in zip(r.live_columns, r.live_attnums):
            if not c.hidden and not c.identity and _default_text(c) is not None:
                yield r, c, n


def attrdef_oid(rel, attnum: int) -> int:
    """pg_attrdef.oid of a column's default, derived from table and column."""
    return 4_000_000 + (rel.oid % 100_000) * 100 + attnum - 1


def rule_oid(rel) -> int:
    """pg_rewrite.oid of a view's _RETURN rule, derived from the view."""
    return 5_000_000 + rel.oid % 1_000_000


@table("pg_catalog", "pg_proc", [
    ("oid", type_oids.OID), ("proname", type_oids.NAME), ("pronamespace", type_oids.OID), ("proowner", type_oids.OID), ("prolang", type_oids.OID),
    ("procost", type_oids.FLOAT4), ("prorows", type_oids.FLOAT4), ("provariadic", type_oids.OID), ("prosupport", type_oids.REGPROC),
    ("prokind", type_oids.CHAR), ("prosecdef", type_oids.BOOL), ("proleakproof", type_oids.BOOL), ("proisstrict", type_oids.BOOL),
    ("proretset", type_oids.BOOL), ("provolatile", type_oids.CHAR), ("proparallel", type_oids.CHAR), ("pronargs", type_oids.INT2),
    ("pronargdefaults", type_oids.INT2), ("prorettype", type_oids.OID), ("proargtypes", type_oids.TEXT), ("proallargtypes", OIDARR),
    ("proargmodes", type_oids.ARRAY_OF[type_oids.CHAR]), ("proargnames", TEXTARR), ("proargdefaults", type_oids.TEXT),
    ("protrftypes", OIDARR), ("prosrc", type_oids.TEXT), ("probin", type_oids.TEXT), ("prosqlbody", type_oids.TEXT),
    ("proconfig", TEXTARR), ("proacl", TEXTARR),
])
def _pg_proc(state, ctx):
    for e in _builtin_procs():
        yield _proc_row(e)
    for fns in state.functions.values():
        for f in fns:
            yield _user_proc_row(state, f)


#: pg_language rows: (oid, name, is a PL, trusted, call handler, inline handler, validator)
LANGUAGES = ((12, "internal", False, False, 0, 0, 2246), (13, "c", False, False, 0, 0, 2247),
             (14, "sql", False, True, 0, 0, 2248), (13563, "plpgsql", True, True, 13560, 13561, 13562))
LANGUAGE_OID = {name: oid for oid, name, *_ in LANGUAGES}


@table("pg_catalog", "pg_language", [
    ("oid", type_oids.OID), ("lanname", type_oids.NAME), ("lanowner", type_oids.OID), ("lanispl", type_oids.BOOL),
    ("lanpltrusted", type_oids.BOOL), ("lanplcallfoid", type_oids.OID), ("laninline", type_oids.OID),
    ("lanvalidator", type_oids.OID), ("lanacl", TEXTARR),
])
def _pg_language(state, ctx):
    for oid, name, ispl, trusted, call, inline, validator in LANGUAGES:
        yield (oid, name, 10, ispl, trusted, call, inline, validator, None)


_TYPE_OID = {name: oid for oid, name in sqltypes.TYPE_NAMES.items()}


@table("pg_catalog", "pg_cast", [
    ("oid", type_oids.OID), ("castsource", type_oids.OID), ("casttarget", type_oids.OID), ("castfunc", type_oids.OID),
    ("castcontext", type_oids.CHAR), ("castmethod", type_oids.CHAR),
])
def _pg_cast(state, ctx):
    for c in CASTS:
        if c.source in _TYPE_OID and c.target in _TYPE_OID:
            yield (c.oid, _TYPE_OID[c.source], _TYPE_OID[c.target], c.func, c.context, c.method)


def _user_proc_row(state, f) -> tuple:
    """A CREATE FUNCTION's pg_proc row (RETURNS TABLE columns as 't' arguments, as PostgreSQL keeps them)."""
    all_types = modes = None
    names = list(f.arg_names) if any(f.arg_names) else None
    if f.param_modes:
        params = f.declared_params()
        all_types, modes, names = [p[2] for p in params], [p[0] for p in params], [p[1] for p in params]
        names = names if any(names) else None
    elif f.out_names:
        all_types = list(f.arg_types) + list(f.out_types)
        modes = ["i"] * len(f.arg_types) + ["t"] * len(f.out_types)
        names = list(f.arg_names) + list(f.out_names)
    return (f.oid, f.name, ns_oid(state, f.schema), f.owner, LANGUAGE_OID.get(f.language, 14), f.cost,
            f.rows, 0, 0, f.kind, False, f.leakproof, f.strict, f.retset, f.volatility, f.parallel,
            len(f.arg_types), f.ndefaults, f.return_type, " ".join(str(o) for o in f.arg_types), all_types, modes,
            names, None, None, f.body, None, None, None, acl.acl_texts(state.roles, f.acl))


class ProcEntry(NamedTuple):
    """One built-in function as pg_proc lists it; the executor's function
    catalog supplies them (:func:`set_builtin_procs`), the catalog keeps no
    function knowledge of its own."""

    oid: int
    name: str
    kind: str           # prokind: f, a, w
    strict: bool
    volatile: str       # provolatile: i, s, v
    arg_oids: tuple[int, ...]
    result: int
    variadic: int = 0   # provariadic: the element type of a VARIADIC last argument
    retset: bool = False
    aggkind: str = "n"  # pg_aggregate.aggkind of an aggregate: n normal, o ordered-set, h hypothetical-set
    aggdirectargs: int = 0  # pg_aggregate.aggnumdirectargs: arguments before WITHIN GROUP's ORDER BY


_builtin_procs: Callable[[], list[ProcEntry]] = list


def builtin_procs() -> list[ProcEntry]:
    return _builtin_procs()


def set_builtin_procs(fn: Callable[[], list[ProcEntry]]) -> None:
    global _builtin_procs
    _builtin_procs = fn


#: the pseudo-type "internal" (pg_type 2281): an aggregate's state no SQL value holds
INTERNAL_TYPE = 2281


def proc_name(oid: int) -> str | None:
    """regproc output of a built-in function's OID (None: not one): its name,
    qualified when the name alone is overloaded (regprocout's rule: the name
    must find this one function)."""
    procs = _builtin_procs()
    mine = next((e for e in procs if e.oid == oid), None)
    if mine is None:
        return None
    overloaded = sum(1 for e in procs if e.name == mine.name) > 1
    return f"pg_catalog.{mine.name}" if overloaded else mine.name


@table("pg_catalog", "pg_aggregate", [
    ("aggfnoid", type_oids.REGPROC), ("aggkind", type_oids.CHAR), ("aggnumdirectargs", type_oids.INT2),
    ("aggtransfn", type_oids.REGPROC), ("aggfinalfn", type_oids.REGPROC), ("aggcombinefn", type_oids.REGPROC),
    ("aggserialfn", type_oids.REGPROC), ("aggdeserialfn", type_oids.REGPROC), ("aggmtransfn", type_oids.REGPROC),
    ("aggminvtransfn", type_oids.REGPROC), ("aggmfinalfn", type_oids.REGPROC), ("aggfinalextra", type_oids.BOOL),
    ("aggmfinalextra", type_oids.BOOL), ("aggfinalmodify", type_oids.CHAR), ("aggmfinalmodify", type_oids.CHAR),
    ("aggsortop", type_oids.OID), ("aggtranstype", type_oids.OID), ("aggtransspace", type_oids.INT4),
    ("aggmtranstype", type_oids.OID), ("aggmtransspace", type_oids.INT4), ("agginitval", type_oids.TEXT),
    ("aggminitval", type_oids.TEXT),
])
def _pg_aggregate(state, ctx):
    """One row per aggregate of pg_proc (prokind 'a').  splitstream's aggregates
    are vector kernels over whole columns, not SQL-callable transition and final
    functions, so the function columns are 0 (printed '-') and the transition
    type is the kernel's own (PostgreSQL's 'internal')."""
    for e in _builtin_procs():
        if e.kind == "a":
            yield (e.oid, e.aggkind, e.aggdirectargs, 0, 0, 0, 0, 0, 0, 0, 0, False, False,
                   "r" if e.aggkind == "n" else "w", "r", 0, INTERNAL_TYPE, 0, 0, 0, None, None)


def _proc_row(e: ProcEntry) -> tuple:
    # a qualified built-in (PipelineDB's pipelinedb.get_views) lives in its own schema
    schema, _, name = e.name.rpartition(".")
    return (e.oid, name, NS_OID[schema or "pg_catalog"], 10, 12, 1.0, 1000.0 if e.retset else 0.0, e.variadic, 0,
            e.kind, False, False, e.strict, e.retset, e.volatile, "s", len(e.arg_oids), 0, e.result,
            " ".join(str(o) for o in e.arg_oids), None, None, None, None, None, name, None, None, None, None)


@table("pg_catalog", "pg_collation", [
    ("oid", type_oids.OID), ("collname", type_oids.NAME), ("collnamespace", type_oids.OID), ("collowner", type_oids.OID), ("collprovider", type_oids.CHAR),
    ("collisdeterministic", type_oids.BOOL), ("collencoding", type_oids.INT4), ("collcollate", type_oids.TEXT), ("collctype", type_oids.TEXT),
    ("colliculocale", type_oids.TEXT), ("collversion", type_oids.TEXT),
])
def _pg_collation(state, ctx):
    yield (100, "default", 11, 10, "d", True, -1, None, None, None, None)
    yield (950, "C", 11, 10, "c", True, -1, "C", "C", None, None)
    yield (951, "POSIX", 11, 10, "c", True, -1, "POSIX", "POSIX", None, None)


@table("pg_catalog", "pg_tablespace", [("oid", type_oids.OID), ("spcname", type_oids.NAME), ("spcowner", type_oids.OID), ("spcacl", type_oids.TEXT),
                                       ("spcoptions", TEXTARR)])
def _pg_tablespace(state, ctx):
    yield (1663, "pg_default", 10, None, None)
    yield (1664, "pg_global", 10, None, None)


@table("pg_catalog", "pg_trigger", [
    ("oid", type_oids.OID), ("tgrelid", type_oids.OID), ("tgparentid", type_oids.OID), ("tgname", type_oids.NAME), ("tgfoid", type_oids.OID),
    ("tgtype", type_oids.INT2), ("tgenabled", type_oids.CHAR), ("tgisinternal", type_oids.BOOL), ("tgconstrrelid", type_oids.OID),
    ("tgconstrindid", type_oids.OID), ("tgconstraint", type_oids.OID), ("tgdeferrable", type_oids.BOOL), ("tginitdeferred", type_oids.BOOL),
    ("tgnargs", type_oids.INT2), ("tgattr", type_oids.TEXT), ("tgargs", type_oids.BYTEA), ("tgqual", type_oids.TEXT), ("tgoldtable", type_oids.NAME),
    ("tgnewtable", type_oids.NAME),
])
def _pg_trigger(state, ctx):
    return iter(())


@table("pg_catalog", "pg_policy", [
    ("oid", type_oids.OID), ("polname", type_oids.NAME), ("polrelid", type_oids.OID), ("polcmd", type_oids.CHAR), ("polpermissive", type_oids.BOOL),
    ("polroles", OIDARR), ("polqual", type_oids.TEXT), ("polwithcheck", type_oids.TEXT),
])
def _pg_policy(state, ctx):
    return iter(())


@table("pg_catalog", "pg_rewrite", [
    ("oid", type_oids.OID), ("rulename", type_oids.NAME), ("ev_class", type_oids.OID), ("ev_type", type_oids.CHAR), ("ev_enabled", type_oids.CHAR),
    ("is_instead", type_oids.BOOL), ("ev_qual", type_oids.TEXT), ("ev_action", type_oids.TEXT),
])
def _pg_rewrite(state, ctx):
    for r in state.rels.values():
        if r.relkind in ("v", "m"):
            yield (rule_oid(r), "_RETURN", r.oid, "1", "O", True, None, None)


@table("pg_catalog", "pg_statistic_ext", [
    ("oid", type_oids.OID), ("stxrelid", type_oids.OID), ("stxname", type_oids.NAME), ("stxnamespace", type_oids.OID), ("stxowner", type_oids.OID),
    ("stxstattarget", type_oids.INT4), ("stxkeys", type_oids.TEXT), ("stxkind", type_oids.ARRAY_OF[type_oids.CHAR]), ("stxexprs", type_oids.TEXT),
])
def _pg_statistic_ext(state, ctx):
    return iter(())


@table("pg_catalog", "pg_publication", [
    ("oid", type_oids.OID), ("pubname", type_oids.NAME), ("pubowner", type_oids.OID), ("puballtables", type_oids.BOOL), ("pubinsert", type_oids.BOOL),
    ("pubupdate", type_oids.BOOL), ("pubdelete", type_oids.BOOL), ("pubtruncate", type_oids.BOOL), ("pubviaroot", type_oids.BOOL),
])
def _pg_publication(state, ctx):
    return iter(())


@table("pg_catalog", "pg_publication_rel", [("oid", type_oids.OID), ("prpubid", type_oids.OID), ("prrelid", type_oids.OID),
                                            ("prqual", type_oids.TEXT), ("prattrs", type_oids.ARRAY_OF[type_oids.INT2])])
def _pg_publication_rel(state, ctx):
    return iter(())


@table("pg_catalog", "pg_publication_namespace", [("oid", type_oids.OID), ("pnpubid", type_oids.OID), ("pnnspid", type_oids.OID)])
def _pg_publication_namespace(state, ctx):
    return iter(())


@table("pg_catalog", "pg_publication_tables", [("pubname", type_oids.NAME), ("schemaname", type_oids.NAME), ("tablename", type_oids.NAME),
                                               ("attnames", NAMEARR), ("rowfilter", type_oids.TEXT)])
def _pg_publication_tables(state, ctx):
    return iter(())


@table("pg_catalog", "pg_extension", [
    ("oid", type_oids.OID), ("extname", type_oids.NAME), ("extowner", type_oids.OID), ("extnamespace", type_oids.OID), ("extrelocatable", type_oids.BOOL),
    ("extversion", type_oids.TEXT), ("extconfig", OIDARR), ("extcondition", TEXTARR),
])
def _pg_extension(state, ctx):
    """plpgsql, as in every PostgreSQL database, and pipelinedb, built in here
    (CREATE EXTENSION pipelinedb says it exists): the stream server and its
    wrapper are its members (pg_depend 'e'), so pg_dump leaves them out as it
    leaves out what any extension made."""
    yield (13500, "plpgsql", 10, 11, False, "1.0", None, None)
    yield (PIPELINEDB_EXTENSION_OID, "pipelinedb", 10, NS_OID["pipelinedb"], False, "1.0.0", None, None)


@table("pg_catalog", "pg_views", [("schemaname", type_oids.NAME), ("viewname", type_oids.NAME), ("viewowner", type_oids.NAME),
                                  ("definition", type_oids.TEXT)])
def _pg_views(state, ctx):
    for r in state.rels.values():
        if r.relkind == "v":
            yield (r.schema, r.name, _role_name(state, r.owner), view_definition(state, r, session=ctx.session))


@table("pg_catalog", "pg_matviews", [("schemaname", type_oids.NAME), ("matviewname", type_oids.NAME),
                                     ("matviewowner", type_oids.NAME), ("tablespace", type_oids.NAME),
                                     ("hasindexes", type_oids.BOOL), ("ispopulated", type_oids.BOOL),
                                     ("definition", type_oids.TEXT)])
def _pg_matviews(state, ctx):
    for r in state.rels.values():
        if r.materialized:
            has_index = any(x.kind == "i" and x.index_table == r.oid for x in state.rels.values())
            yield (r.schema, r.name, _role_name(state, r.owner), None, has_index, True, view_definition(state, r, session=ctx.session))


def _raw_view_definition(state, rel, pretty: bool = False, session=None) -> str:
    return " " + rel.sql.strip().rstrip(";") + ";"


#: pg_get_viewdef's text of a view; the SQL layer fills the slot with its
#: deparser (executor/sql/viewdef.py), as it does for column defaults
_view_formatter: Callable = _raw_view_definition


def set_view_formatter(fn: Callable) -> None:
    global _view_formatter
    _view_formatter = fn


def view_definition(state, rel, pretty: bool = False, session=None) -> str:
    """A view's (or materialized view's) query as pg_get_viewdef prints it to
    ``session`` (relations outside its search_path are schema-qualified)."""
    return _view_formatter(state, rel, pretty, session)


@table("pg_catalog", "pg_tables", [
    ("schemaname", type_oids.NAME), ("tablename", type_oids.NAME), ("tableowner", type_oids.NAME), ("tablespace", type_oids.NAME),
    ("hasindexes", type_oids.BOOL), ("hasrules", type_oids.BOOL), ("hastriggers", type_oids.BOOL), ("rowsecurity", type_oids.BOOL),
])
def _pg_tables(state, ctx):
    for r in state.rels.values():
        if r.relkind == "r":
            has_index = any(x.kind == "i" and x.index_table == r.oid for x in state.rels.values())
            yield (r.schema, r.name, _role_name(state, r.owner), None, has_index, False, False, False)


@table("pg_catalog", "pg_indexes", [("schemaname", type_oids.NAME), ("tablename", type_oids.NAME), ("indexname", type_oids.NAME),
                                    ("tablespace", type_oids.NAME), ("indexdef", type_oids.TEXT)])
def _pg_indexes(state, ctx):
    for r in state.rels.values():
        if r.kind == "i":
            t = state.rels.get(r.index_table)
            if t is not None:
                yield (t.schema, t.name, r.name, None, index_def(state, r.oid))


@table("pg_catalog", "pg_sequence", [
    ("seqrelid", type_oids.OID), ("seqtypid", type_oids.OID), ("seqstart", type_oids.INT8), ("seqincrement", type_oids.INT8), ("seqmax", type_oids.INT8),
    ("seqmin", type_oids.INT8), ("seqcache", type_oids.INT8), ("seqcycle", type_oids.BOOL),
])
def _pg_sequence(state, ctx):
    for r in state.rels.values():
        if r.kind == "S":
            yield (r.oid, r.seq_type, r.seq_start, r.seq_increment, r.seq_max, r.seq_min, 1, r.seq_cycle)


@table("pg_catalog", "pg_sequences", [
    ("schemaname", type_oids.NAME), ("sequencename", type_oids.NAME), ("sequenceowner", type_oids.NAME), ("data_type", type_oids.REGTYPE),
    ("start_value", type_oids.INT8), ("min_value", type_oids.INT8), ("max_value", type_oids.INT8), ("increment_by", type_oids.INT8),
    ("cycle", type_oids.BOOL), ("cache_size", type_oids.INT8), ("last_value", type_oids.INT8),
])
def _pg_sequences(state, ctx):
    for r in state.rels.values():
        if r.kind == "S":
            yield (r.schema, r.name, _role_name(state, r.owner), r.seq_type, r.seq_start, r.seq_min, r.seq_max,
                   r.seq_increment, r.seq_cycle, 1, None)


@table("pg_catalog", "pg_user", [
    ("usename", type_oids.NAME), ("usesysid", type_oids.OID), ("usecreatedb", type_oids.BOOL), ("usesuper", type_oids.BOOL), ("userepl", type_oids.BOOL),
    ("usebypassrls", type_oids.BOOL), ("passwd", type_oids.TEXT), ("valuntil", type_oids.TIMESTAMPTZ), ("useconfig", TEXTARR),
])
def _pg_user(state, ctx):
    for r in state.roles.values():
        if r.login:
            yield (r.name, r.oid, r.createdb, r.superuser, r.replication, r.bypassrls, "********", r.valid_until,
                   _rolconfig(state, r.oid))


@table("pg_catalog", "pg_authid", [
    ("oid", type_oids.OID), ("rolname", type_oids.NAME), ("rolsuper", type_oids.BOOL), ("rolinherit", type_oids.BOOL), ("rolcreaterole", type_oids.BOOL),
    ("rolcreatedb", type_oids.BOOL), ("rolcanlogin", type_oids.BOOL), ("rolreplication", type_oids.BOOL), ("rolbypassrls", type_oids.BOOL),
    ("rolconnlimit", type_oids.INT4), ("rolpassword", type_oids.TEXT), ("rolvaliduntil", type_oids.TIMESTAMPTZ),
])
def _pg_authid(state, ctx):
    for r in state.roles.values():
        yield (r.oid, r.name, r.superuser, r.inherit, r.createrole, r.createdb, r.login, r.replication, r.bypassrls,
               r.connlimit, r.password, r.valid_until)


@table("pg_catalog", "pg_auth_members", [("roleid", type_oids.OID), ("member", type_oids.OID), ("grantor", type_oids.OID),
                                         ("admin_option", type_oids.BOOL)])
def _pg_auth_members(state, ctx):
    for r in state.roles.values():
        for granted, grantor, admin in r.member_of:
            yield (granted, r.oid, grantor, admin)


@table("pg_catalog", "pg_default_acl", [("oid", type_oids.OID), ("defaclrole", type_oids.OID),
                                        ("defaclnamespace", type_oids.OID), ("defaclobjtype", type_oids.CHAR),
                                        ("defaclacl", TEXTARR)])
def _pg_default_acl(state, ctx):
    for d in sorted(state.default_acls.values(), key=lambda d: d.oid):
        yield (d.oid, d.role, d.schema, d.objtype, acl.acl_texts(state.roles, d.acl))


@table("pg_catalog", "pg_stat_activity", [
    ("datid", type_oids.OID), ("datname", type_oids.NAME), ("pid", type_oids.INT4), ("leader_pid", type_oids.INT4), ("usesysid", type_oids.OID),
    ("usename", type_oids.NAME), ("application_name", type_oids.TEXT), ("client_addr", type_oids.TEXT), ("client_hostname", type_oids.TEXT),
    ("client_port", type_oids.INT4), ("backend_start", type_oids.TIMESTAMPTZ), ("xact_start", type_oids.TIMESTAMPTZ),
    ("query_start", type_oids.TIMESTAMPTZ), ("state_change", type_oids.TIMESTAMPTZ), ("wait_event_type", type_oids.TEXT),
    ("wait_event", type_oids.TEXT), ("state", type_oids.TEXT), ("backend_xid", type_oids.XID), ("backend_xmin", type_oids.XID),
    ("query_id", type_oids.INT8), ("query", type_oids.TEXT), ("backend_type", type_oids.TEXT),
])
def _pg_stat_activity(state, ctx):
    return iter(())


@table("pg_catalog", "pg_range", [
    ("rngtypid", type_oids.OID), ("rngsubtype", type_oids.OID), ("rngmultitypid", type_oids.OID), ("rngcollation", type_oids.OID),
    ("rngsubopc", type_oids.OID), ("rngcanonical", type_oids.REGPROC), ("rngsubdiff", type_oids.REGPROC),
])
def _pg_range(state, ctx):
    return iter(())


_OPCLASS_NAMES = {1978: "int4_ops", 3124: "int8_ops", 1979: "int2_ops", 3126: "text_ops", 426: "bpchar_ops",
                  3123: "float8_ops", 1970: "float4_ops", 3125: "numeric_ops", 424: "bool_ops", 3122: "date_ops",
                  3128: "timestamp_ops", 3127: "timestamptz_ops", 2968: "uuid_ops", 428: "bytea_ops", 1996: "time_ops",
                  1982: "interval_ops", 1981: "oid_ops"}


@table("pg_catalog", "pg_opclass", [
    ("oid", type_oids.OID), ("opcmethod", type_oids.OID), ("opcname", type_oids.NAME), ("opcnamespace", type_oids.OID), ("opcowner", type_oids.OID),
    ("opcfamily", type_oids.OID), ("opcintype", type_oids.OID), ("opcdefault", type_oids.BOOL), ("opckeytype", type_oids.OID),
])
def _pg_opclass(state, ctx):
    by_oid = {v: k for k, v in _OPCLASS.items() if k not in (type_oids.VARCHAR,)}
    for oid, name in _OPCLASS_NAMES.items():
        yield (oid, 403, name, 11, 10, oid, by_oid.get(oid, 0), True, 0)


@table("pg_catalog", "pg_cursors", [
    ("name", type_oids.TEXT), ("statement", type_oids.TEXT), ("is_holdable", type_oids.BOOL), ("is_binary", type_oids.BOOL),
    ("is_scrollable", type_oids.BOOL), ("creation_time", type_oids.TIMESTAMPTZ),
])
def _pg_cursors(state, ctx):
    # the engine session's SQL-level cursors (their rows made by executor/commands/cursors.cursor_rows)
    rows = getattr(getattr(ctx, "engine_session", None), "cursor_rows", None)
    yield from (rows() if rows is not None else ())


@table("pg_catalog", "pg_prepared_statements", [
    ("name", type_oids.TEXT), ("statement", type_oids.TEXT), ("prepare_time", type_oids.TIMESTAMPTZ),
    ("parameter_types", type_oids.ARRAY_OF[type_oids.REGTYPE]), ("from_sql", type_oids.BOOL),
    ("generic_plans", type_oids.INT8), ("custom_plans", type_oids.INT8),
])
def _pg_prepared_statements(state, ctx):
    # the engine session's named prepared statements (rows made by executor/commands/prepare.prepared_statement_rows)
    rows = getattr(getattr(ctx, "engine_session", None), "prepared_statement_rows", None)
    yield from (rows() if rows is not None else ())
