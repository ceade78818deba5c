"""Which SQL-function calls are inlined (bound in place of the call, as
PostgreSQL's inline_function does) and which run their planned body
(``sql_functions.BodyCall``): the rules decide results (a volatile argument
used twice, a STRICT function whose body ignores a parameter), so they are
tested on the plans themselves."""
from __future__ import annotations

import pytest

from splitstream.executor.sql.sql_functions import BodyCall
from tests.support.engine import open_engine, postgres_session

DEFINITIONS = [
    "CREATE FUNCTION plus1(a int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT a + 1'",
    "CREATE FUNCTION plus1_strict(a int) RETURNS int LANGUAGE sql IMMUTABLE STRICT AS 'SELECT a + 1'",
    "CREATE FUNCTION const_strict(a int) RETURNS int LANGUAGE sql STRICT AS 'SELECT 1'",
    "CREATE FUNCTION coalesce_strict(a int) RETURNS int LANGUAGE sql STRICT AS 'SELECT coalesce(a, 0)'",
    "CREATE FUNCTION twice(x float8) RETURNS boolean LANGUAGE sql AS 'SELECT x = x'",
    "CREATE FUNCTION reads(a int) RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM generate_series(1, a)'",
    "CREATE FUNCTION stable_random() RETURNS float8 LANGUAGE sql STABLE AS 'SELECT random()'",
]

CASES = [
    ("SELECT plus1(2)", True),
    ("SELECT plus1_strict(2)", True),          # a + 1 is strict in a
    ("SELECT const_strict(2)", False),         # ignores its parameter: NULL in must still give NULL
    ("SELECT coalesce_strict(2)", False),      # coalesce is not strict
    ("SELECT twice(1)", True),
    ("SELECT twice(random())", False),         # a volatile argument used twice
    ("SELECT reads(3)", False),                # a FROM clause
    ("SELECT stable_random()", False),         # a STABLE function whose body is volatile
]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    with open_engine(str(tmp_path_factory.mktemp("inline"))) as eng:
        es = postgres_session(eng)
        for sql in DEFINITIONS:
            es.execute_sql(sql)
        yield es


def _body_calls(plan) -> int:
    seen, stack, count = set(), [plan], 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or not hasattr(obj, "__dict__"):
            if isinstance(obj, (list, tuple)):
                stack.extend(obj)
            continue
        seen.add(id(obj))
        count += isinstance(obj, BodyCall)
        stack.extend(v for v in vars(obj).values() if isinstance(v, (list, tuple)) or hasattr(v, "__dict__"))
    return count


@pytest.mark.parametrize("sql,inlined", CASES)
def test_inlined_where_postgres_inlines(session, sql, inlined):
    plan = session.prepare(sql, []).handle.plan
    assert (_body_calls(plan) == 0) == inlined
