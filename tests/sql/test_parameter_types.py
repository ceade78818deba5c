"""Parameters left without a type are refused with 42P18, as PostgreSQL's
PrepareQuery and exec_parse_message refuse them: one the statement skips
(``$2`` alone leaves ``$1``), or one given type 0 or unknown at Parse that
the statement never refers to; one it refers to untyped is text. Generated
PREPAREs and Parse messages compared with PostgreSQL 15 (outcome, and for a
Parse the parameter and column types Describe reports)."""
from __future__ import annotations

import itertools

import psycopg

from tests.support.fidelity import simple_outcome

#: statement bodies, by the parameters they refer to
BODIES = ["SELECT 1", "SELECT $1", "SELECT $2::int", "SELECT $1::int, $3::text", "SELECT 1 WHERE $2::int IS NULL",
          "VALUES ($2::int)", "SELECT * FROM (SELECT $2::int8) s", "SELECT $1 = $2", "SELECT $1 + 1"]
DECLARED = ["", "(int)", "(int, text)", "(unknown)", "(int, unknown)", "(text, int, bigint)"]


def _prepares():
    for n, (body, decl) in enumerate(itertools.product(BODIES, DECLARED)):
        yield f"PREPARE fid7_p{n}{decl} AS {body}"


def _parse(conn: psycopg.Connection, sql: str, types: list[int]) -> tuple:
    res = conn.pgconn.prepare(b"", sql.encode(), types)
    if res.error_message:
        return tuple(res.error_field(ord(f)) for f in "CMP")
    d = conn.pgconn.describe_prepared(b"")
    return ("ok", [d.param_type(i) for i in range(d.nparams)], [d.ftype(i) for i in range(d.nfields)])


def test_prepare_parameter_types_agree(ss_conn, pg_conn):
    cases = list(_prepares()) + ["SELECT name, parameter_types::text FROM pg_prepared_statements "
                                 "WHERE name LIKE 'fid7_p%' ORDER BY name", "DEALLOCATE ALL"]
    outcomes = [(sql, simple_outcome(ss_conn, sql), simple_outcome(pg_conn, sql)) for sql in cases]
    assert sum(pg[0] == "42P18" for _, _, pg in outcomes) >= 10
    diffs = [o for o in outcomes if o[1] != o[2]]
    assert not diffs, diffs[:5]


def test_parse_parameter_types_agree(ss_conn, pg_conn):
    typings = [[], [0], [0, 0], [23, 0], [0, 25], [705], [23, 705, 0], [25, 23, 20]]
    statements = BODIES + ["BEGIN", "SET search_path = public", "COMMIT"]
    cases = [(sql, types) for sql in statements for types in typings]
    diffs = [(sql, types, got, want) for sql, types in cases
             if (got := _parse(ss_conn, sql, types)) != (want := _parse(pg_conn, sql, types))]
    assert not diffs, diffs[:5]
    assert _parse(pg_conn, "SELECT 1", [0])[0] == b"42P18"
