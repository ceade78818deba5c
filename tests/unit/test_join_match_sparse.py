"""Hash-join matching when the build side is much smaller than its key range
(operators._match_sparse, taken by _match_dense): the same pairs as a
brute-force match, NULL codes on either side never matching."""
from __future__ import annotations

import collections

import numpy as np
import pytest

from splitstream.executor.execution import operators as ops


def _brute(lcode: np.ndarray, rcode: np.ndarray) -> list[tuple[int, int]]:
    where = collections.defaultdict(list)
    for j, v in enumerate(rcode.tolist()):
        if v >= 0:
            where[v].append(j)
    return sorted((i, j) for i, v in enumerate(lcode.tolist()) if v >= 0 for j in where.get(v, []))


@pytest.mark.parametrize("nl,nr,span,lnull,rnull", [
    (1000, 50, 100_000, 0.0, 0.0),          # duplicate-free or not, by chance
    (1000, 50, 100_000, 0.1, 0.2),          # NULL keys on both sides
    (2000, 300, 50_000, 0.0, 0.0),          # many duplicates in the build
    (200, 0, 100_000, 0.0, 0.0),            # empty build
    (3000, 100, 1_000_000, 0.0, 1.0),       # every build key NULL
])
def test_sparse_build_matches_brute_force(nl, nr, span, lnull, rnull):
    rng = np.random.default_rng(nl + nr)
    lcode = rng.integers(0, span // 50 if nr == 300 else span, nl)
    rcode = rng.choice(lcode, nr) if nr else np.zeros(0, np.int64)
    lcode[rng.random(nl) < lnull] = -1
    rcode[rng.random(nr) < rnull] = -2
    assert span > 4 * nr + 4096                        # the sparse path is the one taken
    li, ri = ops._match_dense(lcode, rcode, span)
    assert sorted(zip(li.tolist(), ri.tolist())) == _brute(lcode, rcode)


def test_unique_build_keys():
    rng = np.random.default_rng(7)
    rcode = rng.permutation(1_000_000)[:300]
    lcode = np.concatenate([rng.integers(0, 1_000_000, 5000), rcode[:40]])
    li, ri = ops._match_dense(lcode, rcode, 1_000_000)
    assert sorted(zip(li.tolist(), ri.tolist())) == _brute(lcode, rcode)
