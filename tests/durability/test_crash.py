"""Crash safety: SIGKILL the server at random points while clients commit
table rows and stream batches (and read continuous views), restart, and
check that every acknowledged write is there and nothing unacknowledged is;
continuous views are compared group by group with a table oracle
(``tests.cv.batch_oracle``)."""
from __future__ import annotations

import itertools
import math
import random
import threading
import time

import psycopg
import pytest

from tests.cv.batch_oracle import Insert, Oracle, Read
from tests.cv.oracle import close, rows
from tests.support.restarts import connect, restarted, started_with

pytestmark = pytest.mark.crash

CV_ITERATIONS = 12
#: rows of a large batch: past the sizes at which ingest syncs early and
#: feeds the views on two threads (EARLY_SYNC_ROWS, PARALLEL_MIN_ROWS)
BIG_MIN = 8300


class Writer(threading.Thread):
    """Commits one row per transaction; remembers what was acknowledged."""

    def __init__(self, dsn: str, table: str, start: int) -> None:
        super().__init__(daemon=True)
        self.dsn, self.table, self.next = dsn, table, start
        self.acked: list[int] = []
        self.inflight: int | None = None

    def run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=False) as conn:
                cur = conn.cursor()
                while True:
                    self.inflight = self.next
                    cur.execute(f"INSERT INTO {self.table} VALUES (%s, %s)", (self.next, f"row{self.next}"))
                    if self.next % 3 == 0:
                        cur.execute(f"UPDATE {self.table} SET v = v || '!' WHERE id = %s", (self.next,))
                    conn.commit()
                    self.acked.append(self.next)
                    self.inflight = None
                    self.next += 1
        except psycopg.Error:
            return


def test_committed_rows_survive_kill9(ss_server_factory):
    srv = ss_server_factory()
    with connect(srv) as c:
        c.execute("CREATE TABLE crash_t (id int PRIMARY KEY, v text)")
    rng = random.Random(11)
    acked: set[int] = set()
    maybe: set[int] = set()
    start = 0
    for it in range(20):
        writers = [Writer(srv.dsn, "crash_t", start + 100000 * w) for w in range(2)]
        for w in writers:
            w.start()
        time.sleep(rng.uniform(0.05, 0.4))
        if it % 5 == 4:
            with connect(srv) as c:
                c.execute("CHECKPOINT")
        srv.kill()
        for w in writers:
            w.join(timeout=10)
            acked.update(w.acked)
            if w.inflight is not None:
                maybe.add(w.inflight)
        start += 1000
        srv.start()
        with connect(srv) as c:
            got = dict(c.execute("SELECT id, v FROM crash_t").fetchall())
        missing = acked - set(got)
        extra = set(got) - acked - maybe
        assert not missing, f"iteration {it}: acknowledged rows lost: {sorted(missing)[:10]}"
        assert not extra, f"iteration {it}: unacknowledged rows present: {sorted(extra)[:10]}"
        for i in acked:
            assert got[i] == f"row{i}" + ("!" if i % 3 == 0 else ""), f"row {i} has {got[i]!r}"
        # rows that were in flight are now decided; treat the present ones as acked
        acked |= maybe & set(got)
        maybe = set()
    assert len(acked) > 20


# -- continuous views across kill -9 -------------------------------------------

