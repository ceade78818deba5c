"""Transaction modes as PostgreSQL 15 has them: READ ONLY blocks refuse
writes with 25006 naming the command (INSERT, SELECT FOR UPDATE, CREATE
TABLE, nextval(), COPY FROM, a stream INSERT), REPEATABLE READ and
SERIALIZABLE read one snapshot taken at the block's first query, the level
and READ WRITE only change before it (25001), SET TRANSACTION outside a
block warns, SET SESSION CHARACTERISTICS and default_transaction_* give the
defaults, and SHOW follows the block.  pg_dump opens its dump with
``SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY``, which was
refused.  Sequences of statements are compared with PostgreSQL 15 on fresh
sessions; two sessions interleave for snapshots.  One deliberate
difference, tested on its own: a REPEATABLE READ / SERIALIZABLE block's
first write is refused with 40001 if any transaction committed since its
snapshot (writers are serialized), where PostgreSQL refuses only a write
to a row that changed."""
from __future__ import annotations

import psycopg
import pytest

from tests.support.fidelity import simple_outcome

SEQUENCES = {
    "read_only_refusals": [
        "BEGIN READ ONLY", "INSERT INTO {t} VALUES (1)", "ROLLBACK",
        "BEGIN READ ONLY", "SELECT * FROM {t} FOR UPDATE", "ROLLBACK",
        "BEGIN READ ONLY", "SELECT * FROM {t} FOR SHARE", "ROLLBACK",
        "BEGIN READ ONLY", "CREATE TEMP TABLE {t}_tmp (a int)", "ROLLBACK",
        "BEGIN READ ONLY", "SELECT nextval('{t}_seq')", "ROLLBACK",
        "BEGIN READ ONLY", "UPDATE {t} SET a = 2", "ROLLBACK",
        "BEGIN READ ONLY", "DELETE FROM {t}", "ROLLBACK",
        "BEGIN READ ONLY", "DROP TABLE {t}", "ROLLBACK",
        "BEGIN READ ONLY", "TRUNCATE {t}", "ROLLBACK",
        "BEGIN READ ONLY", "SELECT count(*) FROM {t}", "SHOW transaction_read_only",
        "SELECT count(*) FROM {t} WHERE 'waiting for update' <> ''", "SELECT 'x' AS \"for update\", $$ into $$",
        "COMMIT",
        "START TRANSACTION READ WRITE, ISOLATION LEVEL SERIALIZABLE", "INSERT INTO {t} VALUES (5)", "COMMIT",
        "SELECT count(*) FROM {t}",
    ],
    "set_transaction": [
        "BEGIN READ ONLY", "SHOW transaction_isolation", "SELECT 1",
        "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "ROLLBACK",
        "BEGIN READ ONLY", "SELECT 1", "SET TRANSACTION READ WRITE", "ROLLBACK",
        "BEGIN READ ONLY", "SET TRANSACTION READ WRITE", "SHOW transaction_read_only", "ROLLBACK",
        "SET TRANSACTION READ ONLY", "SHOW transaction_isolation",
        "BEGIN ISOLATION LEVEL REPEATABLE READ", "SHOW transaction_isolation",
        "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SHOW transaction_isolation", "COMMIT",
        "BEGIN ISOLATION LEVEL READ UNCOMMITTED", "SHOW transaction_isolation", "ROLLBACK",
        "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY DEFERRABLE", "SHOW transaction_deferrable", "ROLLBACK",
        "BEGIN", "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY", "SHOW transaction_isolation",
        "INSERT INTO {t} VALUES (1)", "ROLLBACK",
        "BEGIN ISOLATION LEVEL BOGUS", "BEGIN READ SOMETIMES",
    ],
    "settings": [
        "SET transaction_isolation = 'serializable'", "SHOW transaction_isolation",
        "SET transaction_read_only = on", "SHOW transaction_read_only",
        "BEGIN", "SET transaction_read_only = 'yes'", "SHOW transaction_read_only", "INSERT INTO {t} VALUES (1)",
        "ROLLBACK",
        "BEGIN", "SET transaction_isolation TO DEFAULT", "SHOW transaction_isolation", "ROLLBACK",
        "RESET transaction_isolation", "SET transaction_isolation = 'bogus'",
        "SET default_transaction_isolation = 'repeatable read'", "BEGIN", "SHOW transaction_isolation", "ROLLBACK",
        "SHOW transaction_isolation", "RESET default_transaction_isolation",
        "BEGIN", "SET transaction_isolation = 'repeatable read'", "SELECT 1",
        "SET transaction_isolation = 'serializable'", "ROLLBACK",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", "SHOW default_transaction_read_only",
        "SHOW transaction_read_only", "INSERT INTO {t} VALUES (2)", "SELECT count(*) FROM {t}",
        "SET default_transaction_read_only = off", "INSERT INTO {t} VALUES (3)", "SELECT count(*) FROM {t}",
    ],
}


def _run(conn, t: str, statements: list[str]) -> list:
    return [(sql, simple_outcome(conn, sql.format(t=t))[:2]) for sql in statements]


@pytest.fixture
def both(ss_server, pg15, unique_name):
    t = unique_name("txm")
    conns = []
    for dsn in (ss_server.dsn, pg15.dsn):
        c = psycopg.connect(dsn, autocommit=True)
        c.execute(f"CREATE TABLE {t} (a int)")
        c.execute(f"CREATE SEQUENCE {t}_seq")
        conns.append(c)
    yield t, conns
    for c in conns:
        c.close()
    for dsn in (ss_server.dsn, pg15.dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f"DROP TABLE IF EXISTS {t}")
            c.execute(f"DROP SEQUENCE IF EXISTS {t}_seq")


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_transaction_modes_agree_with_postgresql(both, name):
    t, (ss, pg) = both
    got, want = _run(ss, t, SEQUENCES[name]), _run(pg, t, SEQUENCES[name])
    assert got == want


