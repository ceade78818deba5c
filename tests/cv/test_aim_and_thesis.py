"""AIM continuous views (thesis Table 4.3) and the running example of
Figures 4.2/4.3, each checked against the same query over a table."""
from __future__ import annotations

import random


from bench.aim_queries import AIM_QUERIES, EVENTS_COLS as AIM_EVENTS

from .oracle import assert_view_matches


def _events(n, customers, week, rng):
    out = []
    for _ in range(n):
        ld = rng.random() < 0.3
        cost = round(rng.uniform(0, 10), 2)
        out.append((rng.randrange(1, customers + 1), week if rng.random() < 0.9 else week - 1,
                    rng.randrange(1, 60), cost, rng.choice([None, 1]), ld,
                    cost if ld else 0.0, 0.0 if ld else cost))
    return out


def test_aim_views_match_oracle(ss_conn, unique_name):
    cur = ss_conn.cursor()
    ev, evt, cust = unique_name("ev"), unique_name("evt"), unique_name("cust")
    cur.execute(f"CREATE FOREIGN TABLE {ev} {AIM_EVENTS} SERVER stream")
    cur.execute(f"CREATE TABLE {evt} {AIM_EVENTS}")
    cur.execute(f"CREATE TABLE {cust} (id int PRIMARY KEY, city_zip text, region_id int, type int, "
                f"category int, value_type int)")
    rng = random.Random(7)
    customers = 200
    cur.executemany(f"INSERT INTO {cust} VALUES (%s, %s, %s, %s, %s, %s)",
                    [(i, f"z{i % 13}", i % 5, i % 3, i % 2, i % 4) for i in range(1, customers + 1)])
    cur.execute("SELECT current_week()")
    week = cur.fetchone()[0]
    views = {}
    for name, q in AIM_QUERIES.items():
        v = unique_name(name)
        cur.execute(f"CREATE VIEW {v} AS " + q.format(e=ev, c=cust))
        views[name] = v
    for batch in range(4):
        rows = _events(500, customers, week, rng)
        with cur.copy(f"COPY {ev} FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
        cur.executemany(f"INSERT INTO {evt} VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", rows)
        for name, v in views.items():
            assert_view_matches(cur, v, AIM_QUERIES[name].format(e=evt, c=cust))


def test_thesis_running_example(ss_conn, unique_name):
    """Figure 4.2: two grouped streams joined with the station table."""
    cur = ss_conn.cursor()
    usage, restock, station = unique_name("part_usage"), unique_name("part_restock"), unique_name("station")
    usage_t, restock_t = unique_name("usage_t"), unique_name("restock_t")
    cols = "(part_id int, part text, station int, worker int)"
    cur.execute(f"CREATE FOREIGN TABLE {usage} {cols} SERVER stream")
    cur.execute(f"CREATE FOREIGN TABLE {restock} {cols} SERVER stream")
    cur.execute(f"CREATE TABLE {usage_t} {cols}")
    cur.execute(f"CREATE TABLE {restock_t} {cols}")
    cur.execute(f"CREATE TABLE {station} (id int PRIMARY KEY, plant text, location text, supplier text)")
    cur.execute(f"INSERT INTO {station} VALUES (1, 'Spartanburg', 'Gate 2 - EN', '+1 555 1'), "
                f"(2, 'Spartanburg', 'Gate 1 - SE', '+1 555 2'), (3, 'Regensburg', 'Tor 2', '+49 555 3'), "
                f"(5, 'Regensburg', 'Tor 5', '+49 555 5')")
    q = """with used as (select part, station, count(*) from {u} group by part, station),
           restocked as (select part, station, count(*) from {r} group by part, station)
           select r.part, s.location, s.supplier from {s} s, used u, restocked r
           where s.id = u.station and u.station = r.station and u.part = r.part and r.count - u.count < 5"""
    view = unique_name("supply")
    cur.execute(f"CREATE VIEW {view} AS " + q.format(u=usage, r=restock, s=station))
    rng = random.Random(3)
    parts = ["Wheel", "Seat", "Engine", "Door"]
    for _ in range(5):
        u = [(i, rng.choice(parts), rng.choice([1, 2, 3, 5]), rng.randrange(10)) for i in range(40)]
        r = [(i, rng.choice(parts), rng.choice([1, 2, 3, 5]), rng.randrange(10)) for i in range(45)]
        for stream, table, data in ((usage, usage_t, u), (restock, restock_t, r)):
            cur.executemany(f"INSERT INTO {stream} VALUES (%s, %s, %s, %s)", data)
            cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s)", data)
        assert_view_matches(cur, view, q.format(u=usage_t, r=restock_t, s=station))


