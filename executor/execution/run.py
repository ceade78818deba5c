"""Per-execution state of a plan, kept apart from the plan itself.

A planned operator tree is cached per statement and shared by sessions and
threads, so nothing an execution produces may be stored on it.  Each
execution gets an :class:`ExecutionRun` (held by its ``ExecContext`` as
``ctx.run``) and operators keep there what they measure or build while they
run: row counts and times for EXPLAIN ANALYZE, the working table of a
recursive CTE, uncorrelated subquery results, the backend's per-run EXPLAIN
record (a hash join's build side is a local of its execution, passed down).
Entries are keyed by the operator object (held, so no id is reused while
the run lives).  State meant to outlive one execution (a continuous view's
kept build sides) is owned by whoever keeps it and lent to a run through
:meth:`ExecutionRun.lend_builds`.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping


_EMPTY: Mapping[Any, Any] = MappingProxyType({})


class ExecutionRun:
    """The mutable side of one execution of a plan (see the module docstring).

    One is made per statement, so it is cheap to make: only ``stats`` is
    allocated up front; the other maps are a shared empty read-only mapping
    until something is stored (through the methods below)."""

    backend_info: Mapping[Any, Any] = _EMPTY      # pipeline head op -> backend's EXPLAIN record
    working: Mapping[Any, Any] = _EMPTY           # RecursiveUnion -> its current working table
    kept_builds: Mapping[Any, Any] = _EMPTY       # HashJoin -> KeptBuild lent by a continuous view
    subquery_results: Mapping[Any, Any] = _EMPTY  # uncorrelated SubqueryExpr -> its result, once per statement
    key_sets: Mapping[Any, Any] = _EMPTY          # HashJoin -> key columns of the side it ran first (key_filter)

    def __init__(self) -> None:
        self.stats: dict[Any, list] = {}            # op -> [rows, seconds] (a list: Op.execute updates it inline)

    def _own(self, name: str) -> dict:
        d = self.__dict__.get(name)
        if d is None:
            d = self.__dict__[name] = {}
        return d

    def record(self, op: Any, rows: int, seconds: float) -> None:
        """What ``op`` produced and took in one call (Op.execute does this inline)."""
        st = self.stats.get(op)
        if st is None:
            self.stats[op] = [rows, seconds]
        else:
            st[0] += rows
            st[1] += seconds

    def add_rows(self, op: Any, rows: int) -> None:
        """Rows an operator produced outside its own ``execute`` (a filter fused into a kernel)."""
        self.record(op, rows, 0.0)

    def rows(self, op: Any) -> int:
        st = self.stats.get(op)
        return 0 if st is None else st[0]

    def seconds(self, op: Any) -> float:
        st = self.stats.get(op)
        return 0.0 if st is None else st[1]

    def note_backend(self, head: Any, info: Any) -> None:
        self._own("backend_info")[head] = info

    def set_working(self, union: Any, batch: Any) -> None:
        self._own("working")[union] = batch

    def keep_subquery_result(self, sq: Any, result: Any) -> None:
        self._own("subquery_results")[sq] = result

    def publish_keys(self, join: Any, keys: list) -> None:
        """The key columns ``join`` read from its other side before running its
        reduced side (``execution/key_filter.py``)."""
        self._own("key_sets")[join] = keys

    def lend_builds(self, kept: dict) -> None:
        """A continuous view's build sides kept between reads, for this run's joins."""
        self._own("kept_builds").update(kept)
