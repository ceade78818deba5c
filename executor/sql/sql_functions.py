"""Calls of SQL-language functions (CREATE FUNCTION ... LANGUAGE sql), as
PostgreSQL binds and runs them.

Why a module of its own: a user function is catalog data (``State.functions``),
not a vectorised implementation in the function registry.  A call is
resolved by PostgreSQL's overload rules (``execution/signatures.py``) over
the overloads visible in the search path, with named arguments and
defaults; then, like PostgreSQL's ``inline_function``, a body that is one
``SELECT expression`` is bound in place of the call (the arguments replace
the parameters), so it runs as a column expression.  Any other body is
planned once (parameters as ``$n``) and run per distinct argument tuple; a
set-returning function is a scan in FROM.  STRICT functions return NULL on
a NULL argument without running the body.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from sqlglot import exp

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.catalog.objects.model import Function
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    AMBIGUOUS_FUNCTION, DATATYPE_MISMATCH, FEATURE_NOT_SUPPORTED, INVALID_FUNCTION_DEFINITION, UNDEFINED_FUNCTION, PgError,
)

from ..execution import expr, operators, privileges, proc_catalog, signatures
from ..execution.run import ExecutionRun
from .binder import ExprBinder, Scope, func_args, ident, parse_type_name
from .dialect import parse_one, parse_statements, writes_in_with
from .named_args import split_named

#: node types a STRICT function's inlined body may hold: each returns NULL on a NULL input
_STRICT_SAFE = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.Neg, exp.Paren, exp.Column, exp.Identifier,
                exp.Parameter, exp.Placeholder, exp.Var, exp.Literal, exp.Cast, exp.DataType, exp.DataTypeParam,
                exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.DPipe)


@dataclass
class FnScope:
    """While a body is bound: its parameter names and, when it is inlined,
    the call's bound arguments (else parameters are ``$n`` of the body's plan)."""

    name: str
    arg_names: tuple[str, ...]
    args: list[expr.Expr] | None = None
    oid: int = 0


# ------------------------------------------------------------------ the catalog side

def _param_names(fn: Function) -> tuple[str, ...]:
    """One name per parameter ('' for an unnamed one)."""
    return tuple(fn.arg_names) + ("",) * (len(fn.arg_types) - len(fn.arg_names))


def visible(state: Any, name: str, schema: str | None, path: list[str]) -> list[Function]:
    """The overloads of ``name`` a call may bind to: in ``schema``, or in
    the search path, where one in an earlier schema hides one of the same
    argument types in a later schema (FuncnameGetCandidates)."""
    fns = state.functions.get(name, ())
    if schema is not None:
        return [f for f in fns if f.schema == schema]
    order = ["pg_catalog"] + [s for s in path if s != "pg_catalog"]
    out: dict[tuple[int, ...], Function] = {}
    for s in order:
        for f in fns:
            if f.schema == s and f.arg_types not in out:
                out[f.arg_types] = f
    return list(out.values())


def usable_path(planner) -> list[str]:
    """The search path a call looks in: schemas the current role has USAGE
    on (PostgreSQL leaves the others out of the path silently)."""
    role = privileges.current_role(planner.state, planner.session) if planner.session is not None else None
    path = planner.search_path()
    if role is None or role.superuser:
        return path
    out = []
    for s in path:
        try:
            privileges.check_schema(planner.state, role, s, "U")
        except PgError:
            continue
        out.append(s)
    return out


_PARSED: dict[str, list[Any]] = {}
_STATEMENT_WORDS = {"SELECT", "WITH", "VALUES", "TABLE", "INSERT", "UPDATE", "DELETE", "MERGE", "CREATE", "DROP",
                    "ALTER", "SET", "RESET", "SHOW"}


def body_statements(body: str) -> list[Any]:
    """The body's statements (parsed once per text)."""
    hit = _PARSED.get(body)
    if hit is None:
        first = body.split(None, 1)[0] if body.split() else ""
        if first and first.upper() not in _STATEMENT_WORDS and not first.startswith("("):
            raise PgError("42601", f'syntax error at or near "{first}"')
        hit = parse_statements(body)
        if len(_PARSED) > 512:
            _PARSED.clear()
        _PARSED[body] = hit
    return hit


