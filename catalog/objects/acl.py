"""Privileges as PostgreSQL keeps them: ACL items, defaults and role membership.

An ACL is a tuple of items ``(grantee, grantor, privileges, grant_options)``:
role OIDs (grantee 0 is PUBLIC) and PostgreSQL's privilege letters
(``arwdDxt`` for relations, ``UC`` for schemas, ...).  ``None`` stands for
the object's default ACL (PostgreSQL's NULL ``relacl``: the owner holds every
privilege), which is materialised by the first GRANT or REVOKE, exactly as
PostgreSQL does, so ``pg_class.relacl`` and psql's ``\\dp`` read the same.

Membership (``Role.member_of``) decides whose privileges a role has:
:func:`privileged_roles` follows memberships through roles with INHERIT
(PostgreSQL 15's ``has_privs_of_role``), :func:`member_roles` follows every
membership (``is_member_of_role``, what SET ROLE needs).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from .model import DatabaseDef, Function, Relation, Role, Schema
from .predefined_roles import BOOTSTRAP_SUPERUSER, PG_DATABASE_OWNER, PG_READ_ALL_DATA, PG_WRITE_ALL_DATA

PUBLIC = 0

#: (grantee, grantor, privilege letters, letters held WITH GRANT OPTION)
AclItem = tuple[int, int, str, str]
Acl = tuple[AclItem, ...]

#: Privilege keyword -> PostgreSQL's ACL letter.
LETTERS = {"SELECT": "r", "INSERT": "a", "UPDATE": "w", "DELETE": "d", "TRUNCATE": "D", "REFERENCES": "x",
           "TRIGGER": "t", "EXECUTE": "X", "USAGE": "U", "CREATE": "C", "TEMPORARY": "T", "TEMP": "T",
           "CONNECT": "c"}
#: The order aclitemout prints letters in (ACL_ALL_RIGHTS_STR).
LETTER_ORDER = "arwdDxtXUCTcsA"
KEYWORD_OF = {v: k for k, v in LETTERS.items() if k != "TEMP"}

#: Object class -> every privilege it has (ACL_ALL_RIGHTS_*).
ALL_RIGHTS = {"table": "arwdDxt", "sequence": "rwU", "schema": "UC", "function": "X", "database": "CTc",
              "column": "arwx", "type": "U"}

#: pg_default_acl.defaclobjtype of each object class ALTER DEFAULT PRIVILEGES names.
DEFACL_OBJTYPE = {"table": "r", "sequence": "S", "function": "f", "type": "T", "schema": "n"}
DEFACL_CLASS = {v: k for k, v in DEFACL_OBJTYPE.items()}


def object_class(kind: str) -> str:
    """A relation kind's privilege class ('S' sequence, else table)."""
    return "sequence" if kind == "S" else "table"


def ordered(letters: Iterable[str]) -> str:
    s = set(letters)
    return "".join(c for c in LETTER_ORDER if c in s)


def default_acl(cls: str, owner: int) -> Acl:
    """acldefault(): what a NULL ACL means for an object of class ``cls``."""
    items: list[AclItem] = []
    if cls == "function":
        items.append((PUBLIC, owner, "X", ""))
    elif cls == "type":
        items.append((PUBLIC, owner, "U", ""))
    elif cls == "database":
        items.append((PUBLIC, owner, "Tc", ""))
    items.append((owner, owner, ALL_RIGHTS[cls], ""))
    return tuple(items)


#: acldefault's object type letters: (rights of PUBLIC, rights of the owner), as acl.c's acldefault
ACLDEFAULT_RIGHTS = {"c": ("", ""), "r": ("", "arwdDxt"), "s": ("", "rwU"), "d": ("Tc", "CTc"), "f": ("X", "X"),
                     "l": ("U", "U"), "L": ("", "rw"), "n": ("", "UC"), "t": ("", "C"), "F": ("", "U"),
                     "S": ("", "U"), "T": ("U", "U"), "p": ("", "sA")}


