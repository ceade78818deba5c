"""splitstream.views (issue 5, observability): per continuous view its state
bytes, group count, queue length, refresh count and last refresh time, read
over the wire like any catalog view."""
from __future__ import annotations

import datetime as dt
import threading

from tests.support.engine import open_engine, plain_session

COLS = ("groups, state_bytes, bytes_per_group, rows_in, version, queued_batches, refreshes, last_refresh, "
        "buffer_bytes, streams")


def _row(cur, view: str) -> dict:
    cur.execute(f"SELECT {COLS} FROM splitstream.views WHERE name = %s", (view,))
    rows = cur.fetchall()
    assert len(rows) == 1, rows
    return dict(zip([c.strip() for c in COLS.split(",")], rows[0]))


def test_views_report_state_groups_and_refreshes(ss_conn, unique_name):
    cur = ss_conn.cursor()
    s, v = unique_name("obs_s"), unique_name("obs_v")
    cur.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
    cur.execute(f"CREATE VIEW {v} AS SELECT k, count(*) AS n, sum(x) AS total FROM {s} GROUP BY k")
    r = _row(cur, v)
    assert (r["groups"], r["rows_in"], r["queued_batches"], r["refreshes"], r["last_refresh"]) == (0, 0, 0, 0, None)
    assert r["streams"] == s

    before = dt.datetime.now(dt.timezone.utc)
    cur.execute(f"INSERT INTO {s} VALUES (1, 10), (2, 20), (2, 5), (3, 1)")
    cur.execute(f"SELECT * FROM {v}")
    assert sorted(cur.fetchall()) == [(1, 1, 10), (2, 2, 25), (3, 1, 1)]
    r = _row(cur, v)
    assert (r["groups"], r["rows_in"], r["refreshes"]) == (3, 4, 1)
    assert r["state_bytes"] > 0 and r["bytes_per_group"] == r["state_bytes"] / 3
    assert before - dt.timedelta(seconds=1) <= r["last_refresh"] <= dt.datetime.now(dt.timezone.utc)
    first = r["last_refresh"]

    # no new input: the stored result is returned, nothing is refreshed
    cur.execute(f"SELECT * FROM {v}")
    cur.fetchall()
    assert _row(cur, v)["refreshes"] == 1

    version = r["version"]
    cur.execute(f"INSERT INTO {s} VALUES (4, 1)")
    cur.execute(f"SELECT count(*) FROM {v}")
    assert cur.fetchone() == (4,)
    r = _row(cur, v)
    assert (r["groups"], r["rows_in"], r["refreshes"]) == (4, 5, 2)
    assert r["version"] > version and r["last_refresh"] >= first


def test_queued_batches_counts_inserts_waiting_for_a_reader(tmp_path):
    """Algorithm 4.3: an insert that finds the view locked (a reader merging)
    leaves its batch on the queue; the next holder of the lock drains it."""
    with open_engine(str(tmp_path / "data")) as eng:
        a = plain_session(eng)
        a.execute_sql("CREATE FOREIGN TABLE qs (k int) SERVER stream")
        a.execute_sql("CREATE VIEW qv AS SELECT k, count(*) FROM qs GROUP BY k")
        (cv,) = [c for c in eng.streams.views.values() if c.rel.name == "qv"]

        def queued() -> tuple:
            return a.execute_sql("SELECT queued_batches, rows_in FROM splitstream.views WHERE name = 'qv'").batch.rows()[0]

        with cv.lock:                                  # a reader in the middle of a merge
            for session, rows in ((a, "(1), (2), (2)"), (plain_session(eng), "(3)")):
                t = threading.Thread(target=session.execute_sql, args=(f"INSERT INTO qs VALUES {rows}",))
                t.start()
                t.join(10)
                assert not t.is_alive(), "the inserter must not wait for the reader"
        assert queued() == (2, 0)
        assert sorted(a.execute_sql("SELECT * FROM qv").batch.rows()) == [(1, 1), (2, 2), (3, 1)]
        assert queued() == (0, 4)
