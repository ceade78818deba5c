"""Planner state shared by every planning step: parameters, coercion, catalog.

Why a module of its own: every clause planner (and the expression binder,
DML and DDL, which receive the planner) types parameters, coerces
expressions and resolves relation names through these methods; keeping them
out of the clause modules leaves those about query structure only.
"""
from __future__ import annotations

from typing import Any

from catalog import types as T
from catalog.objects import Relation
from catalog.vector import Col
from protocol import oids as O
from protocol.errors import DATATYPE_MISMATCH, UNDEFINED_PARAMETER, UNDEFINED_TABLE, PgError

from .. import expr as X
from ..zoned_casts import cast_in_zone, zone_dependent

_OID_FAMILY = (O.OID, O.REGCLASS, O.REGTYPE, O.REGPROC, O.REGNAMESPACE, O.REGROLE)


class PlannerBase:
    """Per-statement state, parameter typing, coercion and catalog lookups."""

    def __init__(self, engine, state, param_oids: list[int] | None = None, session=None) -> None:
        self.engine = engine
        self.state = state
        self.session = session
        self.param_oids: list[int] = list(param_oids or [])
        self.ctes: list[dict[str, Any]] = [{}]
        self.streams_used: list[Relation] = []
        self.tables_used: set[int] = set()
        self.views_used: list[Relation] = []

    def param(self, idx: int, oid: int | None = None) -> X.Expr:
        if idx < 0 or idx > 65535:
            raise PgError(UNDEFINED_PARAMETER, f"there is no parameter ${idx + 1}")
        while len(self.param_oids) <= idx:
            self.param_oids.append(0)
        cur = self.param_oids[idx]
        if cur == 0 and oid is not None and oid != O.UNKNOWN:
            self.param_oids[idx] = oid
            cur = oid
        p = X.Param(idx, cur if cur else O.UNKNOWN)
        p.planner = self
        return p

    def coerce(self, e: X.Expr, oid: int, typmod: int = -1) -> X.Expr:
        if oid is None:
            return e
        if isinstance(e, X.Param) and e.oid == O.UNKNOWN:
            return self.param(e.idx, oid)
        if isinstance(e, X.Const) and e.oid == O.UNKNOWN and e.value is not None:
            if oid in (O.TEXT, O.VARCHAR, O.BPCHAR, O.NAME) and typmod < 0:
                return X.Const(e.value, oid)
            return self.fold_cast(e.value, O.TEXT, oid, typmod)
        if e.oid == oid and typmod < 0:
            return e
        if isinstance(e, X.Const) and e.value is not None and T.can_implicit(e.oid, oid):
            # fold the cast of a literal once, at plan time, not per batch
            return self.fold_cast(e.value, e.oid, oid, typmod, explicit=False)
        if e.oid == O.BOOL and oid != O.BOOL and not T.is_string(oid) and isinstance(e, X.Const) is False and oid in T._NUM_RANK:
            raise PgError(DATATYPE_MISMATCH, f"argument of type {T.type_name(e.oid)} cannot be coerced to {T.type_name(oid)}")
        if oid == O.BOOL and e.oid not in (O.BOOL, O.UNKNOWN):
            raise PgError(DATATYPE_MISMATCH, f"argument of WHERE must be type boolean, not type {T.type_name(e.oid)}")
        return X.coerce(e, oid, typmod)

    def fold_cast(self, value: Any, src: int, oid: int, typmod: int = -1, explicit: bool = True) -> X.Const:
        """A literal cast at plan time.  Casts involving timestamptz use the
        session's TimeZone; a plan is made again when that setting changes
        (``Prepared.planned_under``), so folding them here stays correct."""
        col = Col.from_pylist([value], src)
        tz = self.session.settings.get("timezone", "UTC") if self.session is not None else "UTC"
        if tz != "UTC" and zone_dependent(src, oid):
            col = cast_in_zone(col, oid, typmod, explicit, tz)
        else:
            col = T.cast_col(col, oid, typmod, explicit)
        return X.Const(col.to_pylist()[0], oid, typmod)

    def unify(self, a: X.Expr, b: X.Expr, context: str) -> tuple[X.Expr, X.Expr]:
        if a.oid == b.oid:
            if a.oid == O.UNKNOWN:
                return self.coerce(a, O.TEXT), self.coerce(b, O.TEXT)
            return a, b
        if a.oid == O.UNKNOWN:
            return self.coerce(a, b.oid), b
        if b.oid == O.UNKNOWN:
            return a, self.coerce(b, a.oid)
        if a.oid in _OID_FAMILY and b.oid in _OID_FAMILY:  # oid = regtype etc. compare as oid
            return self.coerce(a, O.OID), self.coerce(b, O.OID)
        try:
            t = T.common_type(a.oid, b.oid, context)
        except PgError:
            if {a.oid, b.oid} & {O.TIME, O.INTERVAL}:
                raise
            raise PgError("42883", f"operator does not exist: {T.type_name(a.oid)} = {T.type_name(b.oid)}",
                          hint="No operator matches the given name and argument types. You might need to add explicit type casts.")
        return self.coerce(a, t), self.coerce(b, t)

    def arith(self, op: str, l: X.Expr, r: X.Expr) -> X.Expr:
        from ..datetime_ops import temporal_arith

        te = temporal_arith(self, op, l, r)
        if te is not None:
            return te
        if l.oid == O.UNKNOWN and r.oid == O.UNKNOWN:
            l, r = self.coerce(l, O.NUMERIC), self.coerce(r, O.NUMERIC)
        elif l.oid == O.UNKNOWN:
            l = self.coerce(l, r.oid if r.oid in T._NUM_RANK else O.NUMERIC)
        elif r.oid == O.UNKNOWN:
            r = self.coerce(r, l.oid if l.oid in T._NUM_RANK else O.NUMERIC)
        if op == "^":
            t = O.NUMERIC if O.NUMERIC in (l.oid, r.oid) and O.FLOAT8 not in (l.oid, r.oid) else O.FLOAT8
        else:
            t = T.arith_type(op, l.oid, r.oid)
        if t < 0:
            raise PgError("42883", f"operator does not exist: {T.type_name(l.oid)} {op} {T.type_name(r.oid)}",
                          hint="No operator matches the given name and argument types. You might need to add explicit type casts.")
        return X.Arith(op, self.coerce(l, t), self.coerce(r, t), t)

    def lookup_relation(self, name: str, schema: str | None) -> Relation | None:
        st = self.state
        if schema:
            return st.lookup(schema, name)
        for s in self.search_path():
            r = st.lookup(s, name)
            if r is not None:
                return r
        return None

    def search_path(self) -> list[str]:
        sp = "public"
        if self.session is not None:
            sp = self.session.settings.get("search_path", '"$user", public')
        out = []
        for p in sp.split(","):
            p = p.strip().strip('"')
            if p == "$user":
                continue
            out.append(p)
        return out or ["public"]

    def resolve_reg(self, oid: int, text: str) -> int:
        """'name'::regclass / ::regtype: the object's OID, or 42P01/42704."""
        name = text.strip()
        if name.isdigit():
            return int(name)
        if oid == O.REGTYPE:
            t = T.oid_by_name(name)
            if t is None:
                raise PgError("42704", f'type "{name}" does not exist')
            return t
        parts = [p.strip('"') if p.startswith('"') else p.lower() for p in name.split(".")]
        rel = self.lookup_relation(parts[-1], parts[0] if len(parts) > 1 else None)
        if rel is None:
            from catalog import system

            vt = system.lookup(parts[-1], parts[0] if len(parts) > 1 else None, self.search_path())
            if vt is not None:
                return abs(hash(vt.name)) % 10000 + 1000
            raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
        return rel.oid

    def sequence_func(self, name, args):
        return self.engine.sequence_func(self, name, args)

    def catalog_func(self, name, args):
        from .. import catalog_funcs

        return catalog_funcs.catalog_function(self, name, args)

    def user_function(self, name):
        fns = self.state.functions.get(name)
        return fns[0] if fns else None

    def call_udf(self, fn, args):
        return self.engine.call_udf(self, fn, args)
