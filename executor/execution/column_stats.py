"""Per-column statistics from a row sample, as PostgreSQL 15's ANALYZE
computes them (``compute_scalar_stats`` and ``analyze_mcv_list`` in
src/backend/commands/analyze.c), and a mergeable HyperLogLog sketch.

Why PostgreSQL's rules rather than our own: clients and tools read
``pg_stats`` expecting its conventions (n_distinct negative when it scales
with the table, MCVs only for values more common than the rest, histogram
bounds over the non-MCV values, correlation of value order with physical
order), and for a table whose sample is the whole table the numbers are then
exactly PostgreSQL's.  All of it is vectorised over the sample (numpy sorts
and run lengths); values become Python objects only for the few MCVs and
histogram bounds that are printed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids

#: typlen of fixed-width types (avg_width is this for them)
FIXED_WIDTH = {
    type_oids.BOOL: 1, type_oids.INT2: 2, type_oids.INT4: 4, type_oids.INT8: 8, type_oids.FLOAT4: 4,
    type_oids.FLOAT8: 8, type_oids.DATE: 4, type_oids.TIME: 8, type_oids.TIMESTAMP: 8,
    type_oids.TIMESTAMPTZ: 8, type_oids.INTERVAL: 16, type_oids.UUID: 16, type_oids.OID: 4,
}


#: types without an '=' operator (json): PostgreSQL's compute_trivial_stats keeps
#: only null_frac and avg_width
NO_EQUALITY = frozenset({type_oids.JSON})


@dataclass
class ColumnStats:
    """One pg_statistic row's content."""

    null_frac: float
    avg_width: int
    n_distinct: float
    mcv: list[Any] = field(default_factory=list)
    mcv_freqs: list[float] = field(default_factory=list)
    histogram: list[Any] = field(default_factory=list)
    correlation: float | None = None


def compute(col: Col, total_rows: float, targets: int = 100, distinct_estimate: float | None = None) -> ColumnStats:
    """Statistics of the sample column ``col`` (rows in physical order) of a
    table of ``total_rows`` live rows; ``targets`` is default_statistics_target.
    ``distinct_estimate`` (a sketch's count over the whole table) replaces
    the sample's Haas-Stokes estimate when the sample is not the whole table."""
    samplerows = len(col)
    nulls = col.null_mask()
    valid = ~nulls
    null_cnt = int(nulls.sum())
    nonnull = samplerows - null_cnt
    if nonnull == 0:
        return ColumnStats(1.0 if samplerows else 0.0, FIXED_WIDTH.get(col.oid, 0), 0.0)   # width "unknown" if varlena
    null_frac = null_cnt / samplerows
    data = col.data[valid]
    if col.oid in NO_EQUALITY:
        return ColumnStats(null_frac, _avg_width(col.oid, data), 0.0)
    tupno = np.arange(nonnull)          # PostgreSQL numbers the non-NULL values, not the rows
    keys = _comparable(data)
    try:
        order = np.argsort(keys, kind="stable")       # by value, ties by position (compare_scalars)
    except (TypeError, ArithmeticError):              # numeric NaN, values Python cannot order (jsonb)
        keys = np.empty(len(data), dtype=object)
        keys[:] = [_sort_key(v) for v in data.tolist()]     # the sample only (ANALYZE), not the table
        order = np.argsort(keys, kind="stable")
    keys = keys[order]
    new_run = np.ones(len(keys), dtype=bool)
    new_run[1:] = keys[1:] != keys[:-1]
    starts = np.flatnonzero(new_run)
    counts = np.diff(np.append(starts, len(keys)))
    ndistinct, nmultiple = len(starts), int((counts > 1).sum())
    stadistinct = _n_distinct(ndistinct, nmultiple, nonnull, samplerows, total_rows, null_frac, distinct_estimate)
    mcv_idx = _mcv_runs(counts, ndistinct, stadistinct, null_frac, samplerows, total_rows, targets)
    sorted_vals = data[order]
    stats = ColumnStats(null_frac, _avg_width(col.oid, data), stadistinct)
    stats.mcv = _pylist(sorted_vals[starts[mcv_idx]], col.oid)
    stats.mcv_freqs = (counts[mcv_idx] / samplerows).tolist()
    stats.histogram = _histogram(sorted_vals, starts, counts, mcv_idx, ndistinct, targets, col.oid)
    if nonnull > 1:
        stats.correlation = _correlation(tupno[order].astype(np.float64))
    return stats


def _sort_key(v: Any) -> tuple:
    """numeric NaN after every number and equal to itself (as PostgreSQL
    orders it); a value Python cannot order, by its text."""
    if isinstance(v, Decimal):
        return (1, 0) if v.is_nan() else (0, v)
    if isinstance(v, (dict, list)):
        return (0, str(v))
    return (0, v)


