"""HyperLogLog and t-digest states against exact answers, and their merges
(issue 17 scope 1).  Works on the aggregate states directly, as a grouping
pipeline does: one batch per call, group ids per row."""
from __future__ import annotations

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Col, FixedCol
from splitstream.executor.execution import proc_catalog  # noqa: F401  (registers the sketches)
from splitstream.executor.execution.aggregates import AggSpec, GroupTable
from splitstream.executor.execution.sketches import cmsketch, hll, tdigest
from splitstream.executor.execution.sketches.hashing import hash64
from splitstream.executor.stream import retention
from splitstream.protocol import oids

SEEDS = (1, 2, 3, 4, 5)


def _state(func: str, oid: int = oids.INT8):
    return AggSpec(func, [], [oid]).make_state()


def _regs(st, ng: int) -> np.ndarray:
    """An HLL state's dense registers for groups 0..ng-1, pending updates applied."""
    st.flush()
    st.ensure(ng)
    st._dense(ng)
    return st.regs[:ng]


def _feed(st, values: np.ndarray, gids: np.ndarray, oid: int = oids.INT8, nulls=None) -> None:
    ng = int(gids.max()) + 1 if len(gids) else 1
    st.ensure(ng)
    st.update(gids.astype(np.int64), ng, [Col(values, nulls, oid)], None)


