"""Top-k: ``topk_agg(x, k)``, ``topk_agg(x, k, weight)``, ``topk_values``,
``topk_freqs``, ``topk`` (in FROM) and ``topk_increment``.

Why this algorithm: PipelineDB keeps a filtered space-saving summary of
``3k`` monitored values per group.  Space saving updated one row at a time
does not vectorise and its merge is not defined by the paper, so each group
keeps ``3k`` counters as a Misra-Gries summary in the mergeable form of
Agarwal et al. ("Mergeable summaries", 2012), which is space saving up to a
shift of the counts: a batch's rows are counted exactly per (group, value)
by sorting, added to the group's counters, and when a group holds more than
``3k`` values the ``3k+1``-th largest count (the cut) is subtracted from
the ``3k`` largest, which are kept, and added to the group's error; the
others are dropped.  Merging two states is the same fold over both sets of
counters, their errors added.  A counter c is then a lower bound of its
value's true frequency F and c + error an upper bound, and the error of a
group of N rows (sum of weights) is at most N/(3k+1), whatever the
batches, threads or merges (each cut removes (3k+1) times itself from the
counted mass).  ``topk_freqs`` reports c + error, as space saving does:
``F <= freq <= F + N/(3k+1)``; any value with F > N/(3k+1) is among the
counters, and a group of at most 3k distinct values is counted exactly (its
error is 0, and merged partial states equal one pass).

A sketch value is ``bytea``: ``SSK1``, k, the element type's OID, the
counter capacity, the group's total weight and error (int64), the number
of counters, their lower-bound counts (int64, most frequent first, ties by
hash) and
their values in text form (length-prefixed).
"""
from __future__ import annotations

import struct

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, PgError

from .distinct import refuse_distinct
from .entries import (EntryState, constant_int, invalid, order_by_group_count, order_by_group_hash, packed_texts,
                      rank_in_runs, run_starts, unpack_texts, values_of)
from .hashing import hash64

TAG = b"SSK1"
_HEAD = struct.Struct("<4sIIIqqI")
#: counters kept per value of k, as PipelineDB's DEFAULT_M_FACTOR
M_FACTOR = 3
WHAT = "topk"


def capacity(k: int) -> int:
    return M_FACTOR * k


