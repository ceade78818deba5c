"""stddev/variance over a numeric column holding NaN.  The scale of the
result was taken from each value's exponent, which is a letter for NaN, so
the statement failed with an internal TypeError; PostgreSQL answers NaN
(found by mypy)."""
from __future__ import annotations

import decimal

from tests.support.engine import open_engine, plain_session


def _is_nan(v) -> bool:
    return isinstance(v, decimal.Decimal) and v.is_nan()


def test_numeric_variance_with_nan(tmp_path) -> None:
    with open_engine(str(tmp_path / "data")) as e:
        s = plain_session(e)
        s.execute_sql("CREATE TABLE t (x numeric, g int)")
        s.execute_sql("INSERT INTO t VALUES ('NaN', 1), (1.5, 1), (2.5, 2), (3.5, 2), ('NaN', 3)")
        rows = s.execute_sql("SELECT g, stddev(x), variance(x), var_pop(x), stddev_samp(DISTINCT x) "
                             "FROM t GROUP BY g ORDER BY g").batch.rows()
        assert [r[0] for r in rows] == [1, 2, 3]
        assert all(_is_nan(v) for v in rows[0][1:])
        assert rows[1][2] == decimal.Decimal("0.5") and not any(_is_nan(v) for v in rows[1][1:])
        assert rows[2][1] is None and rows[2][2] is None and _is_nan(rows[2][3])    # one row: samp NULL, pop NaN
