"""t-digest: ``dist_agg``, ``dist_quantile`` and ``dist_cdf``.

Why this layout: each group keeps at most ``COMPRESSION`` centroids in two
fixed (groups, COMPRESSION) float64 arrays (mean, weight; weight 0 = unused
slot) plus its minimum and maximum, so a state is raw numpy buffers that
checkpoints save as they are.  A batch is folded in for all its groups at
once: the touched groups' centroids and the new values are sorted by (group,
value), each item is placed in the slot of the k-scale interval
``k(q) = compression/pi * (asin(2q - 1) + pi/2)`` its centre falls in, and a
slot's items become one centroid (weighted mean).  Slots are narrow at the
tails (q near 0 or 1), so extreme quantiles are kept nearly exact; merging
two states is the same fold over both sets of centroids.

A digest value is ``bytea``: ``SSD1``, the centroid count (uint32), min,
max, the means, the weights (float64, little-endian).
"""
from __future__ import annotations

import math
import struct

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

from ..aggregates import AggState
from .distinct import refuse_distinct

COMPRESSION = 100
#: documented and tested bound on |estimated rank - true rank| of dist_quantile and dist_cdf
RANK_ERROR = 0.005
#: values kept unfolded per state before a fold, at least
FOLD_MIN = 1 << 20
#: ... and at least this many per centroid slot, so that a fold's sort is
#: mostly new values, and a statement's staged state (merged by appending)
#: seldom folds at all
FOLD_PER_CENTROID = 4
TAG = b"SSD1"
_HEAD = struct.Struct("<4sIdd")


#: beyond this many groups in one fold, the key would keep too few bits of the value
_KEY_GROUPS = 1 << 24


def _sort_key(g: np.ndarray, x: np.ndarray, ngroups: int) -> np.ndarray:
    """uint64 keys ordering items by (group, value)."""
    bits = x.astype(np.float64).view(np.uint64)
    neg = (bits >> np.uint64(63)).astype(bool)
    order = np.where(neg, ~bits, bits | np.uint64(1 << 63))       # floats as unsigned integers, in order
    gbits = max(int(ngroups - 1).bit_length(), 1)
    return (g.astype(np.uint64) << np.uint64(64 - gbits)) | (order >> np.uint64(gbits))