#: streams of the crash test: s (k, x, y), r (k, z); {t} is the table (k, label)
CV_STREAMS = {"s": ("k", "x", "y"), "r": ("k", "z")}
#: views, created in order (a view may read an earlier one); compared group by group with the oracle
CV_VIEWS = {
    "per_key": "SELECT a.k, count(*) AS n, sum(a.x) AS sx, min(a.x) AS lo, max(a.x) AS hi, "
               "count(DISTINCT a.y) AS dy, avg(a.y) AS ay FROM {s} AS a GROUP BY a.k",
    "total": "SELECT count(*) AS n, sum(a.x) AS sx, count(DISTINCT a.k) AS dk, max(a.y) AS my, min(a.y) AS ly FROM {s} AS a",
    "by_label": "SELECT t.label, count(*) AS n, sum(a.x) AS sx, min(a.y) AS lo, count(DISTINCT a.x) AS dx "
                "FROM {s} AS a JOIN {t} t ON t.k = a.k GROUP BY t.label",
    "two_streams": "SELECT a.k, a.n, a.sx, b.m, b.mz FROM "
                   "(SELECT s1.k, count(*) AS n, sum(s1.x) AS sx FROM {s} AS s1 GROUP BY s1.k) a JOIN "
                   "(SELECT r1.k, sum(r1.z) AS m, max(r1.z) AS mz FROM {r} AS r1 GROUP BY r1.k) b ON a.k = b.k",
    "top_having": "SELECT a.k % 4 AS kk, sum(a.x) AS sx, count(*) AS n, avg(a.x) AS ax FROM {s} AS a "
                  "GROUP BY a.k % 4 HAVING count(*) > 2 ORDER BY sx DESC, kk LIMIT 3",
    "in_grouped": "SELECT t.k, t.label FROM {t} t WHERE t.k IN "
                  "(SELECT b.k FROM {r} AS b GROUP BY b.k HAVING count(*) % 2 = 0)",
    "over_view": "SELECT t.label, sum(v.n) AS n, max(v.hi) AS hi, min(v.lo) AS lo "
                 "FROM {per_key} AS v JOIN {t} t ON t.k = v.k GROUP BY t.label",
}
CV_READS = {name: f"SELECT * FROM {{{name}}} AS w" for name in CV_VIEWS} | {
    "adhoc_join": "SELECT v.k, v.n, v.sx, t.label FROM {per_key} AS v LEFT JOIN {t} t ON t.k = v.k WHERE v.n > 2",
}


class CvClients:
    """Writers (one statement per batch, each remembered with its send and
    acknowledgement times) and a reader (each answer remembered with when
    it was asked and answered), all until the server dies."""

    def __init__(self, dsn: str, names: dict[str, str], seed: int, big: bool, bids) -> None:
        self.dsn, self.names, self.big, self.bids = dsn, names, big, bids
        self.inserts: list[Insert] = []
        self.reads: list[Read] = []
        self.reading = threading.Event()
        self.threads = [threading.Thread(target=self._write, args=(w, seed * 10 + w), daemon=True) for w in range(2)]
        self.threads.append(threading.Thread(target=self._read, args=(seed * 10 + 9,), daemon=True))

    def start(self) -> None:
        for th in self.threads:
            th.start()

    def join(self) -> None:
        for th in self.threads:
            th.join(timeout=30)
            assert not th.is_alive(), "a client did not notice the crash"

    def _batch(self, rng: random.Random, w: int) -> Insert:
        stream = "s" if rng.random() < 0.7 else "r"
        big = self.big and w == 0 and stream == "s" and rng.random() < 0.5
        n = rng.randrange(BIG_MIN, BIG_MIN + 1500) if big else rng.randrange(1, 40)
        key = lambda: None if rng.random() < 0.03 else rng.randrange(8)  # noqa: E731
        if stream == "s":
            rows = [(key(), rng.randrange(100), None if rng.random() < 0.05 else rng.randrange(10)) for _ in range(n)]
        else:
            rows = [(key(), rng.randrange(-20, 21)) for _ in range(n)]
        return Insert(next(self.bids), stream, rows, w)

    def _write(self, w: int, seed: int) -> None:
        rng = random.Random(seed)
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                cur = conn.cursor()
                while True:
                    b = self._batch(rng, w)
                    self.inserts.append(b)
                    cols = ", ".join(CV_STREAMS[b.stream])
                    target = self.names[b.stream]
                    b.start = time.monotonic()
                    if len(b.rows) > 1000:
                        with cur.copy(f"COPY {target} ({cols}) FROM STDIN (FORMAT csv)") as cp:
                            cp.write("".join(",".join("" if v is None else str(v) for v in r) + "\n" for r in b.rows).encode())
                    elif rng.random() < 0.5:
                        with cur.copy(f"COPY {target} ({cols}) FROM STDIN") as cp:
                            for r in b.rows:
                                cp.write_row(r)
                    else:
                        ph = "(" + ", ".join(["%s"] * len(CV_STREAMS[b.stream])) + ")"
                        cur.execute(f"INSERT INTO {target} ({cols}) VALUES " + ", ".join([ph] * len(b.rows)),
                                    [v for r in b.rows for v in r])
                    b.ack = time.monotonic()
        except psycopg.Error:
            return

    def _read(self, seed: int) -> None:
        rng = random.Random(seed)
        keys = sorted(CV_READS)
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                cur = conn.cursor()
                while True:
                    key = rng.choice(keys)
                    self.reading.set()
                    t0 = time.monotonic()
                    got = rows(cur, CV_READS[key].format(**self.names))
                    self.reads.append(Read(key, t0, time.monotonic(), got, "reader"))
                    self.reading.clear()
                    time.sleep(rng.uniform(0.005, 0.03))
        except psycopg.Error:
            return


