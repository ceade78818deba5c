"""Privileges on streams and continuous views (issue 20), in process.

PostgreSQL has no streams, so these are checked against the rules it has
for foreign tables and views: INSERT (rows, COPY, and the Spark connector's
pushed-down partial states) needs INSERT on the stream; reading a
continuous view needs SELECT on it, and the view reads its stream with its
owner's rights.  A refused write applies nothing.
"""
from __future__ import annotations

import json

import pytest

from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, postgres_session, result_rows


def _refused(es, sql: str, message: str) -> None:
    with pytest.raises(PgError) as ei:
        es.execute_sql(sql)
    assert (ei.value.sqlstate, ei.value.message) == ("42501", message)


@pytest.fixture
def es(tmp_path):
    with open_engine(str(tmp_path)) as eng:
        s = postgres_session(eng)
        for sql in ["CREATE FOREIGN TABLE ev (k int, x int) SERVER stream",
                    "CREATE VIEW ev_v AS SELECT k, count(*) AS n, sum(x) AS sx FROM ev GROUP BY k",
                    "CREATE ROLE reader", "CREATE ROLE writer", "GRANT SELECT ON ev_v TO reader",
                    "GRANT INSERT ON ev TO writer", "GRANT CREATE ON SCHEMA public TO writer",
                    "INSERT INTO ev VALUES (1, 10)"]:
            s.execute_sql(sql)
        yield s


def _view(es) -> list[tuple]:
    es.execute_sql("RESET ROLE")
    return result_rows(es, "SELECT k, n, sx FROM ev_v ORDER BY k")


def test_inserts_need_insert_on_the_stream(es):
    es.execute_sql("SET ROLE reader")
    _refused(es, "INSERT INTO ev VALUES (2, 20)", "permission denied for foreign table ev")
    _refused(es, "COPY ev FROM STDIN", "permission denied for foreign table ev")
    assert result_rows(es, "SELECT k, n FROM ev_v") == [(1, 1)]
    es.execute_sql("SET ROLE writer")
    es.execute_sql("INSERT INTO ev VALUES (2, 20)")
    res = es.execute_sql("COPY ev FROM STDIN")
    res.copy_in.feed(b"3\t30\n")
    res.copy_in.finish()
    _refused(es, "SELECT * FROM ev_v", "permission denied for view ev_v")
    assert _view(es) == [(1, 1, 10), (2, 1, 20), (3, 1, 30)]


def test_pushed_down_partial_states_need_insert(es):
    desc = json.loads(result_rows(es, "SELECT splitstream_pipeline('ev')")[0][0])
    v = desc["views"][0]
    payload = json.dumps({"fingerprint": desc["fingerprint"], "view_oid": v["oid"], "pipeline": 0, "groups": 1,
                          "keys": [[5]], "states": [{"cnt": [2]}, {"sum": [7], "cnt": [2]}], "rows": [2]})
    merge = f"SELECT splitstream_merge_partial('ev', NULL, '{payload}')"
    es.execute_sql("SET ROLE reader")
    _refused(es, merge, "permission denied for foreign table ev")
    assert _view(es) == [(1, 1, 10)]            # nothing applied
    es.execute_sql("SET ROLE writer")
    assert result_rows(es, merge)[0][0].startswith("merged")
    assert _view(es) == [(1, 1, 10), (5, 2, 7)]


def test_a_continuous_view_reads_with_its_owners_rights(es):
    es.execute_sql("SET ROLE writer")
    es.execute_sql("CREATE VIEW ev_w AS SELECT count(*) AS n FROM ev")
    # writer owns the view but may not read the stream: neither may anyone reading through the view
    _refused(es, "SELECT n FROM ev_w", "permission denied for foreign table ev")
    es.execute_sql("RESET ROLE")
    es.execute_sql("GRANT SELECT ON ev TO writer")
    es.execute_sql("SET ROLE writer")
    es.execute_sql("INSERT INTO ev VALUES (4, 40)")
    assert result_rows(es, "SELECT n FROM ev_w") == [(1,)]
    es.execute_sql("GRANT SELECT ON ev_w TO reader")
    es.execute_sql("SET ROLE reader")
    assert result_rows(es, "SELECT n FROM ev_w") == [(1,)]
    _refused(es, "DROP VIEW ev_w", "must be owner of view ev_w")
    _refused(es, "DROP FOREIGN TABLE ev CASCADE", "must be owner of foreign table ev")


def test_stream_privileges_show_in_the_catalog(es):
    rows = result_rows(es, "SELECT relname, relacl FROM pg_class WHERE relname IN ('ev', 'ev_v') ORDER BY 1")
    assert rows == [("ev", ["postgres=arwdDxt/postgres", "writer=a/postgres"]),
                    ("ev_v", ["postgres=arwdDxt/postgres", "reader=r/postgres"])]


def test_system_views_show_what_the_role_may_see(es):
    names = "SELECT (SELECT string_agg(name, ',') FROM splitstream.streams), " \
            "(SELECT string_agg(name, ',') FROM splitstream.views)"
    assert result_rows(es, names) == [("ev", "ev_v")]
    es.execute_sql("SET ROLE reader")
    assert result_rows(es, names) == [(None, "ev_v")]
    es.execute_sql("SET ROLE writer")
    assert result_rows(es, names) == [("ev", None)]


def test_default_privileges_reach_streams_and_continuous_views(es):
    """ALTER DEFAULT PRIVILEGES ... ON TABLES covers streams and (continuous) views, as PostgreSQL's
    covers foreign tables and views (items sorted by grantee OID, as aclitemsort leaves them)."""
    es.execute_sql("ALTER DEFAULT PRIVILEGES FOR ROLE writer GRANT INSERT ON TABLES TO reader")
    es.execute_sql("ALTER DEFAULT PRIVILEGES FOR ROLE writer IN SCHEMA public GRANT SELECT ON TABLES TO reader")
    es.execute_sql("SET ROLE writer")
    es.execute_sql("CREATE FOREIGN TABLE ev2 (k int) SERVER stream")
    es.execute_sql("CREATE VIEW ev2_v AS SELECT k, count(*) AS n FROM ev2 GROUP BY k")
    es.execute_sql("RESET ROLE")
    assert result_rows(es, "SELECT relname, relacl::text FROM pg_class WHERE relname IN ('ev2', 'ev2_v') "
                           "ORDER BY 1") == [(name, "{reader=ar/writer,writer=arwdDxt/writer}") for name in ("ev2",
                                                                                                         "ev2_v")]
    es.execute_sql("SET ROLE reader")
    es.execute_sql("INSERT INTO ev2 VALUES (7)")
    assert result_rows(es, "SELECT k, n FROM ev2_v") == [(7, 1)]
