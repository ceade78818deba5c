"""Issue 15 scope 3: every function of PostgreSQL 15's documented chapters
is either in splitstream's function catalog or refused with 0A000 naming it
(``functions.NOT_IMPLEMENTED``), never an unexplained 42883."""
from __future__ import annotations

import pytest

from splitstream.executor.execution import functions, proc_catalog
from splitstream.executor.execution.system_functions import CATALOG_FUNCTIONS
from splitstream.executor.sql.table_functions import SRF_NAMES
from splitstream.executor.stream.spark.functions import register_functions
from tests.sql.pg15_chapters import CHAPTERS, SYNTAX, documented

#: documented names the binder handles as syntax, as set-returning functions in FROM, or from the planner's catalog
HANDLED_ELSEWHERE = {"current_date", "current_time", "current_timestamp", "localtime", "localtimestamp",
                     "extract", "position", "substring", "overlay", "trim", "user", "current_catalog",
                     "current_role", "current_user", "session_user", "current_schema",
                     "pg_options_to_table"} | SRF_NAMES | CATALOG_FUNCTIONS


def _known() -> set[str]:
    register_functions()
    return proc_catalog.names() | set(functions.NOT_IMPLEMENTED) | HANDLED_ELSEWHERE


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_every_documented_function_is_implemented_or_refused(chapter: str) -> None:
    missing = sorted(CHAPTERS[chapter] - _known())
    assert not missing, f"{chapter}: neither in the catalog nor refused: {missing}"


def test_refused_names_are_not_also_implemented() -> None:
    """A name in both would make the refusal dead text (lookup finds the entry first)."""
    assert not set(functions.NOT_IMPLEMENTED) & set(functions.REGISTRY)


def test_the_list_names_real_postgres15_functions(pg_conn) -> None:
    """Each listed name exists in PostgreSQL 15 (pg_proc, or grammar syntax), so a typo cannot hide a gap."""
    rows = pg_conn.execute("SELECT DISTINCT proname::text FROM pg_proc WHERE proname = ANY(%s)",
                           [sorted(documented())]).fetchall()
    unknown = documented() - {r[0] for r in rows} - SYNTAX
    assert not unknown, unknown


def test_a_refused_function_says_0a000_naming_it(ss_conn) -> None:
    name = "jsonb_path_query"
    assert name in functions.NOT_IMPLEMENTED
    cur = ss_conn.cursor()
    try:
        cur.execute("SELECT jsonb_path_query('{}'::jsonb, '$')")
    except Exception as e:  # noqa: BLE001 -- the driver's error carries the SQLSTATE
        assert getattr(e, "sqlstate", None) == "0A000", e
        assert name in str(e)
        assert e.diag.message_hint
    else:
        raise AssertionError("a refused function ran")


def test_every_refused_documented_function_says_0a000_naming_it(ss_conn) -> None:
    """Each refusal reaches the client as 0A000 with the function's name and a
    hint, whatever the binder does first (aggregates, set-returning calls)."""
    bad = []
    for name in sorted(documented() & set(functions.NOT_IMPLEMENTED)):
        for sql in (f"SELECT {name}(1)", f"SELECT * FROM {name}(1)"):
            try:
                ss_conn.execute(sql)
                bad.append((sql, "ran"))
            except Exception as e:  # noqa: BLE001 -- the driver's error carries the SQLSTATE
                if getattr(e, "sqlstate", None) != "0A000" or name not in str(e) or not e.diag.message_hint:
                    bad.append((sql, getattr(e, "sqlstate", None), str(e)))
    assert not bad, bad
