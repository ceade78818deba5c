"""psycopg 3 against splitstream: cursors, COPY, transactions, notices, every type."""
from __future__ import annotations

import datetime as dt
import decimal
import uuid

import psycopg
import pytest
from psycopg.types.json import Json, Jsonb

UTC = dt.timezone.utc

# (SQL type, value); each value must come back equal, as parameter and as result
TYPES = [
    ("bool", True), ("bool", False), ("int2", -12), ("int4", 2**31 - 1), ("int8", -(2**62)),
    ("float4", 1.5), ("float8", -2.25e100), ("numeric", decimal.Decimal("-123.4500")),
    ("numeric", decimal.Decimal("1e-20")), ("text", "héllo ☃ 'quoted' \"x\" \\ tab\t"),
    ("varchar", "var"), ("bpchar", "ab  "), ("bytea", b"\x00\x01\xff'\\"), ("date", dt.date(2024, 2, 29)),
    ("time", dt.time(12, 34, 56, 789)), ("timestamp", dt.datetime(2024, 1, 2, 3, 4, 5, 6)),
    ("timestamptz", dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC)),
    ("interval", dt.timedelta(days=3, seconds=7, microseconds=8)), ("uuid", uuid.UUID(int=0x1234567890abcdef)),
    ("json", {"a": [1, 2, None], "b": "x"}), ("jsonb", {"k": {"n": 1.5}}),
    ("int4[]", [1, None, 3]), ("int8[]", [2**40]), ("int2[]", [1, 2]), ("float8[]", [1.5, -0.25]),
    ("float4[]", [0.5]), ("bool[]", [True, False, None]), ("text[]", ["a", "b c", None, 'q"uote', ""]),
    ("varchar[]", ["v"]), ("numeric[]", [decimal.Decimal("1.50")]), ("date[]", [dt.date(2020, 1, 1)]),
    ("timestamptz[]", [dt.datetime(2024, 1, 2, tzinfo=UTC)]), ("timestamp[]", [dt.datetime(2024, 5, 6, 7, 8, 9)]),
    ("uuid[]", [uuid.UUID(int=7)]), ("bytea[]", [b"a\x00b"]), ("interval[]", [dt.timedelta(hours=5)]),
    ("time[]", [dt.time(1, 2, 3)]), ("jsonb[]", [{"x": 1}]),
]


def _adapt(t: str, v):
    if t == "json":
        return Json(v)
    if t == "jsonb":
        return Jsonb(v)
    if t == "jsonb[]":
        return [Jsonb(x) for x in v]
    return v


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_type_round_trip(ss_conn, binary):
    bad = []
    for t, v in TYPES:
        cur = ss_conn.cursor(binary=binary)
        got = cur.execute(f"SELECT %s::{t} AS v", [_adapt(t, v)]).fetchone()[0]
        if got != v:
            bad.append((t, v, got))
    assert not bad


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_types_stored_in_a_table(ss_conn, unique_name, binary):
    t = unique_name("typ")
    cols = [(f"c{i}", typ) for i, (typ, _) in enumerate(TYPES)]
    ss_conn.execute(f"CREATE TABLE {t} ({', '.join(f'{c} {typ}' for c, typ in cols)})")
    try:
        row = [_adapt(typ, v) for typ, v in TYPES]
        cur = ss_conn.cursor(binary=binary)
        cur.execute(f"INSERT INTO {t} VALUES ({', '.join(['%s'] * len(row))})", row)
        cur.execute(f"INSERT INTO {t} VALUES ({', '.join(['NULL'] * len(row))})")
        got = cur.execute(f"SELECT * FROM {t}").fetchall()
        assert list(got[0]) == [v for _, v in TYPES]
        assert list(got[1]) == [None] * len(TYPES)
        # the column types are reported as PostgreSQL would
        names = [d.type_code for d in cur.description]
        expect = cur.execute(
            "SELECT array_agg(atttypid::int ORDER BY attnum) FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0",
            [t]).fetchone()[0]
        assert names == expect
    finally:
        ss_conn.execute(f"DROP TABLE {t}")


def test_text_and_binary_cursors_and_executemany(ss_conn, unique_name):
    t = unique_name()
    ss_conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, name text, score float8)")
    with ss_conn.cursor() as cur:
        cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s)", [(i, f"n{i}", i / 4) for i in range(200)])
    with ss_conn.cursor(binary=True) as cur:
        cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s)", [(i, None, None) for i in range(200, 210)])
        rows = cur.execute(f"SELECT id, name, score FROM {t} WHERE id >= %s ORDER BY id", [198]).fetchall()
        assert rows[:3] == [(198, "n198", 49.5), (199, "n199", 49.75), (200, None, None)]
        assert len(rows) == 12
    with ss_conn.cursor() as cur:
        assert cur.execute(f"SELECT count(*), sum(id) FROM {t}").fetchone() == (210, sum(range(210)))
        cur.execute(f"UPDATE {t} SET score = -1 WHERE id < 10")
        assert cur.rowcount == 10
        cur.execute(f"DELETE FROM {t} WHERE id >= 200")
        assert cur.rowcount == 10
    ss_conn.execute(f"DROP TABLE {t}")


def test_named_server_side_cursor(ss_server, unique_name):
    t = unique_name()
    with psycopg.connect(ss_server.dsn) as conn:  # not autocommit: cursors live in a transaction
        conn.execute(f"CREATE TABLE {t} AS SELECT g AS id, g * 2 AS v FROM generate_series(1, 1000) g")
        conn.commit()
        with conn.cursor(name="ss_cur") as cur:
            cur.itersize = 100
            cur.execute(f"SELECT id, v FROM {t} ORDER BY id")
            first = cur.fetchmany(10)
            assert first == [(i, 2 * i) for i in range(1, 11)]
            assert cur.fetchone() == (11, 22)
            rest = cur.fetchall()
            assert len(rest) == 989 and rest[-1] == (1000, 2000)
        with conn.cursor(name="bin_cur", binary=True) as cur:
            cur.execute(f"SELECT id FROM {t} WHERE id > %s ORDER BY id", [990])
            assert [r[0] for r in cur.fetchmany(3)] == [991, 992, 993]
            assert len(list(cur)) == 7
        conn.execute(f"DROP TABLE {t}")
        conn.commit()


