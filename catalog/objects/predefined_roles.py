"""PostgreSQL 15's predefined roles (initdb's pg_authid rows below 16384).

They are built in, not logged: every state has them, whatever the data
directory was written by (:func:`with_predefined` adds the ones a checkpoint
of an older version lacks), so the catalogs, pg_has_role, GRANT and the
privilege checks find them as ordinary roles.  PostgreSQL refuses to create,
alter, rename or drop them; what a role may still change is its membership
(GRANT pg_read_all_stats TO alice), which is logged like any role's.
"""
from __future__ import annotations

from typing import Mapping

from .model import Role

BOOTSTRAP_SUPERUSER = 10
PG_MONITOR = 3373
PG_READ_ALL_SETTINGS = 3374
PG_READ_ALL_STATS = 3375
PG_STAT_SCAN_TABLES = 3377
PG_SIGNAL_BACKEND = 4200
PG_CHECKPOINT = 4544
PG_READ_SERVER_FILES = 4569
PG_WRITE_SERVER_FILES = 4570
PG_EXECUTE_SERVER_PROGRAM = 4571
#: pg_database_owner: its one implicit member is the database's owner.
PG_DATABASE_OWNER = 6171
PG_READ_ALL_DATA = 6181
PG_WRITE_ALL_DATA = 6182

#: name -> OID, as PostgreSQL 15's pg_authid.dat has them (NOLOGIN, INHERIT, nothing else)
_OIDS = {
    "pg_database_owner": PG_DATABASE_OWNER, "pg_read_all_data": PG_READ_ALL_DATA,
    "pg_write_all_data": PG_WRITE_ALL_DATA, "pg_monitor": PG_MONITOR, "pg_read_all_settings": PG_READ_ALL_SETTINGS,
    "pg_read_all_stats": PG_READ_ALL_STATS, "pg_stat_scan_tables": PG_STAT_SCAN_TABLES,
    "pg_read_server_files": PG_READ_SERVER_FILES, "pg_write_server_files": PG_WRITE_SERVER_FILES,
    "pg_execute_server_program": PG_EXECUTE_SERVER_PROGRAM, "pg_signal_backend": PG_SIGNAL_BACKEND,
    "pg_checkpoint": PG_CHECKPOINT,
}

#: initdb's pg_auth_members rows: pg_monitor holds these three (granted by the bootstrap superuser)
_MONITOR_MEMBERSHIPS = tuple((granted, BOOTSTRAP_SUPERUSER, False)
                             for granted in (PG_READ_ALL_SETTINGS, PG_READ_ALL_STATS, PG_STAT_SCAN_TABLES))

PREDEFINED_ROLES: tuple[Role, ...] = tuple(
    Role(oid, name, member_of=_MONITOR_MEMBERSHIPS if oid == PG_MONITOR else ()) for name, oid in _OIDS.items())

PREDEFINED_OIDS = frozenset(_OIDS.values())


def is_reserved_name(name: str) -> bool:
    """IsReservedName: role names starting with pg_ belong to PostgreSQL."""
    return name.startswith("pg_")


def with_predefined(roles: Mapping[str, Role]) -> dict[str, Role]:
    """``roles`` with every predefined role it lacks added (a state bootstrapped or
    checkpointed before they were kept has only pg_database_owner implied);
    a predefined role already there keeps its row (memberships granted to it)."""
    out = dict(roles)
    for role in PREDEFINED_ROLES:
        out.setdefault(role.name, role)
    return out
