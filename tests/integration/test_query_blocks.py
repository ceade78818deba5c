"""The statements of one simple Query run in one implicit transaction block,
as PostgreSQL 15 runs them: an error rolls back what the earlier ones did
(rows written, settings SET, with ParameterStatus putting a reported setting
back), BEGIN makes the block an explicit one, COMMIT / ROLLBACK in it end it
with PostgreSQL's warning, SAVEPOINT and VACUUM are refused in it. A failed
explicit block puts back its settings at the error, as PostgreSQL aborts the
failing transaction then. Each Query runs on both servers; its results,
notices, transaction status and the driver's view of the reported settings
must agree."""
from __future__ import annotations

import psycopg
import pytest
from psycopg import pq

REPORTED = ("application_name", "TimeZone", "DateStyle")

SCRIPT = """
CREATE TABLE {t} (a int)
SET application_name = 'x'; SELECT 1/0
SHOW application_name
SET application_name = 'y'
INSERT INTO {t} VALUES (1); SELECT 1/0; INSERT INTO {t} VALUES (2)
SELECT count(*) FROM {t}
INSERT INTO {t} VALUES (3); COMMIT; INSERT INTO {t} VALUES (4); SELECT 1/0
SELECT a FROM {t} ORDER BY a
SET TimeZone = 'Asia/Tokyo'; SELECT 1; SELECT 1/0
SHOW TimeZone
SET TimeZone = 'Asia/Tokyo'; SELECT 1
SHOW TimeZone
BEGIN; SET application_name = 'z'; SELECT 1/0
ROLLBACK
SHOW application_name
BEGIN; SET application_name = 'b1'; SAVEPOINT s; SET application_name = 'b2'; SELECT 1/0
ROLLBACK TO SAVEPOINT s
SHOW application_name
ROLLBACK
SHOW application_name
INSERT INTO {t} VALUES (6); BEGIN; INSERT INTO {t} VALUES (7)
SELECT a FROM {t} ORDER BY a
ROLLBACK
SELECT a FROM {t} ORDER BY a
INSERT INTO {t} VALUES (8); BEGIN; INSERT INTO {t} VALUES (9); COMMIT; INSERT INTO {t} VALUES (10); SELECT 1/0
SELECT a FROM {t} ORDER BY a
SAVEPOINT s; SELECT 1
SET LOCAL application_name = 'local'; SHOW application_name
SHOW application_name
INSERT INTO {t} VALUES (11); ROLLBACK; SELECT count(*) FROM {t}
INSERT INTO {t} VALUES (12); COMMIT
SELECT a FROM {t} ORDER BY a
VACUUM {t}; SELECT 1
CREATE TABLE {t}_b (a int); INSERT INTO {t}_b VALUES (1); SELECT a FROM {t}_b
DROP TABLE {t}_b; SELECT 1/0
SELECT count(*) FROM {t}_b
DROP TABLE {t}_b
DROP TABLE {t}
"""


def _query(conn: psycopg.Connection, sql: str) -> tuple:
    """Every result of one simple Query, its notices, the transaction status
    after it and the reported settings as the driver now sees them."""
    notices: list[tuple] = []
    pgconn = conn.pgconn
    pgconn.notice_handler = lambda r: notices.append(
        ((r.error_field(pq.DiagnosticField.SEVERITY_NONLOCALIZED) or b"").decode(),
         (r.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode()))
    pgconn.send_query(sql.encode())
    results = []
    while (res := pgconn.get_result()) is not None:
        if res.status == pq.ExecStatus.FATAL_ERROR:
            results.append(("error", (res.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode(),
                            (res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY) or b"").decode()))
        else:
            results.append((res.command_status, [tuple(res.get_value(r, c) for c in range(res.nfields))
                                                 for r in range(res.ntuples)]))
    pgconn.notice_handler = None
    return (results, notices, pq.TransactionStatus(pgconn.transaction_status).name,
            {name: conn.info.parameter_status(name) for name in REPORTED})


@pytest.fixture
def conns(ss_server, pg15):
    ss = psycopg.connect(ss_server.dsn, autocommit=True)
    pg = psycopg.connect(pg15.dsn, autocommit=True)
    for conn in (ss, pg):
        conn.pgconn.exec_(b"SET TimeZone = 'UTC'")
    yield ss, pg
    ss.close()
    pg.close()


def test_query_is_one_implicit_block_as_postgresql(conns, unique_name):
    ss, pg = conns
    t = unique_name("qb")
    wrong = []
    for line in SCRIPT.strip().splitlines():
        sql = line.format(t=t)
        ours, theirs = _query(ss, sql), _query(pg, sql)
        if ours != theirs:
            wrong.append(f"{sql}\n  splitstream: {ours}\n  postgresql:  {theirs}")
    assert not wrong, "\n".join(wrong)


def test_failed_pipeline_puts_back_its_settings_as_postgresql(conns):
    """A SET earlier in an extended-protocol batch is rolled back with the
    batch's implicit block when a later statement fails: the setting and
    the driver's view of it are as before the batch, on both servers."""
    def views(conn: psycopg.Connection) -> list:
        seen = []
        for value, fail in (("p", True), ("q", False)):
            try:
                with conn.pipeline():
                    conn.execute(f"SET application_name = '{value}'")
                    conn.execute("SELECT 1/0" if fail else "SELECT 1")
            except psycopg.Error as e:
                seen.append(e.sqlstate)
            seen.append((conn.info.parameter_status("application_name"),
                         conn.execute("SHOW application_name").fetchone()))
        return seen

    ss, pg = conns
    assert views(ss) == views(pg)
