"""array_to_string prints each element as its type's output function does
in the session: booleans t/f, floats shortest round-trip (NaN, Infinity),
numeric with its scale, timestamps without trailing zeros, timestamptz in
the session's TimeZone, bytea as hex, reg* as names; NULL elements skipped
or written as null_string (a NULL null_string skips, a NULL delimiter or
array gives NULL); nested arrays in storage order. Generated arrays x
delimiters x null strings x time zones compared with PostgreSQL 15."""
from __future__ import annotations

import itertools

from tests.support.fidelity import simple_outcome

ARRAYS = [
    "ARRAY[true, false, NULL]", "ARRAY[0.1::float8, 1e20, 1.5e-7, 'NaN', '-Infinity', NULL]",
    "ARRAY[1.5::float4, 0.1, 3.4e38]", "ARRAY[1.50, 2.000, -3, NULL]", "ARRAY[1, NULL, 3]", "ARRAY[7::int8, -2]",
    "ARRAY['2020-01-02 03:04:05'::timestamp, '2020-01-02 03:04:05.5', NULL]",
    "ARRAY['2020-06-02 03:04:05.25+00'::timestamptz, '1999-12-31 23:59:59+05']",
    "ARRAY['2020-01-02'::date, 'infinity']", "ARRAY['12:00'::time, '13:30:00.25']",
    "ARRAY['1 day 2 hours'::interval, '-1 month']", "ARRAY['\\xdead'::bytea, '']",
    "ARRAY['a', NULL, 'c']", "ARRAY[[1, 2], [NULL, 4]]", "ARRAY[]::int[]", "NULL::bool[]",
    "ARRAY['pg_class'::regclass, 'pg_type']", "ARRAY['{\"a\": 1}'::jsonb]",
]
CALLS = ["array_to_string({a}, ',')", "array_to_string({a}, ' | ', '*')", "array_to_string({a}, '', '')",
         "array_to_string({a}, ',', NULL)", "array_to_string({a}, NULL, 'x')"]
ZONES = ["UTC", "America/New_York", "Asia/Kolkata"]


def _cases():
    for zone in ZONES:
        yield f"SET TimeZone = '{zone}'"
        for a, call in itertools.product(ARRAYS, CALLS):
            yield "SELECT " + call.format(a=a)
    yield "SELECT array_to_string(a, '-', 'n') FROM (VALUES (ARRAY[1.5, NULL]), (NULL), (ARRAY[[5.0, 6.25], [7.0, NULL]])) v(a)"
    yield "RESET TimeZone"


def test_array_to_string_agrees(ss_conn, pg_conn):
    cases = list(_cases())
    diffs = [(sql, got, want) for sql in cases
             if (got := simple_outcome(ss_conn, sql)) != (want := simple_outcome(pg_conn, sql))]
    assert not diffs, "\n".join(map(str, diffs[:8]))
    assert simple_outcome(pg_conn, "SELECT array_to_string(ARRAY[true, NULL], ',', '*')") == ("ok", [("t,*",)])
