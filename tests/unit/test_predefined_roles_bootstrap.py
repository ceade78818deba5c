"""The predefined roles are built in: a new state has them, a checkpoint
written before they were kept (its roles are postgres and the users' own)
gains them when read back, and memberships granted to or by them survive a
restart, from the WAL alone and from a checkpoint."""
from __future__ import annotations

from dataclasses import replace

from splitstream.catalog.objects.model import Role
from splitstream.catalog.objects.predefined_roles import (
    PG_MONITOR, PG_READ_ALL_DATA, PREDEFINED_ROLES, with_predefined,
)
from splitstream.catalog.storage.database import State, bootstrap_state
from tests.support.engine import open_engine, postgres_session, result_rows

MEMBERSHIPS = ("SELECT roleid::regrole::text, member::regrole::text, admin_option FROM pg_auth_members "
               "ORDER BY 1, 2")


def test_a_new_state_has_every_predefined_role():
    roles = bootstrap_state().roles
    assert {r.name: r.oid for r in PREDEFINED_ROLES}.items() <= {n: r.oid for n, r in roles.items()}.items()
    assert len(PREDEFINED_ROLES) == 12


def test_an_old_checkpoint_gains_them_and_keeps_its_roles():
    old = bootstrap_state()
    alice = Role(16384, "alice", login=True)
    old.roles = {"postgres": old.roles["postgres"], "alice": alice}
    restored = State.from_record(old.to_record())
    assert restored.roles["alice"] == alice
    assert set(restored.roles) == set(bootstrap_state().roles) | {"alice"}
    assert restored.roles["pg_monitor"].member_of == ((3374, 10, False), (3375, 10, False), (3377, 10, False))


def test_a_kept_predefined_row_wins_over_the_built_in_one():
    granted = replace(next(r for r in PREDEFINED_ROLES if r.oid == PG_READ_ALL_DATA), member_of=((16384, 10, False),))
    assert with_predefined({granted.name: granted})[granted.name] is granted


def test_memberships_survive_restarts(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        for sql in ["CREATE ROLE alice", "GRANT pg_monitor TO alice WITH ADMIN OPTION", "GRANT alice TO pg_read_all_data"]:
            es.execute_sql(sql)
        expected = result_rows(es, MEMBERSHIPS)
    assert ("pg_monitor", "alice", True) in expected and ("alice", "pg_read_all_data", False) in expected
    for step in ("from the WAL", "then checkpointed", "from the checkpoint"):
        with open_engine(str(tmp_path / "d")) as eng:
            es = postgres_session(eng)
            assert result_rows(es, MEMBERSHIPS) == expected, step
            assert result_rows(es, "SELECT pg_has_role('alice', 'pg_read_all_stats', 'USAGE')") == [(True,)]
            assert result_rows(es, f"SELECT count(*) FROM pg_roles WHERE oid = {PG_MONITOR}") == [(1,)]
            if step == "then checkpointed":
                es.execute_sql("CHECKPOINT")
