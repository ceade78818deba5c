"""PipelineDB's sketch aggregates (and reservoir_sample) as window
aggregates: each row's frame gets its own state. There is no PostgreSQL
oracle for sketches, so every frame is checked against what the same
window collects with array_agg, and against the grouped query."""
from __future__ import annotations

import pytest

from tests.support.engine import result_rows, session_after

WINDOWS = [
    "PARTITION BY g",
    "PARTITION BY g ORDER BY x",
    "ORDER BY x ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING",
    "PARTITION BY g ORDER BY x ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING EXCLUDE CURRENT ROW",
    "ORDER BY x RANGE BETWEEN 3 PRECEDING AND CURRENT ROW",
    "ORDER BY g GROUPS BETWEEN CURRENT ROW AND 1 FOLLOWING",
]


@pytest.fixture
def session(tmp_path):
    with session_after(str(tmp_path / "data"), "CREATE TABLE w (id int, g int, x int)",
                       "INSERT INTO w SELECT i, i % 3, (i * 7) % 11 FROM generate_series(1, 30) i",
                       "INSERT INTO w VALUES (31, 0, NULL), (32, 1, 4)") as es:
        yield es


@pytest.mark.parametrize("window", WINDOWS)
def test_exact_sketches_match_the_frame(session, window):
    rows = result_rows(session, f"""SELECT id, array_agg(x) OVER ({window}),
        exact_count_distinct(x) OVER ({window}), hll_cardinality(hll_agg(x) OVER ({window})),
        set_agg(x) OVER ({window}), bloom_contains(bloom_agg(x) OVER ({window}), 4)
        FROM w ORDER BY id""")
    assert len(rows) == 32
    # a frame of NULLs only: what the grouped aggregates give over no values
    empty = result_rows(session, """SELECT exact_count_distinct(x), hll_cardinality(hll_agg(x)), set_agg(x),
        bloom_contains(bloom_agg(x), 4) FROM w WHERE x IS NULL""")[0]
    for _id, frame, exact, hll, members, has4 in rows:
        values = {v for v in (frame or []) if v is not None}
        if not values:
            assert (exact, hll, members, has4) == empty
            continue
        assert exact == len(values)
        assert hll == len(values)        # a few distinct values: HyperLogLog's sparse form is exact
        assert sorted(members or []) == sorted(values)
        assert has4 == (4 in values)     # a Bloom filter has no false negatives; none seen here either


def test_window_over_partition_equals_grouped(session):
    windowed = result_rows(session, """SELECT DISTINCT g, hll_cardinality(hll_agg(x) OVER (PARTITION BY g)),
        topk_values(topk_agg(x, 2) OVER (PARTITION BY g)) FROM w ORDER BY g""")
    grouped = result_rows(session, """SELECT g, hll_cardinality(hll_agg(x)), topk_values(topk_agg(x, 2))
        FROM w GROUP BY g ORDER BY g""")
    assert windowed == grouped


def test_reservoir_sample_draws_from_the_frame(session):
    rows = result_rows(session, """SELECT array_agg(x) OVER f, reservoir_sample(x, 2) OVER f
        FROM w WINDOW f AS (ORDER BY id ROWS 3 PRECEDING) ORDER BY id""")
    for frame, sample in rows:
        values = [v for v in frame if v is not None]
        assert len(sample) == min(2, len(values))
        assert all(v in values for v in sample)