def _comparable(data: np.ndarray) -> np.ndarray:
    if data.dtype == object:
        return data
    if data.dtype.kind == "f":
        return np.where(data == 0, 0.0, data)      # -0.0 equals 0.0
    return data


def _n_distinct(ndistinct: int, nmultiple: int, nonnull: int, samplerows: int, total_rows: float,
                null_frac: float, estimate: float | None) -> float:
    """stadistinct: positive = a count, negative = minus a fraction of the rows."""
    whole = samplerows >= total_rows
    if nmultiple == 0:
        return -1.0 * (1.0 - null_frac)              # all unique: scales with the table
    if nmultiple == ndistinct:
        d = float(ndistinct)                          # every value repeats: assume a finite set
    elif estimate is not None and not whole:
        d = min(max(float(estimate), ndistinct), total_rows * (1 - null_frac))
    else:                                             # Haas-Stokes Duj1
        f1 = ndistinct - nmultiple
        n, big_n = float(nonnull), total_rows * (1.0 - null_frac)
        d = (n * ndistinct) / ((n - f1) + f1 * n / big_n) if big_n > 0 else 0.0
        d = math.floor(min(max(d, ndistinct), big_n) + 0.5)
    if d > 0.1 * total_rows:
        return -(d / total_rows)
    return d


def _mcv_runs(counts: np.ndarray, ndistinct: int, stadistinct: float, null_frac: float,
              samplerows: int, total_rows: float, targets: int) -> np.ndarray:
    """Indexes of the runs kept as most common values, most common first."""
    tracked = np.flatnonzero(counts > 1)
    tracked = tracked[np.argsort(-counts[tracked], kind="stable")][:targets]
    if len(tracked) == ndistinct and stadistinct > 0 and len(tracked) <= targets:
        return tracked                                  # the complete distribution
    if not len(tracked) or samplerows >= total_rows or total_rows <= 1:
        return tracked
    return tracked[: _keep_significant(counts[tracked].astype(float), stadistinct, null_frac, samplerows, total_rows)]


def _keep_significant(mcv_counts: np.ndarray, stadistinct: float, null_frac: float,
                      samplerows: int, total_rows: float) -> int:
    """analyze_mcv_list: drop the least common values while they are not
    significantly more common than a non-MCV value would be."""
    nd_table = -stadistinct * total_rows if stadistinct < 0 else stadistinct
    num = len(mcv_counts)
    sumcount = float(mcv_counts[: num - 1].sum())
    big_n, n = total_rows, float(samplerows)
    while num > 0:
        selec = min(max(1.0 - sumcount / n - null_frac, 0.0), 1.0)
        other = nd_table - (num - 1)
        if other > 1:
            selec /= other
        k = big_n * mcv_counts[num - 1] / n
        stddev = math.sqrt(n * k * (big_n - k) * (big_n - n) / (big_n * big_n * (big_n - 1)))
        if mcv_counts[num - 1] > selec * n + 2 * stddev + 0.5:
            break
        num -= 1
        if num == 0:
            break
        sumcount -= mcv_counts[num - 1]
    return num


def _histogram(sorted_vals: np.ndarray, starts: np.ndarray, counts: np.ndarray, mcv_idx: np.ndarray,
               ndistinct: int, targets: int, oid: int) -> list[Any]:
    num_hist = ndistinct - len(mcv_idx)
    if num_hist > targets:
        num_hist = targets + 1
    if num_hist < 2:
        return []
    keep = np.ones(len(sorted_vals), dtype=bool)
    for r in mcv_idx.tolist():                          # at most `targets` runs
        keep[starts[r]: starts[r] + counts[r]] = False
    rest = sorted_vals[keep]
    nvals = len(rest)
    pos = (np.arange(num_hist, dtype=np.int64) * (nvals - 1)) // (num_hist - 1)
    return _pylist(rest[pos], oid)


def _correlation(tupno_in_value_order: np.ndarray) -> float:
    n = float(len(tupno_in_value_order))
    xysum = float(np.dot(np.arange(len(tupno_in_value_order), dtype=np.float64), tupno_in_value_order))
    xsum = (n - 1) * n / 2.0
    x2sum = (n - 1) * n * (2 * n - 1) / 6.0
    return (n * xysum - xsum * xsum) / (n * x2sum - xsum * xsum)


