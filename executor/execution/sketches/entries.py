"""Keyed entries: the vectorised bookkeeping shared by the sketches that keep
values (top-k, sets, buckets, first values).

Why a module of its own: those states keep, per group, a variable number of
entries (a value and its 64-bit hash, plus a count, a bucket or an arrival
order).  A batch appends its rows as flat arrays tagged with their group;
the entries are folded (duplicates of a (group, hash) pair combined, groups
cut to their capacity) by sorting, never per row in Python, when they
outgrow a bound or at a read.  Merging two states appends the other's
entries renumbered, so a merge is as cheap as a batch.
"""
from __future__ import annotations

import copy
import struct
import threading
import time
from typing import Any

import numpy as np

from splitstream.catalog.datatypes.vector import Col, FixedCol
from splitstream.protocol import types as wire_types
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

from ..aggregates import AggState

#: entries kept unfolded before a fold, at least (and a few times the folded size)
FOLD_MIN = 1 << 16


def run_starts(*keys: np.ndarray) -> np.ndarray:
    """Start index of each run of equal key tuples in arrays already sorted by them."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    change = np.zeros(n, bool)
    change[0] = True
    for k in keys:
        change[1:] |= k[1:] != k[:-1]
    return np.flatnonzero(change)


def _bits(a: np.ndarray) -> int:
    return int(a.max()).bit_length() if len(a) else 0


def order_by_group_hash(g: np.ndarray, h: np.ndarray) -> np.ndarray:
    """An order sorting entries by (group, hash).

    Why not ``np.lexsort``: it is several times slower than one argsort of
    a 64-bit key, here the group's bits above the hash's top bits.  Two
    hashes sharing those top bits in one group would sort apart from
    equals, so then (rarely) the exact lexsort is used."""
    gb = _bits(g)
    if gb > 24:
        return np.lexsort((h, g))
    key = (g.astype(np.uint64) << np.uint64(64 - gb)) | (h >> np.uint64(gb)) if gb else h
    order = np.argsort(key)
    ks, hs = key[order], h[order]
    if ((ks[1:] == ks[:-1]) & (hs[1:] != hs[:-1])).any():
        return np.lexsort((h, g))
    return order


def order_by_group_count(g: np.ndarray, c: np.ndarray, h: np.ndarray) -> np.ndarray:
    """An order sorting entries by group, count descending, then hash: one
    argsort of a 64-bit key (group, clamp-free count, the hash's top bits)
    while they fit with 16 hash bits to spare, else ``np.lexsort``.  Counts
    that tie in a group with equal top hash bits may come in either order."""
    gb, cb = _bits(g), _bits(c)
    hb = 64 - gb - cb
    if hb < 16 or (len(c) and int(c.min()) < 0):
        return np.lexsort((h, -c, g))
    top = np.uint64((1 << cb) - 1)
    key = ((g.astype(np.uint64) << np.uint64(64 - gb)) if gb else np.zeros(len(g), np.uint64)) \
        | ((top - c.astype(np.uint64)) << np.uint64(hb)) | (h >> np.uint64(64 - hb))
    return np.argsort(key)


def rank_in_runs(g: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... within each run of equal (sorted) group ids."""
    starts = run_starts(g)
    first = np.zeros(len(g), np.int64)
    first[starts] = starts
    return np.arange(len(g)) - np.maximum.accumulate(first)


def values_of(col: Col, rows: np.ndarray) -> np.ndarray:
    """The values of ``col`` at ``rows`` as a numpy array (numeric as Decimals:
    only the rows kept, never a whole batch)."""
    if isinstance(col, FixedCol):
        return col.take(rows).data
    return col.data[rows]


def constant_int(c: Col, what: str, low: int = 1, high: int = 1 << 31) -> int:
    """An aggregate's parameter (top-k's k, a Bloom filter's n): the same for every row."""
    if c.nulls is not None and c.nulls.any():
        raise PgError(INVALID_PARAMETER_VALUE, f"{what} must not be null")
    vals = np.asarray(c.data)
    n = vals[0]
    if len(vals) > 1 and (vals != n).any():
        raise PgError(INVALID_PARAMETER_VALUE, f"{what} must be the same for every row",
                      hint="Write it as a constant.")
    if not low <= n < high:
        raise PgError(INVALID_PARAMETER_VALUE, f"{what} must be between {low} and {high - 1}")
    return int(n)


_seq_lock = threading.Lock()
_seq_next = 0


def arrival_seq(n: int) -> int:
    """The first of ``n`` consecutive arrival numbers, increasing across
    threads, batches and restarts (wall-clock nanoseconds at least), so that
    "the latest" means the same in a merged state as in a single pass."""
    global _seq_next
    with _seq_lock:
        base = max(_seq_next, time.time_ns())
        _seq_next = base + n
    return base


# ------------------------------------------------------------------ values inside a sketch's bytea

_LEN = struct.Struct("<I")


def pack_texts(oid: int, values: list) -> bytes:
    """Values (not NULL) as their text forms, each length-prefixed."""
    return b"".join(packed_texts(oid, np.array(values, dtype=object) if values else np.zeros(0, object)))


def packed_texts(oid: int, values: np.ndarray) -> list[bytes]:
    """Each value's text form, length-prefixed (integers by numpy, in bulk)."""
    if values.dtype.kind in "iu":
        raw = [t.encode() for t in values.astype(str).tolist()]
    else:
        raw = [wire_types.encode_text(oid, v) for v in values.tolist()]
    return [_LEN.pack(len(t)) + t for t in raw]


def unpack_texts(b: bytes, offset: int, count: int, what: str) -> tuple[list[str], int]:
    """``count`` texts from ``offset``: (texts, offset after them)."""
    out = []
    try:
        for _ in range(count):
            (n,) = _LEN.unpack_from(b, offset)
            offset += 4
            if offset + n > len(b):
                raise struct.error
            out.append(b[offset:offset + n].decode())
            offset += n
    except (struct.error, UnicodeDecodeError):
        raise invalid(what) from None
    return out, offset


def invalid(what: str) -> PgError:
    return PgError(INVALID_PARAMETER_VALUE, f"invalid {what} value",
                   hint=f"A {what} is the bytea made by its aggregate (docs/sketches.md).")


class EntryState(AggState):
    """A state of entries tagged by group: flat arrays ``e_<field>`` (``e_g``
    the group, ``e_h`` the value's hash, then the subclass's fields), of
    which the first ``nent`` are live and the first ``nfold`` folded.

    Subclasses say their fields (``FIELDS``: name -> dtype, ``None`` for
    the values' own dtype), fold entries in ``reduce`` (sorting, never per
    row) and keep any per-group arrays (``_grow``) that ``merge_groups``
    merges.  Appending and merging never fold: a fold runs when the
    unfolded entries outgrow the folded ones (and ``FOLD_MIN``), or at a
    read (``settle``)."""

    FIELDS: dict[str, Any] = {}
    e_g: np.ndarray                   # every state has the group and hash fields
    e_h: np.ndarray

    def __init__(self, spec) -> None:
        super().__init__(spec)
        self.nent = 0
        self.nfold = 0
        for name, dtype in self._fields().items():
            setattr(self, "e_" + name, np.zeros(0, object if dtype is None else dtype))

    def _fields(self) -> dict[str, Any]:
        return {"g": np.int64, "h": np.uint64, **self.FIELDS}

    def entries(self) -> dict[str, np.ndarray]:
        """The live entries' fields (views, not copies)."""
        return {name: getattr(self, "e_" + name)[: self.nent] for name in self._fields()}

    def append(self, new: dict[str, np.ndarray]) -> None:
        """Add entries (every field, equally long); folds when they outgrow the folded ones."""
        k = len(new["g"])
        if not k:
            return
        end = self.nent + k
        for name in self._fields():
            cur = getattr(self, "e_" + name)
            add = new[name]
            if end > len(cur) or (self.nent == 0 and cur.dtype != add.dtype):
                dtype = add.dtype if self.nent == 0 else np.result_type(cur.dtype, add.dtype)
                grown = np.empty(max(end, 2 * len(cur)), dtype=dtype)
                grown[: self.nent] = cur[: self.nent]
                cur = grown
                setattr(self, "e_" + name, cur)
            cur[self.nent:end] = add
        self.nent = end
        if self.nent - self.nfold > max(FOLD_MIN, 2 * self.nfold):
            self.fold()

    def fold(self) -> None:
        """Entries reduced by ``reduce``, stored exactly sized."""
        if self.nent == self.nfold and all(len(getattr(self, "e_" + f)) == self.nent for f in self._fields()):
            return
        out = self.reduce(self.entries()) if self.nent else {}
        for name, dtype in self._fields().items():
            arr = out.get(name)
            if arr is None:
                arr = np.zeros(0, getattr(self, "e_" + name).dtype)
            setattr(self, "e_" + name, np.ascontiguousarray(arr))
        self.nent = self.nfold = len(out.get("g", ()))

    def reduce(self, ent: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def settle(self) -> None:
        self.fold()

    def merge(self, other, gmap) -> None:
        gmap = np.asarray(gmap, dtype=np.int64)
        ent = other.entries()
        if other.nent:
            self.append({**ent, "g": gmap[ent["g"]]})
        self.merge_groups(other, gmap)

    def merge_groups(self, other, gmap: np.ndarray) -> None:
        """Merge the per-group arrays, if the subclass keeps any."""

    def _select(self, keep: np.ndarray, g: np.ndarray) -> dict[str, np.ndarray]:
        ent = self.entries()
        return {**{k: v[keep] for k, v in ent.items()}, "g": g}

    def _group_arrays(self) -> list[str]:
        return [k for k, v in vars(self).items()
                if isinstance(v, np.ndarray) and not k.startswith("e_") and len(v) == self.size]

    def take_groups(self, idx: np.ndarray) -> "EntryState":
        """A copy holding only groups ``idx`` (distinct), as groups 0..len-1."""
        self.fold()
        part = copy.copy(self)
        inv = np.full(max(self.size, int(idx.max()) + 1 if len(idx) else 0), -1, np.int64)
        inv[idx] = np.arange(len(idx))
        new_g = inv[self.e_g[: self.nent]]
        keep = new_g >= 0
        for k, v in self._select(keep, new_g[keep]).items():
            setattr(part, "e_" + k, v)
        part.nent = part.nfold = int(keep.sum())
        for name in self._group_arrays():
            setattr(part, name, getattr(self, name)[idx])
        part.size = len(idx)
        return part

    def truncate_groups(self, m: int) -> None:
        """Groups ``m`` and later dropped."""
        self.fold()
        keep = self.e_g[: self.nent] < m
        for k, v in self._select(keep, self.e_g[: self.nent][keep]).items():
            setattr(self, "e_" + k, v)
        for name in self._group_arrays():
            setattr(self, name, getattr(self, name)[:m].copy())
        self.nent = self.nfold = int(keep.sum())
        self.size = m
