"""Concurrent transfers between accounts keep the total; readers always see
a committed snapshot in which the invariant holds."""
from __future__ import annotations

import random
import threading

import psycopg


def test_transfers_preserve_total(ss_server, unique_name):
    acc = unique_name("acct")
    n_accounts, start = 20, 1000
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        c.execute(f"CREATE TABLE {acc} (id int PRIMARY KEY, balance bigint NOT NULL CHECK (balance >= 0))")
        c.execute(f"INSERT INTO {acc} SELECT i, {start} FROM generate_series(1, {n_accounts}) i")
    total = n_accounts * start
    errors: list = []
    sums: list = []
    stop = threading.Event()

    def transfer(seed: int) -> None:
        rng = random.Random(seed)
        with psycopg.connect(ss_server.dsn) as c:
            for _ in range(150):
                a, b = rng.sample(range(1, n_accounts + 1), 2)
                x = rng.randrange(1, 200)
                try:
                    with c.transaction():
                        c.execute(f"UPDATE {acc} SET balance = balance - %s WHERE id = %s", (x, a))
                        c.execute(f"UPDATE {acc} SET balance = balance + %s WHERE id = %s", (x, b))
                except psycopg.errors.CheckViolation:
                    pass  # insufficient funds: the whole transfer rolls back
                except Exception as e:  # pragma: no cover - reported below
                    errors.append(repr(e))
                    return

    def reader() -> None:
        with psycopg.connect(ss_server.dsn, autocommit=True) as c:
            while not stop.is_set():
                sums.append(c.execute(f"SELECT sum(balance), count(*) FROM {acc}").fetchone())

    r = threading.Thread(target=reader)
    r.start()
    ws = [threading.Thread(target=transfer, args=(i,)) for i in range(4)]
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    stop.set()
    r.join()
    assert not errors, errors
    assert sums, "the reader never ran"
    assert all(s == (total, n_accounts) for s in sums), set(sums)
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        assert c.execute(f"SELECT sum(balance) FROM {acc}").fetchone()[0] == total
        assert c.execute(f"SELECT min(balance) >= 0 FROM {acc}").fetchone()[0] is True


def test_no_lost_updates_on_increment(ss_server, unique_name):
    t = unique_name("ctr")
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        c.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, n int)")
        c.execute(f"INSERT INTO {t} VALUES (1, 0)")

    def bump() -> None:
        with psycopg.connect(ss_server.dsn, autocommit=True) as c:
            for _ in range(100):
                c.execute(f"UPDATE {t} SET n = n + 1 WHERE id = 1")

    ths = [threading.Thread(target=bump) for _ in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        assert c.execute(f"SELECT n FROM {t}").fetchone()[0] == 400


def test_ddl_and_dml_roll_back_together(ss_conn, unique_name):
    t, u = unique_name("t"), unique_name("u")
    ss_conn.execute(f"CREATE TABLE {u} (id int)")
    ss_conn.execute("BEGIN")
    ss_conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY)")
    ss_conn.execute(f"INSERT INTO {t} VALUES (1), (2)")
    ss_conn.execute(f"INSERT INTO {u} VALUES (7)")
    ss_conn.execute(f"ALTER TABLE {u} ADD COLUMN note text DEFAULT 'x'")
    ss_conn.execute("ROLLBACK")
    with __import__("pytest").raises(psycopg.errors.UndefinedTable):
        ss_conn.execute(f"SELECT * FROM {t}")
    cur = ss_conn.execute(f"SELECT * FROM {u}")
    assert [d.name for d in cur.description] == ["id"] and cur.fetchall() == []