def _fold(g: np.ndarray, means: np.ndarray, weights: np.ndarray, ngroups: int) -> tuple[np.ndarray, np.ndarray]:
    """(means, weights), each (ngroups, COMPRESSION): items of group g[i]
    (value means[i], weight weights[i]) compressed to centroids.

    Items are sorted by one uint64 key, the group in the high bits and the
    value's order-preserving bits in the rest (values equal to about ten
    significant digits may swap places, which moves no centroid measurably):
    one sort, where lexsort or two sorts cost several times more.  The
    sorted group ids and each group's offsets are rebuilt from the counts
    by ``np.repeat`` rather than gathered."""
    idx = np.argsort(_sort_key(g, means, ngroups)) if ngroups <= _KEY_GROUPS else np.lexsort((means, g))
    m, w = means[idx], weights[idx]
    counts = np.bincount(g, minlength=ngroups)
    tot = np.bincount(g, weights=weights, minlength=ngroups)
    start = np.cumsum(tot) - tot
    # position of each item's centre in its group, as a fraction of the group's weight
    q = np.cumsum(w)
    q -= w / 2
    q -= np.repeat(start, counts)
    q /= np.repeat(tot, counts)
    q *= 2
    q -= 1
    np.clip(q, -1.0, 1.0, out=q)
    k = np.arcsin(q, out=q)
    k += math.pi / 2
    k *= COMPRESSION / math.pi
    slot = np.minimum(k.astype(np.int64), COMPRESSION - 1)
    slot += np.repeat(np.arange(ngroups, dtype=np.int64) * COMPRESSION, counts)
    size = ngroups * COMPRESSION
    wsum = np.bincount(slot, weights=w, minlength=size)
    msum = np.bincount(slot, weights=w * m, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(wsum > 0, msum / wsum, 0.0)
    return mean.reshape(ngroups, COMPRESSION), wsum.reshape(ngroups, COMPRESSION)


def _touched(g: np.ndarray, ngroups: int) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct groups in g, ascending; each item's index among them), without sorting."""
    present = np.bincount(g, minlength=ngroups) > 0
    local = np.cumsum(present) - 1
    return np.flatnonzero(present), local[g]


def _as_float(col: Col) -> np.ndarray:
    d = col.data
    return d.astype(np.float64) if d.dtype != object else np.array([0.0 if v is None else float(v) for v in d.tolist()])


class TDigestState(AggState):
    """Centroids per group, plus minimum and maximum, plus values not yet
    folded in (group ids and values appended per batch, folded when they
    outnumber the centroids or at a merge or a read: sorting each batch
    together with every touched group's centroids would cost more than the
    batch itself)."""

    #: the unfolded values (class defaults: states saved without them have none)
    pend_g = np.zeros(0, np.int64)
    pend_x = np.zeros(0)
    npend = 0

    DECIDES_DISTINCT = True

    def __init__(self, spec) -> None:
        refuse_distinct(spec)
        super().__init__(spec)
        self.means = np.zeros((0, COMPRESSION))
        self.weights = np.zeros((0, COMPRESSION))
        self.lo = np.zeros(0)
        self.hi = np.zeros(0)

    def _grow(self, cap: int) -> None:
        n = len(self.lo)
        for name, fill in (("means", 0.0), ("weights", 0.0)):
            a = np.full((cap, COMPRESSION), fill)
            a[:n] = getattr(self, name)
            setattr(self, name, a)
        lo, hi = np.full(cap, np.inf), np.full(cap, -np.inf)
        lo[:n], hi[:n] = self.lo, self.hi
        self.lo, self.hi = lo, hi

    def _absorb(self, groups: np.ndarray, g_new: np.ndarray, m_new: np.ndarray, w_new: np.ndarray) -> None:
        """Fold items (local group g_new into groups[g_new]) into these groups' centroids."""
        old_w = self.weights[groups]
        rows, cols = np.nonzero(old_w)
        g = np.concatenate((rows, g_new))
        m = np.concatenate((self.means[groups][rows, cols], m_new))
        w = np.concatenate((old_w[rows, cols], w_new))
        self.means[groups], self.weights[groups] = _fold(g, m, w, len(groups))

    def update(self, gids, ng, args, valid) -> None:
        col = args[0]
        keep = col.valid_mask() if valid is None else valid & col.valid_mask()
        x = _as_float(col)
        keep &= ~np.isnan(x)
        if not keep.all():
            x, gids = x[keep], gids[keep]
        if not len(x):
            return
        np.minimum.at(self.lo, gids, x)
        np.maximum.at(self.hi, gids, x)
        self._append(gids, x)
        if self.npend >= max(FOLD_MIN, FOLD_PER_CENTROID * COMPRESSION * ng):
            self.flush()

    def _append(self, g: np.ndarray, x: np.ndarray) -> None:
        end = self.npend + len(x)
        if end > len(self.pend_x):
            cap = max(end, 2 * len(self.pend_x))
            pg, px = np.zeros(cap, np.int64), np.zeros(cap)
            pg[: self.npend], px[: self.npend] = self.pend_g[: self.npend], self.pend_x[: self.npend]
            self.pend_g, self.pend_x = pg, px
        self.pend_g[self.npend:end], self.pend_x[self.npend:end] = g, x
        self.npend = end

    def flush(self) -> None:
        """Fold the pending values into their groups' centroids."""
        if not self.npend:
            return
        g, x = self.pend_g[: self.npend], self.pend_x[: self.npend]
        groups, local = _touched(g, len(self.lo))
        self._absorb(groups, local, x, np.ones(len(x)))
        self.npend = 0

    def merge(self, other, gmap) -> None:
        """Other's unfolded values join ours (renumbered), folded later with
        them; its centroids, if it has any, are folded in now."""
        k = len(gmap)
        self.lo[gmap] = np.minimum(self.lo[gmap], other.lo[:k])
        self.hi[gmap] = np.maximum(self.hi[gmap], other.hi[:k])
        if other.npend:
            self._append(gmap[other.pend_g[: other.npend]], other.pend_x[: other.npend])
        ow = other.weights[:k]
        rows, cols = np.nonzero(ow)
        if len(rows):
            self._absorb(gmap, rows, other.means[:k][rows, cols], ow[rows, cols])
        if self.npend >= max(FOLD_MIN, FOLD_PER_CENTROID * COMPRESSION * len(self.lo)):
            self.flush()

    def settle(self) -> None:
        self.flush()
        self.pend_g, self.pend_x = TDigestState.pend_g, TDigestState.pend_x    # no buffer left behind

    def final(self, ng: int) -> Col:
        self.settle()
        out = [to_bytes(self.means[i], self.weights[i], self.lo[i], self.hi[i]) for i in range(ng)]
        return Col.from_pylist(out, type_oids.BYTEA)


def to_bytes(means: np.ndarray, weights: np.ndarray, lo: float, hi: float) -> bytes | None:
    used = weights > 0
    n = int(used.sum())
    if n == 0:
        return None
    return _HEAD.pack(TAG, n, lo, hi) + means[used].astype("<f8").tobytes() + weights[used].astype("<f8").tobytes()


def from_bytes(b) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(means, weights, min, max) of a digest value; 22023 if it is not one."""
    b = bytes(b)
    try:
        tag, n, lo, hi = _HEAD.unpack_from(b)
    except struct.error:
        tag, n, lo, hi = b"", 0, 0.0, 0.0
    if tag != TAG or len(b) != _HEAD.size + 16 * n:
        raise PgError(INVALID_PARAMETER_VALUE, "invalid tdigest value",
                      hint="A tdigest is the bytea made by dist_agg.")
    arr = np.frombuffer(b, dtype="<f8", offset=_HEAD.size)
    return arr[:n], arr[n:], lo, hi


def _centres(means, weights, lo, hi) -> tuple[np.ndarray, np.ndarray]:
    """Knots (cumulative weight, value): min at 0, each centroid at its
    centre of mass, max at the total weight."""
    cw = np.cumsum(weights) - weights / 2
    return np.concatenate(([0.0], cw, [weights.sum()])), np.concatenate(([lo], means, [hi]))


def quantile(digest, q: float) -> float:
    """The value at quantile q (0..1) by linear interpolation between centroid centres."""
    if not 0.0 <= q <= 1.0:
        raise PgError(INVALID_PARAMETER_VALUE, f"quantile must be between 0 and 1, got {q}")
    cw, vals = _centres(*from_bytes(digest))
    return float(np.interp(q * cw[-1], cw, vals))


def cdf(digest, x: float) -> float:
    """The fraction of the values at or below x."""
    cw, vals = _centres(*from_bytes(digest))
    if x < vals[0]:
        return 0.0
    if x >= vals[-1]:
        return 1.0
    return float(np.interp(x, vals, cw) / cw[-1])


def add_col(digests: Col, values: Col, weights: Col | None) -> Col:
    """PipelineDB's ``dist_add(tdigest, value [, weight])`` per row: the
    digest (a NULL one starts empty) with the value added weight times (once
    without one), compressed as dist_agg's states are; a NULL value or a
    zero weight adds nothing, a negative one is an error (PipelineDB's)."""
    n = len(digests)
    w = np.ones(n, dtype=np.float64)
    ok = values.valid_mask()
    if weights is not None:
        ok = ok & weights.valid_mask()
        w = np.where(ok, weights.data, 0).astype(np.float64)
        if (w < 0).any():
            raise PgError(INVALID_PARAMETER_VALUE, "n must be non-negative")
    ok &= w > 0
    x = _as_float(values)
    g, m, wt = [], [], []
    lo, hi = np.full(n, np.inf), np.full(n, -np.inf)
    for i in np.flatnonzero(digests.valid_mask()).tolist():      # per digest (at most COMPRESSION centroids)
        means, weights_i, lo[i], hi[i] = from_bytes(digests.data[i])
        g.append(np.full(len(means), i, dtype=np.int64))
        m.append(means)
        wt.append(weights_i)
    rows = np.flatnonzero(ok)
    g.append(rows)
    m.append(x[rows])
    wt.append(w[rows])
    np.minimum.at(lo, rows, x[rows])
    np.maximum.at(hi, rows, x[rows])
    means_all, weights_all = _fold(np.concatenate(g), np.concatenate(m), np.concatenate(wt), max(n, 1))
    return Col.from_pylist([to_bytes(means_all[i], weights_all[i], float(lo[i]), float(hi[i])) for i in range(n)],
                           type_oids.BYTEA)
