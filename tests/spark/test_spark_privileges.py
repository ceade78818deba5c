"""The Spark connector under privileges (issue 20): a role without INSERT on
a stream can neither send it rows nor push partial states to its views;
both are refused with 42501 and nothing is applied.  A role granted INSERT
writes both ways."""
from __future__ import annotations

import psycopg
import pytest

from .test_spark import EVENTS_DDL, events_df

pytestmark = [pytest.mark.spark, pytest.mark.timeout(600)]

SUPER = "spark-super"


def _url(server, user: str, password: str) -> str:
    return f"postgresql://{user}:{password}@{server.host}:{server.port}/postgres"


def test_writes_need_insert_on_the_stream(spark, ss_server_factory):
    from splitstream.connectors.spark import write

    server = ss_server_factory(password=SUPER, extra_args=["--fsync", "off"])
    with psycopg.connect(host=server.host, port=server.port, user="postgres", password=SUPER, dbname="postgres",
                         autocommit=True) as c:
        c.execute(f"CREATE FOREIGN TABLE ev {EVENTS_DDL} SERVER stream")
        c.execute("CREATE VIEW ev_n AS SELECT region, count(*) AS n, sum(duration) AS d FROM ev GROUP BY region")
        c.execute("CREATE ROLE sp_reader LOGIN PASSWORD 'r-pw'")
        c.execute("CREATE ROLE sp_writer LOGIN PASSWORD 'w-pw'")
        c.execute("GRANT SELECT ON ev TO sp_reader")
        c.execute("GRANT INSERT ON ev TO sp_writer")

        def totals():
            return c.execute("SELECT coalesce(sum(n), 0), coalesce(sum(d), 0) FROM ev_n").fetchone()

        df = events_df(spark, 2000, parts=2)
        reader = _url(server, "sp_reader", "r-pw")
        for pushdown in (False, True):
            with pytest.raises(Exception) as ei:
                write(df, "ev", reader, pushdown=pushdown)
            text = str(ei.value)
            assert "42501" in text or "permission denied for foreign table ev" in text, text[-2000:]
            assert totals() == (0, 0)
        writer = _url(server, "sp_writer", "w-pw")
        assert write(df, "ev", writer).mode == "rows"
        assert write(df, "ev", writer, pushdown=True).mode == "pushdown"
        agg = df.selectExpr("count(*) as n", "sum(duration) as d").first()
        assert totals() == (2 * agg["n"], 2 * agg["d"])
