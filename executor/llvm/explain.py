"""EXPLAIN support: the backend, variant, compile time and rows per pipeline."""
from __future__ import annotations

from .. import operators as P


def _aggregates(op, out: dict) -> dict:
    if isinstance(op, P.Aggregate):
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


def continuous_lines(plan, session) -> list[str]:
    """Stream pipelines (insert path) of the continuous views this plan reads."""
    views = getattr(getattr(session, "engine", None), "streams", None)
    views = getattr(views, "views", {}) if views is not None else {}
    out = []
    for rel in _view_rels(plan, []):
        cv = views.get(rel.oid)
        if cv is None:
            continue
        for pipes in cv.pipelines.values():
            for pipe in pipes:
                desc = " -> ".join([pipe.scan.label()] + [op.label() for op in pipe.ops] + [pipe.agg.label()])
                sink = getattr(pipe, "_llvm", None)
                tag = sink.info.tag() if sink is not None else "vector"
                shape = f" {{{sink.info.shape_desc}}}" if sink is not None and sink.info.shape_desc else ""
                out.append(f"  Stream pipeline of {rel.name} [{tag}]: {desc}{shape}")
    if out:
        out.insert(0, "Continuous view insert pipelines:")
    return out


def _view_rels(op, acc: list) -> list:
    rel = getattr(op, "continuous_view", None)
    if rel is not None and all(r.oid != rel.oid for r in acc):
        acc.append(rel)
    for c in op.children:
        _view_rels(c, acc)
    return acc
