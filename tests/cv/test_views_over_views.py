"""Views over continuous views (upper pipelines of their own, no stream
scan of their own) follow every batch that reaches the views they read,
also after their result was stored by an earlier read."""
from __future__ import annotations


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

