"""GroupIndex: integer keys indexed in numpy give the same groups as key tuples.

The numpy index switches from a direct-indexed array to sorted keys when
the range grows too wide, and converts to tuples when a NULL key arrives;
every switch must keep each key's group id."""
from __future__ import annotations

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Col
from splitstream.executor.execution.aggregates import GroupIndex, IntKeys
from splitstream.protocol import oids as type_oids


def _check(idx: GroupIndex, seen: dict) -> None:
    assert len(idx) == len(seen)
    keys = idx.key_columns()[0].to_pylist()
    for k, g in seen.items():
        assert keys[g] == k


@pytest.mark.parametrize("seed", range(6))
def test_int_index_matches_tuple_index(seed, monkeypatch):
    monkeypatch.setattr(IntKeys, "DENSE_LIMIT", 5000)     # reach the sorted variant quickly
    rng = np.random.default_rng(seed)
    idx = GroupIndex([type_oids.INT8])
    seen: dict = {}
    for step in range(40):
        width = 100 if step < 10 else 100_000 if step < 30 else 10_000_000
        d = rng.integers(-width, width, size=int(rng.integers(0, 300)))
        nulls = None
        if seed % 2 and step == 35:
            nulls = rng.random(len(d)) < 0.2       # a NULL key: the index turns to tuples
        gids = idx.assign([Col(d, nulls, type_oids.INT8)], len(d))
        for v, isnull, g in zip(d.tolist(), (nulls if nulls is not None else np.zeros(len(d), bool)).tolist(),
                                gids.tolist()):
            key = None if isnull else v
            assert seen.setdefault(key, g) == g
        if nulls is None or not nulls.any():
            _check(idx, {k: g for k, g in seen.items()})
    assert (idx.ints is None) == bool(seed % 2)


def test_merge_and_adopt_keep_order():
    a, b = GroupIndex([type_oids.INT4]), GroupIndex([type_oids.INT4])
    assert a.adopt_array(np.array([7, 3, 9])).tolist() == [0, 1, 2]
    assert a.key_columns()[0].to_pylist() == [7, 3, 9]
    b.assign([Col(np.array([9, 100, 3], np.int32), None, type_oids.INT4)], 3)
    gmap = a.take_groups_of(b)
    assert [a.key_columns()[0].to_pylist()[g] for g in gmap.tolist()] == b.key_columns()[0].to_pylist()
    assert a.keys == [(7,), (3,), (9,), (100,)]      # tuples on demand, same ids
    assert a.map[(100,)] == 3


def test_null_key_converts_to_the_tuple_values():
    idx = GroupIndex([type_oids.INT2])
    idx.assign([Col(np.array([5, 6], np.int16), None, type_oids.INT2)], 2)
    assert idx.ints is not None
    # a NULL key arrives: the tuples must be the Python ints the tuple path makes
    g = idx.assign([Col(np.array([6, 0], np.int16), np.array([False, True]), type_oids.INT2)], 2)
    assert idx.ints is None and idx.keys == [(5,), (6,), (None,)] and g.tolist() == [1, 2]
    assert idx.key_columns()[0].to_pylist() == [5, 6, None]


def test_sorted_keys_turn_dense_once_they_fill_their_range(monkeypatch):
    monkeypatch.setattr(IntKeys, "DENSE_LIMIT", 5000)
    idx = GroupIndex([type_oids.INT8])
    first = idx.assign([Col(np.array([0, 100_000]), None, type_oids.INT8)], 2)
    assert idx.ints.dense is None                      # two keys over a wide range: sorted
    fill = np.arange(1, 20_001)
    ids = idx.assign([Col(fill, None, type_oids.INT8)], len(fill))
    assert idx.ints.dense is not None                  # 20k keys over 100k: direct-indexed
    again = idx.assign([Col(np.array([100_000, 0, 7]), None, type_oids.INT8)], 3)
    assert again.tolist() == [first[1], first[0], ids[6]]
    assert len(idx) == 20_002
