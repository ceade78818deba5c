"""splitstream.views.state_bytes counts what a view really holds (issue 14
item 8): count(DISTINCT) over 200,000 values used to report 80 bytes (the
pointer of one object slot).  Every kind of aggregate state is measured --
numpy buffers, and the Python objects behind object arrays, lists and key
maps -- not estimated per group."""
from __future__ import annotations

import sys

from tests.support.engine import open_engine, postgres_session

N = 200_000


def _state_bytes(es, name: str) -> int:
    (row,) = es.execute_sql(f"SELECT state_bytes FROM splitstream.views WHERE name = '{name}'").batch.rows()
    return row[0]


def test_state_bytes_are_measured_for_every_state_kind(tmp_path):
    with open_engine(str(tmp_path / "d")) as eng:
        es = postgres_session(eng)
        es.execute_sql("CREATE FOREIGN TABLE s (k int, x int8, t text, n numeric) SERVER stream")
        es.execute_sql("CREATE VIEW distinct_x AS SELECT count(DISTINCT x) FROM s")
        es.execute_sql("CREATE VIEW texts AS SELECT t, max(t) AS m FROM s GROUP BY t")
        es.execute_sql("CREATE VIEW sums AS SELECT k, sum(n) AS total FROM s GROUP BY k")
        es.execute_sql("CREATE VIEW ints AS SELECT k, count(*) AS c FROM s WHERE k IS NOT NULL GROUP BY k")
        es.execute_sql(f"INSERT INTO s (x) SELECT g FROM generate_series(1, {N}) g")
        es.execute_sql("INSERT INTO s SELECT g % 1000, NULL::int8, 'key number ' || g, g / 7.0 FROM generate_series(1, 20000) g")
        assert es.execute_sql("SELECT * FROM distinct_x").batch.rows() == [(N,)]
        # at least the bytes of 200k int8s, and of their Python objects
        assert _state_bytes(es, "distinct_x") >= N * 8
        assert _state_bytes(es, "distinct_x") >= N * sys.getsizeof(2 ** 40)
        # 20k distinct strings as keys and as max(t): at least their characters, twice over
        assert _state_bytes(es, "texts") >= 2 * 20_000 * len("key number 10000")
        # numeric sums: Decimal objects per group, not 8-byte pointers
        assert _state_bytes(es, "sums") >= 1000 * sys.getsizeof(es.execute_sql("SELECT 1.5").batch.rows()[0][0])
        # a numpy-only (or compiled, native) state stays small: 1000 int64 counts, plus their keys
        assert 1000 * 8 <= _state_bytes(es, "ints") < 1000 * 64
