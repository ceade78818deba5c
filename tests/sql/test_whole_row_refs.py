"""Whole-row references: a FROM item named as a value.  The JSON forms
(``row_to_json(t)``, ``to_json(t)``, ``to_jsonb(t)``, ``json_agg(t)``, also
with ``t.*`` and an alias) give PostgreSQL 15's text exactly; ``SELECT t``,
``count(t)``, ``t IS NULL``, ``ORDER BY t``, ``ROW(t.*)`` give its rows (the
value is a record, printed as PostgreSQL prints the table's row type); a
comparison of whole rows (``t = t``) and a whole row of an outer join's
nullable side are refused with 0A000 and a hint, never taken for a missing
column (42703).
"""
from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import Iterator

import asyncpg
import psycopg
import pytest
from psycopg.adapt import Loader

SHAPES = {
    "ints": ("a int, b bigint", ["1, 2", "NULL, -5"]),
    "texts": ("a text, b varchar(8)", ["'abc', 'x,y'", "'say \"hi\"', NULL", "'', ' sp '"]),
    "mixed": ("n numeric(6,2), f float8, ok bool, d date", ["1.5, 0.25, true, '2024-01-02'", "NULL, NULL, NULL, NULL"]),
}
REF = {"plain": ("{t}", "{t}"), "alias": ("{t} AS r", "r"), "star": ("{t}", "{t}.*")}
JSON_FORMS = ["SELECT row_to_json({ref}) FROM {src} ORDER BY 1::text",
              "SELECT to_json({ref}) FROM {src} ORDER BY 1::text",
              "SELECT to_jsonb({ref})::text FROM {src} ORDER BY 1",
              "SELECT json_agg({ref})::text FROM {src}", "SELECT jsonb_agg({ref})::text FROM {src}"]
ROW_FORMS = ["SELECT {ref} FROM {src} ORDER BY 1", "SELECT count({ref}) FROM {src}",
             "SELECT 1 FROM {src} WHERE {ref} IS NOT NULL", "SELECT {ref} IS NULL FROM {src} ORDER BY 1",
             "SELECT {ref} FROM {src} ORDER BY {ref} DESC", "SELECT (SELECT row_to_json({ref})) FROM {src} ORDER BY 1::text",
             "SELECT ROW({ref}, 1) FROM {src} ORDER BY 1", "SELECT DISTINCT {ref} FROM {src} ORDER BY 1",
             "SELECT count(DISTINCT {ref}) FROM {src}", "SELECT (SELECT {ref}) FROM {src} ORDER BY 1"]
COMPARED_FORMS = ["SELECT {ref} = {ref}, {ref} <> {ref}, {ref} < {ref}, {ref} >= {ref} FROM {src}",
                  "SELECT 1 FROM {src} WHERE {ref} IS DISTINCT FROM {ref}", "SELECT {ref} IN ({ref}) FROM {src}",
                  "SELECT x.a, y.a, x = y, x < y, x >= y, x IS DISTINCT FROM y, ROW(x.a, x) = ROW(y.a, y) "
                  "FROM {src} x, {src} y ORDER BY 1, 2", "SELECT {ref} = '(1,2)' FROM {src}"]
REFUSED_FORMS = ["SELECT {ref} = ANY (SELECT {ref} FROM {src}) FROM {src}"]


@contextlib.contextmanager
def _table_on_both(conns: tuple[psycopg.Connection, ...], t: str, cols: str, rows: list[str]) -> Iterator[None]:
    """Table ``t`` made alike on every connection, dropped afterwards."""
    for conn in conns:
        conn.execute(f"CREATE TABLE {t} ({cols})")
        for r in rows:
            conn.execute(f"INSERT INTO {t} VALUES ({r})")
    try:
        yield
    finally:
        for conn in conns:
            conn.execute(f"DROP TABLE {t}")


def _answer(conn: psycopg.Connection, sql: str) -> tuple[str, object]:
    try:
        return "ok", conn.execute(sql).fetchall()
    except psycopg.Error as e:
        return "error", e.sqlstate


@pytest.mark.parametrize("shape,ref", list(itertools.product(SHAPES, REF)))
def test_json_forms_like_postgres(ss_conn, pg_conn, unique_name, shape, ref):
    t = unique_name("wr")
    src, value = (x.format(t=t) for x in REF[ref])
    with _table_on_both((ss_conn, pg_conn), t, *SHAPES[shape]):
        for form in JSON_FORMS:
            sql = form.format(ref=value, src=src)
            assert _answer(ss_conn, sql) == _answer(pg_conn, sql), sql


class _RawText(Loader):
    """A record's text as sent (PostgreSQL sends the table's row type, which psycopg leaves as text)."""

    def load(self, data):
        return bytes(data).decode()


