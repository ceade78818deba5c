"""PipelineDB's output streams and transforms (``stream/output_streams.py``):
``output_of('v')`` carries old/new/delta rows of every group a batch
changed, a transform's output carries its rows; both are derived inside the
input batch's delivery, atomically with it, and recomputed (never counted
twice) by WAL replay after kill -9."""
from __future__ import annotations

import random
from collections import defaultdict

import psycopg
import pytest

from tests.support.engine import open_engine, plain_session, result_rows

CHANGES = ("SELECT (new).k AS k, count(*) AS changes, "
           "sum(CASE WHEN (old).k IS NULL THEN 1 ELSE 0 END) AS created, "
           "sum(coalesce((new).total, 0) - coalesce((old).total, 0)) AS moved, "
           "sum((delta).total) AS delta_total, sum((delta).n) AS delta_n, max((delta).mx) AS delta_max "
           "FROM output_of('{v}') GROUP BY (new).k")


def _objects(conn, s: str, names: dict) -> None:
    conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
    conn.execute(f"CREATE VIEW {names['v']} AS SELECT k, sum(x) AS total, count(*) AS n, max(x) AS mx "
                 f"FROM {s} GROUP BY k")
    conn.execute(f"CREATE VIEW {names['ch']} AS " + CHANGES.format(v=names["v"]))
    conn.execute(f"CREATE VIEW {names['t']} WITH (action = transform) AS SELECT k, x * 10 AS y FROM {s} WHERE x % 2 = 1")
    conn.execute(f"CREATE VIEW {names['tv']} AS SELECT k, sum(y) AS sy, count(*) AS c FROM output_of('{names['t']}') GROUP BY k")


class Oracle:
    """What the views must hold after the batches applied, computed in Python."""

    def __init__(self) -> None:
        self.batches: list[list[tuple[int, int]]] = []

    def expect(self) -> tuple[list, list]:
        total: dict = defaultdict(int)
        ch: dict = {}
        tv: dict = defaultdict(lambda: [0, 0])
        for rows in self.batches:
            per = defaultdict(lambda: [0, 0, None])
            for k, x in rows:
                per[k][0] += x
                per[k][1] += 1
                per[k][2] = x if per[k][2] is None else max(per[k][2], x)
                if x % 2 == 1:
                    tv[k][0] += x * 10
                    tv[k][1] += 1
            for k, (dt, dn, dmax) in per.items():
                c = ch.setdefault(k, [0, 0, 0, 0, 0, None])
                c[0] += 1
                c[1] += 1 if k not in total else 0
                c[2] += dt
                c[3] += dt
                c[4] += dn
                c[5] = dmax if c[5] is None else max(c[5], dmax)
                total[k] += dt
        return ([(k, *v) for k, v in sorted(ch.items())], [(k, *v) for k, v in sorted(tv.items())])


def _read(conn, names) -> tuple[list, list]:
    ch = [tuple(int(x) for x in r) for r in conn.execute(f"SELECT * FROM {names['ch']} ORDER BY k").fetchall()]
    tv = [tuple(int(x) for x in r) for r in conn.execute(f"SELECT * FROM {names['tv']} ORDER BY k").fetchall()]
    return ch, tv


def _names(unique_name) -> tuple[str, dict]:
    return unique_name("s"), {n: unique_name(n) for n in ("v", "ch", "t", "tv")}


