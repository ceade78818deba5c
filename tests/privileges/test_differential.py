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

from typing import Any, Callable, Iterator

import psycopg
import pytest

from . import script
from .sides import Side, pair, psql_output

Outcome = tuple[Any, ...]


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


def _rows(cur: psycopg.Cursor) -> list[tuple] | str | None:
    if cur.description is None:
        return None
    rows = cur.fetchall()
    return "a plan" if cur.description[0].name == "QUERY PLAN" else rows    # plans are ours


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
    with pair(tmp_path_factory, script.SETUP) as both:
        yield both


def _assert_same(pairs: list[tuple[str, Outcome, Outcome]]) -> None:
    bad = [f"{label}\n    pg15: {a}\n    ours: {b}" for label, a, b in pairs if a != b]
    assert not bad, f"{len(bad)} of {len(pairs)} statements differ:\n" + "\n".join(bad)


@pytest.mark.parametrize("mode", ["set_role_simple_protocol", "own_connection_extended_protocol"])
def test_statements_match(sides, mode):
    """Every role runs every statement: after SET ROLE on the superuser's
    connection (simple protocol), or on its own login (extended protocol)."""
    def run(side: Side, role: str, sql: str) -> Outcome:
        if mode == "set_role_simple_protocol":
            return simple(side.admin, sql, role)
        return extended(side.role(role), sql)

    pg, ss = sides
    pairs = [(f"[{mode} {role}] {sql}", run(pg, role, sql), run(ss, role, sql))
             for role in script.ROLES for sql in script.statements()]
    assert len(pairs) >= 300
    _assert_same(pairs)


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
    _assert_same(pairs)


def _login(side: Side, user: str) -> Outcome:
    try:
        side.connect(user, script.PASSWORD).close()
        return ("ok",)
    except psycopg.OperationalError as e:
        lines = str(e).strip().splitlines()
        fatal = [ln.split("FATAL:")[-1].strip() for ln in lines if "FATAL:" in ln][-1]
        detail = [ln.split("DETAIL:")[-1].strip() for ln in lines if ln.startswith("DETAIL:")]
        return ("refused", fatal, *detail)


def test_login_attribute(sides):
    """NOLOGIN and CONNECTION LIMIT refuse the connection on both (PostgreSQL's cluster trusts
    loopback, so passwords and VALID UNTIL are tested on ours alone)."""
    pg, ss = sides
    assert _login(pg, "p_nologin") == _login(ss, "p_nologin") == \
        ("refused", 'role "p_nologin" is not permitted to log in')
    assert _login(ss, "p_reader") == ("ok",)
    held = [side.connect("p_limited", script.PASSWORD) for side in (pg, ss)]
    assert _login(pg, "p_limited") == _login(ss, "p_limited") == \
        ("refused", 'too many connections for role "p_limited"')
    for c in held:
        c.close()
    assert _login(pg, "p_noconnect") == _login(ss, "p_noconnect") == \
        ("refused", 'permission denied for database "postgres"', "User does not have CONNECT privilege.")
    assert _login(ss, "p_expired")[0] == "refused"
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        ss.connect("p_reader", "wrong")


@pytest.mark.parametrize("command", [r"\du", r"\dp", r"\z", r"\z pt", r"\dp ps.*", r"\du p_*", r"\ddp",
                                     r"\ddp p_*", r"\l", r"\drds", r"\drds p_*"])
def test_psql_listings_match(sides, command):
    pg, ss = sides
    assert psql_output(ss, command) == psql_output(pg, command)
