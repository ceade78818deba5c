"""The schema of the random queries: three tables with the same columns,
one per kind of content, loaded identically on both servers.

Why the same columns everywhere: joins, set operations and subqueries can
pair any two tables without a type map. ``t1`` is ordinary values with
NULLs and a few specials, ``t2`` overlaps ``t1``'s keys (joins find matches
and misses), ``t3`` is almost all edges (extreme integers, NaN, +-Infinity,
empty strings, infinite dates), so arithmetic over it mostly fails with
overflow errors whose SQLSTATEs are compared too.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

#: (column, SQL type, kind) -- the kind is the generator's type family
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("id", "int4", "int"),
    ("a", "int2", "int"),
    ("b", "int4", "int"),
    ("c", "int8", "int"),
    ("n", "numeric", "numeric"),
    ("f", "float8", "float"),
    ("s", "text", "text"),
    ("p", "bool", "bool"),
    ("d", "date", "date"),
    ("ts", "timestamptz", "ts"),
    ("iv", "interval", "interval"),
)

ORDINARY: dict[str, list[str]] = {
    "a": ["0", "1", "-1", "2", "7", "-3", "100", "12"],
    "b": ["0", "1", "2", "3", "-5", "10", "42", "-100", "1000"],
    "c": ["0", "1", "-2", "3", "5000000000", "-7", "64", "99"],
    "n": ["0", "1.5", "-2.25", "3", "0.001", "123.456", "-7", "10.00", "2.5"],
    "f": ["0", "1.5", "-2.25", "3", "0.1", "1e10", "-7", "2.5", "1e-5"],
    "s": ["'abc'", "'ABC'", "'a b'", "'x,y,z'", "'hello'", "'12'", "'-5'", "'a_b%c'", "'Zz'", "'  pad '"],
    "p": ["true", "false"],
    "d": ["'2024-02-29'", "'2000-01-01'", "'1999-12-31'", "'2024-03-31'", "'1970-01-01'", "'2023-06-15'"],
    "ts": ["'2024-02-29 12:34:56.789+00'", "'2000-01-01 00:00:00+00'", "'2023-03-26 01:30:00+00'",
           "'1999-12-31 23:59:59+05'", "'2024-10-27 02:15:00+02'", "'1970-01-01 00:00:00+00'"],
    "iv": ["'1 day'", "'-2 hours'", "'1 mon 2 days 03:04:05'", "'00:00:00'", "'1 year'", "'36 hours'",
           "'-1 mon +3 days'", "'00:00:01.5'"],
}

EDGES: dict[str, list[str]] = {
    "a": ["32767", "-32768", "0"],
    "b": ["2147483647", "-2147483648", "0"],
    "c": ["9223372036854775807", "-9223372036854775808", "0"],
    "n": ["'NaN'", "'Infinity'", "'-Infinity'", "123456789012345678901234567890.5", "0.000000001", "-0"],
    "f": ["'NaN'", "'Infinity'", "'-Infinity'", "'-0'", "1e308", "1e-300"],
    "s": ["''", "' '", "'ß'", "'Ünïcödé'", "'a''b'"],
    "p": ["true", "false"],
    "d": ["'infinity'", "'-infinity'", "'0001-01-01'", "'9999-12-31'"],
    "ts": ["'infinity'", "'-infinity'", "'0001-01-01 00:00:00+00'", "'2999-12-31 23:59:59.999999+00'"],
    "iv": ["'178000000 years'", "'-178000000 years'", "'1 microsecond'", "'-00:00:00.000001'"],
}


@dataclass(frozen=True)
class Table:
    """One table: its name in the queries and the seed/shape of its rows."""

    name: str
    rows: int
    first_id: int
    null_rate: float
    edge_rate: float


TABLES: tuple[Table, ...] = (
    Table("t1", 30, 1, 0.15, 0.05),
    Table("t2", 20, 15, 0.2, 0.05),
    Table("t3", 10, 40, 0.2, 0.7),
)


def _value(rng: random.Random, col: str, sql_type: str, table: Table) -> str:
    roll = rng.random()
    if roll < table.null_rate:
        return "NULL"
    pool = EDGES[col] if roll < table.null_rate + table.edge_rate else ORDINARY[col]
    return f"({rng.choice(pool)})::{sql_type}"


def rows_of(table: Table) -> list[list[str]]:
    """The table's rows as SQL literals; fixed (their own seed), never the query seed's."""
    rng = random.Random(f"querygen-{table.name}")
    rows = []
    for i in range(table.rows):
        row = [str(table.first_id + i)]
        row += [_value(rng, col, sql_type, table) for col, sql_type, _ in COLUMNS[1:]]
        rows.append(row)
    return rows


def setup_statements(prefix: str) -> list[str]:
    """CREATE TABLE and INSERT for every table, names prefixed with ``prefix``."""
    cols = ", ".join(f"{c} {t}" for c, t, _ in COLUMNS)
    out = []
    for table in TABLES:
        name = f"{prefix}{table.name}"
        out.append(f"DROP TABLE IF EXISTS {name}")
        out.append(f"CREATE TABLE {name} ({cols})")
        values = ", ".join("(" + ", ".join(r) + ")" for r in rows_of(table))
        out.append(f"INSERT INTO {name} VALUES {values}")
    return out


def teardown_statements(prefix: str) -> list[str]:
    return [f"DROP TABLE IF EXISTS {prefix}{t.name}" for t in TABLES]
