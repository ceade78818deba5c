"""TABLESAMPLE on tables (issue 18, item 3).

PostgreSQL defines the errors (compared with PG15 here); it cannot define
the rows a random sample returns, so the statistical properties are tested:
sample sizes within binomial bounds, inclusion uniform over positions
(chi-square), REPEATABLE giving the same rows, and across a restart.
"""
from __future__ import annotations

import math

import psycopg
import pytest

from tests.unit.test_reservoir import chi2_critical

N = 20_000


@pytest.fixture()
def table(ss_conn, unique_name):
    t = unique_name("t")
    ss_conn.execute(f"CREATE TABLE {t} (x int, s text)")
    ss_conn.execute(f"INSERT INTO {t} SELECT g, 'v' || g FROM generate_series(1, {N}) g")
    yield t
    ss_conn.execute(f"DROP TABLE {t}")


def _count(conn, sql: str) -> int:
    return conn.execute(sql).fetchone()[0]


@pytest.mark.parametrize("method, p", [("BERNOULLI", 10.0), ("BERNOULLI", 0.5), ("SYSTEM", 25.0)])
def test_sample_size_within_binomial_bounds(ss_conn, table, method, p):
    """BERNOULLI keeps each row with probability p; SYSTEM each block (128 rows)."""
    unit = 1 if method == "BERNOULLI" else 128
    units = N / unit
    sd = math.sqrt(units * p / 100 * (1 - p / 100)) * unit
    for seed in range(3):
        got = _count(ss_conn, f"SELECT count(*) FROM {table} TABLESAMPLE {method} ({p}) REPEATABLE ({seed})")
        assert abs(got - N * p / 100) < 5 * sd + unit, (method, p, seed, got)


@pytest.mark.parametrize("method", ["BERNOULLI (0)", "SYSTEM (0)"])
def test_zero_percent_is_empty_and_hundred_is_everything(ss_conn, table, method):
    assert _count(ss_conn, f"SELECT count(*) FROM {table} TABLESAMPLE {method}") == 0
    full = method.replace("(0)", "(100)")
    assert _count(ss_conn, f"SELECT count(*) FROM {table} TABLESAMPLE {full}") == N


@pytest.mark.parametrize("method", ["BERNOULLI (7)", "SYSTEM (7)", "SYSTEM_ROWS (333)", "RESERVOIR (333)"])
def test_repeatable_gives_the_same_rows(ss_conn, table, method):
    q = f"SELECT array_agg(x ORDER BY x) FROM {table} TABLESAMPLE {method} REPEATABLE (42)"
    a = ss_conn.execute(q).fetchone()[0]
    b = ss_conn.execute(q).fetchone()[0]
    c = ss_conn.execute(q.replace("(42)", "(43)")).fetchone()[0]
    assert a == b and a != c and len(a) > 0


@pytest.mark.parametrize("n", [1, 333, N, N + 5])
def test_reservoir_and_system_rows_size_is_min_n_N(ss_conn, table, n):
    for method in ("RESERVOIR", "SYSTEM_ROWS"):
        rows = ss_conn.execute(f"SELECT x FROM {table} TABLESAMPLE {method} ({n})").fetchall()
        assert len(rows) == min(n, N)
        assert len({r[0] for r in rows}) == len(rows)


def test_reservoir_percent_and_rows_spelling(ss_conn, table):
    assert _count(ss_conn, f"SELECT count(*) FROM {table} TABLESAMPLE RESERVOIR (5%)") == N // 20
    assert _count(ss_conn, f"SELECT count(*) FROM {table} TABLESAMPLE RESERVOIR (12 ROWS)") == 12


def test_reservoir_inclusion_is_uniform_over_positions(ss_conn, unique_name):
    """Each of 40 rows lands in a RESERVOIR (8) sample with probability 1/5:
    chi-square over 2,000 seeded queries (the unit tests do 10,000 trials of the kernel)."""
    t = unique_name("u")
    ss_conn.execute(f"CREATE TABLE {t} (x int)")
    ss_conn.execute(f"INSERT INTO {t} SELECT g FROM generate_series(0, 39) g")
    hits = [0] * 40
    trials = 2000
    for seed in range(trials):
        for (x,) in ss_conn.execute(f"SELECT x FROM {t} TABLESAMPLE RESERVOIR (8) REPEATABLE ({seed})"):
            hits[x] += 1
    exp = trials * 8 / 40
    assert sum((h - exp) ** 2 / exp for h in hits) < chi2_critical(39)


def test_bernoulli_inclusion_is_uniform_over_positions(ss_conn, table):
    """Rows in 20 position strata each appear ~p of the time (chi-square)."""
    strata = [0] * 20
    for seed in range(30):
        for (k, c) in ss_conn.execute(f"SELECT (x - 1) / {N // 20}, count(*) FROM {table} "
                                      f"TABLESAMPLE BERNOULLI (10) REPEATABLE ({seed}) GROUP BY 1"):
            strata[k] += c
    exp = sum(strata) / 20
    assert sum((s - exp) ** 2 / exp for s in strata) < chi2_critical(19)


def test_parameters_and_expressions_as_arguments(ss_conn, table):
    a = _count(ss_conn, f"SELECT count(*) FROM {table} TABLESAMPLE BERNOULLI (5 + 5) REPEATABLE (1)")
    b = ss_conn.execute(f"SELECT count(*) FROM {table} TABLESAMPLE BERNOULLI (%s) REPEATABLE (%s)",
                        (10.0, 1.0)).fetchone()[0]
    assert a == b


