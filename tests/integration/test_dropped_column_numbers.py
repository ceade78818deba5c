"""A dropped column keeps its attribute number, as in PostgreSQL: the
columns after it are not renumbered in pg_attribute, pg_attrdef, pg_index,
pg_description / col_description, information_schema.columns or
RowDescription's column numbers, and pg_attribute shows the dropped entry.
Every way of dropping some of a table's columns (then adding one) is played
against PostgreSQL 15 and splitstream.
"""
from __future__ import annotations

import itertools

import psycopg
import pytest

COLUMNS = [("a", "int"), ("b", "text NOT NULL DEFAULT 'x'"), ("c", "varchar(5) DEFAULT 'q'"), ("d", "numeric(5,2)")]
DROPS = [combo for k in (1, 2, 3) for combo in itertools.combinations([n for n, _ in COLUMNS], k)]

ATTRIBUTES = ("SELECT attname, atttypid, attlen, attnum, atttypmod, attnotnull, atthasdef, attisdropped, attstorage, "
              "attcollation FROM pg_attribute WHERE attrelid = '{t}'::regclass AND attnum > 0 ORDER BY attnum")
QUERIES = [
    ATTRIBUTES,
    "SELECT column_name, ordinal_position FROM information_schema.columns WHERE table_name = '{t}' ORDER BY 2",
    "SELECT a.attname, d.adnum FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum "
    "WHERE d.adrelid = '{t}'::regclass ORDER BY 2",
    "SELECT i.indkey::text FROM pg_index i WHERE i.indrelid = '{t}'::regclass",
    "SELECT objsubid, description FROM pg_description WHERE objoid = '{t}'::regclass ORDER BY 1",
    "SELECT n, col_description('{t}'::regclass, n) FROM generate_series(1, 6) AS n ORDER BY n",
]


def _column_numbers(cur: psycopg.Cursor) -> list[int]:
    res = cur.pgresult
    assert res is not None
    return [res.ftablecol(i) for i in range(res.nfields)]


def _transcript(conn: psycopg.Connection, t: str, drops: tuple[str, ...]) -> list[object]:
    cols = ", ".join(f"{n} {ty}" for n, ty in COLUMNS)
    conn.execute(f"CREATE TABLE {t} ({cols})")
    for n, _ in COLUMNS:
        conn.execute(f"COMMENT ON COLUMN {t}.{n} IS 'about {n}'")
    for n in drops:
        conn.execute(f"ALTER TABLE {t} DROP COLUMN {n}")
    conn.execute(f"ALTER TABLE {t} ADD COLUMN e int DEFAULT 7")
    conn.execute(f"CREATE INDEX ON {t} (e)")
    conn.execute(f"COMMENT ON COLUMN {t}.e IS 'about e'")
    out: list[object] = [conn.execute(q.format(t=t)).fetchall() for q in QUERIES]
    live = [n for n, _ in COLUMNS if n not in drops]
    out.append(_column_numbers(conn.execute(f"INSERT INTO {t} ({live[0]}) VALUES (DEFAULT) RETURNING *")))
    out.append(_column_numbers(conn.execute(f"SELECT * FROM {t}")))
    out.append(_column_numbers(conn.execute(f"SELECT e, {live[-1]}, 1 AS one FROM {t}")))
    conn.execute(f"DROP TABLE {t}")
    return out


@pytest.mark.parametrize("drops", DROPS, ids=["-".join(d) for d in DROPS])
def test_dropped_column_keeps_numbers_like_postgres(ss_conn, pg_conn, unique_name, drops):
    t = unique_name("dropnum")
    assert _transcript(ss_conn, t, drops) == _transcript(pg_conn, t, drops)
