"""Saved view state names its pipeline by fingerprint, never by position.

A view with two stream pipelines on the same stream is checkpointed; after
a restart whose planning orders the pipelines the other way round, each
state still lands on its own pipeline.  A saved state whose fingerprint
matches no pipeline is refused: the view is reported unavailable, never
given state that was saved for another pipeline (nor silently emptied).
"""
from __future__ import annotations

import pytest

from splitstream.executor.engine import Engine
from tests.support.engine import postgres_session as _session
from tests.support.engine import result_rows as _rows
from splitstream.executor.stream import continuous
from splitstream.protocol.errors import PgError

VIEW = """CREATE VIEW v AS
    SELECT a.k, a.n, b.total FROM (SELECT k, count(*) AS n FROM s GROUP BY k) a
    JOIN (SELECT k, sum(x) AS total FROM s WHERE x > 1 GROUP BY k) b ON a.k = b.k"""




def _checkpointed_view(data: str) -> list[tuple]:
    eng = Engine(data, fsync=False)
    eng.open()
    es = _session(eng)
    es.execute_sql("CREATE FOREIGN TABLE s (k int, x int) SERVER stream")
    es.execute_sql(VIEW)
    es.execute_sql("INSERT INTO s SELECT g % 3, g FROM generate_series(1, 30) g")
    before = _rows(es, "SELECT * FROM v ORDER BY k")
    (cv,) = eng.streams.views.values()
    assert [len(pipes) for pipes in cv.pipelines.values()] == [2]
    eng.close()                       # checkpoint: the states come back from it, not from the WAL
    return before


def _reopen(data: str) -> Engine:
    eng = Engine(data, fsync=False)
    eng.open()
    return eng


def test_state_follows_its_pipeline_when_the_order_changes(tmp_path, monkeypatch):
    data = str(tmp_path / "d")
    before = _checkpointed_view(data)
    real = continuous.compile_view

    def reversed_pipelines(rel, plan, ctx, reuse=None):
        program = real(rel, plan, ctx, reuse)
        for pipes in program.pipelines.values():
            pipes.reverse()
        return program

    monkeypatch.setattr(continuous, "compile_view", reversed_pipelines)
    eng = _reopen(data)
    try:
        es = _session(eng)
        assert _rows(es, "SELECT * FROM v ORDER BY k") == before
        es.execute_sql("INSERT INTO s VALUES (0, 100)")
        want = {k: (n, t) for k, n, t in before}
        want[0] = (want[0][0] + 1, want[0][1] + 100)
        assert {k: (n, t) for k, n, t in _rows(es, "SELECT * FROM v ORDER BY k")} == want
    finally:
        eng.close()


def test_state_of_an_unknown_pipeline_is_refused(tmp_path, monkeypatch, caplog):
    data = str(tmp_path / "d")
    _checkpointed_view(data)
    real = continuous._pipeline_words
    monkeypatch.setattr(continuous, "_pipeline_words", lambda p: real(p) + ["planned differently"])
    eng = _reopen(data)
    try:
        es = _session(eng)
        with pytest.raises(PgError) as e:
            _rows(es, "SELECT * FROM v")
        assert e.value.sqlstate == "55000" and "does not match its pipelines" in e.value.message
        assert "does not match its pipelines" in caplog.text
        # the stream still takes rows; the view stays unavailable rather than
        # starting over, across checkpoints and restarts too
        es.execute_sql("INSERT INTO s VALUES (1, 5)")
        with pytest.raises(PgError):
            _rows(es, "SELECT * FROM v")
        eng.close()
        eng = _reopen(data)
        es = _session(eng)
        with pytest.raises(PgError, match="does not match its pipelines"):
            _rows(es, "SELECT * FROM v")
        # and replacing it gives a fresh view
        es.execute_sql("DROP VIEW v")
        es.execute_sql(VIEW)
        es.execute_sql("INSERT INTO s VALUES (1, 5)")
        assert _rows(es, "SELECT * FROM v") == [(1, 1, 5)]
    finally:
        eng.close()