def _insert(conn, s: str, rows, copy: bool = False) -> None:
    if copy:
        with conn.cursor().copy(f"COPY {s} (k, x) FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)
    else:
        conn.execute(f"INSERT INTO {s} VALUES " + ", ".join(f"({k}, {x})" for k, x in rows))


def test_changes_and_transform_match_oracle(ss_server, unique_name):
    s, names = _names(unique_name)
    rng = random.Random(5)
    oracle = Oracle()
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        _objects(conn, s, names)
        for i in range(30):
            rows = [(rng.randrange(6), rng.randrange(1, 50)) for _ in range(rng.randrange(1, 12))]
            _insert(conn, s, rows, copy=i % 3 == 0)
            oracle.batches.append(rows)
        assert _read(conn, names) == oracle.expect()
        # the derived views are ordinary continuous views: a changes-of-changes chain works too
        conn.execute(f"CREATE VIEW {names['ch']}_2 AS SELECT count(*) AS c FROM output_of('{names['ch']}')")
        conn.execute(f"INSERT INTO {s} VALUES (100, 1), (101, 2)")
        assert conn.execute(f"SELECT c FROM {names['ch']}_2").fetchone() == (2,)


def test_old_and_new_rows(ss_server, unique_name):
    s, names = _names(unique_name)
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        _objects(conn, s, names)
        log = unique_name("log")
        conn.execute(f"CREATE VIEW {log} AS SELECT (old).total AS o, (new).total AS n, (delta).total AS d, count(*) AS c "
                     f"FROM output_of('{names['v']}') GROUP BY 1, 2, 3")
        conn.execute(f"INSERT INTO {s} VALUES (1, 4)")
        conn.execute(f"INSERT INTO {s} VALUES (1, 6), (1, 1)")
        conn.execute(f"INSERT INTO {s} VALUES (2, 9)")
        got = conn.execute(f"SELECT o, n, d, c FROM {log} ORDER BY n").fetchall()
        assert got == [(None, 4, 4, 1), (None, 9, 9, 1), (4, 11, 7, 1)]


def test_failing_transform_row_fails_the_statement_everywhere(ss_server, unique_name):
    s, names = _names(unique_name)
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        _objects(conn, s, names)
        t2, v2 = unique_name("t2"), unique_name("v2")
        conn.execute(f"CREATE VIEW {t2} WITH (action = transform) AS SELECT k, 100 / x AS q FROM {s}")
        conn.execute(f"CREATE VIEW {v2} AS SELECT sum(q) AS sq FROM output_of('{t2}')")
        conn.execute(f"INSERT INTO {s} VALUES (1, 5)")
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute(f"INSERT INTO {s} VALUES (1, 7), (2, 0)")
        assert conn.execute(f"SELECT total FROM {names['v']}").fetchall() == [(5,)]
        assert conn.execute(f"SELECT sq FROM {v2}").fetchone() == (20,)
        assert _read(conn, names)[1] == [(1, 50, 1)]


@pytest.mark.parametrize("sql, sqlstate", [
    ("CREATE VIEW {x} WITH (action = transform, outputfunc = f) AS SELECT k FROM {s}", "0A000"),
    ("CREATE VIEW {x} WITH (action = transform) AS SELECT k, count(*) FROM {s} GROUP BY k", "0A000"),
    ("CREATE VIEW {x} WITH (outputfunc = f) AS SELECT k, count(*) FROM {s} GROUP BY k", "22023"),
    ("CREATE VIEW {x} WITH (action = frobnicate) AS SELECT k, count(*) FROM {s} GROUP BY k", "0A000"),
    ("SELECT * FROM {t}", "0A000"),
    ("SELECT * FROM output_of('{v}')", "0A000"),
    ("CREATE VIEW {x} AS SELECT count(*) FROM output_of('{tab}')", "0A000"),
    ("CREATE VIEW {x} AS SELECT count(*) FROM output_of('no_such_view')", "42P01"),
    ("CREATE VIEW {x} AS SELECT count(*) FROM output_of({s})", "0A000"),
    ("DROP VIEW {v}", "2BP01"),
])
def test_refusals(ss_server, unique_name, sql, sqlstate):
    s, names = _names(unique_name)
    tab = unique_name("tab")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        _objects(conn, s, names)
        conn.execute(f"CREATE TABLE {tab} (k int)")
        with pytest.raises(psycopg.Error) as err:
            conn.execute(sql.format(x=unique_name("x"), s=s, tab=tab, **names))
        assert err.value.sqlstate == sqlstate
        assert err.value.diag.message_hint or sqlstate in ("42P01", "22023", "2BP01")


def test_derived_rows_survive_kill9_once(ss_server_factory):
    """Replay recomputes output streams from the logged input: after kill -9
    (with and without a checkpoint between), derived views equal the oracle
    over the acknowledged batches: nothing lost, nothing counted twice."""
    srv = ss_server_factory()
    s, names = "os_s", {n: f"os_{n}" for n in ("v", "ch", "t", "tv")}
    rng = random.Random(9)
    oracle = Oracle()
    with psycopg.connect(srv.dsn, autocommit=True) as conn:
        _objects(conn, s, names)
    for round_ in range(3):
        with psycopg.connect(srv.dsn, autocommit=True) as conn:
            for i in range(10):
                rows = [(rng.randrange(5), rng.randrange(1, 30)) for _ in range(rng.randrange(1, 8))]
                _insert(conn, s, rows, copy=i % 4 == 0)
                oracle.batches.append(rows)
                if round_ == 1 and i == 5:
                    conn.execute("CHECKPOINT")
            assert _read(conn, names) == oracle.expect()
        srv.kill()
        srv.start()
        with psycopg.connect(srv.dsn, autocommit=True) as conn:
            assert _read(conn, names) == oracle.expect(), f"after kill -9 in round {round_}"


def test_spark_partial_merge_reaches_output_readers(ss_server, unique_name):
    """A Spark executor's merged partial state changes the view like a batch:
    its output readers get the changed groups (deltas NULL: the rows stayed in Spark)."""
    import json
    from splitstream.connectors.spark import describe

    s, v, ch = unique_name("ev"), unique_name("v"), unique_name("ch")
    with psycopg.connect(ss_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
        conn.execute(f"CREATE VIEW {v} AS SELECT k, count(*) AS n, sum(x) AS sx FROM {s} GROUP BY k")
        conn.execute(f"CREATE VIEW {ch} AS SELECT (new).k AS k, sum((new).sx) AS sx, count(*) AS c, "
                     f"count((old).k) AS had_old, count((delta).sx) AS deltas FROM output_of('{v}') GROUP BY (new).k")
        conn.execute(f"INSERT INTO {s} VALUES (1, 10)")
        desc = describe(ss_server.url, s)
        counts, sums = [3, 1], [30, 5]
        payload = dict(fingerprint=desc["fingerprint"], view_oid=desc["views"][0]["oid"], pipeline=0, groups=2,
                       keys=[[1, 2]], rows=counts, states=[{"cnt": counts}, {"sum": sums, "cnt": counts}])
        conn.execute("SELECT splitstream_merge_partial(%s, %s, %s)", (s, unique_name("key"), json.dumps(payload)))
        assert conn.execute(f"SELECT k, n, sx FROM {v} ORDER BY k").fetchall() == [(1, 4, 40), (2, 1, 5)]
        got = conn.execute(f"SELECT k, sx, c, had_old, deltas FROM {ch} ORDER BY k").fetchall()
        assert [tuple(int(x) for x in r) for r in got] == [(1, 50, 2, 1, 1), (2, 5, 1, 0, 0)]


def test_output_of_reads_the_view_name_as_postgresql_reads_a_name(tmp_path):
    """output_of('ByUrl') finds the view created as ByUrl (folded to byurl),
    as PipelineDB resolves its argument; a quoted name keeps its case."""
    with open_engine(str(tmp_path)) as eng:
        s = plain_session(eng)
        s.execute_sql("CREATE FOREIGN TABLE PageViews (url text, n int) SERVER stream")
        s.execute_sql("CREATE VIEW ByUrl AS SELECT url, count(*) FROM PageViews GROUP BY url")
        s.execute_sql("CREATE VIEW Changes AS SELECT (new).url, (new).count FROM output_of('ByUrl')")
        s.execute_sql("INSERT INTO PageViews VALUES ('/a', 1)")
        assert result_rows(s, "SELECT url, count FROM Changes") == [("/a", 1)]
        with pytest.raises(Exception, match='"ByUrl"'):
            s.execute_sql("""CREATE VIEW c2 AS SELECT (new).url FROM output_of('"ByUrl"')""")
