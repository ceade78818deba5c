"""pg_dump (PostgreSQL 15's client) against splitstream, as a user backs up.

A schema with what a PostgreSQL user's database holds (a primary key, a
default, numeric(10,2), NOT NULL, CHECK, an index, a sequence, an identity
column, a view, a comment, a GRANT, a foreign key, another schema, SQL
functions, an unlogged table) plus streams and continuous views is dumped
from splitstream:

* the dump restores with psql into a fresh splitstream, whose own dump is the
  same and whose tables, sequences and views give the same rows; the stream
  and the continuous view come back as such (the view counts new rows);
* each object's entry is what PostgreSQL 15's pg_dump prints for the same
  schema, the stream and the continuous view being the only extra entries;
* the dump restores into PostgreSQL 15 with psql (only the stream and its
  view fail there: PostgreSQL has no stream server), giving the same data.
"""
from __future__ import annotations

import os
import re
import subprocess

import psycopg
import pytest

from tests.support.servers import PG15_BIN, postgres15_available

pytestmark = pytest.mark.skipif(not (PG15_BIN / "pg_dump").is_file() or not postgres15_available(),
                                reason="needs PostgreSQL 15's pg_dump and psql")

#: the plain part, run on splitstream and on PostgreSQL 15 ({role}: a role both have)
SCHEMA = [
    "CREATE SEQUENCE order_seq START 100 INCREMENT 5",
    """CREATE TABLE customers (
        id integer PRIMARY KEY,
        name text NOT NULL,
        balance numeric(10,2) DEFAULT 0,
        created date DEFAULT '2024-01-01',
        CONSTRAINT balance_positive CHECK (balance >= 0))""",
    """CREATE TABLE orders (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        customer_id integer NOT NULL REFERENCES customers (id) ON DELETE CASCADE,
        ref bigint DEFAULT nextval('order_seq'),
        amount numeric(10,2),
        note varchar(40))""",
    "CREATE INDEX orders_customer_idx ON orders (customer_id)",
    "CREATE SCHEMA sales",
    """CREATE TABLE sales."Items" (sku text PRIMARY KEY, qty int DEFAULT 0 NOT NULL, price numeric(8,3), tags text[],
        meta jsonb, seen timestamptz DEFAULT now())""",
    'COMMENT ON COLUMN sales."Items".qty IS \'on hand\'',
    'CREATE UNIQUE INDEX items_price_sku ON sales."Items" (price, sku)',
    "CREATE UNLOGGED TABLE scratch (k int, v double precision)",
    "CREATE FUNCTION sales.total(q int, p numeric) RETURNS numeric LANGUAGE sql IMMUTABLE AS $$ SELECT q * p $$",
    "CREATE FUNCTION add_one(x integer) RETURNS integer AS 'SELECT x + 1' LANGUAGE sql",
    "GRANT USAGE ON SCHEMA sales TO {role}",
    """INSERT INTO sales."Items" VALUES ('a1', 3, 2.5, '{{x,y}}', '{{"k": 1}}', '2024-01-01 00:00:00+00'),
       ('b2', 0, NULL, NULL, NULL, NULL)""",
    "INSERT INTO scratch VALUES (1, 0.5)",
    "CREATE VIEW rich_customers AS SELECT id, name FROM customers WHERE balance > 100",
    "COMMENT ON TABLE customers IS 'people who buy'",
    "GRANT SELECT ON customers TO {role}",
    "INSERT INTO customers VALUES (1, 'ann', 150.25, '2024-02-03'), (2, 'bob', 10, DEFAULT), (3, 'o''neil', 0, NULL)",
    """INSERT INTO orders (customer_id, amount, note)
       VALUES (1, 10.5, 'first'), (2, 3.25, NULL), (1, 99.99, E'tab\\tand "quote"')""",
]
#: splitstream's own objects: a stream and a continuous view over it
STREAM = [
    "CREATE FOREIGN TABLE clicks (url text, ms integer) SERVER stream",
    "CREATE VIEW click_counts AS SELECT url, count(*) AS n, sum(ms) AS total FROM clicks GROUP BY url",
    "INSERT INTO clicks VALUES ('a', 1), ('b', 2), ('a', 3)",
    """CREATE FOREIGN TABLE readings (k text, ts timestamptz, WATERMARK FOR ts AS ts - INTERVAL '5 seconds')
       SERVER stream OPTIONS (capacity '500')""",
    "CREATE VIEW click_window WITH (sw = '5 minutes') AS SELECT url, count(*) FROM clicks GROUP BY url",
    """CREATE VIEW click_recent AS SELECT url, max(ms) FROM clicks
       WHERE arrival_timestamp > clock_timestamp() - interval '1 hour' GROUP BY url""",
    """CREATE VIEW click_minutes AS SELECT url, window_start, count(*) AS n
       FROM TUMBLE(clicks, arrival_timestamp, INTERVAL '1 minute') GROUP BY url, window_start""",
]
STREAM_ENTRIES = {("FOREIGN TABLE", "clicks"), ("FOREIGN TABLE", "readings"), ("VIEW", "click_counts"), ("VIEW", "click_window"),
                  ("VIEW", "click_recent"), ("VIEW", "click_minutes")}
