"""Query planning: sqlglot SELECT trees to operator trees.

The steps follow PostgreSQL's order of evaluation: FROM (with joins), WHERE,
GROUP BY / aggregates, HAVING, window functions, SELECT list, DISTINCT,
ORDER BY, LIMIT.  The optimiser work done here is the part that pays most
in a column-at-a-time engine: WHERE conjuncts are pushed to the lowest
operator that has their columns, and equality conjuncts between two join
inputs become hash-join keys (with a stream kept on the probe side).

This package is laid out like PostgreSQL's optimizer/plan directory: one
module per planning step, each a mixin of ``Planner`` (so every step calls
the others, and callers elsewhere call any step, as ``planner.method``):

- ``base``: per-statement state, parameter typing, coercion, catalog lookups
- ``query``: query entry point, WITH / CTEs, set operations, VALUES
- ``from_clause``: FROM items and scans
- ``joins``: join construction, join keys, filter pushdown
- ``join_order`` / ``cardinality``: the cost-based order of ``FROM a, b, c``
  groups (DP over connected subsets) and the row estimates it uses (filters
  run on table samples, join sizes from key distinct counts)
- ``select_list``: one SELECT: WHERE, select list, SRFs, DISTINCT, ORDER BY, LIMIT
- ``grouping``: GROUP BY, grouping sets, HAVING, post-aggregation binding
- ``agg_calls``: one aggregate call to an ``AggSpec``
- ``quals`` / ``names``: parse-tree helpers (conjuncts, OR factoring, column names)
- ``decorrelate``: correlated subqueries planned as joins (used by ``select_list``)
"""
from __future__ import annotations

from .agg_calls import AggCallPlanner
from .base import PlannerBase
from .from_clause import FromPlanner
from .grouping import GroupingPlanner
from .joins import JoinPlanner
from .names import expr_name
from .query import QueryPlanner
from .quals import factor_ors, split_conjuncts
from .select_list import SelectPlanner

__all__ = ["Planner", "expr_name", "factor_ors", "split_conjuncts"]


class Planner(QueryPlanner, SelectPlanner, FromPlanner, JoinPlanner, GroupingPlanner, AggCallPlanner, PlannerBase):
    """Plans one statement.  ``param_oids`` grows as parameters are typed."""
