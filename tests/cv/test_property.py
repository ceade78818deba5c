"""Property test: random streams, random views of the supported shapes, and
random interleavings of inserts from three connections with reads running
at the same time on two more (and on the inserting connections).

Every read must equal the same query over tables holding every row
acknowledged before the read was sent, plus any of the batches in flight
during it, each batch whole and each connection's batches in order (see
``batch_oracle``).  splitstream's own table path is the oracle."""
from __future__ import annotations

import random
import re
import threading
import time
from dataclasses import dataclass

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .batch_oracle import Insert, Oracle, Read
from .oracle import rows

WRITERS = 3
READERS = 2
READS_PER_READER = 30
BIG_ROWS = 9000          # past the size at which a batch feeds its views on two threads

STREAMS = {"s": (("k", "x", "y"), ("int", "int", "int")), "r": (("k", "z"), ("int", "int"))}


@dataclass(frozen=True)
class Shape:
    """Views created in order ({v0}, {v1}... name the earlier ones) and
    ad-hoc queries over them; every view is also read with SELECT *.
    Streams are {s} (k, x, y) and {r} (k, z), always given an alias;
    {t} (k, label) is a table, {c} a constant."""

    views: tuple[str, ...]
    reads: tuple[str, ...] = ()


GROUPED_S = "SELECT a.k, count(*) AS n, sum(a.x) AS sx, max(a.y) AS my FROM {s} AS a GROUP BY a.k"
GROUPED_R = "SELECT b.k, sum(b.z) AS m, count(*) AS n FROM {r} AS b GROUP BY b.k"

