"""PipelineDB's catalog surface as its install script declares it
(pipelinedb/pipelinedb, pipelinedb--1.0.0.sql): the ``pipelinedb`` schema,
its system views ``views``, ``transforms`` and ``stream_readers`` over the
``get_*`` functions, those functions in pg_proc under the schema, and the
``query`` column printed as PostgreSQL deparses the definition (PipelineDB's
deparse_query_def is ruleutils' get_query_def, as pg_get_viewdef(oid) without
its ';'), compared with PostgreSQL 15 printing the same SELECT over a table."""
from __future__ import annotations

import psycopg
import pytest


def _rows(conn, sql, *args):
    return conn.execute(sql, args or None).fetchall()


def test_schema_is_listed_and_kept(ss_conn):
    assert _rows(ss_conn, "SELECT nspname, nspowner FROM pg_namespace WHERE nspname = 'pipelinedb'") == \
        [("pipelinedb", 10)]
    with pytest.raises(psycopg.errors.DependentObjectsStillExist) as e:
        ss_conn.execute("DROP SCHEMA pipelinedb")
    assert e.value.diag.message_primary == "cannot drop schema pipelinedb because extension pipelinedb requires it"
    with pytest.raises(psycopg.errors.DuplicateSchema):
        ss_conn.execute("CREATE SCHEMA pipelinedb")


def test_functions_are_in_the_schema(ss_conn):
    rows = _rows(ss_conn, "SELECT p.proname, p.proretset FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
                          "WHERE n.nspname = 'pipelinedb' ORDER BY 1")
    names = dict(rows)
    for fn in ("activate", "deactivate", "truncate_continuous_view", "ttl_expire", "version"):
        assert names.get(fn) is False, fn
    for fn in ("get_views", "get_transforms", "get_streams", "get_stream_readers", "set_ttl"):
        assert names.get(fn) is True, fn
    # no pg_catalog row spells the schema into the name any more
    assert _rows(ss_conn, "SELECT proname FROM pg_proc WHERE proname LIKE 'pipelinedb.%'") == []
    assert _rows(ss_conn, "SELECT count(*) FROM pg_proc WHERE proname = 'version'") == [(2,)]


def test_system_views_columns(ss_conn):
    expected = {"views": [("id", "oid"), ("schema", "text"), ("name", "text"), ("active", "boolean"),
                          ("query", "text")],
                "transforms": [("id", "oid"), ("schema", "text"), ("name", "text"), ("active", "boolean"),
                               ("tgfunc", "text"), ("tgargs", "text[]"), ("query", "text")],
                "stream_readers": [("stream", "text"), ("continuous_queries", "text[]")]}
    for view, cols in expected.items():
        cur = ss_conn.execute(f"SELECT * FROM pipelinedb.{view} LIMIT 0")
        got = [(d.name, ss_conn.execute("SELECT format_type(%s, NULL)", (d.type_code,)).fetchone()[0])
               for d in cur.description]
        assert got == cols, view


def test_views_transforms_and_readers(ss_conn, unique_name):
    s, quiet, v, t = unique_name("s"), unique_name("quiet"), unique_name("v"), unique_name("t")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int, k text) SERVER pipelinedb")
    ss_conn.execute(f"CREATE FOREIGN TABLE {quiet} (x int) SERVER pipelinedb")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT k, count(*) FROM {s} GROUP BY k")
    ss_conn.execute(f"CREATE VIEW {t} WITH (action = transform) AS SELECT x + 1 AS y FROM {s} WHERE x > 2")
    ss_conn.execute(f"SELECT pipelinedb.deactivate('{t}')")
    oids = dict(_rows(ss_conn, "SELECT relname, oid FROM pg_class WHERE relname IN (%s, %s)", v, t))
    views = _rows(ss_conn, "SELECT id, schema, name, active FROM pipelinedb.views WHERE name IN (%s, %s)", v, t)
    assert views == [(oids[v], "public", v, True)]       # a transform is not a view
    transforms = _rows(ss_conn, "SELECT id, schema, name, active, tgfunc, tgargs, query FROM pipelinedb.transforms "
                                "WHERE name = %s", t)
    assert transforms == [(oids[t], "public", t, False, None, None,
                           f" SELECT ({s}.x + 1) AS y\n   FROM {s}\n  WHERE ({s}.x > 2)")]
    assert _rows(ss_conn, "SELECT * FROM pipelinedb.get_transforms() WHERE name = %s", t) == transforms
    readers = _rows(ss_conn, "SELECT stream, continuous_queries FROM pipelinedb.stream_readers "
                             "WHERE stream IN (%s, %s)", s, quiet)
    assert readers == [(s, [v, t])]       # creation order; a stream nothing reads is left out
    assert _rows(ss_conn, "SELECT * FROM pipelinedb.get_stream_readers() WHERE stream IN (%s, %s)", s, quiet) == readers


QUERIES = [
    "SELECT k, count(*), date_trunc('hour', ts) AS h FROM {s} WHERE ts > '2026-01-01'::timestamptz GROUP BY k, h",
    "SELECT k AS key, sum(x) AS total, avg(x * 2) FROM {s} WHERE k <> 'z' AND x BETWEEN 1 AND 9 GROUP BY k",
    "SELECT date_bin('5 minutes', ts, '2026-01-01') AS b, max(x) FROM {s} GROUP BY 1",
    "SELECT k, percentile_cont(0.99) WITHIN GROUP (ORDER BY x) AS p99 FROM {s} GROUP BY k",
]


