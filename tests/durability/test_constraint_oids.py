"""pg_constraint OIDs are real OIDs: unique across every table (clients key
reflection by them: pg_get_constraintdef(oid)) and the same after a restart
or a crash, as in PostgreSQL."""
from __future__ import annotations

import psycopg
import pytest

QUERY = "SELECT c.oid::int8, c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c " \
        "JOIN pg_class r ON r.oid = c.conrelid WHERE r.relname LIKE 'co\\_%' ORDER BY 1"


def _snapshot(server) -> list[tuple]:
    with psycopg.connect(server.dsn, autocommit=True) as c:
        return c.execute(QUERY).fetchall()


@pytest.mark.parametrize("crash", [False, True])
def test_constraint_oids_unique_and_stable(ss_server_factory, crash):
    server = ss_server_factory()
    with psycopg.connect(server.dsn, autocommit=True) as c:
        for i in range(40):
            c.execute(f"CREATE TABLE co_p{i} (id int PRIMARY KEY, v int CHECK (v > 0))")
            c.execute(f"CREATE TABLE co_c{i} (id int REFERENCES co_p{i} (id), w int CHECK (w < 10), UNIQUE (w))")
        c.execute("ALTER TABLE co_c0 ADD CONSTRAINT co_extra CHECK (w <> 5)")
    before = _snapshot(server)
    oids = [r[0] for r in before]
    assert len(before) == 40 * 5 + 1 and len(set(oids)) == len(oids)
    by_name = {name: d for _, name, d in before}
    assert by_name["co_c7_id_fkey"] == "FOREIGN KEY (id) REFERENCES co_p7(id)"
    assert by_name["co_extra"].startswith("CHECK") and "w <> 5" in by_name["co_extra"]
    server.restart(crash=crash)
    assert _snapshot(server) == before
