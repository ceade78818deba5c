"""Planner state shared by every planning step: parameters, coercion, catalog.

Why a module of its own: every clause planner (and the expression binder,
DML and DDL, which receive the planner) types parameters, coerces
expressions and resolves relation names through these methods; keeping them
out of the clause modules leaves those about query structure only.
"""
from __future__ import annotations

import dataclasses


from typing import TYPE_CHECKING, Any

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.objects.model import Relation
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    DATATYPE_MISMATCH, INVALID_NAME, SYNTAX_ERROR, UNDEFINED_OBJECT, UNDEFINED_PARAMETER, UNDEFINED_SCHEMA, UNDEFINED_TABLE,
    PgError,
)
from splitstream.protocol.types import decode_text

from ...execution import expr
from ...execution.zoned_casts import cast_in_zone, zone_dependent
from ...execution.datetime_ops import temporal_arith
from ...execution import privileges, system_functions
from ..binder import OPERATOR_CONTEXTS, REG_ARRAYS, operand_type, referenced_names
from .. import sql_functions
from splitstream.catalog.objects import system_catalogs as system
from splitstream.catalog.objects import absent_catalogs, dependency_catalogs  # noqa: F401  (register their relations)

if TYPE_CHECKING:
    from sqlglot import exp

    from ...execution import operators
    from ..binder import Scope


#: the types a float4 operand compares with as float8
_FLOAT4_WIDENS_WITH = frozenset({type_oids.INT2, type_oids.INT4, type_oids.INT8, type_oids.NUMERIC, type_oids.FLOAT8})
_OID_FAMILY = (type_oids.OID, type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGPROC, type_oids.REGNAMESPACE, type_oids.REGROLE)


#: sqlglot meta key on a SELECT whose untyped literal outputs keep their unknown type
#: (it feeds an INSERT or a set operation, which give them their types)
KEEP_UNKNOWNS = "keep_unknowns"

