"""PipelineDB's management functions and settings (issue 17, scope 6),
against the answers PipelineDB's own regression tests expect
(src/test/regress/expected/cont_activate.out, ttl_expiration.out,
date_round.out), and across a restart: activity, TTLs and truncations are
logged, so a crash replays them at the point they happened."""
from __future__ import annotations

import datetime as dt

import psycopg
import pytest

from splitstream.executor.settings.pipelinedb import GUCS
from tests.support.restarts import connect, restarted, started_with


def _one(conn, sql, *args):
    return conn.execute(sql, args or None).fetchone()


def test_deactivated_view_ignores_input_until_activated(ss_conn, unique_name):
    s, v0, v1 = unique_name("s"), unique_name("v0"), unique_name("v1")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int) SERVER pipelinedb")
    ss_conn.execute(f"CREATE VIEW {v0} AS SELECT count(*) FROM {s}")
    ss_conn.execute(f"CREATE VIEW {v1} AS SELECT count(*) FROM {s}")
    fill = f"INSERT INTO {s} (x) SELECT generate_series(1, 100)"
    ss_conn.execute(fill)
    assert _one(ss_conn, "SELECT pipelinedb.deactivate(%s)", v0) == (True,)
    assert _one(ss_conn, "SELECT pipelinedb.deactivate(%s)", v0) == (False,)     # nothing changed
    ss_conn.execute(fill)
    assert (_one(ss_conn, f"SELECT * FROM {v0}"), _one(ss_conn, f"SELECT * FROM {v1}")) == ((100,), (200,))
    rows = ss_conn.execute("SELECT name, active, query FROM pipelinedb.get_views() WHERE name IN (%s, %s) "
                           "ORDER BY name", (v0, v1)).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(v0, False), (v1, True)] and "count" in rows[0][2].lower()
    assert _one(ss_conn, "SELECT pipelinedb.activate(%s)", v0) == (True,)
    ss_conn.execute(fill)
    assert (_one(ss_conn, f"SELECT * FROM {v0}"), _one(ss_conn, f"SELECT * FROM {v1}")) == ((200,), (300,))
    streams = ss_conn.execute("SELECT schema, name, queries FROM pipelinedb.get_streams() WHERE name = %s",
                              (s,)).fetchall()
    assert streams == [("public", s, sorted([v0, v1]))]


def test_truncate_set_ttl_and_errors(ss_conn, unique_name):
    s, v = unique_name("s"), unique_name("v")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int) SERVER pipelinedb")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT date_round(arrival_timestamp, '1 second') AS ts, x, count(*) "
                    f"FROM {s} GROUP BY 1, 2")
    ss_conn.execute(f"INSERT INTO {s} (x) VALUES (1), (2), (2)")
    assert _one(ss_conn, "SELECT pipelinedb.truncate_continuous_view(%s)", v) == ("",)      # void
    assert _one(ss_conn, f"SELECT count(*) FROM {v}") == (0,)
    ss_conn.execute(f"INSERT INTO {s} (x) VALUES (3)")
    assert _one(ss_conn, f"SELECT x, count FROM {v}") == (3, 1)
    assert _one(ss_conn, "SELECT * FROM pipelinedb.set_ttl(%s, '5 seconds', 'ts')", v) == (5, 1)
    assert _one(ss_conn, "SELECT pipelinedb.ttl_expire(%s)", v) == (0,)           # nothing is 5 s old yet
    assert _one(ss_conn, "SELECT * FROM pipelinedb.set_ttl(%s, NULL, NULL)", v) == (-1, None)
    errors = [("SELECT * FROM pipelinedb.set_ttl(%s, '1 day', 'x')", v, "22023",
               "ttl_column must refer to a timestamp or timestamptz column"),
              ("SELECT * FROM pipelinedb.set_ttl(%s, '1 day', 'nope')", v, "42703", 'column "nope" does not exist'),
              ("SELECT * FROM pipelinedb.set_ttl(%s, '1 day', 'ts')", "nope", "42704",
               'continuous view "nope" does not exist'),
              ("SELECT pipelinedb.ttl_expire(%s)", v, "22023", "does not have a TTL"),
              ("SELECT pipelinedb.truncate_continuous_view(%s)", s, "42704", "does not exist"),
              ("SELECT pipelinedb.insert_into_stream()", None, "0A000", "can only be called as triggers")]
    for sql, arg, state, text in errors:
        with pytest.raises(psycopg.Error) as e:
            ss_conn.execute(sql, (arg,) if arg is not None else None)
        assert e.value.sqlstate == state and text in str(e.value), sql


def test_date_round_as_pipelinedb(ss_conn):
    # date_round.out: rounded down to a multiple of the interval counted from 2000-01-01
    row = _one(ss_conn, "SELECT date_round('2015-06-05 12:34:56.789+00', '1 minute'), "
                        "date_round('2015-06-05 12:34:56.789+00', '15 minutes'), "
                        "date_round('2015-06-05 12:34:56.789+00', '1 day'), "
                        "date_round(NULL::timestamptz, '1 day'), date_round('2015-06-05 12:34:56+00', NULL)")
    utc = dt.timezone.utc
    assert row == (dt.datetime(2015, 6, 5, 12, 34, tzinfo=utc), dt.datetime(2015, 6, 5, 12, 30, tzinfo=utc),
                   dt.datetime(2015, 6, 5, tzinfo=utc), None, dt.datetime(2015, 6, 5, 12, 34, 56, tzinfo=utc))
    assert _one(ss_conn, "SELECT pipelinedb.version() LIKE 'PipelineDB%'") == (True,)


