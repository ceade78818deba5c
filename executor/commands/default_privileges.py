"""ALTER DEFAULT PRIVILEGES (PostgreSQL's aclchk.c: ExecAlterDefaultPrivilegesStmt
and SetDefaultACL).

Entries live in ``State.default_acls`` (``pg_default_acl``); a relation or
schema being created takes its ACL from them (``catalog.storage.database``
computes it when the object's operation is applied).  A global entry (no
IN SCHEMA) replaces the built-in default ACL and disappears when it equals
it again; a schema's entry adds to the global one and disappears when empty.
The grantor of every item is the role the defaults belong to.
"""
from __future__ import annotations

from dataclasses import dataclass

from splitstream.catalog.objects import acl
from splitstream.catalog.objects.model import DefaultAcl
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INSUFFICIENT_PRIVILEGE, INVALID_SCHEMA_NAME, PgError

from ..api import Result
from ..execution.privileges import current_role
from .base import Stmt
from .grants import _grantee, _privilege_list, _revoke
from .role_syntax import Reader
from .roles import INVALID_GRANT_OPERATION, get_role, role_spec

#: ON <word> -> object class
_TARGETS = {"TABLES": "table", "SEQUENCES": "sequence", "FUNCTIONS": "function", "ROUTINES": "function",
            "TYPES": "type", "SCHEMAS": "schema"}
#: the class as PostgreSQL's "invalid privilege type" message names it
_NOUN = {"table": "relation"}


@dataclass
class DefaultPrivilegesStmt(Stmt):
    """ALTER DEFAULT PRIVILEGES [FOR ROLE r, ...] [IN SCHEMA s, ...] GRANT | REVOKE ..."""

    roles: list[str]               # empty: the current role
    schemas: list[str]             # empty: every schema (the global entry)
    grant: bool
    privs: str
    cls: str
    grantees: list[str]
    option: bool
    cascade: bool = False
    all_privs: bool = False
    columns: bool = False          # column privileges were named (refused)
    cacheable = False
    tag = "ALTER DEFAULT PRIVILEGES"

    def run(self, session, ctx):
        """Checks in ExecAlterDefaultPrivilegesStmt's order: grantees, the
        privileges, then per role membership and the schemas."""
        st = ctx.txn.for_write(ctx.check_cancel)
        me = current_role(st, session.info)
        grantees = [acl.PUBLIC if g == "public" else get_role(st, g).oid for g in self.grantees]
        self.privs = self._checked_privileges()
        for owner in [get_role(st, n) for n in self.roles] or [me]:
            if not me.superuser and owner.oid not in acl.member_roles(st.roles, me.oid):
                raise PgError(INSUFFICIENT_PRIVILEGE, f'must be member of role "{owner.name}"')
            for nsp in [_schema_oid(st, name) for name in self.schemas] or [0]:
                self.set_entry(ctx, owner.oid, nsp, grantees)
        return Result(tag=self.tag)

    def _checked_privileges(self) -> str:
        """The privileges as letters of the object class, or PostgreSQL's refusal."""
        if self.cls == "schema" and self.schemas:
            raise PgError(INVALID_GRANT_OPERATION, "cannot use IN SCHEMA clause when using GRANT/REVOKE ON SCHEMAS")
        if self.cls == "type":
            raise PgError(FEATURE_NOT_SUPPORTED, "ALTER DEFAULT PRIVILEGES ... ON TYPES is not supported",
                          hint="splitstream has no user-defined types (CREATE TYPE), so these defaults would "
                               "never apply.")
        if self.columns:
            raise PgError(INVALID_GRANT_OPERATION, "default privileges cannot be set for columns")
        letters = acl.ALL_RIGHTS[self.cls] if self.all_privs else self.privs
        for c in letters:
            if c not in acl.ALL_RIGHTS[self.cls]:
                raise PgError(INVALID_GRANT_OPERATION,
                              f"invalid privilege type {acl.KEYWORD_OF[c]} for {_NOUN.get(self.cls, self.cls)}")
        return letters

    def set_entry(self, ctx, owner: int, nsp: int, grantees: list[int]) -> None:
        """SetDefaultACL for one (role, schema) entry."""
        objtype = acl.DEFACL_OBJTYPE[self.cls]
        key = (owner, nsp, objtype)
        existing = ctx.txn.state.default_acls.get(key)
        base: acl.Acl = acl.default_acl(self.cls, owner) if nsp == 0 else ()
        new = existing.acl if existing is not None else base
        for grantee in grantees:
            if self.grant:
                new = acl.grant(new, grantee, owner, self.privs, self.option)
            else:
                new = _revoke(new, grantee, owner, self.privs, self.option, self.cascade, owner)
        if acl.same_acl(new, base):
            if existing is not None:
                ctx.txn.apply(("drop_default_acl", *key))
            return
        oid = existing.oid if existing is not None else ctx.txn.new_oid()
        ctx.txn.apply(("default_acl", DefaultAcl(oid, owner, nsp, objtype, acl.sort_items(new))))


def default_privileges_statement(text: str, session) -> Stmt:
    r = Reader(text)
    r.expect("ALTER", "DEFAULT", "PRIVILEGES")
    roles: list[str] | None = None
    schemas: list[str] | None = None
    while r.at("FOR") or r.at("IN"):
        if r.accept("IN", "SCHEMA"):
            if schemas is not None:
                raise PgError("42601", "conflicting or redundant options")
            schemas = r.names()
        else:
            r.expect("FOR")
            if not (r.accept("ROLE") or r.accept("USER")):
                raise r.error()
            if roles is not None:
                raise PgError("42601", "conflicting or redundant options")
            roles = [role_spec(r, session)]
            while r.accept(","):
                roles.append(role_spec(r, session))
    grant = r.accept("GRANT")
    if not grant:
        r.expect("REVOKE")
    option = (not grant) and r.accept("GRANT", "OPTION", "FOR")
    privs, all_privs, columns = _privilege_list(r)
    r.expect("ON")
    word = str(r.next())
    if word not in _TARGETS:
        r.i -= 1
        raise r.error()
    cls = _TARGETS[word]
    r.expect("TO" if grant else "FROM")
    grantees = [_grantee(r, session)]
    while r.accept(","):
        grantees.append(_grantee(r, session))
    cascade = False
    while not r.done():
        if grant and r.accept("WITH", "GRANT", "OPTION"):
            option = True
        elif not grant and (r.accept("CASCADE") or r.accept("RESTRICT")):
            cascade = r.toks[r.i - 1] == "CASCADE"
        else:
            raise r.error()
    return DefaultPrivilegesStmt(roles or [], schemas or [], grant, privs, cls, grantees, option, cascade,
                                 all_privs, bool(columns))


def _schema_oid(st, name: str) -> int:
    sch = st.schemas.get(name)
    if sch is None:
        raise PgError(INVALID_SCHEMA_NAME, f'schema "{name}" does not exist')
    return sch.oid