SHAPES: dict[str, Shape] = {
    "group": Shape((GROUPED_S,)),
    "minmax_avg_where": Shape((
        "SELECT a.k, min(a.x) AS lo, max(a.x) AS hi, avg(a.y) AS ay FROM {s} AS a WHERE a.x > {c} GROUP BY a.k",)),
    "ungrouped": Shape((
        "SELECT count(*) AS n, sum(a.y) AS sy, count(DISTINCT a.k) AS dk, min(a.x) AS lo, max(a.y) AS hi, "
        "avg(a.x) AS ax FROM {s} AS a",)),
    "expr_key_having_distinct": Shape((
        "SELECT a.k % 3 AS kk, sum(a.x * 2 + a.y) AS v, count(DISTINCT a.x) AS dx FROM {s} AS a "
        "GROUP BY a.k % 3 HAVING count(*) > 1",)),
    "exprs_over_aggregates": Shape((
        "SELECT a.k, sum(a.x) - min(a.y) AS d, max(a.x) * 2 + count(*) AS e, sum(a.y)::float8 / count(*) AS ratio, "
        "bool_or(a.x > {c}) AS anyx, coalesce(max(a.x), 0) - coalesce(min(a.x), 0) AS spread "
        "FROM {s} AS a GROUP BY a.k",)),
    "filter_clause": Shape((
        "SELECT a.k, count(a.x) AS cx, sum(a.y) FILTER (WHERE a.y > 0) AS sy, "
        "avg(a.x) FILTER (WHERE a.y < 0) AS ax FROM {s} AS a GROUP BY a.k",)),
    "regroup": Shape((
        "SELECT q.g, count(*) AS n, min(q.k) AS mk FROM "
        "(SELECT a.k, sum(a.x) AS g FROM {s} AS a GROUP BY a.k) q GROUP BY q.g",)),
    "table_join_below_grouping": Shape((
        "SELECT t.label, sum(a.x) AS sx, count(*) AS n, count(DISTINCT a.k) AS dk, max(a.y) AS my "
        "FROM {s} AS a JOIN {t} t ON a.k = t.k GROUP BY t.label",)),
    "table_join_above_grouping": Shape((
        "WITH g AS (SELECT a.k, count(*) AS c, avg(a.x) AS ax FROM {s} AS a GROUP BY a.k) "
        "SELECT g.k, g.c, g.ax, t.label FROM g JOIN {t} t ON t.k = g.k",)),
    # thesis Figure 4.2: two streams, each grouped, joined
    "grouped_streams_joined": Shape((
        "SELECT a.k, a.n, a.sx, b.m, b.mz FROM "
        "(SELECT s1.k, count(*) AS n, sum(s1.x) AS sx FROM {s} AS s1 GROUP BY s1.k) a JOIN "
        "(SELECT r1.k, sum(r1.z) AS m, max(r1.z) AS mz FROM {r} AS r1 GROUP BY r1.k) b ON a.k = b.k",)),
    "grouped_streams_table_topn": Shape((
        "SELECT t.label, sum(a.n * b.m) AS w, count(*) AS pairs FROM "
        "(SELECT s1.k, count(*) AS n FROM {s} AS s1 WHERE s1.x > {c} GROUP BY s1.k) a JOIN "
        "(SELECT r1.k, count(r1.z) AS m FROM {r} AS r1 GROUP BY r1.k) b ON a.k = b.k "
        "JOIN {t} t ON t.k = a.k GROUP BY t.label ORDER BY w DESC, t.label LIMIT 2",)),
    "grouped_streams_left_join": Shape((
        "SELECT a.k, a.n, b.m FROM (SELECT s1.k, count(*) AS n FROM {s} AS s1 GROUP BY s1.k) a LEFT JOIN "
        "(SELECT r1.k, sum(r1.z) AS m FROM {r} AS r1 GROUP BY r1.k) b ON a.k = b.k",)),
    "grouped_streams_union": Shape((
        "SELECT q.k, sum(q.n) AS n FROM (SELECT a.k, count(*) AS n FROM {s} AS a GROUP BY a.k "
        "UNION ALL SELECT b.k, count(*) AS n FROM {r} AS b GROUP BY b.k) q GROUP BY q.k",)),
    "one_stream_grouped_twice": Shape((
        "SELECT a.k, a.n, b.n AS bn FROM (SELECT s1.k, count(*) AS n FROM {s} AS s1 GROUP BY s1.k) a JOIN "
        "(SELECT s2.y AS k, count(*) AS n FROM {s} AS s2 GROUP BY s2.y) b ON a.k = b.k",)),
    "in_subquery": Shape((
        "SELECT t.k, t.label FROM {t} t WHERE t.k IN (SELECT a.k FROM {s} AS a GROUP BY a.k HAVING sum(a.x) > {c})",)),
    "not_in_subquery": Shape((
        "SELECT t.k, t.label FROM {t} t WHERE t.k NOT IN (SELECT b.k FROM {r} AS b GROUP BY b.k HAVING count(*) > 1)",)),
    "scalar_subquery_having": Shape((
        "SELECT a.k, count(*) AS n FROM {s} AS a GROUP BY a.k HAVING count(*) >= "
        "(SELECT avg(q.c) FROM (SELECT a2.k, count(*) AS c FROM {s} AS a2 GROUP BY a2.k) q)",)),
    "scalar_subquery_select": Shape((
        "SELECT t.label, count(*) AS n, (SELECT sum(b.z) FROM {r} AS b) AS total FROM {t} t GROUP BY t.label",)),
    "topn_above_grouping": Shape((
        "SELECT a.k, sum(a.x) AS sx FROM {s} AS a GROUP BY a.k ORDER BY sx DESC NULLS LAST, a.k NULLS LAST LIMIT 3",)),
    # views and queries on top of continuous views
    "view_over_view": Shape(
        (GROUPED_S,
         "SELECT t.label, sum(v.n) AS n, max(v.sx) AS msx FROM {v0} AS v JOIN {t} t ON t.k = v.k GROUP BY t.label",
         "SELECT t.k, t.label FROM {t} t WHERE t.k IN (SELECT v.k FROM {v0} AS v WHERE v.n > 1)"),
        ("SELECT v.k, v.n FROM {v0} AS v ORDER BY v.n DESC, v.k NULLS LAST LIMIT 2",
         "SELECT count(*) AS groups, sum(v.n) AS n, max(v.my) AS my FROM {v0} AS v WHERE v.sx > {c}",
         "SELECT t.label, v.n FROM {t} t LEFT JOIN {v0} AS v ON v.k = t.k")),
    "views_over_two_streams": Shape(
        (GROUPED_S, GROUPED_R,
         "SELECT x.k, x.n + coalesce(y.m, 0) AS w FROM {v0} AS x LEFT JOIN {v1} AS y ON x.k = y.k"),
        ("SELECT x.k, x.n, y.m FROM {v0} AS x JOIN {v1} AS y ON x.k = y.k",
         "SELECT t.label, sum(y.m) AS m FROM {v1} AS y JOIN {t} t ON t.k = y.k GROUP BY t.label")),
}


def _render(tpl: str, names: dict[str, str]) -> str:
    return tpl.format(**names)


@dataclass
class Query:
    key: str
    sql: str                    # over the streams and views


