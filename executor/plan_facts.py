"""Facts about a planned statement that the server needs without reading SQL.

The server answers a fast read on its event-loop thread (no worker hop).
That is only safe for a statement that cannot block or change anything:
a plain query with no volatile function (pg_sleep, nextval, advisory
locks, set_config...) and no scan of a stream, which waits for tuples for
the session timeout.  The planner's objects are walked reflectively, so a
new operator or expression kind is covered without registering it here.
"""
from __future__ import annotations

from typing import Any

from . import expr as X
from . import operators as P


def side_effect_free_query(handle: Any) -> bool:
    """True for a SELECT/VALUES plan that neither blocks nor writes."""
    from .statement import QueryStmt

    if type(handle) is not QueryStmt:
        return False
    return not any(_unsafe(node) for node in _nodes(handle.plan))


def _unsafe(node: Any) -> bool:
    if isinstance(node, X.Func):
        return bool(node.volatile)
    return isinstance(node, P.Op) and getattr(node, "is_stream", False)   # a session-window scan waits


def _nodes(root: Any):
    """Every operator and expression reachable from ``root`` (each once)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (P.Op, X.Expr)):
            yield obj
            stack.extend(vars(obj).values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
