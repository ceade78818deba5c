"""Autocommitted prepared INSERTs into UNLOGGED tables run on the server's
event-loop thread when the writer lock is free.  They must never block that
thread: while another transaction holds the lock the insert waits on a worker
and other clients are still served; a failing insert releases the lock; and
the rows are exactly those of the slow path."""
from __future__ import annotations

import threading
import time

import psycopg
import pytest


def test_insert_waits_for_open_writer_without_blocking_others(ss_server, unique_name):
    t, other = unique_name("iw_t"), unique_name("iw_o")
    with psycopg.connect(ss_server.dsn, autocommit=True) as holder, \
            psycopg.connect(ss_server.dsn, autocommit=True) as writer, \
            psycopg.connect(ss_server.dsn, autocommit=True) as bystander:
        holder.execute(f"CREATE UNLOGGED TABLE {t} (a int, b int)")
        holder.execute(f"CREATE TABLE {other} (a int)")
        for i in range(3):
            writer.execute(f"INSERT INTO {t} VALUES (%s, %s)", (i, i), prepare=True)   # warm: inline path
        holder.execute("BEGIN")
        holder.execute(f"INSERT INTO {other} VALUES (1)")          # holds the writer lock
        done = threading.Event()

        def insert() -> None:
            writer.execute(f"INSERT INTO {t} VALUES (%s, %s)", (10, 20), prepare=True)
            done.set()

        th = threading.Thread(target=insert)
        th.start()
        try:
            time.sleep(0.3)
            assert not done.is_set(), "an insert finished while another transaction held the writer lock"
            # the event loop is free: another client is answered meanwhile
            assert bystander.execute("SELECT 41 + 1", prepare=True).fetchone() == (42,)
            assert bystander.execute(f"SELECT count(*) FROM {t}").fetchone() == (3,)
        finally:
            holder.execute("COMMIT")
        th.join(10)
        assert done.is_set()
        assert bystander.execute(f"SELECT a, b FROM {t} ORDER BY a").fetchall() == \
            [(0, 0), (1, 1), (2, 2), (10, 20)]


def test_failed_inline_insert_releases_the_writer(ss_server, unique_name):
    t = unique_name("iw_nn")
    with psycopg.connect(ss_server.dsn, autocommit=True) as a, psycopg.connect(ss_server.dsn, autocommit=True) as b:
        a.execute(f"CREATE UNLOGGED TABLE {t} (a int NOT NULL, b text)")
        a.execute(f"INSERT INTO {t} VALUES (%s, %s)", (1, "x"), prepare=True)
        with pytest.raises(psycopg.errors.NotNullViolation):
            a.execute(f"INSERT INTO {t} VALUES (%s, %s)", (None, "y"), prepare=True)
        with pytest.raises(psycopg.errors.NumericValueOutOfRange):
            a.execute(f"INSERT INTO {t} VALUES (%s::bigint, %s)", (1 << 40, "z"), prepare=True)
        # the lock was released: another session writes, and the first goes on
        b.execute(f"INSERT INTO {t} VALUES (2, 'b')")
        a.execute(f"INSERT INTO {t} VALUES (%s, %s)", (3, None), prepare=True)
        assert a.execute(f"SELECT a, b FROM {t} ORDER BY a").fetchall() == [(1, "x"), (2, "b"), (3, None)]


@pytest.mark.parametrize("ddl, values, expect", [
    ("(a int, b int DEFAULT 7)", "(%s)", [(5, 7)]),                               # a default: general path
    ("(a varchar(3), b int)", "(%s, 1)", [("abc", 1)]),                          # a typmod check
    ("(a bigint, b float8)", "(%s, 2.5)", [(5, 2.5)]),                           # assignment casts
    ("(a int, b text, c bool)", "(%s, 'x', %s)", [(5, "x", True)]),              # constants and params
])
def test_lone_row_matches_general_path(ss_server, unique_name, ddl, values, expect):
    """A lone Execute is built directly only when no cast, typmod or default is
    involved; every shape gives the rows the general path gives."""
    t = unique_name("iw_lr")
    params = (expect[0][0], True) if values.count("%s") == 2 else (expect[0][0],)
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        c.execute(f"CREATE UNLOGGED TABLE {t} {ddl}")
        c.execute(f"INSERT INTO {t} VALUES {values}", params, prepare=True)
        with c.pipeline():          # several Executes in one Sync: the batched path
            c.execute(f"INSERT INTO {t} VALUES {values}", params, prepare=True)
            c.execute(f"INSERT INTO {t} VALUES {values}", params, prepare=True)
        assert c.execute(f"SELECT * FROM {t}").fetchall() == expect * 3


def test_lone_row_errors_are_postgres_errors(ss_server, unique_name):
    t = unique_name("iw_err")
    with psycopg.connect(ss_server.dsn, autocommit=True) as c:
        c.execute(f"CREATE UNLOGGED TABLE {t} (a varchar(3), b int)")
        with pytest.raises(psycopg.errors.StringDataRightTruncation):
            c.execute(f"INSERT INTO {t} VALUES (%s, %s)", ("abcd", 1), prepare=True)
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            c.execute(f"INSERT INTO {t} VALUES (%s, %s::text::int)", ("ab", "x"), prepare=True)
        c.execute(f"INSERT INTO {t} VALUES (%s, %s)", ("abc", 2), prepare=True)
        assert c.execute(f"SELECT * FROM {t}").fetchall() == [("abc", 2)]
