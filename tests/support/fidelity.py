"""Statement outcomes compared word for word with PostgreSQL 15: the column
names and type OIDs of a result, its rows as text, and for an error its
SQLSTATE, primary message and hint (the differential corpus compares
SQLSTATEs only; fidelity tests of names need the words)."""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable, Iterator

import psycopg

from tests.support.diff import text_cursor


def words(conn: psycopg.Connection, sql: str) -> tuple[Any, ...]:
    """("ok", names, type oids, rows) or ("error", sqlstate, message, hint)."""
    cur = text_cursor(conn)
    try:
        cur.execute(sql)  # type: ignore[arg-type]
        if cur.description is None:
            return ("ok", None, None, cur.statusmessage)
        return ("ok", [d.name for d in cur.description], [d.type_code for d in cur.description],
                [tuple(r) for r in cur.fetchall()])
    except psycopg.Error as e:
        return ("error", e.sqlstate, e.diag.message_primary, e.diag.message_hint)
    finally:
        cur.close()


def mismatches(ss_conn: psycopg.Connection, pg_conn: psycopg.Connection, statements: Iterable[str],
               outcome: Callable[[psycopg.Connection, str], Any] = words) -> list[str]:
    """Every statement whose outcome differs, with both outcomes; each runs
    on both before the next (a script: later lines see earlier ones)."""
    out = []
    for sql in statements:
        ss, pg = outcome(ss_conn, sql), outcome(pg_conn, sql)
        if ss != pg:
            out.append(f"{sql}\n  splitstream: {ss}\n  postgresql:  {pg}")
    return out


@contextlib.contextmanager
def table_on_both(conns: Iterable[psycopg.Connection], name: str, columns: str, rows: str) -> Iterator[str]:
    """A table ``name (columns)`` holding ``rows`` (a VALUES list) on
    splitstream and on PostgreSQL alike, dropped afterwards."""
    conns = list(conns)
    for conn in conns:
        conn.execute(f"CREATE TABLE {name} ({columns})")  # type: ignore[arg-type]
        conn.execute(f"INSERT INTO {name} VALUES {rows}")  # type: ignore[arg-type]
    try:
        yield name
    finally:
        for conn in conns:
            conn.execute(f"DROP TABLE {name}")  # type: ignore[arg-type]


def simple_outcome(conn: psycopg.Connection, sql: str) -> tuple[Any, ...]:
    """One simple Query message, as psql sends it: ("ok", rows), or the
    error's (sqlstate, primary message, position)."""
    try:
        with psycopg.ClientCursor(conn) as cur:
            cur.execute(sql)  # type: ignore[arg-type]
            return ("ok", cur.fetchall() if cur.description is not None else None)
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary, e.diag.statement_position)