def fold_counts(g: np.ndarray, h: np.ndarray, c: np.ndarray, cap: int, err: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each (group, hash) once with its counts summed, each group cut to
    ``cap`` counters Misra-Gries style (its cut added to ``err``, in place).
    Returns (index of one entry per kept counter, its count)."""
    order = order_by_group_hash(g, h)
    g, h, c_sorted = g[order], h[order], c[order]
    starts = run_starts(g, h)
    sums = np.add.reduceat(c_sorted, starts) if len(starts) else np.zeros(0, np.int64)
    first, gg, hh = order[starts], g[starts], h[starts]
    by_count = order_by_group_count(gg, sums, hh)
    first, gg, sums = first[by_count], gg[by_count], sums[by_count]
    rank = rank_in_runs(gg)
    over = rank == cap
    if over.any():
        cut = np.zeros(int(gg.max()) + 1, np.int64)
        cut[gg[over]] = sums[over]
        sums = sums - cut[gg]
        err[gg[over]] += cut[gg[over]]
    keep = rank < cap
    return first[keep], sums[keep]


class TopKState(EntryState):
    """Counters per group as entries (value, hash, count), and each group's total weight."""

    DECIDES_DISTINCT = True
    FIELDS = {"c": np.int64, "v": None}

    def __init__(self, spec) -> None:
        refuse_distinct(spec)
        if len(spec.args) == 4:
            raise PgError(FEATURE_NOT_SUPPORTED, "topk_agg(x, k, m, h) is not supported",
                          hint="splitstream keeps 3k mergeable counters per group (docs/sketches.md); "
                               "use topk_agg(x, k) or topk_agg(x, k, weight).")
        super().__init__(spec)
        self.k = 0
        self.total = np.zeros(0, np.int64)
        self.err = np.zeros(0, np.int64)

    def _grow(self, cap: int) -> None:
        self.total = self._grown(self.total, cap, 0)
        self.err = self._grown(self.err, cap, 0)

    def _set_k(self, k: int) -> None:
        if self.k and k != self.k:
            raise PgError(INVALID_PARAMETER_VALUE, "topk_agg k must be the same for every row")
        self.k = k

    def update(self, gids, ng, args, valid) -> None:
        col = args[0]
        self._set_k(constant_int(args[1], "topk_agg k", 1, 1 << 16))
        keep = col.valid_mask() if valid is None else valid & col.valid_mask()
        if len(args) > 2:
            w = args[2]
            keep &= w.valid_mask()
            weights = np.asarray(w.data, dtype=np.int64)
            if (weights[keep] < 0).any():
                raise PgError(INVALID_PARAMETER_VALUE, "topk_agg weight must not be negative")
        else:
            weights = np.ones(len(col), np.int64)
        rows = np.flatnonzero(keep)
        if not len(rows):
            return
        g, h, w_ = gids[rows].astype(np.int64), hash64(col)[rows], weights[rows]
        self.total[:ng] += np.bincount(g, weights=w_, minlength=ng)[:ng].astype(np.int64)
        order = order_by_group_hash(g, h)
        starts = run_starts(g[order], h[order])
        counts = np.add.reduceat(w_[order], starts)
        first = order[starts]
        self.append({"g": g[first], "h": h[first], "c": counts, "v": values_of(col, rows[first])})

    def reduce(self, ent):
        kept, sums = fold_counts(ent["g"], ent["h"], ent["c"], capacity(self.k), self.err)
        return {"g": ent["g"][kept], "h": ent["h"][kept], "c": sums, "v": ent["v"][kept]}

    def merge(self, other, gmap) -> None:
        if other.k:
            self._set_k(other.k)
        super().merge(other, gmap)

    def merge_groups(self, other, gmap) -> None:
        self.total[gmap] += other.total[: len(gmap)]
        self.err[gmap] += other.err[: len(gmap)]

    def final(self, ng: int) -> Col:
        self.fold()
        oid = self.spec.arg_oids[0]
        ent = self.entries()
        live = ent["g"] < ng
        g, c, v = ent["g"][live], ent["c"][live], ent["v"][live]     # folded: by group, count, hash
        texts = packed_texts(oid, v)
        cbytes = c.astype("<i8").tobytes()
        out: list[bytes | None] = [None] * ng
        starts = run_starts(g)
        ends = np.r_[starts[1:], len(g)].astype(np.int64)
        totals, errs, cap = self.total[:ng].tolist(), self.err[:ng].tolist(), capacity(self.k)
        for a, b in zip(starts.tolist(), ends.tolist()):     # per group, at a read
            gi = int(g[a])
            out[gi] = (_HEAD.pack(TAG, self.k, oid, cap, totals[gi], errs[gi], b - a) + cbytes[8 * a:8 * b]
                       + b"".join(texts[a:b]))
        for gi, t in enumerate(totals):
            if out[gi] is None and t:
                out[gi] = _HEAD.pack(TAG, self.k, oid, cap, t, errs[gi], 0)
        return Col.from_pylist(out, type_oids.BYTEA)


class TopK:
    """A parsed sketch value."""

    def __init__(self, b) -> None:
        b = bytes(b)
        try:
            tag, self.k, self.oid, self.cap, self.total, self.err, n = _HEAD.unpack_from(b)
        except struct.error:
            raise invalid(WHAT) from None
        off = _HEAD.size + 8 * n
        if tag != TAG or len(b) < off:
            raise invalid(WHAT)
        self.counts = np.frombuffer(b, dtype="<i8", count=n, offset=_HEAD.size).astype(np.int64)
        self.texts, end = unpack_texts(b, off, n, WHAT)
        if end != len(b):
            raise invalid(WHAT)

    def top(self) -> tuple[list[str], list[int]]:
        """The k most frequent values (text) and their frequencies (upper bounds)."""
        return self.texts[: self.k], (self.counts[: self.k] + self.err).tolist()

    def encode(self) -> bytes:
        return _encode_texts(self.k, self.oid, self.total, self.err, self.counts, self.texts)

    def increment(self, text: str, weight: int) -> bytes:
        """The sketch with ``weight`` more occurrences of the value written ``text``,
        folded as a batch of one value is (at most 3k counters: no row loop)."""
        texts, counts = list(self.texts), self.counts.tolist()
        if text in texts:
            counts[texts.index(text)] += weight
        else:
            texts.append(text)
            counts.append(weight)
        order = sorted(range(len(texts)), key=lambda i: -counts[i])
        err = self.err
        if len(order) > self.cap:
            cut = counts[order[self.cap]]
            order = order[: self.cap]
            counts = [c - cut for c in counts]
            err += cut
        return _encode_texts(self.k, self.oid, self.total + weight, err,
                             np.array([counts[i] for i in order], np.int64), [texts[i] for i in order])


def _encode_texts(k: int, oid: int, total: int, err: int, counts: np.ndarray, texts: list[str]) -> bytes:
    raw = [t.encode() for t in texts]
    return (_HEAD.pack(TAG, k, oid, capacity(k), total, err, len(raw)) + counts.astype("<i8").tobytes()
            + b"".join(struct.pack("<I", len(r)) + r for r in raw))


def _parsed(col: Col) -> list:
    """A TopK per row (None for NULL), each distinct value parsed once."""
    cache: dict[bytes, TopK] = {}
    out: list[TopK | None] = []
    for v in col.to_pylist():
        if v is None:
            out.append(None)
            continue
        key = bytes(v)
        t = cache.get(key)
        if t is None:
            t = cache[key] = TopK(key)
        out.append(t)
    return out


def values_col(sketches: Col, like: Col | None) -> Col:
    """topk_values: the top values as text[], or as the array type of ``like``."""
    texts = [None if t is None else t.top()[0] for t in _parsed(sketches)]
    if like is None or like.oid not in type_oids.ELEMENT_OF:
        return Col.from_pylist(texts, type_oids.ARRAY_OF[type_oids.TEXT])
    elem = type_oids.ELEMENT_OF[like.oid]
    out: list[list | None] = []
    for ts in texts:
        if ts is None:
            out.append(None)
            continue
        out.append(sqltypes.cast_col(Col.from_pylist(ts, type_oids.TEXT), elem, -1, True).to_pylist())
    return Col.from_pylist(out, like.oid)


def freqs_col(sketches: Col) -> Col:
    return Col.from_pylist([None if t is None else t.top()[1] for t in _parsed(sketches)], type_oids.ARRAY_OF[type_oids.INT8])


def increment_col(sketches: Col, values: Col, weights: Col | None) -> Col:
    """topk_increment per row (a sketch and a value; NULL sketch stays NULL)."""
    parsed = _parsed(sketches)
    vals = values.to_pylist()
    ws = [1] * len(vals) if weights is None else weights.to_pylist()
    out: list[bytes | None] = []
    for t, v, w in zip(parsed, vals, ws):
        if t is None or v is None or w is None:
            out.append(None if t is None else t.encode())
            continue
        text = values_text(values.oid, v)
        out.append(t.increment(text, int(w)))
    return Col.from_pylist(out, type_oids.BYTEA)


def values_text(oid: int, v) -> str:
    return packed_texts(oid, np.array([v], dtype=object))[0][4:].decode()


def rows_of(sketch) -> tuple[list[str], list[int]]:
    """``FROM topk(sketch)``: (values, frequencies) of the top k."""
    return ([], []) if sketch is None else TopK(sketch).top()
