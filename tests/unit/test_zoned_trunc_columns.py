"""date_trunc of timestamptz in a zone on whole columns (issue 16: date_trunc
bucketing compiled, not row by row) equals the value-by-value rules
(truncate_zoned, PostgreSQL's timestamptz_trunc_internal), across DST
changes and zones with half-hour shifts."""
from __future__ import annotations

import random

import numpy as np
import pytest

from splitstream.catalog.datatypes.vector import Col
from splitstream.executor.execution import truncation
from splitstream.protocol import oids
from splitstream.protocol import types as wiretypes

ZONES = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "America/St_Johns"]
UNITS = ["microseconds", "milliseconds", "second", "minute", "hour", "day", "month", "year"]


@pytest.mark.parametrize("zone", ZONES)
def test_column_path_equals_value_path(zone):
    rnd = random.Random(zone)
    base = int(np.datetime64("2024-03-30T00:00:00", "us").astype(np.int64))
    vals = [base + rnd.randint(0, 250 * 86_400) * 1_000_000 + rnd.randint(0, 999_999) for _ in range(2000)]
    vals += [int(np.datetime64(t, "us").astype(np.int64)) for t in
             ("2024-03-31T01:00:00", "2024-03-31T00:59:59.999999", "2024-10-27T00:59:59", "2024-10-27T01:00:00")]
    nulls = np.zeros(len(vals), dtype=bool)
    nulls[::97] = True
    col = Col(np.asarray(vals, dtype=np.int64).view("datetime64[us]"), nulls, oids.TIMESTAMPTZ)
    tz = wiretypes.zone_of(zone)
    for unit in UNITS:
        got = truncation._column_trunc_zoned(unit, col, tz)
        assert got is not None, unit
        want = [None if v is None else truncation.truncate_zoned(unit, v, tz) for v in col.to_pylist()]
        assert got.to_pylist() == want, unit