# ------------------------------------------------------------------ resolution

def _call_words(arg_oids: list[int], names: list[str | None]) -> str:
    return ", ".join((f"{n} => " if n else "") + sqltypes.format_type(o) for o, n in zip(arg_oids, names))


def _placement(fn: Function, nargs: int, names: list[str | None]) -> list[int] | None:
    """For each call argument, the parameter it fills, or None when ``fn``
    cannot take the call (unknown name, a parameter given twice, a
    parameter left without a default)."""
    pos: list[int] = []
    for i, n in enumerate(names):
        if n is None:
            pos.append(i)
        elif n in fn.arg_names:
            pos.append(fn.arg_names.index(n))
        else:
            return None
    if len(set(pos)) != len(pos) or any(p >= len(fn.arg_types) for p in pos):
        return None
    defaults = fn.arg_defaults or ("",) * len(fn.arg_types)
    for p in range(len(fn.arg_types)):
        if p not in pos and not defaults[p]:
            return None
    return pos


def resolve(name: str, fns: list[Function], arg_oids: list[int], names: list[str | None]
            ) -> tuple[Function, list[int]]:
    """The overload a call binds to and the parameter each argument fills
    (42883 / 42725 as PostgreSQL words them)."""
    cands: list[tuple[Function, list[int]]] = []
    sigs: list[signatures.Signature] = []
    for fn in fns:
        pos = _placement(fn, len(arg_oids), names)
        if pos is None:
            continue
        cands.append((fn, pos))
        sigs.append(signatures.Signature(tuple(fn.arg_types[p] for p in pos), len(sigs)))
    shown = f"{name}({_call_words(arg_oids, names)})"
    if not sigs:
        raise PgError(UNDEFINED_FUNCTION, f"function {shown} does not exist", hint=signatures.NO_MATCH_HINT)
    try:
        expanded, idx = signatures.select(name, sigs, arg_oids)
    except PgError as e:
        raise PgError(e.sqlstate, e.message.replace(f"{name}({signatures.type_words(arg_oids)})", shown),
                      hint=e.hint) from None
    if sum(1 for s in sigs if s.args == tuple(expanded)) > 1:
        raise PgError(AMBIGUOUS_FUNCTION, f"function {shown} is not unique", hint=signatures.AMBIGUOUS_HINT)
    return cands[idx]


def bound_call(planner, binder: ExprBinder, node: exp.Func, name: str, schema: str | None = None
               ) -> tuple[Function, list[expr.Expr]] | None:
    """The user function a call binds to and its arguments (defaults
    filled, coerced to the parameter types), or None when no user function
    has the name (the caller tries the built-in catalog)."""
    fns = visible(planner.state, name, schema, usable_path(planner))
    if not fns and schema is None:
        return None
    if schema is not None:
        planner.need("U", schema=schema)
    vals, names = split_named(func_args(node))
    args = [binder.bind(v) for v in vals]
    fn, pos = resolve(name if schema is None else f"{schema}.{name}", fns, [a.oid for a in args], names)
    full: list[expr.Expr | None] = [None] * len(fn.arg_types)
    for a, p in zip(args, pos):
        full[p] = a
    filled = [a if a is not None else default_expr(planner, fn.arg_defaults[p]) for p, a in enumerate(full)]
    out = [planner.coerce(a, t) for a, t in zip(filled, fn.arg_types)]
    planner.need("X", function=fn.oid)
    planner.functions_used[fn.oid] = fn
    return fn, out


def default_expr(planner, text: str) -> expr.Expr:
    sel = parse_one(f"SELECT {text}")
    return ExprBinder(planner, Scope([])).bind(sel.expressions[0])


# ------------------------------------------------------------------ scalar calls

