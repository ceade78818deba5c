"""Two-Stacks over a sliding window's sealed panes, all keys at once.

Hammer Slide (§2.2, §3.2) keeps, per key, a back stack of suffix aggregates
and one running front aggregate, and flips the front onto the back when the
back runs out.  Here every "aggregate" is a whole table of states over all
of the view's keys: the keys get dense *slots* (one index shared by the
structure), so a combination is a set of arrays indexed by slot and
combining two is one vectorised ``merge`` per aggregate, whatever the
number of keys (:class:`Dense`).  No per-key Python, no hash index per
stack entry.

Storing one such table per pane (Two-Stacks' O(n) space) costs panes × keys
for every aggregate array; at 3,600 panes of 10,000 keys that is gigabytes
and a flip copying all of it.  So the stacks are two-level, the panes being
grouped in blocks of ``B ≈ √panes`` (Hammer Slide's per-slide
pre-aggregation, applied once more):

* the *outer* Two-Stacks holds the complete blocks: each block's
  combination, a back stack of suffix combinations (block ``b`` up to the
  front) and the running front;
* the *inner* back stack holds the suffix combinations of the panes of the
  oldest live block (pane ``p`` to the block's end), built when the window's
  start enters that block;
* the sealed panes of the block being filled are one running combination.

A read therefore merges at most four tables (plus the panes the clock has
not sealed yet), a flip combines at most ``√panes`` tables, and the
structure holds about ``2√panes`` tables instead of ``panes``.  Combining
never subtracts, so min/max never rescan and float sums keep their
precision.
"""
from __future__ import annotations

import bisect
import math
from typing import Any

import numpy as np

from ..execution.aggregates import AggState, GroupIndex, GroupTable
from .panes import copy_state, taken_state

#: slots are renumbered (the stacks rebuilt) once fewer than 1/SPARSE of them are live, past MIN_SLOTS
SPARSE, MIN_SLOTS = 2, 4096


def ids_between(d: dict[int, Any], a: int, b: int) -> list[int]:
    """The keys of ``d`` in ``[a, b)``, ascending (by range when it is the shorter walk)."""
    if b - a <= len(d):
        return [p for p in range(a, b) if p in d]
    return sorted(p for p in d if a <= p < b)


def drop_below(d: dict[int, Any], lo: int) -> None:
    """Remove the keys of ``d`` below ``lo``."""
    for p in [p for p in d if p < lo]:
        del d[p]


class Dense:
    """A combination of panes: aggregate states indexed by slot, and which
    slots hold rows (a slot no combined pane has is no group of the result)."""

    __slots__ = ("states", "present")

    def __init__(self, states: list[AggState], present: np.ndarray) -> None:
        self.states, self.present = states, present

    @classmethod
    def empty(cls, specs: list) -> "Dense":
        return cls([s.make_state() for s in specs], np.zeros(0, bool))

    def _room(self, n: int) -> None:
        if n > len(self.present):
            grown = np.zeros(n, bool)
            grown[: len(self.present)] = self.present
            self.present = grown
        for st in self.states:
            st.ensure(n, exact=True)

    def add_table(self, table: GroupTable, gmap: np.ndarray) -> None:
        """Fold a pane's groups in; its group i is slot ``gmap[i]``."""
        if not len(gmap):
            return
        self._room(int(gmap.max()) + 1)
        for st, sst in zip(self.states, table.states):
            sst.ensure(len(table.index))
            st.merge(sst, gmap)
        self.present[gmap] = True

    def add(self, other: "Dense") -> None:
        """Fold another combination in (slot for slot)."""
        n = len(other.present)
        if not n:
            return
        self._room(n)
        ids = np.arange(n, dtype=np.int64)
        for st, ost in zip(self.states, other.states):
            st.merge(ost, ids)
        self.present[:n] |= other.present

    def copy(self) -> "Dense":
        return Dense([copy_state(st) for st in self.states], self.present.copy())

    def nbytes(self) -> int:
        return sum(st.nbytes() for st in self.states) + self.present.nbytes


