"""Catalog objects: immutable descriptions of schemas, relations and roles.

Objects are replaced, never mutated, so a transaction can hold a private
copy of the catalog and commit it by swapping a pointer.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type_oid: int
    typmod: int = -1
    not_null: bool = False
    default: str | None = None      # SQL expression text, evaluated at insert time
    identity: str = ""              # '' | 'a' (ALWAYS) | 'd' (BY DEFAULT)
    dropped: bool = False
    attnum: int = 0
    hidden: bool = False            # e.g. a stream's arrival_timestamp: not in SELECT *
    #: column privileges (catalog.objects.acl items); None: none beyond the table's
    acl: tuple[tuple[int, int, str, str], ...] | None = None


@dataclass(frozen=True)
class Constraint:
    name: str
    kind: str                       # 'p' primary key, 'u' unique, 'c' check, 'f' foreign key, 'n' not null
    columns: tuple[str, ...] = ()
    check_sql: str | None = None
    ref_table: int = 0
    ref_columns: tuple[str, ...] = ()
    on_delete: str = "a"            # a=no action, c=cascade, n=set null, r=restrict, d=set default
    on_update: str = "a"
    index_oid: int = 0
    from_index: bool = False        # made by CREATE UNIQUE INDEX: enforced, but not a pg_constraint row
    oid: int = 0                    # pg_constraint.oid (assigned when the relation is stored)


@dataclass(frozen=True)
class Schema:
    oid: int
    name: str
    owner: int = 10
    comment: str | None = None
    #: catalog.objects.acl items; None: the default (the owner holds USAGE and CREATE)
    acl: tuple[tuple[int, int, str, str], ...] | None = None


@dataclass(frozen=True)
class Relation:
    """A pg_class row: table ('r'), stream ('f'), view ('v'), sequence ('S'), index ('i');
    a materialized view is a view or a table marked ``materialized`` (relkind 'm')."""

    oid: int
    schema: str
    name: str
    kind: str
    columns: tuple[ColumnDef, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    owner: int = 10
    persistence: str = "p"          # 'p' permanent, 'u' unlogged (data not WAL-logged, empty after a crash)
    comment: str | None = None
    column_comments: tuple[tuple[str, str], ...] = ()
    # stream
    server: str = ""
    capacity: int = 0
    options: tuple[tuple[str, str], ...] = ()
    # view
    sql: str = ""
    continuous: bool = False
    depends_on: tuple[int, ...] = ()
    #: made by CREATE MATERIALIZED VIEW: pg_class shows relkind 'm'.  A continuous
    #: one is kind 'v' (kept current as its streams grow); one over tables only is
    #: kind 'r' holding the rows of its query at CREATE / the last REFRESH.
    #: Records written before this field decode as False.
    materialized: bool = False
    # sequence
    seq_start: int = 1
    seq_increment: int = 1
    seq_min: int = 1
    seq_max: int = 2**63 - 1
    seq_cycle: bool = False
    seq_type: int = 20
    owned_by: tuple[int, str] | None = None
    # index
    index_table: int = 0
    index_columns: tuple[str, ...] = ()
    index_unique: bool = False
    index_primary: bool = False
    index_method: str = "btree"
    #: catalog.objects.acl items; None: the default (the owner holds every privilege)
    acl: tuple[tuple[int, int, str, str], ...] | None = None

    @property
    def live_columns(self) -> tuple[ColumnDef, ...]:
        return tuple(c for c in self.columns if not c.dropped)

    @property
    def live_attnums(self) -> tuple[int, ...]:
        """pg_attribute.attnum of each live column: its place among all the
        columns ever made, dropped ones included (kept in place, as
        PostgreSQL keeps their numbers), so numbers never move."""
        return tuple(i + 1 for i, c in enumerate(self.columns) if not c.dropped)

    def attnum(self, name: str) -> int:
        """The live column ``name``'s attnum (0: none such)."""
        for i, c in enumerate(self.columns):
            if c.name == name and not c.dropped:
                return i + 1
        return 0

    def column_at(self, attnum: int) -> ColumnDef | None:
        """The live column numbered ``attnum`` (None: none, or dropped)."""
        c = self.columns[attnum - 1] if 1 <= attnum <= len(self.columns) else None
        return c if c is not None and not c.dropped else None

    @property
    def visible_columns(self) -> tuple[ColumnDef, ...]:
        return tuple(c for c in self.columns if not c.dropped and not c.hidden)

    def column(self, name: str) -> ColumnDef | None:
        for c in self.columns:
            if c.name == name and not c.dropped:
                return c
        return None

    def column_index(self, name: str) -> int:
        for i, c in enumerate(self.live_columns):
            if c.name == name:
                return i
        return -1

    @property
    def relkind(self) -> str:
        """pg_class.relkind: the kind, or 'm' for a materialized view."""
        return "m" if self.materialized else self.kind

    @property
    def qualified(self) -> str:
        return self.name if self.schema == "public" else f"{self.schema}.{self.name}"

    def with_(self, **kw: Any) -> "Relation":
        return replace(self, **kw)

    @property
    def primary_key(self) -> Constraint | None:
        for c in self.constraints:
            if c.kind == "p":
                return c
        return None


