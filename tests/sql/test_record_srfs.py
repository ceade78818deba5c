"""Set-returning functions of several columns called in a select list give
one record per row, as PostgreSQL's do (json_each and its kin,
pg_options_to_table, PipelineDB's topk); they were "function does not
exist".  Compared with PostgreSQL 15, read by psycopg (a record is a tuple
of texts) and as text."""
from __future__ import annotations

import pytest

from tests.support.fidelity import simple_outcome

DOCS = ['{"a": 1, "b": [2, 3]}', '{}', '{"x": null, "y": "s t", "z": {"q": "(,)"}}', None]
CASES = [f"SELECT {fn}({'NULL' if d is None else repr(d)}::{t})" for fn, t in
         (("json_each", "json"), ("jsonb_each", "jsonb"), ("json_each_text", "json"), ("jsonb_each_text", "jsonb"))
         for d in DOCS] + [
    "SELECT jsonb_each('{\"k\": true}'::jsonb), 1 AS one",
    "SELECT pg_options_to_table(ARRAY['fillfactor=70', 'autovacuum_enabled=false'])",
    "SELECT n, json_each_text(j) FROM (VALUES (1, '{\"a\": 1}'::json), (2, '{\"b\": 2, \"c\": 3}'::json)) v(n, j) "
    "ORDER BY 1, 2",
    "SELECT json_each('[1]'::json)",
]


@pytest.mark.parametrize("sql", CASES)
def test_record_set_functions_in_a_select_list_agree_with_postgresql(ss_conn, pg_conn, sql):
    got, want = simple_outcome(ss_conn, sql)[:2], simple_outcome(pg_conn, sql)[:2]
    assert got == want
    text = f"SELECT r::text FROM ({sql}) q(r)" if "one" not in sql and "n," not in sql else None
    if text is not None and want[0] == "ok":
        assert simple_outcome(ss_conn, text)[:2] == simple_outcome(pg_conn, text)[:2]


def test_topk_in_a_select_list(ss_conn):
    rows = ss_conn.execute("SELECT k, topk(t) FROM (SELECT 'z' AS k, topk_agg(x, 2) AS t "
                           "FROM (VALUES ('a'), ('b'), ('a')) v(x)) s ORDER BY 2").fetchall()
    assert rows == [("z", ("a", "2")), ("z", ("b", "1"))]