def acldefault(objtype: str, owner: int) -> Acl:
    """acldefault(objtype, owner): the ACL a NULL one means for an object of
    that pg_dump-style type letter (PUBLIC's item first, then the owner's)."""
    if objtype not in ACLDEFAULT_RIGHTS:
        raise ValueError(objtype)
    world, own = ACLDEFAULT_RIGHTS[objtype]
    return tuple(item for item in ((PUBLIC, owner, world, ""), (owner, owner, own, "")) if item[2])


def effective(acl: Acl | None, cls: str, owner: int) -> Acl:
    return default_acl(cls, owner) if acl is None else acl


def grant(acl: Acl, grantee: int, grantor: int, privs: str, with_option: bool) -> Acl:
    """aclupdate(ACL_MODECHG_ADD): merge into the (grantee, grantor) item or append one."""
    items = list(acl)
    for i, (ge, gr, p, o) in enumerate(items):
        if ge == grantee and gr == grantor:
            items[i] = (ge, gr, ordered(p + privs), ordered(o + privs) if with_option else o)
            return tuple(items)
    items.append((grantee, grantor, ordered(privs), ordered(privs) if with_option else ""))
    return tuple(items)


def revoke(acl: Acl, grantee: int, grantor: int, privs: str, option_only: bool) -> Acl:
    """aclupdate(ACL_MODECHG_DEL) on one item; items left with nothing go."""
    items: list[AclItem] = []
    for ge, gr, p, o in acl:
        if ge == grantee and gr == grantor:
            o = "".join(c for c in o if c not in privs)
            if not option_only:
                p = "".join(c for c in p if c not in privs)
            if not p:
                continue
        items.append((ge, gr, p, o))
    return tuple(items)


def sort_items(acl: Acl) -> Acl:
    """aclitemsort: by grantee, then grantor (PUBLIC, OID 0, first), as
    PostgreSQL stores default ACLs and the ACLs made from them."""
    return tuple(sorted(acl, key=lambda it: (it[0], it[1])))


def same_acl(a: Acl, b: Acl) -> bool:
    """aclequal after sorting both (letters are kept in a canonical order)."""
    return sort_items(a) == sort_items(b)


def dependent_grants(acl: Acl, grantor: int, privs: str) -> list[AclItem]:
    """Items granted by ``grantor`` of privileges in ``privs`` (what losing the
    grant option for them would orphan)."""
    return [it for it in acl if it[1] == grantor and set(it[2]) & set(privs)]


def aclmask(acl: Acl, roles: frozenset[int]) -> tuple[set[str], set[str]]:
    """(privileges, grant options) the roles in ``roles`` (with PUBLIC) hold."""
    privs: set[str] = set()
    opts: set[str] = set()
    for ge, _gr, p, o in acl:
        if ge == PUBLIC or ge in roles:
            privs.update(p)
            opts.update(o)
    return privs, opts


def data_role_rights(roles: frozenset[int], cls: str) -> set[str]:
    """Privileges pg_read_all_data and pg_write_all_data confer whatever an ACL
    says (aclchk.c): SELECT, resp. INSERT, UPDATE and DELETE on every table and
    sequence, USAGE on every schema; never a grant option.  ``roles``: whose
    privileges the role has (:func:`privileged_roles`)."""
    read, write = PG_READ_ALL_DATA in roles, PG_WRITE_ALL_DATA in roles
    if cls in ("table", "sequence"):
        return ({"r"} if read else set()) | (set("awd") if write else set())
    return {"U"} if cls == "schema" and (read or write) else set()


def options_of(acl: Acl, role: int) -> set[str]:
    """Grant options held by ``role`` itself (not through membership)."""
    out: set[str] = set()
    for ge, _gr, _p, o in acl:
        if ge == role:
            out.update(o)
    return out


# ------------------------------------------------------------------ roles


def by_oid(roles: Mapping[str, Role]) -> dict[int, Role]:
    return {r.oid: r for r in roles.values()}


