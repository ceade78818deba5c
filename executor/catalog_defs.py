"""pg_get_indexdef / pg_get_constraintdef text, as PostgreSQL prints it."""
from __future__ import annotations

from protocol import oids as O
from protocol.errors import PgError, UNDEFINED_FUNCTION


def index_def(st, oid):
    r = st.rels.get(oid)
    if r is None or r.kind != "i":
        return None
    t = st.rels.get(r.index_table)
    cols = ", ".join(r.index_columns)
    u = "UNIQUE " if r.index_unique else ""
    return f"CREATE {u}INDEX {r.name} ON {t.schema}.{t.name} USING {r.index_method} ({cols})"


def constraint_def(st, oid):
    for r in st.rels.values():
        for c in r.constraints:
            if _constraint_oid(r, c) == oid:
                return constraint_text(st, c)
    return None


def _constraint_oid(rel, con) -> int:
    return con.index_oid or (abs(hash((rel.oid, con.name))) % 1_000_000 + 3_000_000)


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


def definition_function(planner, name, args, lift):
    if name == "pg_get_indexdef":
        return lift(lambda st, oid, *a: index_def(st, oid), O.TEXT)
    if name == "pg_get_constraintdef":
        return lift(lambda st, oid, *a: constraint_def(st, oid), O.TEXT)
    if name in ("pg_get_partkeydef", "pg_get_statisticsobjdef_columns", "pg_get_triggerdef", "pg_get_ruledef",
                "pg_get_functiondef"):
        return lift(lambda st, *a: None, O.TEXT)
    if name in ("pg_relation_is_updatable",):
        return lift(lambda st, *a: 28, O.INT4)
    if name in ("pg_column_is_updatable",):
        return lift(lambda st, *a: True, O.BOOL)
    raise PgError(UNDEFINED_FUNCTION, f"function {name} does not exist")
