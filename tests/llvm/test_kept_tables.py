"""A continuous view's native tables outlive the reads that merge them.

Reading a view merges its thread-local native tables into the global state.
Since session 5 the emptied tables are kept for the next batches (rebuilding a
table of millions of groups after every read cost more than the inserts), so
these tests check that what is kept is really empty: every read after more
input must equal the vector backend's answer, for hash tables (that keep their
capacity) and dense tables (kept while their groups fill them, dropped when
they no longer do)."""
from __future__ import annotations

import numpy as np

from splitstream.executor.backends.llvm.backend import LLVM

from .conftest import Sql, canon, values


def _sink(sql: Sql, view: str):
    views = sql.engine.streams.views
    (cv,) = [v for v in views.values() if v.rel.name == view]
    (pipe,) = [p for ps in cv.pipelines.values() for p in ps]
    return LLVM.sink(pipe)


def _pair(sql: Sql, query: str) -> tuple[list[str], list[str]]:
    streams, views = [], []
    for _ in range(2):
        s, v = sql.name("ks"), sql.name("kv")
        sql(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
        sql(f"CREATE VIEW {v} AS " + query.format(s=s))
        streams.append(s)
        views.append(v)
    return streams, views


def _insert(sql: Sql, streams: list[str], rows: list[tuple]) -> None:
    for mode, s in zip(("vector", "llvm"), streams):
        sql.backend(mode)
        sql(f"INSERT INTO {s} VALUES {values(rows)}")


def test_hash_table_kept_and_emptied_across_reads(sql: Sql):
    streams, views = _pair(sql, "SELECT k, count(*), sum(x), max(x) FROM {s} GROUP BY k")
    rng = np.random.default_rng(5)
    kept = None
    for step in range(6):
        keys = rng.integers(0, 50_000_000, 3000)          # far too sparse for a dense table
        keys[: 1000] = keys[1000: 2000]                  # repeated keys: updates as well as new groups
        rows = [(int(k), int(x)) for k, x in zip(keys, rng.integers(-50, 50, len(keys)))]
        _insert(sql, streams, rows)
        sql.backend("llvm")
        sink = _sink(sql, views[1])
        assert sink.info.backend == "llvm"
        (table,) = sink.tables
        assert table.variant == "generic" and table.ngroups > 0
        if kept is not None:
            assert table is kept, "the table read before is reused, not rebuilt"
        got = canon(sql.rows(f"SELECT * FROM {views[1]}"))
        assert got == canon(sql.rows(f"SELECT * FROM {views[0]}"))
        assert sink.tables == [table] and table.ngroups == 0
        kept = table


def test_dense_table_kept_while_full_dropped_when_sparse(sql: Sql):
    streams, views = _pair(sql, "SELECT k, count(*), sum(x) FROM {s} GROUP BY k")
    rng = np.random.default_rng(6)
    dense = [(int(k), int(x)) for k, x in zip(np.arange(20_000), rng.integers(0, 9, 20_000))]
    for step, rows in enumerate([dense, dense[::2], [(7, 1), (19_000, 2)], dense[:5000]]):
        _insert(sql, streams, rows)
        sql.backend("llvm")
        sink = _sink(sql, views[1])
        was = list(sink.tables)
        assert canon(sql.rows(f"SELECT * FROM {views[1]}")) == canon(sql.rows(f"SELECT * FROM {views[0]}"))
        if step in (0, 1):            # the batch filled the range: kept, emptied
            assert [t.variant for t in was] == ["specialised"] and sink.tables == was
            assert not sink.tables[0].rows.any()
        if step == 2:                 # two groups in a range of 20k: dropped
            assert sink.tables == []
