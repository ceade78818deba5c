"""The two servers a privilege comparison runs on: a fresh PostgreSQL 15
cluster and a splitstream server with a password (so roles log in as
themselves), each with its superuser connection and one per role."""
from __future__ import annotations

import contextlib
import subprocess
from typing import Any, Iterator

import psycopg
import pytest

from tests.support.servers import Postgres15, SplitstreamServer, postgres15_available

from . import script

SUPER_PASSWORD = "super-pw"


class Side:
    """One server: its superuser connection and a connection per role."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.admin = self.connect("postgres", SUPER_PASSWORD)
        self._roles: dict[str, psycopg.Connection] = {}

    def connect(self, user: str, password: str) -> psycopg.Connection:
        conn = psycopg.connect(host=self.host, port=self.port, user=user, password=password, dbname="postgres",
                               autocommit=True, connect_timeout=10)
        conn.notices = []  # type: ignore[attr-defined]
        conn.add_notice_handler(lambda d: conn.notices.append(  # type: ignore[attr-defined]
            (d.severity, d.sqlstate, d.message_primary)))
        return conn

    def role(self, name: str) -> psycopg.Connection:
        if name not in self._roles:
            self._roles[name] = self.connect(name, script.PASSWORD)
        return self._roles[name]

    def close(self) -> None:
        for c in [self.admin, *self._roles.values()]:
            c.close()



@contextlib.contextmanager
def pair(tmp_path_factory, setup: str) -> Iterator[tuple[Side, Side]]:
    """(PostgreSQL 15, splitstream), both having run ``setup`` as the superuser."""
    if not postgres15_available():
        pytest.skip("PostgreSQL 15 binaries not installed")
    pg = Postgres15().start()
    ss = SplitstreamServer(tmp_path_factory.mktemp("ss_priv") / "data", password=SUPER_PASSWORD,
                           extra_args=["--fsync", "off"])
    ss.start()
    pg_side = ss_side = None
    try:
        pg_side, ss_side = Side(pg.host, pg.port), Side(ss.host, ss.port)
        for stmt in [s.strip() for s in setup.split(";\n") if s.strip()]:
            pg_side.admin.execute(stmt)
            ss_side.admin.execute(stmt)
        yield pg_side, ss_side
    finally:
        for side in (pg_side, ss_side):
            if side is not None:
                side.close()
        ss.stop()
        pg.stop()


def psql_output(side: Side, command: str) -> str:
    """What psql prints for ``command`` (a backslash command) as the superuser."""
    env = {"PGPASSWORD": SUPER_PASSWORD, "PATH": "/usr/lib/postgresql/15/bin:/usr/bin:/bin", "PGTZ": "UTC"}
    res = subprocess.run(["psql", "-X", "-h", side.host, "-p", str(side.port), "-U", "postgres", "-d", "postgres",
                          "-P", "pager=off", "-c", command], capture_output=True, text=True, env=env, timeout=60)
    return res.stdout + res.stderr


def outcome(conn: psycopg.Connection, sql: str, role: str | None = None) -> tuple[Any, ...]:
    """One statement as is (autocommit), as ``role`` if given (SET ROLE, reset
    after): its rows and notices, or its error (SET ROLE's too)."""
    try:
        if role is not None:
            conn.execute(f"SET ROLE {role}")
        conn.notices.clear()  # type: ignore[attr-defined]
        cur = psycopg.ClientCursor(conn)
        cur.execute(sql)
        rows = cur.fetchall() if cur.description is not None else None
        return ("ok", rows, tuple(conn.notices))  # type: ignore[attr-defined]
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary, e.diag.message_detail)
    finally:
        if role is not None:
            conn.execute("RESET ROLE")
