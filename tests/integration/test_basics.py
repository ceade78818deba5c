"""Basic client interoperability: psql, psycopg (simple + extended), asyncpg, COPY."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import psycopg
import pytest
from psycopg import errors



def test_psql_select_1(ss_server):
    psql = shutil.which("psql")
    if psql is None:
        pytest.skip("psql not installed")
    res = subprocess.run(
        [psql, ss_server.dsn, "-X", "-A", "-t", "-c", "select 1"],
        capture_output=True, text=True, timeout=30,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "1"


def test_create_insert_select_with_params(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, name text, score float8)")
    with ss_conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {t} VALUES (%s, %s, %s)",
            [(1, "alice", 1.5), (2, "bob", None), (3, "carol", -2.25)],
        )
        cur.execute(f"SELECT id, name, score FROM {t} WHERE id >= %s ORDER BY id", (2,))
        assert cur.fetchall() == [(2, "bob", None), (3, "carol", -2.25)]
        cur.execute(f"SELECT name FROM {t} WHERE name = %s", ("alice",), prepare=True)
        assert cur.fetchall() == [("alice",)]
        # binary result format through the extended protocol
        with ss_conn.cursor(binary=True) as bcur:
            bcur.execute(f"SELECT id, score FROM {t} WHERE id = %s", (3,))
            assert bcur.fetchall() == [(3, -2.25)]


def test_transaction_rollback_leaves_no_trace(ss_server, unique_name):
    t = unique_name("t")
    with psycopg.connect(ss_server.dsn, connect_timeout=10) as conn:  # not autocommit
        conn.execute(f"CREATE TABLE {t} (id int)")
        conn.execute(f"INSERT INTO {t} VALUES (1)")
        conn.commit()
        conn.execute(f"INSERT INTO {t} VALUES (2), (3)")
        assert conn.execute(f"SELECT count(*) AS n FROM {t}").fetchone() == (3,)
        conn.rollback()
        assert conn.execute(f"SELECT id FROM {t} ORDER BY id").fetchall() == [(1,)]
        conn.rollback()
    # a second connection sees only the committed row
    with psycopg.connect(ss_server.dsn, autocommit=True, connect_timeout=10) as other:
        assert other.execute(f"SELECT id FROM {t}").fetchall() == [(1,)]


def test_unknown_table_is_42p01_and_connection_survives(ss_conn, unique_name):
    with pytest.raises(errors.UndefinedTable) as ei:
        ss_conn.execute(f"SELECT * FROM {unique_name('missing')}")
    assert ei.value.sqlstate == "42P01"
    assert ss_conn.execute("SELECT 41 + 1").fetchone() == (42,)


def test_duplicate_key_is_23505(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, v text)")
    ss_conn.execute(f"INSERT INTO {t} VALUES (1, 'a')")
    with pytest.raises(errors.UniqueViolation) as ei:
        ss_conn.execute(f"INSERT INTO {t} VALUES (1, 'b')")
    assert ei.value.sqlstate == "23505"
    assert ss_conn.execute(f"SELECT v FROM {t}").fetchall() == [("a",)]


def test_division_by_zero_is_22012(ss_conn):
    with pytest.raises(errors.DivisionByZero) as ei:
        ss_conn.execute("SELECT 1/0")
    assert ei.value.sqlstate == "22012"
    with pytest.raises(errors.DivisionByZero):
        ss_conn.execute("SELECT %s::int / %s::int", (1, 0))
    assert ss_conn.execute("SELECT 1").fetchone() == (1,)


def test_failed_statement_in_block_gives_25p02_until_rollback(ss_server, unique_name):
    t = unique_name("t")
    with psycopg.connect(ss_server.dsn, autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"CREATE TABLE {t} (id int)")
        conn.execute("BEGIN")
        conn.execute(f"INSERT INTO {t} VALUES (1)")
        with pytest.raises(errors.DivisionByZero):
            conn.execute("SELECT 1/0")
        for _ in range(2):
            with pytest.raises(errors.InFailedSqlTransaction) as ei:
                conn.execute("SELECT 1")
            assert ei.value.sqlstate == "25P02"
        conn.execute("ROLLBACK")
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.execute(f"SELECT id FROM {t}").fetchall() == []


def test_asyncpg_fetch_and_executemany(ss_server, unique_name):
    asyncpg = pytest.importorskip("asyncpg")
    t = unique_name("t")

    async def main():
        conn = await asyncpg.connect(ss_server.url, timeout=10)
        try:
            await conn.execute(f"CREATE TABLE {t} (id int, name text, amount float8)")
            await conn.executemany(
                f"INSERT INTO {t} VALUES ($1, $2, $3)",
                [(i, f"n{i}", i * 0.5) for i in range(1, 21)],
            )
            rows = await conn.fetch(f"SELECT id, name, amount FROM {t} WHERE id <= $1 ORDER BY id", 3)
            assert [tuple(r) for r in rows] == [(1, "n1", 0.5), (2, "n2", 1.0), (3, "n3", 1.5)]
            total = await conn.fetchval(f"SELECT sum(amount) AS s FROM {t}")
            assert total == pytest.approx(sum(i * 0.5 for i in range(1, 21)))
            n = await conn.fetchval(f"SELECT count(*) AS n FROM {t} WHERE name LIKE $1", "n1%")
            assert n == 11  # n1, n10..n19
        finally:
            await conn.close()

    asyncio.run(main())


def _copy_table(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (id int, name text, v float8)")
    rows = [(i, f"name {i}", i / 4) for i in range(1, 101)] + [(101, None, None)]
    with ss_conn.cursor() as cur:
        with cur.copy(f"COPY {t} (id, name, v) FROM STDIN") as copy:
            for r in rows:
                copy.write_row(r)
        assert cur.rowcount == len(rows)
        with cur.copy(f"COPY {t} FROM STDIN (FORMAT csv)") as copy:
            copy.write('102,"a,b",2.5\n103,,\n')
    return t


def test_copy_from_stdin(ss_conn, unique_name):
    t = _copy_table(ss_conn, unique_name)
    assert ss_conn.execute(f"SELECT count(*) AS n, sum(id) AS s FROM {t}").fetchone() == (103, 5151 + 205)
    assert ss_conn.execute(f"SELECT name, v FROM {t} WHERE id IN (3, 101, 102, 103) ORDER BY id").fetchall() == [
        ("name 3", 0.75), (None, None), ("a,b", 2.5), (None, None),
    ]


def test_copy_to_stdout_with_header(ss_conn, unique_name):
    t = _copy_table(ss_conn, unique_name)
    with ss_conn.cursor() as cur:
        with cur.copy(f"COPY (SELECT id, name FROM {t} WHERE id IN (1, 101, 102) ORDER BY id) "
                      "TO STDOUT (FORMAT csv, HEADER)") as copy:
            text = b"".join(bytes(chunk) for chunk in copy).decode()
    assert text.splitlines() == ["id,name", "1,name 1", "101,", '102,"a,b"']


def test_copy_to_stdout(ss_conn, unique_name):
    t = _copy_table(ss_conn, unique_name)
    with ss_conn.cursor() as cur:
        with cur.copy(f"COPY (SELECT id, name, v FROM {t} WHERE id <= 3 OR id = 101 ORDER BY id) TO STDOUT") as copy:
            text = b"".join(bytes(chunk) for chunk in copy).decode()
        assert text == "1\tname 1\t0.25\n2\tname 2\t0.5\n3\tname 3\t0.75\n101\t\\N\t\\N\n"
        with cur.copy(f"COPY {t} TO STDOUT (FORMAT csv)") as copy:
            lines = b"".join(bytes(chunk) for chunk in copy).decode().splitlines()
        assert len(lines) == 103
        assert '102,"a,b",2.5' in lines
        assert "103,," in lines


def test_copy_to_stdout_rows(ss_conn, unique_name):
    t = _copy_table(ss_conn, unique_name)
    with ss_conn.cursor() as cur:
        with cur.copy(f"COPY (SELECT id, name, v FROM {t} WHERE id <= 3 OR id = 101 ORDER BY id) TO STDOUT") as copy:
            copy.set_types(["int4", "text", "float8"])
            back = list(copy.rows())
    assert back == [(1, "name 1", 0.25), (2, "name 2", 0.5), (3, "name 3", 0.75), (101, None, None)]

# -- regressions for bugs found while writing this file ------------------------------

# DROP raised XX000 (executor/ddl.py read Drop.this; sqlglot 30 uses Drop.args['tables']).
def test_drop_table(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (id int)")
    ss_conn.execute(f"DROP TABLE {t}")
    with pytest.raises(errors.UndefinedTable):
        ss_conn.execute(f"SELECT * FROM {t}")


# Regression: this failed with 42803 until the planner's aggregate detection was fixed.
def test_unaliased_aggregate_without_group_by(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (x int)")
    ss_conn.execute(f"INSERT INTO {t} VALUES (1), (2)")
    assert ss_conn.execute(f"SELECT count(*), sum(x) FROM {t}").fetchone() == (2, 3)
