"""CREATE VIEW ... WITH (backfill = true) (issue 17, scope 8; stream/backfill.py):
the new view covers the rows the stream's ring still holds plus every later
row, each exactly once, while other connections keep inserting (INSERTs of
one row, which group commit batches, larger INSERTs and COPY), and after a
clean restart and a kill -9."""
from __future__ import annotations

import threading
import time

import psycopg
import pytest

from tests.support.engine import open_engine, postgres_session, result_rows
from tests.support.restarts import connect, restarted, started_with


def _writer(dsn: str, table: str, stream: str, base: int, stop: threading.Event, errors: list,
            after: tuple[threading.Event, str] | None = None) -> None:
    """Insert distinct values into the stream and, in the same order, into an
    oracle table; alternate one-row INSERTs, 20-row INSERTs and COPY.
    ``after``: (an event, a second table) that takes the rows of the inserts
    begun once the event is set."""
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            i = 0
            while not stop.is_set():
                late = after is not None and after[0].is_set()
                kind = i % 3
                n = 1 if kind == 0 else 20
                vals = list(range(base + i * 100, base + i * 100 + n))
                if kind == 2:
                    with c.cursor().copy(f"COPY {stream} (x) FROM STDIN") as cp:
                        for v in vals:
                            cp.write_row((v,))
                else:
                    c.execute(f"INSERT INTO {stream} (x) SELECT unnest(%s::int[])", (vals,))
                c.execute(f"INSERT INTO {table} (x) SELECT unnest(%s::int[])", (vals,))
                if late and after is not None:
                    c.execute(f"INSERT INTO {after[1]} (x) SELECT unnest(%s::int[])", (vals,))
                i += 1
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(e)


def _hold_next_insert(eng, held: str, release: threading.Event):
    """Make the next stream INSERT wait for ``release``: before it is logged
    (``before_log``: staged already) or after (``before_apply``: logged,
    not delivered).  Returns the database's own ingest, to put back."""
    original = eng.db._ingest

    def held_ingest(write, apply, sync, admit=None, logged=None):
        if held == "before_log":
            release.wait(10)
            return original(write, apply, sync, admit, logged)

        def late_apply(seq):
            release.wait(10)
            apply(seq)
        return original(write, late_apply, sync, admit, logged)

    eng.db._ingest = held_ingest
    return original


def _view_rows(c, view):
    return c.execute(f"SELECT x, count FROM {view} ORDER BY x").fetchall()


def _oracle(c, table):
    return [(x, 1) for (x,) in c.execute(f"SELECT x FROM {table} ORDER BY x").fetchall()]


@pytest.mark.parametrize("crash", [False, True])
def test_backfill_while_inserting_equals_the_oracle(ss_server_factory, crash):
    server = ss_server_factory()
    with connect(server) as c:
        # the ring holds every row since the server started: the oracle is every row inserted
        c.execute("CREATE FOREIGN TABLE s (x int) SERVER stream OPTIONS (capacity '1000000')")
        c.execute("CREATE TABLE oracle (x int)")
        stop, errors = threading.Event(), []
        writers = [threading.Thread(target=_writer, args=(server.dsn, "oracle", "s", k * 10_000_000, stop, errors))
                   for k in range(3)]
        for w in writers:
            w.start()
        time.sleep(0.5)
        c.execute("CREATE VIEW v WITH (backfill = true) AS SELECT x, count(*) FROM s GROUP BY x")
        time.sleep(0.5)
        stop.set()
        for w in writers:
            w.join()
        assert not errors, errors
        expected = _oracle(c, "oracle")
        assert _view_rows(c, "v") == expected          # every row once: none twice, none missed at the seam
        backfilled = c.execute("SELECT backfilled_rows FROM splitstream.views WHERE name = 'v'").fetchone()[0]
        assert 0 < backfilled < len(expected)
        c.execute("INSERT INTO s (x) VALUES (-1)")       # logged after the backfill's checkpoint: replayed
        c.execute("INSERT INTO oracle (x) VALUES (-1)")
        expected = _oracle(c, "oracle")
    with restarted(server, crash=crash) as c:
        assert _view_rows(c, "v") == expected
        assert c.execute("SELECT backfilled_rows FROM splitstream.views WHERE name = 'v'").fetchone() == (backfilled,)


