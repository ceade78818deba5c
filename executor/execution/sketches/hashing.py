"""A 64-bit hash of a column's values, computed in numpy.

Why a module of its own: HyperLogLog and count-min sketches need one hash
per row that is the same for equal SQL values in every batch, every thread
and after a restart (a merged state must equal a single pass), so it is a
fixed function of the value, never Python's salted ``hash``.  Integers of
every width hash as int64 (``hll_agg(x::int4)`` and ``hll_agg(x::int8)``
agree); floats by their bits (0.0 and -0.0 as one); strings by their UCS-4
code points, a column of them at a time.
"""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes.vector import Col, FixedCol

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_PRIME = np.uint64(0x100000001B3)
#: strings are hashed this many rows at a time, bounding the fixed-width copy
_CHUNK = 65536


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every input bit reaches every output bit."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def _hash_words(words: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Rows of a 2-D unsigned array folded column by column up to each row's
    length, then mixed with the length: the zero padding of a fixed-width
    copy (its width is the longest string of the chunk) must not change a
    value's hash from one batch to the next."""
    h = np.full(len(words), 0xCBF29CE484222325, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            h = np.where(lens > j, (h ^ words[:, j].astype(np.uint64)) * _PRIME, h)
    return mix64(h ^ lens.astype(np.uint64))


def _words_of(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Strings as rows of code points (bytea: of bytes), zero-padded to the
    longest, and their lengths."""
    if part.dtype == object and len(part) and isinstance(part[0], (bytes, bytearray, memoryview)):
        fixed = part.astype("S")
        width = max(fixed.dtype.itemsize, 1)
        return np.frombuffer(fixed.tobytes(), dtype=np.uint8).reshape(len(part), width), np.char.str_len(fixed)
    fixed = part.astype("U") if part.dtype.kind != "U" else part
    if not fixed.dtype.itemsize:
        return np.zeros((len(part), 1), np.uint32), np.zeros(len(part), np.int64)
    words = np.ascontiguousarray(fixed).view(np.uint32).reshape(len(part), fixed.dtype.itemsize // 4)
    return words, np.char.str_len(fixed)


def _hash_strings(values: np.ndarray) -> np.ndarray:
    out = np.empty(len(values), dtype=np.uint64)
    for a in range(0, len(values), _CHUNK):
        part = values[a:a + _CHUNK]
        out[a:a + len(part)] = _hash_words(*_words_of(part))
    return out


def _hash_fixed(fx: np.ndarray, scale: int) -> np.ndarray:
    """numeric as scaled int64: trailing zeros dropped first, so 1.50 and 1.5
    agree, and a whole number hashes as the integer it equals."""
    fx = fx.astype(np.int64).copy()
    sc = np.full(len(fx), scale, dtype=np.int64)
    for _ in range(scale):
        m = (sc > 0) & (fx % 10 == 0)
        fx[m] //= 10
        sc[m] -= 1
    h = mix64(fx.view(np.uint64))
    frac = sc > 0
    h[frac] = mix64(h[frac] ^ sc[frac].astype(np.uint64))
    return h


def hash64(col: Col) -> np.ndarray:
    """One uint64 per row of ``col`` (NULL rows get a hash too; callers drop them)."""
    if isinstance(col, FixedCol):
        return _hash_fixed(col.fx, col.scale)
    data = col.data
    kind = data.dtype.kind
    if kind in "iub":
        return mix64(data.astype(np.int64).view(np.uint64))
    if kind == "f":
        f = data.astype(np.float64) + 0.0          # -0.0 + 0.0 is 0.0
        f = np.where(np.isnan(f), np.nan, f)       # one NaN bit pattern
        return mix64(f.view(np.uint64) ^ np.uint64(0x5555555555555555))
    if kind in "mM":
        return mix64(data.view(np.int64).view(np.uint64))
    if kind in "US":
        return _hash_strings(data)
    valid = col.valid_mask()
    vals = np.empty(len(data), dtype=object)
    vals[:] = [v if isinstance(v, (str, bytes)) else str(v) for v in data.tolist()]
    vals[~valid] = ""   # other types (arrays, uuids, numeric not held as scaled integers): by their text
    return _hash_strings(vals)