class PlannerBase:
    """Per-statement state, parameter typing, coercion and catalog lookups."""

    def __init__(self, engine, state, param_oids: list[int] | None = None, session=None) -> None:
        self.engine = engine
        self.state = state
        self.session = session
        self.param_oids: list[int] = list(param_oids or [])
        #: the parameters the statement refers to: one it skips has no type to infer (42P18)
        self.params_referenced: set[int] = set()
        #: FROM item names (aliases) -> the type of their whole row as PostgreSQL names it (a
        #: relation's rowtype), for messages; a subquery, VALUES or CTE is record (None)
        self.row_types: dict[str, str | None] = {}
        self.ctes: list[dict[str, Any]] = [{}]
        self.streams_used: list[Relation] = []
        self.tables_used: set[int] = set()
        self.views_used: list[Relation] = []
        #: privileges the statement needs, checked each time it runs (execution/privileges.py)
        self.needs: list[privileges.Need] = []
        self.as_role = 0            # while planning a view's query: its owner, whose rights it reads with
        #: while planning a view's query: the relations it read when created (``Relation.depends_on``),
        #: which its names denote whatever the reader's search_path (PostgreSQL stores them by OID)
        self.view_relations: tuple[int, ...] = ()
        #: per statement and view being planned: the column names it uses (None: all, for a *)
        self.column_names: list[frozenset[str] | None] = []
        #: while a SQL function's body is bound: its parameters (sql_functions.FnScope)
        self.fn_scopes: list[sql_functions.FnScope] = []
        #: user functions the statement calls (a view depends on them)
        self.functions_used: dict[int, Any] = {}
        #: every relation a name resolved to while planning (views' own relations too): a
        #: prepared statement is planned again when one of them changes (api.Prepared)
        self.relations_read: dict[int, Relation] = {}
        #: the statement whose WITH may hold INSERT/UPDATE/DELETE (set by the command layer), the
        #: builder it plans them with (body -> statement with ``run`` and RETURNING ``columns``),
        #: and the data-modifying WITH queries planned so far, in order (planner/query.py)
        self.top_query: Any = None
        self.write_builder: Any = None
        self.writes: list[Any] = []

    def need(self, privs: str, oid: int = 0, schema: str = "", any_of: bool = False,
             columns: frozenset[str] | None = None, function: int = 0) -> None:
        # EXECUTE is checked as the current user even inside a view, as PostgreSQL does (ExecInitFunc)
        self.needs.append(privileges.Need(privs, oid, schema, 0 if function else self.as_role, any_of,
                                          columns=columns, function=function))

    def use_columns_of(self, tree: Any) -> None:
        """Name the columns the statement (or view) being planned uses: every
        column name in it, all of them for a ``*`` (more than it reads, never
        less, so a column privilege never stands in for one not granted)."""
        self.column_names.append(referenced_names(tree))

    def used_columns(self, rel: Relation) -> frozenset[str]:
        names = self.column_names[-1] if self.column_names else None
        cols = {c.name for c in rel.live_columns if not c.hidden}
        return frozenset(cols if names is None else cols & names)

    if TYPE_CHECKING:
        # Steps one planning module calls in another; each is defined in the
        # mixin named beside it, and ``Planner`` inherits them all.
        def plan_query(self, node: exp.Expr, outer: Scope | None = None, corr: list | None = None) -> operators.Op: ...  # query
        def plan_values(self, node: exp.Values, outer) -> operators.Op: ...  # query
        def find_cte(self, name: str): ...  # query
        def plan_select(self, sel: exp.Select, outer: Scope | None, corr) -> operators.Op: ...  # select_list
        def plan_limit(self, sel, op, scope): ...  # select_list
        def _order_target(self, node, items, names) -> int | None: ...  # select_list
        def plan_from(self, sel: exp.Select, outer, corr, where_conj: list) -> tuple[operators.Op, Scope]: ...  # from_clause
        def _join_comma_items(self, planned, outer, where_conj): ...  # joins
        def join(self, lop, lscope, rop, rscope, kind, on, outer, where_conj) -> tuple[operators.Op, Scope]: ...  # joins
        def lateral_join(self, op, scope, target, kind, outer, corr): ...  # joins
        def join_using(self, lop, lscope, rop, rscope, kind, names): ...  # joins
        def _contains_agg(self, node) -> bool: ...  # grouping
        def plan_aggregate(self, op, scope, sel, select_items, group, having, outer): ...  # grouping
        def grouping_checked_last(self, grouped: bool, scope, sel, select_items, having): ...  # grouping

    def param(self, idx: int, oid: int | None = None) -> expr.Expr:
        if idx < 0 or idx > 65535:
            raise PgError(UNDEFINED_PARAMETER, f"there is no parameter ${idx + 1}")
        if self.fn_scopes:
            fs = self.fn_scopes[-1]
            if idx >= len(fs.arg_names):
                raise PgError(UNDEFINED_PARAMETER, f"there is no parameter ${idx + 1}")
            if fs.args is not None:
                return fs.args[idx]
        self.params_referenced.add(idx)
        while len(self.param_oids) <= idx:
            self.param_oids.append(0)
        cur = self.param_oids[idx]
        if cur == type_oids.UNKNOWN:     # declared unknown: inferred as if not declared
            cur = self.param_oids[idx] = 0
        if cur == 0 and oid is not None and oid != type_oids.UNKNOWN:
            self.param_oids[idx] = oid
            cur = oid
        return expr.Param(idx, cur if cur else type_oids.UNKNOWN)

    def coerce(self, e: expr.Expr, oid: int, typmod: int = -1) -> expr.Expr:
        if oid is None:
            return e
        if isinstance(e, expr.Param) and e.oid == type_oids.UNKNOWN:
            return self.param(e.idx, oid)
        if isinstance(e, expr.Const) and e.oid == type_oids.UNKNOWN and e.value is not None:
            try:
                return self._typed_literal(e, oid, typmod)
            except PgError as err:      # the input function refused it: placed at the literal, as coerce_type does
                if err.position is not None or e.written_at is None or not (
                        err.sqlstate.startswith("22") or oid in _OID_FAMILY):
                    raise
                raise dataclasses.replace(err, position=e.written_at) from None
        if e.oid == oid and typmod < 0:
            return e
        if isinstance(e, expr.Const) and e.value is not None and sqltypes.can_implicit(e.oid, oid):
            # fold the cast of a literal once, at plan time, not per batch
            return self.fold_cast(e.value, e.oid, oid, typmod, explicit=False)
        if e.oid == type_oids.BOOL and oid != type_oids.BOOL and not sqltypes.is_string(oid) and isinstance(e, expr.Const) is False and oid in sqltypes._NUM_RANK:
            raise PgError(DATATYPE_MISMATCH, f"argument of type {sqltypes.type_name(e.oid)} cannot be coerced to {sqltypes.type_name(oid)}")
        if oid == type_oids.BOOL and e.oid not in (type_oids.BOOL, type_oids.UNKNOWN):
            raise PgError(DATATYPE_MISMATCH, f"argument of WHERE must be type boolean, not type {sqltypes.type_name(e.oid)}")
        return expr.coerce(e, oid, typmod)

    def _typed_literal(self, e: expr.Const, oid: int, typmod: int) -> expr.Expr:
        """An untyped literal read as type ``oid``."""
        if oid in (type_oids.TEXT, type_oids.VARCHAR, type_oids.BPCHAR, type_oids.NAME) and typmod < 0:
            return expr.Const(e.value, oid)
        if oid in REG_ARRAYS and isinstance(e.value, str):
            return self.reg_literal(e.value, oid)
        if oid in (type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGPROC) and isinstance(e.value, str):
            return expr.Const(self.resolve_reg(oid, e.value), oid)
        return self.fold_cast(e.value, type_oids.TEXT, oid, typmod)

    def fold_cast(self, value: Any, src: int, oid: int, typmod: int = -1, explicit: bool = True) -> expr.Const:
        """A literal cast at plan time.  Casts involving timestamptz use the
        session's TimeZone; a plan is made again when that setting changes
        (``Prepared.planned_under``), so folding them here stays correct."""
        col = Col.from_pylist([value], src)
        tz = self.session.settings.get("timezone", "UTC") if self.session is not None else "UTC"
        if tz != "UTC" and zone_dependent(src, oid):
            col = cast_in_zone(col, oid, typmod, explicit, tz)
        else:
            col = sqltypes.cast_col(col, oid, typmod, explicit)
        return expr.Const(col.to_pylist()[0], oid, typmod)

    def unify(self, a: expr.Expr, b: expr.Expr, context: str) -> tuple[expr.Expr, expr.Expr]:
        if a.oid == b.oid:
            if a.oid == type_oids.UNKNOWN:
                return self.coerce(a, type_oids.TEXT), self.coerce(b, type_oids.TEXT)
            return a, b
        if a.oid == type_oids.UNKNOWN:
            return self.coerce(a, operand_type(a, b.oid, context)), b
        if b.oid == type_oids.UNKNOWN:
            return a, self.coerce(b, operand_type(b, a.oid, context))
        if a.oid in _OID_FAMILY and b.oid in _OID_FAMILY + type_oids.INTEGER_TYPES or \
                b.oid in _OID_FAMILY and a.oid in type_oids.INTEGER_TYPES:    # oid = regtype, regclass = 1259 as oid
            return self.coerce(a, type_oids.OID), self.coerce(b, type_oids.OID)
        if context in OPERATOR_CONTEXTS and type_oids.FLOAT4 in (a.oid, b.oid) and \
                {a.oid, b.oid} - {type_oids.FLOAT4} <= _FLOAT4_WIDENS_WITH:
            # real = numeric is float48eq after numeric -> float8 (float8 is the preferred type),
            # not float4eq: 1.1::float4 = 1.1 is false, as 16777217 = 16777216::float4 is
            return self.coerce(a, type_oids.FLOAT8), self.coerce(b, type_oids.FLOAT8)
        try:
            t = sqltypes.common_type(a.oid, b.oid, context)
        except PgError:
            if {a.oid, b.oid} & {type_oids.TIME, type_oids.INTERVAL}:
                raise
            raise expr.operator_missing("=", a.oid, b.oid) from None
        return self.coerce(a, t), self.coerce(b, t)

    def arith(self, op: str, left: expr.Expr, right: expr.Expr) -> expr.Expr:
        te = temporal_arith(self, op, left, right)
        if te is not None:
            return te
        if left.oid == type_oids.UNKNOWN and right.oid == type_oids.UNKNOWN:
            left, right = self.coerce(left, type_oids.NUMERIC), self.coerce(right, type_oids.NUMERIC)
        elif left.oid == type_oids.UNKNOWN:
            left = self.coerce(left, right.oid if right.oid in sqltypes._NUM_RANK else type_oids.NUMERIC)
        elif right.oid == type_oids.UNKNOWN:
            right = self.coerce(right, left.oid if left.oid in sqltypes._NUM_RANK else type_oids.NUMERIC)
        floats = {type_oids.FLOAT4, type_oids.FLOAT8} & {left.oid, right.oid}
        if op == "^":
            if left.oid not in sqltypes._NUM_RANK or right.oid not in sqltypes._NUM_RANK:
                raise expr.operator_missing(op, left.oid, right.oid)
            # numeric_power, else dpow: integers go to float8 (the preferred numeric type)
            t = type_oids.NUMERIC if type_oids.NUMERIC in (left.oid, right.oid) and not floats else type_oids.FLOAT8
        else:
            t = sqltypes.arith_type(op, left.oid, right.oid)
        if t < 0 or (op == "%" and floats):           # no % over float4/float8 in pg_operator
            raise expr.operator_missing(op, left.oid, right.oid)
        return expr.Arith(op, self.coerce(left, t), self.coerce(right, t), t)

    def lookup_relation(self, name: str, schema: str | None) -> Relation | None:
        st = self.state
        bound = self._view_relation(name, schema)
        if bound is not None:
            return self._read(bound)
        if schema:
            if schema in st.schemas and not self.as_role:
                # a qualified name needs USAGE on its schema, checked at lookup as PostgreSQL does (before
                # ownership or table privileges) and again at each run; a view's stored query names its
                # relations by OID, so inside a view there is no lookup to check
                self.need("U", schema=schema)
                if self.session is not None:
                    privileges.check_schema(st, privileges.current_role(st, self.session), schema, "U")
            return self._read(st.lookup(schema, name))
        for s in self.search_path():
            r = st.lookup(s, name)
            if r is not None:
                return self._read(r)
        return None

    def _view_relation(self, name: str, schema: str | None) -> Relation | None:
        """Inside a view's query, the relation of that name the view was created over, if any."""
        for oid in self.view_relations:
            rel = self.state.rels.get(oid)
            if rel is not None and rel.name == name and (schema is None or rel.schema == schema):
                return rel
        return None

    def _read(self, rel: Relation | None) -> Relation | None:
        if rel is not None:
            self.relations_read[rel.oid] = rel
        return rel

    def search_path(self) -> list[str]:
        return privileges.search_path(self.session)

    def reg_literal(self, text: str, array_oid: int) -> expr.Const:
        """'{t,int4}' as regclass[] / regtype[]: the array read as text, each
        element a name (or number) resolved as the element type's input
        function does."""
        elem = type_oids.ELEMENT_OF[array_oid]

        def resolved(v):
            if isinstance(v, list):
                return [resolved(x) for x in v]
            return None if v is None else self.resolve_reg(elem, v)

        return expr.Const(resolved(decode_text(type_oids.ARRAY_OF[type_oids.TEXT], text)), array_oid)

    def resolve_reg(self, oid: int, text: str) -> int:
        """'name'::regclass / ::regtype: the object's OID, or 42P01/42704."""
        name = text.strip()
        if name.isdigit():
            return int(name)
        if oid == type_oids.REGTYPE:
            t = sqltypes.oid_by_name(name)
            if t is None:
                raise PgError("42704", f'type "{name}" does not exist')
            return t
        if oid == type_oids.REGPROC:
            return sql_functions.regproc(self, name)
        parts = [p.strip('"') if p.startswith('"') else p.lower() for p in name.split(".")]
        if oid in (type_oids.REGNAMESPACE, type_oids.REGROLE):
            return self._reg_named(oid, name, parts)
        if len(parts) > 3:
            raise PgError(SYNTAX_ERROR, f"improper relation name (too many dotted names): {name}")
        rel = self.lookup_relation(parts[-1], parts[0] if len(parts) > 1 else None)
        if rel is None:
            vt = system.lookup(parts[-1], parts[0] if len(parts) > 1 else None, self.search_path())
            if vt is not None:
                return system.relation_oid(vt)
            raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
        return rel.oid

    def _reg_named(self, oid: int, name: str, parts: list[str]) -> int:
        """'name'::regnamespace / ::regrole: a schema's or role's OID, or 42704."""
        kind = "schema" if oid == type_oids.REGNAMESPACE else "role"
        if len(parts) > 1:
            raise PgError(INVALID_NAME, "invalid name syntax")
        found = self.state.schemas.get(parts[0]) if kind == "schema" else self.state.roles.get(parts[0])
        if found is None:
            raise PgError(UNDEFINED_SCHEMA if kind == "schema" else UNDEFINED_OBJECT, f'{kind} "{parts[0]}" does not exist')
        return found.oid

    def sequence_func(self, name, args):
        return self.engine.sequence_func(self, name, args)

    def catalog_func(self, name, args):
        return system_functions.catalog_function(self, name, args)

    def user_call(self, binder, node, name: str, schema: str | None = None) -> expr.Expr | None:
        """A call of a SQL-language function, or None when none has the name
        (with ``schema``, 42883 then)."""
        return sql_functions.call(self, binder, node, name, schema)

    def user_exact_match(self, name: str, arg_oids: list[int]) -> bool:
        """A user overload taking exactly these types (it beats a built-in
        reached by casts, as in PostgreSQL's candidate ranking)."""
        return any(f.arg_types == tuple(arg_oids)
                   for f in sql_functions.visible(self.state, name, None, sql_functions.usable_path(self)))

    def function_param(self, name: str, table: str | None) -> expr.Expr | None:
        """A name in a SQL function's body that no column takes: its
        parameter (``name`` or ``function.name``), as PostgreSQL resolves it."""
        if not self.fn_scopes:
            return None
        fs = self.fn_scopes[-1]
        if (table is None or table == fs.name) and name in fs.arg_names:
            return self.param(fs.arg_names.index(name))
        return None

