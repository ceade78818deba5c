"""The access privilege inquiry functions (PostgreSQL's acl.c):
has_table_privilege and its family, pg_has_role, with real answers.

Each takes an optional role (name or OID; default the current role), an
object (name or OID) and a privilege list such as ``'SELECT, INSERT WITH
GRANT OPTION'``: true when the role holds any of them.
"""
from __future__ import annotations

from typing import Any, Callable

from splitstream.catalog.datatypes.vector import Col
from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.objects import acl, function_text, system_catalogs
from splitstream.catalog.objects.model import Role
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    INVALID_PARAMETER_VALUE, INVALID_SCHEMA_NAME, INVALID_TEXT_REPRESENTATION, UNDEFINED_COLUMN, UNDEFINED_FUNCTION,
    UNDEFINED_OBJECT, UNDEFINED_TABLE, WRONG_OBJECT_TYPE, PgError,
)

from . import privileges

#: Privilege words each inquiry accepts (PostgreSQL's convert_*_priv_string).
_ACCEPTS = {
    "table": ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"),
    "column": ("SELECT", "INSERT", "UPDATE", "REFERENCES"),
    "sequence": ("USAGE", "SELECT", "UPDATE"),
    "schema": ("CREATE", "USAGE"),
    "database": ("CREATE", "CONNECT", "TEMPORARY", "TEMP"),
    "function": ("EXECUTE",),
}


def _parse_privs(text: str, kind: str) -> list[tuple[str, bool]]:
    """(letter, with grant option) per item of a privilege list."""
    out = []
    for item in text.split(","):
        words = item.strip().upper().split()
        option = words[1:] == ["WITH", "GRANT", "OPTION"]
        if not words or (len(words) > 1 and not option) or words[0] not in _ACCEPTS[kind]:
            raise PgError(INVALID_PARAMETER_VALUE, f'unrecognized privilege type: "{item.strip()}"')
        out.append((acl.LETTERS[words[0]], option))
    return out


def _role(state: Any, ctx: Any, v: Any) -> Role | None:
    if isinstance(v, int):
        return next((r for r in state.roles.values() if r.oid == v), None)
    if v == "public":                   # get_role_oid_or_public: what PUBLIC itself holds
        return Role(acl.PUBLIC, "public")
    r = state.roles.get(v)
    if r is None:
        raise PgError(UNDEFINED_OBJECT, f'role "{v}" does not exist')
    return r


def _holds(state: Any, role: Role, the_acl: acl.Acl, wanted: list[tuple[str, bool]], cls: str = "") -> bool:
    """Does ``role`` hold any of ``wanted`` under ``the_acl`` (on an object of class ``cls``,
    for what pg_read_all_data / pg_write_all_data confer)?"""
    if role.superuser:
        return True
    roles = acl.privileged_roles(state.roles, role.oid)
    privs, opts = acl.aclmask(the_acl, roles)
    privs |= acl.data_role_rights(roles, cls)
    return any((c in opts) if option else (c in privs) for c, option in wanted)


def _relation(state: Any, ctx: Any, v: Any) -> Any:
    if isinstance(v, int):
        return state.rels.get(v)
    parts = [p.strip('"') if p.startswith('"') else p.lower() for p in str(v).split(".")]
    if len(parts) > 1:
        if parts[0] in state.schemas:
            privileges.check_schema(state, privileges.current_role(state, ctx.session), parts[0], "U")
        rel = state.lookup(parts[0], parts[1])
    else:
        rel = next((r for s in privileges.search_path(ctx.session) if (r := state.lookup(s, parts[0])) is not None),
                   None)
    if rel is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{v}" does not exist')
    return rel


def _table(state, ctx, role, obj, privs, kind="table") -> bool | None:
    rel = _relation(state, ctx, obj)
    if rel is None:
        return None
    if kind == "sequence" and rel.kind != "S":
        raise PgError(WRONG_OBJECT_TYPE, f'"{rel.name}" is not a sequence')
    return _holds(state, role, acl.relation_acl(rel), _parse_privs(privs, kind), acl.object_class(rel.kind))


def _column(state, ctx, role, obj, column, privs) -> bool | None:
    rel = _relation(state, ctx, obj)
    if rel is None:
        return None
    live = [c for c in rel.live_columns if not c.hidden]
    col = rel.column(column) if isinstance(column, str) else (live[column - 1] if 0 < column <= len(live) else None)
    if col is None:
        if not isinstance(column, str):
            return None
        raise PgError(UNDEFINED_COLUMN, f'column "{column}" of relation "{rel.name}" does not exist')
    wanted = _parse_privs(privs, "column")
    return (_holds(state, role, acl.relation_acl(rel), wanted, acl.object_class(rel.kind))
            or _holds(state, role, col.acl or (), wanted))


def _schema(state, ctx, role, obj, privs) -> bool | None:
    sch = next((s for s in state.schemas.values() if s.oid == obj), None) if isinstance(obj, int) \
        else state.schemas.get(obj)
    if sch is None:
        if isinstance(obj, int):
            return None
        raise PgError(INVALID_SCHEMA_NAME, f'schema "{obj}" does not exist')
    return _holds(state, role, acl.schema_acl(sch), _parse_privs(privs, "schema"), "schema")