def _avg_width(oid: int, data: np.ndarray) -> int:
    """Average stored width (bytes) of the non-NULL values, as PostgreSQL's
    VARSIZE_ANY: a short varlena has a 1-byte header up to 126 bytes of data."""
    fixed = FIXED_WIDTH.get(oid)
    if fixed is not None:
        return fixed
    if oid == type_oids.NUMERIC:
        sizes = np.fromiter((_numeric_size(v) for v in data.tolist()), dtype=np.int64, count=len(data))
    elif oid in type_oids.ELEMENT_OF and FIXED_WIDTH.get(type_oids.ELEMENT_OF[oid]):
        # a one-dimensional array: 24 header bytes, then the elements (approximate for others)
        width = FIXED_WIDTH[type_oids.ELEMENT_OF[oid]]
        sizes = np.fromiter((24 + width * len(v) for v in data.tolist()), dtype=np.int64, count=len(data))
    else:
        lens = np.fromiter((len(v.encode()) if isinstance(v, str) else len(v) for v in data.tolist()),
                           dtype=np.int64, count=len(data))
        sizes = np.where(lens + 1 <= 127, lens + 1, lens + 4)
    return int(sizes.sum() / len(sizes))


def _numeric_size(v: Any) -> int:
    """A short-format numeric: 1-byte varlena header, 2-byte header, 2 bytes per base-10000 digit."""
    d = Decimal(v) if not isinstance(v, Decimal) else v
    if not d.is_finite() or d == 0:
        return 3
    text = format(abs(d), "f")
    whole, _, frac = text.partition(".")
    whole = whole.lstrip("0")
    groups = [whole[max(0, i - 4): i] for i in range(len(whole), 0, -4)][::-1]
    groups += [frac[i: i + 4].ljust(4, "0") for i in range(0, len(frac), 4)]
    while groups and int(groups[-1]) == 0:
        groups.pop()
    while groups and int(groups[0]) == 0:
        groups.pop(0)
    return 3 + 2 * len(groups)


def _pylist(values: np.ndarray, oid: int) -> list[Any]:
    return Col(values, None, oid).to_pylist()


# ------------------------------------------------------------------ HyperLogLog

class HyperLogLog:
    """A mergeable distinct-count sketch (2**p one-byte registers; standard
    error 1.04 / sqrt(2**p), 0.8% at p = 14); fed whole columns at a time."""

    __slots__ = ("p", "reg")

    def __init__(self, p: int = 14) -> None:
        assert 11 <= p <= 18            # the rank below needs 64 - p <= 53 bits
        self.p = p
        self.reg = np.zeros(1 << p, dtype=np.uint8)

    def add_hashes(self, h: np.ndarray) -> None:
        if not len(h):
            return
        rest_bits = 64 - self.p
        idx = (h >> np.uint64(rest_bits)).astype(np.intp)
        # the low bits as a float are exact (< 2**53); frexp's exponent is their bit length
        _, length = np.frexp((h & np.uint64((1 << rest_bits) - 1)).astype(np.float64))
        np.maximum.at(self.reg, idx, (rest_bits + 1 - length).astype(np.uint8))

    def merge(self, other: "HyperLogLog") -> None:
        np.maximum(self.reg, other.reg, out=self.reg)

    def estimate(self) -> float:
        m = float(len(self.reg))
        alpha = 0.7213 / (1 + 1.079 / m)
        raw = alpha * m * m / float(np.sum(np.ldexp(1.0, -self.reg.astype(np.int64))))
        zeros = int((self.reg == 0).sum())
        if raw <= 2.5 * m and zeros:
            return m * math.log(m / zeros)             # linear counting for small cardinalities
        return raw


def hash_values(col: Col) -> np.ndarray:
    """64-bit hashes of the non-NULL values of ``col`` (splitmix64 of the bits
    for fixed-width types; strings through pandas' vectorised hash when it is
    installed)."""
    data = col.data
    if col.nulls is not None and col.nulls.any():
        data = data[~col.nulls]
    if data.dtype != object:
        if data.dtype.kind == "f":
            data = np.where(data == 0, 0.0, data).astype(np.float64)
        width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[data.dtype.itemsize]
        bits = np.ascontiguousarray(data).view(width).astype(np.uint64)
        return _splitmix(bits)
    return _object_hashes(data)


def _splitmix(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _object_hashes(data: np.ndarray) -> np.ndarray:
    try:
        import pandas as pd  # type: ignore[import-untyped]  # optional dependency: a C loop over the strings
    except ImportError:
        pd = None
    if not len(data):
        return np.zeros(0, dtype=np.uint64)
    if not isinstance(data[0], str):                 # Decimal, bytes, lists, dicts...: by their text
        data = np.array([str(v) for v in data.tolist()], dtype=object)
    if pd is not None:
        return pd.util.hash_array(data, categorize=False)
    hashes = np.fromiter((hash(str(v)) for v in data.tolist()), dtype=np.int64, count=len(data))
    return _splitmix(hashes.view(np.uint64))
