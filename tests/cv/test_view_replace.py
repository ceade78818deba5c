"""CREATE OR REPLACE VIEW on a continuous view (issue 14 item 8): it used to
start the view over, empty, without a word.  Now the state is kept when the
new definition has the same stream pipelines (only the part above the
groupings changed: HAVING, more output expressions over the same aggregates,
ORDER BY), the replacement is refused (0A000 with a hint) when they differ,
and WITH (restart = true) asks for a view that starts empty, with a NOTICE.
What was kept or restarted survives a crash (WAL replay) and a checkpoint
taken under the old definition."""
from __future__ import annotations

import pytest

from splitstream.executor.engine import Engine
from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, postgres_session, session_after


def _rows(es, sql):
    return es.execute_sql(sql).batch.rows()


@pytest.fixture
def es(tmp_path):
    with session_after(str(tmp_path / "d"),
                       "CREATE FOREIGN TABLE s (k int, x int, tag text) SERVER stream",
                       "CREATE TABLE dim (k int, name text)",
                       "INSERT INTO dim VALUES (1, 'one'), (2, 'two')",
                       "CREATE VIEW v AS SELECT k, sum(x) AS total, count(*) AS n FROM s GROUP BY k",
                       "INSERT INTO s VALUES (1, 10, 'a'), (1, 5, 'b'), (2, 7, 'a')") as s:
        yield s


@pytest.mark.parametrize("definition, want", [
    ("SELECT k, sum(x) AS total, count(*) AS n FROM s GROUP BY k HAVING count(*) > 1", [(1, 15, 2)]),
    ("SELECT k, sum(x) AS total, count(*) AS n, sum(x) * 2 AS twice FROM s GROUP BY k", [(1, 15, 2, 30), (2, 7, 1, 14)]),
    ("SELECT k, sum(x) AS total, count(*) AS n FROM s GROUP BY k ORDER BY k DESC", [(1, 15, 2), (2, 7, 1)]),
    ("SELECT k, count(*) AS n, sum(x) AS total FROM s GROUP BY k", [(1, 2, 15), (2, 1, 7)]),
    ("SELECT v.k, d.name, v.total FROM (SELECT k, sum(x) AS total, count(*) AS n FROM s GROUP BY k) v "
     "JOIN dim d ON d.k = v.k", [(1, "one", 15), (2, "two", 7)]),
])
def test_state_kept_when_only_the_upper_part_changes(es, definition, want):
    res = es.execute_sql(f"CREATE OR REPLACE VIEW v AS {definition}")
    assert not res.notices
    assert sorted(_rows(es, "SELECT * FROM v")) == want
    es.execute_sql("INSERT INTO s VALUES (2, 1, 'c')")        # and it goes on from there
    assert sorted(_rows(es, "SELECT k, sum(total) FROM v GROUP BY k")) == [(1, 15), (2, 8)] if "HAVING" not in definition \
        else sorted(_rows(es, "SELECT k, total FROM v")) == [(1, 15), (2, 8)]


@pytest.mark.parametrize("definition", [
    "SELECT k, sum(x) AS total, count(*) AS n FROM s WHERE x > 5 GROUP BY k",        # another filter
    "SELECT k, sum(x * 2) AS total, count(*) AS n FROM s GROUP BY k",                # another aggregate input
    "SELECT k, sum(x) AS total, count(*) AS n, max(x) AS m FROM s GROUP BY k",       # one more aggregate
    "SELECT tag, sum(x) AS total, count(*) AS n FROM s GROUP BY tag",                # other keys
    "SELECT k, sum(CASE WHEN tag = 'a' THEN x ELSE 0 END) AS total, count(*) AS n FROM s GROUP BY k",
    "SELECT s.k, sum(x) AS total, count(*) AS n FROM s JOIN dim ON dim.k = s.k GROUP BY s.k",   # a join below
    "SELECT 1 AS k, 2 AS total, 3 AS n",                                             # no stream at all
])
def test_replacement_that_would_discard_state_is_refused(es, definition):
    with pytest.raises(PgError) as err:
        es.execute_sql(f"CREATE OR REPLACE VIEW v AS {definition}")
    assert err.value.sqlstate == "0A000" and "restart" in err.value.hint
    assert sorted(_rows(es, "SELECT * FROM v")) == [(1, 15, 2), (2, 7, 1)]       # untouched


def test_constants_below_the_grouping_tell_pipelines_apart(es):
    es.execute_sql("CREATE OR REPLACE VIEW v WITH (restart = true) AS "
                   "SELECT k, sum(x) AS total, count(*) AS n FROM s WHERE x > 5 GROUP BY k")
    with pytest.raises(PgError):
        es.execute_sql("CREATE OR REPLACE VIEW v AS SELECT k, sum(x) AS total, count(*) AS n FROM s WHERE x > 6 GROUP BY k")
    es.execute_sql("CREATE OR REPLACE VIEW v AS SELECT k, sum(x) AS total, count(*) AS n FROM s WHERE x > 5 GROUP BY k "
                   "HAVING sum(x) > 0")


