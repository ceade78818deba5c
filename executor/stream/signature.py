"""What a stream pipeline computes, as a structural description: two
pipelines with the same signature fold the same events into the same state,
so CREATE OR REPLACE VIEW may hand the old one's state to the new definition.

Unlike ``continuous.pipeline_fingerprints`` (the names of saved states, which
include the view's SQL and must stay stable across versions), a signature
leaves the view's SQL and everything above the grouping out, and describes
the pipeline itself exhaustively: every operator below the grouping with all
its expressions (constants, functions, types, even the values a function's
closure captured), the build sides of its joins down to the tables and
columns they read, and the grouping's keys and aggregates.  When in doubt it
tells two pipelines apart: a refused replacement can be asked again with
``restart``; a wrongly kept state could not be undone.
"""
from __future__ import annotations

import decimal
import hashlib
import types
from typing import Any

import numpy as np

from ..execution import operators

#: attributes of an operator that hold its inputs (described as the tree, not
#: as values) or the runtime of a stream, never what the operator computes
_OP_INPUTS = frozenset({"child", "children", "left", "right", "runtime", "pinned"})
_MAX_DEPTH = 60


def pipeline_signature(pipe) -> str:
    """sha256 of the description of one StreamPipeline (scan, ops, grouping)."""
    parts = [_scan(pipe.scan)]
    for op in pipe.ops:
        parts.append(_node(op))
        if isinstance(op, operators.HashJoin):
            build = [c for c in op.children if not _reaches(c, pipe.scan)]
            parts.extend(_tree(c) for c in build)
    agg = pipe.agg
    # the aggregates as a multiset: a new order of the same ones keeps the state (reordered)
    parts.append(f"group keys={_describe(agg.keys, 0, set())} sets={agg.grouping_sets!r} "
                 f"aggs={sorted(agg_descriptions(agg))}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def agg_descriptions(agg) -> list[str]:
    return [_describe(a, 0, set()) for a in agg.aggs]


def aggregate_order(old_agg, new_agg) -> list[int]:
    """For each aggregate of ``new_agg``, the position of the same one in ``old_agg``."""
    free = list(enumerate(agg_descriptions(old_agg)))
    order = []
    for d in agg_descriptions(new_agg):
        i = next(k for k, (_, od) in enumerate(free) if od == d)
        order.append(free.pop(i)[0])
    return order


class PipelinePool:
    """The pipelines of a view being replaced, each taken at most once by a
    new pipeline with the same signature (the new definition then reads the
    old state); ``covers`` tells whether the new definition took them all
    and nothing else, the condition for keeping the view's state."""

    def __init__(self, pipelines: dict[int, list]) -> None:
        self.free = [(pipeline_signature(p), p) for ps in pipelines.values() for p in ps]
        self.taken: list = []

    def take(self, candidate):
        sig = pipeline_signature(candidate)
        for i, (s, p) in enumerate(self.free):
            if s == sig:
                del self.free[i]
                self.taken.append(p)
                return p
        return None

    def covers(self, pipelines: dict[int, list]) -> bool:
        new = [p for ps in pipelines.values() for p in ps]
        return not self.free and len(new) == len(self.taken) and all(any(p is t for t in self.taken) for p in new)


def _reaches(op, target) -> bool:
    return op is target or any(_reaches(c, target) for c in getattr(op, "children", []))


def _scan(scan) -> str:
    cols = [(c.name, c.type_oid, c.typmod) for c in scan.rel.live_columns]
    return f"stream {scan.rel.oid} {cols}"


def _tree(op) -> str:
    """A build side: its operators with their inputs, tables by what they read."""
    if isinstance(op, operators.TableScan):
        return f"table {op.rel.oid} {[(c.name, c.type_oid) for c in op.rel.live_columns]} pinned={op.pinned}"
    kids = ", ".join(_tree(c) for c in getattr(op, "children", []))
    return f"{_node(op)}[{kids}]"


def _node(op) -> str:
    return _describe(op, 0, set())


def _describe(v: Any, depth: int, stack: set[int]) -> str:
    if depth > _MAX_DEPTH or id(v) in stack:
        return f"<opaque {id(v)}>"          # never equal to another pipeline's: refuse rather than guess
    if v is None or isinstance(v, (bool, int, float, str, bytes, decimal.Decimal, np.generic)):
        return f"{type(v).__name__}:{v!r}"
    if isinstance(v, np.ndarray):
        return f"array {v.dtype} {v.shape} {hashlib.sha256(v.tobytes()).hexdigest() if v.dtype != object else v.tolist()!r}"
    stack = stack | {id(v)}
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_describe(x, depth + 1, stack) for x in v) + "]"
    if isinstance(v, (set, frozenset)):
        return "{" + ", ".join(sorted(_describe(x, depth + 1, stack) for x in v)) + "}"
    if isinstance(v, dict):
        return "{" + ", ".join(sorted(f"{k!r}: {_describe(x, depth + 1, stack)}" for k, x in v.items())) + "}"
    if isinstance(v, (types.FunctionType, types.MethodType)):
        return _function(v, depth, stack)
    if isinstance(v, type):
        return f"type {v.__module__}.{v.__qualname__}"
    if isinstance(v, types.ModuleType):
        return f"module {v.__name__}"
    fields = getattr(v, "__dict__", None)
    if fields is None:
        return f"{type(v).__module__}.{type(v).__qualname__}:{v!r}"
    is_op = isinstance(v, operators.Op)
    # underscore names are caches (a folded constant, a dictionary column), never meaning
    inner = ", ".join(f"{k}={_describe(x, depth + 1, stack)}" for k, x in sorted(fields.items())
                      if not k.startswith("_") and not (is_op and (k in _OP_INPUTS or k == "out")))
    shape = f" out={[(c.oid, c.typmod) for c in v.out]}" if is_op else ""
    return f"{type(v).__module__}.{type(v).__qualname__}({inner}){shape}"


def _function(fn, depth: int, stack: set[int]) -> str:
    """A function by name, with the values its closure and defaults captured
    (two lambdas of one factory differ only there)."""
    if isinstance(fn, types.MethodType):
        return f"method {fn.__func__.__qualname__} of {_describe(fn.__self__, depth + 1, stack)}"
    cells = [c.cell_contents for c in fn.__closure__ or () if _cell_set(c)]
    return (f"fn {fn.__module__}.{fn.__qualname__} closure={_describe(cells, depth + 1, stack)} "
            f"defaults={_describe(fn.__defaults__, depth + 1, stack)}")


def _cell_set(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:                           # an empty cell (a name bound later)
        return False
    return True
