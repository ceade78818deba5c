"""Table statistics (issue 18, item 2): a maintained reservoir sample per
table, a HyperLogLog per column, ANALYZE, and what pg_stats/pg_statistic show.

How the sample follows the table.  Table rows have positions that only grow
(``TableVersion`` appends past every published row; DELETE and UPDATE mark
rows deleted and append the new versions).  A table's sample is a
:class:`~splitstream.executor.execution.reservoir.ParallelReservoir` over
those positions: the rows appended since it last looked are dealt to its
worker reservoirs in morsels (a chunk view at a time, Fig. 5.1), and every
column's sketch hashes the same morsels.  A row later deleted drops out of
the sample when it is read; since every row appended had the same chance,
what remains is still a uniform sample of the live rows, only smaller, and
once churn has shrunk it below 3/4 of its size (or a checkpoint compaction
renumbered the positions) it is rebuilt from the live rows.  ANALYZE always
rebuilds.

When: the sample and sketches catch up when statistics are read (ANALYZE,
pg_stats, pg_statistic), never on the inserting thread, so INSERT and COPY
pay nothing (bench/ingest.py measures the same before and after), and a
rolled-back INSERT's rows, never published, never enter.

Persistence: none, by design.  Statistics are derived from the table, which
is persisted; after a restart the first read rebuilds them from the table
(one pass of the reservoir and the sketches over the rows), so no on-disk
format changes and no old data directory is affected.  What pg_stats then
shows (tests/durability/test_stats_after_restart.py): for a table no larger
than the sample, the same rows as before the restart (the sample is every
live row); for a larger one, a fresh sample's rows, as a second ANALYZE
gives in PostgreSQL; never empty and never stale until ANALYZE.

Unlike PostgreSQL, whose pg_stats is empty until (auto)ANALYZE, every table
with rows has statistics here: reading them is the automatic analyze.
"""
from __future__ import annotations

import re
import threading
import weakref
from typing import Any

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.catalog.objects import stats_catalogs
from splitstream.catalog.storage.tables import TableVersion
from splitstream.protocol.errors import INVALID_PARAMETER_VALUE, PgError

from ..execution import column_stats
from ..execution.reservoir import ParallelReservoir

SAMPLE_ROWS_SETTING = "splitstream.sample_rows"
DEFAULT_TARGET = 100
ROWS_PER_TARGET = 300          # PostgreSQL samples 300 x default_statistics_target rows
WORKERS = 2
MORSEL = 1 << 16
REBUILD_BELOW = 0.75
UNDEFINED_COLUMN = "42703"


def targets(ctx) -> int:
    try:
        t = int(ctx.setting("default_statistics_target", str(DEFAULT_TARGET)) or DEFAULT_TARGET)
    except ValueError:
        t = DEFAULT_TARGET
    return min(max(t, 1), 10000)


def sample_rows(ctx) -> int:
    """The sample size: splitstream.sample_rows, else PostgreSQL's 300 x default_statistics_target."""
    raw = ctx.setting(SAMPLE_ROWS_SETTING, "")
    if not raw:
        return ROWS_PER_TARGET * targets(ctx)
    try:
        n = int(raw)
    except ValueError:
        raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for parameter "{SAMPLE_ROWS_SETTING}": "{raw}"') from None
    return n


class TableSample:
    """The maintained sample and column sketches of one table."""

    def __init__(self, n: int, ncols: int, seed: int | None = None) -> None:
        self.n = n
        self.res = ParallelReservoir(n, WORKERS, seed)
        self.sketches = [column_stats.HyperLogLog() for _ in range(ncols)]
        self.consumed = 0                 # positions [0, consumed) have been dealt
        self.anchor: Any = None           # the first chunk: a compaction replaces it
        self._turn = 0

    def renumbered(self, tv: TableVersion) -> bool:
        if self.consumed == 0:
            return False
        return not tv.views or tv.views[0].chunk is not self.anchor or tv.n_total < self.consumed

    def catch_up(self, tv: TableVersion) -> None:
        """Deal the rows appended since the last look (live ones) to the worker reservoirs."""
        base = 0
        for v in tv.views:
            lo = max(self.consumed - base, 0)
            for a in range(lo, v.n, MORSEL):
                b = min(v.n, a + MORSEL)
                live = None if v.deleted is None else ~v.deleted[a:b]
                ids = np.arange(base + a, base + b, dtype=np.int64)
                self.res.offer(self._turn % WORKERS, ids if live is None else ids[live])
                self._turn += 1
                for i, sk in enumerate(self.sketches):
                    data, nulls = v.chunk.cols[i][a:b], v.chunk.nulls[i][a:b]
                    if live is not None:
                        data, nulls = data[live], nulls[live]
                    sk.add_hashes(column_stats.hash_values(Col(data, nulls, tv.oids[i])))
            base += v.n
        if tv.views:
            self.anchor = tv.views[0].chunk
        self.consumed = tv.n_total

    def rows(self, tv: TableVersion) -> list[Col]:
        """The sample's live rows, in physical order, as columns."""
        return tv.take_positions(np.sort(self.res.sample_ids()))