def _closure(roles: Mapping[str, Role], start: int, through_inherit: bool) -> frozenset[int]:
    index = by_oid(roles)
    seen = {start}
    todo = [start]
    while todo:
        r = index.get(todo.pop())
        if r is None or (through_inherit and not r.inherit):
            continue
        for granted, _grantor, _admin in r.member_of:
            if granted not in seen:
                seen.add(granted)
                todo.append(granted)
    if BOOTSTRAP_SUPERUSER in seen:
        seen.add(PG_DATABASE_OWNER)
    return frozenset(seen)


def privileged_roles(roles: Mapping[str, Role], role: int) -> frozenset[int]:
    """``role`` and every role whose privileges it has (has_privs_of_role)."""
    return _closure(roles, role, True)


def member_roles(roles: Mapping[str, Role], role: int) -> frozenset[int]:
    """``role`` and every role it is a member of, directly or not (is_member_of_role)."""
    return _closure(roles, role, False)


def admin_roles(roles: Mapping[str, Role], role: int) -> frozenset[int]:
    """Roles ``role`` (or a role it is a member of) holds WITH ADMIN OPTION."""
    index = by_oid(roles)
    out: set[int] = set()
    for m in member_roles(roles, role):
        r = index.get(m)
        if r is not None:
            out.update(g for g, _gr, admin in r.member_of if admin)
    return frozenset(out)


def role_name(roles: Mapping[str, Role], oid: int) -> str:
    if oid == PUBLIC:
        return "public"
    for r in roles.values():
        if r.oid == oid:
            return r.name
    return str(oid)


def _quoted(name: str) -> str:
    if name and (name[0].isalpha() or name[0] == "_") and all(c.islower() or c.isdigit() or c == "_" for c in name):
        return name
    return '"' + name.replace('"', '""') + '"'


def item_text(roles: Mapping[str, Role], item: AclItem) -> str:
    """aclitemout: ``grantee=privs/grantor``, a ``*`` after a letter held with grant option."""
    ge, gr, p, o = item
    letters = "".join(c + ("*" if c in o else "") for c in p)
    grantee = "" if ge == PUBLIC else _quoted(role_name(roles, ge))
    return f"{grantee}={letters}/{_quoted(role_name(roles, gr))}"


def acl_texts(roles: Mapping[str, Role], acl: Acl | None) -> list[str] | None:
    """An ACL as PostgreSQL's aclitem[] prints (None: a NULL ACL)."""
    return None if acl is None else [item_text(roles, it) for it in acl]


FIRST_USER_OID = 16384


def schema_owner(sch: Schema) -> int:
    """The schema's owner as PostgreSQL 15 has it: the built-in public schema
    belongs to pg_database_owner (whose member the database owner is)."""
    if sch.name == "public" and sch.oid < FIRST_USER_OID and sch.owner == BOOTSTRAP_SUPERUSER:
        return PG_DATABASE_OWNER
    return sch.owner


def schema_acl(sch: Schema) -> Acl:
    """A schema's ACL; the built-in schemas grant USAGE to PUBLIC as
    PostgreSQL's do (public: pg_database_owner holds USAGE and CREATE)."""
    if sch.acl is not None:
        return sch.acl
    if sch.oid < FIRST_USER_OID:
        owner = schema_owner(sch)
        return ((owner, owner, "UC", ""), (PUBLIC, owner, "U", ""))
    return default_acl("schema", sch.owner)


def schema_acl_shown(sch: Schema) -> Acl | None:
    """nspacl as PostgreSQL shows it: NULL for a new schema until a GRANT."""
    return schema_acl(sch) if sch.acl is not None or sch.oid < FIRST_USER_OID else None


def database_acl(db: DatabaseDef) -> Acl:
    """datacl, NULL meaning acldefault: CONNECT and TEMPORARY for PUBLIC, everything for the owner."""
    return effective(db.acl, "database", db.owner)


def relation_acl(rel: Relation) -> Acl:
    return effective(rel.acl, object_class(rel.kind), rel.owner)


def function_acl(fn: Function) -> Acl:
    """A function's ACL: by default PUBLIC and the owner hold EXECUTE."""
    return effective(fn.acl, "function", fn.owner)


