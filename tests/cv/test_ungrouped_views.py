"""Ungrouped continuous views (issue 17 scope 3): ``CREATE VIEW v AS SELECT
x, y FROM s WHERE ...`` keeps every matching row, as PipelineDB does.

The oracle is a table holding the same rows: the view equals the filtered
(and projected) table as a multiset after every batch, on both backends,
after TTL expiry (test clock) and after kill -9.  ORDER BY is refused as
PipelineDB refuses it; LIMIT/OFFSET apply at read over the kept rows; a view
with no TTL or window says at CREATE that it grows without bound."""
from __future__ import annotations

import datetime as dt
import random
from collections import Counter

import psycopg
import pytest

from tests.support.servers import SplitstreamServer

COLS = "k int, x float8, s text, ts timestamptz"
#: (the view's select list and WHERE, over the stream; the same over the table)
VIEWS = [
    "k, x FROM {} WHERE k > 2",
    "s, x * 2 AS x2, k FROM {} WHERE x IS NULL OR x < 10",
    "* FROM {}",
    "k FROM {} WHERE s LIKE 'a%'",
]
T0 = dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)


def _rows(rng: random.Random, n: int, t0: dt.datetime = T0) -> list[tuple]:
    def maybe(v):
        return None if rng.random() < 0.2 else v
    return [(maybe(rng.randrange(6)), maybe(rng.randrange(-20, 40) / 2), maybe(rng.choice(["a", "ab", "b", "ba", ""])),
             t0 + dt.timedelta(seconds=rng.randrange(600))) for _ in range(n)]


def _insert(conn, s: str, t: str, rows: list[tuple]) -> None:
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {s} VALUES (%s, %s, %s, %s)", rows)
        cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s, %s)", rows)


def _multiset(conn, sql: str, params=()) -> Counter:
    return Counter(conn.execute(sql, params or None).fetchall())


def _make(conn, unique_name, n_views: int = len(VIEWS)) -> tuple[str, str, list[tuple[str, str]]]:
    s, t = unique_name("s"), unique_name("t")
    conn.execute(f"CREATE FOREIGN TABLE {s} ({COLS}) SERVER pipelinedb")
    conn.execute(f"CREATE TABLE {t} ({COLS})")
    views = []
    for body in VIEWS[:n_views]:
        v = unique_name("v")
        conn.execute(f"CREATE VIEW {v} AS SELECT {body.format(s)}")
        views.append((v, f"SELECT {body.format(t)}"))
    return s, t, views


def _check(conn, views: list[tuple[str, str]]) -> None:
    for v, oracle in views:
        assert _multiset(conn, f"SELECT * FROM {v}") == _multiset(conn, oracle), v


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_ungrouped_view_equals_the_filtered_table(ss_conn, unique_name, backend):
    ss_conn.execute(f"SET executor_backend = {backend}")
    s, t, views = _make(ss_conn, unique_name)
    rng = random.Random(23)
    for size in (1, 50, 400, 3):
        _insert(ss_conn, s, t, _rows(rng, size))
        _check(ss_conn, views)
    # queried like a table: aggregates, filters and joins over the kept rows
    v, _ = views[0]
    assert ss_conn.execute(f"SELECT k, count(*), sum(x) FROM {v} WHERE x > 0 GROUP BY k ORDER BY k").fetchall() == \
        ss_conn.execute(f"SELECT k, count(*), sum(x) FROM {t} WHERE k > 2 AND x > 0 GROUP BY k ORDER BY k").fetchall()


def test_create_says_the_view_grows_without_bound(ss_conn, unique_name):
    s = unique_name("s")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} ({COLS}) SERVER pipelinedb")
    notices: list = []
    ss_conn.add_notice_handler(lambda d: notices.append((d.severity, d.message_primary)))   # read while it lives
    v = unique_name('v')
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT k FROM {s}")
    assert [sev for sev, msg in notices if "grows without bound" in msg] == ["NOTICE"], notices
    notices.clear()
    # switching it off and on redefines its options, and says nothing again
    ss_conn.execute(f"SELECT pipelinedb.deactivate('{v}')")
    ss_conn.execute(f"SELECT pipelinedb.activate('{v}')")
    assert notices == []
    ss_conn.execute(f"CREATE VIEW {unique_name('v')} WITH (ttl = '1 hour', ttl_column = 'ts') AS SELECT k, ts FROM {s}")
    ss_conn.execute(f"CREATE VIEW {unique_name('v')} AS SELECT k, count(*) FROM {s} GROUP BY k")
    assert notices == []


