"""What may change under a continuous view (thesis 4.2.7).

A table joined directly with a stream below a view's grouping (a *static*
table) was read once, when the view was created: its join hash table is part
of the stream pipeline.  Any change to its rows would leave the view silently
inconsistent, so it is refused: :func:`refuse_row_change` runs for every
operation that changes a table's rows (``Database.guard_rows``), whatever the
statement (DML, upsert, COPY, TRUNCATE, foreign-key actions).  Tables read
above the grouping are read at query time and may change freely.

ALTER TABLE is judged by columns, as PostgreSQL judges it for any view: a
column a continuous view reads keeps its type and name, and cannot be
dropped without CASCADE (:func:`views_reading`).  The view is kept as its SQL
text and planned again after a restart, so renames are refused too.
"""
from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp

from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, PgError
from ..sql.dialect import DIALECT
from ..sql.binder import ident


def visible(state, cv) -> bool:
    """Whether the view object ``cv`` is the continuous view ``state`` holds
    under its OID (a transaction sees its own CREATE VIEW, not others')."""
    r = state.rels.get(cv.rel.oid)
    return r is not None and r.continuous and r.sql == cv.rel.sql


def refuse_row_change(state, views, table_oid: int) -> None:
    """Refuse a change to a table one of ``views`` (visible in ``state``) joins directly with a stream."""
    for cv in views:
        if table_oid in cv.static_tables and visible(state, cv):
            t = state.rels.get(table_oid)
            raise PgError(FEATURE_NOT_SUPPORTED,
                          f'cannot modify table "{t.name if t is not None else table_oid}": '
                          f'continuous view "{cv.rel.name}" joins it directly with a stream',
                          detail="The view read the table once, when it was created; "
                                 "a change to its rows would not reach the view.",
                          hint="Drop the continuous view first, or join the table above the view's aggregation "
                               "(e.g. in a view on top of the continuous view) so changes are picked up at read time.")


def views_reading(state, rel, column: str | None = None) -> list:
    """Continuous views (relations) that read ``rel``, or only those that read
    its column ``column``.  A column counts as read when the view's query
    names it anywhere or selects ``*`` (names are not resolved to tables:
    a same-named column of another table counts too, which only errs on the
    side of refusing)."""
    out = []
    for v in list(state.rels.values()):
        if v.kind != "v" or not v.continuous or rel.oid not in v.depends_on:
            continue
        if column is not None:
            names, star = _names_read(v.sql)
            if not star and column not in names:
                continue
        out.append(v)
    return out


@functools.lru_cache(maxsize=256)
def _names_read(sql: str) -> tuple[frozenset[str], bool]:
    """Column names a query mentions, and whether it selects ``*`` or joins NATURAL."""

    tree = sqlglot.parse_one(sql, read=DIALECT)
    names = {ident(c.this) for c in tree.find_all(exp.Column) if not isinstance(c.this, exp.Star)}
    star = False
    for j in tree.find_all(exp.Join):
        names |= {ident(i) for i in j.args.get("using") or [] if isinstance(i, exp.Identifier)}
        star = star or str(j.args.get("method") or "").upper() == "NATURAL"
    for sel in tree.find_all(exp.Select):
        star = star or any(isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                           for e in sel.expressions)
    return frozenset(names), star
