"""CREATE / ALTER / DROP ROLE (and USER), GRANT and REVOKE of role
membership, as PostgreSQL 15's commands/user.c checks them.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from splitstream.catalog.objects import acl, function_text
from splitstream.catalog.objects.model import Role
from splitstream.catalog.objects.predefined_roles import PG_DATABASE_OWNER, is_reserved_name
from splitstream.protocol import oids as type_oids
from splitstream.protocol import types as wiretypes
from splitstream.protocol.auth import is_md5_hash, make_md5_hash, make_scram_verifier
from splitstream.protocol.errors import (
    DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_OBJECT, FEATURE_NOT_SUPPORTED, INSUFFICIENT_PRIVILEGE, INTERNAL_ERROR,
    UNDEFINED_OBJECT, Notice, PgError,
)

from ..api import Result
from ..execution.privileges import KIND_NOUN, current_role
from .base import Stmt
from .role_syntax import Reader

OBJECT_IN_USE = "55006"
RESERVED_NAME = "42939"
INVALID_GRANT_OPERATION = "0LP01"

_FLAGS = {"SUPERUSER": "superuser", "CREATEDB": "createdb", "CREATEROLE": "createrole", "INHERIT": "inherit",
          "LOGIN": "login", "REPLICATION": "replication", "BYPASSRLS": "bypassrls"}


def _denied(message: str) -> PgError:
    return PgError(INSUFFICIENT_PRIVILEGE, message)


def role_spec(r: Reader, session) -> str:
    """A RoleSpec: a name, CURRENT_USER / CURRENT_ROLE / SESSION_USER."""
    t = r.peek()
    if t is not None and t.kind == "word" and t in ("CURRENT_USER", "CURRENT_ROLE", "SESSION_USER"):
        r.next()
        if t == "SESSION_USER":
            return str(session.info.user)
        return current_role(session.visible_state, session.info).name
    if t is not None and t.kind == "word" and t == "PUBLIC":
        r.next()
        return "public"
    return r.name()


def _options(r: Reader) -> dict[str, Any]:
    """CREATE/ALTER ROLE options, by attribute name."""
    opts: dict[str, Any] = {}
    r.accept("WITH")
    while not r.done():
        t = r.next()
        key = str(t)
        if key in _FLAGS:
            opts[_FLAGS[key]] = True
        elif key.startswith("NO") and key[2:] in _FLAGS:
            opts[_FLAGS[key[2:]]] = False
        elif key == "CONNECTION":
            r.expect("LIMIT")
            n = r.next()
            if n.kind != "num":
                raise r.error()
            opts["connlimit"] = int(n.text)
        elif key in ("ENCRYPTED", "UNENCRYPTED", "PASSWORD"):
            if key != "PASSWORD":
                r.expect("PASSWORD")
            opts["password"] = None if r.accept("NULL") else r.string()
        elif key == "VALID":
            r.expect("UNTIL")
            opts["valid_until"] = r.string()
        elif key == "IN":
            if not (r.accept("ROLE") or r.accept("GROUP")):
                raise r.error()
            opts["in_role"] = r.names()
        elif key in ("ROLE", "USER"):
            opts["members"] = r.names()
        elif key == "ADMIN":
            opts["admins"] = r.names()
        elif key == "SYSID":
            r.next()
        else:
            r.i -= 1
            raise r.error()
    return opts


def _stored_password(ctx, role: str, password: str | None) -> str | None:
    """What PostgreSQL stores for PASSWORD '...': a given hash as is, else a SCRAM verifier
    or (SET password_encryption = 'md5') an md5 hash.  An empty password is none."""
    if password is None or password == "":
        if password == "":
            ctx.notices.append(Notice("empty string is not a valid password, clearing password"))
        return None
    if password.startswith("SCRAM-SHA-256$") or is_md5_hash(password):
        return password
    if ctx.setting("password_encryption", "scram-sha-256").lower() == "md5":
        return make_md5_hash(password, role)
    return make_scram_verifier(password)


def _valid_until(ctx, text: str) -> Any:
    return wiretypes.decode_text(type_oids.TIMESTAMPTZ, text, tz=ctx.setting("timezone", "UTC"))


def _check_reserved(name: str) -> None:
    """A role name CREATE ROLE or RENAME TO may not take (CreateRole's and RenameRole's checks)."""
    if name in ("public", "none"):
        raise PgError(RESERVED_NAME, f'role name "{name}" is reserved')
    _check_not_pg_name(name)


def _check_not_pg_name(name: str) -> None:
    """Names starting with pg_ belong to PostgreSQL's predefined roles."""
    if is_reserved_name(name):
        raise PgError(RESERVED_NAME, f'role name "{name}" is reserved',
                      detail='Role names starting with "pg_" are reserved.')


