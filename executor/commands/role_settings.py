"""ALTER ROLE | DATABASE ... SET / RESET: settings a session starts with
(PostgreSQL's AlterRoleSet, AlterDatabaseSet and AlterSetting in pg_db_role_setting.c).

Entries live in ``State.role_settings`` (``pg_db_role_setting``) as
``name=value`` texts, the name in PostgreSQL's spelling (``TimeZone``).  A
value is checked when it is stored, as SET would check it (the same errors),
and as PostgreSQL's ``validate_option_array_item`` does: parameters a
session cannot change are refused, superuser-only ones need a superuser.
:func:`login_settings` is what a new session applies, by PostgreSQL's
precedence (role in this database, role, database, everyone).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from splitstream.catalog.objects.model import Role, RoleSetting
from splitstream.protocol.errors import (
    FEATURE_NOT_SUPPORTED, INSUFFICIENT_PRIVILEGE, INVALID_CATALOG_NAME, SYNTAX_ERROR, PgError,
)

from ..api import Result
from ..execution import privileges
from ..execution.privileges import current_role
from .setting_contexts import context_of
from ..settings import DISPLAY_NAMES, check_setting, normalize_setting
from ..sql.sqltext import split_args
from .base import Stmt
from .role_syntax import Reader
from .roles import check_alterable, get_role, role_spec
from .settings import SetStmt, check_context, parse_set

#: parameters whose values are lists of identifiers (GUC_LIST_QUOTE): stored quoted as needed
_LIST_QUOTE = frozenset({"search_path", "temp_tablespaces", "session_preload_libraries",
                         "shared_preload_libraries", "local_preload_libraries"})


@dataclass
class RoleSettingStmt(Stmt):
    """ALTER ROLE r | ALL [IN DATABASE d] and ALTER DATABASE d: SET name = value,
    SET name FROM CURRENT, RESET name, RESET ALL."""

    role: str | None               # None: every role (ALTER ROLE ALL, ALTER DATABASE)
    database: str | None           # None: every database
    name: str | None               # None: RESET ALL
    value: str | None              # None: RESET
    from_current: bool = False
    alter_database: bool = False
    cacheable = False

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "ALTER DATABASE" if self.alter_database else "ALTER ROLE"

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        me = current_role(st, session.info)
        key = self._key(st, me)
        existing = st.role_settings.get(key)
        config = list(existing.config) if existing is not None else []
        if self.name is None:
            config = [item for item in config if not _may_set(me, item.split("=", 1)[0].lower())]
        elif self.value is None and not self.from_current:
            if existing is None:
                return Result(tag=self.tag)
            canonical = validate_setting(me, self.name, None)
            config = [item for item in config if item.split("=", 1)[0].lower() != canonical.lower()]
        else:
            value = session.show_setting(self.name) if self.from_current else self.value
            assert value is not None
            canonical = validate_setting(me, self.name, value)
            entry = f"{canonical}={_stored(self.name, value)}"
            names = [item.split("=", 1)[0].lower() for item in config]
            if canonical.lower() in names:
                config[names.index(canonical.lower())] = entry
            else:
                config.append(entry)
        if existing is not None or config:
            ctx.txn.apply(("role_setting", RoleSetting(key[0], key[1], tuple(config))))
        return Result(tag=self.tag)

    def _key(self, st, me: Role) -> tuple[int, int]:
        """(database, role) of the entry, after AlterRoleSet's / AlterDatabaseSet's checks."""
        role = 0
        if self.role is not None:
            check_alterable(self.role)
            target = get_role(st, self.role)
            if target.superuser and not me.superuser:
                raise PgError(INSUFFICIENT_PRIVILEGE, "must be superuser to alter superusers")
            if not (target.superuser or me.superuser or me.createrole or target.oid == me.oid):
                raise PgError(INSUFFICIENT_PRIVILEGE, "permission denied")
            role = target.oid
        database = 0
        if self.database is not None:
            db = st.databases.get(self.database)
            if db is None:
                raise PgError(INVALID_CATALOG_NAME, f'database "{self.database}" does not exist')
            if self.role is None and not privileges.is_owner(st, me, db.owner):
                raise privileges.not_owner("database", db.name)
            database = db.oid
        elif self.role is None and not me.superuser:
            raise PgError(INSUFFICIENT_PRIVILEGE, "must be superuser to alter settings globally")
        return database, role


def _may_set(me: Role, name: str) -> bool:
    """May ``me`` set (or reset) ``name``: RESET ALL leaves the others."""
    if me.superuser:
        return True
    return "." not in name and context_of(name) == "user"


def validate_setting(me: Role, name: str, value: str | None) -> str:
    """validate_option_array_item: the name's PostgreSQL spelling, or the
    error SET (or PostgreSQL's ALTER ROLE ... SET) gives."""
    name = name.lower()
    check_setting(name, None)                      # an unknown name: 42704, as SET
    if "." in name:                                # a placeholder: no value to check
        if not me.superuser:
            raise PgError(INSUFFICIENT_PRIVILEGE, f'permission denied to set parameter "{name}"')
        if value is not None:
            check_setting(name, value)
        return name
    check_context(name, me.superuser)
    if value is not None:
        check_setting(name, value)
        normalize_setting(name, value)
    return DISPLAY_NAMES.get(name, name)


def _stored(name: str, value: str) -> str:
    """The value as flatten_set_variable_args writes it (list items quoted as identifiers)."""
    if name.lower() not in _LIST_QUOTE:
        return value
    return ", ".join(_quote_identifier(p.strip()) for p in split_args(value))


def _quote_identifier(s: str) -> str:
    if re.fullmatch(r"[a-z_][a-z0-9_]*", s):
        return s
    return '"' + s.replace('"', '""') + '"'


def login_settings(state: Any, database: str, role: Role) -> list[tuple[str, str, str]]:
    """(name, value, source) a session of ``role`` in ``database`` starts
    with, the first of each name winning: role in database, role, database,
    everyone; source as pg_settings names it ('database user', 'user',
    'database', 'global')."""
    db = state.databases.get(database)
    db_oid = db.oid if db is not None else 0
    out: dict[str, tuple[str, str, str]] = {}
    levels = (((db_oid, role.oid), "database user"), ((0, role.oid), "user"), ((db_oid, 0), "database"),
              ((0, 0), "global"))
    for key, source in levels:
        rs = state.role_settings.get(key)
        for item in rs.config if rs is not None else ():
            name, _, value = item.partition("=")
            out.setdefault(name.lower(), (name.lower(), value, source))
    return list(out.values())


_ALTER = re.compile(r"\s*alter\s+(role|user|group|database)\s+(.+?)(?:\s+in\s+database\s+(.+?))?\s+(set|reset)\s+(.*?)"
                    r"\s*;?\s*$", re.I | re.S)


def role_setting_statement(text: str, session) -> RoleSettingStmt | None:
    """An ALTER ROLE / DATABASE ... SET or RESET statement (None: another ALTER)."""
    m = _ALTER.match(text)
    if m is None:
        return None
    kind, who, in_db, verb, rest = m.groups()
    alter_database = kind.lower() == "database"
    if alter_database and in_db is not None:
        return None
    try:        # the words before SET must be one name: else SET is inside another ALTER (a password, say)
        r = Reader(who)
        role: str | None = None
        database: str | None = None
        if alter_database:
            database = r.name()
        elif not r.accept("ALL"):
            role = role_spec(r, session)
        r.end()
        if in_db is not None:
            r = Reader(in_db)
            database = r.name()
            r.end()
    except PgError:
        return None
    if verb.lower() == "reset":
        name = Reader(rest).name() if rest.strip().lower() != "all" else None
        return RoleSettingStmt(role, database, name, None, alter_database=alter_database)
    current = re.fullmatch(r"([A-Za-z_][\w.]*)\s+from\s+current", rest.strip(), re.I)
    if current is not None:
        return RoleSettingStmt(role, database, current.group(1).lower(), None, True, alter_database)
    first = rest.split()[0].lower() if rest.split() else ""
    if first in ("role", "session"):
        name = "role" if first == "role" else "session_authorization"
        raise PgError(FEATURE_NOT_SUPPORTED, f"ALTER {kind.upper()} ... SET {name} is not supported",
                      hint="Log in as the role, or SET ROLE in the session.")
    stmt = parse_set("SET " + rest)
    if not isinstance(stmt, SetStmt):
        raise PgError(SYNTAX_ERROR, f'syntax error at or near "{rest.split()[0] if rest.split() else "SET"}"')
    return RoleSettingStmt(role, database, stmt.name, stmt.value, alter_database=alter_database)
