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


@pytest.mark.parametrize("seed", range(4))
def test_pair_index_matches_tuple_index(seed, monkeypatch):
    """Two integer keys (a timestamp pane and an int) in numpy: the same group
    ids as a dict of pairs, through merges, a checkpoint snapshot (saved as
    tuples) and a NULL key that turns the index into tuples."""
    monkeypatch.setattr(IntKeys, "DENSE_LIMIT", 5000)
    rng = np.random.default_rng(seed)
    idx = GroupIndex([type_oids.TIMESTAMP, type_oids.INT4])
    seen: dict = {}
    for step in range(30):
        n = int(rng.integers(0, 400))
        panes = rng.integers(-3, 3 + step * (1 + seed * 1000), n) * 10_000_000
        ks = rng.integers(-50, 50 if step < 20 else 50_000, n).astype(np.int32)
        nulls = (rng.random(n) < 0.1) if (seed % 2 and step == 25) else None
        gids = idx.assign([Col(panes.view("datetime64[us]"), None, type_oids.TIMESTAMP),
                           Col(ks, nulls, type_oids.INT4)], n)
        flags = nulls if nulls is not None else np.zeros(n, bool)
        for p, k, isnull, g in zip(panes.tolist(), ks.tolist(), flags.tolist(), gids.tolist()):
            assert seen.setdefault((p, None if isnull else k), g) == g
        if step == 0 or nulls is not None:
            assert (idx.pairs is None) == (nulls is not None)     # numpy until a NULL key arrives
    assert len(idx) == len(seen)
    cols = idx.key_columns()
    got = list(zip(cols[0].data.astype("datetime64[us]").view(np.int64).tolist(), cols[1].to_pylist()))
    for key, g in seen.items():
        assert got[g] == key
    again = GroupIndex([type_oids.TIMESTAMP, type_oids.INT4])
    again.load_snapshot(idx.snapshot())                  # tuples on disk, whichever form is live
    assert again.keys == idx.keys


def test_pair_index_merges_into_a_pair_index():
    a, b = GroupIndex([type_oids.INT8, type_oids.INT8]), GroupIndex([type_oids.INT8, type_oids.INT8])
    a.assign([Col(np.array([1, 1, 2]), None, type_oids.INT8), Col(np.array([5, 6, 5]), None, type_oids.INT8)], 3)
    b.assign([Col(np.array([2, 3]), None, type_oids.INT8), Col(np.array([5, 9]), None, type_oids.INT8)], 2)
    assert a.pairs is not None and b.pairs is not None
    assert a.take_groups_of(b).tolist() == [2, 3]
    assert a.pairs is not None and [c.to_pylist() for c in a.key_columns()] == [[1, 1, 2, 3], [5, 6, 5, 9]]
    empty = GroupIndex([type_oids.INT8, type_oids.INT8])
    assert empty.take_groups_of(a).tolist() == [0, 1, 2, 3] and empty.pairs is not None
    assert empty.keys == [(1, 5), (1, 6), (2, 5), (3, 9)]