def _inlinable_body(fn: Function) -> exp.Expression | None:
    """PostgreSQL's inline_function test: one SELECT of one expression,
    nothing else (no FROM, WHERE, subqueries ...); a STRICT function only
    when its body is strict in every parameter."""
    if fn.retset or fn.language != "sql":
        return None
    stmts = body_statements(fn.body)
    if len(stmts) != 1 or not isinstance(stmts[0], exp.Select):
        return None
    sel = stmts[0]
    if len(sel.expressions) != 1 or any(sel.args.get(k) for k in sel.args if k != "expressions"):
        return None
    e = sel.expressions[0]
    e = e.this if isinstance(e, exp.Alias) else e
    if any(isinstance(n, (exp.Select, exp.Subquery, exp.Star)) for n in e.walk()):
        return None
    if fn.strict and not (all(isinstance(n, _STRICT_SAFE) for n in e.walk()) and
                          all(_param_uses(fn, e))):
        return None         # NULL in must be NULL out without the body deciding
    return e


def _param_uses(fn: Function, body: exp.Expression) -> list[int]:
    """How often the body names each parameter (``$n``, its name, or ``fn.name``)."""
    uses = [0] * len(fn.arg_types)
    for n in body.walk():
        idx = -1
        if isinstance(n, (exp.Parameter, exp.Placeholder)):
            text = str(n.this.this if isinstance(n.this, exp.Literal) else n.name)
            idx = int(text) - 1 if text.isdigit() else -1
        elif isinstance(n, exp.Column) and isinstance(n.this, exp.Identifier):
            table = ident(n.args["table"]) if n.args.get("table") else None
            name = ident(n.this)
            if table in (None, fn.name) and name in fn.arg_names:
                idx = fn.arg_names.index(name)
        if 0 <= idx < len(uses):
            uses[idx] += 1
    return uses


def _args_allow_inlining(fn: Function, body: exp.Expression, args: list[expr.Expr]) -> bool:
    """PostgreSQL keeps the call when an argument used more than once by the
    body is volatile or a subquery (inlining would evaluate it several times)."""
    uses = _param_uses(fn, body)
    for a, k in zip(args, uses):
        if k > 1 and any((isinstance(n, expr.Func) and n.volatile) or isinstance(n, expr.SubqueryExpr)
                         for n in a.walk()):
            return False
    return True


def call(planner, binder: ExprBinder, node: exp.Func, name: str, schema: str | None = None) -> expr.Expr | None:
    """A call of a user function as an expression, or None (no such name)."""
    bound = bound_call(planner, binder, node, name, schema)
    if bound is None:
        return None
    fn, args = bound
    if fn.retset:
        raise PgError("0A000", "set-returning functions are not allowed here",
                      hint=f"Call {fn.name} in FROM, or at the top of the select list.")
    if len(fn.out_types) > 1:
        raise PgError(FEATURE_NOT_SUPPORTED, f"{fn.name} returns a record of several columns, which is not "
                                             "supported in an expression", hint=f"Call it in FROM: SELECT * FROM {fn.name}(...).")
    if any(sc.oid == fn.oid for sc in planner.fn_scopes):
        return _recursive_call(planner, fn, args)
    body = _inlinable_body(fn) if fn.return_type != type_oids.VOID else None
    if body is not None and _args_allow_inlining(fn, body, args):
        inlined = _inline(planner, fn, body, args)
        if inlined is not None:
            return inlined
    plan = plan_body(planner, fn)
    return BodyCall(fn, _runner(fn, plan), args, plan)


def _recursive_call(planner, fn: Function, args: list[expr.Expr]) -> expr.Expr:
    """A call of a function inside its own body (PostgreSQL never inlines
    it): its body is planned when the call first runs, with what that plan
    needs checked then; too deep a recursion is PostgreSQL's 54001."""
    make, engine, session = type(planner), planner.engine, planner.session
    kept: dict[str, Any] = {}

    def impl(cols: list[Col], n: int, ctx) -> Col:
        if "plan" not in kept:
            sub = make(engine, ctx.state, [], session=session)
            kept["plan"], kept["needs"] = plan_body(sub, fn), list(sub.needs)
        privileges.authorize(ctx.state, ctx.session, kept["needs"])
        try:
            return _runner(fn, kept["plan"])(cols, n, ctx)
        except RecursionError:
            raise PgError("54001", "stack depth limit exceeded",
                          hint="Increase the configuration parameter \"max_stack_depth\" (currently 2048kB), "
                               "after ensuring the platform's stack depth limit is adequate.") from None

    return expr.Func(f"{fn.schema}.{fn.name}", impl, args, fn.return_type, volatile=True)