def test_backfill_takes_what_the_ring_still_holds(ss_server_factory):
    server = started_with(
        ss_server_factory(),
        "CREATE FOREIGN TABLE s (x int, t text) SERVER stream OPTIONS (capacity '50')",
        "INSERT INTO s SELECT i, 'r' || i FROM generate_series(1, 80) AS i",
        "CREATE VIEW plain AS SELECT x, count(*) FROM s GROUP BY x",
        "CREATE VIEW v WITH (backfill = true) AS SELECT x, min(t) AS t, count(*) FROM s GROUP BY x",
        "INSERT INTO s VALUES (100, 'later')",
    )
    with connect(server) as c:
        # the ring holds the last 50 of the 80 rows: 31 .. 80, then the later row
        assert c.execute("SELECT x, t, count FROM v ORDER BY x").fetchall() == \
            [(i, f"r{i}", 1) for i in range(31, 81)] + [(100, "later", 1)]
        assert c.execute("SELECT x FROM plain").fetchall() == [(100,)]     # without backfill: only later rows
        assert c.execute("SELECT name, backfilled_rows FROM splitstream.views ORDER BY name").fetchall() == \
            [("plain", 0), ("v", 50)]
        for sql, state in [("CREATE VIEW t1 WITH (backfill = true) AS SELECT 1", "22023"),
                           ("CREATE OR REPLACE VIEW v WITH (backfill = true) AS "
                            "SELECT x, min(t) AS t, count(*) FROM s GROUP BY x", "0A000"),
                           ("CREATE VIEW t2 WITH (backfill = maybe) AS SELECT count(*) FROM s", "22023")]:
            with pytest.raises(psycopg.Error) as e:
                c.execute(sql)
            assert e.value.sqlstate == state, sql


@pytest.mark.parametrize("held", ["before_log", "before_apply"])
def test_backfill_seam_with_an_insert_held_across_the_create(tmp_path, held):
    """The two orders the seam must get right, forced: an INSERT staged
    before the view exists and logged after its CREATE (``before_log``: the
    view's live input), and one logged before the CREATE but delivered after
    the view is registered (``before_apply``: its backfill).  Either way the
    view counts it once, and so does a restart's replay."""
    release = threading.Event()
    with open_engine(str(tmp_path)) as eng:
        s1, s2 = postgres_session(eng, pid=1), postgres_session(eng, pid=2)
        s1.execute_sql("CREATE FOREIGN TABLE s (x int) SERVER stream")
        s1.execute_sql("INSERT INTO s SELECT generate_series(1, 100)")
        original = _hold_next_insert(eng, held, release)
        inserter = threading.Thread(target=s2.execute_sql, args=("INSERT INTO s SELECT generate_series(101, 200)",))
        inserter.start()
        time.sleep(0.3)                     # staged (and, before_apply, logged), not delivered
        eng.db._ingest = original
        threading.Timer(0.5, release.set).start()
        s1.execute_sql("CREATE VIEW v WITH (backfill = true) AS SELECT count(*), sum(x) FROM s")
        inserter.join()
        s1.execute_sql("INSERT INTO s VALUES (1000)")
        assert result_rows(s1, "SELECT * FROM v") == [(201, sum(range(1, 201)) + 1000)]
    with open_engine(str(tmp_path)) as eng:
        assert result_rows(postgres_session(eng), "SELECT * FROM v") == [(201, sum(range(1, 201)) + 1000)]


@pytest.mark.parametrize("held, counted", [("before_log", False), ("before_apply", True)])
def test_deactivate_seam_with_an_insert_held_across_it(tmp_path, held, counted):
    """pipelinedb.deactivate's seam, forced: an INSERT staged while the view
    is active but logged after the deactivation commits is not counted; one
    logged before it and delivered after is.  Live and replay agree."""
    release = threading.Event()
    with open_engine(str(tmp_path)) as eng:
        s1, s2 = postgres_session(eng, pid=1), postgres_session(eng, pid=2)
        s1.execute_sql("CREATE FOREIGN TABLE s (x int) SERVER stream")
        s1.execute_sql("CREATE VIEW v AS SELECT count(*) FROM s")
        s1.execute_sql("INSERT INTO s SELECT generate_series(1, 100)")
        original = _hold_next_insert(eng, held, release)
        inserter = threading.Thread(target=s2.execute_sql, args=("INSERT INTO s SELECT generate_series(1, 100)",))
        inserter.start()
        time.sleep(0.3)
        eng.db._ingest = original
        s1.execute_sql("SELECT pipelinedb.deactivate('v')")
        release.set()
        inserter.join()
        s1.execute_sql("INSERT INTO s VALUES (1)")            # ignored: deactivated
        expected = [(200 if counted else 100,)]
        assert result_rows(s1, "SELECT * FROM v") == expected
    with open_engine(str(tmp_path)) as eng:
        assert result_rows(postgres_session(eng), "SELECT * FROM v") == expected


