"""Morsel-parallel kernels (2 threads, thread-local tables merged after) and
the adaptive query path (vector morsels until the background compile lands)."""
from __future__ import annotations

import time

from splitstream.executor.backends.llvm import backend, jit  # noqa: F401  (importing backend installs the LLVM backend)

from .conftest import Sql, canon


def _table(sql: Sql, n: int) -> str:
    t = sql.name("t")
    sql(f"CREATE TABLE {t} (k int, g smallint, x int, f float8)")
    sql(f"INSERT INTO {t} SELECT CASE WHEN i % 101 = 0 THEN NULL ELSE (i * 37) % 3001 - 1500 END, i % 3, "
        f"CASE WHEN i % 13 = 0 THEN NULL ELSE i % 1000 - 500 END, (i % 64) / 4.0 FROM generate_series(1, {n}) i")
    return t


def test_two_thread_morsels_equal_vector(sql: Sql):
    t = _table(sql, 300_000)                      # > PAR_MIN_ROWS: the 2-thread path
    q = (f"SELECT k, g, count(*), count(x), sum(x), min(x), max(f), avg(f) FROM {t} "
         f"WHERE x > -400 AND f <> 3.0 GROUP BY k, g")
    sql.backend("vector")
    want = canon(sql.rows(q))
    sql.backend("llvm")
    got = canon(sql.rows(q))
    assert got == want
    text = "\n".join(sql.lines("EXPLAIN ANALYZE " + q))
    assert "rows=300000" in text and "llvm " in text, text


def test_auto_query_switches_between_morsels(sql: Sql, monkeypatch):
    t = _table(sql, 400_000)
    q = f"SELECT g, k, sum(x), count(*) FROM {t} WHERE f < 12.5 GROUP BY g, k"
    sql.backend("vector")
    want = canon(sql.rows(q))
    jit.clear_cache()
    monkeypatch.setitem(jit.stats, "compile_ms_ewma", 0.001)   # any work pays: compile in the background
    sql.backend("auto")
    assert canon(sql.rows(q)) == want            # vector morsels, maybe compiled ones after the switch
    deadline = time.monotonic() + 20
    text = ""
    while time.monotonic() < deadline:
        text = "\n".join(sql.lines("EXPLAIN ANALYZE " + q))
        if "[llvm " in text:
            break
        time.sleep(0.05)
    assert "[llvm " in text, text                # a later execution runs compiled
    assert canon(sql.rows(q)) == want
