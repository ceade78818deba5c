"""The one-byte "char" type against PostgreSQL 15, generated: literals
(charin: the first byte, '' for the zero byte, \\ooo in octal), casts from
and to every string type and int4 (and the casts that do not exist),
comparisons of every pair, ||, min/max, a table column, and prefix minus
over "char" and other types.

A "char" holds any byte: above 127 (the first byte of 'é', chr(200), '\\310',
a negative int4) it prints and casts to text as \\ooo in octal, casts to int4
signed, and orders as an unsigned byte, as in PostgreSQL 15.  Those cases
are generated apart (with a table column, COPY out and binary results).

Known difference, left: PostgreSQL's "char" to bpchar cast (char_bpchar)
copies a byte above 127 as it is, which is not UTF8 text (a client cannot
decode it); here it is the octal text, as every other cast to a string.
"""
from __future__ import annotations

import itertools

from tests.support.fidelity import mismatches, table_on_both

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


def _high_statements(table: str) -> list[str]:
    out = [q for lit in HIGH_LITERALS for q in _literal_cases(lit)]
    out += [f'SELECT {i}::"char", ({i}::"char")::int, ({i}::"char")::text' for i in HIGH_INTS]
    out += ['SELECT chr(200)::"char", ascii(chr(200)::"char"), chr(200)::"char" || \'x\'::text, '
            'to_json(chr(200)::"char"), to_jsonb(\'\\377\'::"char"), ARRAY[\'\\310\'::"char", \'a\']']
    for a, b in itertools.product(["'a'", "'\\200'", "'\\377'", "'é'"], repeat=2):
        out.append(f'SELECT {a}::"char" < {b}::"char", {a}::"char" = {b}::"char", {a}::"char" >= {b}::"char"')
    rows = "('\\310', 1), ('a', 2), ('\\200', 3), ('é', 4), ((-1)::\"char\", 5), ('', 6)"
    out += [f'CREATE TABLE {table} (c "char", k int)', f"INSERT INTO {table} VALUES {rows}",
            f"SELECT c, c::text, c::int, k FROM {table} ORDER BY c, k", f"SELECT max(c), min(c), count(DISTINCT c) FROM {table}",
            f"SELECT k FROM {table} WHERE c > 'a' ORDER BY k", f"SELECT c, count(*) FROM {table} GROUP BY c ORDER BY c",
            f"DROP TABLE {table}"]
    return out


def test_generated_statements():
    assert len(set(_ascii_statements("t"))) == len(_ascii_statements("t")) > 80
    assert len(set(_high_statements("t"))) == len(_high_statements("t")) > 25


def test_char_matches_postgresql(ss_conn, pg_conn, unique_name):
    sts = _ascii_statements(unique_name("c"))
    bad = mismatches(ss_conn, pg_conn, sts)
    assert not bad, f"{len(bad)} of {len(sts)} differ:\n" + "\n".join(bad[:20])


def test_bytes_above_127_match_postgresql(ss_conn, pg_conn, unique_name):
    sts = _high_statements(unique_name("h"))
    bad = mismatches(ss_conn, pg_conn, sts)
    assert not bad, f"{len(bad)} of {len(sts)} differ:\n" + "\n".join(bad[:20])


def test_bytes_above_127_on_the_wire(ss_conn, pg_conn, unique_name):
    """COPY out (text: the octal form, its backslash escaped) and binary
    results (the byte itself) agree with PostgreSQL; COPY in reads the octal
    form back to the same byte."""
    outs = []
    with table_on_both((ss_conn, pg_conn), unique_name("w"), 'c "char", k int', "('\\310', 1)") as t:
        for conn in (ss_conn, pg_conn):
            with conn.cursor().copy(f"COPY {t} FROM STDIN") as cp:
                cp.write("\\\\200\t2\nz\t3\n")
            with conn.cursor().copy(f"COPY (SELECT c, k FROM {t} ORDER BY k) TO STDOUT") as cp:
                copied = b"".join(bytes(b) for b in cp)
            res = conn.pgconn.exec_params(f"SELECT c, c::int FROM {t} ORDER BY k".encode(), [], result_format=1)
            outs.append((copied, [res.get_value(i, 0) for i in range(res.ntuples)]))
    assert outs[0] == outs[1]
    assert outs[1][1] == [b"\xc8", b"\x80", b"z"]