class Example:
    """One example: its streams, table, views and the oracle for them."""

    def __init__(self, cur, unique_name, shapes: list[str], c: int) -> None:
        self.cur = cur
        self.streams = {s: unique_name("ps" + s) for s in STREAMS}
        self.table = unique_name("pl")
        self.oracle = Oracle(cur, {s: (unique_name("po" + s), cols) for s, (cols, _) in STREAMS.items()})
        self.views: list[str] = []
        self.queries: list[Query] = []
        for s, (cols, types) in STREAMS.items():
            spec = ", ".join(f"{a} {b}" for a, b in zip(cols, types))
            cur.execute(f"CREATE FOREIGN TABLE {self.streams[s]} ({spec}) SERVER stream")
        self.oracle.create({s: types for s, (_, types) in STREAMS.items()})
        cur.execute(f"CREATE TABLE {self.table} (k int PRIMARY KEY, label text)")
        cur.execute(f"INSERT INTO {self.table} SELECT i, 'L' || (i % 4) FROM generate_series(0, 10) i")
        for sh in shapes:
            self._add_shape(sh, SHAPES[sh], c, unique_name)

    def _add_shape(self, name: str, shape: Shape, c: int, unique_name) -> None:
        live = {"c": c, "t": self.table, **self.streams}
        view_tpls: list[str] = []
        for i, tpl in enumerate(shape.views):
            v = unique_name("pv")
            self.cur.execute(f"CREATE VIEW {v} AS " + _render(tpl, live))
            self.views.append(v)
            live[f"v{i}"] = v
            view_tpls.append(tpl)
            self._add_query(f"{name}.v{i}", f"SELECT * FROM {v}", "SELECT * FROM ({q}) AS w", view_tpls, i, c)
        for j, tpl in enumerate(shape.reads):
            self._add_query(f"{name}.q{j}", _render(tpl, live), tpl, view_tpls, None, c)

    def _add_query(self, key, sql, tpl, view_tpls, view_index, c) -> None:
        table = self.table

        def render(rel, tpl=tpl, view_tpls=tuple(view_tpls), view_index=view_index):
            names = {"c": c, "t": table, "s": rel("s"), "r": rel("r")}
            for i, vt in enumerate(view_tpls):
                names[f"v{i}"] = "(" + _render(vt, names) + ")"
            if view_index is not None:
                return tpl.format(q=names[f"v{view_index}"][1:-1])
            return _render(tpl, names)

        # a query (or view) over two views reads them one after the other
        src = view_tpls[view_index] if view_index is not None else tpl
        self.oracle.register(key, render, ordered=len(set(re.findall(r"\{v\d+\}", src))) < 2)
        self.queries.append(Query(key, sql))

    def drop(self) -> None:
        for v in reversed(self.views):
            self.cur.execute(f"DROP VIEW IF EXISTS {v}")
        for s in self.streams.values():
            self.cur.execute(f"DROP FOREIGN TABLE IF EXISTS {s}")
        self.oracle.drop()
        self.cur.execute(f"DROP TABLE IF EXISTS {self.table}")


def _timed_read(cur, q: Query, who: str) -> Read:
    t0 = time.monotonic()
    got = rows(cur, q.sql)
    return Read(q.key, t0, time.monotonic(), got, who)


def _send(cur, stream: str, cols: tuple[str, ...], b: Insert, copy: bool) -> None:
    """One statement: a COPY (applied when it completes) or a multi-row INSERT."""
    if copy:
        with cur.copy(f"COPY {stream} ({', '.join(cols)}) FROM STDIN") as cp:
            for r in b.rows:
                cp.write_row(r)
    else:
        values = ", ".join("(" + ", ".join(["%s"] * len(cols)) + ")" for _ in b.rows)
        cur.execute(f"INSERT INTO {stream} ({', '.join(cols)}) VALUES {values}", [v for r in b.rows for v in r])


def _writer(dsn, ex: Example, plan: list, reads: list[Read], errors: list, seed: int) -> None:
    rng = random.Random(seed)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            cur = conn.cursor()
            for kind, item, copy in plan:
                if kind == "insert":
                    item.start = time.monotonic()
                    _send(cur, ex.streams[item.stream], STREAMS[item.stream][0], item, copy)
                    item.ack = time.monotonic()
                else:
                    reads.append(_timed_read(cur, ex.queries[item % len(ex.queries)], f"writer {seed}"))
                if rng.random() < 0.3:
                    time.sleep(rng.uniform(0, 0.004))
    except Exception as e:      # noqa: BLE001 - reported by the test
        errors.append(e)


