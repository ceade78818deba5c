"""The README's Spark example (connectors/spark/examples/csv_to_splitstream)
runs on a server where the quickstart ran first: it has a stream of its own
(``spark_events``), so the quickstart's ``events`` -- other columns -- is
neither reused nor touched (issue 14: it used to collide with it)."""
from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest

from .conftest import _skip_reason


def test_csv_example_beside_the_quickstart(ss_server_factory, tmp_path):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    server = ss_server_factory()
    url = f"postgresql://postgres@{server.host}:{server.port}/postgres"
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE FOREIGN TABLE events (entity_id int, duration int, cost float8, ts timestamptz) SERVER stream")
        conn.execute("CREATE VIEW quick AS SELECT count(*) AS n FROM events")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    res = subprocess.run([sys.executable, "-m", "splitstream.connectors.spark.examples.csv_to_splitstream",
                          "--url", url, "--input", str(tmp_path / "in"), "--checkpoint", str(tmp_path / "ckpt"),
                          "--generate", "2", "--once"], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT sum(calls) FROM cost_by_entity").fetchone() == (2000,)   # 2 files x 1000 lines
        assert conn.execute("SELECT n FROM quick").fetchone() == (0,)