#: what the plain tables, views and sequences read back as
READS = [
    "SELECT * FROM customers ORDER BY id",
    "SELECT * FROM orders ORDER BY id",
    "SELECT * FROM rich_customers ORDER BY id",
    "SELECT nextval('order_seq')",
    'SELECT * FROM sales."Items" ORDER BY sku',
    "SELECT * FROM scratch",
    "SELECT add_one(1), sales.total(2, 1.5)",
    "INSERT INTO orders (customer_id) VALUES (3) RETURNING id, ref",
]

#: lines of a dump that belong to no entry: comments, psql's \\restrict key, and the tablespace and
#: access method SETs pg_dump writes where the next table needs them (after a stream's entry, here)
_NOT_OF_ENTRY = ("--", "\\restrict", "\\unrestrict", "SET default_tablespace = ", "SET default_table_access_method = ")
_ENTRY = re.compile(r"^-- Name: (?P<name>.*?); Type: (?P<type>.*?); Schema: .*$", re.M)


def _client(tool: str, dsn_parts: tuple[str, int, str], *args: str, stdin: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    host, port, db = dsn_parts
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PG")}, "PGCONNECT_TIMEOUT": "10"}
    return subprocess.run([str(PG15_BIN / tool), "-h", host, "-p", str(port), "-U", "postgres", *args, db],
                          input=stdin, capture_output=True, text=True, env=env, timeout=120)


def pg_dump(where: tuple[str, int, str]) -> str:
    res = _client("pg_dump", where)
    assert res.returncode == 0, res.stderr
    return res.stdout


def restore(where: tuple[str, int, str], dump: str, stop_on_error: bool = True) -> str:
    """psql -f dump; the errors psql printed."""
    res = _client("psql", where, "-X", "-q", "-v", f"ON_ERROR_STOP={int(stop_on_error)}", "-f", "-", stdin=dump)
    if stop_on_error:
        assert res.returncode == 0, res.stderr
    return res.stderr


def entries(dump: str) -> dict[tuple[str, str], list[str]]:
    """The dump's entries by (type, name): their statements' lines (comments,
    blank lines and psql's \\restrict key left out, and the SETs pg_dump puts
    before the next entry that needs them); ("", "") is the prologue."""
    out: dict[tuple[str, str], list[str]] = {}
    key = ("", "")
    for line in dump.splitlines():
        m = _ENTRY.match(line)
        if m:
            key = (m.group("type"), m.group("name"))
            continue
        if line.strip() and not line.startswith(_NOT_OF_ENTRY):
            out.setdefault(key, []).append(line)
    return out


def run_all(conn: psycopg.Connection, statements: list[str], role: str) -> None:
    for sql in statements:
        conn.execute(sql.format(role=role))


def reads(conn: psycopg.Connection) -> list[list[tuple]]:
    return [conn.execute(sql).fetchall() for sql in READS]


@pytest.fixture
def role(pg15, unique_name):
    """A role name both servers get (roles are global in PostgreSQL 15's cluster)."""
    name = unique_name("reader")
    with psycopg.connect(pg15.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name}")
    yield name
    with psycopg.connect(pg15.dsn, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {name}")
        conn.execute(f"DROP ROLE {name}")


@pytest.fixture
def pg_database(pg15, unique_name):
    """``make() -> (host, port, dbname)``: fresh databases of the PostgreSQL 15 oracle, dropped afterwards."""
    made: list[str] = []

    def make() -> tuple[str, int, str]:
        name = unique_name("db")
        with psycopg.connect(pg15.dsn, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        made.append(name)
        return pg15.host, pg15.port, name

    yield make
    with psycopg.connect(pg15.dsn, autocommit=True) as conn:
        for name in made:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _splitstream_source(ss_server_factory, role: str):
    server = ss_server_factory()
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role}")
        run_all(conn, SCHEMA + STREAM, role)
    return server


def test_dump_restores_into_a_fresh_splitstream(ss_server_factory, role):
    source = _splitstream_source(ss_server_factory, role)
    target = ss_server_factory()
    with psycopg.connect(target.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role}")       # roles are not in a database's dump (pg_dumpall -g)
    dump = pg_dump((source.host, source.port, "postgres"))
    restore((target.host, target.port, "postgres"), dump)

    assert entries(pg_dump((target.host, target.port, "postgres"))) == entries(dump)
    with psycopg.connect(source.dsn, autocommit=True) as src, psycopg.connect(target.dsn, autocommit=True) as dst:
        assert reads(dst) == reads(src)
        # the stream and the continuous view are back as such: the view counts what arrives now
        # (the counts of before are a stream's past, which no dump holds)
        dst.execute("INSERT INTO clicks VALUES ('c', 5), ('c', 6)")
        assert dst.execute("SELECT url, n, total FROM click_counts ORDER BY url").fetchall() == [("c", 2, 11)]
        assert dst.execute("SELECT pg_get_viewdef('click_counts'::regclass)").fetchone() == \
            src.execute("SELECT pg_get_viewdef('click_counts'::regclass)").fetchone()


def test_entries_as_postgresql_dumps_them(ss_server_factory, role, pg_database):
    source = _splitstream_source(ss_server_factory, role)
    oracle = pg_database()
    with psycopg.connect(host=oracle[0], port=oracle[1], dbname=oracle[2], user="postgres", autocommit=True) as conn:
        run_all(conn, SCHEMA, role)
    ours = entries(pg_dump((source.host, source.port, "postgres")))
    theirs = entries(pg_dump(oracle))
    assert set(ours) - set(theirs) == STREAM_ENTRIES
    differ = {k: (ours.get(k), v) for k, v in theirs.items() if ours.get(k) != v}
    assert differ == {}, "\n".join(f"{k}:\n ours {o}\n pg15 {t}" for k, (o, t) in differ.items())


def test_dump_restores_into_postgresql(ss_server_factory, role, pg_database):
    source = _splitstream_source(ss_server_factory, role)
    target = pg_database()
    errors = restore(target, pg_dump((source.host, source.port, "postgres")), stop_on_error=False)
    failed = re.findall(r"ERROR:  (.*)", errors)
    # PostgreSQL has no stream server: the stream, and so its views, are all that fail
    assert failed[0] == 'server "stream" does not exist'
    expected = {f'relation "public.{name}" does not exist' for _, name in STREAM_ENTRIES} | {failed[0]}
    expected.add('missing FROM-clause entry for table "public"')    # TUMBLE(public.clicks, ...): none in PostgreSQL
    assert set(failed[1:]) <= expected and len(failed) >= len(STREAM_ENTRIES)
    with psycopg.connect(source.dsn, autocommit=True) as src, \
            psycopg.connect(host=target[0], port=target[1], dbname=target[2], user="postgres", autocommit=True) as dst:
        assert reads(dst) == reads(src)
