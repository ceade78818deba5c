"""Parenthesized joins in FROM, ``FROM (a JOIN b ON ...) JOIN c ON ...``,
as the left-to-right joins they equal.

Why: pg_get_viewdef and pg_dump write every join of a view that way, and
sqlglot reads a parenthesized join as an unaliased subquery around a table
carrying the joins, which the planner does not take.  Joins are
left-associative, so a group that comes first is the same joins written
without the parentheses.  A later group is the same too when moving its
joins after the items before it cannot change the rows: inside a comma list
when it holds no RIGHT or FULL join (its ON conditions see only its own
tables), and as the right side of an inner join when it holds only inner
joins (the outer ON then joins the group's last join).  Anything else is
refused (0A000) rather than planned as something else.
"""
from __future__ import annotations

from sqlglot import exp

from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError


def is_group(node) -> bool:
    """An unaliased parenthesized join: (a JOIN b ON ...)."""
    if not isinstance(node, exp.Subquery) or node.args.get("alias") is not None:
        return False
    inner = node.this
    return (isinstance(inner, exp.Table) and bool(inner.args.get("joins"))) or is_group(inner) \
        or bool(node.args.get("joins"))


def _unfold(node) -> tuple[exp.Expression, list[exp.Join]]:
    """A group as its first item and the joins that follow it, in order."""
    if isinstance(node, exp.Subquery) and node.args.get("alias") is None and (is_group(node) or is_group(node.this)):
        base, joins = _unfold(node.this)
        return base, joins + list(node.args.get("joins") or [])
    if isinstance(node, exp.Table) and node.args.get("joins"):
        base = node.copy()
        joins = list(base.args.get("joins") or [])
        base.set("joins", None)
        return base, joins
    return node, []


def _outer(j: exp.Join) -> bool:
    return bool(j.args.get("side")) or str(j.args.get("kind") or "").upper() in ("FULL", "OUTER")


def _inner_only(joins: list[exp.Join]) -> bool:
    return not any(_outer(j) for j in joins)


def _refuse() -> PgError:
    return PgError(FEATURE_NOT_SUPPORTED, "a parenthesized join here is not supported",
                   hint="Write the joins from left to right without parentheses, or name the group as a "
                        "subquery: (SELECT ... FROM a JOIN b ON ...) AS g.")


def flatten(items: list, joins: list[exp.Join]) -> tuple[list, list[exp.Join]]:
    """FROM's comma items and joins with every parenthesized join unfolded (see the module)."""
    if not any(is_group(i) for i in items) and not any(is_group(j.this) for j in joins):
        return items, joins
    new_items, moved = [], []
    for k, it in enumerate(items):
        if not is_group(it):
            new_items.append(it)
            continue
        base, inner = _unfold(it)
        base, deeper = _unfold_all(base, inner)
        if k > 0 and any(str(j.args.get("side") or "").upper() in ("RIGHT", "FULL") or
                         str(j.args.get("kind") or "").upper() == "FULL" for j in deeper):
            raise _refuse()
        new_items.append(base)
        moved += deeper
    out: list[exp.Join] = []
    for j in joins:
        if not is_group(j.this):
            out.append(j)
            continue
        base, inner = _unfold(j.this)
        base, inner = _unfold_all(base, inner)
        if _outer(j) or not _inner_only(inner) or j.args.get("using"):
            raise _refuse()
        out.append(exp.Join(this=base))
        inner = [x.copy() for x in inner]
        on = j.args.get("on")
        if on is not None:
            last = inner[-1]
            mine = last.args.get("on")
            last.set("on", exp.and_(mine, on) if mine is not None else on)
        out += inner
    return new_items, moved + out


def _unfold_all(base, joins: list[exp.Join]) -> tuple[exp.Expression, list[exp.Join]]:
    """Unfold groups nested on the right inside a group too (inner joins only)."""
    _, flat = flatten([base], joins)
    return base, flat


def unfold_first(tree: exp.Expression) -> exp.Expression:
    """``tree`` with a parenthesized join that is the first FROM item of any
    SELECT in it written without the parentheses (the same joins, see the
    module): what pg_get_viewdef prints for the view it came from."""
    for sel in tree.find_all(exp.Select):
        frm = sel.args.get("from_")
        if frm is not None and is_group(frm.this):
            base, joins = _unfold(frm.this)
            frm.set("this", base)
            sel.set("joins", joins + list(sel.args.get("joins") or []))
    return tree
