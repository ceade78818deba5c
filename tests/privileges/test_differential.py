"""Roles, ownership and privileges against PostgreSQL 15 (issue 20).

Both servers run the same script (tests/privileges/script.py): roles, objects
owned by different roles, grants with and without grant option, views owned
by roles with and without rights on their base tables.  Then every role runs
every generated statement, each inside BEGIN ... ROLLBACK:

* after ``SET ROLE`` on a superuser's connection, over the simple protocol;
* on a connection of its own (password login), over the extended protocol;
* server-side prepared statements with parameters, and COPY both directions.

For each statement the outcome (success with its rows and warnings, or the
SQLSTATE and message) must equal PostgreSQL's.  psql's ``\\du``, ``\\dp`` and
``\\z`` print the same bytes.
"""
from __future__ import annotations

import subprocess
from typing import Any, Callable, Iterator

import psycopg
import pytest

from tests.support.servers import Postgres15, SplitstreamServer, postgres15_available

from . import script

SUPER_PASSWORD = "super-pw"

Outcome = tuple[Any, ...]


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


def _in_block(conn: psycopg.Connection, body: Callable[[], Any], role: str | None = None) -> Outcome:
    """Run ``body`` inside BEGIN ... ROLLBACK (after SET ROLE ``role``)."""
    conn.notices.clear()  # type: ignore[attr-defined]
    conn.execute("BEGIN")
    try:
        if role is not None:
            conn.execute(f"SET ROLE {role}")
        conn.notices.clear()  # type: ignore[attr-defined]
        rows = body()
        out: Outcome = ("ok", rows, tuple(conn.notices))  # type: ignore[attr-defined]
    except psycopg.Error as e:
        out = ("error", e.sqlstate, e.diag.message_primary)
    finally:
        conn.execute("ROLLBACK")
        if role is not None:
            conn.execute("RESET ROLE")
    return out


def _rows(cur: psycopg.Cursor) -> list[tuple] | None:
    return cur.fetchall() if cur.description is not None else None


def simple(conn: psycopg.Connection, sql: str, role: str | None) -> Outcome:
    def body():
        cur = psycopg.ClientCursor(conn)   # the simple query protocol
        cur.execute(sql)
        return _rows(cur)
    return _in_block(conn, body, role)


def extended(conn: psycopg.Connection, sql: str, params: tuple = (), prepare: bool = False) -> Outcome:
    def body():
        cur = conn.cursor()
        cur.execute(sql, params or None, prepare=prepare)
        if prepare:     # run the prepared statement a second time
            cur.execute(sql, params or None, prepare=True)
        return _rows(cur)
    return _in_block(conn, body)


def copy_out(conn: psycopg.Connection, sql: str) -> Outcome:
    def body():
        with conn.cursor().copy(sql) as cp:
            return sorted(bytes(b) for b in cp)
    return _in_block(conn, body)


def copy_in(conn: psycopg.Connection, sql: str) -> Outcome:
    def body():
        with conn.cursor().copy(sql) as cp:
            for row in script.COPY_ROWS:
                cp.write_row(row)
        return None
    return _in_block(conn, body)


@pytest.fixture(scope="module")
def sides(tmp_path_factory) -> Iterator[tuple[Side, Side]]:
    if not postgres15_available():
        pytest.skip("PostgreSQL 15 binaries not installed")
    pg = Postgres15().start()
    ss = SplitstreamServer(tmp_path_factory.mktemp("ss_priv") / "data", password=SUPER_PASSWORD,
                           extra_args=["--fsync", "off"])
    ss.start()
    pg_side = ss_side = None
    try:
        pg_side, ss_side = Side(pg.host, pg.port), Side(ss.host, ss.port)
        for stmt in [s.strip() for s in script.SETUP.split(";\n") if s.strip()]:
            pg_side.admin.execute(stmt)
            ss_side.admin.execute(stmt)
        yield pg_side, ss_side
    finally:
        for side in (pg_side, ss_side):
            if side is not None:
                side.close()
        ss.stop()
        pg.stop()


def _compare(pairs: list[tuple[str, Outcome, Outcome]]) -> list[str]:
    return [f"{label}\n    pg15: {a}\n    ours: {b}" for label, a, b in pairs if a != b]


def test_set_role_simple_protocol(sides):
    pg, ss = sides
    pairs = []
    for role in script.ROLES:
        for sql in script.statements():
            pairs.append((f"[SET ROLE {role}] {sql}", simple(pg.admin, sql, role), simple(ss.admin, sql, role)))
    assert len(pairs) >= 300
    bad = _compare(pairs)
    assert not bad, f"{len(bad)} of {len(pairs)} statements differ:\n" + "\n".join(bad)


def test_own_connection_extended_protocol(sides):
    pg, ss = sides
    pairs = []
    for role in script.ROLES:
        for sql in script.statements():
            pairs.append((f"[{role}] {sql}", extended(pg.role(role), sql), extended(ss.role(role), sql)))
    bad = _compare(pairs)
    assert not bad, f"{len(bad)} of {len(pairs)} statements differ:\n" + "\n".join(bad)


def test_prepared_statements_and_copy(sides):
    pg, ss = sides
    pairs = []
    for role in script.ROLES:
        for tmpl, params in script.PREPARED:
            for o in script.TABLES:
                sql = tmpl.format(o=o)
                pairs.append((f"[{role}] prepared {sql} {params}", extended(pg.role(role), sql, params, True),
                              extended(ss.role(role), sql, params, True)))
        for sql in script.COPY_OUT:
            pairs.append((f"[{role}] {sql}", copy_out(pg.role(role), sql), copy_out(ss.role(role), sql)))
        for sql in script.COPY_IN:
            pairs.append((f"[{role}] {sql}", copy_in(pg.role(role), sql), copy_in(ss.role(role), sql)))
    bad = _compare(pairs)
    assert not bad, f"{len(bad)} of {len(pairs)} statements differ:\n" + "\n".join(bad)


def _login(side: Side, user: str) -> Outcome:
    try:
        side.connect(user, script.PASSWORD).close()
        return ("ok",)
    except psycopg.OperationalError as e:
        return ("refused", str(e).strip().splitlines()[-1].split("FATAL:")[-1].strip())


def test_login_attribute(sides):
    """NOLOGIN refuses the connection on both (PostgreSQL's cluster trusts
    loopback, so passwords and VALID UNTIL are tested on ours alone)."""
    pg, ss = sides
    assert _login(pg, "p_nologin") == _login(ss, "p_nologin") == \
        ("refused", 'role "p_nologin" is not permitted to log in')
    assert _login(ss, "p_reader") == ("ok",)
    assert _login(ss, "p_expired")[0] == "refused"
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        ss.connect("p_reader", "wrong")


def _psql(side: Side, command: str) -> str:
    env = {"PGPASSWORD": SUPER_PASSWORD, "PATH": "/usr/lib/postgresql/15/bin:/usr/bin:/bin", "PGTZ": "UTC"}
    res = subprocess.run(["psql", "-X", "-h", side.host, "-p", str(side.port), "-U", "postgres", "-d", "postgres",
                          "-P", "pager=off", "-c", command], capture_output=True, text=True, env=env, timeout=60)
    return res.stdout + res.stderr


@pytest.mark.parametrize("command", [r"\du", r"\dp", r"\z", r"\z pt", r"\dp ps.*", r"\du p_*"])
def test_psql_listings_match(sides, command):
    pg, ss = sides
    assert _psql(ss, command) == _psql(pg, command)
