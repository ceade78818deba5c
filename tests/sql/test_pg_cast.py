"""pg_cast: PostgreSQL 15's rows for the casts between the types
splitstream has (castsource, casttarget, castfunc, castcontext, castmethod
and the rows' OIDs), compared with PostgreSQL 15 over every base type
splitstream's pg_type lists; psql's \\dC reads it. And the binder follows
the same rows: every pair of those types cast a sample value and NULL
(``x::s::t``, ``CAST(... AS t)``) with PostgreSQL 15's outcome: the value,
or 42846 at the cast when no pathway exists (a row, an I/O conversion to or
from a string type)."""
from __future__ import annotations

import itertools
import shutil
import subprocess

import pytest

from tests.support.fidelity import simple_outcome

SAMPLES = {"bool": "true", "int2": "7", "int4": "42", "int8": "1259", "float4": "1.5", "float8": "2.5",
           "numeric": "3.25", "oid": "23", "regclass": "'pg_class'", "regtype": "'int4'", "regproc": "0",
           "regnamespace": "'public'", "regrole": "'postgres'", "date": "'2020-01-02'", "time": "'12:34:56'",
           "timetz": "'12:34:56+02'", "timestamp": "'2020-01-02 03:04:05'", "timestamptz": "'2020-01-02 03:04:05+00'",
           "interval": "'1 day 02:00'", "json": "'1'", "jsonb": "'1'", "uuid": "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
           "bytea": "'\\x01'", '"char"': "'a'", "name": "'n'", "text": "'t'", "varchar": "'v'", "bpchar": "'b'"}
ROWS = ("SELECT oid, castsource::regtype::text, casttarget::regtype::text, castfunc, castcontext, castmethod "
        "FROM pg_cast WHERE castsource = ANY(%s) AND casttarget = ANY(%s) ORDER BY oid")


def test_pg_cast_rows_agree(ss_conn, pg_conn):
    types = [r[0] for r in ss_conn.execute(
        "SELECT oid FROM pg_type WHERE typtype = 'b' AND typcategory <> 'A' AND typname NOT IN ('unknown')").fetchall()]
    ours = ss_conn.execute(ROWS, (types, types)).fetchall()
    theirs = pg_conn.execute(ROWS, (types, types)).fetchall()
    assert len(theirs) > 100 and ours == theirs
    assert ss_conn.execute("SELECT 'pg_cast'::regclass::oid").fetchone() == (2605,)


def test_casts_follow_pg_cast(ss_conn, pg_conn):
    cases = []
    for s, t in itertools.permutations(SAMPLES, 2):
        value = "0" if t == "regproc" and s in ("int2", "int4", "int8", "oid") else SAMPLES[s]   # (our own proc OIDs)
        cases += [f"SELECT {value}::{s}::{t}", f"SELECT CAST(NULL::{s} AS {t})"]
    diffs = [(sql, got, want) for sql in cases
             if (got := simple_outcome(ss_conn, sql)) != (want := simple_outcome(pg_conn, sql))]
    assert not diffs, "\n".join(map(str, diffs[:8]))
    assert sum(simple_outcome(pg_conn, sql)[0] == "42846" for sql in cases[:200]) > 20


def test_cast_functions_in_pg_proc(ss_conn, pg_conn):
    """castfunc joins pg_proc as in PostgreSQL: the function's name,
    arguments, result and volatility."""
    types = [r[0] for r in ss_conn.execute(
        "SELECT oid FROM pg_type WHERE typtype = 'b' AND typcategory <> 'A' AND typname NOT IN ('unknown')").fetchall()]
    sql = ("SELECT c.oid, p.oid, p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid), "
           "p.provolatile FROM pg_cast c JOIN pg_proc p ON p.oid = c.castfunc "
           "WHERE castsource = ANY(%s) AND casttarget = ANY(%s) AND castsource <> casttarget ORDER BY c.oid")
    ours, theirs = ss_conn.execute(sql, (types, types)).fetchall(), pg_conn.execute(sql, (types, types)).fetchall()
    assert len(theirs) > 60 and ours == theirs


def test_function_style_casts(ss_conn, pg_conn):
    """``int4(x)``: a call named as a type is the cast (PostgreSQL's cast
    functions, or its function-style coercion), 42883 when neither fits."""
    names = ["int2", "int4", "int8", "float4", "float8", "numeric", "bool", "text", "varchar", "name", "oid",
             "date", "timestamptz", "regtype", "uuid", "jsonb", "json", "nosuch"]
    sources = {"int4": "42", "numeric": "2.5", "bool": "true", "text": "'12'", "date": "'2020-01-02'",
               "timestamp": "'2020-01-02 03:04:05'", "jsonb": "'7'", "int8": "5"}
    cases = [f"SELECT {n}({v}::{t})" for n in names for t, v in sources.items()]
    cases += [f"SELECT {n}('1')" for n in names] + [f"SELECT {n}(NULL::int4)" for n in names]
    diffs = [(sql, got, want) for sql in cases
             if (got := simple_outcome(ss_conn, sql)) != (want := simple_outcome(pg_conn, sql))]
    assert not diffs, "\n".join(map(str, diffs[:8]))


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql not installed")
def test_psql_list_casts(ss_server, pg15):
    """psql's \\dC: PostgreSQL's lines for the types splitstream has, the
    functions named (a type's length coercion to itself has no pg_proc row
    here: its function takes the typmod, which no call passes)."""
    def lines(dsn: str, pattern: str) -> list[str]:
        out = subprocess.run(["psql", dsn, "-X", "-A", "-t", "-c", rf"\dC {pattern}"], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    def kept(line: str) -> bool:        # (a type's length coercion to itself, timestamptz(timestamptz, int4): not listed)
        source, target = line.split("|")[:2]
        return source != target

    for pattern in ("int8", "bool", "timestamptz", "regclass"):
        ours, theirs = lines(ss_server.dsn, pattern), lines(pg15.dsn, pattern)
        known = {t for line in ours for t in line.split("|")[:2]}
        assert ours and [x for x in ours if kept(x)] == [
            line for line in theirs if set(line.split("|")[:2]) <= known and kept(line)]
        assert any("|int4|" in line or "|bool|" in line or "|timestamptz|" in line or "(binary" in line
                   for line in ours)
