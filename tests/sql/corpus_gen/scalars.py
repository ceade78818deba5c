"""Calls of every catalog signature of a chapter's scalar functions, with
literals from the value pools and over a typed table's columns.

Why driven by the catalog: a function added to ``functions.REGISTRY`` is
called here on regeneration with every edge value of its argument types.
"""
from __future__ import annotations

from splitstream.executor.execution import proc_catalog
from splitstream.protocol import oids

from .values import ARGUMENT_POOLS, POOLS, TYPICAL
from .writer import Chapter

WORDS = {oids.INT2: "int2", oids.INT4: "int4", oids.INT8: "int8", oids.NUMERIC: "numeric", oids.FLOAT4: "float4",
         oids.FLOAT8: "float8", oids.TEXT: "text", oids.BYTEA: "bytea", oids.BOOL: "bool", oids.OID: "oid",
         oids.NAME: "name", oids.INTERVAL: "interval"}

#: the typed table of the scalar chapters: column per type word, rows of edge values
TABLE_COLUMNS = {"int2": "c_i2", "int4": "c_i4", "int8": "c_i8", "numeric": "c_n", "float4": "c_f4", "float8": "c_f8",
                 "text": "c_t", "bytea": "c_b", "bool": "c_bool"}


def signatures_of(names: set[str]) -> list[tuple[str, tuple[str, ...]]]:
    """(name, argument type words) for each scalar overload of these names
    whose arguments all have a value pool; variadic ones as two arguments."""
    out = []
    for e in proc_catalog.entries():
        if e.kind != "f" or e.name not in names:
            continue
        args = list(e.arg_oids) + ([e.arg_oids[-1]] if e.variadic else [])
        words = tuple(WORDS.get(a, "") for a in args)
        if all(words) and (words or e.name in names):
            out.append((e.name, words))
    return sorted(set(out))


def _pool(name: str, pos: int, word: str, main: bool) -> list[str]:
    got = ARGUMENT_POOLS.get((name, pos))
    if got is not None:
        return got
    return POOLS[word] if main else TYPICAL.get(word, POOLS[word][:2])


def calls(name: str, words: tuple[str, ...], ch: Chapter) -> list[str]:
    """Each argument in turn runs through its whole pool while the others
    take a typical value (seeded), so edge values meet every position."""
    if not words:
        return [f"{name}()"]
    seen: list[str] = []
    for pos in range(len(words)):
        for v in _pool(name, pos, words[pos], True):
            args = [v if i == pos else ch.rng.choice(_pool(name, i, w, False)) for i, w in enumerate(words)]
            call = f"{name}({', '.join(args)})"
            if call not in seen:
                seen.append(call)
    return seen


def literal_calls(ch: Chapter, names: set[str]) -> None:
    """One statement per call, so an error in one value hides no other."""
    for name, words in signatures_of(names):
        ch.comment(f"{name}({', '.join(words)})")
        for call in calls(name, words, ch):
            ch.select([call])


def create_table(ch: Chapter, table: str) -> None:
    cols = ", ".join(f"{c} {w}" for w, c in TABLE_COLUMNS.items())
    ch.stmt(f"CREATE TABLE {table} (id int, {cols})")
    n = max(len(POOLS[w]) for w in TABLE_COLUMNS)
    rows = []
    for i in range(n):
        vals = [POOLS[w][i % len(POOLS[w])] for w in TABLE_COLUMNS]
        rows.append(f"({i + 1}, {', '.join(vals)})")
    ch.stmt(f"INSERT INTO {table} VALUES {', '.join(rows)}")


def column_calls(ch: Chapter, names: set[str], table: str) -> None:
    """Each signature over the table's columns (every row at once): the
    vectorised path, where a NULL or an edge value shares a batch with others."""
    for name, words in signatures_of(names):
        if not words or not all(w in TABLE_COLUMNS for w in words):
            continue
        args = []
        for i, w in enumerate(words):
            fixed = ARGUMENT_POOLS.get((name, i))
            args.append(fixed[0] if fixed and i > 0 else TABLE_COLUMNS[w])
        ch.select(["id", f"{name}({', '.join(args)})"], f"FROM {table} ORDER BY id")
