"""EXPLAIN and EXPLAIN ANALYZE: operators, pipelines and their backend."""
from __future__ import annotations

import time

from . import operators as P


def explain_text(stmt, session, ctx, analyze: bool) -> list[str]:
    plan = getattr(stmt, "plan", None)
    if plan is None:
        return [f"Utility statement: {type(stmt).__name__}"]
    backend = session.info.settings.get("executor_backend", "auto")
    used = "vector"
    t0 = time.perf_counter()
    if analyze:
        stmt.run(session, ctx)
    elapsed = (time.perf_counter() - t0) * 1000
    lines = P.explain_lines(plan, analyze)
    pipes = P.pipelines(plan)
    lines.append(f"Pipelines: {len(pipes)} (backend={used}, requested={backend})")
    for i, p in enumerate(pipes, 1):
        desc = " -> ".join(op.label() for op in reversed(p))
        extra = ""
        if analyze:
            extra = f" rows={getattr(p[0], 'rows_out', 0)} time={sum(getattr(o, 'elapsed', 0.0) for o in p) * 1000:.3f} ms"
        lines.append(f"  Pipeline {i} [{used}]: {desc}{extra}")
    cv = _continuous(plan)
    if cv:
        lines.append("Continuous view pipelines: see splitstream.views")
    if analyze:
        lines.append(f"Execution Time: {elapsed:.3f} ms")
    return lines


def _continuous(op) -> bool:
    return getattr(op, "continuous_view", None) is not None or any(_continuous(c) for c in op.children)
