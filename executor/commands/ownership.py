"""Ownership: ALTER ... OWNER TO, REASSIGN OWNED and DROP OWNED (PostgreSQL's
ATExecChangeOwner, AlterSchemaOwner and shdepReassignOwned / shdepDropOwned).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from splitstream.catalog.objects import acl
from splitstream.catalog.objects.model import Relation, Role, Schema
from splitstream.protocol.errors import (
    FEATURE_NOT_SUPPORTED, INSUFFICIENT_PRIVILEGE, INVALID_SCHEMA_NAME, UNDEFINED_TABLE, Notice, PgError,
)

from ..api import Result
from ..execution import privileges
from ..execution.privileges import current_role
from .base import Stmt
from .role_syntax import Reader
from .roles import get_role, role_spec



def new_owner_acl(current: acl.Acl | None, old: int, new: int) -> acl.Acl | None:
    """aclnewowner: the old owner's items become the new owner's, merged."""
    if current is None:
        return None
    out: acl.Acl = ()
    for ge, gr, p, o in current:
        ge2 = new if ge == old else ge
        gr2 = new if gr == old else gr
        out = acl.grant(out, ge2, gr2, p, False)
        if o:
            out = acl.grant(out, ge2, gr2, o, True)
    return out


def change_owner(ctx, obj: Relation | Schema, new: int) -> None:
    """Give ``obj`` (and, for a table, its indexes and owned sequences) to ``new``."""
    if isinstance(obj, Schema):
        ctx.txn.apply(("schema", replace(obj, owner=new, acl=new_owner_acl(obj.acl, obj.owner, new))))
        return
    cols = tuple(replace(c, acl=new_owner_acl(c.acl, obj.owner, new)) for c in obj.columns)
    ctx.txn.apply(("rel", obj.with_(owner=new, acl=new_owner_acl(obj.acl, obj.owner, new), columns=cols)))
    for dep in list(ctx.txn.state.rels.values()):
        if (dep.kind == "i" and dep.index_table == obj.oid) or \
                (dep.kind == "S" and dep.owned_by and dep.owned_by[0] == obj.oid):
            ctx.txn.apply(("rel", dep.with_(owner=new, acl=new_owner_acl(dep.acl, dep.owner, new))))


@dataclass
class OwnedStmt(Stmt):
    """REASSIGN OWNED BY roles TO role, DROP OWNED BY roles."""

    reassign: bool
    roles: list[str]
    to: str | None
    cacheable = False

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "REASSIGN OWNED" if self.reassign else "DROP OWNED"

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        me = current_role(st, session.info)
        olds = [get_role(st, n) for n in self.roles]
        mine = acl.privileged_roles(st.roles, me.oid)
        new = get_role(st, self.to) if self.to else None
        for role in olds + ([new] if new else []):
            if not me.superuser and role.oid not in mine:
                what = "reassign objects" if self.reassign else "drop objects"
                raise PgError(INSUFFICIENT_PRIVILEGE, f"permission denied to {what}")
        for old in olds:
            if new is not None:
                self._reassign(ctx, old.oid, new.oid)
            else:
                self._drop(ctx, old)
        return Result(tag=self.tag)

    def _reassign(self, ctx, old: int, new: int) -> None:
        st = ctx.txn.state
        for sch in list(st.schemas.values()):
            if sch.owner == old and sch.oid >= 16384:
                change_owner(ctx, sch, new)
        for rel in list(ctx.txn.state.rels.values()):
            if rel.owner == old and rel.kind != "i" and not (rel.kind == "S" and rel.owned_by):
                change_owner(ctx, ctx.txn.state.rels[rel.oid], new)
        for fn in [f for fs in st.functions.values() for f in fs if f.owner == old]:
            ctx.txn.apply(("function", replace(fn, owner=new, acl=new_owner_acl(fn.acl, old, new))))

    def _drop(self, ctx, role: Role) -> None:
        st = ctx.txn.state
        owned = [r.name for r in st.rels.values() if r.owner == role.oid] + \
                [s.name for s in st.schemas.values() if s.owner == role.oid and s.oid >= 16384] + \
                [f.name for fs in st.functions.values() for f in fs if f.owner == role.oid]
        if owned:
            raise PgError(FEATURE_NOT_SUPPORTED, "DROP OWNED of objects the role owns is not supported",
                          hint=f"DROP the objects ({', '.join(sorted(owned))}) or REASSIGN OWNED BY {role.name} TO "
                               "another role first; DROP OWNED then revokes the role's privileges.")
        for sch in list(st.schemas.values()):
            if sch.acl and any(role.oid in (it[0], it[1]) for it in sch.acl):
                ctx.txn.apply(("schema", replace(sch, acl=_without(sch.acl, role.oid))))
        for fn in [f for fs in st.functions.values() for f in fs if f.acl]:
            if any(role.oid in (it[0], it[1]) for it in fn.acl or ()):
                ctx.txn.apply(("function", replace(fn, acl=_without(fn.acl or (), role.oid))))
        for rel in list(st.rels.values()):
            held_cols = any(c.acl and any(role.oid in (it[0], it[1]) for it in c.acl) for c in rel.columns)
            if held_cols or (rel.acl and any(role.oid in (it[0], it[1]) for it in rel.acl)):
                cols = tuple(replace(c, acl=_without(c.acl, role.oid) or None) if c.acl else c for c in rel.columns)
                ctx.txn.apply(("rel", rel.with_(acl=_without(rel.acl, role.oid) if rel.acl else None, columns=cols)))


def _without(current: acl.Acl, role: int) -> acl.Acl:
    return tuple(it for it in current if role not in (it[0], it[1]))


def owned_statement(text: str, session) -> Stmt:
    r = Reader(text)
    reassign = r.next() == "REASSIGN"
    r.expect("OWNED", "BY")
    roles = [role_spec(r, session)]
    while r.accept(","):
        roles.append(role_spec(r, session))
    to = None
    if reassign:
        r.expect("TO")
        to = role_spec(r, session)
    else:
        r.accept("CASCADE") or r.accept("RESTRICT")
    r.end()
    return OwnedStmt(reassign, roles, to)



#: ALTER <kind> ... OWNER TO: the words naming the kind -> relation kinds it may name.
_ALTER_KINDS = {"TABLE": "rvfS", "VIEW": "v", "SEQUENCE": "S", "FOREIGN TABLE": "f", "MATERIALIZED VIEW": "v"}


@dataclass
class AlterOwnerStmt(Stmt):
    """ALTER TABLE | VIEW | SEQUENCE | FOREIGN TABLE | SCHEMA name OWNER TO role."""

    kind: str
    schema: str | None
    name: str
    new_owner: str
    if_exists: bool
    cacheable = False

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "ALTER " + self.kind

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        me = current_role(st, session.info)
        new = get_role(st, self.new_owner)
        if self.kind == "SCHEMA":
            sch = st.schemas.get(self.name)
            if sch is None:
                raise PgError(INVALID_SCHEMA_NAME, f'schema "{self.name}" does not exist')
            if sch.owner != new.oid:
                self._check(st, me, new, sch.owner, "schema", sch.name, None)
                change_owner(ctx, sch, new.oid)
            return Result(tag=self.tag)
        rel = _find(st, self.schema, self.name, session.info)
        if rel is None:
            if self.if_exists:
                return Result(tag=self.tag, notices=[Notice(f'relation "{self.name}" does not exist, skipping')])
            raise PgError(UNDEFINED_TABLE, f'relation "{self.name}" does not exist')
        if rel.owner != new.oid:
            self._check(st, me, new, rel.owner, privileges.KIND_NOUN.get(rel.kind, "relation"), rel.name, rel.schema)
            change_owner(ctx, rel, new.oid)
        return Result(tag=self.tag)

    @staticmethod
    def _check(st, me: Role, new: Role, owner: int, noun: str, name: str, schema: str | None) -> None:
        """Superusers may; others must own the object, be able to become the
        new owner, and the new owner needs CREATE on the schema."""
        if me.superuser:
            return
        if not privileges.is_owner(st, me, owner):
            raise privileges.not_owner(noun, name)
        if new.oid not in acl.member_roles(st.roles, me.oid):
            raise PgError(INSUFFICIENT_PRIVILEGE, f'must be member of role "{new.name}"')
        if schema is not None:
            privileges.check_schema(st, new, schema, "C")
        else:
            raise PgError(INSUFFICIENT_PRIVILEGE, "permission denied for database postgres")


def _find(st, schema: str | None, name: str, info) -> Relation | None:
    if schema:
        return st.lookup(schema, name)
    for s in privileges.search_path(info):
        rel = st.lookup(s, name)
        if rel is not None:
            return rel
    return None


def alter_owner_statement(text: str, session) -> Stmt | None:
    """An ALTER ... OWNER TO statement, or None for another ALTER."""
    r = Reader(text)
    r.expect("ALTER")
    kind = ""
    for words in (("FOREIGN", "TABLE"), ("MATERIALIZED", "VIEW"), ("TABLE",), ("VIEW",), ("SEQUENCE",), ("SCHEMA",)):
        if r.accept(*words):
            kind = " ".join(words)
            break
    if not kind:
        return None
    if_exists = r.accept("IF", "EXISTS")
    schema, name = (None, r.name()) if kind == "SCHEMA" else r.qualified()
    if not r.accept("OWNER", "TO"):
        return None
    owner = role_spec(r, session)
    r.end()
    return AlterOwnerStmt(kind, schema, name, owner, if_exists)
