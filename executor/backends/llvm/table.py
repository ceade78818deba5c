"""Native aggregation state for compiled kernels, and its conversion into a
:class:`GroupTable`.

A :class:`NativeTable` is thread-local.  It starts *generic* (an open-
addressing hash table: ``slots`` maps a probe position to a dense group id;
keys, NULL bits and aggregate states are arrays indexed by group id) and can
be *specialised* into a dense array indexed by ``key - min`` once profiling
shows a small key range.  A range-guard failure *deoptimises*: the dense
state is migrated into a fresh hash table and the kernel resumes at the row
that failed.

Design choice (documented in executor/backends/llvm/README.md): kernels keep their own native
table and the pipeline converts it into a ``GroupTable`` at merge time
(``to_group_table``).  Merges, upper pipelines and checkpoints therefore
only ever see ``GroupTable`` objects with the exact same states the vector
backend produces.
"""
from __future__ import annotations

import ctypes
import struct

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids

from . import jit
from .codegen import Layout, Shape

NP = {"i2": np.int16, "i4": np.int32, "i8": np.int64, "f4": np.float32, "f8": np.float64}

MAX_DENSE = 1 << 22          # slots
DENSE_FACTOR = 8             # dense array at most this many times the observed groups (or 4096)
PROFILE_ROWS = 2048          # rows a generic table sees before it may specialise
MAX_SPECIALISE = 4           # re-specialisations after deopts before we stay generic


def double_bits(v: float) -> int:
    return struct.unpack("<q", struct.pack("<d", float(v)))[0]


def _pow2(n: int) -> int:
    p = 16
    while p < n:
        p <<= 1
    return p


#: panes a dense table keeps room for above the newest pane it profiled
PANE_AHEAD = 4


def headroom(mins: list[int], maxs: list[int], panes: tuple = ()) -> tuple[list[int], list[int]]:
    """Dense (min, range) per key from a profiled [min, max], with 1/16 of the
    range of headroom on each side: a key just below the smallest seen (ids
    from 1 when the profile saw 2) must not deoptimise the table any more
    than one just above the largest.  A pane index (``panes[j]`` not None)
    only moves forward with event time: it gets PANE_AHEAD panes above the
    newest instead, so the next windows do not deoptimise the table."""
    lows, ranges = [], []
    for j, (lo, hi) in enumerate(zip(mins, maxs)):
        if j < len(panes) and panes[j] is not None:
            lows.append(lo)
            ranges.append(hi - lo + PANE_AHEAD)
            continue
        pad = (hi - lo) // 16
        lows.append(lo - pad)
        ranges.append(hi - lo + 2 * pad)
    return lows, ranges


#: a sum of float8 values can overflow only once their magnitudes add up to this
FLOAT_LIMIT = float(np.finfo(np.float64).max)


def float_room(*bounds: float) -> bool:
    """Can float sums bounded by ``bounds`` (magnitudes added) be added with
    no check?  PostgreSQL's float8pl fails with 22003 when finite values add
    up to an infinity; the kernels add unchecked, so they take only inputs
    that cannot."""
    total = 0.0
    for b in bounds:
        total += b
    return total < FLOAT_LIMIT


def float_bound(cols: list, nulls: list, slots) -> float:
    """An upper bound of what the float8 columns ``slots`` add to any
    group's sum: of the sum of their finite |values| (NULL rows left out;
    an infinite input makes its group's sum infinite: no overflow).  A NaN
    makes both reductions NaN, so it takes the exact branch."""
    total = 0.0
    for k in slots:
        x = cols[k]
        if not len(x):
            continue
        # rows x the largest magnitude: two reductions, no temporary array (the insert path)
        s = len(x) * max(-float(x.min()), float(x.max()))
        if not s < FLOAT_LIMIT:               # rare: NULL rows and infinities left out, magnitudes added
            keep = np.isfinite(x)
            if nulls[k] is not None:
                keep &= ~nulls[k]
            with np.errstate(over="ignore"):
                s = float(np.abs(x[keep]).sum())
        total += s
    return total