class BodyCall(expr.Func):
    """A call that runs its function's planned body.  The plan is kept on the
    node so that whoever walks a plan (plan_facts: stream scans, volatility,
    result reuse) sees the body too; the name is schema-qualified, never a
    built-in's."""

    def __init__(self, fn: Function, impl: Callable, args: list[expr.Expr], plan: operators.Op) -> None:
        super().__init__(f"{fn.schema}.{fn.name}", impl, args, fn.return_type, volatile=fn.volatility == "v")
        self.body_plan = plan


def _inline(planner, fn: Function, body: exp.Expression, args: list[expr.Expr]) -> expr.Expr | None:
    planner.fn_scopes.append(FnScope(fn.name, _param_names(fn), args, fn.oid))
    try:
        e = ExprBinder(planner, Scope([])).bind(body)
    finally:
        planner.fn_scopes.pop()
    if fn.volatility != "v" and any(isinstance(n, expr.Func) and n.volatile for n in e.walk()):
        return None     # PostgreSQL keeps the call: inlining would make it volatile
    return _returned(planner, fn, e)


def _returned(planner, fn: Function, e: expr.Expr) -> expr.Expr:
    """The body's value as the declared result type (assignment coercion, as check_sql_fn_retval)."""
    if e.oid == fn.return_type:
        return e
    if e.oid == type_oids.UNKNOWN:
        return planner.coerce(e, fn.return_type)
    return expr.Cast(e, fn.return_type, explicit=False)


_QUERIES = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery)


def plan_body(planner, fn: Function) -> operators.Op:
    """The body's statements planned with its parameters as ``$n`` (a
    planner of their own, on the same catalog); the last one's plan is the
    function's.  What they need is added to the caller's needs: the
    function runs with the caller's rights."""
    stmts = body_statements(fn.body)
    for s in stmts:
        if not isinstance(s, _QUERIES) or writes_in_with(s):
            raise PgError(FEATURE_NOT_SUPPORTED, "SQL functions whose body changes data are not supported",
                          hint="Write the body as queries (SELECT); the function's result is the last one's.")
    plan: operators.Op = operators.Result1()
    for s in stmts:
        sub = type(planner)(planner.engine, planner.state, list(fn.arg_types), session=planner.session)
        sub.fn_scopes.append(FnScope(fn.name, _param_names(fn), None, fn.oid))
        sub.use_columns_of(s)
        plan = sub.plan_query(s)
        planner.needs.extend(sub.needs)
        planner.functions_used.update(sub.functions_used)
    return plan


def _run_body(plan: operators.Op, ctx, vals: list[Any]) -> Batch:
    sub = dataclasses.replace(ctx, params=list(vals), run=ExecutionRun(), outer_rows=[], cte_results={})
    return plan.execute(sub)


def _runner(fn: Function, plan: operators.Op) -> Callable:
    """A Func implementation running the body once per distinct argument tuple."""
    def impl(cols: list[Col], n: int, ctx) -> Col:
        rows = list(zip(*[c.to_pylist() for c in cols])) if cols else [()] * n
        done: dict[tuple, Any] = {}
        out = []
        for row in rows:
            key = tuple(map(_hashable, row))
            if key not in done:
                done[key] = _scalar_value(fn, plan, ctx, list(row))
            out.append(done[key])
        return Col.from_pylist(out, fn.return_type)

    return impl


def _hashable(v: Any) -> Any:
    return repr(v) if isinstance(v, (list, dict)) else v


