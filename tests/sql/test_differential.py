"""Differential SQL suite: every statement of tests/sql/corpus/*.sql runs on
splitstream and on PostgreSQL 15, and the outcomes must agree -- rows (as
multisets, or in order under ORDER BY), column names, column types, command
tags, and for erroneous statements the SQLSTATE.

The corpus format is documented in tests/support/diff.py.  Table names in a
corpus carry a ``{{p}}`` prefix replaced by a name unique to the test, so the
corpora can share the session's servers with other tests.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.diff import diff_file, parse_corpus

CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(CORPUS.glob("*.sql"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_corpus(path, ss_conn, pg_conn, unique_name):
    prefix = unique_name("d")
    pairs = diff_file(path, ss_conn, pg_conn, names={"p": prefix}, check_types=True)
    assert pairs, f"{path.name} ran no statements"


def test_corpus_size():
    """Issue 3: errors among the statements; issue 15: at least 2,000 statements."""
    cases = [c for p in FILES for c in parse_corpus(p.read_text(encoding="utf-8"), {"p": "x"}) if not c.skip]
    assert len(cases) >= 2000, len(cases)
    assert sum(c.expect_error for c in cases) >= 40
