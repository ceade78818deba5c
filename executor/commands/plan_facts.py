"""Facts about a planned statement that the server needs without reading SQL.

The server answers a fast read on its event-loop thread (no worker hop).
That is only safe for a statement that cannot block or change anything:
a plain query with no volatile function (pg_sleep, nextval, advisory
locks, set_config...) and no scan of a stream, which waits for tuples for
the session timeout.  The planner's objects are walked reflectively, so a
new operator or expression kind is covered without registering it here.
"""
from __future__ import annotations

import logging
from typing import Any

from ..execution import expr, operators
from .base import QueryStmt
from ..insert_batching import coalescible
from ..stream import watermark

log = logging.getLogger("splitstream.executor")


def side_effect_free_query(handle: Any) -> bool:
    """True for a SELECT/VALUES plan that neither blocks nor writes."""

    if type(handle) is not QueryStmt:
        return False
    try:
        return not any(_unsafe(node) for node in _nodes(handle.plan))
    except Exception:   # an unforeseen plan shape: run it on a worker, as any statement
        log.exception("judging a plan for inline execution failed")
        return False


def inline_insert(handle: Any) -> bool:
    """True for a parameterised ``INSERT ... VALUES`` into a plain table that
    the extended protocol batches until Sync (executor.insert_batching): building and
    appending its rows cannot block once the writer lock is held.  A stream
    is excluded: its rows feed continuous views, whose cost is unbounded."""

    try:
        return coalescible(handle) and getattr(handle.rel, "kind", "") == "r"
    except Exception:
        log.exception("judging an insert for inline execution failed")
        return False


def lean_insert(handle: Any) -> bool:
    """True for an INSERT the lean path takes (executor.lean_insert):
    ``VALUES`` of parameters and constants (``coalescible``: no RETURNING,
    ON CONFLICT or set-level constraint) into a logged table or a stream
    without a watermark (its late rows are counted per statement)."""
    try:
        if not coalescible(handle):
            return False
        rel = handle.rel
        if rel.kind == "r":
            return rel.persistence != "u"       # no WAL flush to share: the inline write path serves it
        return rel.kind == "f" and watermark.declared(rel) is None
    except Exception:
        log.exception("judging an insert for the lean path failed")
        return False


def _unsafe(node: Any) -> bool:
    if isinstance(node, expr.Func):
        return bool(node.volatile)
    return isinstance(node, operators.Op) and getattr(node, "is_stream", False)   # a session-window scan waits


def _nodes(root: Any, through_helpers: bool = False):
    """Every operator and expression reachable from ``root`` (each once); with
    ``through_helpers`` also those held by the executor's aggregate and window
    specs, which are neither operators nor expressions."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (operators.Op, expr.Expr)):
            yield obj
            stack.extend(vars(obj).values())
        elif through_helpers and type(obj).__name__ in _HELPERS and hasattr(obj, "__dict__") \
                and type(obj).__module__.startswith("executor."):
            stack.extend(vars(obj).values())


_HELPERS = ("AggSpec", "WinSpec", "OutCol")


# ---------------------------------------------------------------- result reuse
#
# A repeated read whose inputs are unchanged may be answered with the response
# of its previous execution (the server keeps it).  That is sound only if the
# result is a function of the committed tables, the continuous views' state
# and the output settings.  Plans are judged against allow-lists: any operator,
# expression or function not listed makes the statement non-reusable, so a
# new time-dependent or random function is never cached by accident.

_REUSABLE_OPS = ("Result1", "TableScan", "ValuesScan", "Filter", "Project", "HashJoin", "NestedLoopJoin",
                 "Aggregate", "Sort", "Limit", "Distinct", "SetOp", "Materialized", "CTEScan", "WindowOp")
_REUSABLE_EXPRS = ("ColRef", "OuterRef", "Const", "Param", "Cast", "Arith", "Neg", "Concat", "Compare",
                   "IsDistinct", "And", "Or", "Not", "IsNull", "IsBool", "Case", "Coalesce", "InList", "Like",
                   "SubqueryExpr")
#: Functions whose value depends only on their arguments, the output settings
#: (part of the key) or the session's fixed identity.
_REUSABLE_FUNCS = frozenset("""
abs acos array_append array_cat array_length array_lower array_position array_to_json array_to_string
array_upper ascii asin atan atan2 bit_length btrim cardinality cbrt ceil ceiling char_length character_length
chr coalesce concat concat_ws cos date_part date_trunc degrees exp extract floor format_type greatest initcap
json_array_length json_build_object json_typeof jsonb_array_length jsonb_pretty jsonb_typeof least left length
ln log log10 lower lpad ltrim make_date md5 mod nullif octet_length pg_size_pretty pg_typeof pi pow power
quote_ident quote_literal radians regexp_match regexp_replace repeat replace reverse right round row_to_json
rpad rtrim sign sin split_part sqrt starts_with string_to_array strpos substr substring tan to_char to_hex
to_json to_jsonb translate trim trunc upper
current_user current_role session_user user getpgusername current_database current_catalog current_schema
pg_backend_pid version
""".split())
#: Settings a statement's plan or result depends on: how the same rows are computed or printed, the
#: current role (privileges are checked per role) and search_path with it (``$user``): which relations
#: and functions its names resolve to, as PostgreSQL's plan cache keeps the search path of a plan.
OUTPUT_SETTINGS = ("timezone", "datestyle", "intervalstyle", "extra_float_digits", "bytea_output", "role",
                   "session_authorization", "search_path")
_MAX_NODES = 20000


def reusable_views(handle: Any) -> tuple[int, ...] | None:
    """The continuous views a reusable query reads (possibly none), or None
    when its result may change without its inputs changing."""

    if type(handle) is not QueryStmt:
        return None
    try:
        return _reusable_views(handle.plan)
    except Exception:   # an unforeseen plan shape: just never reuse it
        log.exception("judging a plan for result reuse failed")
        return None


def _reusable_views(plan: Any) -> tuple[int, ...] | None:
    views: list[int] = []
    count = 0
    for node in _nodes(plan, through_helpers=True):
        count += 1
        if count > _MAX_NODES:
            return None
        name = type(node).__name__
        if isinstance(node, operators.Op):
            cv = getattr(node, "continuous_view", None)
            if name == "BatchSource" and cv is not None:
                views.append(cv.oid)
            elif name not in _REUSABLE_OPS or getattr(node, "is_stream", False):
                return None
        elif isinstance(node, expr.Func):
            if node.volatile or node.name not in _REUSABLE_FUNCS:
                return None
        elif isinstance(node, expr.Expr) and name not in _REUSABLE_EXPRS:
            return None
    return tuple(sorted(set(views)))