@pytest.mark.parametrize("n", [0, 1, 100, 10_000, 1_000_000])
@pytest.mark.parametrize("seed", SEEDS)
def test_hll_estimate_is_within_three_standard_errors(n, seed):
    rng = np.random.default_rng(seed)
    vals = rng.integers(-2 ** 62, 2 ** 62, n)
    vals = np.concatenate((vals, vals[: n // 2]))          # repeats count once
    exact = len(np.unique(vals))
    st = _state("hll_count_distinct")
    _feed(st, vals, np.zeros(len(vals), np.int64))
    (est,) = st.final(1).to_pylist()
    assert abs(est - exact) <= 3 * hll.STANDARD_ERROR * exact, (est, exact)


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_hll_of_text_and_floats_within_bound(seed):
    rng = np.random.default_rng(seed)
    words = np.array([f"user-{v}" for v in rng.integers(0, 50_000, 100_000)], dtype=object)
    floats = rng.normal(size=50_000)
    for vals, oid in ((words, oids.TEXT), (floats, oids.FLOAT8)):
        exact = len(set(vals.tolist()))
        st = _state("approx_count_distinct", oid)
        _feed(st, vals, np.zeros(len(vals), np.int64), oid)
        (est,) = st.final(1).to_pylist()
        assert abs(est - exact) <= 3 * hll.STANDARD_ERROR * exact, (oid, est, exact)


def test_hll_skips_nulls_and_equal_values_of_any_int_width():
    vals = np.arange(1000, dtype=np.int64)
    nulls = vals % 2 == 0
    a, b = _state("hll_agg"), _state("hll_agg", oids.INT4)
    _feed(a, np.where(nulls, 0, vals), np.zeros(1000, np.int64), nulls=nulls)
    _feed(b, vals[~nulls].astype(np.int32), np.zeros(500, np.int64), oids.INT4)
    assert np.array_equal(_regs(a, 1), _regs(b, 1))
    assert a.final(1).to_pylist() == b.final(1).to_pylist()


@pytest.mark.parametrize("seed", SEEDS)
def test_hll_merges_of_partial_states_equal_one_pass(seed):
    """Two halves, many batches in several 'threads', and states merged with
    their groups in another order all give the same registers, bit for bit."""
    rng = np.random.default_rng(seed)
    n, groups = 200_000, 50
    vals, gids = rng.integers(0, 10 ** 6, n), rng.integers(0, groups, n)
    whole = _state("hll_agg")
    _feed(whole, vals, gids)
    for parts in (2, 7):
        global_ = _state("hll_agg")
        global_.ensure(groups, exact=True)
        for chunk in np.array_split(rng.permutation(n), parts):
            local = _state("hll_agg")
            perm = rng.permutation(groups)           # the local table numbers its groups otherwise
            _feed(local, vals[chunk], perm[gids[chunk]])
            local.ensure(groups)
            if parts == 7:
                local.flush()                        # merged from dense registers, not pending updates
            gmap = np.argsort(perm)                  # local group i is global group gmap[i]
            global_.merge(local, gmap)
        assert np.array_equal(_regs(global_, groups), _regs(whole, groups))


def test_hll_union_of_sketch_values_equals_sketch_of_union():
    rng = np.random.default_rng(9)
    vals = rng.integers(0, 10 ** 9, 30_000)
    parts = []
    for chunk in np.array_split(vals, 5):
        st = _state("hll_agg")
        _feed(st, chunk, np.zeros(len(chunk), np.int64))
        parts.append(st.final(1).to_pylist()[0])
    union = _state("hll_union_agg", oids.BYTEA)
    union.ensure(1)
    union.update(np.zeros(5, np.int64), 1, [Col(np.array(parts, dtype=object), None, oids.BYTEA)], None)
    whole = _state("hll_agg")
    _feed(whole, vals, np.zeros(len(vals), np.int64))
    assert union.final(1).to_pylist() == whole.final(1).to_pylist()


def _rank_error(data_sorted: np.ndarray, digest, qs) -> float:
    n = len(data_sorted)
    worst = 0.0
    for q in qs:
        v = tdigest.quantile(digest, q)
        lo = np.searchsorted(data_sorted, v, "left") / n
        hi = np.searchsorted(data_sorted, v, "right") / n
        worst = max(worst, 0.0 if lo <= q <= hi else min(abs(q - lo), abs(q - hi)))
    return worst


QS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999)


@pytest.mark.parametrize("dist", ["uniform", "normal", "exponential", "lognormal"])
@pytest.mark.parametrize("batches", [1, 13])
def test_tdigest_quantiles_within_rank_error(dist, batches):
    rng = np.random.default_rng(len(dist) * 7 + batches)
    data = getattr(rng, dist)(size=100_000)
    st = _state("dist_agg", oids.FLOAT8)
    for chunk in np.array_split(data, batches):
        _feed(st, chunk, np.zeros(len(chunk), np.int64), oids.FLOAT8)
    (digest,) = st.final(1).to_pylist()
    data.sort()
    assert _rank_error(data, digest, QS) <= tdigest.RANK_ERROR
    for x in np.quantile(data, QS):
        assert abs(tdigest.cdf(digest, float(x)) - np.searchsorted(data, x, "right") / len(data)) <= tdigest.RANK_ERROR
    assert tdigest.quantile(digest, 0.0) == data[0] and tdigest.quantile(digest, 1.0) == data[-1]


def test_tdigest_merged_partial_states_within_rank_error():
    rng = np.random.default_rng(4)
    n, groups = 120_000, 3
    data, gids = rng.normal(size=n), rng.integers(0, groups, n)
    global_ = _state("dist_agg", oids.FLOAT8)
    global_.ensure(groups, exact=True)
    for chunk in np.array_split(np.arange(n), 6):
        local = _state("dist_agg", oids.FLOAT8)
        _feed(local, data[chunk], gids[chunk], oids.FLOAT8)
        local.ensure(groups)
        global_.merge(local, np.arange(groups))
    for g, digest in enumerate(global_.final(groups).to_pylist()):
        assert _rank_error(np.sort(data[gids == g]), digest, QS) <= tdigest.RANK_ERROR


def test_tdigest_keeps_at_most_compression_centroids_per_group():
    st = _state("dist_agg", oids.FLOAT8)
    rng = np.random.default_rng(1)
    for _ in range(3):                                   # past FOLD_MIN: folded during ingest too
        _feed(st, rng.random(500_000), np.zeros(500_000, np.int64), oids.FLOAT8)
    (digest,) = st.final(1).to_pylist()
    assert st.npend == 0 and 0 < (st.weights[0] > 0).sum() <= tdigest.COMPRESSION
    assert st.weights[0].sum() == 1_500_000
    assert len(digest) <= 24 + 16 * tdigest.COMPRESSION


def test_a_string_hashes_alike_in_batches_of_other_widths():
    """A batch's fixed-width copy pads to its longest string: the padding
    must not change a value's hash (else a view counts it once per batch shape)."""
    a, b = _state("hll_agg", oids.TEXT), _state("hll_agg", oids.TEXT)
    short = np.array(["7", "42", "abc"], dtype=object)
    _feed(a, short, np.zeros(3, np.int64), oids.TEXT)
    _feed(b, np.array(["7", "a much longer string"], dtype=object), np.zeros(2, np.int64), oids.TEXT)
    _feed(b, np.array(["42", "abc", "7"], dtype=object), np.zeros(3, np.int64), oids.TEXT)
    _feed(a, np.array(["a much longer string"], dtype=object), np.zeros(1, np.int64), oids.TEXT)
    assert np.array_equal(_regs(a, 1), _regs(b, 1))
    assert round(float(hll.estimate(_regs(b, 1))[0])) == 4


@pytest.mark.parametrize("seed", SEEDS[:3])
def test_count_min_never_underestimates_and_is_within_its_bound(seed):
    rng = np.random.default_rng(seed)
    vals = rng.zipf(1.3, 300_000) % 50_000
    st = _state("freq_agg")
    _feed(st, vals, np.zeros(len(vals), np.int64))
    (sketch,) = st.final(1).to_pylist()
    keys, exact = np.unique(vals, return_counts=True)
    got = cmsketch.freq_col(Col(np.array([sketch] * len(keys), dtype=object), None, oids.BYTEA),
                            Col(keys, None, oids.INT8)).data
    assert (got >= exact).all()
    over = (got - exact) > cmsketch.EPSILON * len(vals)
    assert over.mean() <= 1 - cmsketch.CONFIDENCE
    assert cmsketch.total_col(Col(np.array([sketch], dtype=object), None, oids.BYTEA)).data[0] == len(vals)


def test_count_min_merges_equal_one_pass():
    rng = np.random.default_rng(3)
    vals, gids = rng.integers(0, 1000, 100_000), rng.integers(0, 20, 100_000)
    whole = _state("freq_agg")
    _feed(whole, vals, gids)
    merged = _state("freq_agg")
    merged.ensure(20, exact=True)
    for chunk in np.array_split(np.arange(len(vals)), 3):
        local = _state("freq_agg")
        _feed(local, vals[chunk], gids[chunk])
        local.ensure(20)
        merged.merge(local, np.arange(20))
    assert merged.final(20).to_pylist() == whole.final(20).to_pylist()


def test_numeric_hashes_by_value_whatever_its_scale():
    """1.50 and 1.5 are one numeric value; 7.00 is the integer 7."""
    assert hash64(FixedCol(np.array([150, 700, -1230]), 2, None)).tolist() == \
        hash64(FixedCol(np.array([15, 70, -123]), 1, None)).tolist()
    assert hash64(FixedCol(np.array([700]), 2, None)).tolist() == hash64(Col(np.array([7]), None, oids.INT4)).tolist()
    assert len(set(hash64(FixedCol(np.array([15, 150, 1500]), 2, None)).tolist())) == 3


def test_retention_and_sessions_regroup_states_with_buffered_input():
    """retention.drop_groups (and SESSION merges, by the same regroup) cut
    states by group: buffered HLL updates and t-digest values are applied
    first, so the kept groups equal a table fed only their rows."""
    specs = [AggSpec("hll_agg", [], [oids.INT8]), AggSpec("dist_agg", [], [oids.FLOAT8]),
             AggSpec("freq_agg", [], [oids.INT8])]

    def table(keys, vals):
        t = GroupTable([oids.INT8], specs)
        args = [Col(vals, None, oids.INT8), Col(vals.astype(float), None, oids.FLOAT8), Col(vals, None, oids.INT8)]
        t.consume([Col(keys, None, oids.INT8)], [([a], None) for a in args], len(keys))
        return t

    k, v = np.arange(3000) % 5, np.arange(3000)
    t = table(k, v)
    assert t.states[0].npend and t.states[1].npend             # buffered, not yet dense
    retention.drop_groups(t, np.array([True, False, True, False, True]))
    kept = k % 2 == 0
    assert sorted(t.result().rows()) == sorted(table(k[kept], v[kept]).result().rows())
