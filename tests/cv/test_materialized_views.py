"""CREATE MATERIALIZED VIEW (issue 15, scope 7).

Over tables it is PostgreSQL's: the rows of its query when created, again
after REFRESH, compared with PostgreSQL 15 step by step.  Over a stream it is
a continuous view listed as a materialized view (relkind 'm', pg_matviews,
``\\dm``); REFRESH has nothing to do and says so.  Both kinds survive a
restart, and the errors around them are PostgreSQL's.
"""
from __future__ import annotations

import psycopg
import pytest

from tests.support.restarts import restarted, started_with


def _notices(conn: psycopg.Connection) -> list[str]:
    out: list[str] = []
    conn.add_notice_handler(lambda d: out.append(d.message_primary or ""))
    return out


def _outcome(conn: psycopg.Connection, sql: str):
    """Rows, or (SQLSTATE, message, hint) of the error."""
    try:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else cur.statusmessage
    except psycopg.Error as e:
        return (e.sqlstate, e.diag.message_primary, e.diag.message_hint)


def test_matview_over_tables_as_postgres(pg_conn, ss_conn, unique_name):
    t, mv, v = unique_name("t"), unique_name("mv"), unique_name("v")
    steps = [
        f"CREATE TABLE {t} (k int, x numeric)",
        f"INSERT INTO {t} VALUES (1, 2), (1, 3), (2, 5)",
        f"CREATE MATERIALIZED VIEW {mv} AS SELECT k, sum(x) AS total FROM {t} GROUP BY k",
        f"SELECT * FROM {mv} ORDER BY k",
        f"INSERT INTO {t} VALUES (3, 7), (1, 1)",
        f"SELECT * FROM {mv} ORDER BY k",                 # still the snapshot
        f"REFRESH MATERIALIZED VIEW {mv}",
        f"SELECT * FROM {mv} ORDER BY k",                 # recomputed
        f"SELECT relkind FROM pg_class WHERE relname = '{mv}'",
        f"SELECT matviewname, ispopulated, definition FROM pg_matviews WHERE matviewname = '{mv}'",
        f"SELECT count(*) FROM pg_views WHERE viewname = '{mv}'",
        f"INSERT INTO {mv} VALUES (9, 9)",
        f"DELETE FROM {mv}",
        f"UPDATE {mv} SET total = 0",
        f"TRUNCATE {mv}",
        f"ALTER MATERIALIZED VIEW {mv} RENAME TO {mv}_r",
        f"ALTER TABLE {mv}_r RENAME TO {mv}",
        f"ALTER MATERIALIZED VIEW {v} RENAME TO {v}_r",
        f"COMMENT ON MATERIALIZED VIEW {mv} IS 'snapshot'",
        f"SELECT obj_description('{mv}'::regclass, 'pg_class')",
        f"ALTER TABLE {mv} ADD COLUMN extra int",
        f"ALTER TABLE {mv} DROP COLUMN k",
        f"REFRESH MATERIALIZED VIEW CONCURRENTLY {mv}",
        f"DROP VIEW {mv}",
        f"CREATE UNIQUE INDEX {mv}_k ON {mv} (k)",
        f"INSERT INTO {t} VALUES (4, 4)",
        f"REFRESH MATERIALIZED VIEW CONCURRENTLY {mv}",
        f"SELECT * FROM {mv} ORDER BY k",
        f"CREATE VIEW {v} AS SELECT k FROM {t}",
        f"DROP MATERIALIZED VIEW {v}",
        f"REFRESH MATERIALIZED VIEW {v}",
        f"CREATE OR REPLACE VIEW {mv} AS SELECT 1 AS k",
        f"CREATE MATERIALIZED VIEW IF NOT EXISTS {mv} AS SELECT 1 AS k",
        f"DROP TABLE {t}",
        f"DROP MATERIALIZED VIEW {mv}",
        f"DROP MATERIALIZED VIEW IF EXISTS {mv}",
        f"DROP TABLE {t} CASCADE",
    ]
    for sql in steps:
        assert _outcome(ss_conn, sql) == _outcome(pg_conn, sql), sql


