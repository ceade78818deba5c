"""ALTER SEQUENCE through the real server: a pg_dump of tables with serial
columns (which pg_dump links to their sequences with ALTER SEQUENCE ...
OWNED BY) restores into a fresh splitstream, and what ALTER SEQUENCE
changes is logged, so a restart (clean or crash) keeps it."""
from __future__ import annotations

import psycopg
import pytest

from tests.integration.test_pg_dump import pg_dump, restore
from tests.support.servers import PG15_BIN, postgres15_available

SCHEMA = [
    "CREATE TABLE customers (id serial PRIMARY KEY, name text NOT NULL)",
    "CREATE SCHEMA shop",
    "CREATE TABLE shop.orders (id bigserial, customer_id int, note text)",
    "CREATE SEQUENCE shop.ticket_seq INCREMENT 3 START 10",
    "ALTER SEQUENCE shop.ticket_seq OWNED BY shop.orders.customer_id",
    "INSERT INTO customers (name) VALUES ('ann'), ('bob'), ('cy')",
    "INSERT INTO shop.orders (customer_id, note) VALUES (1, 'a'), (2, 'b')",
    "SELECT nextval('shop.ticket_seq'), nextval('shop.ticket_seq')",
]
READS = [
    "SELECT * FROM customers ORDER BY id",
    "SELECT * FROM shop.orders ORDER BY id",
    "SELECT pg_get_serial_sequence('customers', 'id'), pg_get_serial_sequence('shop.orders', 'id'), "
    "pg_get_serial_sequence('shop.orders', 'customer_id')",
    "SELECT schemaname, sequencename, start_value, increment_by, last_value FROM pg_sequences ORDER BY 1, 2",
    "INSERT INTO customers (name) VALUES ('dee') RETURNING id",
    "INSERT INTO shop.orders (customer_id) VALUES (3) RETURNING id",
    "SELECT nextval('shop.ticket_seq')",
]


def _reads(conn: psycopg.Connection) -> list[list[tuple]]:
    return [conn.execute(sql).fetchall() for sql in READS]  # type: ignore[arg-type]


@pytest.mark.skipif(not (PG15_BIN / "pg_dump").is_file() or not postgres15_available(),
                    reason="needs PostgreSQL 15's pg_dump and psql")
def test_dump_of_serial_columns_restores_into_a_fresh_splitstream(ss_server_factory):
    source, target = ss_server_factory(), ss_server_factory()
    with psycopg.connect(source.dsn, autocommit=True) as conn:
        for sql in SCHEMA:
            conn.execute(sql)  # type: ignore[arg-type]
    dump = pg_dump((source.host, source.port, "postgres"))
    assert "ALTER SEQUENCE public.customers_id_seq OWNED BY public.customers.id;" in dump
    restore((target.host, target.port, "postgres"), dump)
    with psycopg.connect(source.dsn, autocommit=True) as src, psycopg.connect(target.dsn, autocommit=True) as dst:
        assert _reads(dst) == _reads(src)
        # the restored sequences are owned by their columns: dropping the table drops them
        dst.execute("DROP TABLE shop.orders")
        assert dst.execute("SELECT relname FROM pg_class WHERE relnamespace = 'shop'::regnamespace").fetchall() == []


@pytest.mark.parametrize("crash", [False, True])
def test_altered_sequence_survives_a_restart(ss_server_factory, crash):
    server = ss_server_factory()
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (a int)")
        conn.execute("CREATE SEQUENCE s")
        conn.execute("CREATE SEQUENCE never_used")
        conn.execute("SELECT nextval('s'), nextval('s')")
        conn.execute("ALTER SEQUENCE s INCREMENT BY 10 MAXVALUE 1000 CYCLE RESTART WITH 50 OWNED BY t.a")
        conn.execute("ALTER SEQUENCE never_used START 40")
    server.restart(crash=crash)
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT increment_by, max_value, cycle, last_value FROM pg_sequences "
                            "WHERE sequencename = 's'").fetchone() == (10, 1000, True, None)
        assert conn.execute("SELECT nextval('s'), nextval('s'), nextval('never_used')").fetchone() == (50, 60, 1)
        assert conn.execute("SELECT pg_get_serial_sequence('t', 'a')").fetchone() == ("public.s",)
        conn.execute("ALTER TABLE t DROP COLUMN a")
        assert conn.execute("SELECT to_regclass('s')").fetchone() == (None,)
