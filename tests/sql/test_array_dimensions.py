"""array_length, array_lower, array_upper, array_ndims, cardinality and
array_dims against PostgreSQL 15, generated over arrays of every element
type (a NULL array, an empty one, one- and two-dimensional ones, with NULL
elements; as literals, ARRAY constructors, array_agg results and table
columns) and every dimension argument (0, 1, 2, -1, NULL); and array input's
explicit dimensions (``[1:2]={...}``), which must match the braces; lower
bounds other than 1 are refused (0A000), as array_fill's are.  Also
regclass[] and regtype[] literals, whose elements are names.
"""
from __future__ import annotations

import psycopg
import pytest

from tests.support.fidelity import mismatches

#: element type -> two values, as array elements in a literal
VALUES = {
    "bool": ("t", "f"), "bpchar": ("a", "b"), "bytea": ("\\\\x01", "\\\\x02"), '"char"': ("a", "b"),
    "date": ("2020-01-01", "2020-01-02"), "float4": ("1.5", "2"), "float8": ("1.5", "2"), "int2": ("1", "2"),
    "int4": ("1", "2"), "int8": ("1", "2"), "interval": ('"1 day"', '"2 hours"'), "json": ('"\\"a\\""', "1"),
    "jsonb": ("1", '"\\"b\\""'), "name": ("a", "b"), "numeric": ("1.5", "2"), "oid": ("1", "2"), "text": ("a", "b"),
    "time": ("10:00", "11:00"), "timestamp": ('"2020-01-01 10:00"', '"2020-01-02 10:00"'),
    "timestamptz": ('"2020-01-01 10:00+00"', '"2020-01-02 10:00+00"'), "timetz": ("10:00+01", "11:00+00"),
    "uuid": ("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), "varchar": ("a", "b"),
    "regclass": ("pg_class", "pg_type"), "regtype": ("int4", '"character varying"'),
}
DIMENSIONS = ("0", "1", "2", "-1", "NULL")
DECORATIONS = ["[1:2]={1,2}", "[2]={1,2}", " [1:2][1:1] = {{1},{2}} ", "[1:2]={1,2,3}", "[1:2]={{1},{2}}", "[2:1]={}",
               "[1:2]={}", "[0:1]={1,2}", "[-2:-1][3:4]={{1,2},{3,4}}", "[ 1 : 2 ]={1,2}", "[1:2]", "[1:2", "[1:2]=x",
               "[+1:2]={1,2}", "[1-:2]={1,2}", "[1:2]={1,x}", "[]={}", "[a]={1}"]


def _calls(form: str, tail: str = "") -> list[str]:
    out = [f"SELECT array_ndims({form}), cardinality({form}), array_dims({form}){tail}"]
    for fn in ("array_length", "array_lower", "array_upper"):
        out.append("SELECT " + ", ".join(f"{fn}({form}, {d})" for d in DIMENSIONS) + tail)
    return out


def _statements(table: str) -> list[str]:
    out = []
    for i, (t, (x, y)) in enumerate(VALUES.items()):
        tn = f"{table}_{i}"
        forms = [f"NULL::{t}[]", f"'{{}}'::{t}[]", f"'{{{x},{y}}}'::{t}[]", f"'{{{{{x},{y}}},{{{y},{x}}}}}'::{t}[]",
                 f"'{{NULL,{x}}}'::{t}[]", f"ARRAY[]::{t}[]", f"ARRAY[('{{{x}}}'::{t}[])[1], NULL]",
                 f"(SELECT array_agg(v) FROM {tn} WHERE k = 4)", f"(SELECT array_agg(v) FROM {tn} WHERE k IN (3, 4))"]
        out += [f"CREATE TABLE {tn} (k int, v {t}[])",
                f"INSERT INTO {tn} VALUES (1, NULL), (2, '{{}}'), (3, '{{{x},NULL}}'), (4, '{{{{{x}}},{{{y}}}}}')"]
        for form in forms:
            out += _calls(form)
        out += _calls("v", f" FROM {tn} ORDER BY k")
        out.append(f"DROP TABLE {tn}")
    for d in DECORATIONS:
        out += [f"SELECT '{d}'::int[]", f"SELECT array_dims('{d}'::text[])"]
    out.append("SELECT array_dims(array_fill(7, ARRAY[2,3], ARRAY[0,5]))")
    out += ["SELECT '{int4,\"character varying\",NULL}'::regtype[], '{{int4},{text}}'::regtype[], '{}'::regtype[]",
            "SELECT ARRAY['int4'::regtype, 'text'], '{int4,nosuch}'::regtype[]", "SELECT '{nosuch_rel}'::regclass[]"]
    return out


def test_generated_statements():
    sts = _statements("t")
    assert len(sts) == len(set(sts)) > 900


def test_array_dimension_functions_match_postgresql(ss_conn, pg_conn, unique_name):
    sts = _statements(unique_name("arr"))
    bad = mismatches(ss_conn, pg_conn, sts)
    refusals = [b for b in bad if "'0A000'" in b]
    others = [b for b in bad if "'0A000'" not in b]
    assert not others, f"{len(others)} of {len(sts)} differ:\n" + "\n".join(others[:20])
    # what splitstream refuses is exactly the non-1 lower bounds
    assert len(refusals) == 5, "\n".join(refusals)
    for b in refusals:
        assert "[0:" in b or "[-2:" in b or "ARRAY[0,5]" in b, b


@pytest.mark.parametrize("text", ["[0:1]={1,2}", "[-2:-1][3:4]={{1,2},{3,4}}"])
def test_lower_bounds_refused_with_hint(ss_conn, text):
    with pytest.raises(psycopg.errors.FeatureNotSupported) as e:
        ss_conn.execute(f"SELECT '{text}'::int[]")
    assert e.value.diag.message_hint == "splitstream's arrays all start at subscript 1."