def check_alterable(name: str) -> None:
    """check_rolespec_name: ALTER ROLE (attributes or settings) of a role named
    pg_... is refused by its name, before the role is even looked up."""
    if is_reserved_name(name):
        raise PgError(RESERVED_NAME, f'role name "{name}" is reserved', detail="Cannot alter reserved roles.")


def get_role(st, name: str) -> Role:
    r = st.roles.get(name)
    if r is None:
        raise PgError(UNDEFINED_OBJECT, f'role "{name}" does not exist')
    return r


class CreateRoleStmt(Stmt):
    """CREATE ROLE / USER / GROUP and ALTER ROLE / USER ... [WITH] options."""

    cacheable = False

    def __init__(self, name: str, opts: dict[str, Any], alter: bool, user: bool, rename_to: str | None = None) -> None:
        self.name, self.opts, self.alter, self.rename_to = name, opts, alter, rename_to
        if not alter and user:
            self.opts.setdefault("login", True)
        self.tag = "ALTER ROLE" if alter else "CREATE ROLE"

    @staticmethod
    def parse(text: str, session, alter: bool = False) -> "CreateRoleStmt":
        r = Reader(text)
        r.next()
        kind = r.next()
        if kind not in ("ROLE", "USER", "GROUP"):
            raise r.error()
        name = role_spec(r, session) if alter else r.name()
        if alter and r.accept("RENAME"):
            r.expect("TO")
            new = r.name()
            r.end()
            return CreateRoleStmt(name, {}, True, False, rename_to=new)
        return CreateRoleStmt(name, _options(r), alter, kind == "USER")

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        me = current_role(st, session.info)
        if self.rename_to is not None:
            return self._rename(session, ctx, st, me)
        if self.alter:
            return self._alter(ctx, st, me)
        return self._create(ctx, st, me)

    def _create(self, ctx, st, me: Role) -> Result:
        o = self.opts
        if o.get("superuser") and not me.superuser:
            raise _denied("must be superuser to create superusers")
        if o.get("replication") and not me.superuser:
            raise _denied("must be superuser to create replication users")
        if o.get("bypassrls") and not me.superuser:
            raise _denied("must be superuser to create bypassrls users")
        if not (me.superuser or me.createrole):
            raise _denied("permission denied to create role")
        _check_reserved(self.name)
        if self.name in st.roles:
            raise PgError(DUPLICATE_OBJECT, f'role "{self.name}" already exists')
        role = Role(ctx.txn.new_oid(), self.name, **_attributes(ctx, self.name, o))
        ctx.txn.apply(("role", role))
        for parent in o.get("in_role", []):
            add_member(ctx, st, me, get_role(st, parent), [self.name], admin=False)
        if o.get("members"):
            add_member(ctx, st, me, st.roles[self.name], o["members"], admin=False)
        if o.get("admins"):
            add_member(ctx, st, me, st.roles[self.name], o["admins"], admin=True)
        return Result(tag="CREATE ROLE")

    def _alter(self, ctx, st, me: Role) -> Result:
        o = self.opts
        check_alterable(self.name)
        target = get_role(st, self.name)
        if target.superuser or "superuser" in o:
            if not me.superuser:
                raise _denied("must be superuser to alter superuser roles or change superuser attribute")
        elif target.replication or "replication" in o:
            if not me.superuser:
                raise _denied("must be superuser to alter replication roles or change replication attribute")
        elif target.bypassrls or "bypassrls" in o:
            if not me.superuser:
                raise _denied("must be superuser to change bypassrls attribute")
        elif not (me.superuser or me.createrole):
            if set(o) != {"password"} or target.oid != me.oid:
                raise _denied("permission denied")
        if "members" in o or "admins" in o or "in_role" in o:
            raise PgError("42601", 'syntax error at or near "ROLE"')
        ctx.txn.apply(("role", replace(target, **_attributes(ctx, target.name, o))))
        return Result(tag="ALTER ROLE")

    def _rename(self, session, ctx, st, me: Role) -> Result:
        target = get_role(st, self.name)
        new = self.rename_to
        assert new is not None
        if target.name == session.info.user:
            raise PgError(FEATURE_NOT_SUPPORTED, "session user cannot be renamed")
        if target.oid == me.oid:
            raise PgError(FEATURE_NOT_SUPPORTED, "current user cannot be renamed")
        _check_not_pg_name(target.name)          # a predefined role keeps its name
        _check_reserved(new)
        if new in st.roles:
            raise PgError(DUPLICATE_OBJECT, f'role "{new}" already exists')
        if target.superuser and not me.superuser:
            raise _denied("must be superuser to rename superusers")
        if not (me.superuser or me.createrole):
            raise _denied("permission denied to rename role")
        renamed = replace(target, name=new)
        if target.password and is_md5_hash(target.password):
            renamed = replace(renamed, password=None)
            ctx.notices.append(Notice("MD5 password cleared because of role rename"))
        ctx.txn.apply(("drop_role", target.name))
        ctx.txn.apply(("role", renamed))
        return Result(tag="ALTER ROLE")