def test_order_by_is_refused_and_limit_applies_at_read(ss_conn, unique_name):
    s, t = unique_name("s"), unique_name("t")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} ({COLS}) SERVER pipelinedb")
    ss_conn.execute(f"CREATE TABLE {t} ({COLS})")
    for order in ("ORDER BY k", "ORDER BY k LIMIT 3"):
        with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
            ss_conn.execute(f"CREATE VIEW {unique_name('v')} AS SELECT k FROM {s} {order}")
        assert e.value.diag.message_primary == "continuous queries don't support ORDER BY"
    v = unique_name("v")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT k, x FROM {s} WHERE k IS NOT NULL LIMIT 5 OFFSET 2")
    _insert(ss_conn, s, t, [(1, 0.5, "a", T0)])
    assert ss_conn.execute(f"SELECT * FROM {v}").fetchall() == []        # OFFSET 2 of one row
    _insert(ss_conn, s, t, _rows(random.Random(2), 100))
    got = _multiset(ss_conn, f"SELECT * FROM {v}")
    every = _multiset(ss_conn, f"SELECT k, x FROM {t} WHERE k IS NOT NULL")
    assert sum(got.values()) == 5 and not got - every


def test_ungrouped_view_is_indexable_and_combine_refuses_its_columns(ss_conn, unique_name):
    s, t, views = _make(ss_conn, unique_name, 1)
    v, _ = views[0]
    ss_conn.execute(f"CREATE INDEX {v}_k ON {v} (k)")
    _insert(ss_conn, s, t, _rows(random.Random(4), 200))
    _check(ss_conn, views)
    assert ss_conn.execute("SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = %s::regclass", (v,)).fetchall() \
        == [(f"{v}_k",)]
    with pytest.raises(psycopg.errors.WrongObjectType):
        ss_conn.execute(f"SELECT combine(x) FROM {v}")


def test_ttl_and_sliding_window_expire_rows(tmp_path, unique_name):
    """``ttl``/``ttl_column`` drop rows whose time is older than the TTL at the
    clock; ``sw`` keeps the rows that arrived within the window (ticks fall on
    pane edges: panes are sw × 5% = 3 s wide)."""
    server = SplitstreamServer(tmp_path / "data", env={"SPLITSTREAM_TEST_CLOCK": "1"})
    server.start(timeout=60)
    try:
        with psycopg.connect(server.dsn, autocommit=True) as c:
            c.execute("SELECT splitstream_test_clock(%s)", (T0,))
            s, t, v, w = unique_name("s"), unique_name("t"), unique_name("v"), unique_name("w")
            c.execute(f"CREATE FOREIGN TABLE {s} ({COLS}) SERVER pipelinedb")
            c.execute(f"CREATE TABLE {t} ({COLS})")
            c.execute(f"CREATE VIEW {v} WITH (ttl = '2 minutes', ttl_column = 'ts') AS SELECT k, ts FROM {s} WHERE k > 1")
            c.execute(f"CREATE VIEW {w} WITH (sw = '1 minute') AS SELECT k, x FROM {s} WHERE k > 1")
            rng = random.Random(8)
            now, arrived = T0, []
            for step in range(12):
                rows = _rows(rng, 40, now - dt.timedelta(minutes=4))      # some already older than the TTL
                rows += [(3, None, None, None)]                            # a NULL time never expires
                _insert(c, s, t, rows)
                arrived += [(now, r) for r in rows]
                now += dt.timedelta(seconds=36)
                c.execute("SELECT splitstream_test_clock(%s)", (now,))
                want = _multiset(c, f"SELECT k, ts FROM {t} WHERE k > 1 AND (ts > %s OR ts IS NULL)",
                                 (now - dt.timedelta(minutes=2),))
                assert _multiset(c, f"SELECT * FROM {v}") == want, step
                live = Counter((r[0], r[1]) for at, r in arrived
                               if at > now - dt.timedelta(minutes=1) and r[0] is not None and r[0] > 1)
                assert _multiset(c, f"SELECT * FROM {w}") == live, step
            assert sum(want.values()) < c.execute(f"SELECT count(*) FROM {t} WHERE k > 1").fetchone()[0]
    finally:
        server.stop()


def test_rows_survive_kill(ss_server_factory, unique_name):
    server = ss_server_factory()
    rng = random.Random(31)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        s, t, views = _make(c, unique_name)
        _insert(c, s, t, _rows(rng, 200))
        c.execute("CHECKPOINT")
        _insert(c, s, t, _rows(rng, 200))        # only in the WAL
        _check(c, views)
    server.kill()
    server.start(timeout=60)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        _check(c, views)
        _insert(c, s, t, _rows(rng, 50))
        _check(c, views)
