"""set_config() and current_setting() are called once per row, as in
PostgreSQL: over a query's rows each row sets or reads its own parameter,
over no rows nothing happens (pg_dump's ``SELECT set_config(name, ...) FROM
pg_settings WHERE name = 'restrict_nonsystem_relation_kind'`` used to fail
with an internal error), set_config answers the value as SHOW prints it
('1024' for work_mem is '1MB'), a NULL value resets, a NULL name is 22004 and
current_setting is strict.  Each sequence runs on fresh sessions of both
servers and is compared statement by statement with PostgreSQL 15."""
from __future__ import annotations

import psycopg
import pytest

from tests.support.fidelity import simple_outcome

SEQUENCES = {
    "per_row_reads": [
        "SELECT n, current_setting(n) FROM (VALUES ('work_mem'), ('search_path'), ('datestyle'), ('TimeZone')) t(n) "
        "ORDER BY n",
        "SELECT current_setting(n, true) IS NULL FROM (VALUES ('work_mem'), ('no.such_thing'), (NULL)) t(n)",
        "SELECT current_setting('work_mem', NULL)",
        "SELECT current_setting(NULL)",
        "SELECT current_setting(n) FROM (VALUES ('work_mem'), ('nosuch')) t(n)",
    ],
    "per_row_writes": [
        "SELECT set_config(n, v, false) FROM (VALUES ('work_mem', '2MB'), ('application_name', 'a1')) t(n, v)",
        "SHOW work_mem",
        "SHOW application_name",
        "SELECT set_config('work_mem', v, false) FROM (VALUES ('1MB'), (NULL), ('3MB')) t(v)",
        "SHOW work_mem",
        "SELECT set_config('work_mem', '1024', false)",
        "SELECT set_config('statement_timeout', '1min', NULL)",
        "SHOW statement_timeout",
    ],
    "no_rows_and_errors": [
        "SELECT set_config(n, 'x', false) FROM (VALUES ('work_mem')) t(n) WHERE false",
        "SHOW work_mem",
        "SELECT set_config(NULL, 'x', false)",
        "SELECT set_config('work_mem', 'x', false)",
        "SELECT set_config('nosuch', 'x', false)",
        "SELECT set_config('my.var', 'x', false), current_setting('my.var')",
        "SELECT set_config('my.var', v, false) FROM (VALUES ('a'), ('b')) t(v)",
        "SELECT current_setting('my.var')",
    ],
    "local_in_a_block": [
        "BEGIN",
        "SELECT set_config('work_mem', v, true) FROM (VALUES ('5MB'), ('6MB')) t(v)",
        "SHOW work_mem",
        "COMMIT",
        "SHOW work_mem",
    ],
}


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_set_config_and_current_setting_agree_with_postgresql(ss_server, pg15, name):
    with psycopg.connect(ss_server.dsn, autocommit=True) as ss, psycopg.connect(pg15.dsn, autocommit=True) as pg:
        diffs = [(sql, got, want) for sql in SEQUENCES[name]
                 if (got := simple_outcome(ss, sql)[:2]) != (want := simple_outcome(pg, sql)[:2])]
    assert not diffs, diffs


def test_pg_dump_setup_query_over_no_rows(ss_conn):
    """What pg_dump 15 sends first: a parameter splitstream lacks is no row, so nothing is set."""
    rows = ss_conn.execute("SELECT set_config(name, 'view, foreign-table', false) FROM pg_settings "
                           "WHERE name = 'restrict_nonsystem_relation_kind'").fetchall()
    assert rows in ([], [("view, foreign-table",)])
