"""Role statements in process (issue 20): what the differential suites do
not reach — session authorization, SET LOCAL ROLE and ROLLBACK, VALID UNTIL
at login, DROP ROLE's detail, and the superuser-only pg_authid."""
from __future__ import annotations

import pytest

from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, postgres_session, result_rows


@pytest.fixture
def eng(tmp_path):
    with open_engine(str(tmp_path)) as e:
        es = postgres_session(e)
        for sql in ["CREATE ROLE alice LOGIN PASSWORD 'a' VALID UNTIL '2001-01-01'",
                    "CREATE ROLE bob LOGIN PASSWORD 'b' VALID UNTIL 'infinity'", "CREATE TABLE t (a int)",
                    "GRANT SELECT ON t TO alice", "ALTER TABLE t OWNER TO bob"]:
            es.execute_sql(sql)
        yield e


def _error(es, sql: str) -> tuple[str, str, str | None]:
    with pytest.raises(PgError) as ei:
        es.execute_sql(sql)
    es.on_error()
    return ei.value.sqlstate, ei.value.message, ei.value.detail


def test_valid_until_past_means_no_password(eng):
    assert eng.lookup_role("alice").password is None
    assert eng.lookup_role("bob").password is not None


def test_session_authorization(eng):
    es = postgres_session(eng)
    es.execute_sql("SET SESSION AUTHORIZATION alice")
    assert result_rows(es, "SELECT session_user, current_user") == [("alice", "alice")]
    assert _error(es, "SELECT * FROM pg_authid")[:2] == ("42501", "permission denied for table pg_authid")
    es.execute_sql("SET SESSION AUTHORIZATION bob")      # the authenticated user is a superuser
    assert result_rows(es, "SELECT session_user") == [("bob",)]
    es.execute_sql("RESET SESSION AUTHORIZATION")
    assert result_rows(es, "SELECT session_user, current_setting('is_superuser')") == [("postgres", "on")]


def test_set_role_is_undone_by_rollback_and_set_local_by_the_block(eng):
    es = postgres_session(eng)
    es.execute_sql("BEGIN")
    es.execute_sql("SET ROLE alice")
    assert result_rows(es, "SELECT current_user") == [("alice",)]
    es.execute_sql("ROLLBACK")
    assert result_rows(es, "SELECT current_user") == [("postgres",)]
    es.execute_sql("BEGIN")
    es.execute_sql("SET LOCAL ROLE alice")
    es.execute_sql("COMMIT")
    assert result_rows(es, "SELECT current_user") == [("postgres",)]
    es.execute_sql("BEGIN")
    es.execute_sql("SET ROLE alice")
    es.execute_sql("COMMIT")
    assert result_rows(es, "SELECT current_user, session_user") == [("alice", "postgres")]


def test_drop_role_names_what_depends_on_it(eng):
    es = postgres_session(eng)
    state, message, detail = _error(es, "DROP ROLE bob")
    assert (state, message, detail) == ("2BP01", 'role "bob" cannot be dropped because some objects depend on it',
                                        "owner of table t")
    state, message, detail = _error(es, "DROP ROLE alice")
    assert (state, detail) == ("2BP01", "privileges for table t")
    es.execute_sql("DROP OWNED BY alice")
    es.execute_sql("DROP ROLE alice")
    assert result_rows(es, "SELECT array_to_string(relacl, ',') FROM pg_class WHERE relname = 't'") == \
        [("bob=arwdDxt/bob",)]


def test_the_current_and_the_session_user_cannot_be_dropped(eng):
    es = postgres_session(eng)
    assert _error(es, "DROP ROLE postgres")[:2] == ("55006", "current user cannot be dropped")
    es.execute_sql("CREATE ROLE mgr CREATEROLE")
    es.execute_sql("SET ROLE mgr")
    assert _error(es, "DROP ROLE postgres")[:2] == ("55006", "session user cannot be dropped")
    assert _error(es, "DROP ROLE mgr")[:2] == ("55006", "current user cannot be dropped")


def test_reset_all_returns_to_the_session_users_role(eng):
    es = postgres_session(eng)
    es.execute_sql("SET ROLE alice")
    assert result_rows(es, "SELECT current_setting('is_superuser')") == [("off",)]
    res = es.execute_sql("RESET ALL")
    assert res.parameter_status.get("is_superuser") == "on"
    assert result_rows(es, "SELECT current_user, current_setting('is_superuser')") == [("postgres", "on")]
