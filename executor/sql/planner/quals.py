"""WHERE-clause qualifier helpers on parse trees (PostgreSQL's prepqual.c).

Why a module of its own: splitting a condition into AND-ed conjuncts and
factoring common terms out of ORs is what lets the FROM/join planner find
hash-join keys and push filters; ``executor.decorrelate`` and DML use the
same splitting, so it lives apart from any one planning step.
"""
from __future__ import annotations

from sqlglot import exp
from ..dialect import DIALECT


def split_conjuncts(node: exp.Expr | None) -> list[exp.Expr]:
    if node is None:
        return []
    if isinstance(node, exp.And):
        return split_conjuncts(node.this) + split_conjuncts(node.expression)
    if isinstance(node, exp.Paren) and isinstance(node.this, exp.And):
        return split_conjuncts(node.this)
    return [node]


def disjuncts(node: exp.Expr) -> list[exp.Expr]:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Or):
        return disjuncts(node.this) + disjuncts(node.expression)
    return [node]


def factor_ors(conjuncts: list[exp.Expr]) -> list[exp.Expr]:
    """``(A AND B) OR (A AND C)`` -> ``A AND (B OR C)``, as PostgreSQL's
    canonicalize_qual does: the common ``A`` may then become a join key
    (TPC-H Q19 has its only join condition inside each OR branch)."""
    out: list[exp.Expr] = []
    for c in conjuncts:
        ds = disjuncts(c)
        if len(ds) < 2:
            out.append(c)
            continue
        parts = [split_conjuncts(d.this if isinstance(d, exp.Paren) else d) for d in ds]
        texts = [[p.sql(DIALECT) for p in ps] for ps in parts]
        common = [t for t in dict.fromkeys(texts[0]) if all(t in ts for ts in texts[1:])]
        if not common:
            out.append(c)
            continue
        for t in common:
            out.append(parts[0][texts[0].index(t)])
        rest: list[exp.Expr] = []
        for ps, ts in zip(parts, texts):
            left = [p for p, t in zip(ps, ts) if t not in common]
            if not left:  # one branch is exactly the common part: the OR is implied
                rest = []
                break
            rest.append(exp.and_(*left) if len(left) > 1 else left[0])
        if rest:
            out.append(exp.or_(*[exp.paren(r) for r in rest]))
    return out
