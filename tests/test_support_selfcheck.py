"""Self-checks for the test infrastructure itself.

The differential harness is only worth something if it can fail, so these
tests run it PostgreSQL-against-PostgreSQL (where it must agree) and feed it
deliberate differences (which it must report). Server lifecycle code is
checked against real PostgreSQL and against a tiny fake TCP server, so none of
this depends on splitstream's own server working yet.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Callable, Iterator

import psycopg
import pytest

from tests.support.diff import (
    OutcomeMismatch,
    assert_same,
    check_both,
    diff_file,
    differences,
    execute,
    has_top_level_order_by,
    parse_corpus,
    run_both,
    values_equal,
)
from tests.support.servers import (
    Postgres15,
    SplitstreamServer,
    free_port,
    port_accepts,
    postgres15_available,
)


TWIN_DB = "selfcheck_twin"


@pytest.fixture(scope="session")
def pg15_twin_db(pg15: Postgres15) -> Iterator[str]:
    """A second database in pg15, so PG-vs-PG runs see independent state
    (like splitstream vs PostgreSQL do) and DDL can run on both sides."""
    with psycopg.connect(pg15.dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TWIN_DB}")
        conn.execute(f"CREATE DATABASE {TWIN_DB}")
    yield pg15.dsn.replace("dbname=postgres", f"dbname={TWIN_DB}")
    with psycopg.connect(pg15.dsn, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TWIN_DB} WITH (FORCE)")


@pytest.fixture
def pg_conn2(pg15_twin_db: str) -> Iterator[psycopg.Connection]:
    """A connection to the twin database, standing in for splitstream."""
    conn = psycopg.connect(pg15_twin_db, autocommit=True)
    try:
        yield conn
    finally:
        conn.close()


@pytest.fixture
def table(
    pg_conn: psycopg.Connection, pg_conn2: psycopg.Connection, unique_name: Callable[..., str]
) -> Iterator[str]:
    """The same small table, with awkward values, in both databases."""
    name = unique_name()
    for conn in (pg_conn, pg_conn2):
        conn.execute(f"CREATE TABLE {name} (id int, v float8, s text, ts timestamptz, n numeric)")
        conn.execute(
            f"""INSERT INTO {name} VALUES
                (1, 0.1, 'a', '2024-01-01 00:00:00+00', 1.50),
                (2, 0.2, NULL, '2024-06-01 12:30:00+02', 2),
                (3, 1e300, 'c''q', NULL, NULL),
                (3, 'NaN', 'd', '2024-01-01', -0.001)"""
        )
    yield name
    for conn in (pg_conn, pg_conn2):
        conn.execute(f"DROP TABLE IF EXISTS {name}")


# -- agreement ----------------------------------------------------------------

def test_pg_vs_pg_agrees(pg_conn: psycopg.Connection, pg_conn2: psycopg.Connection, table: str) -> None:
    statements = [
        f"SELECT * FROM {table}",
        f"SELECT id, sum(v) AS total, count(*) FROM {table} GROUP BY id ORDER BY id",
        f"SELECT s, ts, n, ARRAY[id, id] AS arr, '\\x01ff'::bytea AS b, id > 1 AS flag FROM {table}",
        f"SELECT 1 / 0 FROM {table}",  # error on both: 22012
        "SELECT 1 AS a; SELECT 'x' AS b, 2.5 AS c",  # two result sets
        f"UPDATE {table} SET s = 'z' WHERE id = 3",
        f"SELECT * FROM {table} WHERE false",
    ]
    pairs = check_both(pg_conn, pg_conn2, statements)
    assert len(pairs) == len(statements)
    rows = pairs[2][1].rows
    assert rows is not None
    assert ("a", "2024-01-01 00:00:00+00", "1.50", "{1,1}", "\\x01ff", "f") in rows  # PG's text forms
    assert pairs[3][0].sqlstate == pairs[3][1].sqlstate == "22012"
    assert [r.columns for r in pairs[4][0].results] == [["a"], ["b", "c"]]
    assert pairs[5][0].results[0].status == "UPDATE 2"


def test_extended_protocol(pg_conn: psycopg.Connection, pg_conn2: psycopg.Connection) -> None:
    pairs = run_both(pg_conn, pg_conn2, ["SELECT 42 AS x, now()::date > '2000-01-01' AS y"], protocol="extended")
    assert_same(*pairs[0])
    assert pairs[0][0].rows == [("42", "t")]


def test_connection_adapters_untouched(pg_conn: psycopg.Connection) -> None:
    execute(pg_conn, "SELECT 1")
    assert pg_conn.execute("SELECT 1::int").fetchone() == (1,)


# -- the harness must be able to fail ------------------------------------------

def test_detects_value_mismatch(pg_conn: psycopg.Connection, pg_conn2: psycopg.Connection) -> None:
    pg_conn.execute("SET timezone = 'UTC'")
    pg_conn2.execute("SET timezone = 'Asia/Tokyo'")
    (ss, pg), = run_both(pg_conn, pg_conn2, ["SELECT '2024-01-01 00:00:00+00'::timestamptz AS t"])
    with pytest.raises(OutcomeMismatch, match="rows only in splitstream"):
        assert_same(ss, pg)


def test_detects_error_vs_success(pg_conn: psycopg.Connection, unique_name: Callable[..., str]) -> None:
    name = unique_name()
    pg_conn.execute(f"CREATE TABLE {name} (id int)")
    try:
        ok = execute(pg_conn, f"SELECT * FROM {name}")
        missing = execute(pg_conn, f"SELECT * FROM {name}_missing")
        assert missing.sqlstate == "42P01"
        with pytest.raises(OutcomeMismatch, match="only splitstream raised"):
            assert_same(missing, ok)
        with pytest.raises(OutcomeMismatch, match="only postgresql raised"):
            assert_same(ok, missing)
    finally:
        pg_conn.execute(f"DROP TABLE {name}")


def test_detects_sqlstate_columns_types_order_and_status(pg_conn: psycopg.Connection) -> None:
    div0 = execute(pg_conn, "SELECT 1/0")
    bad_cast = execute(pg_conn, "SELECT 'x'::int")
    assert differences(div0, bad_cast)  # 22012 vs 22P02
    assert not differences(div0, bad_cast, sqlstate_class_only=True)  # both class 22

    assert differences(execute(pg_conn, "SELECT 1 AS a"), execute(pg_conn, "SELECT 1 AS b"))
    int4, int8 = execute(pg_conn, "SELECT 1 AS a"), execute(pg_conn, "SELECT 1::int8 AS a")
    assert int4.rows == int8.rows
    assert differences(int4, int8) and not differences(int4, int8, check_types=False)

    fwd = execute(pg_conn, "SELECT * FROM (VALUES (1), (2)) v(x) ORDER BY x")
    rev = execute(pg_conn, "SELECT * FROM (VALUES (1), (2)) v(x) ORDER BY x DESC")
    assert differences(fwd, rev)  # heuristic: ORDER BY -> ordered comparison
    assert not differences(fwd, rev, ordered=False)

    a = execute(pg_conn, "SELECT * FROM (VALUES (1), (1), (2)) v(x)")
    b = execute(pg_conn, "SELECT * FROM (VALUES (1), (2), (2)) v(x)")
    assert differences(a, b)  # multisets, not sets

    assert differences(execute(pg_conn, "SET work_mem = '8MB'"), execute(pg_conn, "RESET work_mem"))
    assert not differences(
        execute(pg_conn, "SET work_mem = '8MB'"), execute(pg_conn, "RESET work_mem"), check_status=False
    )


def test_float_tolerance(pg_conn: psycopg.Connection) -> None:
    assert values_equal("0.30000000000000004", "0.3")
    assert values_equal("NaN", "NaN") and values_equal(None, None)
    assert not values_equal("1", "1.001")
    assert not values_equal(None, "") and not values_equal("abc", "abd")
    near = execute(pg_conn, "SELECT 0.1::float8 + 0.2::float8 AS f")
    exact = execute(pg_conn, "SELECT 0.3::float8 AS f")
    assert near.rows != exact.rows
    assert_same(near, exact)


def test_order_by_heuristic() -> None:
    assert has_top_level_order_by("select * from t order by 1")
    assert has_top_level_order_by("SELECT x FROM t ORDER\n  BY x LIMIT 3")
    assert not has_top_level_order_by("select * from (select * from t order by 1) s")
    assert not has_top_level_order_by("select string_agg(s, ',' order by s) from t")
    assert not has_top_level_order_by("select row_number() over (order by x) from t")
    assert not has_top_level_order_by("select 'order by' -- order by\nfrom t")
    assert not has_top_level_order_by('select "order by" from t /* order by */')
    assert not has_top_level_order_by("select $$ order by $$")


# -- corpus files ----------------------------------------------------------------

CORPUS = """\
-- a comment that is not an annotation
CREATE TABLE {{t}} (id int, s text);
INSERT INTO {{t}} VALUES (1, 'a;b'), (2, 'b'), (3, NULL);

