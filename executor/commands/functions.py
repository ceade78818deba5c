"""CREATE [OR REPLACE] FUNCTION, DROP FUNCTION and ALTER FUNCTION for
SQL-language functions (PostgreSQL's functioncmds.c and pg_proc.c's
ProcedureCreate), and the lookup of a function named with or without its
argument types (LookupFuncWithArgs) that GRANT shares.

Procedures, other languages and SQL-standard bodies are refused with 0A000
and a hint.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.objects import acl, function_text
from splitstream.catalog.objects.model import Function
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (
    AMBIGUOUS_FUNCTION, DEPENDENT_OBJECTS_STILL_EXIST, DUPLICATE_FUNCTION, FEATURE_NOT_SUPPORTED,
    INVALID_FUNCTION_DEFINITION, INVALID_SCHEMA_NAME, UNDEFINED_FUNCTION, Notice, PgError,
)

from ..api import Result
from ..execution import privileges
from ..execution.privileges import current_role
from ..sql import sql_functions
from ..sql.planner import Planner
from .base import Stmt
from .drop import all_dependents, cascade_notice, dependents, drop_relation, kind_word
from .function_syntax import (
    FunctionDef, FunctionRef, Reader, no_language, parse_create, parse_option, parse_refs, refuse_language,
)
from .roles import get_role

_SQL_BODY_HINT = "Write the body as a string: AS $$ SELECT ... $$."


def signature_text(name: str, arg_types: tuple[int, ...] | list[int]) -> str:
    """``f(integer, text)``, as PostgreSQL's "does not exist" messages name a function."""
    return f"{name}({', '.join(sqltypes.format_type(t) for t in arg_types)})"


def _schema_of(st, info, schema: str | None) -> str:
    if schema is not None:
        if schema not in st.schemas:
            raise PgError(INVALID_SCHEMA_NAME, f'schema "{schema}" does not exist')
        return schema
    for s in privileges.search_path(info):
        if s in st.schemas:
            return s
    raise PgError("3F000", "no schema has been selected to create in")


# ------------------------------------------------------------------ CREATE

