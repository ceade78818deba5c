"""psql's \\d of a table with a dropped column (pg_attribute now lists the
dropped entry, which psql's query must leave out) prints what PostgreSQL 15
prints."""
from __future__ import annotations

import psycopg

from .conftest import psql


def test_describe_after_drop_column(ss_server, pg15, unique_name):
    t = unique_name("dropd")
    ddl = [f"CREATE TABLE {t} (a int PRIMARY KEY, b text DEFAULT 'x', c varchar(5) NOT NULL, d int)",
           f"CREATE INDEX ON {t} (d)", f"ALTER TABLE {t} DROP COLUMN b", f"ALTER TABLE {t} ADD COLUMN e text DEFAULT 'y'"]
    for server in (ss_server, pg15):
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            for stmt in ddl:
                conn.execute(stmt)
    try:
        ours, theirs = (psql(s.host, s.port, rf"\d {t}") for s in (ss_server, pg15))
        assert ours == theirs
    finally:
        for server in (ss_server, pg15):
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                conn.execute(f"DROP TABLE {t}")
