"""Count-min sketch: ``freq_agg``, ``freq`` and ``freq_total``.

Why these sizes: PipelineDB's defaults, epsilon 0.002 and confidence 0.995,
give ``WIDTH = ceil(e / 0.002) = 1360`` counters per row and ``DEPTH =
ceil(ln(1 / 0.005)) = 6`` rows.  ``freq`` never underestimates, and with
probability 0.995 overestimates by at most 0.002 times the group's row
count.  Counters are uint32 as in PipelineDB (32 KiB per group); a group
past 2^32 - 1 rows is refused (22003) rather than wrapped.  The DEPTH row
indexes come from one 64-bit hash (the same as HyperLogLog's) as
``h1 + i * h2`` (Kirsch and Mitzenmacher); merging adds counters, which is
exact.

A sketch value is ``bytea``: ``SSC1``, depth and width (uint32), the total
(int64), then the counters (uint32, little-endian).
"""
from __future__ import annotations

import math
import struct

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, NUMERIC_VALUE_OUT_OF_RANGE, PgError

from ..aggregates import AggState
from .distinct import refuse_distinct
from .hashing import hash64

EPSILON = 0.002
CONFIDENCE = 0.995
WIDTH = math.ceil(math.e / EPSILON)
DEPTH = math.ceil(math.log(1 / (1 - CONFIDENCE)))
CELLS = WIDTH * DEPTH
TAG = b"SSC1"
_HEAD = struct.Struct("<4sIIq")
_MAX = (1 << 32) - 1


def cells_of(h: np.ndarray) -> np.ndarray:
    """(rows, DEPTH) flat cell indexes of each hash, one per sketch row."""
    h1 = (h & np.uint64(0xFFFFFFFF)).astype(np.int64)
    h2 = (h >> np.uint64(32)).astype(np.int64) | 1
    i = np.arange(DEPTH, dtype=np.int64)
    return (h1[:, None] + i * h2[:, None]) % WIDTH + i * WIDTH


class CountMinState(AggState):
    """Counters per group, (groups, DEPTH * WIDTH) uint32, and row totals."""

    DECIDES_DISTINCT = True

    def __init__(self, spec) -> None:
        refuse_distinct(spec)
        super().__init__(spec)
        self.counts = np.zeros((0, CELLS), dtype=np.uint32)
        self.total = np.zeros(0, dtype=np.int64)

    def _grow(self, cap: int) -> None:
        c = np.zeros((cap, CELLS), dtype=np.uint32)
        c[: len(self.counts)] = self.counts
        self.counts = c
        self.total = self._grown(self.total, cap, 0)

    def _check(self, groups: np.ndarray) -> None:
        if len(groups) and int(self.total[groups].max()) > _MAX:
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "count-min sketch counter out of range",
                          hint="A freq_agg group holds at most 4294967295 rows.")

    def update(self, gids, ng, args, valid) -> None:
        col = args[0]
        keep = col.valid_mask() if valid is None else valid & col.valid_mask()
        if self.spec.func == "freq_merge_agg":          # sketches, added cell by cell
            rows = np.flatnonzero(keep)
            for g, b in zip(gids[rows].tolist(), col.data[rows].tolist()):     # per sketch, not per counted row
                counts, total = from_bytes(b)
                self.counts[g] += counts
                self.total[g] += total
            self._check(np.unique(gids[rows]))
            return
        h = hash64(col)
        if not keep.all():
            h, gids = h[keep], gids[keep]
        if not len(h):
            return
        self.total[:ng] += np.bincount(gids, minlength=ng)[:ng]
        self._check(np.unique(gids))
        flat = (gids.astype(np.int64) * CELLS)[:, None] + cells_of(h)
        np.add.at(self.counts.reshape(-1), flat.ravel(), np.uint32(1))

    def merge(self, other, gmap) -> None:
        k = len(gmap)
        self.total[gmap] += other.total[:k]
        self._check(gmap)
        self.counts[gmap] += other.counts[:k]          # gmap: distinct groups

    def final(self, ng: int) -> Col:
        return Col.from_pylist(to_bytes(self.counts[:ng], self.total[:ng]), type_oids.BYTEA)


def to_bytes(counts: np.ndarray, total: np.ndarray) -> list[bytes | None]:
    """A sketch value per row of counters; NULL for a sketch of no row."""
    return [_HEAD.pack(TAG, DEPTH, WIDTH, int(t)) + counts[i].astype("<u4").tobytes() if t else None
            for i, t in enumerate(total.tolist())]


