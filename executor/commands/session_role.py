"""SET ROLE, RESET ROLE and SET / RESET SESSION AUTHORIZATION.

The current role is the ``role`` setting (``none``: the session user), as
in PostgreSQL, where ``SHOW role`` reads it; ``is_superuser`` follows it and
is reported to the client.
"""
from __future__ import annotations

from splitstream.protocol.errors import INSUFFICIENT_PRIVILEGE, UNDEFINED_OBJECT, Notice, PgError

from ..api import Result
from ..execution import privileges
from ..execution.privileges import login_role
from ..execution.setting_changes import undo_on_rollback
from .base import Stmt
from .role_syntax import Reader


_ROLE_SETTINGS = ("role", "is_superuser", "session_authorization")


class SetRoleStmt(Stmt):
    """SET [SESSION | LOCAL] ROLE name | NONE, RESET ROLE."""

    cacheable = False
    tag = "SET"

    def __init__(self, name: str | None, tag: str = "SET", local: bool = False) -> None:
        self.name = name            # None: NONE / RESET
        self.tag, self.local = tag, local

    def run(self, session, ctx):
        st = ctx.state
        info = session.info
        changed: dict[str, str] = {}
        if self.local and session.txn is None:
            return Result(tag=self.tag, notices=[Notice("SET LOCAL can only be used in transaction blocks",
                                                        sqlstate="25P01", severity="WARNING")])
        undo_on_rollback(session, ctx, _ROLE_SETTINGS, self.local)
        if self.name is None:
            changed.update(session.set_setting("role", "none"))
        else:
            target = st.roles.get(self.name)
            if target is None:
                raise PgError(UNDEFINED_OBJECT, f'role "{self.name}" does not exist')
            me = login_role(st, info)
            if not me.superuser and target.oid not in privileges.acl.member_roles(st.roles, me.oid):
                raise PgError(INSUFFICIENT_PRIVILEGE, f'permission denied to set role "{self.name}"')
            changed.update(session.set_setting("role", self.name))
        su = privileges.current_role(st, info).superuser
        changed.update(session.set_setting("is_superuser", "on" if su else "off"))
        return Result(tag=self.tag, parameter_status=changed)


class SetSessionAuthorizationStmt(Stmt):
    """SET SESSION AUTHORIZATION name | DEFAULT: allowed when the role the
    connection authenticated as is a superuser (PostgreSQL's rule)."""

    cacheable = False

    def __init__(self, name: str | None, tag: str = "SET") -> None:
        self.name, self.tag = name, tag

    def run(self, session, ctx):
        st = ctx.state
        info = session.info
        name = self.name if self.name is not None else session.authenticated_user
        if self.name is not None:
            if st.roles.get(self.name) is None:
                raise PgError(UNDEFINED_OBJECT, f'role "{self.name}" does not exist')
            if name != session.authenticated_user and not session.authenticated_superuser:
                raise PgError(INSUFFICIENT_PRIVILEGE, "permission denied to set session authorization")
        undo_on_rollback(session, ctx, _ROLE_SETTINGS)
        info.user = name
        info.login_role = name if self.name is not None else session.authenticated_login_role
        changed = dict(session.set_setting("session_authorization", name))
        changed.update(session.set_setting("role", "none"))
        su = privileges.current_role(st, info).superuser
        changed.update(session.set_setting("is_superuser", "on" if su else "off"))
        return Result(tag=self.tag, parameter_status=changed)


def parse_role_setting(text: str, reset: bool) -> Stmt | None:
    """SET/RESET ROLE or SESSION AUTHORIZATION statements (None: another SET)."""
    r = Reader(text)
    r.next()
    r.accept("SESSION") if not r.at("SESSION", "AUTHORIZATION") else None
    local = r.accept("LOCAL")
    if r.accept("SESSION", "AUTHORIZATION"):
        if reset or r.accept("DEFAULT"):
            r.end()
            return SetSessionAuthorizationStmt(None, "RESET" if reset else "SET")
        name = r.name() if r.peek() is not None and r.peek().kind != "str" else r.string()  # type: ignore[union-attr]
        r.end()
        return SetSessionAuthorizationStmt(name)
    if not r.accept("ROLE"):
        return None
    if reset:
        r.end()
        return SetRoleStmt(None, "RESET")
    r.accept("TO") or r.accept("=")
    t = r.peek()
    if t is None:
        raise r.error()
    if t.kind == "word" and t == "NONE":
        r.next()
        r.end()
        return SetRoleStmt(None, local=local)
    name = r.string() if t.kind == "str" else r.name()
    r.end()
    return SetRoleStmt(name, local=local)