def test_repeatable_sample_survives_restart(ss_server_factory):
    srv = ss_server_factory()
    q = "SELECT array_agg(x ORDER BY x) FROM t TABLESAMPLE BERNOULLI (3) REPEATABLE (7)"
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        c.execute("CREATE TABLE t (x int)")
        c.execute("INSERT INTO t SELECT g FROM generate_series(1, 5000) g")
        c.execute("DELETE FROM t WHERE x % 10 = 0")
        c.execute("CHECKPOINT")
        c.execute("INSERT INTO t SELECT g FROM generate_series(5001, 6000) g")
        before = c.execute(q).fetchone()[0]
    srv.restart()
    with psycopg.connect(srv.dsn, autocommit=True) as c:
        assert c.execute(q).fetchone()[0] == before


BAD = [
    ("SELECT * FROM {t} TABLESAMPLE reservoir_x (10)", "42704"),
    ("SELECT * FROM {t} TABLESAMPLE BERNOULLI (101)", "2202H"),
    ("SELECT * FROM {t} TABLESAMPLE BERNOULLI (-1)", "2202H"),
    ("SELECT * FROM {t} TABLESAMPLE SYSTEM (100.5)", "2202H"),
    ("SELECT * FROM {t} TABLESAMPLE BERNOULLI (10) REPEATABLE (NULL)", "2202G"),
    ("SELECT * FROM {t} TABLESAMPLE BERNOULLI (NULL)", "2202H"),
    ("SELECT * FROM {t} TABLESAMPLE BERNOULLI (1, 2)", "2202H"),
    ("SELECT * FROM {v} TABLESAMPLE BERNOULLI (10)", "0A000"),
    ("SELECT * FROM (SELECT * FROM {t}) s TABLESAMPLE BERNOULLI (10)", "42601"),
    ("SELECT * FROM generate_series(1, 3) TABLESAMPLE BERNOULLI (10)", "42601"),
    ("WITH c AS (SELECT * FROM {t}) SELECT * FROM c TABLESAMPLE BERNOULLI (10)", "0A000"),
]


@pytest.mark.parametrize("sql, sqlstate", BAD)
def test_errors_as_postgresql(ss_conn, pg_conn, unique_name, sql, sqlstate):
    t, v = unique_name("t"), unique_name("v")
    for conn in (ss_conn, pg_conn):
        conn.execute(f"CREATE TABLE {t} (x int)")
        conn.execute(f"CREATE VIEW {v} AS SELECT * FROM {t}")
    try:
        states = []
        for conn in (pg_conn, ss_conn):
            with pytest.raises(psycopg.Error) as err:
                conn.execute(sql.format(t=t, v=v))
            states.append(err.value.sqlstate)
        assert states == [sqlstate, sqlstate]
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP VIEW {v}")
            conn.execute(f"DROP TABLE {t}")


def test_reservoir_is_unknown_to_postgresql_but_ours(ss_conn, pg_conn, table):
    """PostgreSQL has no RESERVOIR method (42704); DuckDB's is in scope here."""
    pg_conn.execute("CREATE TABLE IF NOT EXISTS ts_probe (x int)")
    with pytest.raises(psycopg.Error) as err:
        pg_conn.execute("SELECT * FROM ts_probe TABLESAMPLE reservoir (10)")
    assert err.value.sqlstate == "42704"
    pg_conn.execute("DROP TABLE ts_probe")
    assert _count(ss_conn, f"SELECT count(*) FROM {table} TABLESAMPLE reservoir (10)") == 10


@pytest.mark.parametrize("sql", ["RESERVOIR (0)", "RESERVOIR (-3)", "RESERVOIR (2.5)"])
def test_reservoir_size_must_be_positive(ss_conn, table, sql):
    with pytest.raises(psycopg.Error) as err:
        ss_conn.execute(f"SELECT * FROM {table} TABLESAMPLE {sql}")
    assert err.value.sqlstate == "22023"
    assert ss_conn.execute("SELECT 1").fetchone() == (1,)


def test_system_rows_negative_is_2202h(ss_conn, table):
    with pytest.raises(psycopg.Error) as err:
        ss_conn.execute(f"SELECT * FROM {table} TABLESAMPLE SYSTEM_ROWS (-1)")
    assert err.value.sqlstate == "2202H"


@pytest.mark.parametrize("method", ["BERNOULLI (10)", "SYSTEM (20)", "RESERVOIR (500)", "SYSTEM_ROWS (700)"])
def test_repeatable_sample_is_the_same_on_both_backends(ss_conn, table, method):
    q = (f"SELECT x % 7 AS k, count(*), sum(x) FROM {table} TABLESAMPLE {method} REPEATABLE (11) "
         f"GROUP BY 1 ORDER BY 1")
    got = {}
    for backend in ("vector", "llvm"):
        ss_conn.execute(f"SET executor_backend = {backend}")
        got[backend] = ss_conn.execute(q).fetchall()
    ss_conn.execute("RESET executor_backend")
    assert got["vector"] == got["llvm"] and sum(r[1] for r in got["llvm"]) > 0


def test_explain_shows_the_sample(ss_conn, table):
    plan = "\n".join(r[0] for r in ss_conn.execute(f"EXPLAIN SELECT * FROM {table} TABLESAMPLE BERNOULLI (5)"))
    assert "Sample Scan (bernoulli)" in plan
