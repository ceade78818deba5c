"""Random schemas and statements for the SQL fuzzing campaign (``sqlfuzz``).

In the manner of sqlsmith: a random schema of small tables with every
column type the campaign covers, NULLs and edge values, then random typed
expressions grown into queries (projections, WHERE, joins, GROUP BY/HAVING,
aggregates, ORDER BY/LIMIT, subqueries, CASE, casts, set operations) and DML.
Everything is drawn from one ``random.Random``, so a seed is a campaign.

Only deterministic SQL is generated: no now(), no random(), no volatile
functions; an ORDER BY is emitted only over every output column (ties then
print alike up to numeric scale, see ``sqlfuzz``), and LIMIT only with it.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

INTS = ("int2", "int4", "int8")
NUMBERS = (*INTS, "numeric", "float8")
TYPES = (*NUMBERS, "text", "bool", "date", "timestamp", "timestamptz")
ORDERED = tuple(t for t in TYPES if t != "bool")

#: literals per type, edge values first in mind: limits, zero, negative zero, NaN, infinities, empty text
EDGES: dict[str, tuple[str, ...]] = {
    "int2": ("0", "1", "-1", "7", "-32768", "32767", "100"),
    "int4": ("0", "1", "-1", "42", "-2147483648", "2147483647", "1000"),
    "int8": ("0", "1", "-1", "9223372036854775807", "-9223372036854775808", "4294967296", "12"),
    "numeric": ("0", "1.5", "-2.25", "0.001", "123456789.123456789", "-0.5", "1e20", "10.10", "'NaN'"),
    "float8": ("0", "-0", "1.5", "-2.5", "'NaN'", "'Infinity'", "'-Infinity'", "1e308", "1e-300", "3.25"),
    "text": ("''", "'a'", "'A'", "'abc'", "' x '", "'Z9'", "'a%b'", "'hello world'", "'42'"),
    "bool": ("true", "false"),
    "date": ("'2000-01-01'", "'1970-01-01'", "'2024-02-29'", "'1999-12-31'", "'4713-11-24 BC'", "'5874897-12-31'",
             "'infinity'", "'-infinity'"),
    "timestamp": ("'2000-01-01 00:00:00'", "'2024-02-29 12:34:56.789'", "'1970-01-01 00:00:00'",
                  "'1999-12-31 23:59:59.999999'", "'infinity'", "'-infinity'", "'2020-06-15 08:00:00'"),
    "timestamptz": ("'2000-01-01 00:00:00+00'", "'2024-02-29 12:34:56.789+02'", "'1970-01-01 00:00:00+00'",
                    "'1999-12-31 23:59:59.999999-08'", "'infinity'", "'-infinity'", "'2020-06-15 08:00:00+05:30'"),
}
#: small values mostly (so joins and groups meet), edges sometimes
SMALL: dict[str, tuple[str, ...]] = {
    "int2": ("0", "1", "2", "3", "-1"), "int4": ("0", "1", "2", "3", "5"), "int8": ("0", "1", "2", "3", "4"),
    "numeric": ("0", "1", "2.5", "3.00", "-1.5"), "float8": ("0", "1", "2.5", "3", "-1.5"),
    "text": ("'a'", "'b'", "'c'", "''", "'ab'"), "bool": ("true", "false"),
    "date": ("'2000-01-01'", "'2000-01-02'", "'2020-03-01'"),
    "timestamp": ("'2000-01-01 00:00:00'", "'2000-01-01 12:00:00'", "'2020-03-01 00:00:00'"),
    "timestamptz": ("'2000-01-01 00:00:00+00'", "'2000-01-01 12:00:00+00'", "'2020-03-01 00:00:00+01'"),
}


#: temporal values outside splitstream's range (years 1-9999, no infinity): drawn only in rounds that
#: ask for them, because every statement touching them is a known difference (see sql_known_differences.toml)
EXTREME_TEMPORAL = ("'4713-11-24 BC'", "'5874897-12-31'", "'infinity'", "'-infinity'")


def literal(rng: random.Random, typ: str, edge: float = 0.25, extremes: bool = False) -> str:
    """A typed literal (always cast, so every context resolves its type as PostgreSQL does)."""
    pool = EDGES[typ] if rng.random() < edge else SMALL[typ]
    if not extremes:
        pool = tuple(v for v in pool if v not in EXTREME_TEMPORAL)
    value = rng.choice(pool)
    if value.startswith("-"):           # -32768::int2 would cast 32768 first, then negate
        value = f"({value})"
    return f"{value}::{typ}"


@dataclass
class Table:
    name: str
    columns: list[tuple[str, str]]       # (name, type)
    rows: list[list[str]] = field(default_factory=list)

    def create_sql(self) -> str:
        return f"CREATE TABLE {self.name} (" + ", ".join(f"{c} {t}" for c, t in self.columns) + ")"

    def insert_sql(self) -> str | None:
        if not self.rows:
            return None
        return f"INSERT INTO {self.name} VALUES " + ", ".join("(" + ", ".join(r) + ")" for r in self.rows)


def random_schema(rng: random.Random, prefix: str, tables: int = 3, extremes: bool = False) -> list[Table]:
    """Tables ``{prefix}_t0..``: an int4 key ``id`` plus 3-7 random columns, 0-14 rows with NULLs and edges."""
    out = []
    for i in range(tables):
        cols = [("id", "int4")] + [(f"c{j}", rng.choice(TYPES)) for j in range(rng.randint(3, 7))]
        t = Table(f"{prefix}_t{i}", cols)
        for k in range(rng.choice((0, 1, 3, 6, 10, 14))):
            t.rows.append([str(k) if rng.random() < 0.9 else "NULL"]
                          + [random_value(rng, typ, extremes) for _, typ in cols[1:]])
        out.append(t)
    return out


def random_value(rng: random.Random, typ: str, extremes: bool = False) -> str:
    r = rng.random()
    if r < 0.15:
        return "NULL"
    return literal(rng, typ, edge=0.3, extremes=extremes)


# ---------------------------------------------------------------------------
# expressions
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Col:
    ref: str
    typ: str


class ExprGen:
    """Typed random expressions over the columns in scope."""

    def __init__(self, rng: random.Random, tables: list[Table], extremes: bool = False) -> None:
        self.rng = rng
        self.tables = tables
        self.extremes = extremes
        self.aliases = 0

    def alias(self, stem: str = "q") -> str:
        self.aliases += 1
        return f"{stem}{self.aliases}"

    def cols(self, scope: list[Col], typ: str) -> list[Col]:
        return [c for c in scope if c.typ == typ]

    def expr(self, typ: str, scope: list[Col], depth: int = 2) -> str:
        rng = self.rng
        have = self.cols(scope, typ)
        if depth <= 0 or rng.random() < 0.3:
            if have and rng.random() < 0.8:
                return rng.choice(have).ref
            return literal(rng, typ, extremes=self.extremes) if rng.random() > 0.05 else f"NULL::{typ}"
        maker = getattr(self, "_" + typ)
        choice = rng.random()
        if choice < 0.08:
            return self._case(typ, scope, depth)
        if choice < 0.13:
            return f"coalesce({self.expr(typ, scope, depth - 1)}, {self.expr(typ, scope, depth - 1)})"
        if choice < 0.16:
            return f"nullif({self.expr(typ, scope, depth - 1)}, {self.expr(typ, scope, depth - 1)})"
        if choice < 0.20 and typ in ORDERED:
            fn = rng.choice(("greatest", "least"))
            return f"{fn}({self.expr(typ, scope, depth - 1)}, {self.expr(typ, scope, depth - 1)})"
        if choice < 0.27:
            return self._cast_to(typ, scope, depth)
        return maker(scope, depth)

    def _case(self, typ: str, scope: list[Col], depth: int) -> str:
        whens = " ".join(f"WHEN {self.expr('bool', scope, depth - 1)} THEN {self.expr(typ, scope, depth - 1)}"
                         for _ in range(self.rng.randint(1, 2)))
        tail = f" ELSE {self.expr(typ, scope, depth - 1)}" if self.rng.random() < 0.7 else ""
        return f"CASE {whens}{tail} END"

    CASTS: dict[str, tuple[str, ...]] = {
        "int2": ("int4", "int8", "numeric", "float8", "text"),
        "int4": ("int2", "int8", "numeric", "float8", "text", "bool"),
        "int8": ("int2", "int4", "numeric", "float8", "text"),
        "numeric": NUMBERS + ("text",),
        "float8": NUMBERS + ("text",),
        "text": TYPES,
        "bool": ("int4", "text"),
        "date": ("timestamp", "timestamptz", "text"),
        "timestamp": ("date", "timestamptz", "text"),
        "timestamptz": ("date", "timestamp", "text"),
    }

    def _cast_to(self, typ: str, scope: list[Col], depth: int) -> str:
        src = self.rng.choice(self.CASTS[typ])
        return f"CAST({self.expr(src, scope, depth - 1)} AS {typ})"

    def _arith(self, typ: str, scope: list[Col], depth: int, ops: str) -> str:
        rng = self.rng
        chain = NUMBERS[: NUMBERS.index(typ) + 1]
        a = self.expr(typ, scope, depth - 1)
        other = rng.choice(chain) if typ != "int2" else "int2"
        b = self.expr(other, scope, depth - 1)
        if rng.random() < 0.5:
            a, b = b, a
        return f"({a} {rng.choice(ops)} {b})"

    def _int_common(self, typ: str, scope: list[Col], depth: int) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.55:
            return self._arith(typ, scope, depth, "+-*/%")
        if r < 0.65:
            return f"(- {self.expr(typ, scope, depth - 1)})"
        if r < 0.75:
            return f"abs({self.expr(typ, scope, depth - 1)})"
        if typ == "int4" and r < 0.9:
            return f"{rng.choice(('length', 'ascii'))}({self.expr('text', scope, depth - 1)})"
        if typ == "int4":
            return f"({self.expr('date', scope, depth - 1)} - {self.expr('date', scope, depth - 1)})"
        return f"sign({self.expr(typ, scope, depth - 1)})" if typ != "int2" else self._arith(typ, scope, depth, "+-*")

    def _int2(self, scope: list[Col], depth: int) -> str:
        return self._int_common("int2", scope, depth)

    def _int4(self, scope: list[Col], depth: int) -> str:
        return self._int_common("int4", scope, depth)

    def _int8(self, scope: list[Col], depth: int) -> str:
        return self._int_common("int8", scope, depth)

    def _numeric(self, scope: list[Col], depth: int) -> str:
        rng = self.rng
        r = rng.random()
        inner = self.expr("numeric", scope, depth - 1)
        if r < 0.5:
            return self._arith("numeric", scope, depth, "+-*/%")
        if r < 0.65:
            return f"round({inner}, {rng.randint(-1, 3)})"
        if r < 0.75:
            return f"trunc({inner}{', ' + str(rng.randint(0, 2)) if rng.random() < 0.5 else ''})"
        return f"{rng.choice(('abs', 'ceil', 'floor', 'sign', 'round'))}({inner})"

    def _float8(self, scope: list[Col], depth: int) -> str:
        rng = self.rng
        r = rng.random()
        inner = self.expr("float8", scope, depth - 1)
        if r < 0.5:
            return self._arith("float8", scope, depth, "+-*/")
        if r < 0.6:
            return f"sqrt(abs({inner}))"
        if r < 0.7:
            return f"date_part('{rng.choice(('year', 'month', 'day', 'hour', 'dow'))}', {self.expr('timestamp', scope, depth - 1)})"
        return f"{rng.choice(('abs', 'ceil', 'floor', 'sign', 'round', 'trunc'))}({inner})"

    def _text(self, scope: list[Col], depth: int) -> str:
        rng = self.rng
        r = rng.random()
        a = self.expr("text", scope, depth - 1)
        if r < 0.25:
            return f"({a} || {self.expr(rng.choice(('text', 'text', 'int4')), scope, depth - 1)})"
        if r < 0.45:
            return f"{rng.choice(('upper', 'lower', 'btrim', 'ltrim', 'rtrim', 'reverse'))}({a})"
        if r < 0.6:
            return f"substr({a}, {rng.randint(-1, 3)}{', ' + str(rng.randint(0, 3)) if rng.random() < 0.6 else ''})"
        if r < 0.7:
            return f"replace({a}, {literal(rng, 'text')}, {literal(rng, 'text')})"
        if r < 0.8:
            return f"{rng.choice(('left', 'right'))}({a}, {rng.randint(-2, 3)})"
        if r < 0.9:
            return f"concat({a}, {self.expr(rng.choice(TYPES), scope, depth - 1)})"
        return f"lpad({a}, {rng.randint(0, 5)}, 'x')"

    def _bool(self, scope: list[Col], depth: int) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.4:
            t = rng.choice(ORDERED)
            op = rng.choice(("=", "<>", "<", "<=", ">", ">=", "IS DISTINCT FROM", "IS NOT DISTINCT FROM"))
            return f"({self.expr(t, scope, depth - 1)} {op} {self.expr(t, scope, depth - 1)})"
        if r < 0.55:
            op = rng.choice(("AND", "OR"))
            return f"({self.expr('bool', scope, depth - 1)} {op} {self.expr('bool', scope, depth - 1)})"
        if r < 0.6:
            return f"(NOT {self.expr('bool', scope, depth - 1)})"
        if r < 0.7:
            t = rng.choice(TYPES)
            return f"({self.expr(t, scope, depth - 1)} IS {rng.choice(('', 'NOT '))}NULL)"
        if r < 0.78:
            t = rng.choice(ORDERED)
            return (f"({self.expr(t, scope, depth - 1)} {rng.choice(('', 'NOT '))}BETWEEN "
                    f"{self.expr(t, scope, 0)} AND {self.expr(t, scope, 0)})")
        if r < 0.86:
            t = rng.choice(ORDERED)
            items = ", ".join(self.expr(t, scope, 0) for _ in range(rng.randint(1, 3)))
            return f"({self.expr(t, scope, depth - 1)} {rng.choice(('', 'NOT '))}IN ({items}))"
        if r < 0.92:
            pat = rng.choice(("'a%'", "'%b%'", "'_'", "''", "'%'", "'A%'"))
            return f"({self.expr('text', scope, depth - 1)} {rng.choice(('LIKE', 'NOT LIKE', 'ILIKE'))} {pat})"
        return f"({self.expr('bool', scope, depth - 1)} IS {rng.choice(('TRUE', 'FALSE', 'NOT TRUE', 'UNKNOWN'))})"

    def _date(self, scope: list[Col], depth: int) -> str:
        rng = self.rng
        if rng.random() < 0.6:
            return f"({self.expr('date', scope, depth - 1)} {rng.choice('+-')} {rng.randint(-40, 40)})"
        return f"CAST(date_trunc('{rng.choice(('month', 'year'))}', {self.expr('timestamp', scope, depth - 1)}) AS date)"

    def _timestamp(self, scope: list[Col], depth: int) -> str:
        rng = self.rng
        if rng.random() < 0.5:
            return f"date_trunc('{rng.choice(('day', 'hour', 'month', 'year', 'minute'))}', {self.expr('timestamp', scope, depth - 1)})"
        iv = rng.choice(("'1 day'", "'2 hours'", "'-3 days 4 hours'", "'1 month'", "'90 minutes'"))
        return f"({self.expr('timestamp', scope, depth - 1)} {rng.choice('+-')} interval {iv})"

    def _timestamptz(self, scope: list[Col], depth: int) -> str:
        rng = self.rng
        if rng.random() < 0.4:
            return f"date_trunc('{rng.choice(('day', 'hour', 'month'))}', {self.expr('timestamptz', scope, depth - 1)})"
        iv = rng.choice(("'1 day'", "'2 hours'", "'-1 day'", "'1 month'"))
        return f"({self.expr('timestamptz', scope, depth - 1)} {rng.choice('+-')} interval {iv})"

    # -- aggregates ----------------------------------------------------------
    AGG_RESULT: dict[str, dict[str, str]] = {
        "sum": {"int2": "int8", "int4": "int8", "int8": "numeric", "numeric": "numeric", "float8": "float8"},
        "avg": {"int2": "numeric", "int4": "numeric", "int8": "numeric", "numeric": "numeric", "float8": "float8"},
        "stddev_samp": {"int4": "numeric", "numeric": "numeric", "float8": "float8"},
        "var_pop": {"int8": "numeric", "float8": "float8"},
    }

    def aggregate(self, scope: list[Col], depth: int = 1) -> tuple[str, str]:
        """(aggregate call, result type)."""
        rng = self.rng
        r = rng.random()
        distinct = "DISTINCT " if rng.random() < 0.15 else ""
        if r < 0.15:
            return "count(*)", "int8"
        if r < 0.3:
            return f"count({distinct}{self.expr(rng.choice(TYPES), scope, depth)})", "int8"
        if r < 0.6:
            fn = rng.choice(("sum", "sum", "avg", "avg", "stddev_samp", "var_pop"))
            arg_t = rng.choice(sorted(self.AGG_RESULT[fn]))
            return f"{fn}({distinct}{self.expr(arg_t, scope, depth)})", self.AGG_RESULT[fn][arg_t]
        if r < 0.85:
            t = rng.choice(ORDERED)
            return f"{rng.choice(('min', 'max'))}({self.expr(t, scope, depth)})", t
        if r < 0.93:
            return f"{rng.choice(('bool_and', 'bool_or', 'every'))}({self.expr('bool', scope, depth)})", "bool"
        arg = self.expr("text", scope, depth)
        return f"string_agg({arg}, ',' ORDER BY {arg})", "text"


# ---------------------------------------------------------------------------
# statements
# ---------------------------------------------------------------------------

@dataclass
class Statement:
    sql: str
    kind: str                 # select | dml
    ordered: bool = False     # ORDER BY over every output column: compare in order
    shape: str = ""           # which generator made it (for the figures)


class QueryGen(ExprGen):
    """Whole statements over the schema."""

    def from_clause(self, depth: int = 1) -> tuple[str, list[Col]]:
        """A FROM clause (one table, a join of two or three, or a derived table) and its columns."""
        rng = self.rng
        r = rng.random()
        if r < 0.45 or depth <= 0:
            return self._table_ref()
        if r < 0.85:
            left, lscope = self._table_ref()
            for _ in range(1 if rng.random() < 0.8 else 2):
                right, rscope = self._table_ref()
                kind = rng.choice(("JOIN", "JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "CROSS JOIN"))
                if kind == "CROSS JOIN":
                    left = f"{left} CROSS JOIN {right}"
                else:
                    left = f"{left} {kind} {right} ON {self._join_condition(lscope, rscope)}"
                lscope = lscope + rscope
            return left, lscope
        sub, cols = self.select(depth=0, want_names=True)
        alias = self.alias("d")
        return f"({sub.sql}) AS {alias}", [Col(f"{alias}.{name}", t) for name, t in cols]

    def _table_ref(self) -> tuple[str, list[Col]]:
        t = self.rng.choice(self.tables)
        alias = self.alias("a")
        return f"{t.name} AS {alias}", [Col(f"{alias}.{c}", typ) for c, typ in t.columns]

    def _join_condition(self, lscope: list[Col], rscope: list[Col]) -> str:
        rng = self.rng
        pairs = [(a, b) for a in lscope for b in rscope if a.typ == b.typ
                 or (a.typ in NUMBERS and b.typ in NUMBERS)]
        if pairs and rng.random() < 0.85:
            a, b = rng.choice(pairs)
            cond = f"{a.ref} = {b.ref}"
            if rng.random() < 0.2:
                cond += f" AND {self.expr('bool', lscope + rscope, 1)}"
            return cond
        return self.expr("bool", lscope + rscope, 2)

    def select(self, depth: int = 1, want_names: bool = False) -> tuple[Statement, list[tuple[str, str]]]:
        """A SELECT (plain, DISTINCT or grouped) and its output columns (name, type)."""
        rng = self.rng
        frm, scope = self.from_clause(depth)
        where = f" WHERE {self._predicate(scope, depth)}" if rng.random() < 0.6 else ""
        r = rng.random()
        if r < 0.35:
            items, group, having, shape = self._grouped(scope)
        else:
            items = [self._item(scope, depth) for _ in range(rng.randint(1, 4))]
            group, having, shape = "", "", "plain"
        names = [f"x{i}" for i in range(len(items))]
        distinct = "DISTINCT " if shape == "plain" and rng.random() < 0.15 else ""
        sel = ", ".join(f"{e} AS {n}" for (e, _), n in zip(items, names))
        sql = f"SELECT {distinct}{sel} FROM {frm}{where}{group}{having}"
        ordered = False
        if rng.random() < 0.35 and not want_names:
            sql += " ORDER BY " + ", ".join(f"{i + 1}{rng.choice(('', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST'))}"
                                            for i in range(len(items)))
            ordered = True
            if rng.random() < 0.6:
                sql += f" LIMIT {rng.randint(0, 6)}"
                if rng.random() < 0.3:
                    sql += f" OFFSET {rng.randint(0, 3)}"
        return Statement(sql, "select", ordered, shape), [(n, t) for (_, t), n in zip(items, names)]

    def _predicate(self, scope: list[Col], depth: int) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.12 and depth > 0:
            sub = self._subquery_scalar_source(scope)
            return f"{rng.choice(('', 'NOT '))}EXISTS ({sub})"
        if r < 0.24 and depth > 0:
            t = rng.choice(ORDERED)
            inner, _ = self._one_column_query(t, scope)
            return f"{self.expr(t, scope, 1)} {rng.choice(('', 'NOT '))}IN ({inner})"
        return self.expr("bool", scope, 3)

    def _item(self, scope: list[Col], depth: int) -> tuple[str, str]:
        rng = self.rng
        t = rng.choice(TYPES)
        if depth > 0 and rng.random() < 0.12:
            inner, t = self._scalar_subquery(scope)
            return f"({inner})", t
        return self.expr(t, scope, rng.randint(0, 3)), t

    def _grouped(self, scope: list[Col]) -> tuple[list[tuple[str, str]], str, str, str]:
        rng = self.rng
        keys = [(self.expr(t, scope, rng.randint(0, 1)), t)
                for t in (rng.choice(TYPES) for _ in range(rng.randint(0, 2)))]
        aggs = [self.aggregate(scope, rng.randint(0, 2)) for _ in range(rng.randint(1, 3))]
        items = keys + aggs
        rng.shuffle(items)
        group = (" GROUP BY " + ", ".join(k for k, _ in keys)) if keys else ""
        having = ""
        if rng.random() < 0.3:
            agg, t = self.aggregate(scope, 1)
            other = literal(rng, t) if t != "bool" else rng.choice(("true", "false"))
            having = f" HAVING {agg} {rng.choice(('>', '<', '=', '<>', '>='))} {other}"
        return items, group, having, "grouped" if keys else "aggregate"

    def _scalar_subquery(self, scope: list[Col]) -> tuple[str, str]:
        """A one-value subquery, correlated with the outer scope or not; sometimes it may return several rows."""
        rng = self.rng
        t, inner = rng.choice(self.tables), self.alias("s")
        iscope = [Col(f"{inner}.{c}", typ) for c, typ in t.columns]
        corr = ""
        if rng.random() < 0.5:
            corr = f" WHERE {self.expr('bool', iscope + scope, 2)}"
        if rng.random() < 0.85:
            agg, typ = self.aggregate(iscope, 1)
            return f"SELECT {agg} FROM {t.name} AS {inner}{corr}", typ
        c = rng.choice(iscope)
        return f"SELECT {c.ref} FROM {t.name} AS {inner}{corr} ORDER BY 1 LIMIT 1", c.typ

    def _subquery_scalar_source(self, scope: list[Col]) -> str:
        t, inner = self.rng.choice(self.tables), self.alias("e")
        iscope = [Col(f"{inner}.{c}", typ) for c, typ in t.columns]
        return f"SELECT 1 FROM {t.name} AS {inner} WHERE {self.expr('bool', iscope + scope, 2)}"

    def _one_column_query(self, typ: str, scope: list[Col]) -> tuple[str, str]:
        t, inner = self.rng.choice(self.tables), self.alias("i")
        iscope = [Col(f"{inner}.{c}", ct) for c, ct in t.columns]
        where = f" WHERE {self.expr('bool', iscope + scope, 1)}" if self.rng.random() < 0.5 else ""
        return f"SELECT {self.expr(typ, iscope, 1)} FROM {t.name} AS {inner}{where}", typ

    def set_operation(self) -> Statement:
        """Two or three SELECTs of one row type joined by UNION / INTERSECT / EXCEPT (ALL or not)."""
        rng = self.rng
        types = [rng.choice(TYPES) for _ in range(rng.randint(1, 3))]
        parts = []
        for _ in range(rng.randint(2, 3)):
            frm, scope = self._table_ref()
            where = f" WHERE {self.expr('bool', scope, 2)}" if rng.random() < 0.5 else ""
            sel = ", ".join(f"{self.expr(t, scope, rng.randint(0, 2))} AS x{i}" for i, t in enumerate(types))
            parts.append(f"SELECT {sel} FROM {frm}{where}")
        sql = parts[0]
        for p in parts[1:]:
            op = rng.choice(("UNION", "UNION ALL", "UNION", "INTERSECT", "EXCEPT", "EXCEPT ALL", "INTERSECT ALL"))
            sql = f"{sql} {op} {p}"
        ordered = rng.random() < 0.3
        if ordered:
            sql += " ORDER BY " + ", ".join(str(i + 1) for i in range(len(types)))
            if rng.random() < 0.5:
                sql += f" LIMIT {rng.randint(0, 5)}"
        return Statement(sql, "select", ordered, "setop")

    def dml(self) -> Statement:
        rng = self.rng
        t = rng.choice(self.tables)
        scope = [Col(c, typ) for c, typ in t.columns]
        r = rng.random()
        if r < 0.4:
            rows = ", ".join("(" + ", ".join(random_value(rng, typ, self.extremes) for _, typ in t.columns) + ")"
                             for _ in range(rng.randint(1, 3)))
            return Statement(f"INSERT INTO {t.name} VALUES {rows}", "dml", shape="insert")
        if r < 0.5:
            src = rng.choice(self.tables)
            sel = ", ".join(self.expr(typ, [Col(c, ct) for c, ct in src.columns], 1) for _, typ in t.columns)
            return Statement(f"INSERT INTO {t.name} SELECT {sel} FROM {src.name} WHERE {self.expr('bool', [Col(c, ct) for c, ct in src.columns], 1)}",
                             "dml", shape="insert_select")
        if r < 0.8:
            sets = rng.sample(t.columns[1:], k=rng.randint(1, min(2, len(t.columns) - 1)))
            assign = ", ".join(f"{c} = {self.expr(typ, scope, 2)}" for c, typ in sets)
            return Statement(f"UPDATE {t.name} SET {assign} WHERE {self.expr('bool', scope, 2)}", "dml", shape="update")
        return Statement(f"DELETE FROM {t.name} WHERE {self.expr('bool', scope, 2)}", "dml", shape="delete")

    def statement(self) -> Statement:
        r = self.rng.random()
        if r < 0.12:
            return self.dml()
        if r < 0.24:
            return self.set_operation()
        return self.select(depth=1)[0]