def from_bytes(b) -> tuple[np.ndarray, int]:
    """(counters, total) of a sketch value; 22023 if it is not one."""
    b = bytes(b)
    try:
        tag, depth, width, total = _HEAD.unpack_from(b)
    except struct.error:
        tag, depth, width, total = b"", 0, 0, 0
    if tag != TAG or (depth, width) != (DEPTH, WIDTH) or len(b) != _HEAD.size + 4 * CELLS:
        raise PgError(INVALID_PARAMETER_VALUE, "invalid cmsketch value",
                      hint="A cmsketch is the bytea made by freq_agg.")
    return np.frombuffer(b, dtype="<u4", offset=_HEAD.size), total


def freq_col(sketches: Col, values: Col) -> Col:
    """freq(sketch, value) per row: the least of the value's counters."""
    n = len(sketches)
    out = np.zeros(n, dtype=np.int32)
    ok = sketches.valid_mask() & values.valid_mask()
    cells = cells_of(hash64(values))
    parsed: dict[bytes, np.ndarray] = {}          # per distinct sketch value, not per row
    for i in np.flatnonzero(ok).tolist():
        key = bytes(sketches.data[i])
        counts = parsed.get(key)
        if counts is None:
            counts = parsed[key] = from_bytes(key)[0]
        out[i] = min(int(counts[cells[i]].min()), 2 ** 31 - 1)
    return Col(out, None if ok.all() else ~ok, type_oids.INT4)


def total_col(sketches: Col) -> Col:
    ok = sketches.valid_mask()
    out = np.zeros(len(sketches), dtype=np.int64)
    for i in np.flatnonzero(ok).tolist():
        out[i] = from_bytes(sketches.data[i])[1]
    return Col(out, None if ok.all() else ~ok, type_oids.INT8)


#: rows of counters (32 KiB each) the scalar functions hold at once
_CHUNK = 512


def add_col(sketches: Col, values: Col, weights: Col | None) -> Col:
    """PipelineDB's ``freq_add(cmsketch, value [, weight])`` per row: the
    sketch (a NULL one starts empty) with the value counted weight times
    (once without one); a NULL value or weight adds nothing."""
    n = len(sketches)
    out: list[bytes | None] = []
    for lo in range(0, n, _CHUNK):
        rows = np.arange(lo, min(lo + _CHUNK, n))
        sk, vals = sketches.take(rows), values.take(rows)
        ok = vals.valid_mask()
        w = np.ones(len(rows), dtype=np.int64)
        if weights is not None:
            wc = weights.take(rows)
            ok &= wc.valid_mask()
            w = np.where(ok, wc.data, 0).astype(np.int64)
            if (w < 0).any():
                raise PgError(INVALID_PARAMETER_VALUE, "cmsketch type doesn't support negative increments")
        counts = np.zeros((len(rows), CELLS), dtype=np.int64)
        total = np.zeros(len(rows), dtype=np.int64)
        for i in np.flatnonzero(sk.valid_mask()).tolist():       # per sketch value
            c, t = from_bytes(sk.data[i])
            counts[i], total[i] = c, t
        k = np.flatnonzero(ok & (w > 0))
        counts[k[:, None], cells_of(hash64(vals)[k])] += w[k][:, None]
        total[k] += w[k]
        if len(total) and int(total.max()) > _MAX:
            raise PgError(NUMERIC_VALUE_OUT_OF_RANGE, "count-min sketch counter out of range",
                          hint="A cmsketch holds at most 4294967295 rows.")
        out += to_bytes(counts, total)
    return Col.from_pylist(out, type_oids.BYTEA)


def norm_col(sketches: Col, values: Col) -> Col:
    """``freq_norm(cmsketch, value)``: the value's estimated frequency over
    the sketch's total; 0 for a NULL sketch (PipelineDB's), NULL for a NULL value."""
    freq, total = freq_col(sketches, values), total_col(sketches)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(total.data > 0, freq.data / np.maximum(total.data, 1), 0.0)
    null = ~values.valid_mask()
    out[~sketches.valid_mask()] = 0.0
    return Col(out.astype(np.float64), null if null.any() else None, type_oids.FLOAT8)
