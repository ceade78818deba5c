"""Foreign key actions: the ones splitstream carries out (ON DELETE CASCADE,
SET NULL, RESTRICT, NO ACTION; ON UPDATE RESTRICT, NO ACTION) are kept and
printed as PostgreSQL 15 keeps and prints them, in column and table
constraints; the others (ON UPDATE CASCADE / SET NULL / SET DEFAULT, ON
DELETE SET DEFAULT) are refused with 0A000, where they used to be accepted
and ignored (an UPDATE of a referenced key was then refused as NO ACTION)."""
from __future__ import annotations

import pytest

from tests.support.fidelity import simple_outcome

KEPT = ["ON DELETE CASCADE", "ON DELETE SET NULL", "ON DELETE RESTRICT", "ON DELETE NO ACTION",
        "ON UPDATE RESTRICT", "ON UPDATE NO ACTION", "ON DELETE CASCADE ON UPDATE RESTRICT",
        "ON UPDATE NO ACTION ON DELETE SET NULL", ""]
REFUSED = ["ON UPDATE CASCADE", "ON UPDATE SET NULL", "ON UPDATE SET DEFAULT", "ON DELETE SET DEFAULT",
           "ON DELETE CASCADE ON UPDATE CASCADE"]


@pytest.mark.parametrize("form", ["column", "table"])
@pytest.mark.parametrize("actions", KEPT)
def test_kept_actions_agree_with_postgresql(ss_conn, pg_conn, unique_name, form, actions):
    p, c = unique_name("fkp"), unique_name("fkc")
    ref = f"REFERENCES {p}(id) {actions}"
    body = f"(pid int {ref})" if form == "column" else f"(pid int, FOREIGN KEY (pid) {ref})"
    sqls = [f"CREATE TABLE {p} (id int PRIMARY KEY)", f"CREATE TABLE {c} {body}",
            f"INSERT INTO {p} VALUES (1), (2)", f"INSERT INTO {c} VALUES (1)", f"DELETE FROM {p} WHERE id = 1",
            f"UPDATE {p} SET id = 3 WHERE id = 2", f"SELECT * FROM {c} ORDER BY 1",
            f"SELECT confupdtype, confdeltype, pg_get_constraintdef(oid) FROM pg_constraint "
            f"WHERE conrelid = '{c}'::regclass"]
    try:
        for sql in sqls:
            assert simple_outcome(ss_conn, sql)[:2] == simple_outcome(pg_conn, sql)[:2], sql
    finally:
        for conn in (ss_conn, pg_conn):
            conn.execute(f"DROP TABLE IF EXISTS {c}, {p}")


@pytest.mark.parametrize("actions", REFUSED)
def test_actions_not_carried_out_are_refused(ss_conn, unique_name, actions):
    p, c = unique_name("fkp"), unique_name("fkc")
    ss_conn.execute(f"CREATE TABLE {p} (id int PRIMARY KEY)")
    out = simple_outcome(ss_conn, f"CREATE TABLE {c} (pid int REFERENCES {p}(id) {actions})")
    assert out[0] == "0A000" and "is not supported" in out[1]
    out = simple_outcome(ss_conn, f"CREATE TABLE {c} (pid int, FOREIGN KEY (pid) REFERENCES {p} {actions})")
    assert out[0] == "0A000"
    ss_conn.execute(f"DROP TABLE {p}")