def _scalar_value(fn: Function, plan: operators.Op, ctx, vals: list[Any]) -> Any:
    if fn.strict and any(v is None for v in vals):
        return None
    res = _run_body(plan, ctx, vals)
    if res.n == 0 or fn.return_type == type_oids.VOID:
        return None
    col = res.cols[0].slice(0, 1) if hasattr(res.cols[0], "slice") else res.cols[0]
    if col.oid != fn.return_type:
        col = sqltypes.cast_col(col, fn.return_type, explicit=False)
    return col.to_pylist()[0]


# ------------------------------------------------------------------ set-returning calls in FROM

def table_scan(planner, binder: ExprBinder, node: exp.Func, name: str, alias: str | None,
               colaliases: list[str]) -> operators.Op | None:
    """``FROM f(args)`` of a user function, or None (no such name)."""
    bound = bound_call(planner, binder, node, name)
    if bound is None:
        return None
    fn, args = bound
    plan = plan_body(planner, fn)
    if fn.out_names:
        names = [n or f"column{i + 1}" for i, n in enumerate(fn.out_names)]
        oids = list(fn.out_types)
    else:
        names, oids = [alias or fn.name], [fn.return_type]
    names = [colaliases[i] if i < len(colaliases) else nm for i, nm in enumerate(names)]
    return operators.FunctionScan(fn.name, _set_runner(fn, plan, oids), args,
                                  [operators.OutCol(nm, o) for nm, o in zip(names, oids)])


def _set_runner(fn: Function, plan: operators.Op, oids: list[int]) -> Callable:
    """The rows of one call, ``(argument values, ctx) -> Batch`` (none on a
    NULL argument of a STRICT function; at most one for a scalar function)."""
    def rows(vals, ctx):
        if fn.strict and any(v is None for v in vals):
            return Batch([Col.from_pylist([], o) for o in oids], 0)
        res = _run_body(plan, ctx, vals)
        if not fn.retset and res.n > 1:
            res = res.slice(0, 1)
        cols = [c if c.oid == o else sqltypes.cast_col(c, o, explicit=False) for c, o in zip(res.cols, oids)]
        return Batch(cols, res.n)

    return rows


def returns_set(planner, name: str) -> bool:
    """Whether ``name`` is a set-returning user function (a select-list SRF)."""
    return any(f.retset for f in visible(planner.state, name, None, usable_path(planner)))


def select_list_srf(planner, binder: ExprBinder, node: exp.Func, name: str
                    ) -> tuple[Callable, int, list[expr.Expr]]:
    """A set-returning user function in the select list: (rows, result type, arguments)."""
    bound = bound_call(planner, binder, node, name)
    assert bound is not None    # returns_set found it
    fn, args = bound
    if len(fn.out_types) > 1:
        raise PgError(FEATURE_NOT_SUPPORTED, f"{fn.name} returns rows of several columns; in the select list that "
                                             "would be a record, which is not supported",
                      hint=f"Call it in FROM: SELECT * FROM {fn.name}(...).")
    oid = fn.out_types[0] if fn.out_types else fn.return_type
    return _set_runner(fn, plan_body(planner, fn), [oid]), oid, args


def refuse_unstable_functions(fns) -> None:
    """A continuous view runs its expressions when rows arrive, not when it
    is read: only IMMUTABLE functions give the same answer either way."""
    for fn in fns:
        if fn.volatility != "i":
            kind = "VOLATILE" if fn.volatility == "v" else "STABLE"
            raise PgError(FEATURE_NOT_SUPPORTED, f"continuous views cannot call {kind} function {fn.name}",
                          hint=f"Declare it IMMUTABLE (ALTER FUNCTION {fn.name} IMMUTABLE) if its result depends only "
                               "on its arguments, or call it in a plain view over the continuous view.")


# ------------------------------------------------------------------ CREATE-time checks

