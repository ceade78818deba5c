"""Statements and options splitstream does not implement are refused with a
PostgreSQL error and a hint, never accepted and ignored (each of these used to
succeed and do nothing, which gave silently wrong answers)."""
from __future__ import annotations

import pytest

from splitstream.protocol.errors import PgError
from tests.support.engine import open_engine, session_after


@pytest.fixture()
def session(tmp_path):
    with session_after(str(tmp_path / "d"), "CREATE FOREIGN TABLE clicks (uid int, url text) SERVER stream",
                       "CREATE TABLE t (x int)", "INSERT INTO t SELECT g FROM generate_series(1, 100) g",
                       superuser=False) as s:
        yield s


def _refused(session, sql: str, sqlstate: str) -> PgError:
    with pytest.raises(PgError) as err:
        session.execute_sql(sql)
    assert err.value.sqlstate == sqlstate, (sql, err.value.sqlstate, err.value.message)
    assert err.value.hint, sql
    return err.value


@pytest.mark.parametrize("option, sqlstate", [
    ("sw = '0 minutes'", "22023"), ("sw = 'banana'", "22007"), ("ttl = '1 hour', ttl_column = 'ts'", "0A000"),
    ("security_barrier = true", "0A000"), ("banana = 1", "22023"),
])
def test_view_options_refused_and_nothing_created(session, option, sqlstate):
    err = _refused(session, f"CREATE VIEW v WITH ({option}) AS SELECT url, count(*) FROM clicks GROUP BY url", sqlstate)
    if option.startswith("banana"):
        assert err.message == 'unrecognized parameter "banana"'
    rows = session.execute_sql("SELECT count(*) FROM pg_class WHERE relname = 'v'").batch.cols[0].to_pylist()
    assert rows == [0]
    # the implemented option still works
    session.execute_sql("CREATE VIEW v WITH (action = materialize) AS SELECT url, count(*) FROM clicks GROUP BY url")


@pytest.mark.parametrize("method", ["SYSTEM (10) REPEATABLE (1)", "SYSTEM_ROWS (5)"])
def test_tablesample_on_a_stream_refused(session, method):
    """Tables sample (tests/sql/test_tablesample.py); these methods have no meaning on a stream."""
    _refused(session, f"SELECT count(*) FROM clicks TABLESAMPLE {method}", "0A000")


# -- settings ------------------------------------------------------------------

@pytest.mark.parametrize("sql", [
    "SET datestyle = 'German'", "SET DateStyle = 'ISO, DMY'", "SET intervalstyle = 'iso_8601'",
    "SET bytea_output = 'escape'", "SET standard_conforming_strings = off", "SET session_replication_role = replica",
])       # transaction modes are honoured (tests/sql/test_transaction_modes.py)
def test_settings_not_honoured_refused(session, sql):
    _refused(session, sql, "0A000")


@pytest.mark.parametrize("sql", [
    "SET banana = 1", "SET pipelinedb.banana = 1", "SET splitstream.banana = 1",
    "SELECT set_config('splitstream.x', '1', false)", "SHOW banana",
])
def test_unknown_settings_are_42704(session, sql):
    with pytest.raises(PgError) as err:
        session.execute_sql(sql)
    assert err.value.sqlstate == "42704"
    assert "unrecognized configuration parameter" in err.value.message