def test_upper_pipeline_table_changes_are_visible(ss_conn, unique_name):
    """Section 4.2.7: tables used only above the grouping may change; the next
    read reflects the change."""
    cur = ss_conn.cursor()
    s, t, v = unique_name("s"), unique_name("names"), unique_name("v")
    cur.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
    cur.execute(f"CREATE TABLE {t} (k int PRIMARY KEY, name text)")
    cur.execute(f"INSERT INTO {t} VALUES (1, 'one'), (2, 'two')")
    cur.execute(f"CREATE VIEW {v} AS SELECT n.name, g.total FROM (SELECT k, sum(x) AS total FROM {s} GROUP BY k) g "
                f"JOIN {t} n ON n.k = g.k")
    cur.execute(f"INSERT INTO {s} VALUES (1, 10), (2, 20), (1, 5)")
    cur.execute(f"SELECT * FROM {v} ORDER BY name")
    assert cur.fetchall() == [("one", 15), ("two", 20)]
    cur.execute(f"UPDATE {t} SET name = 'uno' WHERE k = 1")
    cur.execute(f"SELECT * FROM {v} ORDER BY name")
    assert cur.fetchall() == [("two", 20), ("uno", 15)]


def test_pipelinedb_ddl_runs_unchanged(ss_conn, unique_name):
    cur = ss_conn.cursor()
    s, v = unique_name("s"), unique_name("v")
    cur.execute(f"CREATE FOREIGN TABLE {s} (url text, latency int) SERVER pipelinedb")
    cur.execute(f"CREATE VIEW {v} WITH (action=materialize) AS SELECT url, count(*), max(latency) FROM {s} GROUP BY url")
    cur.execute(f"INSERT INTO {s} VALUES ('/a', 10), ('/b', 5), ('/a', 30)")
    cur.execute(f"SELECT * FROM {v} ORDER BY url")
    assert cur.fetchall() == [("/a", 2, 30), ("/b", 1, 5)]
    cur.execute("SELECT relkind FROM pg_class WHERE relname = %s", (v,))
    assert cur.fetchone() == ("v",)


def test_correlated_subquery_over_stream_is_unnested(ss_conn, unique_name):
    """A correlated aggregate subquery over a stream is maintained once the
    planner unnests it into a join with the stream grouped by the correlation key."""
    cur = ss_conn.cursor()
    s, st, t, v = unique_name("s"), unique_name("st"), unique_name("t"), unique_name("v")
    cur.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
    cur.execute(f"CREATE TABLE {st} (k int, x int)")
    cur.execute(f"CREATE TABLE {t} (k int, lim int)")
    cur.execute(f"INSERT INTO {t} SELECT i, i * 10 FROM generate_series(1, 8) i")
    q = "SELECT t.k FROM {t} t WHERE t.lim > (SELECT sum(x) FROM {s} s WHERE s.k = t.k)"
    cur.execute(f"CREATE VIEW {v} AS " + q.format(t=t, s=s))
    rng = random.Random(1)
    for _ in range(3):
        rows = [(rng.randrange(1, 9), rng.randrange(0, 15)) for _ in range(20)]
        cur.executemany(f"INSERT INTO {s} VALUES (%s, %s)", rows)
        cur.executemany(f"INSERT INTO {st} VALUES (%s, %s)", rows)
        assert_view_matches(cur, v, q.format(t=t, s=st))
