"""EXPLAIN and EXPLAIN ANALYZE: operators, pipelines and their backend."""
from __future__ import annotations

import time

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError

from ..backends import interface as backends
from ..execution import operators
from ..sql.planner import estimates
from ..api import Result, ResultColumn
from .base import Stmt


def explain_text(stmt, session, ctx, analyze: bool) -> list[str]:
    plan = getattr(stmt, "plan", None)
    if plan is None:
        return [f"Utility statement: {type(stmt).__name__}"]
    backend = session.info.settings.get("executor_backend", "auto")
    t0 = time.perf_counter()
    if analyze:
        stmt.run(session, ctx)
    elapsed = (time.perf_counter() - t0) * 1000
    run = ctx.run if analyze else None
    lines = operators.explain_lines(plan, run, estimates=estimates.estimate_plan(plan, ctx.state))
    pipes = operators.pipelines(plan)
    tags = backends.native().pipeline_tags(plan, pipes, ctx.run, analyze, backend)
    used = "llvm" if any(t.startswith("llvm") for t in tags) else "vector"
    lines.append(f"Pipelines: {len(pipes)} (backend={used}, requested={backend})")
    for i, p in enumerate(pipes, 1):
        desc = " -> ".join(op.label() for op in reversed(p))
        extra = ""
        if run is not None:
            extra = f" rows={run.rows(p[0])} time={sum(run.seconds(o) for o in p) * 1000:.3f} ms"
        lines.append(f"  Pipeline {i} [{tags[i - 1]}]: {desc}{extra}")
    for rel in _continuous_views(plan):
        lines += continuous_view_lines(session, rel, run)
    if analyze:
        lines.append(f"Execution Time: {elapsed:.3f} ms")
    return lines


def _continuous_views(op) -> list:
    out = []
    rel = getattr(op, "continuous_view", None)
    if rel is not None:
        out.append(rel)
    for c in op.children:
        out += _continuous_views(c)
    return out


def continuous_view_lines(session, rel, run=None) -> list[str]:
    """The view's split (thesis 4.2.4): static, stream and upper pipelines."""
    cv = session.engine.streams.views.get(rel.oid)
    if cv is None:
        return [f"Continuous view {rel.name}: not instantiated"]
    lines = [f"Continuous view {rel.name} (version {cv.version}, {cv.groups()} groups, {cv.state_bytes()} state bytes)"]
    for oid, pipes in cv.pipelines.items():
        for p in pipes:
            for op in p.ops:
                if isinstance(op, operators.HashJoin):
                    build = " -> ".join(o.label() for o in reversed(operators.pipelines(op.right)[-1]))
                    lines.append(f"  Static pipeline [run at CREATE VIEW]: {build} -> Hash Build")
            chain = " -> ".join([p.scan.label()] + [("Hash Probe" if isinstance(o, operators.HashJoin) else o.label()) for o in p.ops])
            lines.append(f"  Stream pipeline [run per inserted batch]: {chain} -> {p.agg.label()} (thread-local state, "
                         f"{p.rows_in()} rows in)")
            lines.append(f"    Backend: {backends.native().stream_tag(p)}")
    lines.append("  Upper pipelines [run at read, after merging local states]:")
    lines += ["    " + line for line in operators.explain_lines(cv.plan, run)]
    return lines


class ExplainStmt(Stmt):
    cacheable = False

    def __init__(self, inner: Stmt, analyze: bool) -> None:
        if getattr(inner, "modifies_in_with", False):     # writable_cte.WritesThenStmt
            raise PgError(FEATURE_NOT_SUPPORTED, "EXPLAIN of a statement with data-modifying WITH queries is not supported",
                          hint="Run EXPLAIN on each statement in WITH, and on the main statement, on its own.")
        self.inner, self.analyze = inner, analyze

    def run(self, session, ctx):
        self.inner.authorize(ctx)       # PostgreSQL checks privileges for a plain EXPLAIN too
        lines = explain_text(self.inner, session, ctx, self.analyze)
        return Result(tag="EXPLAIN", columns=[ResultColumn("QUERY PLAN", type_oids.TEXT)],
                      batch=Batch([Col.from_pylist(lines, type_oids.TEXT)], len(lines)))