def _pair(dsn: str):
    return psycopg.connect(dsn, autocommit=True), psycopg.connect(dsn, autocommit=True)


@pytest.mark.parametrize("level, sees_new_row", [("READ COMMITTED", True), ("REPEATABLE READ", False),
                                                 ("SERIALIZABLE", False)])
def test_a_snapshot_is_taken_at_the_first_query(both, ss_server, pg15, level, sees_new_row):
    """Another session's commit after the block's first query: visible at
    READ COMMITTED, not at REPEATABLE READ or SERIALIZABLE, on both servers."""
    t, _ = both
    for dsn in (ss_server.dsn, pg15.dsn):
        a, b = _pair(dsn)
        with a, b:
            a.execute(f"BEGIN ISOLATION LEVEL {level}")
            b.execute(f"INSERT INTO {t} VALUES (1)")         # before the first query: seen
            before = a.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            b.execute(f"INSERT INTO {t} VALUES (2)")
            during = a.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            a.execute("COMMIT")
            after = a.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            b.execute(f"DELETE FROM {t}")
        assert (before, during, after) == (1, 2 if sees_new_row else 1, 2), dsn


def test_a_write_after_a_concurrent_update_of_its_row_is_a_serialization_failure(both, ss_server, pg15):
    t, _ = both
    outcomes = []
    for dsn in (ss_server.dsn, pg15.dsn):
        a, b = _pair(dsn)
        with a, b:
            b.execute(f"INSERT INTO {t} VALUES (1)")
            a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            a.execute(f"SELECT * FROM {t}")
            b.execute(f"UPDATE {t} SET a = 2")
            outcomes.append(simple_outcome(a, f"UPDATE {t} SET a = 3")[:2])
            a.execute("ROLLBACK")
            b.execute(f"DELETE FROM {t}")
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == "40001"


def test_a_snapshot_write_after_any_commit_is_refused_here(both, ss_server):
    """The deliberate difference (see the module): PostgreSQL would take this insert."""
    t, _ = both
    a, b = _pair(ss_server.dsn)
    with a, b:
        a.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
        a.execute(f"SELECT count(*) FROM {t}")
        b.execute(f"INSERT INTO {t} VALUES (1)")
        assert simple_outcome(a, f"INSERT INTO {t} VALUES (2)")[0] == "40001"
        a.execute("ROLLBACK")
        a.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
        a.execute(f"INSERT INTO {t} VALUES (3)")            # its first write comes before any other commit
        a.execute("COMMIT")
        assert sorted(r[0] for r in a.execute(f"SELECT a FROM {t}").fetchall()) == [1, 3]


def test_streams_refuse_writes_in_a_read_only_block(ss_conn, unique_name):
    s = unique_name("ros")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (v int) SERVER stream")
    ss_conn.execute(f"CREATE VIEW {s}_v AS SELECT count(*) FROM {s}")
    ss_conn.execute("BEGIN READ ONLY")
    assert simple_outcome(ss_conn, f"INSERT INTO {s} VALUES (1)")[:2] == \
        ("25006", "cannot execute INSERT in a read-only transaction")
    ss_conn.execute("ROLLBACK")
    ss_conn.execute("SET default_transaction_read_only = on")
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match="COPY FROM"):
        with ss_conn.cursor().copy(f"COPY {s} FROM STDIN") as cp:
            cp.write(b"1\n")
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match="INSERT"):
        ss_conn.execute(f"INSERT INTO {s} VALUES (%s)", (1,), prepare=True)
    ss_conn.execute("SET default_transaction_read_only = off")
    ss_conn.execute(f"INSERT INTO {s} VALUES (1)")
    assert ss_conn.execute(f"SELECT * FROM {s}_v").fetchone()[0] == 1


@pytest.mark.parametrize("before", ["", "SELECT 1"])
def test_begin_read_only_in_an_extended_batch(ss_server, pg15, both, before):
    """pgjdbc (setReadOnly) sends BEGIN READ ONLY through Parse/Bind/Execute
    with the next statements in one batch, maybe after another statement
    (the batch's implicit block becomes the read-only one)."""
    t, _ = both
    for dsn in (ss_server.dsn, pg15.dsn):
        with psycopg.connect(dsn, autocommit=True) as c:
            with c.pipeline():
                if before:
                    c.execute(before)
                c.execute("BEGIN READ ONLY", prepare=False)
                ro = c.execute("SHOW transaction_read_only")
            assert ro.fetchone()[0] == "on", dsn
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
                c.execute(f"INSERT INTO {t} VALUES (%s)", (1,))
            c.execute("ROLLBACK")


def test_an_autocommit_statement_at_default_repeatable_read_is_its_own_snapshot(ss_server, both):
    """Outside a block a statement is its own transaction: no 40001 from
    commits made before it, whatever default_transaction_isolation says."""
    t, _ = both
    with psycopg.connect(ss_server.dsn, autocommit=True) as a, psycopg.connect(ss_server.dsn, autocommit=True) as b:
        a.execute("SET default_transaction_isolation = 'repeatable read'")
        for i in range(20):
            b.execute(f"INSERT INTO {t} VALUES ({i})")
            a.execute(f"INSERT INTO {t} VALUES ({100 + i})")
        assert a.execute(f"SELECT count(*) FROM {t}").fetchone()[0] == 40
