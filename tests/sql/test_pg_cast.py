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


@pytest.mark.skipif(shutil.which("psql") is None, reason="psql not installed")
def test_psql_list_casts(ss_server):
    out = subprocess.run(["psql", ss_server.dsn, "-X", "-c", r"\dC int4"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "bigint           | integer          |" in out.stdout and "(binary coercible) | yes" in out.stdout