def check_body(planner, fn: Function) -> None:
    """Parse and bind the body as PostgreSQL's validator does, and check
    what its last statement returns against the declared result (42P13)."""
    for text, t in zip(fn.arg_defaults, fn.arg_types):
        if text:
            _check_default(planner, text, t)
    stmts = body_statements(fn.body)
    plan = plan_body(planner, fn)
    if fn.return_type == type_oids.VOID:
        return
    if not stmts:
        raise _mismatch(fn, "Function's final statement must be SELECT or INSERT/UPDATE/DELETE RETURNING.")
    want = list(fn.out_types) if fn.out_names else [fn.return_type]
    got = [c.oid for c in plan.out]
    if len(want) == 1 and len(got) != 1:
        raise _mismatch(fn, "Final statement must return exactly one column.")
    if len(got) != len(want):
        raise _mismatch(fn, f"Final statement returns {'too many' if len(got) > len(want) else 'too few'} columns.")
    for g, w in zip(got, want):
        if g != w and g != type_oids.UNKNOWN and not sqltypes.can_assign(g, w):
            detail = (f"Actual return type is {sqltypes.format_type(g)}." if len(want) == 1 else
                      f"Final statement returns {sqltypes.format_type(g)} instead of {sqltypes.format_type(w)} "
                      f"at column {got.index(g) + 1}.")
            raise _mismatch(fn, detail)


def _check_default(planner, text: str, oid: int) -> None:
    """A parameter default binds, has no subquery, and is assignable to the parameter's type."""
    if any(isinstance(n, (exp.Select, exp.Subquery)) for n in parse_one(f"SELECT {text}").expressions[0].walk()):
        raise PgError(FEATURE_NOT_SUPPORTED, "cannot use subquery in DEFAULT expression")
    e = default_expr(planner, text)
    if e.oid != type_oids.UNKNOWN and e.oid != oid and not sqltypes.can_assign(e.oid, oid):
        raise PgError(DATATYPE_MISMATCH, f"argument of DEFAULT must be type {sqltypes.format_type(oid)}, "
                                         f"not type {sqltypes.format_type(e.oid)}")
    planner.coerce(e, oid)


def _mismatch(fn: Function, detail: str) -> PgError:
    shown = sqltypes.format_type(fn.return_type)
    return PgError(INVALID_FUNCTION_DEFINITION, f"return type mismatch in function declared to return {shown}",
                   detail=detail)


def regproc(planner, text: str) -> int:
    """'name'::regproc and 'name(types)'::regprocedure: a function's OID (user functions, then built-ins)."""
    name, _, args = text.partition("(")
    parts = [p.strip('"') if p.startswith('"') else p.lower() for p in name.strip().split(".")]
    schema, fname = (parts[0], parts[-1]) if len(parts) > 1 else (None, parts[-1])
    fns = visible(planner.state, fname, schema, planner.search_path())
    if args:
        types = tuple(type_oid(t) for t in args.rstrip().rstrip(")").split(",") if t.strip())
        fns = [f for f in fns if f.arg_types == types]
    oids = [f.oid for f in fns] or [e.oid for e in proc_catalog.entries() if e.name == fname and
                                   (not args or e.arg_oids == types)]
    if not oids:
        raise PgError(UNDEFINED_FUNCTION, f'function "{text}" does not exist')
    if len(oids) > 1:
        raise PgError(AMBIGUOUS_FUNCTION, f'more than one function named "{text}"')
    return oids[0]


def type_oid(text: str, quoted: bool = True) -> int:
    """A parameter or result type written in CREATE FUNCTION (typmods are
    dropped, as PostgreSQL does); an unknown parameter type is named
    unquoted, as PostgreSQL's message does."""
    t = text.strip()
    low = t.lower()
    if low in ("anyelement", "anyarray", "anycompatible", "anynonarray", "anyenum", "anyrange", "record",
               "internal", "trigger", "event_trigger", '"any"'):
        raise PgError(FEATURE_NOT_SUPPORTED, f"SQL functions taking or returning {low} are not supported",
                      hint="Declare concrete types.")
    if low == "void":
        return type_oids.VOID
    try:
        return parse_type_name(t)[0]
    except PgError as e:
        if quoted or e.sqlstate != "42704":
            raise
        raise PgError(e.sqlstate, f"type {t} does not exist") from None
