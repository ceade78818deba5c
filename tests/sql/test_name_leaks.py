"""Issue 15, no leaked names: every error message and column name of a broad
run -- the differential corpus, the calls the issue lists, and calls of
every catalog function with argument types it does not take -- names only
functions of the function catalog or names the statement itself wrote.
sqlglot's canonical names (unix_to_time, time_to_str, j_s_o_n_array_agg,
current_version, json_extract_scalar ...) must never reach a user."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from splitstream.catalog.datatypes import sqltypes
from splitstream.executor.execution import proc_catalog
from tests.support.diff import execute, parse_corpus

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.sql"))

#: The statements of the issue's table, whose answers leaked sqlglot's names.
ISSUE_CALLS = [
    "SELECT to_timestamp(1)", "SELECT to_timestamp('2020', 'YYYY')", "SELECT to_char(now(), 'YYYY')",
    "SELECT json_agg(x) FROM (VALUES (1)) t(x)", "SELECT approx_count_distinct(x) FROM (VALUES (1)) t(x)",
    "SELECT version()", "SELECT '{\"a\": 1}'::jsonb ->> 'a'", "SELECT '{\"a\": 1}'::json -> 'a'",
    "SELECT char_length('a')", "SELECT strpos('ab', 'b')", "SELECT rpad('a', 2)", "SELECT 2 ^ 10",
    "SELECT true AND null", "SELECT array_length(ARRAY[1], 1)", "SELECT date_trunc('day', now())",
    "SELECT regexp_replace('a', 'a', 'b')", "SELECT left('ab', 1), right('ab', 1)", "SELECT log(2.0)",
    "SELECT to_hex(255)", "SELECT md5('a')", "SELECT initcap('a b')", "SELECT lpad(1, 'a')",
    "SELECT 'a' ~ 'b'", "SELECT ARRAY[1] || 2", "SELECT ARRAY[1, 2] @> ARRAY[1]",
]

#: Argument lists no catalog function takes all of (so most calls fail
#: and name the function in their error).
WRONG_ARGS = ["", "true, true, true, true, true", "'\\x00'::bytea, ARRAY[true]", "interval '1 day', true"]

#: Functions a call of which changes the session or waits.
SIDE_EFFECTS = {"set_config", "pg_sleep", "pg_advisory_lock", "pg_advisory_xact_lock", "pg_advisory_unlock_all"}

#: "function f(...)" in a message; "aggregate function calls cannot ..." names none
_FUNCTION_IN_MESSAGE = re.compile(r"\bfunction (?:pg_catalog\.)?(?!calls\b)([a-z_][a-z0-9_$]*)\b")


def _statements():
    for path in CORPUS:
        for case in parse_corpus(path.read_text(encoding="utf-8"), {"p": "leak_" + path.stem}):
            if not case.skip:
                yield case.statement
    yield from ISSUE_CALLS
    for name in sorted(proc_catalog.names() - SIDE_EFFECTS):
        for args in WRONG_ARGS:
            yield f"SELECT {name}({args})"


def _leaks(statement: str, outcome, known: set[str], corpus_words: set[str]) -> list[str]:
    written = set(re.findall(r"[a-z_][a-z0-9_$]*", statement.lower()))
    out = []
    texts = [outcome.error] if outcome.failed else []
    for text in texts:
        for name in _FUNCTION_IN_MESSAGE.findall(text or ""):
            if name not in known and name not in written:
                out.append(f"{statement!r}: error names function {name!r}: {text}")
    for result in outcome.results:
        for col in result.columns or []:
            if col != "?column?" and col not in known and col not in written and col not in corpus_words:
                out.append(f"{statement!r}: column named {col!r}")
    return out


@pytest.mark.skipif(bool(os.environ.get("SPLITSTREAM_FORCE_BACKEND")),
                    reason="names and errors come from the binder, the same under every backend: the default run checks them")
def test_no_function_name_leaks(ss_conn):
    # a cast's column is named after its type (``'a'::char(4)`` is "bpchar"), as PostgreSQL names it
    known = proc_catalog.names() | set(sqltypes.TYPE_NAMES.values())
    corpus_words = {w for p in CORPUS for w in re.findall(r"[a-z_][a-z0-9_$]*", p.read_text(encoding="utf-8").lower())}
    leaks: list[str] = []
    internal: list[str] = []
    ran = 0
    for statement in _statements():
        outcome = execute(ss_conn, statement)
        leaks += _leaks(statement, outcome, known, corpus_words)
        if (outcome.sqlstate or "").startswith("XX"):
            internal.append(f"{statement!r}: {outcome.sqlstate} {outcome.error}")
        ran += 1
    assert ran > 1000
    assert not leaks, "\n".join(leaks[:50])
    assert not internal, "\n".join(internal[:50])


def test_the_check_catches_a_leak():
    """The checker itself: a canonical name nobody wrote is reported."""
    from tests.support.diff import Outcome, ResultSet

    leaked = Outcome("SELECT to_timestamp(1)", sqlstate="42883",
                     error="function unix_to_time(integer) does not exist")
    named = Outcome("SELECT '{}'::jsonb ->> 'a'", results=[ResultSet(["json_extract_scalar"], [25], [], "SELECT 1")])
    # a cast's column is named after its type (``'a'::char(4)`` is "bpchar"), as PostgreSQL names it
    known = proc_catalog.names() | set(sqltypes.TYPE_NAMES.values())
    assert _leaks(leaked.statement, leaked, known, set())
    assert _leaks(named.statement, named, known, set())
