"""Random statements: the shapes of SELECT the generator writes.

Each shape returns a :class:`Query` with its text and whether its row order
is decided: the ORDER BY names every output column (ties are then rows of
equal text) or there is none and the rows compare as multisets. LIMIT and
OFFSET appear only under a deciding ORDER BY, so both servers must return
the same rows. No LIMIT 0: PostgreSQL then evaluates nothing, so an error
it would raise is not raised, an accident of its executor rather than SQL.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from .exprs import KINDS, ORDERED_KINDS, ExprGen, Scope
from .schema import TABLES

TABLE_WEIGHTS = {"t1": 5, "t2": 3, "t3": 2}


@dataclass(frozen=True)
class Query:
    """One generated statement; ``ordered`` when its ORDER BY decides the row order."""

    sql: str
    ordered: bool
    shape: str


class QueryGen:
    """Statements for one seed: ``QueryGen(seed, prefix).queries(n)`` is reproducible."""

    def __init__(self, seed: int, prefix: str) -> None:
        self.rng = random.Random(seed)
        self.prefix = prefix
        self.e = ExprGen(self.rng, prefix)

    def queries(self, n: int) -> list[Query]:
        shapes = [
            (self.simple, 5), (self.grouped, 4), (self.join, 3), (self.windowed, 2),
            (self.setop, 2), (self.derived, 1), (self.ungrouped_agg, 1),
        ]
        funcs = [f for f, w in shapes for _ in range(w)]
        return [self.rng.choice(funcs)() for _ in range(n)]

    # -- pieces -------------------------------------------------------------------
    def table(self) -> str:
        names = [t.name for t in TABLES]
        return self.rng.choices(names, weights=[TABLE_WEIGHTS[n] for n in names])[0]

    def subtables(self) -> list[str]:
        return [t.name for t in TABLES]

    def select_list(self, scope: Scope, n: int | None = None, kinds: list[str] | None = None) -> list[str]:
        kinds = kinds or [self.e.pick(KINDS) for _ in range(n or self.e.pick((1, 2, 2, 3, 4)))]
        items = []
        for i, kind in enumerate(kinds):
            item = self.e.expr(scope, kind, self.e.pick((1, 2, 2, 3)))
            if self.e.chance(0.35):
                item += f" AS c{i}"
            items.append(item)
        return items

    def tail(self, width: int, *, allow_limit: bool = True) -> tuple[str, bool]:
        """ORDER BY over every output column (deciding) or none; LIMIT/OFFSET only if deciding."""
        if not self.e.chance(0.45):
            return "", False
        keys = []
        for i in range(1, width + 1):
            keys.append(f"{i}{self.e.pick(('', '', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST'))}")
        self.rng.shuffle(keys)
        out = " ORDER BY " + ", ".join(keys)
        if allow_limit and self.e.chance(0.5):
            out += f" LIMIT {self.e.pick(('1', '3', '10', 'ALL'))}"
            if self.e.chance(0.4):
                out += f" OFFSET {self.e.pick(('0', '2', '5'))}"
        return out, True

    def where(self, scope: Scope, p: float = 0.6) -> str:
        return f" WHERE {self.e.expr(scope, 'bool', self.e.pick((1, 2, 2, 3)))}" if self.e.chance(p) else ""

    # -- shapes ---------------------------------------------------------------------
    def simple(self) -> Query:
        table = self.table()
        scope = Scope([("x", table)], subtables=self.subtables())
        items = self.select_list(scope)
        distinct = "DISTINCT " if self.e.chance(0.15) else ""
        tail, ordered = self.tail(len(items))
        sql = f"SELECT {distinct}{', '.join(items)} FROM {self.prefix}{table} x{self.where(scope)}{tail}"
        return Query(sql, ordered, "simple")

    def grouped(self) -> Query:
        table = self.table()
        row_scope = Scope([("x", table)], subtables=self.subtables())
        keys = []
        for _ in range(self.e.pick((1, 1, 2))):
            kind = self.e.pick(("int", "int", "text", "bool", "date", "numeric", "interval"))
            keys.append((self.e.expr(Scope(row_scope.tables, sub=False), kind, self.e.pick((0, 0, 1))), kind))
        agg_scope = Scope(row_scope.tables, agg=True, sub=False, group_cols=keys)
        items = [k for k, _ in keys if self.e.chance(0.8)]
        items += self.select_list(agg_scope, self.e.pick((1, 2, 3)))
        having = ""
        if self.e.chance(0.3):
            having = f" HAVING {self.e.expr(agg_scope, 'bool', 1)}"
        group = ", ".join(k for k, _ in keys)
        tail, ordered = self.tail(len(items))
        sql = (f"SELECT {', '.join(items)} FROM {self.prefix}{table} x{self.where(row_scope)}"
               f" GROUP BY {group}{having}{tail}")
        return Query(sql, ordered, "grouped")

    def ungrouped_agg(self) -> Query:
        table = self.table()
        row_scope = Scope([("x", table)], subtables=self.subtables())
        scope = Scope(row_scope.tables, agg=True, sub=False)
        items = self.select_list(scope, self.e.pick((1, 2, 3)))
        having = f" HAVING {self.e.expr(scope, 'bool', 1)}" if self.e.chance(0.2) else ""
        return Query(f"SELECT {', '.join(items)} FROM {self.prefix}{table} x{self.where(row_scope)}{having}",
                     False, "ungrouped_agg")

    def join(self) -> Query:
        left, right = self.table(), self.table()
        kind = self.e.pick(("JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "JOIN", "LEFT JOIN", "CROSS JOIN"))
        scope = Scope([("l", left), ("r", right)], subtables=self.subtables())
        lkey, rkey = self.e.pick((("id", "id"), ("b", "b"), ("a", "a"), ("id", "b"), ("c", "b")))
        on = f" ON l.{lkey} = r.{rkey}"
        if kind == "FULL JOIN":
            if self.e.chance(0.3):
                on += f" AND l.{self.e.pick(('s', 'd'))} = r.{self.e.pick(('s', 'd'))}".replace(
                    "l.s = r.d", "l.s = r.s").replace("l.d = r.s", "l.d = r.d")
        elif kind != "CROSS JOIN" and self.e.chance(0.3):
            on += f" AND {self.e.expr(Scope(scope.tables, sub=False), 'bool', 1)}"
        if kind == "CROSS JOIN":
            on = ""
        if kind != "CROSS JOIN" and self.e.chance(0.2) and lkey == rkey:
            on = f" USING ({lkey})"
        items = self.select_list(scope)
        tail, ordered = self.tail(len(items))
        sql = (f"SELECT {', '.join(items)} FROM {self.prefix}{left} l {kind} {self.prefix}{right} r{on}"
               f"{self.where(scope, 0.5)}{tail}")
        return Query(sql, ordered, "join")

    def windowed(self) -> Query:
        table = self.table()
        scope = Scope([("x", table)], window=True, sub=False)
        items = ["x.id"] + self.select_list(scope, self.e.pick((1, 2, 3)))
        where = self.where(Scope(scope.tables, subtables=self.subtables()), 0.4)
        tail, ordered = self.tail(len(items))
        return Query(f"SELECT {', '.join(items)} FROM {self.prefix}{table} x{where}{tail}", ordered, "window")

    def setop(self) -> Query:
        kinds = [self.e.pick(ORDERED_KINDS + ("bool",)) for _ in range(self.e.pick((1, 2, 2, 3)))]
        sides = []
        for _ in range(2):
            table = self.table()
            scope = Scope([("x", table)], subtables=self.subtables())
            items = ", ".join(self.e.expr(scope, k, self.e.pick((0, 1, 2))) for k in kinds)
            sides.append(f"SELECT {items} FROM {self.prefix}{table} x{self.where(scope, 0.5)}")
        op = self.e.pick(("UNION", "UNION ALL", "INTERSECT", "EXCEPT", "INTERSECT ALL", "EXCEPT ALL"))
        tail, ordered = self.tail(len(kinds))
        return Query(f"{sides[0]} {op} {sides[1]}{tail}", ordered, "setop")

    def derived(self) -> Query:
        inner = self.grouped() if self.e.chance(0.5) else self.simple()
        if inner.sql.count(" ORDER BY ") or " LIMIT " in inner.sql:
            return inner
        width = _output_width(inner.sql)
        alias = self.e.fresh_alias()
        cols = ", ".join(f"k{i}" for i in range(width))
        outer_cols = ", ".join(f"{alias}.k{i}" for i in range(width))
        where = f" WHERE {alias}.k0 IS NOT NULL" if self.e.chance(0.5) else ""
        distinct = "DISTINCT " if self.e.chance(0.3) else ""
        tail, ordered = self.tail(width)
        return Query(f"SELECT {distinct}{outer_cols} FROM ({inner.sql}) AS {alias}({cols}){where}{tail}",
                     ordered, "derived")


def _output_width(sql: str) -> int:
    """Number of top-level select-list items of a generated SELECT."""
    depth, count = 0, 1
    body = sql[len("SELECT "):]
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "'":
            i = body.index("'", i + 1)
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            count += 1
        elif depth == 0 and body.startswith(" FROM ", i):
            return count
        i += 1
    return count
