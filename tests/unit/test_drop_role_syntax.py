"""``DROP ROLE`` without a role name (or with a string literal for one) is a
syntax error, as in PostgreSQL.  The parser used its regex match unchecked
and failed with an internal AttributeError instead (found by mypy)."""
from __future__ import annotations

import pytest

from splitstream.protocol.errors import SYNTAX_ERROR, PgError
from tests.support.engine import open_engine, plain_session


@pytest.mark.parametrize("sql", ["DROP ROLE", "DROP USER;", "DROP ROLE 'x'"])
def test_drop_role_without_name_is_a_syntax_error(tmp_path, sql: str) -> None:
    with open_engine(str(tmp_path / "data")) as e:
        s = plain_session(e)
        with pytest.raises(PgError) as err:
            s.execute_sql(sql)
        assert err.value.sqlstate == SYNTAX_ERROR


def test_drop_role_still_drops(tmp_path) -> None:
    with open_engine(str(tmp_path / "data")) as e:
        s = plain_session(e)
        s.execute_sql("CREATE ROLE alice")
        assert s.execute_sql("DROP ROLE alice").tag == "DROP ROLE"
        assert s.execute_sql("DROP ROLE IF EXISTS alice").tag == "DROP ROLE"
