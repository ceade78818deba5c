"""PostgreSQL's overload resolution (func_select_candidate) as the function
catalog applies it; the expected choices are PostgreSQL 15's."""
from __future__ import annotations

import pytest

from splitstream.executor.execution import functions, signatures
from splitstream.protocol import oids as t
from splitstream.protocol.errors import PgError


def _pick(name, *args):
    _fd, want, result = functions.resolve(name, list(args))
    return want, result


def test_exact_match_wins():
    assert _pick("abs", t.INT2) == ([t.INT2], t.INT2)


def test_implicit_cast_to_the_preferred_type():
    assert _pick("round", t.INT4) == ([t.FLOAT8], t.FLOAT8)      # not round(numeric)
    assert _pick("sqrt", t.INT8) == ([t.FLOAT8], t.FLOAT8)


def test_most_exact_positions_win():
    assert _pick("mod", t.INT2, t.INT4) == ([t.INT4, t.INT4], t.INT4)


def test_unknown_literal_takes_the_preferred_type_of_its_category():
    assert _pick("round", t.UNKNOWN) == ([t.FLOAT8], t.FLOAT8)
    assert _pick("lower", t.UNKNOWN) == ([t.TEXT], t.TEXT)


def test_variadic_expands():
    assert _pick("concat_ws", t.UNKNOWN, t.INT4, t.BOOL) == ([t.TEXT, t.ANY, t.ANY], t.TEXT)
    with pytest.raises(PgError) as e:
        functions.resolve("concat_ws", [])
    assert e.value.message == "function concat_ws() does not exist"


def test_no_match_names_the_written_function_and_postgres_type_words():
    with pytest.raises(PgError) as e:
        functions.resolve("lpad", [t.INT4, t.TIMESTAMPTZ, t.UNKNOWN])
    assert (e.value.sqlstate, e.value.message) == (
        "42883", "function lpad(integer, timestamp with time zone, unknown) does not exist")
    assert e.value.hint == signatures.NO_MATCH_HINT


def test_ambiguous_unknowns_are_not_unique():
    sigs = signatures.parse("text, timestamp -> timestamp | text, timestamptz -> timestamptz | text, interval -> interval")
    with pytest.raises(PgError) as e:
        signatures.select("date_trunc", sigs, [t.UNKNOWN, t.UNKNOWN])
    assert (e.value.sqlstate, e.value.message) == ("42725", "function date_trunc(unknown, unknown) is not unique")