class _Entry:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sample: TableSample | None = None
        self.cached: tuple[Any, int, list] | None = None      # (version, targets, stats per column)


class StatsStore:
    """All tables' samples of one engine."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._lock = threading.Lock()

    def entry(self, oid: int) -> _Entry:
        with self._lock:
            e = self._entries.get(oid)
            if e is None:
                e = self._entries[oid] = _Entry()
            return e

    def column_stats(self, rel, tv: TableVersion, ctx, rebuild: bool = False) -> list:
        """Per live column, its statistics (computed when the table changed)."""
        e = self.entry(rel.oid)
        n, tgt = sample_rows(ctx), targets(ctx)
        with e.lock:
            if not rebuild and e.cached is not None and e.cached[0] is tv and e.cached[1] == tgt:
                return e.cached[2]
            s = e.sample
            if rebuild or s is None or s.n != n or s.renumbered(tv) or len(s.sketches) != len(tv.oids):
                s = e.sample = TableSample(n, len(tv.oids))
            s.catch_up(tv)
            cols = s.rows(tv)
            live = tv.n_live()
            if cols and len(cols[0]) < REBUILD_BELOW * min(n, live):       # churn shrank it: rebuild
                s = e.sample = TableSample(n, len(tv.oids))
                s.catch_up(tv)
                cols = s.rows(tv)
            stats = [column_stats.compute(c, float(live), tgt, sk.estimate()) for c, sk in zip(cols, s.sketches)]
            e.cached = (tv, tgt, stats)
            return stats

    def retain(self, oids: set[int]) -> None:
        """Drop the samples of tables no longer there (a dropped table's is only cache)."""
        with self._lock:
            for oid in [o for o in self._entries if o not in oids]:
                del self._entries[oid]


_stores: "weakref.WeakKeyDictionary[Any, StatsStore]" = weakref.WeakKeyDictionary()
_stores_lock = threading.Lock()


def store_of(engine: Any) -> StatsStore:
    with _stores_lock:
        s = _stores.get(engine)
        if s is None:
            s = _stores[engine] = StatsStore()
        return s


def analyze(ctx, rel, columns: list[str] | None) -> None:
    """ANALYZE rel [(columns)]: check the columns, rebuild the sample, recompute."""
    if rel.kind != "r":
        return                     # PostgreSQL skips views and foreign tables with a warning
    names = {c.name for c in rel.live_columns if not c.hidden}
    for c in columns or []:
        if c not in names:
            raise PgError(UNDEFINED_COLUMN, f'column "{c}" of relation "{rel.name}" does not exist')
    tv = ctx.state.data.get(rel.oid)
    if tv is not None:
        store_of(ctx.engine).column_stats(rel, tv, ctx, rebuild=True)


_ITEM = re.compile(r'\s*((?:"[^"]*"|[^\s,(])+)\s*(?:\(([^)]*)\))?\s*(?:,|$)')


def analyze_items(text: str) -> list[tuple[str, list[str] | None]]:
    """``t1 (a, b), s.t2`` as [(name, columns or None)]."""
    out: list[tuple[str, list[str] | None]] = []
    pos, text = 0, text.strip()
    while pos < len(text):
        m = _ITEM.match(text, pos)
        if m is None or m.end() == pos:
            break
        cols = [c.strip().strip('"') if c.strip().startswith('"') else c.strip().lower()
                for c in m.group(2).split(",")] if m.group(2) is not None else None
        out.append((m.group(1), cols))
        pos = m.end()
    return out


def _provide(state, ctx):
    """pg_stats / pg_statistic rows: every table with rows, every visible column."""
    if ctx is None or getattr(ctx, "engine", None) is None:
        return
    store = store_of(ctx.engine)
    store.retain(set(state.rels))
    for rel in list(state.rels.values()):
        if rel.kind != "r" or rel.schema in ("pg_catalog", "information_schema"):
            continue
        tv = state.data.get(rel.oid)
        if tv is None or tv.n_total == 0 or tv.n_live() == 0:
            continue
        stats = store.column_stats(rel, tv, ctx)
        for n, col, st in zip(rel.live_attnums, rel.live_columns, stats):
            if not col.hidden:
                yield rel, n, col, st


stats_catalogs.set_stats_provider(_provide)
