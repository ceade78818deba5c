"""FILTER on a window function is refused (0A000 with a hint), not accepted
and ignored: the clause used to be parsed and dropped, returning the
unfiltered aggregate."""
from __future__ import annotations

import pytest

from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, plain_session


def test_window_filter_is_refused(tmp_path) -> None:
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        s.execute_sql("CREATE TABLE t (x int)")
        s.execute_sql("INSERT INTO t VALUES (1), (2), (3)")
        with pytest.raises(PgError) as err:
            s.execute_sql("SELECT sum(x) FILTER (WHERE x > 1) OVER () AS s FROM t")
        assert err.value.sqlstate == "0A000" and err.value.hint
        # the aggregate form keeps working
        res = s.execute_sql("SELECT sum(x) FILTER (WHERE x > 1) FROM t")
        assert res.batch.cols[0].to_pylist() == [5]
