"""Top-k, Bloom filters, sets, buckets, keyed min/max and first values
(issue 17 scope 1): each against its exact answer, and merged partial
states against a single pass.  Works on the states directly, one batch per
call, as a grouping pipeline does."""
from __future__ import annotations

import math

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Col
from splitstream.executor.execution import proc_catalog  # noqa: F401  (registers the sketches)
from splitstream.executor.execution.aggregates import AggSpec
from splitstream.executor.execution.sketches import bloom, sets, topk
from splitstream.protocol import oids

SEEDS = (1, 2, 3)


def _state(func: str, arg_oids: list[int], nargs: int | None = None):
    return AggSpec(func, [None] * (nargs or len(arg_oids)), arg_oids).make_state()


def _feed(st, gids: np.ndarray, cols: list[Col]) -> None:
    ng = int(gids.max()) + 1 if len(gids) else 1
    st.ensure(ng)
    st.update(gids.astype(np.int64), ng, cols, None)


def _const(v, n: int, oid: int = oids.INT4) -> Col:
    return Col.const(v, oid, n)


def _merged(func: str, arg_oids: list[int], make_cols, gids: np.ndarray, parts: int, ng: int, order=None):
    """A state built as ``parts`` partial states (each fed its slice), merged
    into an empty one in ``order``."""
    whole = _state(func, arg_oids)
    whole.ensure(ng)
    bounds = np.linspace(0, len(gids), parts + 1).astype(int)
    pieces = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        st = _state(func, arg_oids)
        _feed(st, gids[a:b], make_cols(a, b))
        st.ensure(ng)
        pieces.append(st)
    for i in (order or range(parts)):
        whole.merge(pieces[i], np.arange(ng, dtype=np.int64))
    return whole


def _single(func: str, arg_oids: list[int], make_cols, gids: np.ndarray, ng: int):
    st = _state(func, arg_oids)
    _feed(st, gids, make_cols(0, len(gids)))
    st.ensure(ng)
    return st


# ------------------------------------------------------------------ top-k


@pytest.mark.parametrize("seed", SEEDS)
def test_topk_frequencies_within_the_mergeable_bound_and_heavy_hitters_found(seed):
    rng = np.random.default_rng(seed)
    k, ng = 10, 4
    vals = rng.zipf(1.3, 200_000) % 5000
    gids = rng.integers(0, ng, len(vals))
    cols = lambda a, b: [Col(vals[a:b], None, oids.INT8), _const(k, b - a)]    # noqa: E731
    for st in (_single("topk_agg", [oids.INT8, oids.INT4], cols, gids, ng),
               _merged("topk_agg", [oids.INT8, oids.INT4], cols, gids, 7, ng, order=[3, 0, 6, 1, 5, 2, 4])):
        for g, sketch in enumerate(st.final(ng).to_pylist()):
            t = topk.TopK(sketch)
            exact = np.bincount(vals[gids == g])
            n = int(exact.sum())
            assert t.total == n
            slack = n / (topk.capacity(k) + 1)
            assert 0 <= t.err <= slack
            got = dict(zip((int(x) for x in t.texts), (t.counts + t.err).tolist()))
            for v, f in got.items():                     # never under, over by at most N/(3k+1)
                assert exact[v] <= f <= exact[v] + slack, (v, f, exact[v])
            for v in np.flatnonzero(exact > slack):      # every heavy hitter is kept
                assert int(v) in got
            true_top = set(np.argsort(-exact, kind="stable")[:k].tolist())
            reported = {int(x) for x in t.top()[0]}
            clear = {v for v in true_top if exact[v] > np.sort(exact)[-k - 1] + 2 * slack}
            assert clear <= reported                     # recall of the clear top k


def test_topk_merged_states_equal_one_pass_when_counts_are_exact():
    rng = np.random.default_rng(7)
    k, ng = 5, 3
    words = np.array([f"w{i}" for i in rng.integers(0, 15, 30_000)], dtype=object)
    weights = rng.integers(1, 20, len(words))
    gids = rng.integers(0, ng, len(words))
    cols = lambda a, b: [Col(words[a:b], None, oids.TEXT), _const(k, b - a),    # noqa: E731
                         Col(weights[a:b], None, oids.INT8)]
    args = [oids.TEXT, oids.INT4, oids.INT8]
    one = _single("topk_agg", args, cols, gids, ng).final(ng).to_pylist()
    assert _merged("topk_agg", args, cols, gids, 5, ng, order=[4, 2, 0, 1, 3]).final(ng).to_pylist() == one
    for g, sketch in enumerate(one):                    # at most 3k distinct values: counted exactly
        t = topk.TopK(sketch)
        exact: dict[str, int] = {}
        for w, x in zip(words[gids == g].tolist(), weights[gids == g].tolist()):
            exact[w] = exact.get(w, 0) + x
        assert dict(zip(t.texts, t.counts.tolist())) == exact


