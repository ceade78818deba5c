"""row_to_json, to_json, to_jsonb and the json[b]_build_object / _array
builders given whole rows and other values, against PostgreSQL 15 (text
results, or SQLSTATE, message and hint): row_to_json takes only a row
(record) and a boolean (42883 naming the types otherwise, a NULL literal is
a NULL row, other text is record_in's 0A000), its pretty form puts each
field on a line of its own; the others take a FROM item's row as its JSON
object, next to other arguments.  Generated over functions x arguments;
the 42883 names a table's row by the table's type through an alias too
(``FROM t x``), a subquery's, VALUES' or a CTE's as record.
"""
from __future__ import annotations

import itertools

import pytest

from tests.support.fidelity import mismatches, table_on_both

FUNCS = ["row_to_json({})", "row_to_json({}, true)", "row_to_json({}, a > 2)", "row_to_json({}, NULL)",
         "row_to_json({}, 1)", "row_to_json({}, 'yes')", "to_json({})", "to_jsonb({})", "json_build_object('k', {})",
         "jsonb_build_object('k', {}, 'n', 1)", "json_build_array({}, 1)", "jsonb_build_array({})"]
ARGS = ["{t}", "{t}.*", "s", "s.*", "v", "a", "b", "1", "'x'::text", "ARRAY[1, 2]", "NULL::int", "NULL", "'x'"]


@pytest.fixture
def rows(ss_conn, pg_conn, unique_name):
    with table_on_both((ss_conn, pg_conn), unique_name("rj"), "a int, b text",
                       "(1, 'one'), (2, NULL), (3, 'th\"ree'), (4, 'four')") as t:
        yield t


@pytest.mark.parametrize("func", FUNCS)
def test_json_functions_of_rows_and_values_like_postgres(ss_conn, pg_conn, rows, func):
    queries = [f"SELECT {func.format(arg.format(t=rows))} FROM {rows}, (SELECT 1 AS x, 'y' AS y) s, "
               f"(VALUES (2.5, NULL::text)) v ORDER BY {rows}.a" for arg in ARGS]
    assert mismatches(ss_conn, pg_conn, queries) == []


def test_a_row_and_more_arguments(ss_conn, pg_conn, rows):
    shapes = [f"SELECT {f}({a}) FROM {rows} ORDER BY a" for f, a in itertools.product(
        ["row_to_json", "json_build_object", "json_build_array", "to_jsonb"],
        [f"{rows}, true, 1", f"a, {rows}", f"'r', {rows}, 's', {rows}.*", "", f"{rows}, {rows}"])]
    assert mismatches(ss_conn, pg_conn, shapes) == []


KEYS = ["1.5", "true", "'x'::varchar", "'2020-01-02'::date", "'2020-01-02 03:04'::timestamptz", "'{}'::json",
        "'[1]'::jsonb", "ARRAY[1]", "NULL::int", "'a\"b'", "{t}"]


@pytest.mark.parametrize("func", ["json_build_object", "jsonb_build_object"])
def test_object_keys_of_every_kind(ss_conn, pg_conn, rows, func):
    """A key is a scalar's JSON text (a boolean is true, not True); an array,
    JSON or a row there is 22023, after a NULL key's own error."""
    queries = [f"SELECT {func}({k.replace('{t}', rows)}, 1, 'n', a) FROM {rows} ORDER BY a" for k in KEYS]
    assert mismatches(ss_conn, pg_conn, queries) == []


FROM_ITEMS = ["{t} x", "{t} AS x(c, d)", "(SELECT * FROM {t}) x", "(VALUES (1, 'v')) x(a, b)",
              "pg_class x WHERE false", "{t} AS {t}"]
SECOND = ["", ", 1", ", 1::int8", ", 'a'", ", true", ", NULL", ", x"]


def test_rows_through_aliases(ss_conn, pg_conn, rows):
    """row_to_json's 42883 names an aliased table's row by its type; a
    column of any type is no row (42883 naming its type)."""
    queries = []
    for item, second in itertools.product(FROM_ITEMS, SECOND):
        item = item.format(t=rows)
        alias = item.replace(" WHERE false", "").split()[-1].split("(")[0]
        for first in (alias, f"{alias}.*", "1", "NULL::int"):
            queries.append(f"SELECT row_to_json({first}{second.replace('x', alias)}) FROM {item} LIMIT 1")
    queries += [f"SELECT row_to_json({c}) FROM {rows} x ORDER BY 1" for c in ("a", "x.a", "b", "x.b", "(a)")]
    queries.append(f"WITH x AS (SELECT * FROM {rows}) SELECT row_to_json(x, 1) FROM x")
    assert mismatches(ss_conn, pg_conn, queries) == []
