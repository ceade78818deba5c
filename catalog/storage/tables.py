"""Columnar table storage with snapshot versions.

A table's contents at one point in time is a :class:`TableVersion`: a tuple
of chunk views.  Chunks are preallocated numpy arrays that only ever grow at
the end; a view records how many rows of its chunk it sees and which are
deleted.  Appending writes past every published view's length, so readers of
older versions are undisturbed and no copy is needed: a commit just
publishes a new version object.  Only one writer exists at a time (the
database's writer lock), which is what makes in-place appends safe.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..datatypes import sqltypes
from ..datatypes.vector import Batch, Col

MIN_CHUNK = 1024
MAX_CHUNK = 1 << 20


class Chunk:
    """Preallocated column arrays; rows [0, filled) hold data."""

    __slots__ = ("cols", "nulls", "capacity", "filled")

    def __init__(self, oids: list[int], capacity: int) -> None:
        self.cols = [sqltypes.empty(o, capacity) for o in oids]
        self.nulls = [np.zeros(capacity, dtype=bool) for _ in oids]
        self.capacity = capacity
        self.filled = 0


class ChunkView(NamedTuple):
    chunk: Chunk
    n: int
    deleted: np.ndarray | None   # bool[n] or None


class TableVersion:
    """An immutable snapshot of a table's rows."""

    __slots__ = ("oids", "views", "_cache", "n_total")

    def __init__(self, oids: list[int], views: tuple[ChunkView, ...] = ()) -> None:
        self.oids = list(oids)
        self.views = views
        self._cache: tuple[Batch, np.ndarray] | None = None
        self.n_total = sum(v.n for v in views)

    # ------------------------------------------------------------ reading
    def n_live(self) -> int:
        return sum(v.n - (int(v.deleted.sum()) if v.deleted is not None else 0) for v in self.views)

    def scan(self) -> tuple[Batch, np.ndarray]:
        """All live rows, and their positions (stable row ids for DML)."""
        if self._cache is not None:
            return self._cache
        cols: list[list[Col]] = [[] for _ in self.oids]
        positions = []
        base = 0
        for v in self.views:
            live = None if v.deleted is None else ~v.deleted
            for i, o in enumerate(self.oids):
                c = Col(v.chunk.cols[i][: v.n], v.chunk.nulls[i][: v.n], o)
                cols[i].append(c if live is None else c.filter(live))
            pos = np.arange(base, base + v.n, dtype=np.int64)
            positions.append(pos if live is None else pos[live])
            base += v.n
        if not self.views:
            batch = Batch.empty(self.oids)
            result = (batch, np.zeros(0, dtype=np.int64))
        else:
            merged = [Col.concat(cs) for cs in cols]
            # Concatenation of a single chunk returns views into the chunk; copy
            # so later in-place appends can never leak into this snapshot's arrays.
            merged = [Col(c.data[: len(c.data)], c.nulls, c.oid) for c in merged]
            n = len(merged[0].data) if merged else sum(len(p) for p in positions)
            result = (Batch(merged, n), np.concatenate(positions))
        self._cache = result
        return result

    def take_positions(self, ids: np.ndarray) -> list[Col]:
        """The live rows at sorted positions ``ids``, as columns: a sample's
        rows gathered from the chunks without scanning the table (the
        statistics sample and the planner's sample both read this way)."""
        bases = np.cumsum([0] + [v.n for v in self.views])
        which = np.searchsorted(bases, ids, side="right") - 1
        data: list[list[np.ndarray]] = [[] for _ in self.oids]
        nulls: list[list[np.ndarray]] = [[] for _ in self.oids]
        for k in np.unique(which).tolist():
            v = self.views[k]
            off = ids[which == k] - bases[k]
            if v.deleted is not None:
                off = off[~v.deleted[off]]
            for i in range(len(self.oids)):
                data[i].append(v.chunk.cols[i][off])
                nulls[i].append(v.chunk.nulls[i][off])
        out = []
        for i, oid in enumerate(self.oids):
            dtype = self.views[0].chunk.cols[i].dtype if self.views else object
            d = np.concatenate(data[i]) if data[i] else np.zeros(0, dtype=dtype)
            m = np.concatenate(nulls[i]) if nulls[i] else np.zeros(0, dtype=bool)
            out.append(Col(d, m, oid))
        return out

    # ------------------------------------------------------------ writing
    def append(self, cols: list[Col]) -> "TableVersion":
        """A new version with ``cols`` appended (caller holds the writer lock)."""
        return self.append_arrays([(c.data, c.nulls) for c in cols])

    def append_arrays(self, cols: list[tuple[np.ndarray, np.ndarray | None]]) -> "TableVersion":
        """:meth:`append` for (values, NULL mask or None) pairs, as the WAL
        holds them: a one-row INSERT builds no column objects."""
        n = len(cols[0][0]) if cols else 0
        if n == 0:
            return self
        views = list(self.views)
        if views:
            last = views[-1]
            ch = last.chunk
            if last.n + n <= ch.capacity and ch.filled >= last.n:
                self._write(ch, last.n, cols)
                ch.filled = last.n + n
                deleted = None if last.deleted is None else np.concatenate([last.deleted, np.zeros(n, bool)])
                views[-1] = ChunkView(ch, last.n + n, deleted)
                return TableVersion(self.oids, tuple(views))
        cap = min(MAX_CHUNK, max(MIN_CHUNK, self.n_total))
        cap = max(cap, n)
        ch = Chunk(self.oids, cap)
        self._write(ch, 0, cols)
        ch.filled = n
        views.append(ChunkView(ch, n, None))
        return TableVersion(self.oids, tuple(views))

    @staticmethod
    def _write(ch: Chunk, at: int, cols: list[tuple[np.ndarray, np.ndarray | None]]) -> None:
        n = len(cols[0][0])
        for i, (data, mask) in enumerate(cols):
            if ch.cols[i].dtype != data.dtype:
                data = data.astype(ch.cols[i].dtype)
            ch.cols[i][at : at + n] = data
            # slots past the published rows may hold a rolled-back append's flags
            ch.nulls[i][at : at + n] = False if mask is None else mask

    def delete(self, positions: np.ndarray) -> "TableVersion":
        if len(positions) == 0:
            return self
        positions = np.sort(np.asarray(positions, dtype=np.int64))
        views = list(self.views)
        base = 0
        for k, v in enumerate(views):
            lo = np.searchsorted(positions, base)
            hi = np.searchsorted(positions, base + v.n)
            if hi > lo:
                d = np.zeros(v.n, bool) if v.deleted is None else v.deleted.copy()
                d[positions[lo:hi] - base] = True
                views[k] = ChunkView(v.chunk, v.n, d)
            base += v.n
        return TableVersion(self.oids, tuple(views))

    def compacted(self) -> "TableVersion":
        """One fresh chunk with only live rows (checkpoints, ALTER TABLE)."""
        batch, _ = self.scan()
        return TableVersion(self.oids).append(batch.cols) if batch.n else TableVersion(self.oids)

    def with_columns(self, oids: list[int], cols: list[Col]) -> "TableVersion":
        """A compacted version with a new column layout (ALTER TABLE)."""
        tv = TableVersion(oids)
        return tv.append(cols) if cols and len(cols[0]) else tv

    def memory_bytes(self) -> int:
        seen = set()
        total = 0
        for v in self.views:
            if id(v.chunk) in seen:
                continue
            seen.add(id(v.chunk))
            total += sum(a.nbytes for a in v.chunk.cols) + sum(a.nbytes for a in v.chunk.nulls)
        return total
