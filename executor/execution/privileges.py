"""Who runs a statement and what they may do (PostgreSQL's aclchk.c).

A statement's planner collects what it needs (:class:`Need`: SELECT on a
table, USAGE on a schema, ...); the session checks the list each time the
statement runs, against the role current *then* (SET ROLE may have changed
since the plan was made, and plans outlive GRANT and REVOKE).  Inside a view
the needs are checked against the view's owner, as PostgreSQL does for views
without ``security_invoker``.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Iterable

from splitstream.catalog.objects import acl
from splitstream.catalog.objects.acl import (  # noqa: F401  (re-exported: the executor's one place for who runs)
    current_role, current_role_name, has_privs_of_role, login_role, login_role_name, relation_acl, schema_acl,
    shown_current_user,
)
from splitstream.catalog.objects import predefined_roles
from splitstream.catalog.objects.model import DatabaseDef, Relation, Role
from splitstream.protocol.errors import INSUFFICIENT_PRIVILEGE, PgError

#: Relation kind -> the noun PostgreSQL's messages use.
KIND_NOUN = {"r": "table", "v": "view", "S": "sequence", "f": "foreign table", "i": "index", "m": "materialized view"}


@dataclass(frozen=True)
class Need:
    """``privs`` (ACL letters, any one of ``any_of`` suffices when set) on a
    relation (``oid``) or a schema (``schema``), checked as ``as_role``
    (a view's owner) or, when 0, as the current role."""

    privs: str
    oid: int = 0
    schema: str = ""
    as_role: int = 0
    any_of: bool = False
    system_table: str = ""          # a catalog only superusers read (SUPERUSER_TABLES)
    #: the columns used, for a column privilege to stand in for the table's (None: the table's is needed)
    columns: frozenset[str] | None = None
    #: EXECUTE on a user function (its OID)
    function: int = 0


#: System catalogs PostgreSQL lets only superusers read (their ACL grants nobody SELECT).
SUPERUSER_TABLES = frozenset({"pg_authid", "pg_statistic"})     # pg_statistic: PostgreSQL grants it to no one


def password_expired(role: Role) -> bool:
    """VALID UNTIL has passed (its +infinity marker never does)."""
    v = role.valid_until
    if v is None or not isinstance(v, dt.datetime):
        return False
    return v < dt.datetime.now(dt.timezone.utc)


def _role_by_oid(state: Any, oid: int) -> Role:
    for r in state.roles.values():
        if r.oid == oid:
            return r
    return Role(oid, str(oid))


def is_owner(state: Any, role: Role, owner: int) -> bool:
    """pg_*_ownercheck: a superuser, or a role with the owner's privileges."""
    return has_privs_of_role(state, role, owner)


def reads_all_settings(state: Any, info: Any) -> bool:
    """The current role sees the superuser-only settings (pg_settings, SHOW ALL):
    a superuser or a role with pg_read_all_settings' privileges (pg_monitor's members)."""
    return has_privs_of_role(state, current_role(state, info), predefined_roles.PG_READ_ALL_SETTINGS)


def require_predefined(state: Any, info: Any, role_oid: int, message: str, hint: str | None = None) -> None:
    """42501 unless the current role has the privileges of predefined role ``role_oid``
    (what PostgreSQL asks of COPY to or from a file, CHECKPOINT, ...)."""
    if not has_privs_of_role(state, current_role(state, info), role_oid):
        raise PgError(INSUFFICIENT_PRIVILEGE, message, hint=hint)


def held(state: Any, role: Role, the_acl: acl.Acl, cls: str = "") -> set[str]:
    """The privileges ``role`` holds under ``the_acl`` (everything for a superuser),
    with those pg_read_all_data / pg_write_all_data confer on an object of class ``cls``."""
    if role.superuser:
        return set(acl.LETTER_ORDER)
    roles = acl.privileged_roles(state.roles, role.oid)
    return acl.aclmask(the_acl, roles)[0] | acl.data_role_rights(roles, cls)


def _columns_allow(state: Any, role: Role, rel: Relation, letter: str, used: frozenset[str]) -> bool:
    """Column privileges cover a statement when every column it uses has the
    privilege, or, using none (``count(*)``), when some column has it."""
    roles = acl.privileged_roles(state.roles, role.oid)
    granted = {c.name for c in rel.columns if c.acl and letter in acl.aclmask(c.acl, roles)[0]}
    return used <= granted if used else bool(granted)


def denied(kind_noun: str, name: str) -> PgError:
    return PgError(INSUFFICIENT_PRIVILEGE, f"permission denied for {kind_noun} {name}")


def not_owner(kind_noun: str, name: str) -> PgError:
    return PgError(INSUFFICIENT_PRIVILEGE, f"must be owner of {kind_noun} {name}")


def require_owner(state: Any, info: Any, owner: int, kind_noun: str, name: str) -> None:
    if not is_owner(state, current_role(state, info), owner):
        raise not_owner(kind_noun, name)


def require_relation_owner(state: Any, info: Any, rel: Relation) -> None:
    require_owner(state, info, rel.owner, KIND_NOUN.get(rel.relkind, "relation"), rel.name)


def check_schema(state: Any, role: Role, name: str, privs: str) -> None:
    sch = state.schemas.get(name)
    if sch is None or role.superuser:
        return
    if not set(privs) <= held(state, role, schema_acl(sch), "schema"):
        raise denied("schema", name)


def session_database(state: Any, info: Any) -> DatabaseDef:
    """The pg_database row of the session's database (trust mode maps every name to postgres)."""
    name = info.database if info is not None else "postgres"
    return state.databases.get(name) or state.databases["postgres"]


def has_database_privilege(state: Any, role: Role, db: DatabaseDef, letter: str) -> bool:
    return letter in held(state, role, acl.database_acl(db))


def check_database(state: Any, info: Any, letter: str) -> None:
    """CREATE (schemas) on the session's database, as the current role."""
    db = session_database(state, info)
    if not has_database_privilege(state, current_role(state, info), db, letter):
        raise denied("database", db.name)


def check_temporary(state: Any, info: Any) -> None:
    """TEMPORARY on the session's database (InitTempTableNamespace)."""
    db = session_database(state, info)
    if not has_database_privilege(state, current_role(state, info), db, "T"):
        raise PgError(INSUFFICIENT_PRIVILEGE, f'permission denied to create temporary tables in database "{db.name}"')


def authorize(state: Any, info: Any, needs: Iterable[Need]) -> None:
    """Raise 42501 unless every need is met (relations dropped since planning
    are left to the statement, which reports them as PostgreSQL would)."""
    me: Role | None = None
    for n in needs:
        if n.as_role:
            role = _role_by_oid(state, n.as_role)
        else:
            if me is None:
                me = current_role(state, info)
                if me.superuser:
                    if not any(x.as_role for x in needs):
                        return
            role = me
        if role.superuser:
            continue
        if n.system_table:
            raise denied("table", n.system_table)
        if n.schema:
            check_schema(state, role, n.schema, n.privs)
            continue
        if n.function:
            _check_function(state, role, n.function)
            continue
        rel = state.rels.get(n.oid)
        if rel is None:
            continue
        have = held(state, role, relation_acl(rel), acl.object_class(rel.kind))
        ok = bool(set(n.privs) & have) if n.any_of else set(n.privs) <= have
        if not ok and n.columns is not None and len(n.privs) == 1:
            ok = _columns_allow(state, role, rel, n.privs, n.columns)
        if not ok:
            raise denied(KIND_NOUN.get(rel.kind, "relation"), rel.name)


def _check_function(state: Any, role: Role, oid: int) -> None:
    """EXECUTE on a function (dropped since planning: the statement reports it)."""
    for fns in state.functions.values():
        for fn in fns:
            if fn.oid == oid:
                if "X" not in held(state, role, acl.function_acl(fn)):
                    raise denied("function", fn.name)
                return


def search_path(info: Any) -> list[str]:
    """The schemas an unqualified name is looked up in, as written (``$user``
    stands for the current user's name; a schema that does not exist is
    simply not found, as in PostgreSQL)."""
    sp = info.settings.get("search_path", '"$user", public') if info is not None else "public"
    out = [p.strip().strip('"') for p in sp.split(",")]
    user: str = getattr(info, "user", None) or ""
    # an empty path is empty (pg_dump's search_path = ''): only pg_catalog, searched implicitly, finds names
    return [user if p == "$user" else p for p in out if p and (p != "$user" or user)]
