"""WITH (max_rows = N) on an ungrouped continuous view (issue 17, scope 3;
executor/stream/row_cap.py): the view holds the N most recently arrived of
its rows, the same on both backends, after many batches, after kill -9 and
with concurrent inserters; bad values are refused with 22023 and a hint."""
from __future__ import annotations

import random
import threading

import psycopg
import pytest

CAP = 25


def _ddl(conn, s: str, v: str, t: str) -> None:
    conn.execute(f"CREATE FOREIGN TABLE {s} (seq int, k int, note text) SERVER pipelinedb")
    conn.execute(f"CREATE TABLE {t} (seq int, k int, note text)")
    conn.execute(f"CREATE VIEW {v} WITH (max_rows = {CAP}) AS SELECT seq, k * 2 AS k2, note FROM {s} WHERE k <> 3")


def _oracle(conn, t: str) -> list:
    """The table's last CAP matching rows, by the sequence (rows arrive in its order)."""
    return sorted(conn.execute(f"SELECT seq, k * 2, note FROM {t} WHERE k <> 3 ORDER BY seq DESC LIMIT {CAP}")
                  .fetchall())


def _batches(conn, s: str, t: str, rng: random.Random, start: int, count: int) -> int:
    """``count`` statements of 1..40 rows (INSERT, COPY or prepared), the sequence increasing."""
    seq = start
    for _ in range(count):
        rows = [(seq + i, rng.randrange(5), rng.choice([None, "a", "b"])) for i in range(rng.randrange(1, 41))]
        seq += len(rows)
        how = rng.choice(["insert", "copy", "prepared"])
        if how == "copy":
            with conn.cursor().copy(f"COPY {s} FROM STDIN") as cp:
                for r in rows:
                    cp.write_row(r)
        elif how == "prepared":
            for r in rows:
                conn.execute(f"INSERT INTO {s} VALUES (%s, %s, %s)", r, prepare=True)
        else:
            with conn.cursor() as cur:
                cur.execute(f"INSERT INTO {s} VALUES " + ", ".join(["(%s, %s, %s)"] * len(rows)),
                            [x for r in rows for x in r])
        with conn.cursor() as cur:
            cur.executemany(f"INSERT INTO {t} VALUES (%s, %s, %s)", rows)
    return seq


def _view(conn, v: str) -> list:
    return sorted(conn.execute(f"SELECT * FROM {v}").fetchall())


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_capped_view_is_the_last_rows_of_a_table(ss_conn, unique_name, backend):
    s, v, t = unique_name("s"), unique_name("v"), unique_name("t")
    ss_conn.execute(f"SET executor_backend = {backend}")
    notices: list = []
    ss_conn.add_notice_handler(lambda d: notices.append(d.message_primary))
    _ddl(ss_conn, s, v, t)
    assert not [m for m in notices if "grows without bound" in m], notices
    rng = random.Random(7)
    seq = 0
    for _ in range(6):
        seq = _batches(ss_conn, s, t, rng, seq, 8)
        got = _view(ss_conn, v)
        assert len(got) == CAP and got == _oracle(ss_conn, t)
    # read like a table: the upper plan runs over the kept rows only
    assert ss_conn.execute(f"SELECT count(*), max(seq) FROM {v}").fetchone() == \
        (CAP, ss_conn.execute(f"SELECT max(seq) FROM {t} WHERE k <> 3").fetchone()[0])


@pytest.mark.parametrize("backend", ["vector", "llvm"])
def test_capped_view_survives_kill9(ss_server_factory, backend):
    """Live on either backend, replayed after kill -9 (on the server's
    default backend): the same rows."""
    server = ss_server_factory()
    rng = random.Random(11)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute(f"SET executor_backend = {backend}")
        _ddl(c, "s", "v", "t")
        seq = _batches(c, "s", "t", rng, 0, 10)
        c.execute("CHECKPOINT")
        seq = _batches(c, "s", "t", rng, seq, 10)       # replayed from the WAL
        before = _view(c, "v")
        assert before == _oracle(c, "t")
    server.restart(crash=True)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        assert _view(c, "v") == before
        _batches(c, "s", "t", rng, seq, 3)                   # and it goes on capping after the restart
        assert _view(c, "v") == _oracle(c, "t")