# ------------------------------------------------------------------ Bloom filters


@pytest.mark.parametrize("seed", SEEDS)
def test_bloom_has_no_false_negatives_and_its_false_positive_rate_meets_the_bound(seed):
    rng = np.random.default_rng(seed)
    members = rng.choice(10 ** 9, 32768, replace=False)
    st = _state("bloom_agg", [oids.INT8])
    _feed(st, np.zeros(len(members), np.int64), [Col(members, None, oids.INT8)])
    (f,) = st.final(1).to_pylist()
    inside = bloom.contains_col(Col.const(f, oids.BYTEA, len(members)), Col(members, None, oids.INT8))
    assert inside.data.all()
    others = np.setdiff1d(rng.integers(10 ** 9, 2 * 10 ** 9, 200_000), members)
    fp = bloom.contains_col(Col.const(f, oids.BYTEA, len(others)), Col(others, None, oids.INT8)).data.mean()
    m, k = bloom.shape(bloom.DEFAULT_P, bloom.DEFAULT_N)
    bound = bloom.expected_fpr(m, k, len(members))
    assert bound <= bloom.DEFAULT_P * 1.05
    assert fp <= bound + 4 * math.sqrt(bound / len(others)), (fp, bound)
    est = bloom.cardinality(f)
    assert abs(est - len(members)) <= 0.02 * len(members)


def test_bloom_merged_states_union_and_intersection_are_bit_exact():
    rng = np.random.default_rng(3)
    vals = rng.integers(0, 10 ** 6, 50_000)
    gids = rng.integers(0, 5, len(vals))
    cols = lambda a, b: [Col(vals[a:b], None, oids.INT8)]      # noqa: E731
    one = _single("bloom_agg", [oids.INT8], cols, gids, 5).final(5).to_pylist()
    assert _merged("bloom_agg", [oids.INT8], cols, gids, 6, 5, order=[5, 3, 1, 0, 2, 4]).final(5).to_pylist() == one
    whole = _single("bloom_agg", [oids.INT8], cols, np.zeros(len(vals), np.int64), 1).final(1).to_pylist()[0]
    union = _state("bloom_union_agg", [oids.BYTEA])
    _feed(union, np.zeros(5, np.int64), [Col(np.array(one, dtype=object), None, oids.BYTEA)])
    assert union.final(1).to_pylist() == [whole]
    assert bloom.combine(one, "union") == whole
    inter = bloom.combine(one, "intersection")
    st = _state("bloom_intersection_agg", [oids.BYTEA])
    _feed(st, np.zeros(5, np.int64), [Col(np.array(one, dtype=object), None, oids.BYTEA)])
    assert st.final(1).to_pylist() == [inter]
    common = np.intersect1d(vals[gids == 0], vals[gids == 1])
    for g in range(2, 5):
        common = np.intersect1d(common, vals[gids == g])
    assert bloom.contains_col(Col.const(inter, oids.BYTEA, len(common)), Col(common, None, oids.INT8)).data.all()


# ------------------------------------------------------------------ exact ones


def _groups_of(gids: np.ndarray, vals: np.ndarray, ng: int) -> list[list]:
    return [vals[gids == g].tolist() for g in range(ng)]


@pytest.mark.parametrize("oid,make", [(oids.INT8, lambda r, n: r.integers(-50, 50, n)),
                                      (oids.TEXT, lambda r, n: np.array([f"t{v}" for v in r.integers(0, 300, n)], object)),
                                      (oids.FLOAT8, lambda r, n: np.round(r.normal(size=n), 1))])
def test_sets_and_exact_count_distinct_are_exact_and_merge(oid, make):
    rng = np.random.default_rng(11)
    vals = make(rng, 40_000)
    gids = rng.integers(0, 6, len(vals))
    cols = lambda a, b: [Col(vals[a:b], None, oid)]      # noqa: E731
    for func in ("set_agg", "exact_count_distinct"):
        one = _single(func, [oid], cols, gids, 6).final(6).to_pylist()
        assert _merged(func, [oid], cols, gids, 4, 6, order=[2, 0, 3, 1]).final(6).to_pylist() == one
        exact = [sorted(set(g)) for g in _groups_of(gids, vals, 6)]
        assert one == (exact if func == "set_agg" else [len(e) for e in exact])


