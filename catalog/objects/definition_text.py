"""Definition text of catalog objects as PostgreSQL prints it
(pg_get_indexdef, pg_get_constraintdef) and stable constraint OIDs."""
from __future__ import annotations

import zlib


def index_def(st, oid, column=0):
    r = st.rels.get(oid)
    if r is None or r.kind != "i":
        return None
    if column:  # pg_get_indexdef(index, n, pretty): just the n-th key
        return r.index_columns[column - 1] if 0 < column <= len(r.index_columns) else ""
    t = st.rels.get(r.index_table)
    cols = ", ".join(r.index_columns)
    u = "UNIQUE " if r.index_unique else ""
    return f"CREATE {u}INDEX {r.name} ON {t.schema}.{t.name} USING {r.index_method} ({cols})"


def constraint_def(st, oid):
    for r in st.rels.values():
        for c in r.constraints:
            if constraint_oid(r, c) == oid:
                return constraint_text(st, c)
    return None


def constraint_oid(rel, con) -> int:
    """pg_constraint.oid: its own OID; for a constraint stored before OIDs
    were assigned, its index's or one derived from table and name."""
    if con.oid:
        return con.oid
    return con.index_oid or (zlib.crc32(f"{rel.oid}:{con.name}".encode()) % 1_000_000 + 3_000_000)


def constraint_text(st, c) -> str:
    cols = ", ".join(c.columns)
    if c.kind == "p":
        return f"PRIMARY KEY ({cols})"
    if c.kind == "u":
        return f"UNIQUE ({cols})"
    if c.kind == "c":
        return f"CHECK ({c.check_sql})"
    if c.kind == "f":
        ref = st.rels.get(c.ref_table)
        rn = ref.name if ref is not None else "?"
        s = f"FOREIGN KEY ({cols}) REFERENCES {rn}({', '.join(c.ref_columns)})"
        if c.on_delete == "c":
            s += " ON DELETE CASCADE"
        elif c.on_delete == "n":
            s += " ON DELETE SET NULL"
        return s
    return ""
