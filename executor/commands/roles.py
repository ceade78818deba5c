"""CREATE / ALTER / DROP ROLE (and USER).
"""
from __future__ import annotations

import re
from dataclasses import replace

from splitstream.catalog.objects.model import Role
from splitstream.protocol.auth import is_md5_hash, make_md5_hash, make_scram_verifier
from splitstream.protocol.errors import DUPLICATE_OBJECT, SYNTAX_ERROR, UNDEFINED_OBJECT, Notice, PgError

from ..api import Result
from .base import Stmt


class CreateRoleStmt(Stmt):
    cacheable = False

    def __init__(self, name, password, superuser, login, alter) -> None:
        self.name, self.password, self.superuser, self.login, self.alter = name, password, superuser, login, alter
        self.tag = "ALTER ROLE" if alter else "CREATE ROLE"

    @staticmethod
    def parse(text: str, alter: bool = False) -> "CreateRoleStmt":
        m = re.match(r"\s*(?:create|alter)\s+(role|user)\s+(\"[^\"]+\"|\w+)\s*(.*)$", text, re.I | re.S)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error in role statement")
        name = m.group(2).strip('"') if m.group(2).startswith('"') else m.group(2).lower()
        rest = m.group(3)
        pw = re.search(r"password\s+'((?:[^']|'')*)'", rest, re.I)
        su = re.search(r"\bsuperuser\b", rest, re.I) and not re.search(r"\bnosuperuser\b", rest, re.I)
        login = m.group(1).lower() == "user" or bool(re.search(r"\blogin\b", rest, re.I))
        if re.search(r"\bnologin\b", rest, re.I):
            login = False
        return CreateRoleStmt(name, pw.group(1).replace("''", "'") if pw else None, bool(su), login, alter)

    def run(self, session, ctx):

        st = ctx.txn.for_write(ctx.check_cancel)
        existing = st.roles.get(self.name)
        if self.alter:
            if existing is None:
                raise PgError(UNDEFINED_OBJECT, f'role "{self.name}" does not exist')

            pw = existing.password
            if self.password is not None:
                pw = _stored_password(ctx, self.name, self.password)
            ctx.txn.apply(("role", replace(existing, password=pw)))
            return Result(tag="ALTER ROLE")
        if existing is not None:
            raise PgError(DUPLICATE_OBJECT, f'role "{self.name}" already exists')
        pw = None
        if self.password is not None:
            pw = _stored_password(ctx, self.name, self.password)
        ctx.txn.apply(("role", Role(ctx.txn.new_oid(), self.name, superuser=self.superuser, login=self.login, password=pw)))
        return Result(tag="CREATE ROLE")


def _stored_password(ctx, role: str, password: str) -> str:
    """What PostgreSQL stores for PASSWORD '...': a given hash as is, else a SCRAM verifier
    or (SET password_encryption = 'md5') an md5 hash."""

    if password.startswith("SCRAM-SHA-256$") or is_md5_hash(password):
        return password
    if ctx.setting("password_encryption", "scram-sha-256").lower() == "md5":
        return make_md5_hash(password, role)
    return make_scram_verifier(password)


class DropRoleStmt(Stmt):
    cacheable = False
    tag = "DROP ROLE"

    def __init__(self, name, exists_ok):
        self.name, self.exists_ok = name, exists_ok

    @staticmethod
    def parse(text: str) -> "DropRoleStmt":
        m = re.match(r"\s*drop\s+(?:role|user)\s+(if\s+exists\s+)?(\"[^\"]+\"|\w+)", text, re.I)
        if not m:
            raise PgError(SYNTAX_ERROR, "syntax error in role statement")
        return DropRoleStmt(m.group(2).strip('"') if m.group(2).startswith('"') else m.group(2).lower(), bool(m.group(1)))

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        if self.name not in st.roles:
            if self.exists_ok:
                return Result(tag="DROP ROLE", notices=[Notice(f'role "{self.name}" does not exist, skipping')])
            raise PgError(UNDEFINED_OBJECT, f'role "{self.name}" does not exist')
        ctx.txn.apply(("drop_role", self.name))
        return Result(tag="DROP ROLE")
