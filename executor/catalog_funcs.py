"""Functions that read the catalog: pg_get_indexdef, obj_description, ..."""
from __future__ import annotations

from catalog import types as T
from catalog.vector import Col
from protocol import oids as O
from protocol.errors import PgError, UNDEFINED_FUNCTION, UNDEFINED_TABLE

from . import expr as X


def _rel_by_oid(state, oid):
    return state.rels.get(oid)


def catalog_function(planner, name: str, args: list[X.Expr]) -> X.Expr:
    def lift(fn, oid, strict=True):
        def impl(cols, n, ctx):
            lists = [c.to_pylist() for c in cols]
            out = []
            for i in range(n):
                a = [l[i] for l in lists]
                out.append(None if strict and any(v is None for v in a[:1]) else fn(ctx.state, *a))
            return Col.from_pylist(out, oid)

        return X.Func(name, impl, args, oid)

    if name == "obj_description":
        return lift(lambda st, oid, cat=None: (st.rels[oid].comment if oid in st.rels else None), O.TEXT)
    if name == "col_description":
        def coldesc(st, oid, attnum):
            r = st.rels.get(oid)
            if r is None:
                return None
            cols = r.live_columns
            if not 1 <= attnum <= len(cols):
                return None
            return dict(r.column_comments).get(cols[attnum - 1].name)

        return lift(coldesc, O.TEXT)
    if name == "shobj_description":
        return lift(lambda st, *a: None, O.TEXT)
    if name == "pg_get_viewdef":
        def viewdef(st, oid, pretty=None):
            r = st.rels.get(oid) if isinstance(oid, int) else None
            return (" " + r.sql.strip().rstrip(";") + ";") if r is not None else None

        return lift(viewdef, O.TEXT)
    if name in ("pg_relation_size", "pg_total_relation_size", "pg_table_size", "pg_indexes_size"):
        def size(st, oid, fork=None):
            tv = st.data.get(oid)
            return tv.memory_bytes() if tv is not None else 0

        return lift(size, O.INT8)
    if name == "pg_database_size":
        return lift(lambda st, d: sum(tv.memory_bytes() for tv in st.data.values()), O.INT8)
    if name == "to_regclass":
        def regclass(st, nm):
            parts = nm.split(".")
            r = planner.lookup_relation(parts[-1], parts[0] if len(parts) > 1 else None)
            return r.oid if r is not None else None

        return lift(regclass, O.REGCLASS)
    if name == "pg_get_serial_sequence":
        def serial(st, tbl, col):
            r = planner.lookup_relation(tbl.split(".")[-1], None)
            if r is None:
                raise PgError(UNDEFINED_TABLE, f'relation "{tbl}" does not exist')
            for s in st.rels.values():
                if s.kind == "S" and s.owned_by == (r.oid, col):
                    return f"{s.schema}.{s.name}"
            return None

        return lift(serial, O.TEXT)
    from .catalog_defs import definition_function

    return definition_function(planner, name, args, lift)
