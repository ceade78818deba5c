"""psql's backslash commands print what PostgreSQL 15 prints for the same DDL.

splitstream runs on a server of this module's own and PostgreSQL in a fresh
database, so the unfiltered listings (\\d, \\dt, \\dv) hold exactly the
objects created here on both sides.
"""
from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest

from .conftest import psql

DDL = [
    """CREATE TABLE customers (
        id int PRIMARY KEY,
        name text NOT NULL,
        city varchar(40) DEFAULT 'Munich',
        score numeric(10,2) DEFAULT 0,
        code char(3),
        created timestamptz DEFAULT CURRENT_TIMESTAMP,
        updated timestamptz DEFAULT now(),
        active boolean NOT NULL DEFAULT true,
        tags text[],
        doc jsonb DEFAULT '{}',
        balance bigint DEFAULT -1,
        CONSTRAINT customers_name_key UNIQUE (name)
    )""",
    "CREATE INDEX customers_city_idx ON customers (city, score)",
    """CREATE TABLE orders (
        order_id bigserial PRIMARY KEY,
        customer_id int NOT NULL REFERENCES customers(id),
        amount double precision,
        qty smallint DEFAULT 1,
        placed date DEFAULT CURRENT_DATE,
        ref uuid,
        note text DEFAULT 'none'
    )""",
    "CREATE INDEX orders_customer_idx ON orders (customer_id)",
    "CREATE UNIQUE INDEX orders_ref_key ON orders (ref)",
    "CREATE VIEW big_orders AS SELECT order_id, amount FROM orders WHERE amount > 100",
    "CREATE VIEW customer_names AS SELECT id, name FROM customers",
]

PG_DB = "psql_diff"


@pytest.fixture(scope="module")
def servers(fresh_ss, pg15):
    """(splitstream server, pg15) with DDL applied; PostgreSQL in its own database."""
    with psycopg.connect(pg15.dsn, autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {PG_DB}")
        c.execute(f"CREATE DATABASE {PG_DB}")
    pg_dsn = pg15.dsn.replace("dbname=postgres", f"dbname={PG_DB}")
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        c.execute("CREATE SCHEMA pipelinedb")   # PipelineDB's CREATE EXTENSION makes it; splitstream always has it
    for dsn in (fresh_ss.dsn, pg_dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            for stmt in DDL:
                c.execute(stmt)
            c.execute("INSERT INTO customers (id, name, code) VALUES (1, 'ann', 'a'), (2, 'bob', NULL)")
    yield fresh_ss, pg15
    with psycopg.connect(pg15.dsn, autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")


def both(servers, *commands: str, pg_db: str = PG_DB, **kw) -> tuple[str, str]:
    ss, pg = servers
    return psql(ss.host, ss.port, *commands, **kw), psql(pg.host, pg.port, *commands, dbname=pg_db, **kw)


@pytest.mark.parametrize("command", [
    r"\d", r"\dt", r"\dv", r"\di",
    r"\d customers", r"\d orders", r"\d big_orders", r"\d customer_names",
    r"\dt customers", r"\dt+ customers*", r"\d customers_pkey", r"\dn",
])
def test_describe_matches_postgres(servers, command):
    ours, theirs = both(servers, command)
    if command.startswith(r"\dt+"):
        # sizes and access method differ by nature of the storage
        ours, theirs = (re.sub(r"\|\s*(\d+ (bytes|kB|MB)|heap)\s*", "| x ", t) for t in (ours, theirs))
    assert ours == theirs, f"{command}\n--- splitstream ---\n{ours}\n--- postgres ---\n{theirs}"


def test_list_databases_postgres_row(servers):
    ours, theirs = both(servers, r"\l", pg_db="postgres")

    def header_and_postgres_row(text: str) -> list[str]:
        lines = text.splitlines()
        return lines[:3] + [line for line in lines if line.startswith(" postgres ")]

    assert header_and_postgres_row(ours) == header_and_postgres_row(theirs)
    assert len(header_and_postgres_row(ours)) == 4


def test_conninfo(servers):
    ss, pg = servers
    ours, theirs = both(servers, r"\conninfo", pg_db="postgres")
    assert ours.replace(f'"{ss.port}"', "PORT") == theirs.replace(f'"{pg.port}"', "PORT")
    assert 'You are connected to database "postgres" as user "postgres" on host "127.0.0.1"' in ours


def test_timing(servers):
    ours, theirs = both(servers, r"\timing on", "SELECT 42 AS answer")
    norm = lambda t: re.sub(r"Time: \d+\.\d+ ms", "Time: N ms", t)  # noqa: E731
    assert norm(ours) == norm(theirs)
    assert "Timing is on." in ours and "Time: " in ours


def test_copy_both_directions(servers, tmp_path: Path):
    ss, pg = servers
    src = tmp_path / "in.csv"
    src.write_text("10,carl,Berlin\n11,\"dora, jr\",\n12,eve,\"Paris\"\n")
    outs = {}
    for name, port, db in (("ss", ss.port, "postgres"), ("pg", pg.port, PG_DB)):
        load = psql("127.0.0.1", port, rf"\copy customers (id, name, city) FROM '{src}' WITH (FORMAT csv)",
                    dbname=db, cwd=str(tmp_path))
        assert load.strip() == "COPY 3"
        dest = tmp_path / f"out_{name}.csv"
        dump = psql("127.0.0.1", port,
                    rf"\copy (SELECT id, name, city, score, active FROM customers ORDER BY id) TO '{dest}' WITH (FORMAT csv, HEADER)",
                    dbname=db, cwd=str(tmp_path))
        assert dump.strip() == "COPY 5"
        text_dest = tmp_path / f"out_{name}.txt"
        psql("127.0.0.1", port, rf"\copy customers (id, name, code) TO '{text_dest}'", dbname=db)
        outs[name] = (dest.read_text(), text_dest.read_text())
    assert outs["ss"] == outs["pg"]
    assert "11,\"dora, jr\",,0.00,t" in outs["ss"][0]
