"""An uncorrelated subquery runs once per statement, and no later statement
sees its result.  A cached plan's SubqueryExpr used to key its result by
``id(ctx)``; CPython reuses a freed context's address for a later one, which
then got the earlier statement's answer (TPC-H Q15's ``total_revenue =
(SELECT max(total_revenue) ...)`` view intermittently matched no row).
In-process, because the address reuse needs contexts freed promptly."""
from __future__ import annotations

from tests.support.engine import open_engine, plain_session


def test_scalar_subquery_is_not_reused_by_a_later_statement(tmp_path) -> None:
    with open_engine(str(tmp_path / "data")) as e:
        s = plain_session(e)
        s.execute_sql("CREATE TABLE t (x int)")
        s.execute_sql("CREATE FOREIGN TABLE st (k int) SERVER stream")
        s.execute_sql("CREATE VIEW v AS WITH r AS (SELECT k, count(*) AS n FROM st GROUP BY k) "
                      "SELECT k FROM r WHERE n = (SELECT max(n) FROM r)")
        for i in range(200):
            s.execute_sql(f"INSERT INTO t VALUES ({i})")
            got = [r[0] for r in s.execute_sql("SELECT x FROM t WHERE x = (SELECT max(x) FROM t)").batch.rows()]
            assert got == [i], f"statement {i} saw a stale subquery result: {got}"
            if i % 10 == 0:
                s.execute_sql(f"INSERT INTO st VALUES ({i}), ({i}), ({i})")
                rows = sorted(r[0] for r in s.execute_sql("SELECT * FROM v").batch.rows())
                assert rows == list(range(0, i + 1, 10)), f"view after {i}: {rows}"