-- ordered
SELECT * FROM {{t}}
  WHERE id > 1
  ORDER BY id DESC;
-- unordered
SELECT s FROM {{t}} ORDER BY id;
-- error 22012
SELECT 1/0;
-- error
SELECT * FROM {{t}}_nope;
-- skip
SELECT this is not sql;
CREATE FUNCTION {{t}}_f() RETURNS int AS $$
  SELECT 1;
$$ LANGUAGE sql;
SELECT {{t}}_f() AS one
;;
DROP FUNCTION {{t}}_f;
DROP TABLE {{t}};
"""


def test_parse_corpus() -> None:
    cases = parse_corpus(CORPUS, {"t": "tbl"})
    assert [c.line for c in cases][:3] == [2, 3, 6]
    assert cases[1].statement.endswith("(3, NULL);")
    assert cases[2].ordered is True and "ORDER BY id DESC" in cases[2].statement
    assert cases[3].ordered is False
    assert cases[4].expect_error and cases[4].expect_sqlstate == "22012"
    assert cases[5].expect_error and cases[5].expect_sqlstate is None
    assert cases[6].skip
    assert cases[7].statement.startswith("CREATE FUNCTION tbl_f()") and "SELECT 1;" in cases[7].statement
    assert cases[8].statement == "SELECT tbl_f() AS one"
    assert len(cases) == 11


def test_diff_file_pg_vs_pg(
    pg_conn: psycopg.Connection, pg_conn2: psycopg.Connection, tmp_path: Path, unique_name: Callable[..., str]
) -> None:
    path = tmp_path / "corpus.sql"
    path.write_text(CORPUS)
    pairs = diff_file(path, pg_conn, pg_conn2, names={"t": unique_name()})
    assert len(pairs) == 10  # the skipped statement is not run


def test_diff_file_reports_failures(
    pg_conn: psycopg.Connection, pg_conn2: psycopg.Connection, tmp_path: Path
) -> None:
    path = tmp_path / "bad.sql"
    path.write_text("SELECT 1;\n-- error\nSELECT 2;\n")
    with pytest.raises(OutcomeMismatch, match=r"bad.sql:3: expected an error"):
        diff_file(path, pg_conn, pg_conn2)
    path.write_text("-- error 22P02\nSELECT 1/0;\n")
    with pytest.raises(OutcomeMismatch, match="expected SQLSTATE 22P02"):
        diff_file(path, pg_conn, pg_conn2)


# -- server process management ----------------------------------------------------

def test_postgres15_starts_and_stops() -> None:
    if not postgres15_available():
        pytest.skip("PostgreSQL 15 not installed")
    pg = Postgres15().start()
    base, port = pg.base_dir, pg.port
    try:
        with psycopg.connect(pg.dsn) as conn:
            row = conn.execute("SELECT current_setting('TimeZone'), current_setting('DateStyle'), "
                               "current_setting('server_version_num')::int / 10000").fetchone()
        assert row == ("UTC", "ISO, MDY", 15)
        assert pg.url == f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        pg.stop()
    assert not base.exists()
    assert not port_accepts("127.0.0.1", port)
    pg.stop()  # idempotent


FAKE_SERVER = """\
import signal, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()
signal.signal(signal.SIGTERM, lambda *a: (print('graceful', flush=True), sys.exit(0)))
print('ready', flush=True)
while True:
    s.accept()[0].close()
