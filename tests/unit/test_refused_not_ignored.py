"""Statements and options splitstream does not implement are refused with a
PostgreSQL error and a hint, never accepted and ignored (each of these used to
succeed and do nothing, which gave silently wrong answers)."""
from __future__ import annotations

import pytest

from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, plain_session


@pytest.fixture()
def session(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        s = plain_session(eng)
        s.execute_sql("CREATE FOREIGN TABLE clicks (uid int, url text) SERVER stream")
        s.execute_sql("CREATE TABLE t (x int)")
        s.execute_sql("INSERT INTO t SELECT g FROM generate_series(1, 100) g")
        yield s


def _refused(session, sql: str, sqlstate: str) -> PgError:
    with pytest.raises(PgError) as err:
        session.execute_sql(sql)
    assert err.value.sqlstate == sqlstate, (sql, err.value.sqlstate, err.value.message)
    assert err.value.hint, sql
    return err.value


@pytest.mark.parametrize("sql", ["LISTEN chan", "NOTIFY chan, 'x'"])
def test_listen_notify_refused(session, sql):
    _refused(session, sql, "0A000")


def test_unlisten_is_a_true_no_op(session):
    """No session can listen, so UNLISTEN has nothing to undo (asyncpg's pool sends it on reset)."""
    assert session.execute_sql("UNLISTEN *").tag == "UNLISTEN"


@pytest.mark.parametrize("option, sqlstate", [
    ("sw = '1 minute'", "0A000"), ("sw = 'banana'", "0A000"), ("ttl = '1 hour', ttl_column = 'ts'", "0A000"),
    ("security_barrier = true", "0A000"), ("banana = 1", "22023"),
])
def test_view_options_refused_and_nothing_created(session, option, sqlstate):
    err = _refused(session, f"CREATE VIEW v WITH ({option}) AS SELECT url, count(*) FROM clicks GROUP BY url", sqlstate)
    if sqlstate == "22023":
        assert err.message == 'unrecognized parameter "banana"'
    rows = session.execute_sql("SELECT count(*) FROM pg_class WHERE relname = 'v'").batch.cols[0].to_pylist()
    assert rows == [0]
    # the implemented option still works
    session.execute_sql("CREATE VIEW v WITH (action = materialize) AS SELECT url, count(*) FROM clicks GROUP BY url")


@pytest.mark.parametrize("method", ["BERNOULLI (10)", "SYSTEM (10) REPEATABLE (1)"])
def test_tablesample_refused(session, method):
    _refused(session, f"SELECT count(*) FROM t TABLESAMPLE {method}", "0A000")
