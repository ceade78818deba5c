"""Bloom filters: ``bloom_agg``, ``bloom_union_agg``,
``bloom_intersection_agg``, ``bloom_contains``, ``bloom_cardinality``,
``bloom_union``, ``bloom_intersection``, ``bloom_empty``, ``bloom_add``.

Why these sizes: PipelineDB's defaults, a false-positive rate p = 0.02 at
n = 32768 (its ``2 << 14``) values, give ``m = ceil(-n ln p / ln(2)^2)``
bits and ``k = round(ln 2 * m / n)`` hashes; ``bloom_agg(x, p, n)`` chooses
others.  The k bit positions of a value come from its 64-bit hash (the
HyperLogLog one) as ``h1 + i * h2 mod m`` (Kirsch and Mitzenmacher).  A
state is dense bit words per group, and, like HyperLogLog's, a buffer of
bit positions not yet set (a statement's rows touch few of a group's
words); setting bits is an OR, so merged partial states are bit for bit a
single pass.  A filter holding n' values has a false-positive rate of
about ``(1 - exp(-k n'/m))^k``: at most p while n' <= n.

A sketch value is ``bytea``: ``SSF1``, m (uint32), k (uint16), then the
bit words (uint64, little-endian).
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
from .entries import constant_int, invalid
from .hashing import hash64

TAG = b"SSF1"
_HEAD = struct.Struct("<4sIH")
DEFAULT_P = 0.02
DEFAULT_N = 2 << 14
WHAT = "bloom"
#: pending bit positions kept before setting them, at least
FOLD_MIN = 1 << 20


def shape(p: float, n: int) -> tuple[int, int]:
    """(m bits, k hashes) for false-positive rate p at n values."""
    if not 0.0 < p < 1.0 or n < 1:
        raise PgError(INVALID_PARAMETER_VALUE, "bloom filter p must be in (0, 1) and n positive")
    m = int(math.ceil(-n * math.log(p) / math.log(2) ** 2))
    return m, max(1, int(round(math.log(2) * m / n)))


def positions(h: np.ndarray, m: int, k: int) -> np.ndarray:
    """(rows, k) bit positions of each hash."""
    h1 = (h & np.uint64(0xFFFFFFFF)).astype(np.int64)
    h2 = (h >> np.uint64(32)).astype(np.int64) | 1
    return (h1[:, None] + np.arange(k, dtype=np.int64) * h2[:, None]) % m


def expected_fpr(m: int, k: int, n: float) -> float:
    return (1.0 - math.exp(-k * n / m)) ** k


class BloomState(AggState):
    """Bit words per group, (groups, ceil(m/64)) uint64, and bit positions
    not yet set (flat: group * words * 64 + bit)."""

    DECIDES_DISTINCT = True
    pend = np.zeros(0, np.int64)
    npend = 0

    def __init__(self, spec) -> None:
        if spec.func == "bloom_agg":
            refuse_distinct(spec)
        super().__init__(spec)
        self.m, self.k = shape(DEFAULT_P, DEFAULT_N)
        self.words = np.zeros((0, 0), np.uint64)
        self.seen = np.zeros(0, bool)           # a group that took a value (intersection: its first)

    @property
    def width(self) -> int:
        return (self.m + 63) // 64

    def _grow(self, cap: int) -> None:
        self.seen = self._grown(self.seen, cap, False)
        if len(self.words):
            self._dense(cap)

    def _dense(self, rows: int) -> None:
        if self.words.shape != (max(rows, len(self.words)), self.width):
            w = np.zeros((max(rows, len(self.words)), self.width), np.uint64)
            if self.words.shape[1] == self.width:
                w[: len(self.words)] = self.words
            self.words = w

    def _shape_from(self, args) -> None:
        if len(args) == 3:
            p = np.asarray(args[1].data, dtype=np.float64)
            if args[1].nulls is not None or (len(p) > 1 and (p != p[0]).any()):
                raise PgError(INVALID_PARAMETER_VALUE, "bloom_agg p must be the same non-null value for every row")
            m, k = shape(float(p[0]), constant_int(args[2], "bloom_agg n", 1, 1 << 28))
            if (m, k) != (self.m, self.k) and (self.npend or len(self.words)):
                raise PgError(INVALID_PARAMETER_VALUE, "bloom_agg p and n must be the same for every row")
            self.m, self.k = m, k

    def _append(self, flat: np.ndarray) -> None:
        end = self.npend + len(flat)
        if end > len(self.pend):
            grown = np.zeros(max(end, 2 * len(self.pend)), np.int64)
            grown[: self.npend] = self.pend[: self.npend]
            self.pend = grown
        self.pend[self.npend:end] = flat
        self.npend = end
        if self.npend >= max(FOLD_MIN, self.size * self.width // 4):
            self.flush()

    def flush(self) -> None:
        self._dense(self.size)
        if self.npend:
            f = self.pend[: self.npend]
            np.bitwise_or.at(self.words.reshape(-1), f >> 6, np.left_shift(np.uint64(1), (f & 63).astype(np.uint64)))
            self.npend = 0

    def settle(self) -> None:
        self.flush()
        self.pend = BloomState.pend

    def update(self, gids, ng, args, valid) -> None:
        col = args[0]
        keep = col.valid_mask() if valid is None else valid & col.valid_mask()
        rows = np.flatnonzero(keep)
        if self.spec.func != "bloom_agg":
            self._fold_sketches(gids[rows], [bytes(v) for v in col.data[rows].tolist()])
            return
        self._shape_from(args)
        g = gids[rows].astype(np.int64)
        self.seen[g] = True
        pos = positions(hash64(col)[rows], self.m, self.k)
        self._append(((g * (self.width * 64))[:, None] + pos).ravel())

    def _fold_sketches(self, g: np.ndarray, values: list[bytes]) -> None:
        """bloom_union_agg / bloom_intersection_agg: OR / AND of filters (per filter, not per row counted)."""
        if not values:
            return
        m, k, words = from_bytes_many(values)
        if self.npend or self.seen.any():
            if (m, k) != (self.m, self.k):
                raise PgError(INVALID_PARAMETER_VALUE, "bloom filters of different sizes cannot be combined")
        self.m, self.k = m, k
        self.flush()
        self._combine(g, words, np.ones(len(g), bool))

    def _combine(self, g: np.ndarray, words: np.ndarray, has: np.ndarray) -> None:
        """Fold filters ``words`` (rows, width) into groups ``g`` (where ``has``)."""
        if self.spec.func == "bloom_intersection_agg":
            for gi, w, h in zip(g.tolist(), words, has.tolist()):      # per filter
                if h:
                    self.words[gi] = (self.words[gi] & w) if self.seen[gi] else w
                    self.seen[gi] = True
            return
        np.bitwise_or.at(self.words, g[has], words[has])
        self.seen[g[has]] = True

    def merge(self, other, gmap) -> None:
        gmap = np.asarray(gmap, dtype=np.int64)
        k = len(gmap)
        if other.seen[:k].any() and (other.m, other.k) != (self.m, self.k):
            if self.seen.any() or self.npend:
                raise PgError(INVALID_PARAMETER_VALUE, "bloom filters of different sizes cannot be combined")
            self.m, self.k = other.m, other.k
            self.words = np.zeros((0, 0), np.uint64)
        if len(other.words):
            self.flush()
            self._combine(gmap, other.words[:k], other.seen[:k])
        if other.npend:
            f = other.pend[: other.npend]
            stride = other.width * 64
            self._append(gmap[f // stride] * stride + f % stride)
            self.seen[gmap[other.seen[:k]]] = True

    def final(self, ng: int) -> Col:
        self.settle()
        self._dense(ng)
        head = _HEAD.pack(TAG, self.m, self.k)
        out = [head + self.words[i].astype("<u8").tobytes() if s else None
               for i, s in enumerate(self.seen[:ng].tolist())]
        return Col.from_pylist(out, type_oids.BYTEA)


def from_bytes(b) -> tuple[int, int, np.ndarray]:
    b = bytes(b)
    try:
        tag, m, k = _HEAD.unpack_from(b)
    except struct.error:
        raise invalid(WHAT) from None
    if tag != TAG or m < 1 or k < 1 or len(b) != _HEAD.size + 8 * ((m + 63) // 64):
        raise invalid(WHAT)
    return m, k, np.frombuffer(b, dtype="<u8", offset=_HEAD.size).astype(np.uint64)


def from_bytes_many(values: list[bytes]) -> tuple[int, int, np.ndarray]:
    parsed = [from_bytes(v) for v in values]
    if len({(m, k) for m, k, _ in parsed}) != 1:
        raise PgError(INVALID_PARAMETER_VALUE, "bloom filters of different sizes cannot be combined")
    return parsed[0][0], parsed[0][1], np.stack([w for _, _, w in parsed])


def to_bytes(m: int, k: int, words: np.ndarray) -> bytes:
    return _HEAD.pack(TAG, m, k) + words.astype("<u8").tobytes()


def empty(p: float = DEFAULT_P, n: int = DEFAULT_N) -> bytes:
    m, k = shape(p, n)
    return to_bytes(m, k, np.zeros((m + 63) // 64, np.uint64))


def contains_col(filters: Col, values: Col) -> Col:
    """bloom_contains per row; each distinct filter parsed once."""
    n = len(filters)
    ok = filters.valid_mask() & values.valid_mask()
    out = np.zeros(n, bool)
    h = hash64(values)
    rows_by_filter: dict[bytes, list[int]] = {}
    for i in np.flatnonzero(ok).tolist():
        rows_by_filter.setdefault(bytes(filters.data[i]), []).append(i)
    for key, rows in rows_by_filter.items():
        m, k, words = from_bytes(key)
        idx = np.array(rows, np.int64)
        pos = positions(h[idx], m, k)
        bits = (words[pos >> 6] >> (pos & 63).astype(np.uint64)) & np.uint64(1)
        out[idx] = bits.all(axis=1)
    return Col(out, None if ok.all() else ~ok, type_oids.BOOL)


def cardinality(b) -> int:
    """Swamidass and Baldi's estimate of the values added: -m/k ln(1 - X/m)."""
    m, k, words = from_bytes(b)
    x = int(np.unpackbits(words.view(np.uint8)).sum())
    if x >= m:
        return int(m)       # saturated: every bit set
    return int(round(-m * math.log(1.0 - x / m) / k))


def add(b, value: Col) -> bytes:
    """bloom_add: the filter with one value more."""
    m, k, words = from_bytes(b)
    words = words.copy()
    for p in positions(hash64(value), m, k).ravel().tolist():
        words[p >> 6] |= np.uint64(1) << np.uint64(p & 63)
    return to_bytes(m, k, words)


def combine(values: list, how: str) -> bytes | None:
    """bloom_union / bloom_intersection of the non-NULL filters of one call."""
    present = [bytes(v) for v in values if v is not None]
    if not present:
        return None
    m, k, words = from_bytes_many(present)
    out = np.bitwise_or.reduce(words, axis=0) if how == "union" else np.bitwise_and.reduce(words, axis=0)
    return to_bytes(m, k, out)
