"""Random streams, continuous views and batches for the stream fuzzing campaign (``streamfuzz``).

A stream ``s`` has an int4 key ``k`` (a small domain, so groups meet) and
random value columns; ``d`` is a table (k int PRIMARY KEY, label text) that a
view may join, as the docs allow (stream probing, table built).  Views are
of the supported shapes: count / sum / avg / min / max / count(DISTINCT)
with and without GROUP BY, WHERE filters, expressions under and over the
aggregates, the table join.  A view is kept as a template whose ``{s}``
names the stream: the real stream on splitstream, the oracle's stand-in
(acknowledged batches only) on PostgreSQL.

Batches mix NULLs, extreme values, NaN and infinities, and empty strings;
some carry a bad row (a value the column type refuses) and must fail whole.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

VALUE_TYPES = ("int4", "int8", "float8", "numeric", "text", "int2")
NUMERIC_TYPES = ("int4", "int8", "float8", "numeric", "int2")

GOOD: dict[str, tuple[object, ...]] = {
    "int2": (0, 1, -1, 7, 32767, -32768),
    "int4": (0, 1, 2, -3, 17, 2147483647, -2147483648),
    "int8": (0, 5, -5, 1000, 9223372036854775807, -9223372036854775808),
    "float8": (0.0, 1.5, -2.25, "NaN", "Infinity", "-Infinity", 1e308, -0.0, 1e-300),
    "numeric": ("0", "1.5", "-2.25", "NaN", "123456789012345678901234567890.5", "0.000001"),
    "text": ("", "a", "b", "abc", "x y", "Zed", "quote'd", "comma,here", "tab\tin", "back\\slash"),
}
#: what a column refuses (the whole statement must fail)
BAD: dict[str, tuple[str, ...]] = {
    "int2": ("40000", "abc"), "int4": ("abc", "9999999999", "1.5x"), "int8": ("99999999999999999999", "x"),
    "float8": ("notanumber", "1e400"), "numeric": ("1.2.3", "abc"), "text": (),
}


@dataclass
class StreamSchema:
    name: str
    columns: list[tuple[str, str]]              # value columns (k int4 comes first, not listed)
    table: str
    table_rows: list[tuple[int, str]] = field(default_factory=list)

    @property
    def all_columns(self) -> list[tuple[str, str]]:
        return [("k", "int4"), *self.columns]

    def stream_ddl(self) -> str:
        return f"CREATE FOREIGN TABLE {self.name} (" + ", ".join(f"{c} {t}" for c, t in self.all_columns) + ") SERVER stream"

    def oracle_ddl(self, table: str) -> str:
        return f"CREATE TABLE {table} (b int4, " + ", ".join(f"{c} {t}" for c, t in self.all_columns) + ")"


def random_stream(rng: random.Random, prefix: str) -> StreamSchema:
    cols = [(f"v{i}", rng.choice(VALUE_TYPES)) for i in range(rng.randint(2, 4))]
    if not any(t in NUMERIC_TYPES for _, t in cols):
        cols.append((f"v{len(cols)}", "int4"))
    s = StreamSchema(f"{prefix}_s", cols, f"{prefix}_d")
    s.table_rows = [(k, rng.choice(("red", "green", "blue", ""))) for k in range(0, 8) if rng.random() < 0.8]
    return s


@dataclass
class View:
    name: str
    template: str          # the SELECT, with {s} for the stream relation


class ViewGen:
    def __init__(self, rng: random.Random, schema: StreamSchema) -> None:
        self.rng, self.schema = rng, schema

    def _cols(self, types: tuple[str, ...]) -> list[str]:
        return [f"a.{c}" for c, t in self.schema.columns if t in types]

    def _num_arg(self) -> str:
        rng = self.rng
        cols = self._cols(NUMERIC_TYPES) or ["a.k"]
        c = rng.choice(cols + ["a.k"])
        r = rng.random()
        if r < 0.6:
            return c
        if r < 0.75:
            return f"({c} * 2 + 1)"            # may overflow on extreme values: the batch must then fail whole
        if r < 0.85:
            return f"abs({c})"
        return f"({c} + a.k)"

    def aggregate(self) -> str:
        rng = self.rng
        r = rng.random()
        if r < 0.15:
            return "count(*)"
        if r < 0.25:
            return f"count({rng.choice(['a.k', *self._cols(VALUE_TYPES)])})"
        if r < 0.5:
            return f"sum({self._num_arg()})"
        if r < 0.65:
            return f"avg({self._num_arg()})"
        if r < 0.85:
            c = rng.choice(["a.k", *self._cols(VALUE_TYPES)])
            return f"{rng.choice(('min', 'max'))}({c})"
        return f"count(DISTINCT {rng.choice(['a.k', *self._cols(VALUE_TYPES)])})"

    def predicate(self) -> str:
        rng = self.rng
        num = self._cols(NUMERIC_TYPES)
        txt = self._cols(("text",))
        options = [f"a.k {rng.choice(('<', '>=', '<>'))} {rng.randint(0, 6)}", "a.k IS NOT NULL"]
        if num:
            c = rng.choice(num)
            options += [f"{c} > 0", f"{c} IS NULL", f"({c} < 100 OR a.k = 1)"]
        if txt:
            c = rng.choice(txt)
            options += [f"{c} <> ''", f"{c} LIKE 'a%'", f"length({c}) < 3"]
        return rng.choice(options)

    def view(self, name: str) -> View:
        rng = self.rng
        join = rng.random() < 0.3
        keys: list[str] = []
        r = rng.random()
        if r < 0.45:
            keys = ["a.k"]
        elif r < 0.6:
            keys = ["a.k % 3"]
        elif r < 0.7 and self._cols(("text",)):
            keys = [rng.choice(self._cols(("text",)))]
        elif r < 0.8 and join:
            keys = ["d.label"]
        aggs = [self.aggregate() for _ in range(rng.randint(1, 4))]
        items = [f"{k} AS g{i}" for i, k in enumerate(keys)]
        items += [f"{a} AS m{i}" for i, a in enumerate(aggs)]
        if rng.random() < 0.2 and len(aggs) >= 1:
            items.append("count(*) + 1 AS e0")        # an expression over the aggregates (upper plan)
        frm = "{s} AS a" + (f" JOIN {self.schema.table} d ON d.k = a.k" if join else "")
        where = f" WHERE {self.predicate()}" if rng.random() < 0.5 else ""
        group = (" GROUP BY " + ", ".join(keys)) if keys else ""
        having = " HAVING count(*) > 1" if keys and rng.random() < 0.15 else ""
        return View(name, f"SELECT {', '.join(items)} FROM {frm}{where}{group}{having}")


def random_value(rng: random.Random, typ: str) -> object:
    r = rng.random()
    if r < 0.12:
        return None
    if r < 0.3:
        return rng.choice(GOOD[typ])
    if typ == "text":
        return rng.choice(("a", "b", "c", "", "ab"))
    if typ == "float8":
        return rng.choice((0.5, 1.0, 2.0, -1.0, 3.25))
    if typ == "numeric":
        return rng.choice(("1", "2.5", "-1.25", "10"))
    return rng.randint(-3, 9)


@dataclass
class Batch:
    """One statement's rows; ``bad`` is the index of the row holding a value the column refuses."""

    bid: int
    rows: list[tuple]
    how: str                      # insert | copy-text | copy-csv
    bad: int | None = None
    outcome: str = "unsent"       # unsent | inflight | acked | failed
    error: str | None = None


def random_batch(rng: random.Random, schema: StreamSchema, bid: int) -> Batch:
    n = rng.choice((1, 1, 2, 5, 20, 100, 400))
    rows = []
    for _ in range(n):
        k = None if rng.random() < 0.05 else rng.randint(0, 9)
        rows.append((k, *(random_value(rng, t) for _, t in schema.columns)))
    how = rng.choice(("insert", "copy-text", "copy-csv"))
    batch = Batch(bid, rows, how)
    if rng.random() < 0.1:
        cands = [(i, t) for i, (_, t) in enumerate(schema.columns) if BAD[t]]
        if cands:
            ci, t = rng.choice(cands)
            at = rng.randrange(n)
            row = list(rows[at])
            row[ci + 1] = rng.choice(BAD[t])
            rows[at] = tuple(row)
            batch.bad = at
    return batch