def _cv_oracle(cur, unique_name, table: str) -> Oracle:
    oracle = Oracle(cur, {s: (unique_name("crash_o" + s), cols) for s, cols in CV_STREAMS.items()})
    oracle.create({s: ("int",) * len(cols) for s, cols in CV_STREAMS.items()})
    for key, tpl in CV_READS.items():
        def render(rel, tpl=tpl):
            names = {"t": table, "s": rel("s"), "r": rel("r")}
            for name, vt in CV_VIEWS.items():
                names[name] = "(" + vt.format(**names) + ")"
            return tpl.format(**names)
        oracle.register(key, render)
    return oracle


@pytest.mark.parametrize("big", [False, True], ids=["small-batches", "large-batches"])
def test_continuous_views_recover_after_kill9(ss_server_factory, ss_server, unique_name, big):
    """Kill -9 at random points of ingest and reads (also mid-read and mid-
    checkpoint), restart, and compare every view, group by group, with the
    oracle over the acknowledged batches plus the ones in flight at the
    crash, each whole or not at all and the same for every view; every read
    before the crash is checked as in the property test."""
    srv = ss_server_factory()
    names = {"s": "crash_s", "r": "crash_r", "t": "crash_t"}
    with connect(srv) as c:
        c.execute("CREATE FOREIGN TABLE crash_s (k int, x int, y int) SERVER stream")
        c.execute("CREATE FOREIGN TABLE crash_r (k int, z int) SERVER stream")
        c.execute("CREATE TABLE crash_t (k int PRIMARY KEY, label text)")
        c.execute("INSERT INTO crash_t SELECT i, 'L' || (i % 3) FROM generate_series(0, 6) i")
        for name, tpl in CV_VIEWS.items():
            c.execute(f"CREATE VIEW {name} AS " + tpl.format(**names))
            names[name] = name
    with connect(ss_server) as oc:
        ocur = oc.cursor()
        table = unique_name("crash_ot")
        ocur.execute(f"CREATE TABLE {table} (k int PRIMARY KEY, label text)")
        ocur.execute(f"INSERT INTO {table} SELECT i, 'L' || (i % 3) FROM generate_series(0, 6) i")
        oracle = _cv_oracle(ocur, unique_name, table)
        try:
            _crash_loop(srv, names, oracle, big)
        finally:
            oracle.drop()
            ocur.execute(f"DROP TABLE {table}")


