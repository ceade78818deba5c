"""Ownership: ALTER ... OWNER TO, REASSIGN OWNED and DROP OWNED (PostgreSQL's
ATExecChangeOwner, AlterSchemaOwner and shdepReassignOwned / shdepDropOwned).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from splitstream.catalog.objects import acl, function_text
from splitstream.catalog.objects.model import Relation, Role, Schema
from splitstream.protocol.errors import (
    DEPENDENT_OBJECTS_STILL_EXIST, INSUFFICIENT_PRIVILEGE, INVALID_SCHEMA_NAME, UNDEFINED_TABLE, Notice, PgError,
)

from ..api import Result
from ..execution import privileges
from ..execution.privileges import current_role
from .base import Stmt
from .role_syntax import Reader
from .default_privileges import DefaultPrivilegesStmt
from .drop import all_dependents, drop_relation, kind_word
from .grants import GrantStmt
from .roles import get_role, role_spec



def change_owner(ctx, obj: Relation | Schema, new: int) -> None:
    """Give ``obj`` (and, for a table, its indexes and owned sequences) to ``new``."""
    if isinstance(obj, Schema):
        ctx.txn.apply(("schema", replace(obj, owner=new, acl=acl.new_owner_acl(obj.acl, obj.owner, new))))
        return
    cols = tuple(replace(c, acl=acl.new_owner_acl(c.acl, obj.owner, new)) for c in obj.columns)
    ctx.txn.apply(("rel", obj.with_(owner=new, acl=acl.new_owner_acl(obj.acl, obj.owner, new), columns=cols)))
    for dep in list(ctx.txn.state.rels.values()):
        if (dep.kind == "i" and dep.index_table == obj.oid) or \
                (dep.kind == "S" and dep.owned_by and dep.owned_by[0] == obj.oid):
            ctx.txn.apply(("rel", dep.with_(owner=new, acl=acl.new_owner_acl(dep.acl, dep.owner, new))))


@dataclass
class OwnedStmt(Stmt):
    """REASSIGN OWNED BY roles TO role, DROP OWNED BY roles."""

    reassign: bool
    roles: list[str]
    to: str | None
    cascade: bool = False
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
        notices: list[Notice] = []
        for old in olds:
            if new is not None:
                self._reassign(ctx, old.oid, new.oid)
            else:
                notices += self._drop(session, ctx, me, old)
        return Result(tag=self.tag, notices=notices)

    def _reassign(self, ctx, old: int, new: int) -> None:
        st = ctx.txn.state
        for sch in list(st.schemas.values()):
            if sch.owner == old and sch.oid >= 16384:
                change_owner(ctx, sch, new)
        for rel in list(ctx.txn.state.rels.values()):
            if rel.owner == old and rel.kind != "i" and not (rel.kind == "S" and rel.owned_by):
                change_owner(ctx, ctx.txn.state.rels[rel.oid], new)
        for fn in [f for fs in st.functions.values() for f in fs if f.owner == old]:
            ctx.txn.apply(("function", replace(fn, owner=new, acl=acl.new_owner_acl(fn.acl, old, new))))

    def _drop(self, session, ctx, me: Role, role: Role) -> list[Notice]:
        """shdepDropOwned: revoke what was granted to the role (as REVOKE ALL
        ... CASCADE by the current role would), then drop the objects it owns
        in this database with what depends on them (CASCADE) or refuse."""
        self._revoke_all(ctx, me, role)
        st = ctx.txn.state
        schemas = [s for s in st.schemas.values() if s.owner == role.oid and s.oid >= acl.FIRST_USER_OID]
        rels = [r for r in st.rels.values() if r.owner == role.oid and r.kind != "i"]
        gone = {r.oid for r in rels} | {r.oid for r in st.rels.values() if r.schema in {s.name for s in schemas}}
        lines, cascaded = [], []
        for obj in sorted([*schemas, *rels], key=lambda o: o.oid):     # findDependentObjects, target by target
            if isinstance(obj, Schema):
                found = sorted((r for r in st.rels.values() if r.schema == obj.name and r.owner != role.oid
                                and r.kind != "i" and not r.owned_by), key=lambda r: r.oid)
                what = f"schema {obj.name}"
            else:
                found = [d for d in all_dependents(st, obj.oid) if d.kind == "v" and d.oid not in gone]
                what = f"{kind_word(obj)} {obj.qualified}"
            for dep in found:
                gone.add(dep.oid)
                cascaded.append(dep)
                lines.append(f"{kind_word(dep)} {dep.qualified} depends on {what}")
        fns = sorted((f for fs in st.functions.values() for f in fs if f.owner == role.oid), key=lambda f: f.oid)
        for fn in fns:
            shown = f"function {function_text.procedure(fn)}"
            for dep in all_dependents(st, fn.oid):
                if dep.oid not in gone:
                    gone.add(dep.oid)
                    cascaded.append(dep)
                    lines.append(f"{kind_word(dep)} {dep.qualified} depends on {shown}")
        if lines and not self.cascade:
            raise PgError(DEPENDENT_OBJECTS_STILL_EXIST, "cannot drop desired object(s) because other objects "
                          "depend on them", detail="\n".join(lines),
                          hint="Use DROP ... CASCADE to drop the dependent objects too.")
        for oid in sorted(gone, key=lambda o: -o):          # dependents (created later) first
            rel = ctx.txn.state.rels.get(oid)
            if rel is not None:
                for dep in all_dependents(ctx.txn.state, oid):
                    drop_relation(session, ctx, dep)
                drop_relation(session, ctx, rel)
        for fn in fns:
            if any(f.oid == fn.oid for fs in ctx.txn.state.functions.values() for f in fs):
                ctx.txn.apply(("drop_function_oid", fn.oid))
        for sch in schemas:
            for f in [f for fs in ctx.txn.state.functions.values() for f in fs if f.schema == sch.name]:
                ctx.txn.apply(("drop_function_oid", f.oid))
            ctx.txn.apply(("drop_schema", sch.name))
        for key, d in list(ctx.txn.state.default_acls.items()):
            if d.role == role.oid:
                ctx.txn.apply(("drop_default_acl", *key))
        if len(cascaded) == 1:
            return [Notice(f"drop cascades to {kind_word(cascaded[0])} {cascaded[0].qualified}")]
        if cascaded:
            return [Notice(f"drop cascades to {len(cascaded)} other objects", detail="\n".join(
                f"drop cascades to {kind_word(r)} {r.qualified}" for r in cascaded))]
        return []

    def _revoke_all(self, ctx, me: Role, role: Role) -> None:
        """RemoveRoleFromObjectACL on every object whose ACL names the role
        (PostgreSQL visits them in the order the grants were made, which is
        not kept here: schemas, relations by OID, then databases)."""
        revoke = GrantStmt(False, "", True, "table", [], [], [role.name], False, cascade=True)
        st = ctx.txn.state
        for sch in list(st.schemas.values()):
            if _names(sch.acl, role.oid):
                revoke.on_schema(ctx, me, ctx.txn.state.schemas[sch.name], [role.oid])
        for rel in sorted(st.rels.values(), key=lambda r: r.oid):
            if _names(rel.acl, role.oid) or any(_names(c.acl, role.oid) for c in rel.columns):
                ctx.txn.apply(("rel", revoke.on_relation(ctx, me, ctx.txn.state.rels[rel.oid], [role.oid])))
        for d in list(st.default_acls.values()):
            if d.role != role.oid and _names(d.acl, role.oid):
                cls = acl.DEFACL_CLASS[d.objtype]
                DefaultPrivilegesStmt([], [], False, acl.ALL_RIGHTS[cls], cls, [role.name], False, True).set_entry(
                    ctx, d.role, d.schema, [role.oid])
        for db in list(st.databases.values()):        # shared objects after this database's
            if _names(db.acl, role.oid):
                revoke.on_database(ctx, me, db, [role.oid])
        for fn in [f for fs in st.functions.values() for f in fs if _names(f.acl, role.oid)]:
            ctx.txn.apply(("function", replace(fn, acl=tuple(it for it in fn.acl or () if it[0] != role.oid))))


def _names(items: acl.Acl | None, role: int) -> bool:
    """The ACL has an item granted to ``role``."""
    return bool(items) and any(it[0] == role for it in items or ())


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
    cascade = (not reassign) and r.accept("CASCADE")
    if not reassign and not cascade:
        r.accept("RESTRICT")
    r.end()
    return OwnedStmt(reassign, roles, to, cascade)



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
                self._check(st, me, new, sch.owner, "schema", sch.name, None, session.info)
                change_owner(ctx, sch, new.oid)
            return Result(tag=self.tag)
        rel = _find(st, self.schema, self.name, session.info)
        if rel is None:
            if self.if_exists:
                return Result(tag=self.tag, notices=[Notice(f'relation "{self.name}" does not exist, skipping')])
            raise PgError(UNDEFINED_TABLE, f'relation "{self.name}" does not exist')
        if rel.owner != new.oid:
            self._check(st, me, new, rel.owner, privileges.KIND_NOUN.get(rel.relkind, "relation"), rel.name, rel.schema,
                        session.info)
            change_owner(ctx, rel, new.oid)
        return Result(tag=self.tag)

    @staticmethod
    def _check(st, me: Role, new: Role, owner: int, noun: str, name: str, schema: str | None, info) -> None:
        """Superusers may; others must own the object, be able to become the
        new owner, and the new owner needs CREATE on the schema (for a
        schema, the current role CREATE on the database)."""
        if me.superuser:
            return
        if not privileges.is_owner(st, me, owner):
            raise privileges.not_owner(noun, name)
        if new.oid not in acl.member_roles(st.roles, me.oid):
            raise PgError(INSUFFICIENT_PRIVILEGE, f'must be member of role "{new.name}"')
        if schema is not None:
            privileges.check_schema(st, new, schema, "C")
        else:
            privileges.check_database(st, info, "C")


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