# ------------------------------------------------------------------ who runs a statement
# ``info`` is the session's SessionInfo: ``user`` (session user), ``login_role``
# (trust mode maps every name to the superuser) and the ``role`` setting (SET ROLE).


def login_role_name(info: Any) -> str:
    """The session user's role: in trust mode (no password) every client is
    the superuser, whatever user name it gave (``SessionInfo.login_role``)."""
    return str(info.login_role or info.user)


def current_role_name(info: Any) -> str:
    r = str(info.settings.get("role", "none"))
    return login_role_name(info) if r in ("none", "") else r


def shown_current_user(info: Any) -> str:
    """current_user: SET ROLE's role, else the session user's name (which in
    trust mode is any name, holding the superuser's privileges)."""
    r = str(info.settings.get("role", "none"))
    return str(info.user) if r in ("none", "") else r


def login_role(state: Any, info: Any) -> Role:
    r = state.roles.get(login_role_name(info))
    return r if r is not None else Role(-1, login_role_name(info))


def current_role(state: Any, info: Any) -> Role:
    """The role privileges are checked for (SET ROLE's, else the session's).
    A role dropped under a session holds nothing."""
    name = current_role_name(info)
    r = state.roles.get(name)
    return r if r is not None else Role(-1, name)


def has_privs_of_role(state: Any, role: Role, target: int) -> bool:
    """has_privs_of_role: a superuser has every role's privileges, another role
    those of the roles it inherits from (a predefined role's, once granted)."""
    return role.superuser or target in privileged_roles(state.roles, role.oid)


def has_owner_rights(state: Any, role: Role, owner: int) -> bool:
    """pg_has_role(owner, 'USAGE'): a superuser, or a role with the owner's privileges."""
    return has_privs_of_role(state, role, owner)


def may_see(state: Any, info: Any, rel: Relation, column: Any = None) -> bool:
    """information_schema shows a relation (a column) to the roles that own
    it or hold some privilege on it (some column privilege on it)."""
    me = current_role(state, info)
    if has_owner_rights(state, me, rel.owner):
        return True
    roles = privileged_roles(state.roles, me.oid)
    table = aclmask(relation_acl(rel), roles)[0] | data_role_rights(roles, object_class(rel.kind))
    if column is not None:
        return bool(table & set(ALL_RIGHTS["column"])) or bool(aclmask(column.acl or (), roles)[0])
    return bool(table) or any(aclmask(c.acl, roles)[0] for c in rel.columns if c.acl)


# ------------------------------------------------------------------ default privileges


def initial_acl(default_acls: Mapping[tuple[int, int, str], Any], cls: str, owner: int, schema: int) -> Acl | None:
    """get_user_default_acl: the ACL a new object of class ``cls`` created
    by ``owner`` in schema OID ``schema`` starts with (None: the built-in
    default).  The global entry replaces the built-in default, the schema's
    entry adds to it; the result is sorted, and None when it is the default."""
    objtype = DEFACL_OBJTYPE[cls]
    glob = default_acls.get((owner, 0, objtype))
    local = default_acls.get((owner, schema, objtype)) if schema else None
    if glob is None and local is None:
        return None
    builtin = default_acl(cls, owner)
    result = glob.acl if glob is not None else builtin
    for ge, gr, p, o in (local.acl if local is not None else ()):
        result = grant(result, ge, gr, p, False)
        if o:
            result = grant(result, ge, gr, o, True)
    result = sort_items(result)
    # aclmerge of nothing is NULL, so an entry revoking everything leaves the built-in default
    return None if not result or same_acl(result, builtin) else result


def new_owner_acl(current: Acl | None, old: int, new: int) -> Acl | None:
    """aclnewowner: the old owner's items become the new owner's, merged."""
    if current is None:
        return None
    out: Acl = ()
    for ge, gr, p, o in current:
        ge2 = new if ge == old else ge
        gr2 = new if gr == old else gr
        out = grant(out, ge2, gr2, p, False)
        if o:
            out = grant(out, ge2, gr2, o, True)
    return out
