"""Eras in date and timestamp input (types._TS_RE): COPY reads a value as
INSERT of the same literal does, on every path (text and CSV, few rows and
enough for the bulk readers, a table and a stream).

``AD`` (PostgreSQL's default era) is read as PostgreSQL reads it; compared
with PostgreSQL 15.  ``BC`` was taken for a time zone named "BC" (22023,
'time zone "BC" not recognized'); PostgreSQL accepts it, but here dates and
timestamps hold years 1 to 9999 (a known difference, ``temporal-range`` in
tests/campaigns/sql_known_differences.toml), so it is refused with
PostgreSQL's 22008 ("date out of range", "timestamp out of range"), the same
way by INSERT and by every COPY path, and never read as a year AD."""
from __future__ import annotations

import psycopg
import pytest

from tests.support.diff import execute

COLS = "id int, ts timestamp, tz timestamptz, d date"
AD = ("2020-03-15 12:00:00 AD", "2020-03-15 12:00:00+02 AD", "2020-03-15 AD")
BC = ("0044-03-15 12:00:00 BC", "0044-03-15 12:00:00+00 BC", "0044-03-15 BC")


def _lines(values: tuple[str, str, str], n: int, sep: str) -> bytes:
    return "".join(f"{i}{sep}{sep.join(values)}\n" for i in range(n)).encode()


def _copy(conn: psycopg.Connection, table: str, fmt: str, data: bytes):
    """COPY ``data`` into ``table``: its rows as text, or (SQLSTATE, message)."""
    try:
        with conn.cursor().copy(f"COPY {table} FROM STDIN WITH (FORMAT {fmt})") as cp:
            cp.write(data)
    except psycopg.Error as e:
        return e.sqlstate, e.diag.message_primary
    return conn.execute(f"SELECT id, ts::text, tz::text, d::text FROM {table} ORDER BY id").fetchall()


@pytest.mark.parametrize("fmt, sep", [("text", "\t"), ("csv", ",")])
@pytest.mark.parametrize("rows", [1, 3000])
def test_copy_reads_ad_as_postgresql(ss_conn, pg_conn, unique_name, fmt, sep, rows):
    t = unique_name("t")
    got, want = [], []
    for conn, out in ((ss_conn, got), (pg_conn, want)):
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute(f"CREATE TABLE {t} ({COLS})")
        try:
            out.append(_copy(conn, t, fmt, _lines(AD, rows, sep)))
        finally:
            conn.execute(f"DROP TABLE {t}")
            conn.execute("RESET TimeZone")
    assert got == want
    assert len(got[0]) == rows


@pytest.mark.parametrize("fmt, sep", [("text", "\t"), ("csv", ",")])
@pytest.mark.parametrize("rows", [1, 3000])
@pytest.mark.parametrize("kind", ["table", "stream"])
def test_copy_refuses_bc_as_insert_does(ss_conn, pg_conn, unique_name, fmt, sep, rows, kind):
    """Each BC value alone: COPY's error is INSERT's (22008, naming the
    type and the value), nothing is stored; PostgreSQL accepts the value."""
    for col, value in zip(("ts", "tz", "d"), BC):
        ok = {"ts": "2020-01-01 00:00:00", "tz": "2020-01-01 00:00:00+00", "d": "2020-01-01"}
        values = tuple(value if c == col else ok[c] for c in ("ts", "tz", "d"))
        t = unique_name("t")
        create = (f"CREATE TABLE {t} ({COLS})" if kind == "table"
                  else f"CREATE FOREIGN TABLE {t} ({COLS}) SERVER stream")
        ss_conn.execute(create)
        try:
            inserted = execute(ss_conn, f"INSERT INTO {t} VALUES (0, '{values[0]}', '{values[1]}', '{values[2]}')")
            copied = _copy(ss_conn, t, fmt, _lines(values, rows, sep))
            word = "date" if col == "d" else "timestamp"
            assert inserted.sqlstate == "22008" and inserted.error == f'{word} out of range: "{value}"'
            assert copied == (inserted.sqlstate, inserted.error)
            if kind == "table":
                assert ss_conn.execute(f"SELECT count(*) FROM {t}").fetchone() == (0,)
        finally:
            ss_conn.execute(f"DROP {'TABLE' if kind == 'table' else 'FOREIGN TABLE'} {t}")
        pg = pg_conn.execute(f"SELECT '{value}'::{ {'ts': 'timestamp', 'tz': 'timestamptz', 'd': 'date'}[col] }::text")
        assert pg.fetchone()[0].endswith(" BC")          # PostgreSQL reads it: the known difference