@dataclass
class CreateFunctionStmt(Stmt):
    d: FunctionDef
    cacheable = False

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "CREATE FUNCTION"

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        fn = self._function(st, session.info)
        me = current_role(st, session.info)
        privileges.check_schema(st, me, fn.schema, "C")
        old = next((f for f in st.functions.get(fn.name, ()) if f.schema == fn.schema and f.arg_types == fn.arg_types),
                   None)
        if old is not None:
            fn = self._replacing(st, session.info, old, fn)
        else:
            sch = st.schemas.get(fn.schema)
            fn = replace(fn, oid=ctx.txn.new_oid(), owner=me.oid,   # ALTER DEFAULT PRIVILEGES ... ON FUNCTIONS
                         acl=acl.initial_acl(st.default_acls, "function", me.oid, sch.oid if sch is not None else 0))
        ctx.txn.apply(("function", fn))     # first, as ProcedureCreate: a body may call its own function
        planner = Planner(session.engine, ctx.txn.state, session=session.info)
        sql_functions.check_body(planner, fn)
        return Result(tag=self.tag)

    def _replacing(self, st, info, old: Function, fn: Function) -> Function:
        shown = function_text.procedure(fn)
        if not self.d.replace:
            raise PgError(DUPLICATE_FUNCTION, f'function "{fn.name}" already exists with same argument types')
        privileges.require_owner(st, info, old.owner, "function", fn.name)
        if old.kind != fn.kind:
            raise PgError("42809", "cannot change routine kind",
                          detail=f'"{fn.name}" is a {"procedure" if old.kind == "p" else "function"}.')
        if (old.return_type, old.retset, old.out_types) != (fn.return_type, fn.retset, fn.out_types):
            raise PgError(INVALID_FUNCTION_DEFINITION, "cannot change return type of existing function",
                          hint=f"Use DROP FUNCTION {shown} first.")
        for a, b in zip(old.arg_names, fn.arg_names):
            if a and a != b:
                raise PgError(INVALID_FUNCTION_DEFINITION, f'cannot change name of input parameter "{a}"',
                              hint=f"Use DROP FUNCTION {shown} first.")
        if fn.ndefaults < old.ndefaults:
            raise PgError(INVALID_FUNCTION_DEFINITION, "cannot remove parameter defaults from existing function",
                          hint=f"Use DROP FUNCTION {shown} first.")
        _refuse_under_continuous_views(st, old, "replace")
        return replace(fn, oid=old.oid, owner=old.owner, acl=old.acl)

    def _function(self, st, info) -> Function:
        d = self.d
        if d.kind == "p":
            raise PgError(FEATURE_NOT_SUPPORTED, "CREATE PROCEDURE is not supported",
                          hint="Create a FUNCTION ... LANGUAGE sql, and call it with SELECT.")
        if d.sql_body is not None:
            raise PgError(FEATURE_NOT_SUPPORTED, "SQL-standard function bodies (BEGIN ATOMIC / RETURN) are not "
                                                 "supported", hint=_SQL_BODY_HINT)
        if d.body is None:
            raise PgError(INVALID_FUNCTION_DEFINITION, "no function body specified")
        if d.language is None:
            raise no_language()
        if d.language != "sql":
            raise refuse_language(d.language)
        if any(a.mode == "v" for a in d.args):
            raise PgError(FEATURE_NOT_SUPPORTED, "VARIADIC parameters are not supported",
                          hint="Pass an array parameter instead.")
        for side in ("ib", "ob"):       # an IN and an OUT parameter may share a name
            names = [a.name for a in d.args if a.mode in side]
            for i, n in enumerate(names):
                if n and n in names[:i]:
                    raise PgError(INVALID_FUNCTION_DEFINITION, f'parameter name "{n}" used more than once')
        ins = [a for a in d.args if a.mode in "ib"]
        defaults = tuple(a.default for a in ins)
        seen_default = False
        for a in defaults:
            if seen_default and not a:
                raise PgError(INVALID_FUNCTION_DEFINITION,
                              "input parameters after one with a default value must also have defaults")
            seen_default = seen_default or bool(a)
        arg_types = tuple(sql_functions.type_oid(a.type_text, quoted=False) for a in ins)
        result, retset, out_names, out_types = self._result()
        check_options(d, retset, current_role(st, info).superuser)
        return Function(0, _schema_of(st, info, d.schema), d.name, arg_types, result, d.body, "sql",
                        arg_names=tuple(a.name for a in ins), arg_defaults=defaults if seen_default else (),
                        retset=retset, volatility=d.volatility or "v", strict=bool(d.strict), out_names=out_names,
                        out_types=out_types,
                        param_modes=tuple(a.mode for a in d.args) if any(a.mode != "i" for a in d.args) else (),
                        parallel=d.parallel or "u", leakproof=bool(d.leakproof), cost=d.cost or 100.0,
                        rows=d.rows or (1000.0 if retset else 0.0))

    def _result(self) -> tuple[int, bool, tuple[str, ...], tuple[int, ...]]:
        """(result type, SETOF, result column names and types) from RETURNS,
        RETURNS TABLE or OUT parameters, with PostgreSQL's checks."""
        d = self.d
        outs = [a for a in d.args if a.mode in "ob"]
        if outs and d.table:
            raise PgError("42601", "OUT and INOUT arguments aren't allowed in TABLE functions")
        if d.table:
            types = tuple(sql_functions.type_oid(t) for _, t in d.table)
            return (types[0] if len(types) == 1 else type_oids.RECORD), True, tuple(c for c, _ in d.table), types
        if not outs:
            if d.returns is None:
                raise PgError(INVALID_FUNCTION_DEFINITION, "function result type must be specified")
            return sql_functions.type_oid(d.returns), d.retset, (), ()
        types = tuple(sql_functions.type_oid(a.type_text, quoted=False) for a in outs)
        names = tuple(a.name for a in outs)        # '' for an unnamed one: its column is "columnN"
        expected = types[0] if len(types) == 1 else type_oids.RECORD
        if d.returns is not None:
            declared = type_oids.RECORD if d.returns.strip().lower() == "record" else sql_functions.type_oid(d.returns)
            if declared != expected:
                raise PgError(INVALID_FUNCTION_DEFINITION, f"function result type must be "
                                                           f"{sqltypes.format_type(expected)} because of OUT parameters")
        return expected, d.retset, names, types


def check_options(d: FunctionDef, retset: bool, superuser: bool) -> None:
    """COST and ROWS as PostgreSQL checks them; LEAKPROOF is a superuser's to give."""
    if d.cost is not None and d.cost <= 0:
        raise PgError("22023", "COST must be positive")
    if d.rows is not None and not retset:
        raise PgError("22023", "ROWS is not applicable when function does not return a set")
    if d.rows is not None and d.rows <= 0:
        raise PgError("22023", "ROWS must be positive")
    if d.leakproof and not superuser:
        raise PgError("42501", "only superuser can define a leakproof function")