def test_a_new_view_takes_every_batch_logged_after_its_create_however_late_it_registers(tmp_path):
    """Registration is one step with the CREATE's commit record (under the
    checkpoint lock), not an after-commit hook: batches logged after the
    commit and delivered before the hook ran used to reach the view only
    through the stream's held rows, so those its capacity had let go were
    lost live while replay counted them.  Forced: the after-commit step
    waits while two one-row INSERTs are logged and delivered (capacity 1
    lets the first go); the live view counts both, and so does replay."""
    reached, go = threading.Event(), threading.Event()
    with open_engine(str(tmp_path)) as eng:
        s1, s2 = postgres_session(eng, pid=1), postgres_session(eng, pid=2)
        s1.execute_sql("CREATE FOREIGN TABLE s (x int) SERVER stream OPTIONS (capacity '1')")
        s1.execute_sql("INSERT INTO s VALUES (100)")           # before the CREATE: not the view's
        manager = eng.streams
        original = manager._register

        def late_register(*args, **kwargs):
            reached.set()
            go.wait(10)
            return original(*args, **kwargs)
        manager._register = late_register
        creator = threading.Thread(target=s1.execute_sql, args=("CREATE VIEW v AS SELECT count(*), sum(x) FROM s",))
        creator.start()
        assert reached.wait(10)
        manager._register = original
        s2.execute_sql("INSERT INTO s VALUES (1)")
        s2.execute_sql("INSERT INTO s VALUES (2)")
        go.set()
        creator.join()
        assert result_rows(s2, "SELECT * FROM v") == [(2, 3)]
        eng.db.wal.close()                      # as a crash: the next open replays the WAL
        eng.close = lambda: None                # type: ignore[method-assign]
    with open_engine(str(tmp_path)) as eng:
        assert result_rows(postgres_session(eng), "SELECT * FROM v") == [(2, 3)]


def test_a_view_created_while_inserting_is_the_same_live_and_replayed(ss_server_factory):
    """CREATE VIEW (no backfill) while three connections insert into a
    stream that holds one row: the live view has every row of the inserts
    begun after the CREATE was acknowledged (an oracle table holds them),
    only rows that were inserted, each once, and after kill -9 (replay of
    the WAL) exactly the rows it had live."""
    server = ss_server_factory()
    with connect(server) as c:
        c.execute("CREATE FOREIGN TABLE s (x int) SERVER stream OPTIONS (capacity '1')")
        c.execute("CREATE TABLE inserted (x int)")
        c.execute("CREATE TABLE after_ack (x int)")
        stop, acked, errors = threading.Event(), threading.Event(), []
        writers = [threading.Thread(target=_writer, args=(server.dsn, "inserted", "s", k * 10_000_000, stop, errors,
                                                          (acked, "after_ack")))
                   for k in range(3)]
        for w in writers:
            w.start()
        time.sleep(0.5)
        c.execute("CREATE VIEW v AS SELECT x, count(*) FROM s GROUP BY x")
        acked.set()
        deadline = time.monotonic() + 30
        while c.execute("SELECT count(*) FROM after_ack").fetchone()[0] < 60 and time.monotonic() < deadline:
            time.sleep(0.05)                # inserts begun after the acknowledgement, from every writer
        stop.set()
        for w in writers:
            w.join()
        assert not errors, errors
        live = _view_rows(c, "v")
        assert {x for x, n in live if n != 1} == set()
        assert set(_oracle(c, "after_ack")) <= set(live) <= set(_oracle(c, "inserted"))
        assert c.execute("SELECT count(*) FROM after_ack").fetchone()[0] > 0
    with restarted(server, crash=True) as c:
        assert _view_rows(c, "v") == live
