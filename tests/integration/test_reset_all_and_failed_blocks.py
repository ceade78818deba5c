"""Two session behaviours pg_prepared_statements' generated sessions ran
into, compared with PostgreSQL 15: RESET ALL (and DISCARD ALL) put back
every parameter the session SET, not only the ones splitstream has a
default for; and a failed transaction block refuses a statement before
analysing it (an unknown table is 25P02 there, a syntax error stays one, a
comment is no statement), over the simple Query and over Parse / Bind."""
from __future__ import annotations

import random

import psycopg
import pytest
from psycopg import pq

from tests.support.fidelity import words

#: user-settable parameters with a value other than their default
CHANGES = [("plan_cache_mode", "force_custom_plan"), ("enable_hashjoin", "off"), ("random_page_cost", "2.5"),
           ("work_mem", "'8MB'"), ("myapp.flag", "'on'"), ("cursor_tuple_fraction", "0.5"),
           ("extra_float_digits", "2"), ("application_name", "'x'"), ("geqo", "off"),
           ("default_statistics_target", "50")]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("how", ["RESET ALL", "DISCARD ALL"])
def test_reset_all_puts_back_every_set_parameter(ss_conn, pg_conn, how, seed):
    chosen = random.Random(seed).sample(CHANGES, 4)
    script = [f"SET {name} = {value}" for name, value in chosen] + [how]
    script += [f"SHOW {name}" for name, _ in CHANGES]
    for sql in script:
        assert words(ss_conn, sql) == words(pg_conn, sql), sql


IN_FAILED = ["SELECT * FROM nosuch_table", "SELEC 1", "-- only a comment", "SAVEPOINT s", "SELECT 1",
             "PREPARE fb AS SELECT * FROM nosuch_table", "ROLLBACK TO SAVEPOINT nosuch", "SHOW work_mem"]


def _parse_outcome(conn: psycopg.Connection, sql: str) -> tuple:
    res = conn.pgconn.prepare(b"", sql.encode())
    if res.status == pq.ExecStatus.FATAL_ERROR:
        return ("error", (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode())
    res = conn.pgconn.exec_prepared(b"", [])
    return (pq.ExecStatus(res.status).name, (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode())


@pytest.mark.parametrize("sql", IN_FAILED)
@pytest.mark.parametrize("protocol", ["simple", "parse"])
def test_a_failed_block_refuses_before_analysis(ss_conn, pg_conn, sql, protocol):
    outcomes = []
    for conn in (ss_conn, pg_conn):
        conn.execute("BEGIN")
        assert words(conn, "SELECT 1/0")[1] == "22012"
        outcomes.append(words(conn, sql) if protocol == "simple" else _parse_outcome(conn, sql))
        outcomes.append(words(conn, "ROLLBACK"))
    assert outcomes[:2] == outcomes[2:]