def _refuse_under_continuous_views(st, fn: Function, verb: str) -> None:
    """A continuous view compiled the function into its insert-time
    pipelines and keeps state computed with it: changing it would mix
    two definitions in one state."""
    for d in all_dependents(st, fn.oid):
        if d.kind == "v" and d.continuous:
            raise PgError(FEATURE_NOT_SUPPORTED, f"cannot {verb} function {fn.name}: continuous view {d.name} uses it",
                          hint="Drop the continuous view first (DROP FUNCTION ... CASCADE drops both).")


# ------------------------------------------------------------------ lookup

def find_function(st, info, ref: FunctionRef, noun: str = "function", missing_ok: bool = False,
                  ambiguous_noun: str | None = None) -> Function | None:
    """LookupFuncWithArgs: by name and argument types, or by name alone when
    it has one overload (42725 when several, 42883 when none).  ``noun``
    names the missing object, ``ambiguous_noun`` (ROUTINE) the ambiguous one."""
    amb = ambiguous_noun or noun
    path = privileges.search_path(info)
    fns = sql_functions.visible(st, ref.name, ref.schema, path)
    shown = f"{ref.schema}.{ref.name}" if ref.schema else ref.name
    if noun == "procedure" and ref.arg_types is None:
        fns = [f for f in fns if f.kind == "p"]
    if ref.arg_types is None:
        if len(fns) > 1:
            raise PgError(AMBIGUOUS_FUNCTION, f'{amb} name "{shown}" is not unique',
                          hint=f"Specify the argument list to select the {amb} unambiguously.")
        if not fns:
            if missing_ok:
                return None
            raise PgError(UNDEFINED_FUNCTION, f'could not find a {noun} named "{shown}"')
        return fns[0]
    types = tuple(sql_functions.type_oid(t) for t in ref.arg_types)
    for f in fns:
        if f.arg_types == types:
            if noun == "procedure" and f.kind != "p":
                raise PgError("42809", f"{signature_text(f.name, f.arg_types)} is not a procedure")
            return f
    if missing_ok:
        return None
    raise PgError(UNDEFINED_FUNCTION, f"{noun} {signature_text(shown, types)} does not exist")


#: SQL-keyword type names the grammar turns into pg_catalog names (what TypeNameToString prints)
_KEYWORD_TYPES = {"int": "int4", "integer": "int4", "smallint": "int2", "bigint": "int8", "real": "float4",
                  "float": "float8", "double precision": "float8", "decimal": "numeric", "dec": "numeric",
                  "numeric": "numeric", "boolean": "bool", "char": "bpchar", "character": "bpchar",
                  "varchar": "varchar", "character varying": "varchar", "timestamp": "timestamp",
                  "timestamp without time zone": "timestamp", "timestamp with time zone": "timestamptz",
                  "time": "time", "time without time zone": "time", "time with time zone": "timetz",
                  "interval": "interval", "bit": "bit"}


def written_type(text: str) -> str:
    """A type as written, the way PostgreSQL's TypeNameToString names it
    (``int`` is ``pg_catalog.int4``, ``text`` stays ``text``; no typmod)."""
    t = " ".join(text.lower().split())
    array = ""
    while t.endswith("[]"):
        t, array = t[:-2].rstrip(), array + "[]"
    base = t.split("(")[0].strip()
    if base in _KEYWORD_TYPES:
        return f"pg_catalog.{_KEYWORD_TYPES[base]}{array}"
    return base + array


def missing_notice(st, ref: FunctionRef, noun: str = "function") -> Notice:
    shown = f"{ref.schema}.{ref.name}" if ref.schema else ref.name
    return Notice(f"{noun} {shown}({','.join(written_type(t) for t in ref.arg_types or ())}) "
                  "does not exist, skipping")


# ------------------------------------------------------------------ DROP

