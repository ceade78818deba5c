"""Definition text of catalog objects as PostgreSQL prints it
(pg_get_indexdef, pg_get_constraintdef) and stable constraint OIDs."""
from __future__ import annotations

import zlib
from typing import Any, Callable, Sequence


def index_def(st, oid, column=0):
    r = st.rels.get(oid)
    if r is None or r.kind != "i":
        return None
    if column:  # pg_get_indexdef(index, n, pretty): just the n-th key
        return r.index_columns[column - 1] if 0 < column <= len(r.index_columns) else ""
    t = st.rels.get(r.index_table)
    cols = ", ".join(quote_ident(c) if t.column(c) is not None else c for c in r.index_columns)   # (or an expression)
    u = "UNIQUE " if r.index_unique else ""
    return f"CREATE {u}INDEX {quote_ident(r.name)} ON {quote_ident(t.schema)}.{quote_ident(t.name)} " \
           f"USING {r.index_method} ({cols})"


def _raw_check(st, rel, sql: str, pretty: bool) -> str:
    return sql


#: A CHECK expression as PostgreSQL prints it (pretty or not); the SQL layer installs
#: its printer here (executor/sql/viewdef.py), the catalog keeps no SQL knowledge.
_check_formatter: Callable[[Any, Any, str, bool], str] = _raw_check


def set_check_formatter(fn: Callable[[Any, Any, str, bool], str]) -> None:
    global _check_formatter
    _check_formatter = fn


def constraint_def(st, oid, search_path: Sequence[str] = ("public",), pretty: bool = False):
    """pg_get_constraintdef(oid [, pretty]) as seen with ``search_path`` (a referenced
    table outside it is schema-qualified, as generate_relation_name does)."""
    for r in st.rels.values():
        for c in r.constraints:
            if constraint_oid(r, c) == oid:
                return constraint_text(st, c, r, search_path, pretty)
    return None


def relation_name(st, rel, search_path: Sequence[str]) -> str:
    """A relation's name, qualified unless the search path finds it by its name."""
    for s in ("pg_catalog", *search_path):
        found = st.lookup(s, rel.name)
        if found is not None:
            if found.oid == rel.oid:
                return quote_ident(rel.name)
            break
    return f"{quote_ident(rel.schema)}.{quote_ident(rel.name)}"


def quote_ident(name: str) -> str:
    """Double quotes unless lowercase letters, digits and _ (keywords are the SQL layer's concern)."""
    if name and (name[0].islower() or name[0] == "_") and all(ch.islower() or ch.isdigit() or ch == "_" for ch in name):
        return name
    return '"' + name.replace('"', '""') + '"'


def constraint_oid(rel, con) -> int:
    """pg_constraint.oid: its own OID; for a constraint stored before OIDs
    were assigned, its index's or one derived from table and name."""
    if con.oid:
        return con.oid
    return con.index_oid or (zlib.crc32(f"{rel.oid}:{con.name}".encode()) % 1_000_000 + 3_000_000)


#: pg_constraint.confupdtype / confdeltype other than NO ACTION ('a'), as pg_get_constraintdef words them
_FK_ACTIONS = {"c": "CASCADE", "n": "SET NULL", "r": "RESTRICT", "d": "SET DEFAULT"}


def constraint_text(st, c, rel=None, search_path: Sequence[str] = ("public",), pretty: bool = False) -> str:
    cols = ", ".join(quote_ident(n) for n in c.columns)
    if c.kind == "p":
        return f"PRIMARY KEY ({cols})"
    if c.kind == "u":
        return f"UNIQUE ({cols})"
    if c.kind == "c":
        return f"CHECK ({c.check_sql if rel is None else _check_formatter(st, rel, c.check_sql, pretty)})"
    if c.kind == "f":
        ref = st.rels.get(c.ref_table)
        rn = relation_name(st, ref, search_path) if ref is not None else "?"
        s = f"FOREIGN KEY ({cols}) REFERENCES {rn}({', '.join(quote_ident(n) for n in c.ref_columns)})"
        for event, action in (("UPDATE", c.on_update), ("DELETE", c.on_delete)):
            if action in _FK_ACTIONS:
                s += f" ON {event} {_FK_ACTIONS[action]}"
        return s
    return ""