def test_keyed_min_max_and_first_values_are_exact_and_merge():
    rng = np.random.default_rng(5)
    keys = rng.permutation(60_000).astype(np.int64)             # distinct keys: one answer
    vals = np.array([f"v{k}" for k in keys], dtype=object)
    nulls = rng.random(len(vals)) < 0.1
    gids = rng.integers(0, 8, len(keys))
    for func in ("keyed_min", "keyed_max"):
        cols = lambda a, b: [Col(keys[a:b], None, oids.INT8), Col(vals[a:b], nulls[a:b], oids.TEXT)]    # noqa: E731
        one = _single(func, [oids.INT8, oids.TEXT], cols, gids, 8).final(8).to_pylist()
        assert _merged(func, [oids.INT8, oids.TEXT], cols, gids, 5, 8, order=[1, 4, 0, 3, 2]).final(8).to_pylist() == one
        for g in range(8):
            pick = (np.argmin if func == "keyed_min" else np.argmax)(np.where(gids == g, keys, keys.max() + 1
                                                                           if func == "keyed_min" else -1))
            assert one[g] == (None if nulls[pick] else vals[pick])
    small = rng.integers(0, 1000, len(keys))
    cols = lambda a, b: [_const(4, b - a), Col(small[a:b], nulls[a:b], oids.INT8)]     # noqa: E731
    one = _single("first_values", [oids.INT4, oids.INT8], cols, gids, 8).final(8).to_pylist()
    assert _merged("first_values", [oids.INT4, oids.INT8], cols, gids, 6, 8).final(8).to_pylist() == one
    for g in range(8):
        assert one[g] == sorted(small[(gids == g) & ~nulls].tolist())[:4]


def test_bucket_agg_keeps_each_value_in_its_latest_bucket():
    rng = np.random.default_rng(9)
    n = 30_000
    vals = rng.integers(0, 2000, n)
    buckets = rng.integers(0, 7, n).astype(np.int16)
    ts = (np.arange(n, dtype=np.int64) * 1000 + 1_700_000_000_000_000).astype("datetime64[us]")
    gids = rng.integers(0, 3, n)
    cols = lambda a, b: [Col(vals[a:b], None, oids.INT8), Col(buckets[a:b], None, oids.INT2),    # noqa: E731
                         Col(ts[a:b], None, oids.TIMESTAMPTZ)]
    args = [oids.INT8, oids.INT2, oids.TIMESTAMPTZ]
    one = _single("bucket_agg", args, cols, gids, 3).final(3).to_pylist()
    assert _merged("bucket_agg", args, cols, gids, 5, 3, order=[4, 3, 2, 1, 0]).final(3).to_pylist() == one
    no_ts = lambda a, b: cols(a, b)[:2]                  # noqa: E731  arrival order: merged in arrival order
    assert _merged("bucket_agg", args[:2], no_ts, gids, 5, 3).final(3).to_pylist() == one
    for g in range(3):
        last: dict[int, int] = {}
        for v, b in zip(vals[gids == g].tolist(), buckets[gids == g].tolist()):
            last[v] = b
        ids, counts = sets.buckets_of(one[g])
        exact = np.bincount(np.array(list(last.values())), minlength=7)
        assert ids.tolist() == np.flatnonzero(exact).tolist()
        assert counts.tolist() == exact[exact > 0].tolist()


def test_entry_states_cut_and_take_groups_as_retention_and_panes_do():
    rng = np.random.default_rng(2)
    vals = rng.integers(0, 40, 5000)
    gids = rng.integers(0, 10, len(vals))
    st = _single("set_agg", [oids.INT8], lambda a, b: [Col(vals[a:b], None, oids.INT8)], gids, 10)
    full = st.final(10).to_pylist()
    part = st.take_groups(np.array([7, 2, 5]))
    assert part.final(3).to_pylist() == [full[7], full[2], full[5]]
    st.truncate_groups(4)
    assert st.final(4).to_pylist() == full[:4]


@pytest.mark.parametrize("func,oid", [("hll_agg", oids.INT8), ("freq_agg", oids.INT8), ("dist_agg", oids.FLOAT8),
                                      ("topk_agg", oids.INT8), ("bloom_agg", oids.INT8)])
def test_panes_take_any_groups_of_any_sketch(func, oid):
    """A sliding window's read takes some groups of a pane's table (not a
    prefix): registers, centroids and counters are rows per group too."""
    from splitstream.executor.stream.panes import taken_state

    rng = np.random.default_rng(8)
    vals = rng.integers(0, 1000, 3000).astype(np.float64 if oid == oids.FLOAT8 else np.int64)
    gids = rng.integers(0, 6, len(vals))
    cols = lambda a, b: [Col(vals[a:b], None, oid)] + ([_const(3, b - a)] if func == "topk_agg" else [])   # noqa: E731
    args = [oid] + ([oids.INT4] if func == "topk_agg" else [])
    full = _single(func, args, cols, gids, 6).final(6).to_pylist()
    st = _single(func, args, cols, gids, 6)
    dst = _state(func, args)
    dst.ensure(2)
    dst.merge(taken_state(st, np.array([4, 1])), np.array([0, 1]))
    assert dst.final(2).to_pylist() == [full[4], full[1]]