@dataclass(frozen=True)
class Role:
    """A pg_authid row.  Attributes default as CREATE ROLE's do; records
    written before INHERIT and membership were kept decode with these defaults."""

    oid: int
    name: str
    superuser: bool = False
    login: bool = False
    password: str | None = None     # SCRAM verifier, md5 hash or None
    createdb: bool = False
    createrole: bool = False
    inherit: bool = True
    replication: bool = False
    bypassrls: bool = False
    connlimit: int = -1
    valid_until: Any = None         # timestamptz (datetime or +infinity marker); None: forever
    #: (granted role oid, grantor oid, admin option): pg_auth_members rows of this member
    member_of: tuple[tuple[int, int, bool], ...] = ()


@dataclass(frozen=True)
class Function:
    """A pg_proc row made by CREATE FUNCTION / CREATE PROCEDURE (SQL language).

    ``body`` is the source as written between the quotes (``prosrc``);
    ``arg_defaults`` the default expressions' SQL text ('' where none);
    ``out_names``/``out_types`` the result columns: of RETURNS TABLE, or the
    OUT parameters (then ``param_modes`` is set).  Records written before these fields existed
    (version 1, never produced by a release that ran CREATE FUNCTION)
    decode with the defaults."""

    oid: int
    schema: str
    name: str
    arg_types: tuple[int, ...]
    return_type: int
    body: str
    language: str = "sql"
    owner: int = 10
    arg_names: tuple[str, ...] = ()
    arg_defaults: tuple[str, ...] = ()
    retset: bool = False
    volatility: str = "v"           # provolatile: i, s, v
    strict: bool = False
    kind: str = "f"                 # prokind: f function, p procedure
    out_names: tuple[str, ...] = ()
    out_types: tuple[int, ...] = ()
    #: catalog.objects.acl items; None: the default (PUBLIC and the owner hold EXECUTE)
    acl: tuple[tuple[int, int, str, str], ...] | None = None
    #: with OUT / INOUT parameters: every declared parameter's mode in order
    #: ('i', 'o', 'b'); IN and INOUT ones are arg_*, OUT and INOUT ones out_*
    param_modes: tuple[str, ...] = ()
    parallel: str = "u"             # proparallel: s safe, r restricted, u unsafe
    leakproof: bool = False
    cost: float = 100.0
    rows: float = 0.0               # prorows: 1000 by default for SETOF, else 0

    @property
    def ndefaults(self) -> int:
        return sum(1 for d in self.arg_defaults if d)

    def declared_params(self) -> list[tuple[str, str, int, str]]:
        """Every parameter as declared: (mode, name, type, default)."""
        if not self.param_modes:
            names = tuple(self.arg_names) + ("",) * (len(self.arg_types) - len(self.arg_names))
            defaults = tuple(self.arg_defaults) + ("",) * (len(self.arg_types) - len(self.arg_defaults))
            return [("i", n, t, d) for n, t, d in zip(names, self.arg_types, defaults)]
        out, i, o = [], 0, 0
        for mode in self.param_modes:
            if mode == "o":
                out.append(("o", self.out_names[o], self.out_types[o], ""))
                o += 1
                continue
            default = self.arg_defaults[i] if i < len(self.arg_defaults) else ""
            out.append((mode, self.arg_names[i] if i < len(self.arg_names) else "", self.arg_types[i], default))
            i += 1
            o += mode == "b"
        return out


#: An ACL as catalog.objects.acl keeps it: (grantee, grantor, privileges, grant options) items.
AclItems = tuple[tuple[int, int, str, str], ...]


@dataclass(frozen=True)
class DefaultAcl:
    """A pg_default_acl row (ALTER DEFAULT PRIVILEGES): the ACL objects of
    ``objtype`` ('r' relations, 'S' sequences, 'f' functions, 'n' schemas)
    get when ``role`` creates them (in schema ``schema``, an OID; 0 for
    every schema, an entry that replaces the built-in default instead of
    adding to it)."""

    oid: int
    role: int
    schema: int
    objtype: str
    acl: AclItems = ()


@dataclass(frozen=True)
class DatabaseDef:
    """A pg_database row.  splitstream serves one database's objects; the
    rows exist so CONNECT, CREATE and TEMPORARY can be granted and checked."""

    oid: int
    name: str
    owner: int = 10
    #: None: the default (PUBLIC holds CONNECT and TEMPORARY, the owner everything)
    acl: AclItems | None = None
    is_template: bool = False
    allow_connections: bool = True


@dataclass(frozen=True)
class RoleSetting:
    """A pg_db_role_setting row (ALTER ROLE / DATABASE ... SET): settings a
    session starts with, as ``name=value`` texts.  ``database`` or ``role``
    0 means every database or every role."""

    database: int
    role: int
    config: tuple[str, ...] = ()