@pytest.mark.parametrize("sql, shown", [
    ("SET pipelinedb.stream_insert_level = sync_commit", ("pipelinedb.stream_insert_level", "sync_commit")),
    ("SET pipelinedb.stream_targets = ''", ("pipelinedb.stream_targets", "")),
    # honoured (tests/integration/test_stream_targets.py); the names are looked up when an INSERT uses them
    ("SET pipelinedb.stream_targets TO 'v1, v2'", ("pipelinedb.stream_targets", "v1, v2")),
    ("SELECT set_config('pipelinedb.stream_targets', 'v', false)", ("pipelinedb.stream_targets", "v")),
    # PipelineDB's settings are kept: honoured (step factor) or answered with a NOTICE
    # (tests/integration/test_pipelinedb_management.py)
    ("SET pipelinedb.sliding_window_step_factor = 10", ("pipelinedb.sliding_window_step_factor", "10")),
    ("SET pipelinedb.num_workers = 4", ("pipelinedb.num_workers", "4")),
    ("SET myapp.tenant = 'acme'", ("myapp.tenant", "acme")),
    ("SELECT set_config('myapp.tenant', 'acme', false)", ("myapp.tenant", "acme")),
    ("SET work_mem = '64MB'", None), ("SET DateStyle = 'ISO'", None),
    ("SET TRANSACTION ISOLATION LEVEL READ COMMITTED, READ WRITE", None),
])
def test_honoured_settings_and_placeholders_accepted(session, sql, shown):
    """What splitstream does anyway (PipelineDB's sync_commit level, every view
    fed), a placeholder under a prefix that is not ours, and inert knobs."""
    session.execute_sql(sql)
    if shown is not None:
        name, value = shown
        assert session.execute_sql(f"SELECT current_setting('{name}')").batch.rows() == [(value,)]
    session.execute_sql("RESET ALL")


def test_transaction_modes_splitstream_has_are_accepted(session):
    for sql in ("BEGIN ISOLATION LEVEL READ COMMITTED", "START TRANSACTION READ WRITE, NOT DEFERRABLE"):
        assert session.execute_sql(sql).tag == "BEGIN"
        session.execute_sql("ROLLBACK")


def test_pipelinedb_setting_refused_at_startup(tmp_path):
    from splitstream.executor.context import SessionInfo
    with open_engine(str(tmp_path / "d")) as eng:
        with pytest.raises(PgError) as err:
            eng.new_session(SessionInfo(settings={"pipelinedb.stream_targets": "v,,w"}))
        assert err.value.sqlstate == "22023" and err.value.detail == "List syntax is invalid."
        with pytest.raises(PgError) as err:
            eng.new_session(SessionInfo(settings={"pipelinedb.num_workers": "0"}))
        assert err.value.sqlstate == "22023"
        eng.new_session(SessionInfo(settings={"pipelinedb.stream_targets": "v"}))
        with pytest.raises(PgError) as err:
            eng.new_session(SessionInfo(settings={"banana": "1"}))
        assert err.value.sqlstate == "42704"
        eng.new_session(SessionInfo(settings={"myapp.x": "1"}))


# -- statements ----------------------------------------------------------------

@pytest.mark.parametrize("sql", [
    "CREATE DATABASE other", "CREATE EXTENSION postgis", "CREATE EXTENSION IF NOT EXISTS hstore",
    "CLUSTER t", "REINDEX TABLE t", "CREATE USER MAPPING FOR postgres SERVER stream",
    "CREATE TEMP TABLE tt (x int)", "CREATE TABLE pt (x int) PARTITION BY RANGE (x)",
    "CREATE TABLE it (y int) INHERITS (t)",
    "SELECT * FROM t FOR UPDATE SKIP LOCKED", "CREATE UNIQUE INDEX tu ON t (x) WHERE x > 5",
    "COMMENT ON FUNCTION now() IS 'x'", "COMMENT ON DATABASE postgres IS 'x'",
])
def test_statements_refused(session, sql):
    _refused(session, sql, "0A000")
    assert session.execute_sql("SELECT count(*) FROM pg_class WHERE relname IN ('tt', 'pt', 'it')").batch.rows() == [(0,)]


@pytest.mark.parametrize("sql, sqlstate", [
    ("CREATE TABLE w (x int) WITH (banana = 1)", "22023"), ("CREATE TABLE w (x int) TABLESPACE fast", "42704"),
    ("VACUUM nosuch", "42P01"), ("ANALYZE nosuch", "42P01"), ("VACUUM (VERBOSE) t, nosuch", "42P01"),
    ("LOCK TABLE t", "25P01"), ("DISCARD banana", "42601"), ("CREATE EXTENSION pipelinedb", "42710"),
    ("CREATE INDEX ti ON t USING banana (x)", "42704"),
])
def test_statements_that_would_be_ignored_now_fail_as_postgresql(session, sql, sqlstate):
    with pytest.raises(PgError) as err:
        session.execute_sql(sql)
    assert err.value.sqlstate == sqlstate, err.value.message


