"""A continuous view's insert-time expressions run in the TimeZone it was
created in, whichever session inserts, and replay gives the same state:
compared with the same query over a table read in the creator's zone."""
from __future__ import annotations

import psycopg

INSERTS = ["2020-03-08 04:30:00+00", "2020-03-08 05:30:00+00", "2020-03-08 06:30:00+00",
           "2020-11-01 04:59:00+00", "2020-11-01 05:01:00+00", "2020-11-01 06:30:00+00"]


def test_day_buckets_follow_the_creators_zone(ss_server_factory):
    srv = ss_server_factory()
    with psycopg.connect(srv.dsn, autocommit=True) as ny:
        ny.execute("SET TimeZone = 'America/New_York'")
        ny.execute("CREATE FOREIGN TABLE tzs (ts timestamptz, x int) SERVER stream")
        ny.execute("CREATE TABLE tzt (ts timestamptz, x int)")
        ny.execute("CREATE VIEW tzv AS SELECT date_trunc('day', ts) AS day, count(*) AS n, sum(x) AS sx "
                   "FROM tzs GROUP BY date_trunc('day', ts)")
        for i, (zone, ts) in enumerate(zip(["UTC", "Europe/Berlin", "Asia/Kolkata"] * 2, INSERTS)):
            with psycopg.connect(srv.dsn, autocommit=True) as other:
                other.execute(f"SET TimeZone = '{zone}'")
                other.execute("INSERT INTO tzs VALUES (%s, %s)", (ts, i))
                other.execute("INSERT INTO tzt VALUES (%s, %s)", (ts, i))
        oracle = ny.execute("SELECT date_trunc('day', ts), count(*), sum(x) FROM tzt GROUP BY 1 ORDER BY 1").fetchall()
        assert ny.execute("SELECT * FROM tzv ORDER BY day").fetchall() == oracle
        assert len(oracle) == 3          # New York days (UTC would give 2)
    srv.restart(crash=True)
    with psycopg.connect(srv.dsn, autocommit=True) as ny:
        ny.execute("SET TimeZone = 'America/New_York'")
        assert ny.execute("SELECT * FROM tzv ORDER BY day").fetchall() == oracle