class NativeTable:
    def __init__(self, shape: Shape, derived: tuple = (), panes: tuple = ()) -> None:
        self.shape = shape
        #: the finite |inputs| of float8 sums this table took: no group's sum can exceed it, so
        #: the kernel's unchecked fadd cannot overflow while it stays below FLOAT_LIMIT (float_room)
        self.fbound = 0.0
        #: group keys not in the kernel: (position among the keys, native key index, microseconds added)
        self.derived = derived
        #: per native key, None or (slide, base): a pane index the kernel computed, whose bound in
        #: microseconds is index * slide + base (``Shape.panes``)
        self.panes = panes
        self.lay = Layout(shape)
        self.nk = len(shape.keys)
        self.variant = "generic"
        self.deopts = 0
        self.specialisations = 0
        self.rows_since_profile = 0
        self.profile_after = PROFILE_ROWS
        self.layout_version = 0      # bumped whenever the state arrays are reallocated
        self.touched = False         # a kernel ran on it since it was created or reset
        self._args: tuple[list[int], int, np.ndarray] | None = None
        self._init_generic(64)

    # ------------------------------------------------------------ allocation
    def _agg_arrays(self, n: int) -> list:
        out: list[list[np.ndarray]] = []
        for kind, slot in self.shape.aggs:
            if kind == "star":
                out.append([])
            elif kind == "count":                    # NULL count (count = rows - nulls)
                out.append([np.zeros(n, np.int64)])
            elif kind == "sum_i":                    # sum, NULL count
                out.append([np.zeros(n, np.int64), np.zeros(n, np.int64)])
            elif kind == "sum_f":
                out.append([np.zeros(n, np.float64), np.zeros(n, np.int64)])
            elif kind == "sum_128":
                out.append([np.zeros(2 * n, np.int64), np.zeros(n, np.int64)])
            else:
                out.append([np.zeros(n, NP[self.shape.inputs[slot]]), np.zeros(n, np.uint8)])
        return out

    def _init_generic(self, cap: int) -> None:
        cap = _pow2(cap)
        self.layout_version += 1
        self.variant = "generic"
        self.cap = cap
        self.gcap = cap // 2
        self.slots = np.full(cap, -1, np.int32)
        self.gk = [np.zeros(self.gcap, np.int64), np.zeros(self.gcap, np.int64)]
        self.gflags = np.zeros(self.gcap, np.uint8)
        self.ctl = np.array([0, self.gcap], np.int64)
        self.rows = np.zeros(self.gcap, np.int64)
        self.aggs = self._agg_arrays(self.gcap)

    def _init_dense(self, mins: list[int], ranges: list[int]) -> None:
        self.layout_version += 1
        self.variant = "specialised"
        self.mins = (mins + [0, 0])[:2]
        self.ranges = (ranges + [0, 0])[:2]
        self.stride2 = self.ranges[1] + 2
        self.size = self.dense_size(self.nk, self.ranges)
        self.rows = np.zeros(self.size, np.int64)
        self.aggs = self._agg_arrays(self.size)

    @staticmethod
    def dense_size(nk: int, ranges: list[int]) -> int:
        if nk == 0:
            return 1
        if nk == 1:
            return ranges[0] + 2
        return (ranges[0] + 2) * (ranges[1] + 2)

    # ------------------------------------------------------------ kernel args
    def table_args(self) -> list[int]:
        if self.variant == "generic":
            head = [self.slots.ctypes.data, self.cap - 1, self.ctl.ctypes.data, self.gk[0].ctypes.data,
                    self.gk[1].ctypes.data, self.gflags.ctypes.data]
        else:
            head = [self.mins[0], self.mins[1], self.ranges[0], self.ranges[1], self.stride2, 0]
        out = head + [self.rows.ctypes.data]
        for arrs in self.aggs:
            out += [a.ctypes.data for a in arrs]
        return out

    @property
    def ngroups(self) -> int:
        if self.variant == "generic":
            return int(self.ctl[0])
        return int(np.count_nonzero(self.rows))

    # ------------------------------------------------------------ running
    def args_for(self, base: list[int]) -> np.ndarray:
        """The kernel's argument array for ``base`` (one batch) and this table's
        current layout; built once per batch, not once per morsel."""
        cached = self._args
        if cached is not None and cached[0] is base and cached[1] == self.layout_version:
            return cached[2]
        args = np.array(base + self.table_args(), dtype=np.int64)
        self._args = (base, self.layout_version, args)
        return args

    def run(self, module, base: list[int], start: int, end: int, events: list | None = None) -> None:
        """Apply rows [start, end) with grow / deoptimise loops; exact."""
        self.touched = True
        i = start
        while i < end:
            args = self.args_for(base)
            fn = module.spec if self.variant == "specialised" else module.gen
            r = fn(args.ctypes.data, i, end)
            if r >= end:
                break
            if self.variant == "specialised":
                if not self.advance_panes(base, r):
                    self.deoptimise()
                    if events is not None:
                        events.append(("deopt", r))
            else:
                self.grow()
            i = r
        self.rows_since_profile += end - start

    def run_driven(self, module, base: list[int], ctl: np.ndarray) -> None:
        """Take morsels of a shared batch (``ctl``: next, end, step) in native
        code until none is left; a guard failure or a full table returns here
        to deoptimise / grow, finish that morsel, and go on."""
        drive = jit.driver()
        self.touched = True
        out = np.zeros(2, np.int64)
        while True:
            args = self.args_for(base)
            addr = module.address("spec" if self.variant == "specialised" else "gen")
            r = drive(addr, args.ctypes.data, ctl.ctypes.data, out.ctypes.data)
            if r < 0:
                break
            if self.variant == "specialised":
                if not self.advance_panes(base, r):
                    self.deoptimise()
            else:
                self.grow()
            self.run(module, base, r, int(out[0]))
            self.rows_since_profile -= int(out[0]) - r      # counted by run and by the driver
        self.rows_since_profile += int(out[1])

    def advance_panes(self, base: list[int], r: int) -> bool:
        """Row ``r`` failed the dense guard: when only pane keys (event time
        moving on) passed the top of their range, widen it to that pane plus
        PANE_AHEAD and stay dense (groups migrate exactly, O(groups) once per
        new window); False when it would not stay dense, or another key (or
        a pane below the range: a late row) failed -- then the caller
        deoptimises as for any guard failure."""
        if not any(p is not None for p in self.panes):
            return False
        ranges = list(self.ranges)
        grew = False
        for j in range(self.nk):
            v = self._native_key_at(base, j, r)
            if v is None or 0 <= v - self.mins[j] <= ranges[j]:
                continue
            if self.shape.pane(j) is None or v < self.mins[j]:
                return False
            ranges[j] = max(v - self.mins[j] + PANE_AHEAD, 2 * ranges[j])    # doubling: O(log) migrations
            grew = True
        if not grew:
            return False
        k1, k2, flags, rows, aggs = self.groups()
        limit = min(MAX_DENSE, max(DENSE_FACTOR * len(rows), 4096))
        if self.dense_size(self.nk, ranges) > limit:
            return False
        self._dense_from(self.mins[: self.nk], ranges[: self.nk], [k1, k2], flags, rows, aggs)   # exact
        return True

    def _native_key_at(self, base: list[int], j: int, r: int) -> int | None:
        """Key ``j`` of row ``r`` as the kernel computes it (None: NULL), read
        from the batch's columns through the kernel's argument addresses."""
        sh, lay = self.shape, self.lay
        slot = sh.keys[j]
        nm = base[lay.nulls[slot]]
        if nm and ctypes.c_int8.from_address(nm + r).value:       # a mask the module reads
            return None
        v = _read(base[lay.data[slot]], sh.inputs[slot], r)
        pane = sh.pane(j)
        if pane is None:
            return v
        slide, origin, hop = pane
        q = (v - origin) // slide
        return q if hop < 0 else q - _read(base[lay.data[hop]], sh.inputs[hop], r)

    def grow(self) -> None:
        m = int(self.ctl[0])
        newcap = self.cap * 2
        old = (self.gk, self.gflags, self.rows, self.aggs)
        self._init_generic(newcap)
        self._copy_groups_in(m, old[0][0][:m], old[0][1][:m], old[1][:m], old[2][:m], old[3])

    def _copy_groups_in(self, m, k1, k2, flags, rows, aggs) -> None:
        """Fill an empty generic table with m groups (arrays by group id) and rehash."""
        while m > self.gcap:
            self._init_generic(self.cap * 2)
        self.gk[0][:m] = k1
        self.gk[1][:m] = k2
        self.gflags[:m] = flags
        self.rows[:m] = rows
        for dst, src, (kind, _s) in zip(self.aggs, aggs, self.shape.aggs):
            for j, (d, s) in enumerate(zip(dst, src)):
                if kind == "sum_128" and j == 0:
                    d[: 2 * m] = s[: 2 * m]
                else:
                    d[:m] = s[:m]
        self.ctl[0] = m
        jit.runtime()(self.slots.ctypes.data, self.cap - 1, self.gk[0].ctypes.data, self.gk[1].ctypes.data,
                      self.gflags.ctypes.data, m)

    # ------------------------------------------------------------ keys
    def _occupied(self) -> np.ndarray:
        """The dense slots holding a group.  Through a boolean mask: numpy's
        nonzero over int64 branches per element and took 4x as long (the
        larger part of exporting a COPY's delta)."""
        return np.flatnonzero(self.rows != 0)

    def _dense_keys(self, occ: np.ndarray):
        """slot indices -> (k1, k2, null flags) arrays (one divmod; the NULL
        slot is looked for, not selected per element: it is rarely there)."""
        z = np.zeros(len(occ), np.int64)
        flags = np.zeros(len(occ), np.uint8)
        if self.nk == 0:
            return z, z.copy(), flags
        if self.nk == 1:
            i1, i2 = occ.astype(np.int64), None
        else:
            i1, i2 = np.divmod(occ.astype(np.int64), self.stride2)
        k1 = self._key_of(i1, 0, flags)
        k2 = z if i2 is None else self._key_of(i2, 1, flags)
        return k1, k2, flags

    def _key_of(self, idx: np.ndarray, j: int, flags: np.ndarray) -> np.ndarray:
        """Dense index -> key ``j`` (in place); its NULL slot gives 0 and sets flag bit ``j``."""
        null = idx == self.ranges[j] + 1
        idx += self.mins[j]
        if null.any():
            idx[null] = 0
            flags |= null.astype(np.uint8) << j
        return idx

    def key_range(self) -> tuple[list[int], list[int]] | None:
        """Profiled [min, max] of each key over the generic table's groups."""
        m = int(self.ctl[0])
        if m == 0:
            return None
        mins, maxs = [], []
        for j in range(self.nk):
            vals = self.gk[j][:m][(self.gflags[:m] & (1 << j)) == 0]
            if len(vals):
                mins.append(int(vals.min()))
                maxs.append(int(vals.max()))
            else:
                mins.append(0)
                maxs.append(0)
        return mins, maxs

    # ------------------------------------------------------------ adaptivity
    def maybe_specialise(self, allow: bool = True) -> bool:
        """Grizzly 6.2: profiled value range -> dense array behind a guard."""
        if not allow or self.variant != "generic" or self.rows_since_profile < self.profile_after:
            return False
        if self.specialisations >= MAX_SPECIALISE:
            return False
        rng = self.key_range()
        if rng is None:
            return False
        mins, maxs = rng
        mins, ranges = headroom(mins, maxs, self.panes)
        m = int(self.ctl[0])
        size = self.dense_size(self.nk, ranges)
        if size > MAX_DENSE or size > max(DENSE_FACTOR * m, 4096):
            self.rows_since_profile = 0
            self.profile_after *= 2
            return False
        self.specialise(mins, ranges)
        return True

    def specialise(self, mins: list[int], ranges: list[int]) -> None:
        m = int(self.ctl[0])
        k = [self.gk[0][:m].copy(), self.gk[1][:m].copy()]
        flags = self.gflags[:m].copy()
        rows = self.rows[:m].copy()
        aggs = [[a.copy() for a in arrs] for arrs in self.aggs]
        self._dense_from(mins, ranges, k, flags, rows, aggs)
        self.specialisations += 1
        self.rows_since_profile = 0

    def _dense_from(self, mins: list[int], ranges: list[int], k: list, flags: np.ndarray, rows: np.ndarray,
                    aggs: list) -> None:
        """A dense table over [mins, mins + ranges] holding the groups given as
        arrays (keys ``k``, NULL ``flags``, ``rows``, states ``aggs``)."""
        m = len(rows)
        self._init_dense(list(mins), list(ranges))
        # slot of each group
        if self.nk == 0:
            slot = np.zeros(m, np.int64)
        else:
            i1 = np.where(flags & 1, self.ranges[0] + 1, k[0] - self.mins[0])
            slot = i1
            if self.nk == 2:
                i2 = np.where(flags & 2, self.ranges[1] + 1, k[1] - self.mins[1])
                slot = i1 * self.stride2 + i2
        self.rows[slot] = rows
        for dst, src, (kind, _s) in zip(self.aggs, aggs, self.shape.aggs):
            for j, (d, s) in enumerate(zip(dst, src)):
                if kind == "sum_128" and j == 0:
                    d2 = d.reshape(-1, 2)
                    d2[slot] = s[: 2 * m].reshape(-1, 2)
                else:
                    d[slot] = s[:m]

    def deoptimise(self) -> None:
        """Guard failed: migrate the dense state into a hash table (exact)."""
        k1, k2, flags, rows, aggs = self.groups()
        m = len(rows)
        self._init_generic(max(64, 4 * m))
        self._copy_groups_in(m, k1, k2, flags, rows, aggs)
        self.deopts += 1
        self.rows_since_profile = 0
        # profiling restarts; wait longer each time the data drifted
        self.profile_after = max(PROFILE_ROWS, self.profile_after) * 4

    # ------------------------------------------------------------ results
    def groups(self):
        """(k1, k2, flags, rows, aggs) arrays by dense group order."""
        if self.variant == "generic":
            m = int(self.ctl[0])
            aggs = []
            for arrs, (kind, _s) in zip(self.aggs, self.shape.aggs):
                aggs.append([a[: 2 * m] if (kind == "sum_128" and j == 0) else a[:m] for j, a in enumerate(arrs)])
            return self.gk[0][:m], self.gk[1][:m], self.gflags[:m], self.rows[:m], aggs
        occ = self._occupied()
        k1, k2, flags = self._dense_keys(occ)
        aggs = []
        for arrs, (kind, _s) in zip(self.aggs, self.shape.aggs):
            aggs.append([a.reshape(-1, 2)[occ].reshape(-1) if (kind == "sum_128" and j == 0) else a[occ]
                         for j, a in enumerate(arrs)])
        return k1, k2, flags, self.rows[occ], aggs

    def to_group_table(self, table) -> int:
        """Write this table's groups into the empty GroupTable ``table``; returns groups."""
        k1, k2, flags, rows, aggs = self.groups()
        m = len(rows)
        if m == 0:
            return 0
        idx = table.index
        assert len(idx) == 0, "target GroupTable must be empty"
        idx.load_snapshot(self._key_snapshot(k1, k2, flags, idx.key_oids))
        self._fill_states(table, m, rows, aggs)
        return m

    def export_into(self, table) -> dict | None:
        """This table's groups as a snapshot of the keys
        (``GroupIndex.snapshot``'s form), their states written into the empty
        GroupTable ``table``, whose index stays empty: a COPY's delta for the
        WAL needs the keys only as arrays, and building the index it would
        have cost more than the kernel (stream/view_deltas.py).  None: no group."""
        k1, k2, flags, rows, aggs = self.groups()
        m = len(rows)
        if m == 0:
            return None
        self._fill_states(table, m, rows, aggs)
        return self._key_snapshot(k1, k2, flags, table.index.key_oids)

    def _key_snapshot(self, k1: np.ndarray, k2: np.ndarray, flags: np.ndarray, oids: list[int]) -> dict:
        if self.nk == 1 and not self.derived and not flags.any():
            return {"int_keys": self.native_us(0, k1)}
        if self.nk == 2 and not self.derived and not flags.any():
            return {"pair_keys": [self.native_us(0, k1), self.native_us(1, k2)]}    # numpy: no Python object per group
        cols = [c.to_pylist() for c in self.key_columns(k1, k2, flags, oids)]
        return {"keys": list(zip(*cols)) if cols else [()]}   # distinct keys: the dict at C speed

    def _fill_states(self, table, m: int, rows: np.ndarray, aggs: list) -> None:
        for st, arrs, (kind, _s) in zip(table.states, aggs, self.shape.aggs):
            st.ensure(m)
            # kernels keep NULL counts: non-NULL count = rows - nulls
            if kind == "star":
                st.cnt[:m] = rows
            elif kind == "count":
                st.cnt[:m] = rows - arrs[0]
            elif kind in ("sum_i", "sum_f"):
                st.sum[:m] = arrs[0]
                st.cnt[:m] = rows - arrs[1]
            elif kind == "sum_128":
                pair = arrs[0].reshape(-1, 2)
                lo = pair[:, 0].view(np.uint64).tolist()
                hi = pair[:, 1].tolist()
                for i in range(m):
                    st.sum[i] = (hi[i] << 64) + lo[i]
                st.cnt[:m] = rows - arrs[1]
            else:
                st.val[:m] = arrs[0]
                st.has[:m] = arrs[1].astype(bool)
        table.rows_in += int(rows.sum())

    def key_columns(self, k1: np.ndarray, k2: np.ndarray, flags: np.ndarray, oids: list[int]) -> list[Col]:
        """The groups' keys as the vector path's key columns (``oids``: all the
        grouping's keys), derived keys added back from their native key."""
        native = [self.native_us(j, k) for j, k in enumerate((k1, k2)[: self.nk])]
        derived = {pos: (j, add) for pos, j, add in self.derived}
        positions = [p for p in range(len(oids)) if p not in derived]
        out: dict[int, Col] = {p: key_col(native[j], (flags & (1 << j)) != 0, oids[p]) for j, p in enumerate(positions)}
        for pos, (j, add) in derived.items():
            out[pos] = key_col(native[j] + add, (flags & (1 << j)) != 0, oids[pos])
        return [out[p] for p in range(len(oids))]

    def native_us(self, j: int, keys: np.ndarray) -> np.ndarray:
        """Native key ``j`` as the vector path's key values: a pane index
        becomes its bound in microseconds again."""
        pane = self.panes[j] if j < len(self.panes) else None
        if pane is None:
            return keys
        slide, base = pane
        return keys * slide + base

    def same_dense(self, other: "NativeTable") -> bool:
        return (self.variant == other.variant == "specialised" and self.mins == other.mins
                and self.ranges == other.ranges)

    def absorb(self, other: "NativeTable") -> bool:
        """Add a dense table with the same range into this one (thread-local
        tables at flush: one array addition instead of a second conversion
        into a GroupTable and a GroupTable merge).  False: not mergeable here."""
        if not self.same_dense(other):
            return False
        if any(kind not in ("star", "count", "sum_i", "sum_f") for kind, _s in self.shape.aggs):
            return False
        if not float_room(self.fbound, other.fbound):     # float sums that could overflow: the checked merge
            return False
        self.fbound += other.fbound
        self.rows += other.rows
        self.touched = self.touched or other.touched      # an emptied (flushed) table takes groups again
        for mine, theirs in zip(self.aggs, other.aggs):
            for a, b in zip(mine, theirs):
                a += b
        return True

    def merge_into(self, table) -> int:
        """Fold this table's groups into GroupTable ``table`` (empty or not);
        returns groups.  Group ids come from ``GroupIndex.assign`` over the key
        arrays -- a numpy gather on its direct-indexed path, Python only for
        keys the table has never seen -- and states are added per group id
        with numpy (the ids are distinct: a native table holds each key once)."""
        if len(table.index) == 0 and table.rows_in == 0:
            return self.to_group_table(table)
        k1, k2, flags, rows, aggs = self.groups()
        m = len(rows)
        if m == 0:
            return 0
        oids = table.index.key_oids
        key_cols = self.key_columns(k1, k2, flags, oids)
        gids = table.index.assign(key_cols, m)
        ng = len(table.index)
        for st, arrs, (kind, _s) in zip(table.states, aggs, self.shape.aggs):
            st.ensure(ng, exact=True)
            if kind == "star":
                st.cnt[gids] += rows
            elif kind == "count":              # kernels keep NULL counts
                st.cnt[gids] += rows - arrs[0]
            elif kind == "sum_f":               # checked: parts of one group may overflow together
                st.add_floats(gids, arrs[0])
                st.cnt[gids] += rows - arrs[1]
            elif kind == "sum_i":
                st.sum[gids] += arrs[0]
                st.cnt[gids] += rows - arrs[1]
            elif kind == "sum_128":
                pair = arrs[0].reshape(-1, 2)
                lo = pair[:, 0].view(np.uint64).tolist()
                hi = pair[:, 1].tolist()
                for i, g in enumerate(gids.tolist()):
                    st.sum[g] = st.sum[g] + (hi[i] << 64) + lo[i]
                st.cnt[gids] += rows - arrs[1]
            else:
                st.merge_values(gids, arrs[0], arrs[1].astype(bool))
        table.rows_in += int(rows.sum())
        return m

    def reset(self) -> None:
        """Empty the table, keeping its variant (and dense range).  A generic
        table keeps its capacity unless it is mostly empty: only the slots and
        the first ``ngroups`` entries of each state array are cleared (new
        groups expect zeroed state; key arrays are overwritten on insert)."""
        self.touched = False
        self.fbound = 0.0
        if self.variant == "generic":
            m = int(self.ctl[0])
            if m * 8 < self.gcap and self.cap > 1024:
                self._init_generic(max(64, m * 4))
                return
            self.slots.fill(-1)
            self.ctl[0] = 0
            self.rows[:m] = 0
            for arrs, (kind, _s) in zip(self.aggs, self.shape.aggs):
                for j, a in enumerate(arrs):
                    a[: 2 * m if (kind == "sum_128" and j == 0) else m] = 0
        else:
            self.rows.fill(0)
            for arrs in self.aggs:
                for a in arrs:
                    a.fill(0)

    def worth_keeping(self, groups: int) -> bool:
        """After a flush of ``groups`` groups: is emptying this table cheaper
        than starting a fresh one?  A dense table is cleared over its whole
        range, so it is kept only while its groups fill a fair part of it (the
        share it was specialised at); a generic one is always (``reset``
        shrinks it when it is mostly empty)."""
        return self.variant == "generic" or groups * DENSE_FACTOR >= self.size or self.size <= 4096

    def nbytes(self) -> int:
        n = self.rows.nbytes + sum(a.nbytes for arrs in self.aggs for a in arrs)
        if self.variant == "generic":
            n += self.slots.nbytes + self.gk[0].nbytes + self.gk[1].nbytes + self.gflags.nbytes
        return n


_CTYPES = {"i2": ctypes.c_int16, "i4": ctypes.c_int32, "i8": ctypes.c_int64}


def _read(addr: int, dtype: str, r: int) -> int:
    """Row ``r`` of an integer input column at address ``addr``."""
    t = _CTYPES[dtype]
    return int(t.from_address(addr + r * ctypes.sizeof(t)).value)


def key_col(keys: np.ndarray, nulls: np.ndarray, oid: int) -> Col:
    """A native table's int64 key array as the column the vector path keys
    by: a timestamp key (int64 microseconds in the kernel) is a timestamp
    again, so both paths store the same group keys."""
    if oid in (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
        keys = keys.view("datetime64[us]")
    return Col(keys, nulls, oid)