def _attributes(ctx, name: str, o: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in o.items() if k in _FLAGS.values() or k == "connlimit"}
    if "password" in o:
        out["password"] = _stored_password(ctx, name, o["password"])
    if "valid_until" in o:
        out["valid_until"] = _valid_until(ctx, o["valid_until"])
    return out


def add_member(ctx, st, me: Role, granted: Role, members: list[str], admin: bool, grantor: Role | None = None) -> None:
    """AddRoleMems: make ``members`` members of ``granted``."""
    _check_membership_change(st, me, granted)
    if granted.oid == PG_DATABASE_OWNER:     # its one member is implied: the database's owner
        raise PgError(INTERNAL_ERROR, f'role "{granted.name}" cannot have explicit members')
    by = grantor or me
    if by.oid != me.oid and not me.superuser:
        raise _denied("must be superuser to set grantor")
    for mname in members:
        member = get_role(st, mname)
        if member.oid == PG_DATABASE_OWNER:
            raise PgError(INTERNAL_ERROR, f'role "{member.name}" cannot be a member of any role')
        if member.oid in acl.member_roles(st.roles, granted.oid):   # itself, or a cycle
            raise PgError(INVALID_GRANT_OPERATION, f'role "{granted.name}" is a member of role "{member.name}"')
        member = st.roles[mname]
        existing = [m for m in member.member_of if m[0] == granted.oid]
        if existing and (existing[0][2] or not admin):
            ctx.notices.append(Notice(f'role "{member.name}" is already a member of role "{granted.name}"'))
            continue
        rest = tuple(m for m in member.member_of if m[0] != granted.oid)
        row = (granted.oid, existing[0][1] if existing else by.oid, admin or bool(existing and existing[0][2]))
        ctx.txn.apply(("role", replace(member, member_of=rest + (row,))))


def _check_membership_change(st, me: Role, granted: Role) -> None:
    if granted.superuser:
        if not me.superuser:
            raise _denied("must be superuser to alter superusers")
    elif not (me.superuser or me.createrole) and granted.oid not in acl.admin_roles(st.roles, me.oid):
        raise _denied(f'must have admin option on role "{granted.name}"')


def remove_member(ctx, st, me: Role, granted: Role, members: list[str], admin_only: bool) -> None:
    """DelRoleMems."""
    _check_membership_change(st, me, granted)
    for mname in members:
        member = get_role(st, mname)
        if not any(m[0] == granted.oid for m in member.member_of):
            ctx.notices.append(Notice(f'role "{member.name}" is not a member of role "{granted.name}"',
                                      sqlstate="01000", severity="WARNING"))
            continue
        if admin_only:
            rows = tuple((g, gr, False if g == granted.oid else a) for g, gr, a in member.member_of)
        else:
            rows = tuple(m for m in member.member_of if m[0] != granted.oid)
        ctx.txn.apply(("role", replace(member, member_of=rows)))


class RoleMembershipStmt(Stmt):
    """GRANT role [, ...] TO role [, ...] [WITH ADMIN OPTION] [GRANTED BY role]
    and REVOKE [ADMIN OPTION FOR] role [, ...] FROM role [, ...]."""

    cacheable = False

    def __init__(self, grant: bool, roles: list[str], members: list[str], admin: bool, grantor: str | None) -> None:
        self.grant, self.roles, self.members, self.admin, self.grantor = grant, roles, members, admin, grantor
        self.tag = "GRANT ROLE" if grant else "REVOKE ROLE"

    @staticmethod
    def parse(r: Reader, session, grant: bool) -> "RoleMembershipStmt":
        admin = (not grant) and r.accept("ADMIN", "OPTION", "FOR")
        roles = r.names()
        r.expect("TO" if grant else "FROM")
        members = [role_spec(r, session)]
        while r.accept(","):
            members.append(role_spec(r, session))
        grantor = None
        while not r.done():
            if grant and r.accept("WITH", "ADMIN", "OPTION"):
                admin = True
            elif r.accept("GRANTED", "BY"):
                grantor = role_spec(r, session)
            elif not grant and (r.accept("CASCADE") or r.accept("RESTRICT")):
                pass
            else:
                raise r.error()
        return RoleMembershipStmt(grant, roles, members, admin, grantor)

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        me = current_role(st, session.info)
        grantor = get_role(st, self.grantor) if self.grantor else None
        for name in self.roles:
            granted = get_role(ctx.txn.state, name)
            if self.grant:
                add_member(ctx, ctx.txn.state, me, granted, self.members, self.admin, grantor)
            else:
                remove_member(ctx, ctx.txn.state, me, granted, self.members, self.admin)
        return Result(tag=self.tag)