def test_create_matview_tag_counts_rows(pg_conn, ss_conn, unique_name):
    t, mv = unique_name("t"), unique_name("mv")
    for conn in (pg_conn, ss_conn):
        conn.execute(f"CREATE TABLE {t} (k int)")
        conn.execute(f"INSERT INTO {t} SELECT generate_series(1, 4)")
    tags = [conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS SELECT k FROM {t} WITH DATA").statusmessage
            for conn in (pg_conn, ss_conn)]
    assert tags[0] == tags[1] == "SELECT 4"
    for conn in (pg_conn, ss_conn):
        conn.execute(f"DROP TABLE {t} CASCADE")


def test_continuous_matview(ss_conn, unique_name):
    s, mv = unique_name("s"), unique_name("mv")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (url text, n int) SERVER stream")
    assert ss_conn.execute(f"CREATE MATERIALIZED VIEW {mv} AS SELECT url, count(*) AS hits FROM {s} GROUP BY url"
                           ).statusmessage == "SELECT 0"
    ss_conn.execute(f"INSERT INTO {s} VALUES ('a', 1), ('b', 2), ('a', 3)")
    assert ss_conn.execute(f"SELECT * FROM {mv} ORDER BY url").fetchall() == [("a", 2), ("b", 1)]
    assert ss_conn.execute(f"SELECT relkind FROM pg_class WHERE relname = '{mv}'").fetchone() == ("m",)
    assert ss_conn.execute(f"SELECT matviewname FROM pg_matviews WHERE matviewname = '{mv}'").fetchone() == (mv,)
    notices = _notices(ss_conn)
    for refresh in (f"REFRESH MATERIALIZED VIEW {mv}", f"REFRESH MATERIALIZED VIEW CONCURRENTLY {mv}"):
        assert ss_conn.execute(refresh).statusmessage == "REFRESH MATERIALIZED VIEW"
    assert notices == [f'materialized view "{mv}" reads a stream and is maintained continuously: '
                       "REFRESH has nothing to do"] * 2
    ss_conn.execute(f"INSERT INTO {s} VALUES ('b', 4)")     # still maintained after a REFRESH
    assert ss_conn.execute(f"SELECT * FROM {mv} ORDER BY url").fetchall() == [("a", 2), ("b", 2)]
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        ss_conn.execute(f"REFRESH MATERIALIZED VIEW {mv} WITH NO DATA")
    assert e.value.diag.message_hint
    with pytest.raises(psycopg.errors.WrongObjectType) as e2:
        ss_conn.execute(f"DROP VIEW {mv}")
    assert e2.value.diag.message_hint == "Use DROP MATERIALIZED VIEW to remove a materialized view."
    with pytest.raises(psycopg.errors.DependentObjectsStillExist):
        ss_conn.execute(f"DROP FOREIGN TABLE {s}")
    ss_conn.execute(f"DROP MATERIALIZED VIEW {mv}")
    ss_conn.execute(f"DROP FOREIGN TABLE {s}")


def test_create_matview_with_no_data_refused(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (k int)")
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        ss_conn.execute(f"CREATE MATERIALIZED VIEW {unique_name('mv')} AS SELECT k FROM {t} WITH NO DATA")
    assert "WITH DATA" in (e.value.diag.message_hint or "")
    ss_conn.execute(f"DROP TABLE {t}")


def test_matviews_survive_restart(ss_server_factory):
    server = started_with(
        ss_server_factory(),
        "CREATE TABLE t (k int)",
        "INSERT INTO t VALUES (1), (2)",
        "CREATE MATERIALIZED VIEW snap AS SELECT count(*) AS n FROM t",
        "INSERT INTO t VALUES (3)",
        "CREATE FOREIGN TABLE s (k int) SERVER stream",
        "CREATE MATERIALIZED VIEW live AS SELECT count(*) AS n FROM s",
        "INSERT INTO s VALUES (1), (2), (3)",
        "CHECKPOINT",
        "INSERT INTO s VALUES (4)",        # after the checkpoint: replayed from the WAL
    )
    with restarted(server, crash=True) as c:
        kinds = c.execute("SELECT relname, relkind FROM pg_class WHERE relname IN ('snap', 'live') ORDER BY 1").fetchall()
        assert kinds == [("live", "m"), ("snap", "m")]
        assert c.execute("SELECT n FROM snap").fetchone() == (2,)
        assert c.execute("SELECT n FROM live").fetchone() == (4,)
        c.execute("REFRESH MATERIALIZED VIEW snap")
        assert c.execute("SELECT n FROM snap").fetchone() == (3,)
