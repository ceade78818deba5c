"""The reg* types print names as PostgreSQL's regclassout & co. do, for
system objects too: ``'pg_class'::regclass`` is pg_class (PostgreSQL 15's
OID 1259), also through ::text, in arrays and from a column; regnamespace
and regrole read names; 0 prints as ``-``; a name not found is PostgreSQL's
error at the literal; a reg* value compares with an integer as an oid.
Generated spellings compared with PostgreSQL 15."""
from __future__ import annotations

from tests.support.fidelity import simple_outcome, table_on_both

NAMES = {
    "regclass": ["pg_class", "pg_catalog.pg_type", "PG_PROC", '"pg_namespace"', "pg_roles",
                 "information_schema.tables", "fid7_reg_t", "nosuch", "a.b.c.d"],
    "regtype": ["int4", "integer", "pg_catalog.int8", "int4[]", "_text", "timestamptz", "nosuch"],
    "regproc": ["now", "pg_catalog.now", "NOW", "nosuch"],
    "regnamespace": ["pg_catalog", "public", "PUBLIC", "nosuch", "a.b"],
    "regrole": ["postgres", "pg_database_owner", "nosuch", "a.b"],
}
NUMBERS = {"regclass": [1259, 1247, 0, 99999], "regtype": [23, 0], "regnamespace": [11, 2200, 0], "regrole": [10, 6171, 0],
           "regproc": [0]}


def _cases():
    for reg, names in NAMES.items():
        for name in names:
            literal = "'" + name.replace("'", "''") + "'"
            yield f"SELECT {literal}::{reg}"
            yield f"SELECT {literal}::{reg}::text"
            yield f"SELECT CAST({literal} AS {reg}), ARRAY[{literal}::{reg}, NULL]"
            yield f"SELECT x::{reg} FROM (VALUES ({literal}), (NULL)) v(x)"
        if reg != "regproc":
            yield "SELECT '{" + ",".join(n for n in names if n.isidentifier() and n != "nosuch") + "}'::" + reg + "[]"
    for reg, numbers in NUMBERS.items():
        yield "SELECT " + ", ".join(f"{n}::{reg}" for n in numbers)
        yield "SELECT " + ", ".join(f"{n}::{reg}::text" for n in numbers)
    yield "SELECT 'pg_class'::regclass::oid, 'pg_class'::regclass = 1259, 1247 = 'pg_type'::regclass, " \
          "'pg_class'::regclass = 1259::int8, 'pg_proc'::regclass < 2000::int2"


def test_reg_type_names_agree(ss_conn, pg_conn):
    with table_on_both([ss_conn, pg_conn], "fid7_reg_t", "a int", "(1)"):
        cases = list(_cases())
        diffs = [(sql, got, want) for sql in cases
                 if (got := simple_outcome(ss_conn, sql)) != (want := simple_outcome(pg_conn, sql))]
        rows = simple_outcome(pg_conn, "SELECT 'pg_class'::regclass, 1259::regclass::text")
    assert not diffs, "\n".join(map(str, diffs[:8]))
    assert rows == ("ok", [("pg_class", "pg_class")]) and len(cases) > 100