@pytest.mark.parametrize("query", QUERIES)
def test_query_is_postgres_deparse(ss_conn, pg_conn, unique_name, query):
    s, v = unique_name("s"), unique_name("v")
    columns = "(x int, k text, ts timestamptz)"
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} {columns} SERVER pipelinedb")
    ss_conn.execute(f"CREATE VIEW {v} AS " + query.format(s=s))
    pg_conn.execute("SET TimeZone = 'UTC'")
    pg_conn.execute(f"CREATE TABLE {s} {columns}")
    try:
        pg_conn.execute(f"CREATE VIEW {v} AS " + query.format(s=s))
        want = pg_conn.execute("SELECT pg_get_viewdef(%s::regclass)", (v,)).fetchone()[0].rstrip(";")
    finally:
        pg_conn.execute(f"DROP TABLE {s} CASCADE")
    assert _rows(ss_conn, "SELECT query FROM pipelinedb.get_views() WHERE name = %s", v) == [(want,)]
    assert _rows(ss_conn, "SELECT query FROM pipelinedb.views WHERE name = %s", v) == [(want,)]


REFUSED = [
    "SELECT pipelinedb.combine_table('v', 't')", "SELECT pipelinedb.get_worker_querydef('v')",
    "SELECT pipelinedb.get_combiner_querydef('v')", "SELECT pipelinedb.hash_group(1)",
    "SELECT * FROM pipelinedb.get_stream_stats()", "SELECT * FROM pipelinedb.get_proc_query_stats()",
    "SELECT * FROM pipelinedb.proc_query_stats", "SELECT * FROM pipelinedb.proc_stats",
    "SELECT * FROM pipelinedb.query_stats", "SELECT * FROM pipelinedb.db_stats", "SELECT * FROM pipelinedb.stream_stats",
    "SELECT hll_empty()", "SELECT cmsketch_empty()", "SELECT tdigest_empty()", "SELECT hll_print(NULL::bytea)",
    "SELECT hll_agg(x, 12) FROM (VALUES (1)) t(x)", "SELECT freq_agg(x, 0.01, 0.9) FROM (VALUES (1)) t(x)",
    "SELECT dist_agg(x, 50) FROM (VALUES (1)) t(x)", "SELECT topk_merge_agg(NULL::bytea)",
]


@pytest.mark.parametrize("sql", REFUSED)
def test_missing_pipelinedb_surface_is_refused_with_a_hint(ss_conn, sql):
    """What PipelineDB documents and splitstream lacks: 0A000 and a hint, never 42883 or silence."""
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        ss_conn.execute(sql)
    assert e.value.diag.message_hint


def test_flush_has_nothing_to_wait_for(ss_conn, unique_name):
    s, v = unique_name("s"), unique_name("v")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int) SERVER pipelinedb")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT count(*) FROM {s}")
    ss_conn.execute(f"INSERT INTO {s} VALUES (1), (2)")
    assert _rows(ss_conn, "SELECT pipelinedb.flush()") == [(True,)]
    assert _rows(ss_conn, f"SELECT * FROM {v}") == [(2,)]


def test_first_values_query_text(ss_conn, unique_name):
    """PipelineDB's ordered-set first_values prints as get_agg_expr prints one."""
    s, v = unique_name("s"), unique_name("v")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int, k text) SERVER pipelinedb")
    ss_conn.execute(f"CREATE VIEW {v} AS SELECT k, first_values(3) WITHIN GROUP (ORDER BY x DESC NULLS LAST) AS f "
                    f"FROM {s} GROUP BY k")
    assert _rows(ss_conn, "SELECT query FROM pipelinedb.views WHERE name = %s", v) == [
        (f" SELECT {s}.k,\n    first_values(3) WITHIN GROUP (ORDER BY {s}.x DESC NULLS LAST) AS f\n   FROM {s}\n"
         f"  GROUP BY {s}.k",)]


def test_get_functions_in_a_select_list_return_records(ss_conn, unique_name):
    """``SELECT pipelinedb.get_streams()``: one record per row, as PostgreSQL
    returns a set-returning function of several columns in a select list
    (it was 42883); the FROM form gives the same rows as columns."""
    s = unique_name("recs")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {s}_v AS SELECT count(*) FROM {s}")
    with psycopg.ClientCursor(ss_conn) as cur:
        cur.execute("SELECT pipelinedb.get_streams(), 1 AS one")
        got = [r for r in cur.fetchall() if r[0][1] == s]      # psycopg reads a record as a tuple of texts
        assert [(d.name, d.type_code) for d in cur.description] == [("get_streams", 2249), ("one", 23)]
    assert got == [(("public", s, f"{{{s}_v}}"), 1)]
    cols = _rows(ss_conn, "SELECT schema, name, queries FROM pipelinedb.get_streams() WHERE name = %s", s)
    assert cols == [("public", s, [f"{s}_v"])]
