"""The one-byte "char" type against PostgreSQL 15, generated: literals
(charin: the first byte, '' for the zero byte, \\ooo in octal), casts from
and to every string type and int4 (and the casts that do not exist),
comparisons of every pair, ||, min/max, a table column, and prefix minus
over "char" and other types.

A "char" holding a byte above 127 is refused (0A000 with a hint): here the
value is one ASCII character, and such bytes would neither order nor print
as PostgreSQL's.  Those statements are generated apart and must be refused
by splitstream where PostgreSQL answers.
"""
from __future__ import annotations

import itertools

import psycopg

from tests.support.fidelity import mismatches, words

ASCII_LITERALS = ["'a'", "''", "'ab'", "' '", "'1'", "'\\101'", "'\\000'", "'\\'", "'\\\\'", "'\\1011'", "'\\18'", "NULL"]
HIGH_LITERALS = ["'é'", "'\\377'", "'\\200'"]
STRING_TYPES = ["text", "varchar", "bpchar", "name", "\"char\""]
INTS = ["0", "65", "97", "127", "128", "255", "256", "-129", "NULL::int"]
HIGH_INTS = ["(-1)", "(-128)"]


def _literal_cases(lit: str) -> list[str]:
    out = [f'SELECT {lit}::"char", ({lit}::"char")::text, length({lit}::"char"::text), ({lit}::"char")::int']
    out.append("SELECT " + ", ".join(f'{lit}::{t}::"char"' for t in STRING_TYPES))
    return out


def _ascii_statements(table: str) -> list[str]:
    out = [q for lit in ASCII_LITERALS for q in _literal_cases(lit)]
    out += [f'SELECT {i}::"char", ({i}::"char")::int, ({i}::"char")::text' for i in INTS]
    for t in ("int2", "int8", "bool", "float8", "numeric", "date"):
        out += [f"SELECT 'a'::\"char\"::{t}", f"SELECT NULL::{t}::\"char\""]
    for a, b in itertools.product(["'a'", "'b'", "''", "'B'"], repeat=2):
        out.append(f'SELECT {a}::"char" < {b}::"char", {a}::"char" = {b}::"char", {a}::"char" >= {b}::"char", '
                   f'{a}::"char" <> {b}::"char", {a}::"char" = {b}')
    for t in STRING_TYPES + ["unknown", "int4"]:
        out.append(f"SELECT 'a'::\"char\" || '1'::{t}")
        out.append(f"SELECT '1'::{t} || 'a'::\"char\"")
    for t in ("\"char\"", "text", "int4", "bool", "date", "interval", "numeric", "float4"):
        out.append(f"SELECT -NULL::{t}")
    out += ["SELECT -'1'", "SELECT -NULL", 'SELECT pg_typeof(\'a\'::"char"), pg_typeof(\'a\'::pg_catalog."char")',
            "SELECT max(c), min(c), count(DISTINCT c) FROM (VALUES ('a'::\"char\"), ('b'), (''), ('\\101')) v(c)",
            "SELECT c FROM (VALUES ('b'::\"char\"), ('a'), (''), ('\\101')) v(c) ORDER BY c",
            f'CREATE TABLE {table} (c "char", k int)',
            f"INSERT INTO {table} VALUES ('x', 1), ('', 2), (NULL, 3), ('yz', 4), ('\\102', 5), (66::\"char\", 6)",
            f"SELECT c, c::text, c::int, k FROM {table} ORDER BY k", f"SELECT k FROM {table} WHERE c = 'x'",
            f"SELECT k FROM {table} WHERE c > '' ORDER BY k", f"SELECT c, count(*) FROM {table} GROUP BY c ORDER BY c",
            f"DROP TABLE {table}"]
    return out


def _high_statements() -> list[str]:
    out = [q for lit in HIGH_LITERALS for q in _literal_cases(lit)]
    return out + [f'SELECT {i}::"char"' for i in HIGH_INTS]


def test_generated_statements():
    assert len(set(_ascii_statements("t"))) == len(_ascii_statements("t")) > 80
    assert len(_high_statements()) == 8


def test_char_matches_postgresql(ss_conn, pg_conn, unique_name):
    sts = _ascii_statements(unique_name("c"))
    bad = mismatches(ss_conn, pg_conn, sts)
    assert not bad, f"{len(bad)} of {len(sts)} differ:\n" + "\n".join(bad[:20])


def test_bytes_above_127_are_refused_with_a_hint(ss_conn, pg_conn):
    for sql in _high_statements():
        assert words(pg_conn, sql)[0] == "ok", sql
        with psycopg.ClientCursor(ss_conn) as cur:
            try:
                cur.execute(sql)
            except psycopg.errors.FeatureNotSupported as e:
                assert e.diag.message_hint and '"char"' in e.diag.message_hint, sql
                continue
        raise AssertionError(f"not refused: {sql}")