@dataclass
class DropFunctionStmt(Stmt):
    refs: list[FunctionRef]
    if_exists: bool
    cascade: bool
    noun: str = "function"          # DROP FUNCTION | PROCEDURE | ROUTINE
    cacheable = False

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "DROP " + self.noun.upper()

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        notices = []
        for ref in self.refs:
            fn = find_function(st, session.info, ref, _lookup_noun(self.noun), missing_ok=self.if_exists,
                               ambiguous_noun=self.noun)
            if fn is None:
                notices.append(missing_notice(st, ref, self.noun))
                continue
            privileges.require_owner(st, session.info, fn.owner, "function", fn.name)
            shown = function_text.procedure(fn)
            defaults = _defaults_calling(session, st, fn)
            views = _discovery_order(st, fn.oid, f"function {shown}")
            if (defaults or views) and not self.cascade:
                raise PgError(DEPENDENT_OBJECTS_STILL_EXIST,
                              f"cannot drop function {shown} because other objects depend on it",
                              detail="\n".join([f"{_default_words(r, c)} depends on function {shown}" for r, c in defaults]
                                               + [f"{kind_word(d)} {d.name} depends on {on}" for d, on in views]),
                              hint="Use DROP ... CASCADE to drop the dependent objects too.")
            if defaults or views:
                notices.append(cascade_notice([d for d, _ in views], None, [_default_words(r, c) for r, c in defaults],
                                              more_first=True))
            for rel in {r.oid: r for r, _ in defaults}.values():
                gone = {c.name for r, c in defaults if r.oid == rel.oid}
                cur = ctx.txn.state.rels[rel.oid]
                ctx.txn.apply(("rel", cur.with_(columns=tuple(replace(c, default=None) if c.name in gone else c
                                                              for c in cur.columns))))
            for d in all_dependents(st, fn.oid):
                drop_relation(session, ctx, d)
            ctx.txn.apply(("drop_function_oid", fn.oid))
        return Result(tag=self.tag, notices=[n for n in notices if n])


def _defaults_calling(session, st, fn: Function) -> list:
    """(table, column) whose default expression calls ``fn`` (PostgreSQL
    records that dependency; a default is bound to see which overload it calls)."""
    out = []
    for rel in sorted(st.rels.values(), key=lambda r: r.oid):
        for c in rel.live_columns:
            if not c.default or fn.name.lower() not in c.default.lower():
                continue
            planner = Planner(session.engine, st, session=session.info)
            try:
                sql_functions.default_expr(planner, c.default)
            except PgError:
                continue
            if fn.oid in planner.functions_used:
                out.append((rel, c))
    return out


def _default_words(rel, col) -> str:
    return f"default value for column {col.name} of table {rel.name}"


def _discovery_order(st, oid: int, shown: str, seen: set[int] | None = None) -> list:
    """Dependent views as PostgreSQL lists them, each with what it depends
    on: each before the views that depend on it."""
    seen = set() if seen is None else seen
    out: list = []
    for d in dependents(st, oid):
        if d.oid not in seen:
            seen.add(d.oid)
            out += [(d, shown)] + _discovery_order(st, d.oid, f"{kind_word(d)} {d.name}", seen)
    return out


# ------------------------------------------------------------------ ALTER

@dataclass
class AlterFunctionStmt(Stmt):
    """ALTER FUNCTION f[(args)] OWNER TO role | RENAME TO name | volatility / strictness."""

    ref: FunctionRef
    owner: str | None = None
    new_name: str | None = None
    changes: FunctionDef | None = None
    noun: str = "function"
    cacheable = False

    @property
    def tag(self) -> str:  # type: ignore[override]
        return "ALTER " + self.noun.upper()

    def run(self, session, ctx):
        st = ctx.txn.for_write(ctx.check_cancel)
        fn = find_function(st, session.info, self.ref, _lookup_noun(self.noun), ambiguous_noun=self.noun)
        assert fn is not None
        me = current_role(st, session.info)
        if self.owner is not None:
            new = get_role(st, self.owner)
            if new.oid != fn.owner:
                _check_new_owner(st, me, new, fn)
                ctx.txn.apply(("function", replace(fn, owner=new.oid, acl=acl.new_owner_acl(fn.acl, fn.owner, new.oid))))
            return Result(tag=self.tag)
        privileges.require_owner(st, session.info, fn.owner, "function", fn.name)
        if self.new_name is not None:
            clash = [f for f in st.functions.get(self.new_name, ()) if f.schema == fn.schema
                     and f.arg_types == fn.arg_types]
            if clash:
                raise PgError(DUPLICATE_FUNCTION, f"function {signature_text(self.new_name, fn.arg_types)} "
                                                  f'already exists in schema "{fn.schema}"')
            privileges.check_schema(st, me, fn.schema, "C")
            users = [f"view {d.name}" for d in all_dependents(st, fn.oid) if d.kind == "v"] + \
                [_default_words(r, c) for r, c in _defaults_calling(session, st, fn)]
            if users:       # views and defaults keep their SQL text, which names the function
                raise PgError(FEATURE_NOT_SUPPORTED, f"cannot rename function {fn.name}: {users[0]} uses it",
                              hint="Drop what calls it (views, column defaults), rename it, and create them again.")
            fn = replace(fn, name=self.new_name)
        c = self.changes
        if c is not None:
            if c.volatility is not None or c.strict is not None:
                _refuse_under_continuous_views(st, fn, "alter")
            check_options(c, fn.retset, me.superuser)
            fn = replace(fn, **{k: v for k, v in (("volatility", c.volatility), ("strict", c.strict),
                                                  ("parallel", c.parallel), ("leakproof", c.leakproof),
                                                  ("cost", c.cost), ("rows", c.rows)) if v is not None})
        ctx.txn.apply(("function", fn))
        return Result(tag=self.tag)


