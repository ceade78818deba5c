"""DISTINCT, ORDER BY, WITHIN GROUP, FILTER and OVER on aggregate calls
(and on calls that are not aggregates), against PostgreSQL 15: the rows, or
the SQLSTATE, message and cursor position of the error.  Generated: every
function below with every combination of the modifiers.

``agg(DISTINCT x ORDER BY y)`` is 42P10 at ``y`` in PostgreSQL (the sort
runs over the distinct values); it used to aggregate as if DISTINCT were
applied after the sort.
"""
from __future__ import annotations

import itertools

import psycopg
import pytest

from tests.support.fidelity import simple_outcome, table_on_both

#: function -> its arguments
AGGREGATES = {"array_agg": ["x"], "string_agg": ["x", "','"], "count": ["x"], "sum": ["n"], "json_agg": ["x"],
              "jsonb_agg": ["x"], "min": ["x"], "jsonb_object_agg": ["x", "y"], "bit_and": ["n"],
              "percentile_cont": ["0.5"], "percentile_disc": ["0.5"], "mode": [], "rank": ["1"], "lower": ["x"]}
ORDERS = ["", "ORDER BY {a}", "ORDER BY y", "ORDER BY {a} DESC", "ORDER BY {a} || ''", "ORDER BY {a}, y",
          "ORDER BY {t}.{a}", "ORDER BY ({a})", "ORDER BY lower({a}::text)"]


def _call(fn: str, args: list[str], distinct: bool, order: str, table: str) -> str:
    a = args[0] if args else "x"
    inner = ", ".join(args)
    tail = " " + order.format(a=a, t=table) if order else ""
    return f"{fn}({'DISTINCT ' if distinct else ''}{inner}{tail})"


def statements(table: str) -> list[str]:
    out = []
    for fn, args in AGGREGATES.items():
        for distinct, order in itertools.product((False, True), ORDERS):
            if fn in ("percentile_cont", "percentile_disc", "rank") and "{t}" in order:
                continue        # a constant argument: no column to qualify
            out.append(f"SELECT {_call(fn, args, distinct, order, table)} FROM {table}")
        plain, unique = _call(fn, args, False, "", table), _call(fn, args, True, "", table)
        for key in ("y", "n"):
            out += [f"SELECT {plain} WITHIN GROUP (ORDER BY {key}) FROM {table}",
                    f"SELECT {unique} WITHIN GROUP (ORDER BY {key}) FROM {table}",
                    f"SELECT {_call(fn, args, False, 'ORDER BY y', table)} WITHIN GROUP (ORDER BY {key}) FROM {table}"]
        out += [f"SELECT {plain} FILTER (WHERE y > 1) FROM {table}", f"SELECT {plain} OVER () FROM {table}",
                f"SELECT {unique} OVER () FROM {table}", f"SELECT {fn}(*) FROM {table}",
                f"SELECT {_call(fn, args, False, 'ORDER BY y', table)} OVER () FROM {table}",
                f"SELECT {plain} FILTER (WHERE y > 1) OVER () FROM {table}",
                f"SELECT {unique} FILTER (WHERE y > 1) OVER () FROM {table}"]
    for fn in ("row_number", "ntile", "lag"):
        out += [f"SELECT {fn}(DISTINCT y) OVER () FROM {table}", f"SELECT {fn}() FILTER (WHERE y > 1) OVER () FROM {table}",
                f"SELECT {fn}(y ORDER BY y) OVER () FROM {table}"]
    return out


@pytest.fixture
def table(ss_conn, pg_conn, unique_name):
    with table_on_both((ss_conn, pg_conn), unique_name("ag"), "x text, y int, n int",
                       "('a', 2, 1), ('b', 1, 2), ('a', 3, 3), (NULL, 4, 4)") as t:
        yield t


def test_generated_statements():
    sts = statements("t")
    assert len(sts) == len(set(sts)) > 300
    assert sum("DISTINCT" in s and "ORDER BY" in s for s in sts) > 100


def _refused(ss_conn, sql: str, ss) -> bool:
    """FILTER over a window of an aggregate that keeps NULLs is not
    implemented here: refused (0A000, with a hint) rather than computed."""
    if not (ss[0] == "0A000" and ss[1].startswith("FILTER is not implemented for the window function")):
        return False
    try:
        ss_conn.execute(sql)
    except psycopg.errors.FeatureNotSupported as e:
        return bool(e.diag.message_hint)
    return False


def test_aggregate_modifiers_match_postgresql(ss_conn, pg_conn, table):
    bad = []
    sts = statements(table)
    for sql in sts:
        ss, pg = simple_outcome(ss_conn, sql), simple_outcome(pg_conn, sql)
        if ss != pg and not _refused(ss_conn, sql, ss):
            bad.append(f"{sql}\n  splitstream: {ss}\n  postgresql:  {pg}")
    assert not bad, f"{len(bad)} of {len(sts)} differ:\n" + "\n".join(bad[:25])


def test_distinct_order_by_error_is_placed(ss_conn, table):
    sql = f"SELECT 1;\n SELECT string_agg(DISTINCT x, ',' ORDER BY y) FROM {table}"
    with pytest.raises(psycopg.errors.InvalidColumnReference) as e, psycopg.ClientCursor(ss_conn) as cur:
        cur.execute(sql)
    assert e.value.diag.statement_position == str(sql.index("y)") + 1)
