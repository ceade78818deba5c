"""TUMBLE/HOP views pushed down to Spark (issue 16): executors compute each
row's panes and ship per-pane partial states; the views equal the same views
fed the rows (which tests/cv/test_time_windows.py checks against DuckDB)."""
from __future__ import annotations

import pytest

from tests.spark.test_spark import EVENTS_DDL, rows, write_rows_and_pushdown

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

WINDOWS = [
    "TUMBLE({s}, ts, INTERVAL '5 seconds', INTERVAL '1 second')",
    "HOP({s}, ts, INTERVAL '2 seconds', INTERVAL '6 seconds')",
    "HOP({s}, ts, INTERVAL '3 seconds', INTERVAL '7 seconds')",
]


def test_windowed_pushdown_equals_rows(spark, ss_server, ss_conn, unique_name):
    from splitstream.connectors.spark import describe

    streams = {"rows": unique_name("w_rows"), "push": unique_name("w_push")}
    views: dict = {k: [] for k in streams}
    for k, s in streams.items():
        ss_conn.execute(f"CREATE FOREIGN TABLE {s} {EVENTS_DDL} SERVER stream")
        for i, w in enumerate(WINDOWS):
            name = f"{s}_w{i}"
            ss_conn.execute(f"CREATE VIEW {name} AS SELECT window_start, window_end, region, count(*) AS n, "
                            f"sum(duration) AS d, min(cost) AS lo, max(cost) AS hi FROM {w.format(s=s)} "
                            "GROUP BY window_start, window_end, region")
            views[k].append(name)
        ss_conn.execute(f"CREATE VIEW {s}_one AS SELECT window_start, count(*) AS n FROM "
                        f"{WINDOWS[0].format(s=s)} GROUP BY window_start")
        views[k].append(f"{s}_one")
    desc = describe(ss_server.url, streams["push"])
    assert desc["pushable"], desc["reason"]
    write_rows_and_pushdown(spark, ss_server.url, streams)
    for a, b in zip(views["rows"], views["push"]):
        got = rows(ss_conn, f"SELECT * FROM {b}")
        assert got and got == rows(ss_conn, f"SELECT * FROM {a}"), a
