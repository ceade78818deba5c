"""psql's describe commands for views, streams, materialized views, schemas,
databases and aggregates print, byte for byte, what PostgreSQL 15 prints for
the same objects (issue 15, scope 7).

A stream is a foreign table over SERVER stream: PostgreSQL gets the same
foreign table (over a wrapper without a handler, enough to describe it), so
``\\dE+`` and ``\\d+`` of a stream are compared as they are.  A continuous
materialized view (over a stream) is compared with PostgreSQL's materialized
view of the same query over a table of the same name: PostgreSQL cannot
materialize a foreign table without a handler, and psql must print the two
alike.

Masks, each because the value must differ:

* the Size column of ``\\dv+``, ``\\dm+`` and ``\\l+``: PostgreSQL counts heap
  pages (8 kB each, plus its catalogs for a database), splitstream its own
  column buffers;
* the Description column of ``\\daS``: PostgreSQL's comments on its own
  built-in functions (pg_description rows of its bootstrap catalog), which
  splitstream's function catalog does not carry.

Commands that print sizes run in unaligned format, so a masked value does not
move the other columns' alignment.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import psycopg

from splitstream.executor.execution import proc_catalog  # noqa: F401  (loads every aggregate, sketches too)
from splitstream.executor.execution.aggregates import installed_aggregates
import pytest

from .conftest import PSQL, client_env

PG_DB = "psql_meta"

#: PostgreSQL needs a wrapper and a server named stream to hold the same foreign tables
PG_ONLY = [
    "CREATE FOREIGN DATA WRAPPER stream_fdw",
    "CREATE SERVER stream FOREIGN DATA WRAPPER stream_fdw",
    # PipelineDB's CREATE EXTENSION makes it; splitstream always has it, usable by all as its other built-in schemas
    "CREATE SCHEMA pipelinedb", "GRANT USAGE ON SCHEMA pipelinedb TO PUBLIC",
]

DDL = [
    """CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL DEFAULT 'none', price numeric(10,2) DEFAULT 0,
        qty int CHECK (qty >= 0), created timestamptz DEFAULT now(), code varchar(8) UNIQUE)""",
    "COMMENT ON TABLE items IS 'the items'",
    "CREATE FOREIGN TABLE clicks (user_id int, url text, ts timestamptz) SERVER stream",
    "CREATE FOREIGN TABLE events (kind text, n bigint) SERVER stream OPTIONS (capacity '5000')",
    "COMMENT ON FOREIGN TABLE events IS 'raw events'",
    "CREATE VIEW item_names AS SELECT id, upper(name) AS uname FROM items WHERE price > 10",
    "CREATE VIEW cheap AS SELECT i.id, i.name, CASE WHEN i.price < 5 THEN 'cheap' ELSE 'dear' END AS band "
    "FROM items i WHERE i.qty BETWEEN 1 AND 10 ORDER BY i.name LIMIT 20",
    "CREATE VIEW clicks_per_user AS SELECT user_id, count(*) AS n, max(ts) AS last_seen FROM clicks GROUP BY user_id",
    "CREATE MATERIALIZED VIEW mv_items AS SELECT name, sum(qty) AS total FROM items GROUP BY name",
    "CREATE SCHEMA sales",
    "COMMENT ON SCHEMA sales IS 'sales data'",
    "CREATE TABLE sales.orders (id bigint, item int, amount numeric)",
    "CREATE VIEW sales.big AS SELECT o.id, o.amount FROM sales.orders o JOIN items ON items.id = o.item "
    "WHERE o.amount > 100",
]

#: compared as printed (aligned)
ALIGNED = [
    r"\d+ items", r"\d items", r"\d+ item_names", r"\d+ cheap", r"\d+ clicks_per_user", r"\dv", r"\dv sales.*",
    r"\d+ clicks", r"\d+ events", r"\d events", r"\dE", r"\dE+", r"\sv item_names", r"\sv cheap", r"\sv+ clicks_per_user", r"\sv sales.big",
    r"\d", r"\d sales.*", r"\dm", r"\d+ mv_items", r"\d mv_items", r"\sv mv_items", r"\dn", r"\dn+", r"\da", r"\d+ sales.big",
]

#: compared in unaligned format, column -> why it is masked (see the module's docstring)
MASKED = {r"\dv+": "Size", r"\dm+": "Size", r"\daS count": "Description"}


def _run(port: int, dbname: str, script: Path) -> str:
    res = subprocess.run([PSQL, "-X", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-d", dbname,
                          "-P", "pager=off", "-f", str(script)], capture_output=True, text=True,
                         env=client_env(), timeout=120)
    return res.stdout + res.stderr


def _mask(text: str, column: str) -> str:
    """Unaligned psql output with the cells of ``column`` replaced by <masked>."""
    out, idx = [], None
    for line in text.splitlines():
        cells = line.split("|")
        if column in cells:
            idx = cells.index(column)
        elif idx is not None and len(cells) > idx and not line.startswith("("):
            cells[idx] = "<masked>"
            line = "|".join(cells)
        else:
            idx = None
        out.append(line)
    return "\n".join(out)


@pytest.fixture(scope="module")
def servers(fresh_ss, pg15):
    with psycopg.connect(pg15.dsn, autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {PG_DB}")
        c.execute(f"CREATE DATABASE {PG_DB}")
    pg_dsn = pg15.dsn.replace("dbname=postgres", f"dbname={PG_DB}")
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        for stmt in PG_ONLY + DDL:
            c.execute(stmt)
    with psycopg.connect(fresh_ss.dsn, autocommit=True) as c:
        for stmt in DDL:
            c.execute(stmt)
    yield fresh_ss, pg15
    with psycopg.connect(pg15.dsn, autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")


def _both(servers, tmp_path: Path, lines: list[str]) -> tuple[str, str]:
    """The output of one psql script on each side (the same file: error
    messages name it alike)."""
    ss, pg = servers
    script = tmp_path / "meta.sql"
    script.write_text("\n".join(lines) + "\n")
    return _run(ss.port, "postgres", script), _run(pg.port, PG_DB, script)


@pytest.mark.parametrize("command", ALIGNED)
def test_describe_as_postgres(servers, tmp_path, command):
    ours, theirs = _both(servers, tmp_path, [command])
    assert "ERROR" not in theirs, theirs
    assert ours == theirs, f"{command}\n--- splitstream ---\n{ours}\n--- postgres ---\n{theirs}"


@pytest.mark.parametrize("command", sorted(MASKED))
def test_describe_as_postgres_sizes_masked(servers, tmp_path, command):
    ours, theirs = _both(servers, tmp_path, [r"\pset format unaligned", command])
    ours, theirs = _mask(ours, MASKED[command]), _mask(theirs, MASKED[command])
    assert "<masked>" in theirs, theirs
    assert ours == theirs, f"{command}\n--- splitstream ---\n{ours}\n--- postgres ---\n{theirs}"


def test_list_databases_plus(servers, tmp_path):
    """\\l+: the three databases splitstream serves, as PostgreSQL lists them
    (the PostgreSQL cluster also holds the other tests' databases)."""
    ours, theirs = _both(servers, tmp_path, [r"\pset format unaligned", r"\l+"])

    def ours_only(text: str) -> str:
        keep = [line for line in text.splitlines()
                if not line.startswith(("psql_", "(")) and "|" in line or line == "List of databases"]
        # the Size cells (an ACL cell spans two lines, so they are found by their form)
        return re.sub(r"\|\d+ (bytes|kB|MB|GB)\|", "|<masked>|", "\n".join(keep))

    assert ours_only(ours) == ours_only(theirs)
    assert "template1|" in ours_only(ours)


def test_continuous_materialized_view_described_as_postgres_matview(fresh_ss, pg15, tmp_path):
    """A materialized view over a stream prints as PostgreSQL's materialized
    view of the same query over a table."""
    view = "CREATE MATERIALIZED VIEW mv_clicks AS SELECT url, count(*) AS hits FROM clicks2 GROUP BY url"
    with psycopg.connect(pg15.dsn, autocommit=True) as c:
        c.execute("DROP SCHEMA IF EXISTS cv_meta CASCADE")
        c.execute("CREATE SCHEMA cv_meta")
        c.execute("SET search_path = cv_meta")
        c.execute("CREATE TABLE clicks2 (user_id int, url text, ts timestamptz)")
        c.execute(view)
    with psycopg.connect(fresh_ss.dsn, autocommit=True) as c:
        c.execute("CREATE SCHEMA cv_meta")
        c.execute("SET search_path = cv_meta")
        c.execute("CREATE FOREIGN TABLE clicks2 (user_id int, url text, ts timestamptz) SERVER stream")
        c.execute(view)
    script = tmp_path / "cv.sql"
    script.write_text("SET search_path = cv_meta;\n\\dm\n\\d+ mv_clicks\n\\sv mv_clicks\n"
                      "SELECT matviewname, definition FROM pg_matviews WHERE schemaname = 'cv_meta';\n")
    try:
        ours, theirs = _run(fresh_ss.port, "postgres", script), _run(pg15.port, "postgres", script)
        assert ours == theirs, f"--- splitstream ---\n{ours}\n--- postgres ---\n{theirs}"
        assert "materialized view" in ours
    finally:
        with psycopg.connect(pg15.dsn, autocommit=True) as c:
            c.execute("DROP SCHEMA cv_meta CASCADE")
        with psycopg.connect(fresh_ss.dsn, autocommit=True) as c:
            c.execute("DROP SCHEMA cv_meta CASCADE")


def test_pg_aggregate_as_postgres(servers):
    """pg_aggregate is generated from the function catalog: every aggregate
    pg_proc lists has its row, and where PostgreSQL has the same overload its
    kind (normal, ordered-set, hypothetical-set), direct-argument count and
    result agree.  (splitstream declares some polymorphic overloads with
    "any" where PostgreSQL has anyelement; those have no counterpart.)"""
    ss, pg = servers
    query = ("SELECT a.aggfnoid::text, pg_get_function_arguments(p.oid), format_type(p.prorettype, NULL), "
             "a.aggkind, a.aggnumdirectargs FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid "
             "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'pg_catalog'")
    with psycopg.connect(ss.dsn, autocommit=True) as c:
        ours = c.execute(query).fetchall()
        n_procs = c.execute("SELECT count(*) FROM pg_proc WHERE prokind = 'a'").fetchone()
    with psycopg.connect(pg.dsn.replace("dbname=postgres", f"dbname={PG_DB}"), autocommit=True) as c:
        theirs = {(r[0], r[1]): r for r in c.execute(query).fetchall()}
    assert n_procs == (len(ours),)
    matched = [r for r in ours if (r[0], r[1]) in theirs]
    assert len(matched) >= 0.8 * len(ours), sorted(set(ours) - set(matched))
    for row in matched:
        assert row == theirs[(row[0], row[1])]
    def bare(name: str) -> str:
        return name.removeprefix("pg_catalog.")

    # every aggregate is PostgreSQL's, except the extensions (PipelineDB's sketches, reservoir_sample)
    assert {bare(r[0]) for r in ours} - installed_aggregates() <= {bare(k[0]) for k in theirs}
    kinds = {bare(r[0]): r[3] for r in ours}
    assert kinds["count"] == "n" and kinds["percentile_cont"] == "o" and kinds["mode"] == "o"