def test_create_extension_pipelinedb_if_not_exists_says_it_is_there(session):
    res = session.execute_sql("CREATE EXTENSION IF NOT EXISTS pipelinedb")
    assert [n.message for n in res.notices] == ['extension "pipelinedb" already exists, skipping']


def test_vacuum_and_analyze_check_names_and_vacuum_refuses_a_block(session):
    for sql in ("VACUUM", "VACUUM t", "VACUUM FULL ANALYZE t", "VACUUM (VERBOSE, ANALYZE) t (x)", "ANALYZE t",
                "ANALYZE clicks"):
        session.execute_sql(sql)
    session.execute_sql("BEGIN")
    session.execute_sql("ANALYZE t")                      # ANALYZE may run in a block, VACUUM may not
    with pytest.raises(PgError) as err:
        session.execute_sql("VACUUM t")
    assert err.value.sqlstate == "25001"
    session.execute_sql("ROLLBACK")


def test_discard_all_resets_the_session(session):
    session.execute_sql("SET extra_float_digits = 0")
    session.execute_sql("PREPARE q AS SELECT 1")
    session.execute_sql("DISCARD ALL")
    assert session.execute_sql("SHOW extra_float_digits").batch.rows() == [("1",)]
    with pytest.raises(PgError) as err:
        session.execute_sql("EXECUTE q")
    assert err.value.sqlstate == "26000"
    session.execute_sql("BEGIN")
    with pytest.raises(PgError) as err:
        session.execute_sql("DISCARD ALL")
    assert err.value.sqlstate == "25001"
    session.execute_sql("ROLLBACK")


def test_lock_table_and_for_update_hold_the_writer_lock(tmp_path):
    """A second transaction cannot lock or write what the first one locked."""
    from tests.support.engine import postgres_session
    with open_engine(str(tmp_path / "d")) as eng:
        a, b = postgres_session(eng, 1), postgres_session(eng, 2)
        a.execute_sql("CREATE TABLE t (x int)")
        a.execute_sql("INSERT INTO t VALUES (1)")
        for lock in ("LOCK TABLE t IN SHARE ROW EXCLUSIVE MODE", "SELECT * FROM t FOR UPDATE"):
            a.execute_sql("BEGIN")
            a.execute_sql(lock)
            b.execute_sql("BEGIN")
            for attempt in ("LOCK TABLE t NOWAIT", "SELECT x FROM t FOR SHARE NOWAIT"):
                with pytest.raises(PgError) as err:
                    b.execute_sql(attempt)
                assert err.value.sqlstate == "55P03"
                b.execute_sql("ROLLBACK")
                b.execute_sql("BEGIN")
            assert b.execute_sql("SELECT x FROM t").batch.rows() == [(1,)]   # readers never wait
            b.execute_sql("ROLLBACK")
            a.execute_sql("COMMIT")
        b.execute_sql("BEGIN")
        b.execute_sql("LOCK TABLE t NOWAIT")
        b.execute_sql("COMMIT")


def test_splitstream_own_dotted_setting_accepted(session):
    """The Spark connector's exactly-once key is ours and honoured (stream/spark/ledger.py)."""
    session.execute_sql("SET splitstream.batch_key = 'q/1/0/0'")
    assert session.execute_sql("SHOW splitstream.batch_key").batch.rows() == [("q/1/0/0",)]


def test_truncate_restart_identity_restarts_owned_sequences(session):
    session.execute_sql("CREATE TABLE ids (id serial PRIMARY KEY, v int)")
    session.execute_sql("INSERT INTO ids (v) VALUES (1), (2)")
    session.execute_sql("BEGIN")
    session.execute_sql("TRUNCATE ids RESTART IDENTITY")
    session.execute_sql("ROLLBACK")                           # undone with the transaction
    assert session.execute_sql("INSERT INTO ids (v) VALUES (3) RETURNING id").batch.rows() == [(3,)]
    session.execute_sql("TRUNCATE ids RESTART IDENTITY")
    assert session.execute_sql("INSERT INTO ids (v) VALUES (4) RETURNING id").batch.rows() == [(1,)]
    session.execute_sql("TRUNCATE ids")                      # CONTINUE IDENTITY, the default
    assert session.execute_sql("INSERT INTO ids (v) VALUES (5) RETURNING id").batch.rows() == [(2,)]