def test_concurrent_inserters(ss_server_factory):
    """Eight writers of single-row INSERTs (group commit combines them):
    the view holds CAP rows, each writer's kept rows are the newest it sent
    (a suffix of its sequence), and kill -9 keeps exactly the same rows."""
    server = ss_server_factory()
    with psycopg.connect(server.dsn, autocommit=True) as c:
        c.execute("CREATE FOREIGN TABLE s (w int, seq int) SERVER pipelinedb")
        c.execute(f"CREATE VIEW v WITH (max_rows = {CAP}) AS SELECT w, seq FROM s")

    def writer(w: int) -> None:
        with psycopg.connect(server.dsn, autocommit=True) as conn:
            for i in range(60):
                conn.execute("INSERT INTO s VALUES (%s, %s)", (w, i), prepare=i % 2 == 0)
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        got = _view(c, "v")
    assert len(got) == CAP
    for w in {r[0] for r in got}:
        mine = [seq for ww, seq in got if ww == w]
        assert mine == list(range(60 - len(mine), 60)), (w, mine)
    server.restart(crash=True)
    with psycopg.connect(server.dsn, autocommit=True) as c:
        assert _view(c, "v") == got


@pytest.mark.parametrize("option, sqlstate, message", [
    ("max_rows = 0", "22023", 'value 0 out of bounds for option "max_rows"'),
    ("max_rows = -5", "22023", 'value -5 out of bounds for option "max_rows"'),
    ("max_rows = 'many'", "22023", 'invalid value for integer option "max_rows": many'),
    ("max_rows = 1.5", "22023", 'invalid value for integer option "max_rows": 1.5'),
])
def test_bad_values_are_refused(ss_conn, unique_name, option, sqlstate, message):
    s = unique_name("s")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int) SERVER pipelinedb")
    with pytest.raises(psycopg.Error) as e:
        ss_conn.execute(f"CREATE VIEW {unique_name('v')} WITH ({option}) AS SELECT x FROM {s}")
    assert (e.value.sqlstate, e.value.diag.message_primary) == (sqlstate, message)
    assert e.value.diag.message_hint


def test_cap_applies_to_ungrouped_continuous_views_only(ss_conn, unique_name):
    s, t = unique_name("s"), unique_name("t")
    ss_conn.execute(f"CREATE FOREIGN TABLE {s} (x int) SERVER pipelinedb")
    ss_conn.execute(f"CREATE TABLE {t} (x int)")
    cases = [
        (f"CREATE VIEW {{v}} WITH (max_rows = 5) AS SELECT x, count(*) FROM {s} GROUP BY x", "22023",
         "applies to ungrouped continuous views"),
        (f"CREATE VIEW {{v}} WITH (max_rows = 5) AS SELECT x FROM {t}", "22023", "needs a continuous view"),
        (f"CREATE VIEW {{v}} WITH (max_rows = 5, ttl = '1 hour', ttl_column = 'ts') AS "
         f"SELECT x, arrival_timestamp AS ts FROM {s}", "0A000", "cannot combine max_rows"),
    ]
    for sql, sqlstate, words in cases:
        v = unique_name("v")
        with pytest.raises(psycopg.Error) as e:
            ss_conn.execute(sql.format(v=v))
        assert e.value.sqlstate == sqlstate and words in e.value.diag.message_primary, sql
        assert e.value.diag.message_hint
        assert ss_conn.execute("SELECT count(*) FROM pg_class WHERE relname = %s", (v,)).fetchone() == (0,)
