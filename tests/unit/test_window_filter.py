"""FILTER on a window aggregate is applied (issue 15): for the aggregates
that skip NULLs it is the aggregate of ``CASE WHEN cond THEN x END``, which
PostgreSQL's answer equals; for the others (array_agg keeps NULLs) it is
refused with 0A000 and a hint, never accepted and ignored (the clause used to
be parsed and dropped, returning the unfiltered aggregate)."""
from __future__ import annotations

import pytest

from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, plain_session


def test_window_filter_is_applied(tmp_path) -> None:
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        s.execute_sql("CREATE TABLE t (x int)")
        s.execute_sql("INSERT INTO t VALUES (1), (2), (3)")
        res = s.execute_sql("SELECT sum(x) FILTER (WHERE x > 1) OVER () AS s,"
                            " count(*) FILTER (WHERE x <> 2) OVER (ORDER BY x) AS c FROM t ORDER BY x")
        assert res.batch.cols[0].to_pylist() == [5, 5, 5]
        assert res.batch.cols[1].to_pylist() == [1, 1, 2]
        with pytest.raises(PgError) as err:
            s.execute_sql("SELECT array_agg(x) FILTER (WHERE x > 1) OVER () FROM t")
        assert err.value.sqlstate == "0A000" and err.value.hint
        # the aggregate form keeps working
        res = s.execute_sql("SELECT sum(x) FILTER (WHERE x > 1) FROM t")
        assert res.batch.cols[0].to_pylist() == [5]