def test_copy_both_directions(ss_conn, unique_name):
    t = unique_name()
    ss_conn.execute(f"CREATE TABLE {t} (id int, name text, d date, f float8)")
    rows = [(i, f"name {i}" if i % 3 else None, dt.date(2024, 1, 1) + dt.timedelta(days=i), i * 0.5) for i in range(500)]
    with ss_conn.cursor() as cur:
        with cur.copy(f"COPY {t} FROM STDIN") as cp:
            for r in rows[:250]:
                cp.write_row(r)
        with cur.copy(f"COPY {t} FROM STDIN (FORMAT csv)") as cp:
            cp.write("".join(f"{i},{'' if n is None else n},{d},{f}\n" for i, n, d, f in rows[250:]))
        assert cur.execute(f"SELECT count(*) FROM {t}").fetchone()[0] == 500
        out = []
        with cur.copy(f"COPY (SELECT * FROM {t} ORDER BY id) TO STDOUT") as cp:
            cp.set_types(["int4", "text", "date", "float8"])
            out = list(cp.rows())
        assert out == rows
        data = b""
        with cur.copy(f"COPY {t} TO STDOUT (FORMAT csv, HEADER)") as cp:
            for chunk in cp:
                data += bytes(chunk)
        lines = data.decode().splitlines()
        assert lines[0] == "id,name,d,f" and len(lines) == 501
        # binary COPY FROM
        with cur.copy(f"COPY {t} (id, name, d, f) FROM STDIN (FORMAT binary)") as cp:
            cp.set_types(["int4", "text", "date", "float8"])
            cp.write_row((1000, "bin", dt.date(2000, 1, 1), 1.25))
        assert cur.execute(f"SELECT name, d, f FROM {t} WHERE id = 1000").fetchone() == ("bin", dt.date(2000, 1, 1), 1.25)
    ss_conn.execute(f"DROP TABLE {t}")


def test_transactions_and_rollback(ss_server, unique_name):
    t = unique_name()
    with psycopg.connect(ss_server.dsn) as conn:
        conn.execute(f"CREATE TABLE {t} (id int PRIMARY KEY)")
        conn.commit()
        conn.execute(f"INSERT INTO {t} VALUES (1)")
        conn.rollback()
        assert conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] == 0
        with conn.transaction():
            conn.execute(f"INSERT INTO {t} VALUES (2)")
            with pytest.raises(psycopg.errors.UniqueViolation):
                with conn.transaction():  # a savepoint
                    conn.execute(f"INSERT INTO {t} VALUES (2)")
            conn.execute(f"INSERT INTO {t} VALUES (3)")
        assert [r[0] for r in conn.execute(f"SELECT id FROM {t} ORDER BY id")] == [2, 3]
        conn.commit()
        # an error leaves the transaction failed until rollback
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT 1 / 0")
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            conn.execute("SELECT 1")
        conn.rollback()
        assert conn.execute("SELECT 1").fetchone() == (1,)
        conn.commit()
        conn.execute(f"DROP TABLE {t}")
        conn.commit()


def test_notices(ss_conn, unique_name):
    seen = []
    ss_conn.add_notice_handler(lambda d: seen.append((d.severity, d.sqlstate, d.message_primary)))
    ss_conn.execute(f"DROP TABLE IF EXISTS {unique_name('nope')}")
    assert seen and seen[0][0] == "NOTICE" and seen[0][1] == "00000"
    assert "does not exist, skipping" in seen[0][2]


def test_prepared_statements_and_errors_keep_session_usable(ss_conn):
    for i in range(10):  # psycopg prepares after prepare_threshold executions
        assert ss_conn.execute("SELECT %s::int + 1", [i], prepare=True).fetchone() == (i + 1,)
    with pytest.raises(psycopg.errors.UndefinedTable):
        ss_conn.execute("SELECT * FROM no_such_table_here")
    with pytest.raises(psycopg.errors.SyntaxError):
        ss_conn.execute("SELEC 1")
    assert ss_conn.execute("SELECT 'still here'").fetchone() == ("still here",)


def test_advisory_locks_session_and_transaction_scope(ss_server):
    """pg_advisory_xact_lock is held until its transaction ends; session locks until unlock."""
    with psycopg.connect(ss_server.dsn) as a, psycopg.connect(ss_server.dsn, autocommit=True) as b:
        a.execute("SELECT pg_advisory_xact_lock(4242)")
        assert b.execute("SELECT pg_try_advisory_lock(4242)").fetchone() == (False,)
        a.commit()
        assert b.execute("SELECT pg_try_advisory_lock(4242)").fetchone() == (True,)
        assert a.execute("SELECT pg_try_advisory_xact_lock(4242)").fetchone() == (False,)
        a.rollback()
        assert b.execute("SELECT pg_advisory_unlock(4242)").fetchone() == (True,)
        assert a.execute("SELECT pg_try_advisory_xact_lock(4242)").fetchone() == (True,)
        assert b.execute("SELECT pg_try_advisory_lock(4242)").fetchone() == (False,)
        a.rollback()
        assert b.execute("SELECT pg_try_advisory_lock(4242)").fetchone() == (True,)
        b.execute("SELECT pg_advisory_unlock_all()")
