"""Exact sets: ``set_agg``, ``exact_count_distinct``, ``set_cardinality``,
and ``bucket_agg`` with ``bucket_ids``, ``bucket_cardinalities`` and
``bucket_cardinality``.

Why entries: a set is each group's distinct values, kept as (group, hash,
value) entries, deduplicated by sorting on (group, hash) per batch and per
fold; a merge appends the other state's entries, so merged partial states
hold exactly the single pass's set.  Integers, floats, timestamps and dates
hash by a bijection of their 64 bits (``hashing.mix64``), so for them the
sets and counts are exact; text, numeric and other values are told apart by
a 64-bit hash, so two of them are taken as one only if their hashes
collide (about d^2 / 2^65 for d distinct values: 3e-8 at a million).

``bucket_agg(x, bucket [, ts])`` keeps each distinct value in the bucket it
was last seen with: the latest ``ts``, or without ``ts`` the latest
arrival (arrival numbers increase across threads and restarts,
``entries.arrival_seq``).  Its value is ``bytea``: ``SSU1``, the number of
buckets, their ids (int16, ascending) and how many distinct values each
holds (int64).
"""
from __future__ import annotations

import struct

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

from ..operators import sort_keys_for
from .entries import EntryState, arrival_seq, invalid, order_by_group_hash, run_starts, values_of
from .hashing import hash64

BUCKET_TAG = b"SSU1"
_BHEAD = struct.Struct("<4sI")


def first_per_key(g: np.ndarray, h: np.ndarray, *before: np.ndarray) -> np.ndarray:
    """Index of one entry per (group, hash): the least by ``before`` (keys, most
    significant last), else the first."""
    order = np.lexsort((*before, h, g)) if before else order_by_group_hash(g, h)
    return order[run_starts(g[order], h[order])]


def sorted_by_value(g: np.ndarray, values: np.ndarray, oid: int) -> np.ndarray:
    """Order of entries by (group, value), values in PostgreSQL's order."""
    key = sort_keys_for(Col(values, None, oid), False, None)
    return np.lexsort((key, g))


def split_groups(g: np.ndarray, ng: int) -> tuple[list[int], list[int], list[int]]:
    """(group, start, end) of each run of sorted group ids below ``ng``."""
    starts = run_starts(g)
    ends = np.r_[starts[1:], len(g)].astype(np.int64)
    return g[starts].tolist(), starts.tolist(), ends.tolist()


class SetState(EntryState):
    """set_agg and exact_count_distinct: each group's distinct values."""

    DECIDES_DISTINCT = True           # a set is distinct anyway
    FIELDS = {"v": None}

    def _grow(self, cap: int) -> None:
        pass

    def update(self, gids, ng, args, valid) -> None:
        col = args[0]
        keep = col.valid_mask() if valid is None else valid & col.valid_mask()
        rows = np.flatnonzero(keep)
        if not len(rows):
            return
        g, h = gids[rows].astype(np.int64), hash64(col)[rows]
        first = first_per_key(g, h)
        self.append({"g": g[first], "h": h[first], "v": values_of(col, rows[first])})

    def reduce(self, ent):
        first = first_per_key(ent["g"], ent["h"])
        return {k: v[first] for k, v in ent.items()}

    def final(self, ng: int) -> Col:
        self.fold()
        ent = self.entries()
        live = ent["g"] < ng
        g = ent["g"][live]
        if self.spec.func == "exact_count_distinct":
            return Col(np.bincount(g, minlength=ng)[:ng].astype(np.int64), None, type_oids.INT8)
        oid = self.spec.arg_oids[0]
        order = sorted_by_value(g, ent["v"][live], oid)
        g, v = g[order], ent["v"][live][order]
        out: list[list | None] = [None] * ng
        for gi, a, b in zip(*split_groups(g, ng)):       # per group, at a read
            out[gi] = Col(v[a:b], None, oid).to_pylist()
        return Col.from_pylist(out, type_oids.ARRAY_OF[oid])


class BucketState(EntryState):
    """bucket_agg: per group, each distinct value's bucket and when it was set."""

    DECIDES_DISTINCT = True
    FIELDS = {"b": np.int16, "s": np.int64}

    def _grow(self, cap: int) -> None:
        pass

    def update(self, gids, ng, args, valid) -> None:
        col, bucket = args[0], args[1]
        keep = col.valid_mask() & bucket.valid_mask()
        if valid is not None:
            keep &= valid
        if len(args) > 2:
            keep &= args[2].valid_mask()
        rows = np.flatnonzero(keep)
        if not len(rows):
            return
        if len(args) > 2:
            seq = np.asarray(args[2].data).view(np.int64)[rows]
        else:
            seq = arrival_seq(len(rows)) + np.arange(len(rows), dtype=np.int64)
        g, h = gids[rows].astype(np.int64), hash64(col)[rows]
        b = np.asarray(bucket.data)[rows].astype(np.int16)
        latest = first_per_key(g, h, -b.astype(np.int64), -seq)
        self.append({"g": g[latest], "h": h[latest], "b": b[latest], "s": seq[latest]})

    def reduce(self, ent):
        latest = first_per_key(ent["g"], ent["h"], -ent["b"].astype(np.int64), -ent["s"])
        return {k: v[latest] for k, v in ent.items()}

    def final(self, ng: int) -> Col:
        self.fold()
        ent = self.entries()
        live = ent["g"] < ng
        g, b = ent["g"][live], ent["b"][live]
        order = np.lexsort((b, g))
        g, b = g[order], b[order]
        out: list[bytes | None] = [None] * ng
        for gi, a, e in zip(*split_groups(g, ng)):
            ids, counts = np.unique(b[a:e], return_counts=True)
            out[gi] = _BHEAD.pack(BUCKET_TAG, len(ids)) + ids.astype("<i2").tobytes() + counts.astype("<i8").tobytes()
        return Col.from_pylist(out, type_oids.BYTEA)


def buckets_of(value) -> tuple[np.ndarray, np.ndarray]:
    """(bucket ids, distinct values per bucket) of a bucket_agg value."""
    b = bytes(value)
    try:
        tag, n = _BHEAD.unpack_from(b)
    except struct.error:
        raise invalid("bucket_agg") from None
    if tag != BUCKET_TAG or len(b) != _BHEAD.size + 10 * n:
        raise invalid("bucket_agg")
    ids = np.frombuffer(b, dtype="<i2", count=n, offset=_BHEAD.size).astype(np.int16)
    counts = np.frombuffer(b, dtype="<i8", count=n, offset=_BHEAD.size + 2 * n).astype(np.int64)
    return ids, counts


def bucket_agg_result(arg_oids: list[int]) -> int:
    if len(arg_oids) not in (2, 3) or arg_oids[1] not in (type_oids.INT2, type_oids.UNKNOWN):
        return -1
    if len(arg_oids) == 3 and arg_oids[2] not in (type_oids.TIMESTAMPTZ, type_oids.UNKNOWN):
        return -1
    return type_oids.BYTEA


def set_cardinality(values: list) -> int:
    """set_cardinality(array): the array's distinct elements (a set_agg value's length)."""
    if any(isinstance(v, list) for v in values):
        raise PgError(INVALID_PARAMETER_VALUE, "set_cardinality takes a one-dimensional array")
    return len(set(values))