class DropRoleStmt(Stmt):
    cacheable = False
    tag = "DROP ROLE"

    def __init__(self, names: list[str], exists_ok: bool) -> None:
        self.names, self.exists_ok = names, exists_ok

    @staticmethod
    def parse(text: str) -> "DropRoleStmt":
        r = Reader(text)
        r.expect("DROP")
        if not (r.accept("ROLE") or r.accept("USER") or r.accept("GROUP")):
            raise r.error()
        exists_ok = r.accept("IF", "EXISTS")
        names = r.names()
        r.end()
        return DropRoleStmt(names, exists_ok)

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        me = current_role(st, session.info)
        if not (me.superuser or me.createrole):
            raise _denied("permission denied to drop role")
        notices = []
        for name in self.names:
            st = ctx.txn.state
            role = st.roles.get(name)
            if role is None:
                if self.exists_ok:
                    notices.append(Notice(f'role "{name}" does not exist, skipping'))
                    continue
                raise PgError(UNDEFINED_OBJECT, f'role "{name}" does not exist')
            if role.oid == me.oid:
                raise PgError(OBJECT_IN_USE, "current user cannot be dropped")
            if role.name == session.info.user:
                raise PgError(OBJECT_IN_USE, "session user cannot be dropped")
            if role.superuser and not me.superuser:
                raise _denied("must be superuser to drop superusers")
            if role.oid < acl.FIRST_USER_OID:         # initdb's roles are pinned
                raise PgError(DEPENDENT_OBJECTS_STILL_EXIST,
                              f"cannot drop role {role.name} because it is required by the database system")
            deps = dependencies(st, role.oid)
            if deps:
                raise PgError(DEPENDENT_OBJECTS_STILL_EXIST,
                              f'role "{role.name}" cannot be dropped because some objects depend on it',
                              detail="\n".join(deps))
            ctx.txn.apply(("drop_role", role.name))
            for key, rs in list(ctx.txn.state.role_settings.items()):    # DropSetting: its settings go too
                if key[1] == role.oid:
                    ctx.txn.apply(("role_setting", replace(rs, config=())))
            for other in list(ctx.txn.state.roles.values()):
                if any(m[0] == role.oid or m[1] == role.oid for m in other.member_of):
                    rows = tuple((g, acl.BOOTSTRAP_SUPERUSER if gr == role.oid else gr, a)
                                 for g, gr, a in other.member_of if g != role.oid)
                    ctx.txn.apply(("role", replace(other, member_of=rows)))
        return Result(tag="DROP ROLE", notices=notices)


_DEFACL_NOUN = {"r": "relations", "S": "sequences", "f": "functions", "T": "types", "n": "schemas"}


def default_acl_description(st, d) -> str:
    """getObjectDescription of a pg_default_acl row."""
    text = f"default privileges on new {_DEFACL_NOUN[d.objtype]} belonging to role {acl.role_name(st.roles, d.role)}"
    if d.schema:
        sch = next((s for s in st.schemas.values() if s.oid == d.schema), None)
        text += f" in schema {sch.name if sch is not None else d.schema}"
    return text


def dependencies(st, oid: int) -> list[str]:
    """What keeps role ``oid`` from being dropped: objects it owns and
    privileges granted to or by it, as PostgreSQL's DETAIL lists them
    (by object OID, privileges before ownership of the same object)."""
    found: list[tuple[int, int, str, str]] = []

    def check(obj_oid: int, owner: int, the_acl, what: str, sub: int = 0) -> None:
        if owner == oid:
            found.append((obj_oid, sub, "o", f"owner of {what}"))
        elif the_acl and any(oid in (it[0], it[1]) for it in the_acl):   # an owner's own grants are implied
            found.append((obj_oid, sub, "a", f"privileges for {what}"))

    for sch in st.schemas.values():
        if sch.oid >= 16384 or sch.owner != oid:
            check(sch.oid, sch.owner if sch.oid >= 16384 else -1, sch.acl, f"schema {sch.name}")
    for rel in st.rels.values():
        if rel.kind != "i":
            what = f"{KIND_NOUN.get(rel.kind, 'relation')} {rel.qualified}"
            check(rel.oid, rel.owner, rel.acl, what)
            for n, col in enumerate(rel.live_columns, 1):
                if col.acl and rel.owner != oid:
                    check(rel.oid, -1, col.acl, f"column {col.name} of {what}", n)
    for fns in st.functions.values():
        for fn in fns:
            check(fn.oid, fn.owner, fn.acl, f"function {function_text.procedure(fn)}")
    for d in st.default_acls.values():
        check(d.oid, d.role, d.acl, default_acl_description(st, d))
    for db in st.databases.values():
        check(db.oid, db.owner, db.acl, f"database {db.name}")
    return [text for _oid, _sub, _kind, text in sorted(found)]
