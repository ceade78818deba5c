"""EXPLAIN support: the backend, variant, compile time and rows per pipeline."""
from __future__ import annotations

from typing import Any

from ...execution import operators
from .analyze import Unsupported, analyse


def _aggregates(op, out: dict) -> dict:
    if isinstance(op, operators.Aggregate):
        out[id(op.child)] = op
    for c in op.children:
        _aggregates(c, out)
    return out


def pipeline_tags(sinks: Any, plan, pipes: list, run: Any, analyze: bool, requested: str) -> list[str]:
    """One bracket text per pipeline, e.g. 'llvm specialised, compile=9.1 ms, rows=1000'.
    ``sinks`` is the backend's sink cache, ``run`` the execution EXPLAIN ANALYZE ran."""
    aggs = _aggregates(plan, {})
    tags = []
    for p in pipes:
        agg = aggs.get(id(p[0])) if p else None
        info = run.backend_info.get(p[0]) if p and run is not None else None
        if agg is None:
            tags.append("vector")
        elif analyze and info is not None:
            tags.append(info.tag())
        else:
            tags.append(_planned(sinks.get(agg), agg, requested))
    return tags


def _planned(sink, agg, requested: str) -> str:
    if requested == "vector":
        return "vector"
    try:
        plan = sink.plan if sink is not None and sink.plan is not None else \
            analyse([agg.child] if isinstance(agg.child, operators.Filter) else [], agg)
    except Unsupported as e:
        return f"vector, {'llvm fallback' if requested == 'llvm' else 'not compiled'}: {e}"
    if sink is not None and sink.module is not None:
        return f"llvm ({plan.describe()}), cached module"
    return f"{'llvm' if requested == 'llvm' else 'auto: vector until compiled'} ({plan.describe()})"


def stream_tag(sink) -> str:
    """Backend line of a continuous view's stream (insert) pipeline, from its sink (None: none yet)."""
    if sink is None:
        return "vector (no batch on another backend yet)"
    tag = sink.info.tag()
    if sink.info.shape_desc:
        tag += f"; compiled shape: {sink.info.shape_desc}"
    return tag
