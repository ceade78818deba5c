"""EXPLAIN support: the backend, variant, compile time and rows per pipeline."""
from __future__ import annotations

from .. import operators


def _aggregates(op, out: dict) -> dict:
    if isinstance(op, operators.Aggregate):
        out[id(op.child)] = op
    for c in op.children:
        _aggregates(c, out)
    return out


def pipeline_tags(plan, pipes: list, analyze: bool, requested: str) -> list[str]:
    """One bracket text per pipeline, e.g. 'llvm specialised, compile=9.1 ms, rows=1000'."""
    aggs = _aggregates(plan, {})
    tags = []
    for p in pipes:
        agg = aggs.get(id(p[0])) if p else None
        info = getattr(p[0], "llvm_info", None) if p else None
        if agg is None:
            tags.append("vector")
        elif analyze and info is not None:
            tags.append(info.tag())
        else:
            tags.append(_planned(agg, requested))
    return tags


def _planned(agg, requested: str) -> str:
    from .analyze import Unsupported, analyse
    from .runtime import _filter_type

    if requested == "vector":
        return "vector"
    sink = getattr(agg, "_llvm", None)
    try:
        plan = sink.plan if sink is not None and sink.plan is not None else \
            analyse([agg.child] if isinstance(agg.child, _filter_type()) else [], agg)
    except Unsupported as e:
        return f"vector, {'llvm fallback' if requested == 'llvm' else 'not compiled'}: {e}"
    if sink is not None and sink.module is not None:
        return f"llvm ({plan.describe()}), cached module"
    return f"{'llvm' if requested == 'llvm' else 'auto: vector until compiled'} ({plan.describe()})"


def overall(tags: list[str]) -> str:
    return "llvm" if any(t.startswith("llvm") for t in tags) else "vector"


def stream_tag(pipe) -> str:
    """Backend line of a continuous view's stream (insert) pipeline."""
    sink = getattr(pipe, "_llvm", None)
    if sink is None:
        return "vector (no batch on another backend yet)"
    tag = sink.info.tag()
    if sink.info.shape_desc:
        tag += f"; compiled shape: {sink.info.shape_desc}"
    return tag
