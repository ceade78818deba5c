"""asyncpg (binary protocol throughout) against splitstream."""
from __future__ import annotations

import asyncio
import datetime as dt
import decimal
import io
import json
import uuid

import asyncpg
import pytest

UTC = dt.timezone.utc

TYPES = [
    ("bool", True), ("int2", -12), ("int4", 2**31 - 1), ("int8", -(2**62)), ("float4", 1.5), ("float8", -2.25e100),
    ("numeric", decimal.Decimal("-123.4500")), ("numeric", decimal.Decimal("98765432109876543210.0001")),
    ("text", "héllo ☃"), ("varchar", "var"), ("bpchar", "ab  "), ("bytea", b"\x00\x01\xff"),
    ("date", dt.date(2024, 2, 29)), ("time", dt.time(12, 34, 56, 789)),
    ("timestamp", dt.datetime(2024, 1, 2, 3, 4, 5, 6)), ("timestamptz", dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=UTC)),
    ("interval", dt.timedelta(days=3, seconds=7, microseconds=8)), ("uuid", uuid.UUID(int=0xABCDEF)),
    ("json", '{"a": [1, 2]}'), ("jsonb", '{"a": 1}'),
    ("int4[]", [1, None, 3]), ("int8[]", [2**40]), ("int2[]", [1]), ("float8[]", [1.5]), ("float4[]", [0.5]),
    ("bool[]", [True, None]), ("text[]", ["a", "b c", None]), ("varchar[]", ["v"]), ("bpchar[]", ["x"]),
    ("numeric[]", [decimal.Decimal("1.5")]), ("date[]", [dt.date(2020, 1, 1)]), ("time[]", [dt.time(1, 2)]),
    ("timestamp[]", [dt.datetime(2020, 1, 1)]), ("timestamptz[]", [dt.datetime(2024, 1, 2, tzinfo=UTC)]),
    ("interval[]", [dt.timedelta(days=1)]), ("uuid[]", [uuid.UUID(int=5)]), ("bytea[]", [b"a"]),
    ("json[]", ["[]"]), ("jsonb[]", ['{"k": 2}']),
]


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


async def _connect(server):
    return await asyncpg.connect(server.url, timeout=10)


def test_binary_codec_of_every_type(ss_server):
    async def main():
        c = await _connect(ss_server)
        try:
            bad = []
            for t, v in TYPES:
                got = await c.fetchval(f"SELECT $1::{t}", v)
                if got != v:
                    bad.append((t, v, got))
            nulls = await c.fetchrow("SELECT " + ", ".join(f"NULL::{t}" for t, _ in TYPES))
            assert list(nulls) == [None] * len(TYPES)
            return bad
        finally:
            await c.close()

    assert run(main()) == []


def test_prepared_fetch_executemany(ss_server, unique_name):
    t = unique_name()

    async def main():
        c = await _connect(ss_server)
        try:
            await c.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, name text, v float8, ts timestamptz, tags text[])")
            ins = await c.prepare(f"INSERT INTO {t} VALUES ($1, $2, $3, $4, $5)")
            assert [p.name for p in ins.get_parameters()] == ["int4", "text", "float8", "timestamptz", "text[]"]
            await ins.fetch(0, "zero", 0.0, dt.datetime(2024, 1, 1, tzinfo=UTC), ["a"])
            await c.executemany(f"INSERT INTO {t} VALUES ($1, $2, $3, $4, $5)",
                                [(i, f"n{i}", i / 2, dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i), [str(i)])
                                 for i in range(1, 300)])
            sel = await c.prepare(f"SELECT id, name, v, tags FROM {t} WHERE id >= $1 ORDER BY id")
            assert [a.name for a in sel.get_attributes()] == ["id", "name", "v", "tags"]
            rows = await sel.fetch(297)
            assert [tuple(r) for r in rows] == [(297, "n297", 148.5, ["297"]), (298, "n298", 149.0, ["298"]),
                                                (299, "n299", 149.5, ["299"])]
            assert await sel.fetchval(299) == 299
            assert (await sel.fetchrow(0))["name"] == "zero"
            assert await c.fetchval(f"SELECT count(*) FROM {t}") == 300
            # a cursor inside a transaction
            async with c.transaction():
                got = [r["id"] async for r in c.cursor(f"SELECT id FROM {t} WHERE id < $1 ORDER BY id", 5, prefetch=2)]
                assert got == [0, 1, 2, 3, 4]
            # a failed transaction rolls back
            with pytest.raises(asyncpg.UniqueViolationError):
                async with c.transaction():
                    await c.execute(f"INSERT INTO {t} (id) VALUES (1000)")
                    await c.execute(f"INSERT INTO {t} (id) VALUES (1000)")
            assert await c.fetchval(f"SELECT count(*) FROM {t} WHERE id = 1000") == 0
        finally:
            await c.execute(f"DROP TABLE IF EXISTS {t}")
            await c.close()

    run(main())


def test_copy_records_to_table_and_copy_from_query(ss_server, unique_name):
    t = unique_name()

    async def main():
        c = await _connect(ss_server)
        try:
            await c.execute(f"CREATE TABLE {t} (id int, name text, d date, amount numeric(10,2), js jsonb)")
            recs = [(i, None if i % 7 == 0 else f"r{i}", dt.date(2024, 1, 1) + dt.timedelta(days=i),
                     decimal.Decimal(i) / 4, json.dumps({"i": i})) for i in range(1000)]
            res = await c.copy_records_to_table(t, records=recs)
            assert res == "COPY 1000"
            back = await c.fetch(f"SELECT * FROM {t} ORDER BY id")
            assert [tuple(r)[:4] for r in back] == [r[:4] for r in recs]
            assert json.loads(back[5]["js"]) == {"i": 5}
            buf = io.BytesIO()
            res = await c.copy_from_query(f"SELECT id, name FROM {t} WHERE id < $1 ORDER BY id", 3,
                                          output=buf, format="csv")
            assert res == "COPY 3"
            assert buf.getvalue() == b"0,\n1,r1\n2,r2\n"
            buf = io.BytesIO()
            res = await c.copy_from_table(t, columns=["id", "amount"], output=buf)
            assert res == "COPY 1000"
            assert buf.getvalue().splitlines()[4] == b"4\t1.00"
            res = await c.copy_to_table(t, source=io.BytesIO(b"5000\tcopied\t2020-02-02\t1.5\t{}\n"),
                                        columns=["id", "name", "d", "amount", "js"])
            assert res == "COPY 1"
            assert await c.fetchval(f"SELECT name FROM {t} WHERE id = 5000") == "copied"
        finally:
            await c.execute(f"DROP TABLE IF EXISTS {t}")
            await c.close()

    run(main())


def test_pool_and_concurrent_queries(ss_server):
    async def main():
        pool = await asyncpg.create_pool(ss_server.url, min_size=2, max_size=4)
        try:
            async def one(i):
                async with pool.acquire() as c:
                    return await c.fetchval("SELECT $1::int * 2", i)

            got = await asyncio.gather(*(one(i) for i in range(50)))
            assert got == [2 * i for i in range(50)]
        finally:
            await pool.close()

    run(main())