def _database(state, ctx, role, obj, privs) -> bool | None:
    db = next((d for d in state.databases.values() if d.oid == obj), None) if isinstance(obj, int) \
        else state.databases.get(obj)
    if db is None:
        if isinstance(obj, int):
            return None
        raise PgError("3D000", f'database "{obj}" does not exist')
    return _holds(state, role, acl.database_acl(db), _parse_privs(privs, "database"))


def _function(state, ctx, role, obj, privs) -> bool | None:
    """EXECUTE on a user function (named as regprocedure input: ``f(integer)``,
    or by OID); built-in functions keep PostgreSQL's default, EXECUTE for PUBLIC."""
    wanted = _parse_privs(privs, "function")
    fn = _user_function(state, ctx, obj)
    if fn is None:
        return True if not isinstance(obj, int) or obj < acl.FIRST_USER_OID else None
    return _holds(state, role, acl.function_acl(fn), wanted)


def _user_function(state, ctx, obj) -> Any:
    if isinstance(obj, int):
        return function_text.user_function(state, obj)
    text = str(obj).strip()
    name, paren, rest = text.partition("(")
    if not paren:
        raise PgError(INVALID_TEXT_REPRESENTATION, "expected a left parenthesis")
    parts = [p.strip('"') if p.strip().startswith('"') else p.strip().lower() for p in name.split(".")]
    words = [w.strip() for w in rest.rstrip().rstrip(")").split(",") if w.strip()]
    types = tuple(sqltypes.oid_by_name(w) for w in words)
    path = privileges.search_path(ctx.session) if len(parts) == 1 else [parts[0]]
    if len(parts) > 1 and parts[0] in state.schemas:
        privileges.check_schema(state, privileges.current_role(state, ctx.session), parts[0], "U")
    for fn in state.functions.get(parts[-1], ()):
        if fn.schema in path and fn.arg_types == types:
            return fn
    if any(e.name == parts[-1] for e in system_catalogs.builtin_procs()):
        return None
    raise PgError(UNDEFINED_FUNCTION, f'function "{text}" does not exist')


def _has_role(state, ctx, role, obj, privs) -> bool | None:
    target = _role(state, ctx, obj)
    if target is None:
        return None
    words = privs.strip().upper()
    if words not in ("MEMBER", "USAGE", "MEMBER WITH ADMIN OPTION", "MEMBER WITH GRANT OPTION",
                     "USAGE WITH ADMIN OPTION", "USAGE WITH GRANT OPTION"):
        raise PgError(INVALID_PARAMETER_VALUE, f'unrecognized privilege type: "{privs}"')
    if role.superuser:
        return True
    if "OPTION" in words:
        return target.oid in acl.admin_roles(state.roles, role.oid)
    closure = acl.member_roles if words == "MEMBER" else acl.privileged_roles
    return target.oid in closure(state.roles, role.oid)


def _inquiry(check: Callable[..., bool | None], nobj: int) -> Callable[[list[Col], int, Any], Col]:
    """An implementation taking ([role,] object[s]..., privileges)."""
    def impl(cols: list[Col], n: int, ctx: Any) -> Col:
        state = ctx.state
        lists = [c.to_pylist() for c in cols]
        explicit_role = len(cols) == nobj + 2
        out: list[bool | None] = []
        for i in range(n):
            args = [column[i] for column in lists]
            if any(a is None for a in args):
                out.append(None)
                continue
            role = _role(state, ctx, args.pop(0)) if explicit_role else privileges.current_role(state, ctx.session)
            out.append(None if role is None else check(state, ctx, role, *args))
        return Col.from_pylist(out, type_oids.BOOL)
    return impl


FUNCTIONS: dict[str, tuple[Callable[..., bool | None], int]] = {
    "has_table_privilege": (_table, 1),
    "has_sequence_privilege": (lambda st, ctx, role, obj, privs: _table(st, ctx, role, obj, privs, "sequence"), 1),
    "has_column_privilege": (_column, 2),
    "has_schema_privilege": (_schema, 1),
    "has_database_privilege": (_database, 1),
    "has_function_privilege": (_function, 1),
    "pg_has_role": (_has_role, 1),
}


def _signatures(nobj: int) -> str:
    """PostgreSQL's overloads: [role (name or oid),] the object (text or oid;
    a column also by name or number), the privileges (text)."""
    objects = ["text", "oid"]
    if nobj == 2:
        objects = [f"{t}, {c}" for t in ("text", "oid") for c in ("text", "int2")]
    forms = [f"{o}, text" for o in objects] + [f"{r}, {o}, text" for r in ("name", "oid") for o in objects]
    return " | ".join(f"{f} -> bool" for f in forms)


def register_privilege_functions(register: Callable[..., Any]) -> None:
    for name, (check, nobj) in FUNCTIONS.items():
        register(name, sigs=_signatures(nobj), volatile=True)(_inquiry(check, nobj))