def _rows(conn: psycopg.Connection, sql: str) -> tuple[str, object]:
    """The answer without the column types: splitstream's whole row is a
    record (2249), PostgreSQL's the table's own row type."""
    conn.adapters.register_loader("record", _RawText)
    try:
        cur = conn.execute(sql)
        return "ok", ([d.name for d in cur.description], cur.fetchall())
    except psycopg.Error as e:
        return "error", e.sqlstate


@pytest.mark.parametrize("shape,ref", list(itertools.product(SHAPES, REF)))
def test_row_forms_like_postgres(ss_conn, pg_conn, unique_name, shape, ref):
    t = unique_name("wr")
    src, value = (x.format(t=t) for x in REF[ref])
    with _table_on_both((ss_conn, pg_conn), t, *SHAPES[shape]):
        for form in ROW_FORMS:
            if ref == "star" and form.startswith("SELECT (SELECT {ref})"):
                continue        # t.* alone in a select list is its columns, not a row
            sql = form.format(ref=value, src=src)
            assert _rows(ss_conn, sql) == _rows(pg_conn, sql), sql


@pytest.mark.parametrize("ref", ["plain", "alias"])
def test_other_forms_refused_not_undefined(ss_conn, pg_conn, unique_name, ref):
    t = unique_name("wr")
    src, value = (x.format(t=t) for x in REF[ref])
    with _table_on_both((ss_conn, pg_conn), t, *SHAPES["ints"]):
        for form in REFUSED_FORMS:
            sql = form.format(ref=value, src=src)
            assert _answer(pg_conn, sql)[0] == "ok", sql          # a whole-row reference PostgreSQL takes
            with pytest.raises(psycopg.errors.FeatureNotSupported) as err:
                ss_conn.execute(sql)
            assert err.value.diag.message_primary == "this comparison of row values is not supported"


@pytest.mark.parametrize("shape", list(SHAPES))
def test_whole_rows_compare_as_records(ss_conn, pg_conn, unique_name, shape):
    """record_eq / record_lt ...: NULL fields equal to each other and above every value."""
    t = unique_name("wr")
    with _table_on_both((ss_conn, pg_conn), t, *SHAPES[shape]):
        for form in COMPARED_FORMS:
            if "x.a" in form and shape != "ints":
                continue
            sql = form.format(ref=t, src=t)
            assert _rows(ss_conn, sql) == _rows(pg_conn, sql), sql


def test_nullable_side_refused(ss_conn, pg_conn, unique_name):
    """PostgreSQL's whole row of a NULL-extended row is NULL, not a row of NULLs: refused."""
    t = unique_name("wr")
    with _table_on_both((ss_conn, pg_conn), t, *SHAPES["ints"]):
        for sql in (f"SELECT u FROM {t} LEFT JOIN {t} u ON false", f"SELECT x FROM {t} x FULL JOIN {t} u ON false",
                    f"SELECT count(u) FROM {t} RIGHT JOIN {t} u ON true JOIN {t} v ON true"):
            if "RIGHT" not in sql:
                assert _answer(pg_conn, sql)[0] == "ok", sql
                with pytest.raises(psycopg.errors.FeatureNotSupported) as err:
                    ss_conn.execute(sql)
                assert "row_to_json(" in (err.value.diag.message_hint or "")
            else:       # the preserved side of an outer join is a row as it is
                assert _rows(ss_conn, sql) == _rows(pg_conn, sql), sql


def test_a_column_named_like_the_table_wins(ss_conn, pg_conn, unique_name):
    t = unique_name("wr")
    with _table_on_both((ss_conn, pg_conn), t, f"{t} int, b int", ["1, 2"]):
        for sql in (f"SELECT {t} FROM {t}", f"SELECT to_json({t}) FROM {t}", f"SELECT nope FROM {t}"):
            assert _answer(ss_conn, sql) == _answer(pg_conn, sql), sql


def test_whole_row_over_asyncpg(ss_server, pg15, unique_name):
    """asyncpg reads the binary row (record_send) as PostgreSQL's table row."""
    t = unique_name("wr")
    cols, rows = SHAPES["mixed"]

    async def fetch(dsn: str) -> list:
        kw = dict(p.split("=", 1) for p in dsn.split())
        conn = await asyncpg.connect(host=kw["host"], port=int(kw["port"]), user=kw["user"], database=kw["dbname"],
                                     password=kw.get("password"))
        try:
            await conn.execute(f"CREATE TABLE {t} ({cols})")
            for r in rows:
                await conn.execute(f"INSERT INTO {t} VALUES ({r})")
            return [tuple(r[0]) for r in await conn.fetch(f"SELECT {t} FROM {t} ORDER BY {t}")]
        finally:
            await conn.execute(f"DROP TABLE IF EXISTS {t}")
            await conn.close()

    got, want = asyncio.run(fetch(ss_server.dsn)), asyncio.run(fetch(pg15.dsn))
    assert got == want and len(want) == len(rows)
