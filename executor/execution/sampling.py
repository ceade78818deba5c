"""TABLESAMPLE methods over a scanned table (issue 18, item 3).

Why the rows are chosen here, vectorised, after the scan: a table scan is one
columnar batch, so each method is a mask or an index array drawn in one
numpy call (never a Python step per row), and the same code serves both
backends: a REPEATABLE sample is the same whichever backend runs the query
and across restarts (checkpoints keep the row order).

* ``bernoulli (p)``: each row independently with probability p/100;
* ``system (p)``: each block of ``BLOCK_ROWS`` rows independently with
  probability p/100 (PostgreSQL samples 8 kB pages; our storage has no pages,
  so a block is a fixed run of rows in scan order);
* ``system_rows (n)`` (tsm_system_rows): whole blocks in a random order
  until n rows are read;
* ``reservoir (n)`` (DuckDB): exactly min(n, N) rows, uniform, drawn by the
  parallel reservoir of ``execution.reservoir``; ``reservoir (p%)`` draws
  round(p/100 * N) rows.

Arguments are evaluated when the scan runs (they may be parameters), and
checked with PostgreSQL's errors.
"""
from __future__ import annotations

import math
import struct

import numpy as np

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

from . import reservoir, reservoir_agg  # noqa: F401  (reservoir_agg installs reservoir_sample)
from .expr import Expr
from .operators import Op

BLOCK_ROWS = 128
INVALID_TABLESAMPLE_ARGUMENT = "2202H"
INVALID_TABLESAMPLE_REPEAT = "2202G"
NULL_VALUE_NOT_ALLOWED = "2202H"      # PostgreSQL raises INVALID_TABLESAMPLE_ARGUMENT for a NULL argument
INVALID_PARAMETER_VALUE = "22023"
METHODS = ("bernoulli", "system", "system_rows", "reservoir")


class SampleScan(Op):
    """A sample of its child's rows (a table scan)."""

    def __init__(self, child: Op, method: str, arg, seed, unit: str | None) -> None:
        self.child, self.method, self.arg, self.seed, self.unit = child, method, arg, seed, unit
        self.children = [child]
        self.out = child.out

    def _execute(self, ctx) -> Batch:
        value = _scalar(self.arg, ctx)
        if value is None:
            raise PgError(NULL_VALUE_NOT_ALLOWED, "TABLESAMPLE parameter cannot be null")
        amount = checked_argument(self.method, float(value), self.unit)
        seed = None
        if self.seed is not None:
            s = _scalar(self.seed, ctx)
            if s is None:
                raise PgError(INVALID_TABLESAMPLE_REPEAT, "TABLESAMPLE REPEATABLE parameter cannot be null")
            seed = seed_of(float(s))
        batch = self.child.execute(ctx)
        return batch.take(choose_rows(self.method, amount, batch.n, seed))

    def label(self) -> str:
        return f"Sample Scan ({self.method})"


def _scalar(e, ctx):
    return e.eval(Batch([], 1), ctx).to_pylist()[0]


def seed_of(value: float) -> int:
    """REPEATABLE's float8 seed as a generator seed (its bits: equal seeds, equal samples)."""
    return int.from_bytes(struct.pack("<d", value), "little")


def checked_argument(method: str, value: float, unit: str | None) -> float:
    """The argument of ``method`` checked as PostgreSQL (and DuckDB for
    RESERVOIR) check it; a RESERVOIR percentage comes back negative."""
    if method in ("bernoulli", "system") or unit == "percent":
        if unit == "rows":
            raise PgError(INVALID_TABLESAMPLE_ARGUMENT, f"tablesample method {method} takes a percentage, not rows")
        if method == "system_rows":
            raise PgError(INVALID_TABLESAMPLE_ARGUMENT, "tablesample method system_rows takes a row count")
        if math.isnan(value) or value < 0 or value > 100:
            raise PgError(INVALID_TABLESAMPLE_ARGUMENT, "sample percentage must be between 0 and 100")
        return -value if method == "reservoir" else value
    if method == "system_rows":
        if math.isnan(value) or value < 0:
            raise PgError(INVALID_TABLESAMPLE_ARGUMENT, "sample size must not be negative")
        return math.floor(value)
    if math.isnan(value) or value <= 0 or value != math.floor(value):
        raise PgError(INVALID_PARAMETER_VALUE, "reservoir sample size must be a positive integer",
                      hint="Write RESERVOIR (n) with n >= 1 rows, or RESERVOIR (p%).")
    return value


def choose_rows(method: str, amount: float, n_rows: int, seed: int | None) -> np.ndarray:
    """Which of ``n_rows`` rows the sample keeps (int64 indexes)."""
    rng = np.random.default_rng(seed)
    if method == "bernoulli":
        return np.flatnonzero(rng.random(n_rows) < amount / 100.0)
    blocks = -(-n_rows // BLOCK_ROWS)
    if method == "system":
        keep = rng.random(blocks) < amount / 100.0
        return np.flatnonzero(np.repeat(keep, BLOCK_ROWS)[:n_rows])
    if method == "system_rows":
        want = min(int(amount), n_rows)
        order = rng.permutation(blocks)[: want // BLOCK_ROWS + 2]
        rows = (order[:, None] * BLOCK_ROWS + np.arange(BLOCK_ROWS)).ravel()
        return rows[rows < n_rows][:want]
    size = int(amount) if amount > 0 else int(round(-amount / 100.0 * n_rows))
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    return reservoir.sample_positions(n_rows, size, int(rng.integers(0, 1 << 62)))


class BernoulliMask(Expr):
    """``TABLESAMPLE BERNOULLI (p)`` on a stream: a predicate true for each
    row with probability p/100, so the stream pipeline filters at insert
    time (a continuous view then folds only the sampled rows).  With
    REPEATABLE the draws of a batch are seeded by the seed and the batch's
    contents, so replaying the WAL after a restart keeps the same rows."""

    oid = type_oids.BOOL

    def __init__(self, arg, seed) -> None:
        self.arg, self.seed = arg, seed

    def children(self) -> list:
        return [self.arg] + ([self.seed] if self.seed is not None else [])

    def eval(self, batch: Batch, ctx) -> Col:
        value = _scalar(self.arg, ctx)
        if value is None:
            raise PgError(NULL_VALUE_NOT_ALLOWED, "TABLESAMPLE parameter cannot be null")
        p = checked_argument("bernoulli", float(value), None)
        seed = None
        if self.seed is not None:
            s = _scalar(self.seed, ctx)
            if s is None:
                raise PgError(INVALID_TABLESAMPLE_REPEAT, "TABLESAMPLE REPEATABLE parameter cannot be null")
            seed = [seed_of(float(s)), batch.n, _content_key(batch)]
        return Col(np.random.default_rng(seed).random(batch.n) < p / 100.0, None, type_oids.BOOL)

    def __repr__(self) -> str:
        return f"bernoulli({self.arg!r}, repeatable {self.seed!r})"


def _content_key(batch: Batch) -> int:
    """A cheap fingerprint of a batch (its fixed-width columns' bytes, folded)."""
    key = np.uint64(0)
    for c in batch.cols:
        d = c.data
        if d.dtype != object and d.dtype.itemsize == 8 and len(d):
            key ^= np.bitwise_xor.reduce(np.ascontiguousarray(d).view(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    return int(key)
