"""Errors raised while binding a cast or an operator carry PostgreSQL's
cursor position: a refused cast (42846) at its ``::`` or ``CAST``, a quoted
literal the cast or operator cannot read (22P02, 22003, 22007, 22008) at
the literal, an operator that does not exist (42883) or is not unique
(42725) at the operator, prefix operators included. Generated statements
(spellings, operand types, NULLs, clauses, comments before, inside
PREPARE) compared with PostgreSQL 15: SQLSTATE, message and position."""
from __future__ import annotations

import itertools

from tests.support.fidelity import simple_outcome

REFUSED_CASTS = [("true", "int8"), ("null::bool", "float8"), ("'a'::\"char\"", "int8"), ("1::int8", "bool"),
                 ("1.5", "bool"), ("'x'::\"char\"", "float4"), ("x", "numeric")]
BAD_LITERALS = [("'abc'", "int"), ("'99999999999'", "int4"), ("'2020-13-01'", "date"), ("'x'", "timestamp"),
                ("'1.5.5'", "numeric"), ("'maybe'", "bool")]
OPERATORS = [("1", "+", "'a'::text"), ("'a'::text", "-", "1"), ("1", "!=", "'a'::text"), ("2.5", "<=", "'a'::text"),
             ("'a'::\"char\"", "||", "'x'"), ("1", "^", "'a'::text"), ("1", "%", "1.5::float8"), ("x", "=", "'a'::text"),
             ("1", "=", "'x'"), ("'y'", "+", "1"), ("null::text", "*", "2")]
PREFIX = [("-", "'a'::text"), ("~", "1.5"), ("-", "null::text")]
FRAMES = ["SELECT {e}", "  SELECT /* c */ {e}", "SELECT 1 WHERE ({e}) IS NULL",
          "SELECT {e} FROM (SELECT true AS x) s", "PREPARE fid7_q AS SELECT {e}"]


def _expressions():
    for value, target in REFUSED_CASTS + BAD_LITERALS:
        yield f"{value}::{target}"
        yield f"CAST({value} AS {target})"
    for left, op, right in OPERATORS:
        yield f"{left} {op} {right}"
        yield f"({left}) {op} ({right}) + 0"
    for op, arg in PREFIX:
        yield f"{op} {arg}"
        yield f"1 - {op}{arg}"


def test_bind_error_positions_agree(ss_conn, pg_conn):
    cases = [frame.format(e=e) for e, frame in itertools.product(_expressions(), FRAMES)]
    outcomes = [(sql, simple_outcome(ss_conn, sql), simple_outcome(pg_conn, sql)) for sql in cases]
    placed = [pg for _, _, pg in outcomes if pg[0] != "ok" and pg[2] is not None]
    assert len(placed) > 150 and {pg[0] for pg in placed} >= {"42846", "42883", "42725", "22P02", "22007"}
    diffs = [o for o in outcomes if o[1] != o[2]]
    assert not diffs, "\n".join(map(str, diffs[:8]))


COERCED = ["1 IN (1, {lit})", "1 BETWEEN {lit} AND 2", "coalesce(1, {lit})", "greatest(2.5, {lit})",
           "CASE WHEN true THEN 1 ELSE {lit} END", "ARRAY[1, {lit}]", "abs({lit})", "1 = {lit} AND {lit} = 1",
           "2.5::float4 < {lit}", "{lit} * 2::int8"]


def test_untyped_literals_are_placed_where_coerced(ss_conn, pg_conn):
    """A quoted literal an operator, a list, a call or CASE gives a type
    whose input refuses it: the error at the literal, as coerce_type does."""
    cases = [f"SELECT {shape.format(lit=lit)}" for shape in COERCED for lit in ("'x'", "'1.5.5'", "'99999999999'")]
    cases += [f"SELECT 1 WHERE {shape.format(lit=lit)}" for shape in COERCED[:2] for lit in ("'q'", "''")]
    outcomes = [(sql, simple_outcome(ss_conn, sql), simple_outcome(pg_conn, sql)) for sql in cases]
    assert sum(len(pg) > 2 and pg[2] is not None for _, _, pg in outcomes) > 20
    diffs = [o for o in outcomes if o[1] != o[2]]
    assert not diffs, "\n".join(map(str, diffs[:8]))


def test_unknown_types_and_array_casts_are_placed(ss_conn, pg_conn):
    """A type that does not exist is placed at its name (after ``::`` or
    CAST's AS); a cast between an array and a scalar is 42846 at the cast."""
    values = ["1", "'a'", "(1)", "CAST(1 AS int)", "ARRAY[1]", "x"]
    types = ["nosuch", "pg_catalog.nosuch", "int[]", "int", "int8[]", "bool[]", "text", "text[]"]
    cases = [f"SELECT {v}::{t} FROM (SELECT 2 AS x) s" for v in values for t in types]
    cases += [f"SELECT CAST({v} AS {t}) FROM (SELECT 2 AS x) s" for v in values for t in types]
    outcomes = [(sql, simple_outcome(ss_conn, sql), simple_outcome(pg_conn, sql)) for sql in cases]
    assert sum(pg[0] in ("42704", "42846") for _, _, pg in outcomes) > 20
    diffs = [o for o in outcomes if o[1] != o[2]]
    assert not diffs, "\n".join(map(str, diffs[:8]))


def test_operators_without_a_candidate(ss_conn, pg_conn):
    """``||`` needs a string side (text || anynonarray) or arrays, jsonb,
    bytea (an array and an element or another array of a common element
    type; an untyped literal next to an array is that array); date/time
    operators take no typed string; a set of types with no common one names
    them as format_type does."""
    cases = [f"SELECT {a} || {b}" for a in ("1", "1.5", "true", "now()::date", "'a'", "NULL", "'x'::text")
             for b in ("2", "false", "'b'", "'{1}'::int[]")]
    cases += [f"SELECT {t} {op} 'a'::{s}" for t in ("'1 day'::interval", "date '2020-01-01'", "now()")
              for op in ("+", "-") for s in ("text", "varchar")]
    cases += ["SELECT ARRAY[1, 'a'::text]", "SELECT 1 UNION SELECT 'a'::text", "SELECT coalesce(1, now())",
              "VALUES (1), (true)", "SELECT ARRAY[[3]]::numeric[]", "SELECT '{{1,2},{3,NULL}}'::int[]::text[]"]
    arrays = ["'{1}'::int[]", "ARRAY[2::int8]", "ARRAY['a']", "ARRAY[1.5]", "ARRAY[[3]]"]
    others = ["'a'", "'{2}'", "NULL", "1", "1::int8", "'x'::text", "'y'::varchar", "2.5", "true"]
    cases += [f"SELECT {a} || {o}" for a in arrays for o in others + arrays]
    cases += [f"SELECT {o} || {a}" for a in arrays for o in others]
    diffs = [(sql, got, want) for sql in cases
             if (got := simple_outcome(ss_conn, sql)[:2]) != (want := simple_outcome(pg_conn, sql)[:2])]
    assert not diffs, "\n".join(map(str, diffs[:8]))
