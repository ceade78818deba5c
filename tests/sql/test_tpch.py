"""TPC-H at scale factor 0.1: all 22 queries must return PostgreSQL's results.

The data is generated once per session with DuckDB's tpch extension and
loaded into splitstream and into the PostgreSQL 15 oracle (which also gets
primary keys and a few indexes so that *it* answers Q17/Q20 in seconds; they
cannot change a result).  The tables live in their own schema so they never
collide with other tests' tables on the shared servers.

Results are compared as PostgreSQL prints them (text), in order when the
query has ORDER BY; column names and types must match too.  Float texts are
compared with a relative tolerance (see tests/support/diff.py); numeric
results must be digit-for-digit equal, as they are exact in both systems.
"""
from __future__ import annotations

import re

import psycopg
import pytest

from bench import tpch_data as tpch
from tests.support import diff

SCHEMA = "tpch_sf01"
SF = 0.1

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def tpch_servers(ss_server, pg15, tmp_path_factory):
    """(splitstream conn, postgres conn), both with TPC-H SF 0.1 loaded once."""
    pytest.importorskip("duckdb")
    pytest.importorskip("duckdb_extension_tpch")
    data = tpch.generate(SF, str(tmp_path_factory.mktemp("tpch")))
    ss = psycopg.connect(ss_server.dsn, autocommit=True, connect_timeout=10)
    pg = psycopg.connect(pg15.dsn, autocommit=True, connect_timeout=10)
    tpch.load(pg, SF, data, oracle=True, schema=SCHEMA)
    tpch.load(ss, SF, data, schema=SCHEMA)
    # a runaway plan must fail this test, not hang the suite
    ss.execute("SET statement_timeout = '120s'")
    try:
        yield ss, pg
    finally:
        # drop the data so the shared servers do not carry (and checkpoint) it further
        for conn in (ss, pg):
            for t in reversed(tpch.TABLES):
                try:
                    conn.execute(f"DROP TABLE IF EXISTS {SCHEMA}.{t}")
                except psycopg.Error:
                    pass
        ss.close()
        pg.close()


@pytest.mark.parametrize("backend", ["vector", "llvm"])
@pytest.mark.parametrize("n", range(1, 23), ids=lambda n: f"q{n:02d}")
def test_tpch_query(tpch_servers, n, backend):
    """Both executor backends (``auto`` picks one of them per pipeline)."""
    ss, pg = tpch_servers
    q = tpch.queries()[n]
    ss.execute(f"SET executor_backend = '{backend}'")
    try:
        ours, theirs = diff.run_both(ss, pg, [q])[0]
    finally:
        ss.execute("RESET executor_backend")
    assert not theirs.failed, f"PostgreSQL failed Q{n}: {theirs.describe()}"
    assert theirs.rows, f"Q{n} returned no rows on PostgreSQL: the comparison would be vacuous"
    diff.assert_same(ours, theirs)


@pytest.mark.parametrize("n", range(1, 23), ids=lambda n: f"q{n:02d}")
def test_tpch_join_estimates_within_10x(tpch_servers, n):
    """Issue 18: EXPLAIN ANALYZE's estimate of every join is within 10x of
    its actual rows (a join producing no rows counts as one)."""
    ss, _ = tpch_servers
    lines = [r[0] for r in ss.execute("EXPLAIN ANALYZE " + tpch.queries()[n]).fetchall()]
    joins = [ln for ln in lines if "Join" in ln and not ln.lstrip().startswith("Pipeline")]
    assert joins or n in (1, 6), lines
    for ln in joins:
        m = re.search(r"\(rows=(\d+)\)\s+\(actual rows=(\d+)", ln)
        assert m is not None, f"Q{n}: a join without an estimate: {ln}"
        est, actual = int(m.group(1)), max(int(m.group(2)), 1)
        assert actual / 10 <= est <= actual * 10, f"Q{n}: {ln}"