def _reader(dsn, ex: Example, done: threading.Event, reads: list[Read], errors: list, seed: int) -> None:
    rng = random.Random(seed)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            cur = conn.cursor()
            for _ in range(READS_PER_READER):
                if done.is_set():
                    break
                reads.append(_timed_read(cur, rng.choice(ex.queries), f"reader {seed}"))
                time.sleep(rng.uniform(0, 0.006))
    except Exception as e:      # noqa: BLE001
        errors.append(e)


k_val = st.integers(0, 13).map(lambda v: None if v == 13 else v)
s_row = st.tuples(k_val, st.one_of(st.none(), st.integers(-50, 50)), st.integers(-5, 5))
r_row = st.tuples(k_val, st.one_of(st.none(), st.integers(-20, 20)))
who = st.integers(0, WRITERS - 1)
step = st.one_of(
    st.tuples(st.just("s"), who, st.lists(s_row, min_size=1, max_size=30), st.booleans()),
    st.tuples(st.just("r"), who, st.lists(r_row, min_size=1, max_size=30), st.booleans()),
    st.tuples(st.just("read"), who, st.integers(0, 99), st.just(False)),
)


#: every shape is in one group, and each example of a group gets a few random shapes besides
GROUPS = 4


@pytest.mark.parametrize("group", range(GROUPS))
@settings(max_examples=18, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(extra=st.lists(st.sampled_from(sorted(SHAPES)), max_size=2, unique=True),
       c=st.integers(-20, 20), steps=st.lists(step, min_size=6, max_size=40),
       big=st.integers(0, 7), seed=st.integers(0, 2**31))
def test_reads_during_inserts_equal_table_oracle(ss_server, unique_name, group, extra, c, steps, big, seed):
    shapes = sorted(SHAPES)[group::GROUPS]
    shapes += [sh for sh in extra if sh not in shapes]
    with psycopg.connect(ss_server.dsn, autocommit=True) as admin:
        cur = admin.cursor()
        ex = Example(cur, unique_name, shapes, c)
        try:
            inserts, plans = _plan(steps, big == 0, seed)
            ex.oracle.load(inserts)
            reads = _run(ss_server.dsn, ex, plans, seed)
            for rd in reads:
                verdict = ex.oracle.check(rd, inserts)
                assert verdict.ok, f"shapes {shapes}, c={c}\n{verdict.message}"
            # quiescent: every batch acknowledged, every query exact
            for q in ex.queries:
                rd = _timed_read(cur, q, "final")
                verdict = ex.oracle.check(rd, inserts)
                assert verdict.ok and verdict.visible == frozenset(b.bid for b in inserts), verdict.message
        finally:
            ex.drop()


def _plan(steps, big: bool, seed: int) -> tuple[list[Insert], list[list]]:
    """Batches (with ids) and each writer's sequence of inserts and reads."""
    inserts: list[Insert] = []
    plans: list[list] = [[] for _ in range(WRITERS)]
    for kind, w, data, copy in steps:
        if kind == "read":
            plans[w].append(("read", data, False))
            continue
        b = Insert(len(inserts), kind, [tuple(r) for r in data], w)
        inserts.append(b)
        plans[w].append(("insert", b, copy))
    if big:
        rng = random.Random(seed)
        data = [(rng.randrange(12), rng.randrange(-50, 50), rng.randrange(-5, 5)) for _ in range(BIG_ROWS)]
        b = Insert(len(inserts), "s", data, rng.randrange(WRITERS))
        inserts.append(b)
        plan = plans[b.writer]
        plan.insert(rng.randrange(len(plan) + 1), ("insert", b, True))
    return inserts, plans


def _run(dsn, ex: Example, plans: list[list], seed: int) -> list[Read]:
    """Writers and readers at once; returns every read with its timing."""
    reads: list[Read] = []
    errors: list = []
    done = threading.Event()
    writers = [threading.Thread(target=_writer, args=(dsn, ex, plans[w], reads, errors, seed + w))
               for w in range(WRITERS)]
    readers = [threading.Thread(target=_reader, args=(dsn, ex, done, reads, errors, seed + 100 + i))
               for i in range(READERS)]
    for th in readers + writers:
        th.start()
    for th in writers:
        th.join()
    done.set()
    for th in readers:
        th.join()
    assert not errors, errors
    return reads
