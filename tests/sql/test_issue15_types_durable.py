"""Issue 15: values of the new and fixed types -- timetz (with its
PostgreSQL ordering), infinite dates and timestamps, time(p) -- and the
list states of JSON and hypothetical-set aggregates in a continuous view
come back the same after a restart, from the WAL and from a checkpoint."""
from __future__ import annotations

import psycopg
import pytest

TABLE_ROWS = ("('10:00+02', 'infinity', '-infinity', '10:00:00.12'), ('09:00+01', '2020-01-01', '2020-01-01 10:00', NULL),"
              " (NULL, '-infinity', 'infinity', '23:59:59.99')")
READS = ["SELECT a::text, b::text, c::text, d::text FROM dur_t ORDER BY a NULLS LAST, b",
         "SELECT a FROM dur_t WHERE a = '08:00+00'",                   # equal instants, other zones: not equal
         "SELECT k, a::text, o::text, r, p FROM dur_v ORDER BY k"]


def _snapshot(conn: psycopg.Connection) -> list:
    return [conn.execute(sql).fetchall() for sql in READS]


@pytest.mark.parametrize("checkpoint", [False, True])
def test_values_and_states_survive_a_restart(checkpoint, ss_server_factory):
    server = ss_server_factory()
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE dur_t (a timetz, b date, c timestamptz, d time(2))")
        conn.execute(f"INSERT INTO dur_t VALUES {TABLE_ROWS}")
        conn.execute("CREATE FOREIGN TABLE dur_s (k int, x int, tag text) SERVER stream")
        conn.execute("CREATE VIEW dur_v AS SELECT k, json_agg(x ORDER BY x) AS a, jsonb_object_agg(tag, x) AS o,"
                     " rank(3) WITHIN GROUP (ORDER BY x) AS r, percentile_disc(ARRAY[0.5, 1]) WITHIN GROUP (ORDER BY x) AS p"
                     " FROM dur_s GROUP BY k")
        conn.execute("INSERT INTO dur_s VALUES (1, 5, 'a'), (1, 2, 'b'), (2, NULL, 'c')")
        conn.execute("INSERT INTO dur_s VALUES (1, 3, 'c'), (2, 7, 'd')")
        before = _snapshot(conn)
        if checkpoint:
            conn.execute("CHECKPOINT")
    assert before[1] == []
    assert before[2][0][1] == "[2, 3, 5]" and before[2][0][3] == 2
    server.restart()
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert _snapshot(conn) == before
        conn.execute("INSERT INTO dur_s VALUES (1, 1, 'e')")          # the states keep growing after replay
        row = conn.execute("SELECT a::text, r FROM dur_v WHERE k = 1").fetchone()
        assert row == ("[1, 2, 3, 5]", 3)
