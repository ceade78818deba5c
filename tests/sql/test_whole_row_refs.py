"""Whole-row references: a FROM item named as a value.  The JSON forms
(``row_to_json(t)``, ``to_json(t)``, ``to_jsonb(t)``, ``json_agg(t)``, also
with ``t.*`` and an alias) give PostgreSQL 15's text exactly; every other
form (``SELECT t``, ``t = t``, ``count(t)``, ...) is refused with 0A000 and a
hint where PostgreSQL answers, never taken for a missing column (42703).
"""
from __future__ import annotations

import itertools

import psycopg
import pytest

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
REFUSED_FORMS = ["SELECT {ref} FROM {src}", "SELECT {ref} = {ref} FROM {src}", "SELECT count({ref}) FROM {src}",
                 "SELECT 1 FROM {src} WHERE {ref} IS NOT NULL", "SELECT 1 FROM {src} ORDER BY {ref}",
                 "SELECT (SELECT row_to_json({ref})) FROM {src}"]


def _setup(conn: psycopg.Connection, t: str, shape: str) -> None:
    cols, rows = SHAPES[shape]
    conn.execute(f"CREATE TABLE {t} ({cols})")
    for r in rows:
        conn.execute(f"INSERT INTO {t} VALUES ({r})")


def _answer(conn: psycopg.Connection, sql: str) -> tuple[str, object]:
    try:
        return "ok", conn.execute(sql).fetchall()
    except psycopg.Error as e:
        return "error", e.sqlstate


@pytest.mark.parametrize("shape,ref", list(itertools.product(SHAPES, REF)))
def test_json_forms_like_postgres(ss_conn, pg_conn, unique_name, shape, ref):
    t = unique_name("wr")
    src, value = (x.format(t=t) for x in REF[ref])
    for conn in (ss_conn, pg_conn):
        _setup(conn, t, shape)
    try:
        for form in JSON_FORMS:
            sql = form.format(ref=value, src=src)
            assert _answer(ss_conn, sql) == _answer(pg_conn, sql), sql
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE {t}")


@pytest.mark.parametrize("ref", ["plain", "alias"])
def test_other_forms_refused_not_undefined(ss_conn, pg_conn, unique_name, ref):
    t = unique_name("wr")
    src, value = (x.format(t=t) for x in REF[ref])
    for conn in (ss_conn, pg_conn):
        _setup(conn, t, "ints")
    try:
        for form in REFUSED_FORMS:
            sql = form.format(ref=value, src=src)
            assert _answer(pg_conn, sql)[0] == "ok", sql          # a whole-row reference PostgreSQL takes
            with pytest.raises(psycopg.errors.FeatureNotSupported) as err:
                ss_conn.execute(sql)
            assert err.value.diag.message_primary == "whole-row references are not supported"
            assert f"row_to_json({value})" in (err.value.diag.message_hint or "")
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE {t}")


def test_a_column_named_like_the_table_wins(ss_conn, pg_conn, unique_name):
    t = unique_name("wr")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE TABLE {t} ({t} int, b int)")
        conn.execute(f"INSERT INTO {t} VALUES (1, 2)")
    try:
        for sql in (f"SELECT {t} FROM {t}", f"SELECT to_json({t}) FROM {t}", f"SELECT nope FROM {t}"):
            assert _answer(ss_conn, sql) == _answer(pg_conn, sql), sql
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE {t}")