class PaneStacks:
    """The two-level Two-Stacks of one sliding window (module docstring).

    Panes below ``sealed_to`` are in the structure; ``panes`` (pane id ->
    table keyed by the view's keys) is the slider's and is passed in, the
    sealed ones never changing (a change to one discards the structure)."""

    def __init__(self, key_oids: list[int], specs: list, panes_per_window: int, start: int) -> None:
        self.specs = specs
        self.block = max(1, math.isqrt(max(1, panes_per_window)))
        self.slots = GroupIndex(list(key_oids))
        self.gmaps: dict[int, np.ndarray] = {}            # sealed pane -> slots of its groups
        self.sealed_to = start
        self.acc_block = start // self.block               # the block being filled
        self.acc = self._empty()                           # its sealed panes
        self.blocks: dict[int, Dense] = {}                 # complete block -> its combination
        self.front_from = self.acc_block                   # first block of the outer front
        self.front = self._empty()
        self.back: dict[int, Dense] = {}                   # block -> blocks b..front_from-1
        self.back_ids: list[int] = []
        self.inner_block: int | None = None
        self.inner: dict[int, Dense] = {}                  # pane -> panes p..end of inner_block
        self.inner_ids: list[int] = []
        self.live_slots = 0                                # slots holding rows at the last flip
        self.expired_to: int | None = None

    def _empty(self) -> Dense:
        return Dense.empty(self.specs)

    def _gmap(self, p: int, table: GroupTable, keep: bool) -> np.ndarray:
        g = self.gmaps.get(p)
        if g is None:
            g = self.slots.take_groups_of(table.index) if len(table.index) else np.zeros(0, np.int64)
            if keep:
                self.gmaps[p] = g
        return g

    def too_sparse(self) -> bool:
        """Whether expired keys fill most slots (then the caller starts anew)."""
        n = len(self.slots)
        return n > MIN_SLOTS and n > SPARSE * self.live_slots

    # ------------------------------------------------------------ sealing
    def seal(self, panes: dict[int, GroupTable], current: int) -> None:
        """Take the panes below ``current`` (the clock has left them) in."""
        if current <= self.sealed_to:
            return
        for p in ids_between(panes, self.sealed_to, current):
            if p // self.block != self.acc_block:
                self._finish_block(p // self.block)
            self.acc.add_table(panes[p], self._gmap(p, panes[p], keep=True))
        if current // self.block > self.acc_block:
            self._finish_block(current // self.block)
        self.sealed_to = current

    def _finish_block(self, next_block: int) -> None:
        if self.acc.present.any():
            self.blocks[self.acc_block] = self.acc
            self.front.add(self.acc)
            self.acc = self._empty()
        self.acc_block = next_block

    # ------------------------------------------------------------ time
    def expire(self, lo: int) -> None:
        """Forget what lies before pane ``lo`` (the window's first)."""
        if lo == self.expired_to:
            return
        self.expired_to = lo
        lb = lo // self.block
        for b in [b for b in self.blocks if b <= lb]:
            del self.blocks[b]
        cut = bisect.bisect_right(self.back_ids, lb)
        for b in self.back_ids[:cut]:
            del self.back[b]
        del self.back_ids[:cut]
        if self.inner_block is not None and self.inner_block < lb:
            self.inner_block, self.inner, self.inner_ids = None, {}, []
        drop_below(self.gmaps, lo)

    def combined(self, panes: dict[int, GroupTable], lo: int) -> Dense:
        """The combination of the sealed panes from ``lo`` on (a new table)."""
        out = self._empty()
        lb = lo // self.block
        if lb >= self.acc_block:                 # the window starts in the block being filled
            for p in ids_between(panes, lo, self.sealed_to):
                out.add_table(panes[p], self._gmap(p, panes[p], keep=True))
            return out
        self.prepare(panes, lo)
        i = bisect.bisect_left(self.inner_ids, lo)
        if i < len(self.inner_ids):
            out.add(self.inner[self.inner_ids[i]])
        j = bisect.bisect_left(self.back_ids, lb + 1)
        if j < len(self.back_ids):
            out.add(self.back[self.back_ids[j]])
        out.add(self.front)
        out.add(self.acc)
        return out

    def prepare(self, panes: dict[int, GroupTable], lo: int) -> None:
        """Build what a read at window start ``lo`` needs (the inner stack of
        its block, a flip when the outer back ran out): the reaper calls it
        as the clock moves, so reads rarely pay for it."""
        lb = lo // self.block
        if lb >= self.acc_block:
            return
        self._build_inner(panes, lb)
        if self.front_from <= lb:
            self._flip(lb + 1)

    def _build_inner(self, panes: dict[int, GroupTable], lb: int) -> None:
        """The suffix combinations of block ``lb``'s panes, newest first."""
        if self.inner_block == lb:
            return
        lo, hi = lb * self.block, (lb + 1) * self.block
        ids = ids_between(panes, lo, hi)
        self.inner = self._suffixes(ids, lambda acc, p: acc.add_table(panes[p], self._gmap(p, panes[p], keep=True)))
        self.inner_block, self.inner_ids = lb, ids

    def _flip(self, first: int) -> None:
        """Hammer Slide's flip over blocks: the complete blocks from ``first``
        become the back stack of suffix combinations, the front empties."""
        ids = sorted(b for b in self.blocks if first <= b < self.acc_block)
        self.back = self._suffixes(ids, lambda acc, b: acc.add(self.blocks[b]))
        self.back_ids = ids
        self.front_from, self.front = self.acc_block, self._empty()
        live = self.back[ids[0]].present.copy() if ids else np.zeros(0, bool)
        self.live_slots = int(np.count_nonzero(live)) + int(np.count_nonzero(self.acc.present))

    def _suffixes(self, ids: list[int], fold) -> dict[int, Dense]:
        """Walk ``ids`` backwards, each entry the previous one with its own folded in."""
        out: dict[int, Dense] = {}
        acc = self._empty()
        for x in reversed(ids):
            fold(acc, x)
            out[x] = acc.copy()
        return out

    # ------------------------------------------------------------ reading
    def table(self, dense: Dense, key_oids: list[int]) -> GroupTable:
        """``dense`` as a table keyed by the view's keys: its present slots
        (the states gathered, not merged)."""
        out = GroupTable(list(key_oids), self.specs)
        idx = np.flatnonzero(dense.present)
        if len(idx):
            gids = out.index.assign([c.take(idx) for c in self.slots.key_columns()], len(idx))
            slot_of = np.empty(len(idx), np.int64)
            slot_of[gids] = idx                  # the index numbers new keys in its own order
            out.states = [taken_state(st, slot_of) for st in dense.states]
        return out

    def add_unsealed(self, dense: Dense, p: int, table: GroupTable) -> None:
        """Fold a pane the clock has not sealed yet (it may still grow) in."""
        dense.add_table(table, self._gmap(p, table, keep=False))

    def nbytes(self) -> int:
        tables = [self.acc, self.front, *self.blocks.values(), *self.back.values(), *self.inner.values()]
        return sum(t.nbytes() for t in tables) + self.slots.nbytes() + sum(g.nbytes for g in self.gmaps.values())
