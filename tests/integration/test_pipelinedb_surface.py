"""The README's PipelineDB claim, checked: PipelineDB's documented DDL and
queries, taken from its regression tests (pipelinedb/pipelinedb,
src/test/regress/sql/*.sql with the answers of expected/*.out), run
unchanged through the real server.

Each :class:`Case` is one script: statements, then (query, expected rows)
checks, or the SQLSTATE a statement must fail with where splitstream
differs (README: *PipelineDB*).  ``{p}`` in a script is replaced by a
unique prefix, so cases share one server.  To add a case, append to CASES.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import psycopg
import pytest


@dataclass
class Case:
    name: str
    setup: list[str]
    checks: list[tuple[str, list[tuple]]] = field(default_factory=list)
    #: (statement, SQLSTATE) that must fail: where splitstream differs, or PipelineDB refuses too
    refused: list[tuple[str, str]] = field(default_factory=list)


CASES = [
    Case("extension and server", [
        "CREATE EXTENSION IF NOT EXISTS pipelinedb",
        "CREATE FOREIGN TABLE {p}s (x int) SERVER pipelinedb",
        "CREATE VIEW {p}v WITH (action = materialize) AS SELECT count(*) FROM {p}s",
        "INSERT INTO {p}s (x) VALUES (1), (2)",
    ], [("SELECT * FROM {p}v", [(2,)])],
        # as PipelineDB: action=materialize over tables is an error
        [("CREATE VIEW {p}bad WITH (action = materialize) AS SELECT 1", "0A000")]),
    Case("cont_sum: integer sums by group", [
        "CREATE FOREIGN TABLE {p}s (k text, v int8) SERVER pipelinedb",
        "CREATE VIEW {p}i8 AS SELECT k::text, SUM(v::int8) FROM {p}s GROUP BY k",
        "CREATE VIEW {p}i2 AS SELECT k::text, SUM(v::int2) FROM {p}s GROUP BY k",
        "INSERT INTO {p}s (k, v) VALUES ('x', 10), ('x', 10), ('x', 10)",
        "INSERT INTO {p}s (k, v) VALUES ('y', 10), ('y', 10), ('y', 10)",
        "INSERT INTO {p}s (k, v) VALUES ('x', 1), ('x', 2), ('x', 3)",
        "INSERT INTO {p}s (k, v) VALUES ('y', 10), ('y', 10), ('z', 10)",
    ], [("SELECT * FROM {p}i8 ORDER BY k", [("x", 36), ("y", 50), ("z", 10)]),
        ("SELECT * FROM {p}i2 ORDER BY k", [("x", 36), ("y", 50), ("z", 10)])]),
    Case("cont_count and avg", [
        "CREATE FOREIGN TABLE {p}s (k text, v int) SERVER pipelinedb",
        "CREATE VIEW {p}v AS SELECT k, count(*), count(DISTINCT v) AS d, avg(v) FROM {p}s GROUP BY k",
        "INSERT INTO {p}s (k, v) VALUES ('a', 1), ('a', 1), ('a', 4), ('b', 2)",
    ], [("SELECT k, count, d, avg::float8 FROM {p}v ORDER BY k", [("a", 3, 2, 2.0), ("b", 1, 1, 2.0)])]),
    Case("sliding window: sw and the arrival_timestamp filter", [
        "CREATE FOREIGN TABLE {p}s (x int) SERVER pipelinedb",
        "CREATE VIEW {p}sw WITH (sw = '1 hour') AS SELECT count(*) FROM {p}s",
        "CREATE VIEW {p}at AS SELECT count(*) FROM {p}s WHERE arrival_timestamp > clock_timestamp() - interval '1 hour'",
        "INSERT INTO {p}s (x) SELECT generate_series(1, 10)",
    ], [("SELECT * FROM {p}sw", [(10,)]), ("SELECT * FROM {p}at", [(10,)])],
        # ttl_expiration.sql: TTLs cannot be given with a sliding window
        [("CREATE VIEW {p}bad WITH (ttl = '1 day', ttl_column = 'ts', sw = '2 days') AS "
          "SELECT arrival_timestamp AS ts, count(*) FROM {p}s GROUP BY 1", "22023")]),
    Case("ttl and set_ttl", [
        "CREATE FOREIGN TABLE {p}s (x int) SERVER pipelinedb",
        "CREATE VIEW {p}t WITH (ttl = '1 month', ttl_column = 'ts') AS "
        "SELECT date_round(arrival_timestamp, '1 minute') AS ts, x, count(*) FROM {p}s GROUP BY 1, 2",
        "INSERT INTO {p}s (x) VALUES (0), (1), (2)",
    ], [("SELECT x, count FROM {p}t ORDER BY x", [(0, 1), (1, 1), (2, 1)]),
        ("SELECT * FROM pipelinedb.set_ttl('{p}t', '5 seconds', 'ts')", [(5, 1)]),
        ("SELECT 0 * pipelinedb.ttl_expire('{p}t')", [(0,)])],
        [("SELECT * FROM pipelinedb.set_ttl('{p}t', '1 day', 'x')", "22023")]),
    Case("cont_activate", [
        "CREATE FOREIGN TABLE {p}s (x int) SERVER pipelinedb",
        "CREATE VIEW {p}v0 AS SELECT count(*) FROM {p}s",
        "INSERT INTO {p}s (x) SELECT generate_series(1, 100) AS x",
        "SELECT pipelinedb.deactivate('{p}v0')",
        "INSERT INTO {p}s (x) SELECT generate_series(1, 100) AS x",
        "SELECT pipelinedb.activate('{p}v0')",
        "INSERT INTO {p}s (x) SELECT generate_series(1, 100) AS x",
    ], [("SELECT * FROM {p}v0", [(200,)])]),
    Case("get_streams and get_views", [
        "CREATE FOREIGN TABLE {p}s (x int) SERVER pipelinedb",
        "CREATE VIEW {p}v AS SELECT x, count(*) FROM {p}s GROUP BY x",
    ], [("SELECT schema, name, queries FROM pipelinedb.get_streams() WHERE name = '{p}s'",
         [("public", "{p}s", ["{p}v"])]),
        ("SELECT schema, name, active FROM pipelinedb.get_views() WHERE name = '{p}v'",
         [("public", "{p}v", True)]),
        ("SELECT schema, name, active FROM pipelinedb.views WHERE name = '{p}v'", [("public", "{p}v", True)])]),
    Case("truncate_continuous_view", [
        "CREATE FOREIGN TABLE {p}s (x int) SERVER pipelinedb",
        "CREATE VIEW {p}v AS SELECT count(*) FROM {p}s",
        "INSERT INTO {p}s (x) VALUES (1)",
        "SELECT pipelinedb.truncate_continuous_view('{p}v')",
        "INSERT INTO {p}s (x) VALUES (1), (2)",
    ], [("SELECT * FROM {p}v", [(2,)])]),
    Case("hll and t-digest sketches", [
        "CREATE FOREIGN TABLE {p}s (x int) SERVER pipelinedb",
        "CREATE VIEW {p}v AS SELECT hll_agg(x) AS h, dist_agg(x) AS d FROM {p}s",
        "INSERT INTO {p}s (x) SELECT i % 100 FROM generate_series(1, 1000) AS i",
    ], [("SELECT abs(hll_cardinality(h) - 100) < 5, abs(dist_quantile(d, 0.5) - 49.5) < 3 FROM {p}v",
         [(True, True)])]),
    Case("date_round.sql (its answers, printed in PST)", [
        "SET timezone = 'America/Los_Angeles'",
    ], [(f"SELECT (date_round(TIMESTAMP '{ts}', INTERVAL '{iv}') AT TIME ZONE 'America/Los_Angeles')::text", [(out,)])
        for ts, iv, out in [
            ("2001-02-16 20:38:40", "15 second", "2001-02-16 20:38:30"),
            ("2001-02-16 20:38:40", "10 minute", "2001-02-16 20:30:00"),
            ("2001-02-16 20:38:40", "3 hour", "2001-02-16 19:00:00"),
            ("2001-02-18 20:38:40", "5 day", "2001-02-18 16:00:00"),
            ("2001-02-16 20:38:40", "2 month", "2000-12-25 16:00:00"),
            ("2001-02-16 20:38:40", "7 year", "1999-12-31 16:00:00")]]
        + [("SELECT date_round(NULL, INTERVAL '5 minute')", [(None,)])]),
    Case("stream_targets.sql (1.0 spelling: pipelinedb.stream_targets)", [
        "CREATE FOREIGN TABLE {p}s (x int) SERVER pipelinedb",
        "CREATE VIEW {p}t0 AS SELECT COUNT(*) FROM {p}s",
        "CREATE VIEW {p}t1 AS SELECT COUNT(*) FROM {p}s",
        "CREATE VIEW {p}t2 AS SELECT COUNT(*) FROM {p}s",
        "INSERT INTO {p}s (x) VALUES (1)",
        'SET SESSION pipelinedb.stream_targets TO "{p}t1, {p}t2"',
        "INSERT INTO {p}s (x) VALUES (1)",
        "SET SESSION pipelinedb.stream_targets TO {p}t2",
        "INSERT INTO {p}s (x) VALUES (1)",
        "SET SESSION pipelinedb.stream_targets TO DEFAULT",
        "INSERT INTO {p}s (x) VALUES (1)",
    ], [("SELECT * FROM {p}t0", [(2,)]), ("SELECT * FROM {p}t1", [(3,)]), ("SELECT * FROM {p}t2", [(4,)])]),
    Case("settings", [
        "SET pipelinedb.stream_insert_level = sync_commit",
        "SET pipelinedb.num_combiners = 2",
    ], [("SHOW pipelinedb.num_combiners", [("2",)])],
        [("SET pipelinedb.stream_targets = '{p}v,'", "22023")]),
]


def _fill(text: str, p: str):
    return text.replace("{p}", p)


def _rows(rows, p):
    return [tuple(_fill(v, p) if isinstance(v, str) else [_fill(x, p) for x in v] if isinstance(v, list) else v
                  for v in r) for r in rows]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_pipelinedb_script_runs_unchanged(ss_conn, unique_name, case):
    p = unique_name("p") + "_"
    for sql in case.setup:
        ss_conn.execute(_fill(sql, p))
    for query, expected in case.checks:
        assert ss_conn.execute(_fill(query, p)).fetchall() == _rows(expected, p), query
    for sql, state in case.refused:
        with pytest.raises(psycopg.Error) as e:
            ss_conn.execute(_fill(sql, p))
        assert e.value.sqlstate == state, (sql, str(e.value))


@pytest.mark.parametrize("value, shown", [("262144", "256MB"), ("'512MB'", "512MB"), ("'8192kB'", "8MB"),
                                          ("10000", "10000kB"), ("'1GB'", "1GB")])
def test_pipelinedb_memory_parameters_read_units_and_show_as_postgresql(ss_conn, value, shown):
    """PipelineDB's *_mem parameters are GUC_UNIT_KB integers: any memory
    unit is read, SHOW prints the largest unit that divides the value."""
    ss_conn.execute(f"SET pipelinedb.batch_mem = {value}")
    assert ss_conn.execute("SHOW pipelinedb.batch_mem").fetchone()[0] == shown
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=r'100 kB is outside the valid range'):
        ss_conn.execute("SET pipelinedb.batch_mem = 100")
