"""The server half of the sketch pushdown without Spark: states built by
``sketch_states.build`` (what an executor runs) over parts of the rows and
merged with ``splitstream_merge_partial`` equal the view fed the rows."""
from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from splitstream.catalog.storage import records
from splitstream.protocol.errors import PgError

from splitstream.executor.stream.spark import sketch_states
from tests.support.engine import open_engine, postgres_session, result_rows

VIEW = ("SELECT k, hll_agg(x) AS h, freq_agg(x) AS f, bloom_agg(x) AS b, set_agg(x) AS st, topk_agg(x, 4) AS t,"
        " keyed_min(y, x) AS km, first_values(2, y) AS fv, exact_count_distinct(x) AS e, count(*) AS n"
        " FROM {s} GROUP BY k")


def _payload(desc: dict, k: np.ndarray, x: np.ndarray, y: np.ndarray) -> str:
    """What an executor ships for rows (k, x, y): groups by k, states by the view's state classes."""
    keys, inv = np.unique(k, return_inverse=True)
    order = np.argsort(inv, kind="stable")
    counts = np.bincount(inv, minlength=len(keys))
    xs, ys = x[order], y[order]
    pipe = desc["views"][0]["pipelines"][0]
    states = []
    for st in pipe["states"]:
        if st["kind"] == "count":
            states.append({"cnt": counts.tolist()})
            continue
        cols = {"hll_agg": [xs], "freq_agg": [xs], "bloom_agg": [xs], "set_agg": [xs], "exact_count_distinct": [xs],
                "topk_agg": [xs, np.full(len(xs), 4)], "keyed_min": [ys, xs], "first_values": [np.full(len(xs), 2), ys]}
        args = [(c, None) for c in cols[st["func"]]]
        states.append({"state": sketch_states.build(st["func"], st["arg_oids"], counts, args)})
    return json.dumps({"fingerprint": desc["fingerprint"], "view_oid": desc["views"][0]["oid"], "pipeline": 0,
                       "groups": len(keys), "keys": [keys.tolist()], "states": states, "rows": counts.tolist()})


def test_shipped_sketch_states_merge_to_the_view_fed_rows(tmp_path):
    rng = np.random.default_rng(4)
    k, x = rng.integers(0, 5, 6000), rng.integers(0, 9, 6000)
    y = rng.permutation(6000)
    d = str(tmp_path / "d")
    with open_engine(d) as eng:
        es = postgres_session(eng)
        for s in ("rows_s", "push_s"):
            es.execute_sql(f"CREATE FOREIGN TABLE {s} (k int, x int, y int) SERVER stream")
            es.execute_sql(f"CREATE VIEW {s}_v AS " + VIEW.format(s=s))
        values = ", ".join(f"({a}, {b}, {c})" for a, b, c in zip(k.tolist(), x.tolist(), y.tolist()))
        es.execute_sql(f"INSERT INTO rows_s VALUES {values}")
        (desc_text,), = result_rows(es, "SELECT splitstream_pipeline('push_s')")
        desc = json.loads(desc_text)
        assert desc["pushable"], desc["reason"]
        for part in np.array_split(np.arange(6000), 3):
            payload = _payload(desc, k[part], x[part], y[part])
            (res,), = result_rows(es, f"SELECT splitstream_merge_partial('push_s', NULL, '{payload}')")
            assert res.startswith("merged")
        want = result_rows(es, "SELECT * FROM rows_s_v ORDER BY k")
        assert result_rows(es, "SELECT * FROM push_s_v ORDER BY k") == want
    with open_engine(d) as eng:                     # replayed from the write-ahead log
        es = postgres_session(eng)
        assert result_rows(es, "SELECT * FROM push_s_v ORDER BY k") == want


def test_forged_sketch_states_are_refused(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        s = "skf"
        es.execute_sql(f"CREATE FOREIGN TABLE {s} (k int, x int) SERVER stream")
        es.execute_sql(f"CREATE VIEW {s}_v AS SELECT k, hll_agg(x) AS h, set_agg(x) AS st FROM {s} GROUP BY k")
        (text,), = result_rows(es, f"SELECT splitstream_pipeline('{s}')")
        desc = json.loads(text)
        v = desc["views"][0]

        def state(fields: dict) -> str:
            return base64.b64encode(records.dumps(fields)).decode()

        def built(func: str) -> dict:          # what an executor ships for one group holding x = 42
            return records.loads(base64.b64decode(sketch_states.build(func, [23], np.array([1]), [(np.array([42]), None)])))

        hll_fields, set_fields = built("hll_agg"), built("set_agg")
        good = {"fingerprint": desc["fingerprint"], "view_oid": v["oid"], "pipeline": 0, "groups": 1, "keys": [[1]],
                "states": [{"state": state(hll_fields)}, {"state": state(set_fields)}], "rows": [1]}

        def merge(payload, key=None):
            k = "NULL" if key is None else f"'{key}'"
            (res,), = result_rows(es, f"SELECT splitstream_merge_partial('{s}', {k}, '{json.dumps(payload)}')")
            return res

        hot = hll_fields["regs"].copy()
        hot[0, 0] = 60                                             # no 64-bit hash has rank 60
        forged = [
            [{"state": "not base64!"}, {"state": state(set_fields)}],
            [{"state": state(dict(hll_fields, regs=hot))}, {"state": state(set_fields)}],
            [{"state": state({"size": 1})}, {"state": state(set_fields)}],
            [{"state": state(hll_fields)}, {"state": state(dict(set_fields, e_g=np.array([3])))}],       # no group 3
            [{"state": state(hll_fields)}, {"state": state(dict(set_fields, e_v=np.array(["x"], object)))}],
        ]
        for states in forged:
            with pytest.raises(PgError) as ei:
                merge(dict(good, states=states))
            assert ei.value.sqlstate == "22023", ei.value
        assert merge(good, "sk1").startswith("merged")
        assert result_rows(es, f"SELECT k, hll_cardinality(h), st FROM {s}_v") == [(1, 1, [42])]
        assert merge(dict(good, keys=[[2]]), "sk2").startswith("merged")
        es.execute_sql(f"INSERT INTO {s} VALUES (3, 42)")         # the same value fed as a row: the same states
        got = result_rows(es, f"SELECT k, h, st FROM {s}_v ORDER BY k")
        assert [r[0] for r in got] == [1, 2, 3] and len({r[1] for r in got}) == 1 and all(r[2] == [42] for r in got)
