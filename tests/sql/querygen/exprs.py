"""Typed random expressions over the columns in scope.

Every expression is generated for a *kind* (``int``, ``numeric``,
``float``, ``text``, ``bool``, ``date``, ``ts``, ``interval``) so that most
of them bind; the exact PostgreSQL type (int2 + int8, numeric * float8...)
is left to the servers, whose RowDescription OIDs are compared. Operations
that may fail on edge values (overflow, division by zero, bad casts) are
drawn with a low weight: errors and their SQLSTATEs are compared too, but a
query that always fails compares nothing else.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from .schema import COLUMNS

NUMBER_KINDS = ("int", "numeric", "float")
ORDERED_KINDS = ("int", "numeric", "float", "text", "date", "ts", "interval")
KINDS = ORDERED_KINDS + ("bool",)
CAST_NAME = {"int": "int4", "numeric": "numeric", "float": "float8", "text": "text", "bool": "bool",
             "date": "date", "ts": "timestamptz", "interval": "interval"}

LITERALS: dict[str, list[str]] = {
    "int": ["0", "1", "2", "3", "-1", "10", "100", "7"],
    "numeric": ["1.5", "0.25", "-3.75", "100.001", "2.0"],
    "float": ["2.5::float8", "'-0.5'::float8", "1e3::float8", "0.1::float8"],
    "text": ["'abc'", "''", "'a'", "'Zz'", "'x,y,z'", "'12'", "'hello world'"],
    "bool": ["true", "false", "NULL::bool"],
    "date": ["DATE '2024-01-15'", "DATE '2000-02-29'", "'1999-01-01'::date"],
    "ts": ["TIMESTAMPTZ '2024-03-10 08:00:00+00'", "'2001-09-09 01:46:40+00'::timestamptz"],
    "interval": ["INTERVAL '1 day'", "INTERVAL '3 hours'", "'-1 mon'::interval", "INTERVAL '1 year 2 mons'"],
}
TRUNC_FIELDS = ("year", "quarter", "month", "week", "day", "hour", "minute")
EXTRACT_FIELDS = ("year", "month", "day", "hour", "minute", "dow", "doy", "quarter", "epoch", "isodow", "week")
LIKE_PATTERNS = ("'a%'", "'%b%'", "'_b_'", "'%'", "''", "'A%'", "'%\\_%'", "'%z'")


@dataclass
class Scope:
    """What an expression may refer to and contain.

    ``tables`` are (alias, table) pairs; ``agg`` allows aggregates (the
    expression is a grouped query's output), ``window`` window functions,
    ``sub`` subqueries over ``subtables`` (correlated to ``tables``).
    """

    tables: list[tuple[str, str]]
    agg: bool = False
    window: bool = False
    sub: bool = True
    subtables: list[str] = field(default_factory=list)
    group_cols: list[tuple[str, str]] = field(default_factory=list)  # (sql, kind) under GROUP BY


class ExprGen:
    """Random expressions of a given kind; ``depth`` bounds the nesting."""

    def __init__(self, rng: random.Random, prefix: str) -> None:
        self.rng = rng
        self.prefix = prefix
        self.alias_counter = 0

    # -- helpers --------------------------------------------------------------
    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, options):  # type: ignore[no-untyped-def]
        return self.rng.choice(options)

    def fresh_alias(self) -> str:
        self.alias_counter += 1
        return f"q{self.alias_counter}"

    def column(self, scope: Scope, kind: str) -> str | None:
        """A column of ``kind`` from the tables in scope (grouped: a group key)."""
        if scope.group_cols:
            cands = [sql for sql, k in scope.group_cols if k == kind]
            return self.pick(cands) if cands else None
        cands = [f"{alias}.{c}" for alias, _ in scope.tables for c, _, k in COLUMNS if k == kind]
        return self.pick(cands) if cands else None

    def literal(self, kind: str) -> str:
        return self.pick(LITERALS[kind])

    # -- entry ----------------------------------------------------------------
    def expr(self, scope: Scope, kind: str, depth: int = 2) -> str:
        """An expression of ``kind``; leaves are columns and literals."""
        if scope.agg and self.chance(0.45 if depth >= 1 else 0.7):
            agg = self.aggregate(scope, kind, depth)
            if agg is not None:
                return agg
        if scope.window and depth >= 1 and self.chance(0.3):
            win = self.window_call(scope, kind)
            if win is not None:
                return win
        if depth <= 0 or self.chance(0.3):
            return self.leaf(scope, kind)
        if scope.sub and scope.subtables and self.chance(0.06):
            return self.scalar_subquery(scope, kind)
        roll = self.rng.random()
        if roll < 0.08:
            return self.case(scope, kind, depth)
        if roll < 0.14:
            return f"coalesce({self.expr(scope, kind, depth - 1)}, {self.expr(scope, kind, depth - 1)})"
        if roll < 0.17 and kind != "bool":
            return f"nullif({self.expr(scope, kind, depth - 1)}, {self.expr(scope, kind, depth - 1)})"
        if roll < 0.25 and kind != "bool":
            return self.cast_to(scope, kind, depth)
        return getattr(self, f"k_{kind}")(scope, depth)

    def leaf(self, scope: Scope, kind: str) -> str:
        col = self.column(scope, kind)
        if col is not None and self.chance(0.8):
            return col
        return self.literal(kind)

    def case(self, scope: Scope, kind: str, depth: int) -> str:
        whens = " ".join(
            f"WHEN {self.expr(scope, 'bool', depth - 1)} THEN {self.expr(scope, kind, depth - 1)}"
            for _ in range(self.pick((1, 1, 2)))
        )
        tail = f" ELSE {self.expr(scope, kind, depth - 1)}" if self.chance(0.7) else ""
        return f"CASE {whens}{tail} END"

    def cast_to(self, scope: Scope, kind: str, depth: int) -> str:
        """A cast into ``kind`` from another kind that PostgreSQL can cast from."""
        sources = {
            "int": ("numeric", "float", "int", "text", "bool"),
            "numeric": ("int", "float", "text"),
            "float": ("int", "numeric", "text"),
            "text": KINDS,
            "date": ("ts", "text"),
            "ts": ("date", "text"),
            "interval": ("text",),
        }[kind]
        src = self.pick(sources)
        inner = self.expr(scope, src, depth - 1)
        if src == "text" and kind != "text" and self.chance(0.7):
            inner = self.literal_text_for(kind)
        target = CAST_NAME[kind]
        if kind == "int":
            target = self.pick(("int2", "int4", "int4", "int8"))
            if src == "bool":
                target = "int4"
        elif kind == "numeric" and self.chance(0.4):
            target = self.pick(("numeric(10,2)", "numeric(5,0)", "numeric(20,6)", "numeric(3,1)"))
        elif kind == "float" and self.chance(0.3):
            target = "float4"
        elif kind == "text" and self.chance(0.2):
            target = self.pick(("varchar(3)", "char(4)", "varchar"))
        return f"CAST({inner} AS {target})" if self.chance(0.3) else f"({inner})::{target}"

    def literal_text_for(self, kind: str) -> str:
        return self.pick({
            "int": ("'42'", "' 7 '", "'-3'", "'1e3'", "'99999999999'"),
            "numeric": ("'1.25'", "'NaN'", "'-Infinity'", "'1e-3'", "' 5 '"),
            "float": ("'1.5'", "'NaN'", "'inf'", "'-1e-310'", "'abc'"),
            "date": ("'2024-02-30'", "'2024-01-31'", "'infinity'", "'20240115'"),
            "ts": ("'2024-01-31 10:00'", "'2024-07-01 12:00:00-07'", "'epoch'", "'2024-01-31T10:00:00Z'"),
            "interval": ("'1 day 2 hours'", "'P1Y2M'", "'-3 days'", "'1.5 weeks'", "'2 fortnights'"),
            "bool": ("'yes'", "'f'", "'maybe'"),
        }[kind])

    # -- kinds -------------------------------------------------------------------
    def number(self, scope: Scope, depth: int) -> str:
        return self.expr(scope, self.pick(NUMBER_KINDS), depth)

    def k_int(self, scope: Scope, depth: int) -> str:
        d = depth - 1
        roll = self.rng.random()
        if roll < 0.3:
            op = self.pick(("+", "-", "*", "+", "-", "/", "%"))
            rhs = self.expr(scope, "int", d) if op not in "/%" or self.chance(0.3) else self.pick(("2", "3", "7"))
            return f"({self.expr(scope, 'int', d)} {op} {rhs})"
        if roll < 0.36:
            return f"(- {self.expr(scope, 'int', d)})"
        if roll < 0.5:
            return self.pick((
                lambda: f"abs({self.expr(scope, 'int', d)})",
                lambda: f"length({self.expr(scope, 'text', d)})",
                lambda: f"mod({self.expr(scope, 'int', d)}, {self.pick(('3', '5', '-2'))})",
                lambda: f"greatest({self.expr(scope, 'int', d)}, {self.expr(scope, 'int', d)})",
                lambda: f"least({self.expr(scope, 'int', d)}, {self.expr(scope, 'int', d)})",
                lambda: f"strpos({self.expr(scope, 'text', d)}, {self.pick(('a', 'b', ','))!r})",
                lambda: f"position({self.pick(('a', 'z', ' '))!r} IN {self.expr(scope, 'text', d)})",
                lambda: f"({self.expr(scope, 'date', d)} - {self.expr(scope, 'date', d)})",
                lambda: f"({self.expr(scope, 'int', d)} & {self.pick(('1', '6', '255'))})",
                lambda: f"gcd({self.expr(scope, 'int', d)}, {self.pick(('4', '6', '0'))})",
                lambda: f"width_bucket({self.expr(scope, 'float', d)}, 0, 10, 5)",
                lambda: f"ascii({self.expr(scope, 'text', d)})",
                lambda: f"char_length({self.expr(scope, 'text', d)})",
                lambda: f"sign({self.expr(scope, 'int', d)})::int",
            ))()
        return self.leaf(scope, "int")

    def k_numeric(self, scope: Scope, depth: int) -> str:
        d = depth - 1
        roll = self.rng.random()
        if roll < 0.3:
            op = self.pick(("+", "-", "*", "+", "/", "%"))
            lhs_kind = self.pick(("numeric", "numeric", "int"))
            rhs = self.expr(scope, "numeric", d) if op not in "/%" or self.chance(0.3) else self.pick(("2", "3.5"))
            return f"({self.expr(scope, lhs_kind, d)} {op} {rhs})"
        if roll < 0.55:
            return self.pick((
                lambda: f"round({self.expr(scope, 'numeric', d)})",
                lambda: f"round({self.expr(scope, 'numeric', d)}, {self.pick(('0', '1', '2', '-1'))})",
                lambda: f"trunc({self.expr(scope, 'numeric', d)}, {self.pick(('0', '1', '-1'))})",
                lambda: f"ceil({self.expr(scope, 'numeric', d)})",
                lambda: f"floor({self.expr(scope, 'numeric', d)})",
                lambda: f"abs({self.expr(scope, 'numeric', d)})",
                lambda: f"sign({self.expr(scope, 'numeric', d)})",
                lambda: f"scale({self.expr(scope, 'numeric', d)})::numeric",
                lambda: f"trim_scale({self.expr(scope, 'numeric', d)})",
                lambda: f"extract({self.pick(EXTRACT_FIELDS)} FROM {self.expr(scope, 'ts', d)})",
                lambda: f"extract({self.pick(('year', 'month', 'day', 'dow', 'epoch'))} FROM "
                        f"{self.expr(scope, 'date', d)})",
                lambda: f"extract({self.pick(('day', 'hour', 'epoch', 'month'))} FROM "
                        f"{self.expr(scope, 'interval', d)})",
                lambda: f"greatest({self.expr(scope, 'numeric', d)}, {self.expr(scope, 'int', d)})",
                lambda: f"mod({self.expr(scope, 'numeric', d)}, 2.5)",
                lambda: f"div({self.expr(scope, 'numeric', d)}, 2)",
                lambda: f"power({self.expr(scope, 'numeric', d)}, 2)",
                lambda: f"sqrt(abs({self.expr(scope, 'numeric', d)}))",
            ))()
        return self.leaf(scope, "numeric")

    def k_float(self, scope: Scope, depth: int) -> str:
        d = depth - 1
        roll = self.rng.random()
        if roll < 0.3:
            op = self.pick(("+", "-", "*", "/"))
            lhs_kind = self.pick(("float", "float", "int", "numeric"))
            rhs = self.expr(scope, "float", d) if op != "/" or self.chance(0.3) else "4"
            return f"({self.expr(scope, lhs_kind, d)} {op} {rhs})"
        if roll < 0.5:
            return self.pick((
                lambda: f"abs({self.expr(scope, 'float', d)})",
                lambda: f"round({self.expr(scope, 'float', d)})",
                lambda: f"floor({self.expr(scope, 'float', d)})",
                lambda: f"sqrt(abs({self.expr(scope, 'float', d)}))",
                lambda: f"cbrt({self.expr(scope, 'float', d)})",
                lambda: f"sign({self.expr(scope, 'float', d)})",
                lambda: f"date_part({self.pick(('year', 'hour', 'epoch', 'dow'))!r}, {self.expr(scope, 'ts', d)})",
                lambda: f"power({self.expr(scope, 'float', d)}, 0.5::float8)",
                lambda: f"ln(abs({self.expr(scope, 'float', d)}) + 1)",
                lambda: f"exp(least({self.expr(scope, 'float', d)}, 5))",
                lambda: f"({self.expr(scope, 'float', d)} ^ 2)",
                lambda: f"degrees({self.expr(scope, 'float', d)})",
                lambda: f"trunc({self.expr(scope, 'float', d)})",
            ))()
        return self.leaf(scope, "float")

    def k_text(self, scope: Scope, depth: int) -> str:
        d = depth - 1
        roll = self.rng.random()
        if roll < 0.15:
            other = self.pick(("text", "text", "int", "numeric", "date", "bool", "float", "interval"))
            return f"({self.expr(scope, 'text', d)} || {self.expr(scope, other, d)})"
        if roll < 0.6:
            t = lambda: self.expr(scope, "text", d)  # noqa: E731
            i = lambda: self.pick(("0", "1", "2", "3", "-1", "10"))  # noqa: E731
            return self.pick((
                lambda: f"upper({t()})",
                lambda: f"lower({t()})",
                lambda: f"initcap({t()})",
                lambda: f"reverse({t()})",
                lambda: f"md5({t()})",
                lambda: f"substr({t()}, {i()}, {self.pick(('1', '2', '5'))})",
                lambda: f"substr({t()}, {i()})",
                lambda: f"substring({t()} FROM {i()} FOR {self.pick(('1', '3'))})",
                lambda: f"left({t()}, {i()})",
                lambda: f"right({t()}, {i()})",
                lambda: f"concat({t()}, {self.expr(scope, self.pick(KINDS), d)})",
                lambda: f"concat_ws('-', {t()}, {self.expr(scope, self.pick(KINDS), d)}, {t()})",
                lambda: f"replace({t()}, {self.pick(('a', 'b', ''))!r}, 'Q')",
                lambda: f"trim({t()})",
                lambda: f"btrim({t()}, 'a ')",
                lambda: f"ltrim({t()})",
                lambda: f"lpad({t()}, {self.pick(('0', '3', '6'))}, '*')",
                lambda: f"rpad({t()}, {self.pick(('2', '5'))})",
                lambda: f"repeat({t()}, {self.pick(('0', '2', '-1'))})",
                lambda: f"split_part({t()}, ',', {self.pick(('1', '2', '-1'))})",
                lambda: f"translate({t()}, 'abc', 'xy')",
                lambda: f"to_char({self.expr(scope, 'ts', d)}, "
                        f"{self.pick(('YYYY-MM-DD', 'HH24:MI:SS', 'Dy Mon DD', 'YYYY Q WW'))!r})",
                lambda: f"to_char({self.expr(scope, 'numeric', d)}, {self.pick(('999D99', 'FM9990.00', '9.9EEEE'))!r})",
                lambda: f"to_char({self.expr(scope, 'int', d)}, {self.pick(('99999', 'FM000', 'S9999'))!r})",
                lambda: f"({self.expr(scope, self.pick(KINDS), d)})::text",
                lambda: f"quote_literal({t()})",
                lambda: f"regexp_replace({t()}, '[a-c]+', '#')",
                lambda: f"to_hex({self.expr(scope, 'int', d)})",
            ))()
        return self.leaf(scope, "text")

    def k_bool(self, scope: Scope, depth: int) -> str:
        d = depth - 1
        roll = self.rng.random()
        if roll < 0.4:
            kind = self.pick(ORDERED_KINDS + ("int", "int", "numeric"))
            if kind in NUMBER_KINDS and self.chance(0.3):
                rk = self.pick(NUMBER_KINDS)
            else:
                rk = kind
            op = self.pick(("=", "<>", "<", "<=", ">", ">="))
            return f"({self.expr(scope, kind, d)} {op} {self.expr(scope, rk, d)})"
        if roll < 0.55:
            op = self.pick(("AND", "OR", "AND"))
            return f"({self.expr(scope, 'bool', d)} {op} {self.expr(scope, 'bool', d)})"
        if roll < 0.6:
            return f"(NOT {self.expr(scope, 'bool', d)})"
        if roll < 0.7:
            kind = self.pick(KINDS)
            test = self.pick(("IS NULL", "IS NOT NULL"))
            return f"({self.expr(scope, kind, d)} {test})"
        if roll < 0.75:
            kind = self.pick(KINDS)
            test = self.pick(("IS DISTINCT FROM", "IS NOT DISTINCT FROM"))
            return f"({self.expr(scope, kind, d)} {test} {self.expr(scope, kind, d)})"
        if roll < 0.8:
            kind = self.pick(ORDERED_KINDS)
            neg = self.pick(("", "NOT "))
            sym = " SYMMETRIC" if self.chance(0.2) else ""
            return (f"({self.expr(scope, kind, d)} {neg}BETWEEN{sym} {self.expr(scope, kind, 0)} "
                    f"AND {self.expr(scope, kind, 0)})")
        if roll < 0.86:
            kind = self.pick(("int", "text", "numeric", "date"))
            items = ", ".join(self.literal(kind) if self.chance(0.85) else f"NULL::{CAST_NAME[kind]}"
                              for _ in range(self.pick((1, 2, 3))))
            neg = self.pick(("", "NOT "))
            return f"({self.expr(scope, kind, d)} {neg}IN ({items}))"
        if roll < 0.91:
            op = self.pick(("LIKE", "NOT LIKE", "ILIKE", "NOT ILIKE"))
            return f"({self.expr(scope, 'text', d)} {op} {self.pick(LIKE_PATTERNS)})"
        if roll < 0.93:
            return f"({self.expr(scope, 'bool', d)} IS {self.pick(('TRUE', 'NOT TRUE', 'FALSE', 'UNKNOWN'))})"
        if roll < 0.95:
            return f"starts_with({self.expr(scope, 'text', d)}, {self.pick(('a', 'A', ''))!r})"
        if scope.sub and scope.subtables and roll < 0.99:
            return self.predicate_subquery(scope, d)
        return self.leaf(scope, "bool")

    def k_date(self, scope: Scope, depth: int) -> str:
        d = depth - 1
        roll = self.rng.random()
        if roll < 0.25:
            return f"({self.expr(scope, 'date', d)} {self.pick(('+', '-'))} {self.expr(scope, 'int', d)})"
        if roll < 0.4:
            return self.pick((
                lambda: f"make_date({self.pick(('2024', '1999', '-44'))}, {self.pick(('1', '2', '12'))}, "
                        f"{self.pick(('1', '29', '31'))})",
                lambda: f"date_trunc({self.pick(TRUNC_FIELDS)!r}, {self.expr(scope, 'date', d)})::date",
                lambda: f"greatest({self.expr(scope, 'date', d)}, {self.expr(scope, 'date', d)})",
                lambda: f"({self.expr(scope, 'date', d)} + {self.expr(scope, 'interval', d)})::date",
            ))()
        return self.leaf(scope, "date")

    def k_ts(self, scope: Scope, depth: int) -> str:
        d = depth - 1
        roll = self.rng.random()
        if roll < 0.3:
            return f"({self.expr(scope, 'ts', d)} {self.pick(('+', '-'))} {self.expr(scope, 'interval', d)})"
        if roll < 0.5:
            return self.pick((
                lambda: f"date_trunc({self.pick(TRUNC_FIELDS)!r}, {self.expr(scope, 'ts', d)})",
                lambda: f"least({self.expr(scope, 'ts', d)}, {self.expr(scope, 'ts', d)})",
                lambda: f"({self.expr(scope, 'date', d)})::timestamptz",
                lambda: f"to_timestamp({self.pick(('0', '1e9', '86400.5', '-1'))})",
                lambda: f"make_timestamptz(2024, {self.pick(('1', '3', '10'))}, 15, 12, 30, 0.5)",
                lambda: f"({self.expr(scope, 'ts', d)} AT TIME ZONE 'UTC') AT TIME ZONE 'Asia/Tokyo'",
            ))()
        return self.leaf(scope, "ts")

    def k_interval(self, scope: Scope, depth: int) -> str:
        d = depth - 1
        roll = self.rng.random()
        if roll < 0.25:
            op = self.pick(("+", "-"))
            return f"({self.expr(scope, 'interval', d)} {op} {self.expr(scope, 'interval', d)})"
        if roll < 0.35:
            return f"({self.expr(scope, 'interval', d)} * {self.pick(('2', '0.5', '-1', '1.5::float8'))})"
        if roll < 0.55:
            return self.pick((
                lambda: f"({self.expr(scope, 'ts', d)} - {self.expr(scope, 'ts', d)})",
                lambda: f"justify_hours({self.expr(scope, 'interval', d)})",
                lambda: f"justify_days({self.expr(scope, 'interval', d)})",
                lambda: f"justify_interval({self.expr(scope, 'interval', d)})",
                lambda: f"age({self.expr(scope, 'ts', d)}, {self.expr(scope, 'ts', d)})",
                lambda: f"(- {self.expr(scope, 'interval', d)})",
                lambda: f"make_interval(days => {self.expr(scope, 'int', d)})",
                lambda: f"({self.expr(scope, 'interval', d)} / {self.pick(('2', '3', '0.5'))})",
                lambda: f"date_trunc({self.pick(('day', 'hour', 'month'))!r}, {self.expr(scope, 'interval', d)})",
            ))()
        return self.leaf(scope, "interval")

    # -- aggregates and windows ----------------------------------------------------
    def _plain(self, scope: Scope) -> Scope:
        """The row-level scope inside an aggregate's or window's argument."""
        return Scope(scope.tables, sub=False)

    def aggregate(self, scope: Scope, kind: str, depth: int) -> str | None:
        inner = self._plain(scope)
        arg_depth = max(0, depth - 1)
        distinct = "DISTINCT " if self.chance(0.12) else ""
        filt = f" FILTER (WHERE {self.expr(inner, 'bool', 1)})" if self.chance(0.08) else ""
        if kind == "int":
            k = self.pick(KINDS)
            return self.pick((
                f"count(*){filt}",
                f"count({distinct}{self.expr(inner, k, arg_depth)}){filt}",
                f"count({distinct}{self.expr(inner, k, arg_depth)})",
                f"min({self.expr(inner, 'int', arg_depth)}){filt}",
                f"max({self.expr(inner, 'int', arg_depth)})",
                f"bit_or({self.expr(inner, 'int', arg_depth)})",
            ))
        if kind == "numeric":
            return self.pick((
                f"sum({distinct}{self.expr(inner, self.pick(('int', 'numeric')), arg_depth)}){filt}",
                f"avg({distinct}{self.expr(inner, self.pick(('int', 'numeric')), arg_depth)}){filt}",
                f"max({self.expr(inner, 'numeric', arg_depth)})",
                f"min({self.expr(inner, 'numeric', arg_depth)})",
                f"stddev_samp({self.expr(inner, self.pick(('int', 'numeric')), arg_depth)})",
                f"var_pop({self.expr(inner, 'numeric', arg_depth)})",
            ))
        if kind == "float":
            return self.pick((
                f"sum({self.expr(inner, 'float', arg_depth)}){filt}",
                f"avg({self.expr(inner, 'float', arg_depth)})",
                f"max({distinct}{self.expr(inner, 'float', arg_depth)})",
                f"stddev_pop({self.expr(inner, 'float', arg_depth)})",
                f"variance({self.expr(inner, 'float', arg_depth)})",
                f"stddev_samp({self.expr(inner, 'int', arg_depth)})::float8",
            ))
        if kind == "text":
            arg = self.expr(inner, "text", arg_depth)
            return self.pick((
                f"string_agg({arg}, ',' ORDER BY {arg})",
                f"string_agg(DISTINCT {arg}, '|' ORDER BY {arg})",
                f"min({arg})",
                f"max({arg}){filt}",
                f"array_agg({arg} ORDER BY {arg})::text",
            ))
        if kind == "bool":
            return self.pick((
                f"bool_and({self.expr(inner, 'bool', arg_depth)})",
                f"bool_or({self.expr(inner, 'bool', arg_depth)}){filt}",
                f"every({self.expr(inner, 'bool', arg_depth)})",
                f"({self.aggregate(scope, 'int', depth)} > {self.pick(('0', '1', '3'))})",
            ))
        if kind in ("date", "ts"):
            return f"{self.pick(('min', 'max'))}({self.expr(inner, kind, arg_depth)}){filt}"
        if kind == "interval":
            return self.pick((
                f"sum({self.expr(inner, 'interval', arg_depth)})",
                f"avg({self.expr(inner, 'interval', arg_depth)})",
                f"max({self.expr(inner, 'interval', arg_depth)})",
            ))
        return None

    def window_call(self, scope: Scope, kind: str) -> str | None:
        """A window function whose value does not depend on how ties are broken.

        Order-sensitive functions (row_number, lag, first_value, running sums
        over ROWS) order by every table's ``id``, which is unique per row.
        """
        inner = self._plain(scope)
        ids = ", ".join(f"{alias}.id" for alias, _ in scope.tables)
        part = ""
        if self.chance(0.6):
            part = "PARTITION BY " + self.expr(inner, self.pick(("int", "bool", "text", "date")), 0) + " "
        key = self.expr(inner, self.pick(ORDERED_KINDS), 1)
        direction = self.pick(("", " DESC", " NULLS FIRST", " DESC NULLS LAST"))
        if kind == "int":
            return self.pick((
                f"row_number() OVER ({part}ORDER BY {ids}{direction})",
                f"rank() OVER ({part}ORDER BY {key}{direction})",
                f"dense_rank() OVER ({part}ORDER BY {key}{direction})",
                f"count(*) OVER ({part})",
                f"count({key}) OVER ({part}ORDER BY {key})",
                f"ntile({self.pick(('2', '3', '4'))}) OVER ({part}ORDER BY {ids})",
                f"lag({self.expr(inner, 'int', 1)}) OVER ({part}ORDER BY {ids})",
                f"lead({self.expr(inner, 'int', 1)}, 2, -1) OVER ({part}ORDER BY {ids})",
                f"sum({self.expr(inner, 'int', 1)}) OVER ({part}ORDER BY {ids} "
                f"ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)",
            ))
        if kind in ("numeric", "float"):
            return self.pick((
                f"sum({self.expr(inner, kind, 1)}) OVER ({part}ORDER BY {key})",
                f"avg({self.expr(inner, kind, 1)}) OVER ({part})",
                f"percent_rank() OVER ({part}ORDER BY {key})" if kind == "float" else
                f"sum({self.expr(inner, 'int', 1)}) OVER ({part})",
                f"max({self.expr(inner, kind, 1)}) OVER ({part}ORDER BY {ids} "
                f"ROWS BETWEEN 2 PRECEDING AND CURRENT ROW)",
                f"cume_dist() OVER ({part}ORDER BY {key})" if kind == "float" else
                f"min({self.expr(inner, kind, 1)}) OVER ({part}ORDER BY {key} "
                f"RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
            ))
        if kind in ("text", "date", "ts", "interval"):
            arg = self.expr(inner, kind, 1)
            return self.pick((
                f"first_value({arg}) OVER ({part}ORDER BY {ids})",
                f"last_value({arg}) OVER ({part}ORDER BY {ids} ROWS BETWEEN UNBOUNDED PRECEDING "
                f"AND UNBOUNDED FOLLOWING)",
                f"lag({arg}, 1) OVER ({part}ORDER BY {ids}{direction})",
                f"nth_value({arg}, 2) OVER ({part}ORDER BY {ids})",
                f"max({arg}) OVER ({part})",
            ))
        return None

    # -- subqueries ---------------------------------------------------------------------
    def sub_from(self, scope: Scope) -> tuple[str, Scope]:
        """FROM of a subquery: one table, may refer to the outer scope (correlation)."""
        table = self.pick(scope.subtables)
        alias = self.fresh_alias()
        return f"{self.prefix}{table} {alias}", Scope([(alias, table)], sub=False)

    def correlation(self, scope: Scope, inner: Scope) -> str:
        """A WHERE for a subquery: correlated to the outer scope or not."""
        (alias, _), = inner.tables
        if scope.group_cols or not self.chance(0.6):
            return self.expr(inner, "bool", 1)
        outer = self.column(scope, "int")
        cond = f"{alias}.{self.pick(('id', 'b', 'a'))} = {outer}"
        if self.chance(0.4):
            cond += f" AND {self.expr(inner, 'bool', 1)}"
        return cond

    def scalar_subquery(self, scope: Scope, kind: str) -> str:
        frm, inner = self.sub_from(scope)
        agg_scope = Scope(inner.tables, agg=True, sub=False)
        value = self.aggregate(agg_scope, kind, 1) or "NULL"
        return f"(SELECT {value} FROM {frm} WHERE {self.correlation(scope, inner)})"

    def predicate_subquery(self, scope: Scope, depth: int) -> str:
        frm, inner = self.sub_from(scope)
        where = self.correlation(scope, inner)
        roll = self.rng.random()
        if roll < 0.4:
            neg = self.pick(("", "NOT "))
            return f"({neg}EXISTS (SELECT 1 FROM {frm} WHERE {where}))"
        kind = self.pick(("int", "text", "numeric", "date"))
        probe = self.expr(scope, kind, depth)
        col = self.expr(inner, kind, 0)
        if roll < 0.8:
            neg = self.pick(("", "NOT "))
            return f"({probe} {neg}IN (SELECT {col} FROM {frm} WHERE {where}))"
        op = self.pick(("=", "<", ">=", "<>"))
        quant = self.pick(("ANY", "ALL", "SOME"))
        return f"({probe} {op} {quant} (SELECT {col} FROM {frm} WHERE {where}))"
