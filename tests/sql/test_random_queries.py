"""Random differential queries (tests/sql/querygen): seeded SELECTs over
tables of NULLs and edge values, compared with PostgreSQL 15 -- values
(ordered only where the ORDER BY decides), column names, type OIDs and the
SQLSTATEs of errors.

Every seed's queries are fixed, so a failure names a reproducible statement
(``python -m tests.sql.querygen --seeds N`` runs it again, and more seeds).
Disagreements not yet fixed are listed in ``querygen/known.py`` with the
reason (``python -m tests.sql.querygen`` counts them per entry). The backend suites (Makefile BACKEND_SUITE) run this
on the vector and the LLVM backend as well.
"""
from __future__ import annotations

import pytest

from tests.sql.querygen.known import unexplained
from tests.sql.querygen.run import load, run_seed, unload

SEEDS = (1, 2, 3, 4)
QUERIES_PER_SEED = 120


@pytest.mark.parametrize("seed", SEEDS)
def test_random_queries(seed, ss_conn, pg_conn, unique_name):
    prefix = unique_name("q") + "_"
    load([ss_conn, pg_conn], prefix)
    try:
        ran, found = run_seed(ss_conn, pg_conn, seed, QUERIES_PER_SEED, prefix)
    finally:
        unload([ss_conn, pg_conn], prefix)
    assert ran == QUERIES_PER_SEED
    bad = unexplained(found)
    assert not bad, f"{len(bad)} of {ran} queries disagree:\n\n" + "\n\n".join(d.report() for d in bad)