def _check_new_owner(st, me, new, fn: Function) -> None:
    if me.superuser:
        return
    if not privileges.is_owner(st, me, fn.owner):
        raise privileges.not_owner("function", fn.name)
    if new.oid not in acl.member_roles(st.roles, me.oid):
        raise PgError("42501", f'must be member of role "{new.name}"')
    privileges.check_schema(st, new, fn.schema, "C")


# ------------------------------------------------------------------ statements

def function_statement(text: str, session) -> Stmt:
    """CREATE / DROP / ALTER FUNCTION or PROCEDURE, CALL."""
    r = Reader(text)
    if r.at("CREATE"):
        return CreateFunctionStmt(parse_create(text))
    if r.accept("CALL"):
        raise PgError(FEATURE_NOT_SUPPORTED, "CALL is not supported",
                      hint="Procedures are not supported; call a function with SELECT.")
    if r.accept("DROP"):
        noun = r.next().text.lower()
        if_exists = r.accept("IF", "EXISTS")
        refs = parse_refs(r)
        cascade = r.accept("CASCADE")
        if not cascade:
            r.accept("RESTRICT")
        if not r.done():
            raise r.error()
        return DropFunctionStmt(refs, if_exists, cascade, noun)
    r.expect("ALTER")
    noun = r.next().text.lower()
    stmt = AlterFunctionStmt(parse_refs(r)[0], noun=noun)
    if r.accept("OWNER", "TO"):
        stmt.owner = _role_name(r, session)
    elif r.accept("RENAME", "TO"):
        stmt.new_name = r.name()
    else:
        _alter_options(r, stmt)
    if not r.done():
        raise r.error()
    return stmt


def _lookup_noun(noun: str) -> str:
    """What a lookup is called in messages: ROUTINE finds functions and procedures as "function"."""
    return "procedure" if noun == "procedure" else "function"


def _alter_options(r: Reader, stmt: AlterFunctionStmt) -> None:
    """ALTER FUNCTION's actions: the options CREATE FUNCTION takes that
    describe the function (volatility, strictness, PARALLEL, LEAKPROOF, COST, ROWS)."""
    changes = FunctionDef(None, "")
    while not r.done():
        if r.accept("RESTRICT"):
            continue
        if not (r.at("RETURNS", "NULL") or any(r.at(w) for w in _ALTERABLE)):
            raise PgError(FEATURE_NOT_SUPPORTED, "this ALTER FUNCTION action is not supported",
                          hint="ALTER FUNCTION supports OWNER TO, RENAME TO, volatility, strictness, "
                               "PARALLEL, LEAKPROOF, COST and ROWS.")
        parse_option(r, changes)
    stmt.changes = changes


_ALTERABLE = ("IMMUTABLE", "STABLE", "VOLATILE", "STRICT", "CALLED", "PARALLEL", "LEAKPROOF", "NOT", "COST", "ROWS",
              "SECURITY", "EXTERNAL")


def _role_name(r: Reader, session) -> str:
    t = r.peek()
    if t is not None and t.kind == "word" and t.text in ("CURRENT_USER", "CURRENT_ROLE", "SESSION_USER"):
        r.i += 1
        if t.text == "SESSION_USER":
            return session.info.user
        return privileges.shown_current_user(session.info)
    return r.name()
