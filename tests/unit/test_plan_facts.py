"""Which prepared statements the server may run on its event-loop thread.

``Prepared.read_only`` replaces reading the SQL text in the server: only a
query that can neither block (stream scans wait for tuples, pg_sleep) nor
change state (sequences, advisory locks, settings, DML) qualifies.
"""
from __future__ import annotations

import pytest

from splitstream.executor.context import SessionInfo
from splitstream.executor.engine import Engine
from splitstream.server import session_settings


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    eng = Engine(str(tmp_path_factory.mktemp("facts")), fsync=False)
    eng.open()
    settings = session_settings.startup_settings({"user": "postgres", "database": "postgres"}, "postgres", True)
    es = eng.new_session(SessionInfo(settings=settings, user="postgres", database="postgres", pid=1))
    for ddl in ("CREATE TABLE t (a int)", "CREATE SEQUENCE sq", "CREATE FOREIGN TABLE s (a int) SERVER stream",
                "CREATE VIEW v AS SELECT a, count(*) FROM s GROUP BY a"):
        es.execute_sql(ddl)
    yield es
    es.close()
    eng.close()


@pytest.mark.parametrize("sql", ["SELECT 1", "VALUES (1)", "SELECT * FROM t", "SELECT * FROM v", "SELECT now()",
                                 "SELECT a FROM t WHERE a IN (SELECT a FROM v)"])
def test_plain_queries_are_read_only(session, sql):
    assert session.prepare(sql, []).read_only


@pytest.mark.parametrize("sql", ["SELECT nextval('sq')", "SELECT pg_sleep(0)", "SELECT * FROM s",
                                 "SELECT pg_advisory_lock(1)", "INSERT INTO t VALUES (1)",
                                 "SELECT set_config('a.b', '1', false)", "SELECT (SELECT nextval('sq'))",
                                 "WITH x AS (SELECT pg_sleep(0)) SELECT * FROM x", "SHOW timezone",
                                 "SELECT * FROM t WHERE a IN (SELECT a FROM s)"])
def test_blocking_or_writing_statements_are_not(session, sql):
    assert not session.prepare(sql, []).read_only
