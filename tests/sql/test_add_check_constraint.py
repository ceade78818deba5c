"""ALTER TABLE ... ADD CONSTRAINT ... CHECK validates the rows already in the
table, as PostgreSQL does (23514 "check constraint ... is violated by some
row"); it was added without looking at them, so a table could hold rows its
own constraint forbids.  ``ADD CHECK (...)`` without a name works and is
named as PostgreSQL names it (after the one column it reads), as a table
CHECK of CREATE TABLE is.  Compared with PostgreSQL 15."""
from __future__ import annotations

import pytest

from tests.support.fidelity import simple_outcome

CASES = [
    ["CREATE TABLE {t} (a int, b text)", "INSERT INTO {t} VALUES (-1, 'x'), (2, NULL)",
     "ALTER TABLE {t} ADD CONSTRAINT pos CHECK (a > 0)", "INSERT INTO {t} VALUES (-5, 'y')", "SELECT count(*) FROM {t}"],
    ["CREATE TABLE {t} (a int, b text)", "INSERT INTO {t} VALUES (1, 'x'), (NULL, 'y')",
     "ALTER TABLE {t} ADD CONSTRAINT pos CHECK (a > 0)", "INSERT INTO {t} VALUES (-5, 'y')", "SELECT count(*) FROM {t}"],
    ["CREATE TABLE {t} (a int, b text)", "ALTER TABLE {t} ADD CONSTRAINT short CHECK (length(b) < 3)",
     "INSERT INTO {t} VALUES (1, 'long')", "INSERT INTO {t} VALUES (1, 'ok')", "SELECT count(*) FROM {t}"],
    ["CREATE TABLE {t} (a int CHECK (a > -10), b int, CHECK (b > a), CHECK (b < 100), CHECK (a < 50))",
     "INSERT INTO {t} VALUES (1, 2)",
     "ALTER TABLE {t} ADD CHECK (a <> 7)", "ALTER TABLE {t} ADD CHECK (a + b < 1000)", "ALTER TABLE {t} ADD CHECK (b > 5)",
     "INSERT INTO {t} VALUES (7, 8)",
     "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = '{t}'::regclass ORDER BY 1"],
    ["CREATE TABLE {t} (a int, b int)", "INSERT INTO {t} VALUES (1, 2), (3, 1)", "ALTER TABLE {t} DROP COLUMN a",
     "ALTER TABLE {t} ADD CONSTRAINT bpos CHECK (b > 1)", "DELETE FROM {t} WHERE b = 1",
     "ALTER TABLE {t} ADD CONSTRAINT bpos CHECK (b > 1)",
     "SELECT conname FROM pg_constraint WHERE conrelid = '{t}'::regclass ORDER BY 1"],
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_add_check_agrees_with_postgresql(ss_conn, pg_conn, unique_name, case):
    t = unique_name("chk")
    try:
        for sql in CASES[case]:
            q = sql.format(t=t)
            assert simple_outcome(ss_conn, q)[:2] == simple_outcome(pg_conn, q)[:2], q
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE IF EXISTS {t}")