def _crash_loop(srv, names: dict[str, str], oracle: Oracle, big: bool) -> None:
    rng = random.Random(23 + big)
    bids = itertools.count()
    inserts: list[Insert] = []
    mid_read = 0
    for it in range(CV_ITERATIONS):
        clients = CvClients(srv.dsn, names, 1000 * big + it, big, bids)
        clients.start()
        time.sleep(rng.uniform(0.05, 0.35))
        how = it % 4
        if how == 1:                # a checkpoint, then more ingest
            with connect(srv) as c:
                c.execute("CHECKPOINT")
            time.sleep(rng.uniform(0.0, 0.1))
        elif how == 2:              # during a checkpoint
            threading.Thread(target=_checkpoint_quietly, args=(srv.dsn,), daemon=True).start()
            time.sleep(rng.uniform(0.0, 0.05))
        elif how == 3:              # while the reader's query is outstanding
            clients.reading.wait(timeout=5)
        reading = clients.reading.is_set()
        killed_at = time.monotonic()
        srv.kill()
        mid_read += reading
        clients.join()
        srv.start()
        oracle.load(clients.inserts)
        inserts += clients.inserts
        after = _read_everything(srv.dsn, names)
        visible = _decide(oracle, inserts, after, it)
        # batches lost with the crash never happened; the others count as acknowledged from now on
        for b in inserts:
            if b.ack == math.inf and b.bid in visible:
                b.ack = killed_at
        inserts[:] = [b for b in inserts if b.bid in visible or b.ack < math.inf]
        for rd in clients.reads:
            verdict = oracle.check(rd, inserts)
            assert verdict.ok, f"iteration {it}: a read before the crash:\n{verdict.message}"
        oracle.settle(visible)
    assert mid_read >= 1, "no kill hit an outstanding read"
    assert len(inserts) > CV_ITERATIONS


def _checkpoint_quietly(dsn: str) -> None:
    try:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CHECKPOINT")
    except psycopg.Error:
        pass


def _read_everything(dsn: str, names: dict[str, str]) -> list[Read]:
    with psycopg.connect(dsn, autocommit=True) as c:
        cur = c.cursor()
        t0 = time.monotonic()
        return [Read(key, t0, t0, rows(cur, sql.format(**names)), "after recovery") for key, sql in CV_READS.items()]


def _decide(oracle: Oracle, inserts: list[Insert], after: list[Read], it: int) -> frozenset:
    """The one set of batches every view shows after recovery: all the
    acknowledged ones plus, whole, any of those in flight at the crash."""
    acked = frozenset(b.bid for b in inserts if b.ack < math.inf)
    inflight = [b.bid for b in inserts if b.ack == math.inf]
    for n in range(len(inflight) + 1):
        for extra in itertools.combinations(inflight, n):
            vis = acked | frozenset(extra)
            if all(close(rd.rows, oracle.answer(rd.query, vis)) for rd in after):
                return vis
    lines = []
    for rd in after:
        want = oracle.answer(rd.query, acked)
        if not close(rd.rows, want):
            lines.append(f"{rd.query}: got {rd.rows[:8]}\n   want (acknowledged) {want[:8]}")
    raise AssertionError(f"iteration {it}: after recovery no set of in-flight batches {inflight} explains every view "
                         f"({len(acked)} acknowledged batches)\n" + "\n".join(lines))


def test_unlogged_table_is_empty_after_crash_but_kept_on_clean_restart(ss_server_factory):
    srv = started_with(
        ss_server_factory(),
        "CREATE UNLOGGED TABLE u (id int)",
        "CREATE TABLE p (id int)",
        "INSERT INTO u VALUES (1), (2)",
        "INSERT INTO p VALUES (1)",
    )
    with connect(srv) as c:
        assert c.execute("SELECT relpersistence FROM pg_class WHERE relname = 'u'").fetchone() == ("u",)
    with restarted(srv, crash=False) as c:
        assert c.execute("SELECT count(*) FROM u").fetchone() == (2,)
        c.execute("INSERT INTO u VALUES (3)")
    with restarted(srv, crash=True) as c:
        assert c.execute("SELECT count(*) FROM p").fetchone() == (1,)
        # after a crash an unlogged table is emptied; the table itself stays
        assert c.execute("SELECT count(*) FROM u").fetchone() == (0,)