"""


class FakeServer(SplitstreamServer):
    """SplitstreamServer running a stand-in listener, to test lifecycle handling alone."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", FAKE_SERVER, str(self.port)]


def test_server_lifecycle_with_fake(tmp_path: Path) -> None:
    srv = FakeServer(tmp_path / "data")
    srv.start(timeout=10)
    port, pid = srv.port, srv.pid
    assert srv.running and port_accepts(srv.host, port)
    assert srv.stop() == 0
    assert not port_accepts(srv.host, port)
    srv.start(timeout=10)
    srv.restart(crash=True, timeout=10)  # SIGKILL, then the same port again
    assert srv.port == port and srv.pid != pid and port_accepts(srv.host, port)
    srv.kill()
    assert not srv.running
    log = srv.log_text()
    assert log.count("\nready\n") == 3 and log.count("\ngraceful\n") == 1


def test_server_start_failure_shows_log(tmp_path: Path) -> None:
    srv = SplitstreamServer(tmp_path / "data", extra_args=["--no-such-option-xyzzy"])
    with pytest.raises(RuntimeError, match="exited with code"):
        srv.start(timeout=20)
    assert not srv.running


def test_server_connection_strings(tmp_path: Path) -> None:
    srv = SplitstreamServer(tmp_path / "data", password="p w'd@x")
    assert srv.dsn == f"host=127.0.0.1 port={srv.port} user=postgres dbname=postgres password='p w\\'d@x'"
    assert srv.url == f"postgresql://postgres:p%20w%27d%40x@127.0.0.1:{srv.port}/postgres"
    argv = srv.command()
    assert argv[1:4] == ["-m", "splitstream", "serve"] and argv[argv.index("--password") + 1] == "p w'd@x"
    assert psycopg.conninfo.conninfo_to_dict(srv.dsn)["password"] == "p w'd@x"


def test_free_port_and_unique_name(unique_name: Callable[..., str]) -> None:
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # really free
    a, b = unique_name(), unique_name("Stream-X")
    assert a != b and a.startswith("t_free_port_and_unique_name_") and b.startswith("stream_x_")
    assert all(len(n) <= 63 and n == n.lower() for n in (a, b))
