"""``mode() WITHIN GROUP (ORDER BY x)`` has no direct argument.  The planner
bound the missing fraction argument (``None``) and failed with an internal
AttributeError instead of computing the aggregate (found by mypy)."""
from __future__ import annotations

from tests.support.engine import open_engine, plain_session


def test_mode_within_group_without_direct_argument(tmp_path) -> None:
    with open_engine(str(tmp_path / "data")) as e:
        s = plain_session(e)
        s.execute_sql("CREATE TABLE t (x int, g int)")
        s.execute_sql("INSERT INTO t VALUES (1, 1), (2, 1), (2, 1), (3, 2), (3, 2), (3, 2), (5, 2)")
        assert s.execute_sql("SELECT mode() WITHIN GROUP (ORDER BY x) FROM t").batch.rows() == [(3,)]
        got = s.execute_sql("SELECT g, mode() WITHIN GROUP (ORDER BY x) FROM t GROUP BY g ORDER BY g").batch.rows()
        assert got == [(1, 2), (2, 3)]
