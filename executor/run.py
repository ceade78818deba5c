"""Per-execution state of a plan, kept apart from the plan itself.

A planned operator tree is cached per statement and shared by sessions and
threads, so nothing an execution produces may be stored on it.  Each
execution gets an :class:`ExecutionRun` (held by its ``ExecContext`` as
``ctx.run``) and operators keep there what they measure or build while they
run: row counts and times for EXPLAIN ANALYZE, hash join build sides, the
working table of a recursive CTE, uncorrelated subquery results, the
backend's per-run EXPLAIN record.
Entries are keyed by the operator object (held, so no id is reused while
the run lives).  State meant to outlive one execution (a continuous view's
kept build sides) is owned by whoever keeps it and lent to a run through
:meth:`ExecutionRun.lend_builds`.
"""
from __future__ import annotations

from typing import Any


class OpStats:
    """What one operator did in one run."""

    __slots__ = ("rows", "seconds")

    def __init__(self) -> None:
        self.rows = 0
        self.seconds = 0.0


class ExecutionRun:
    """The mutable side of one execution of a plan (see the module docstring)."""

    def __init__(self) -> None:
        self.stats: dict[Any, OpStats] = {}
        self.backend_info: dict[Any, Any] = {}     # pipeline head op -> backend's EXPLAIN record
        self.working: dict[Any, Any] = {}          # RecursiveUnion -> its current working table
        self.kept_builds: dict[Any, Any] = {}      # HashJoin -> KeptBuild lent by a continuous view
        self.subquery_results: dict[Any, Any] = {}  # uncorrelated SubqueryExpr -> its result, once per statement

    def op_stats(self, op: Any) -> OpStats:
        st = self.stats.get(op)
        if st is None:
            st = self.stats[op] = OpStats()
        return st

    def record(self, op: Any, rows: int, seconds: float) -> None:
        st = self.op_stats(op)
        st.rows += rows
        st.seconds += seconds

    def add_rows(self, op: Any, rows: int) -> None:
        """Rows an operator produced outside its own ``execute`` (a filter fused into a kernel)."""
        self.op_stats(op).rows += rows

    def rows(self, op: Any) -> int:
        st = self.stats.get(op)
        return 0 if st is None else st.rows

    def seconds(self, op: Any) -> float:
        st = self.stats.get(op)
        return 0.0 if st is None else st.seconds

    def note_backend(self, head: Any, info: Any) -> None:
        self.backend_info[head] = info

    def lend_builds(self, kept: dict) -> None:
        """A continuous view's build sides kept between reads, for this run's joins."""
        self.kept_builds.update(kept)