@pytest.mark.parametrize("name", sorted(GUCS))
def test_every_pipelinedb_setting_is_honoured_or_noticed(ss_server, name):
    """SET keeps the value (SHOW), RESET restores PipelineDB's default, and a
    setting splitstream does not honour says why in a NOTICE: never silent."""
    g = GUCS[name]
    value = {"int": str(int(g.lo) + 1 if g.hi > g.lo + 1 else int(g.lo)), "real": "10", "bool": "off",
             "enum": "sync_commit", "string": ""}[g.kind]
    notices: list[str] = []
    with connect(ss_server) as conn:
        conn.add_notice_handler(lambda d: notices.append(d.message_primary))
        default = _one(conn, f"SHOW pipelinedb.{name}")[0]
        conn.execute(f"SET pipelinedb.{name} = '{value}'")
        shown = _one(conn, f"SHOW pipelinedb.{name}")[0]
        assert shown.rstrip("kBms") == value
        assert bool(notices) == bool(g.why_not), notices
        conn.execute(f"RESET pipelinedb.{name}")
        assert _one(conn, f"SHOW pipelinedb.{name}") == (default,)
        notices.clear()
        conn.execute(f"SELECT set_config('pipelinedb.{name}', '{value}', false)")
        assert bool(notices) == bool(g.why_not), notices
        conn.execute(f"RESET pipelinedb.{name}")
        if g.kind in ("int", "real"):
            with pytest.raises(psycopg.Error) as e:
                conn.execute(f"SET pipelinedb.{name} = {int(g.hi) + 1 if g.kind == 'int' else g.hi + 1}")
            assert e.value.sqlstate == "22023"


def test_honoured_settings(ss_conn, unique_name):
    s, w, off = unique_name("s"), unique_name("w"), unique_name("off")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int) SERVER pipelinedb")
    ss_conn.execute("SET pipelinedb.sliding_window_step_factor = 10")
    ss_conn.execute(f"CREATE VIEW {w} WITH (sw = '1 minute') AS SELECT count(*) FROM {s}")
    ss_conn.execute("SET pipelinedb.continuous_queries_enabled = off")
    ss_conn.execute(f"CREATE VIEW {off} AS SELECT count(*) FROM {s}")
    ss_conn.execute("RESET pipelinedb.continuous_queries_enabled")
    ss_conn.execute(f"INSERT INTO {s} (x) VALUES (1)")
    assert _one(ss_conn, f"SELECT * FROM {off}") == (0,)
    assert _one(ss_conn, "SELECT active FROM pipelinedb.get_views() WHERE name = %s", off) == (False,)
    # the pane of a 1-minute window at step_factor 10 is 6 seconds wide
    window = _one(ss_conn, 'SELECT "window" FROM splitstream.views WHERE name = %s', w)[0]
    assert "6" in str(window), window
    # stream_targets feeds only the named views (tests/integration/test_stream_targets.py)
    ss_conn.execute(f"SET pipelinedb.stream_targets = '{off}'")
    ss_conn.execute(f"SELECT pipelinedb.activate('{off}')")
    ss_conn.execute(f"INSERT INTO {s} (x) VALUES (2)")
    ss_conn.execute("RESET pipelinedb.stream_targets")
    assert _one(ss_conn, f"SELECT * FROM {off}") == (1,)
    assert _one(ss_conn, f"SELECT sum(count) FROM {w}") == (1,)


@pytest.mark.parametrize("crash", [False, True])
def test_management_survives_restart(ss_server_factory, crash):
    server = started_with(
        ss_server_factory(),
        "CREATE FOREIGN TABLE s (x int) SERVER pipelinedb",
        "CREATE VIEW a AS SELECT count(*) FROM s",
        "CREATE VIEW t AS SELECT x, count(*) FROM s GROUP BY x",
        "INSERT INTO s (x) VALUES (1), (2)",
        "SELECT pipelinedb.deactivate('a')",
        "INSERT INTO s (x) VALUES (3)",          # a ignores it
        "SELECT pipelinedb.truncate_continuous_view('t')",
        "INSERT INTO s (x) VALUES (4)",
        "SELECT pipelinedb.activate('a')",
        "INSERT INTO s (x) VALUES (5)",
    )
    with connect(server) as c:
        before = (_one(c, "SELECT * FROM a"), c.execute("SELECT x, count FROM t ORDER BY x").fetchall())
    assert before == ((3,), [(4, 1), (5, 1)])
    with restarted(server, crash=crash) as c:
        assert (_one(c, "SELECT * FROM a"), c.execute("SELECT x, count FROM t ORDER BY x").fetchall()) == before
        assert c.execute("SELECT name, active FROM pipelinedb.get_views() ORDER BY name").fetchall() == \
            [("a", True), ("t", True)]

