"""The bound that lets a compiled kernel add float8 sums unchecked
(llvm/table.float_bound / float_room): never below the sum of the finite
magnitudes a batch adds, whatever NaNs, infinities or NULL rows it holds."""
from __future__ import annotations

import numpy as np

from splitstream.executor.backends.llvm.table import FLOAT_LIMIT, float_bound, float_room


def test_the_bound_covers_every_finite_magnitude():
    x = np.array([1.5, -2.0, 3.0])
    assert float_bound([x], [None], [0]) >= 6.5
    assert float_bound([x], [None], []) == 0.0


def test_nan_infinity_and_null_rows_do_not_lower_or_poison_it():
    x = np.array([1e300, np.nan, -1e300, np.inf, 5.0])
    nulls = np.array([False, False, False, False, True])
    b = float_bound([x], [nulls], [0])
    assert 2e300 <= b < FLOAT_LIMIT           # the finite, non-NULL magnitudes, added
    big = np.array([1e308, 1e308])
    assert not float_room(float_bound([big], [None], [0]))
    assert float_room(1e308) and not float_room(1e308, 1e308)