def test_explicit_restart_starts_empty_with_a_notice(es):
    res = es.execute_sql("CREATE OR REPLACE VIEW v WITH (restart = true) AS "
                         "SELECT k, sum(x) AS total FROM s WHERE x > 5 GROUP BY k")
    assert [n.message for n in res.notices] == ['continuous view "v" starts empty: the state it held is discarded']
    assert _rows(es, "SELECT * FROM v") == []
    es.execute_sql("INSERT INTO s VALUES (2, 100, 'z'), (2, 1, 'z')")
    assert _rows(es, "SELECT * FROM v") == [(2, 100)]


def test_restart_option_is_a_boolean(es):
    with pytest.raises(PgError) as err:
        es.execute_sql("CREATE OR REPLACE VIEW v WITH (restart = maybe) AS SELECT k, sum(x) AS total FROM s GROUP BY k")
    assert err.value.sqlstate == "22023"


def _sql(es, sql):
    return es.execute_sql(sql)


@pytest.mark.parametrize("checkpoint_first", [False, True])
def test_kept_and_restarted_state_survive_a_crash(tmp_path, checkpoint_first):
    """Recovery replays the replacement where it happened: the WAL alone, or a
    checkpoint saved under the old definition followed by the WAL."""
    data = str(tmp_path / "d")
    first = Engine(data, fsync=False)
    first.open()
    es = postgres_session(first)
    for sql in ("CREATE FOREIGN TABLE s (k int, x int) SERVER stream",
                "CREATE VIEW v AS SELECT k, sum(x) AS total FROM s GROUP BY k",
                "CREATE VIEW w AS SELECT k, count(*) AS n FROM s GROUP BY k",
                "INSERT INTO s VALUES (1, 10), (2, 5)"):
        _sql(es, sql)
    if checkpoint_first:
        _sql(es, "CHECKPOINT")
    _sql(es, "CREATE OR REPLACE VIEW v AS SELECT k, sum(x) AS total, sum(x) + 1 AS plus FROM s GROUP BY k")
    _sql(es, "CREATE OR REPLACE VIEW w WITH (restart = true) AS SELECT k, count(*) AS n FROM s GROUP BY k")
    _sql(es, "INSERT INTO s VALUES (1, 1)")
    want_v, want_w = sorted(_rows(es, "SELECT * FROM v")), sorted(_rows(es, "SELECT * FROM w"))
    assert want_v == [(1, 11, 12), (2, 5, 6)] and want_w == [(1, 1)]
    # no close (no shutdown checkpoint): the next engine recovers as after a crash
    second = Engine(data, fsync=False)
    second.open()
    try:
        es2 = postgres_session(second)
        assert sorted(_rows(es2, "SELECT * FROM v")) == want_v
        assert sorted(_rows(es2, "SELECT * FROM w")) == want_w
        _sql(es2, "INSERT INTO s VALUES (2, 2)")
        assert sorted(_rows(es2, "SELECT * FROM v")) == [(1, 11, 12), (2, 7, 8)]
    finally:
        second.close()
        first.close()


def test_replacing_a_view_created_in_the_same_transaction(es):
    """Not registered yet, it holds no state: any new definition is fine."""
    es.execute_sql("BEGIN")
    es.execute_sql("CREATE VIEW fresh AS SELECT k, count(*) AS n FROM s GROUP BY k")
    es.execute_sql("CREATE OR REPLACE VIEW fresh AS SELECT k, max(x) AS m FROM s WHERE x > 1 GROUP BY k")
    es.execute_sql("COMMIT")
    es.execute_sql("INSERT INTO s VALUES (3, 4, 'q')")
    assert _rows(es, "SELECT * FROM fresh") == [(3, 4)]


def test_a_batch_staged_before_the_replacement_lands_after_it(tmp_path):
    """Inserts stage a batch into the view's pipelines before it is logged and
    deliver it after: a replacement committed in between must not lose it.
    The new definition runs over the same pipeline objects, so it cannot."""
    from splitstream.catalog.datatypes.vector import Batch, Col
    from splitstream.protocol import oids

    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        es.execute_sql("CREATE FOREIGN TABLE s (k int, x int) SERVER stream")
        es.execute_sql("CREATE VIEW v AS SELECT k, sum(x) AS total FROM s GROUP BY k")
        es.execute_sql("INSERT INTO s VALUES (1, 10)")
        (cv,) = eng.streams.views.values()
        rel = eng.db.committed.rels[next(iter(cv.pipelines))]
        batch = Batch([Col.from_pylist([1], oids.INT4), Col.from_pylist([5], oids.INT4)], 1)
        if len(rel.live_columns) > 2:            # arrival_timestamp
            batch = Batch(batch.cols + [Col.from_pylist([None], c.type_oid) for c in rel.live_columns[2:]], 1)
        staged = cv.stage(rel.oid, batch, eng.streams.replay_ctx())
        es.execute_sql("CREATE OR REPLACE VIEW v AS SELECT k, sum(x) AS total FROM s GROUP BY k HAVING sum(x) > 0")
        assert eng.streams.views[cv.rel.oid] is cv
        cv.deliver(staged)
        assert _rows(es, "SELECT * FROM v") == [(1, 15)]
