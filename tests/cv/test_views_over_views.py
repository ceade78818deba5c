"""Views over continuous views (upper pipelines of their own, no stream
scan of their own) follow every batch that reaches the views they read,
also after their result was stored by an earlier read."""
from __future__ import annotations

import psycopg

from .oracle import assert_view_matches


def test_view_over_continuous_view_follows_new_input(ss_conn, unique_name):
    cur = ss_conn.cursor()
    s, tbl, t = unique_name("s"), unique_name("st"), unique_name("dim")
    base, over, within = unique_name("base"), unique_name("over"), unique_name("within")
    cur.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
    cur.execute(f"CREATE TABLE {tbl} (k int, x int)")
    cur.execute(f"CREATE TABLE {t} (k int PRIMARY KEY, label text)")
    cur.execute(f"INSERT INTO {t} SELECT i, 'L' || (i % 3) FROM generate_series(0, 9) i")
    base_q = "SELECT k, count(*) AS n, sum(x) AS sx FROM {s} GROUP BY k"
    over_q = "SELECT t.label, sum(b.n) AS n, max(b.sx) AS msx FROM ({b}) b JOIN {t} t ON t.k = b.k GROUP BY t.label"
    within_q = "SELECT t.k, t.label FROM {t} t WHERE t.k IN (SELECT b.k FROM ({b}) b WHERE b.n > 1)"
    cur.execute(f"CREATE VIEW {base} AS " + base_q.format(s=s))
    cur.execute(f"CREATE VIEW {over} AS " + over_q.format(b=f"SELECT * FROM {base}", t=t))
    cur.execute(f"CREATE VIEW {within} AS " + within_q.format(b=f"SELECT * FROM {base}", t=t))
    oracle_base = base_q.format(s=tbl)
    for i in range(4):
        rows = [(k % 10, i * 10 + k) for k in range(i + 3)]
        cur.executemany(f"INSERT INTO {s} VALUES (%s, %s)", rows)
        cur.executemany(f"INSERT INTO {tbl} VALUES (%s, %s)", rows)
        for _ in range(2):      # the second read is served from the stored result
            assert_view_matches(cur, over, over_q.format(b=oracle_base, t=t))
            assert_view_matches(cur, within, within_q.format(b=oracle_base, t=t))



def test_repeated_prepared_reads_of_views_over_views_follow_new_input(ss_server, unique_name):
    """A repeated prepared read (Bind/Execute/Sync) may be answered with the
    previous response while its inputs are unchanged.  A view over continuous
    views gets no batches of its own, so the views it reads -- transitively --
    are its inputs: a batch reaching any of them shows in the next read."""
    s, r = unique_name("vr_s"), unique_name("vr_r")
    v0, v1, v2, v3 = (unique_name(f"vr_v{i}") for i in range(4))
    with psycopg.connect(ss_server.dsn, autocommit=True) as reader, \
            psycopg.connect(ss_server.dsn, autocommit=True) as writer:
        writer.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
        writer.execute(f"CREATE FOREIGN TABLE {r} (k int, z int) SERVER stream")
        writer.execute(f"CREATE VIEW {v0} AS SELECT a.k, count(*) AS n FROM {s} AS a GROUP BY a.k")
        writer.execute(f"CREATE VIEW {v1} AS SELECT b.k, sum(b.z) AS m FROM {r} AS b GROUP BY b.k")
        writer.execute(f"CREATE VIEW {v2} AS SELECT x.k, x.n + coalesce(y.m, 0) AS w "
                       f"FROM {v0} AS x LEFT JOIN {v1} AS y ON x.k = y.k")
        writer.execute(f"CREATE VIEW {v3} AS SELECT sum(q.w) AS total FROM {v2} AS q")   # over a view over views
        reads = {f"SELECT * FROM {v2}": lambda n, m: [(1, n + m)],
                 f"SELECT * FROM {v3}": lambda n, m: [(n + m,)],
                 f"SELECT q.w FROM {v2} AS q WHERE q.k = 1": lambda n, m: [(n + m,)]}
        n = m = 0
        for i in range(6):
            if i % 2:
                writer.execute(f"INSERT INTO {r} VALUES (1, 10), (2, 5)")
                m += 10
            else:
                writer.execute(f"INSERT INTO {s} VALUES (1, 0)")
                n += 1
            for sql, want in reads.items():
                for _ in range(3):      # the later reads may be answered from the previous response
                    assert reader.execute(sql, prepare=True).fetchall() == want(n, m), (sql, i)
