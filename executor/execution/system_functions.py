"""SQL functions that read the catalog: obj_description, pg_get_indexdef,
pg_get_userbyid, advisory locks, ...

The registered ones are added to the function registry (executor/execution/functions.py)
when this module is imported; the binder, which looks functions up, imports it."""
from __future__ import annotations

import re

import threading
import time

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.objects import acl, function_text
from splitstream.catalog.objects.definition_text import constraint_def, index_def, quote_ident, relation_name
from splitstream.catalog.objects.system_catalogs import DATABASE_COMMENTS, view_definition
from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import INTERNAL_ERROR, UNDEFINED_FUNCTION, UNDEFINED_TABLE, PgError

from . import clock, privileges
from . import expr, functions
from .string_functions import object_texts


#: the functions the binder hands to :func:`catalog_function` (they read the planner's catalog state)
CATALOG_FUNCTIONS = frozenset({
    "pg_get_indexdef", "pg_get_constraintdef", "pg_get_viewdef", "obj_description", "col_description",
    "pg_relation_size", "pg_total_relation_size", "pg_table_size", "pg_get_serial_sequence", "to_regclass",
    "pg_get_partkeydef", "pg_get_statisticsobjdef_columns", "shobj_description", "pg_get_triggerdef",
    "pg_get_ruledef", "pg_get_functiondef", "pg_relation_is_updatable", "pg_column_is_updatable",
    "pg_get_keywords", "array_in", "pg_indexes_size", "pg_database_size"})


def _relation_named(planner, name: str):
    """pg_get_viewdef('name'): the relation a (possibly qualified) name denotes."""
    parts = [p.strip('"') for p in str(name).split(".")]
    return planner.lookup_relation(parts[-1], parts[0] if len(parts) > 1 else None)


def _object_comment(st, oid, catalog=None):
    """obj_description(oid [, catalog]): a relation's or a schema's comment."""
    if catalog == "pg_namespace":
        return next((s.comment for s in st.schemas.values() if s.oid == oid), None)
    r = st.rels.get(oid)
    return r.comment if r is not None and catalog in (None, "pg_class") else None


def catalog_function(planner, name: str, args: list[expr.Expr]) -> expr.Expr:
    def lift(fn, oid, strict=True):
        def impl(cols, n, ctx):
            lists = [c.to_pylist() for c in cols]
            out = []
            for i in range(n):
                a = [column[i] for column in lists]
                out.append(None if strict and any(v is None for v in a[:1]) else fn(ctx.state, *a))
            return Col.from_pylist(out, oid)

        return expr.Func(name, impl, args, oid)

    if name == "obj_description":
        return lift(_object_comment, type_oids.TEXT)
    if name == "col_description":
        def coldesc(st, oid, attnum):
            r = st.rels.get(oid)
            if r is None:
                return None
            col = r.column_at(attnum)
            return dict(r.column_comments).get(col.name) if col is not None else None

        return lift(coldesc, type_oids.TEXT)
    if name == "shobj_description":
        return lift(lambda st, oid, catalog=None: DATABASE_COMMENTS.get(oid) if catalog == "pg_database" else None,
                    type_oids.TEXT)
    if name == "pg_get_viewdef":
        def viewdef(st, rel, pretty=None):
            r = st.rels.get(rel) if isinstance(rel, int) else _relation_named(planner, rel)
            return view_definition(st, r, bool(pretty), planner.session) if r is not None and r.relkind in ("v", "m") else None

        return lift(viewdef, type_oids.TEXT)
    if name in ("pg_relation_size", "pg_total_relation_size", "pg_table_size", "pg_indexes_size"):
        def size(st, oid, fork=None):
            tv = st.data.get(oid)
            return tv.memory_bytes() if tv is not None else 0

        return lift(size, type_oids.INT8)
    if name == "pg_database_size":
        return lift(lambda st, d: sum(tv.memory_bytes() for tv in st.data.values()), type_oids.INT8)
    if name == "to_regclass":
        def regclass(st, nm):
            parts = nm.split(".")
            r = planner.lookup_relation(parts[-1], parts[0] if len(parts) > 1 else None)
            return r.oid if r is not None else None

        return lift(regclass, type_oids.REGCLASS)
    if name == "pg_get_serial_sequence":
        def serial(st, tbl, col):
            parts = tbl.split(".")
            r = planner.lookup_relation(parts[-1], parts[-2] if len(parts) > 1 else None)
            if r is None:
                raise PgError(UNDEFINED_TABLE, f'relation "{tbl}" does not exist')
            for s in st.rels.values():
                if s.kind == "S" and s.owned_by == (r.oid, col):
                    return f"{quote_ident(s.schema)}.{quote_ident(s.name)}"
            return None

        return lift(serial, type_oids.TEXT)
    return definition_function(planner, name, args, lift)


# ----------------------------------------------------------------- registered functions
# Catalog-aware functions that go through the ordinary function registry
# (registered below, when this module is imported).

def _role_name_by_oid(state, oid) -> str | None:
    if oid is None:
        return None
    for r in state.roles.values():
        if r.oid == oid:
            return r.name
    return f"unknown (OID={oid})"


def _acldefault(state, objtype: str, owner: int) -> list[str]:
    """acldefault("char", oid): the built-in ACL of an object type, as the
    aclitem texts the catalogs' ACL columns hold (pg_dump compares them)."""
    try:
        items = acl.acldefault(objtype, owner)
    except ValueError:
        raise PgError(INTERNAL_ERROR, f"unrecognized objtype abbreviation: {objtype}") from None
    return acl.acl_texts(state.roles, items) or []


#: a relation named by a regclass constant in a stored expression (nextval('s'::regclass))
_REGCLASS_LITERAL = re.compile(r"'((?:[^']|'')*)'::regclass")


def _pg_get_expr(cols, n, ctx) -> Col:
    """pg_get_expr(expr, relation): the stored expression's text (pg_attrdef.adbin
    holds it printed) with each regclass constant naming its relation as
    regclassout does under the session's search_path: 'public.s'::regclass
    for pg_dump's empty path, 's'::regclass where the path finds it."""
    exprs, rels = cols[0].to_pylist(), cols[1].to_pylist()
    path = privileges.search_path(ctx.session)
    out = []
    for text, rel_oid in zip(exprs, rels):
        rel = ctx.state.rels.get(rel_oid) if rel_oid is not None else None
        home = [rel.schema, "public"] if rel is not None else ["public"]
        out.append(None if text is None else _REGCLASS_LITERAL.sub(
            lambda m: _regclass_text(ctx.state, m.group(1).replace("''", "'"), home, path), text))
    return Col.from_pylist(out, type_oids.TEXT)


def _regclass_text(state, name: str, home: list[str], path: list[str]) -> str:
    """A regclass constant, its relation named for ``path`` (``home``: where an unqualified name was found)."""
    parts = [p.strip('"') for p in name.split(".")]
    rel = next((r for s in ([parts[0]] if len(parts) > 1 else home) if (r := state.lookup(s, parts[-1])) is not None),
               None)
    shown = name if rel is None else relation_name(state, rel, path)
    return "'" + shown.replace("'", "''") + "'::regclass"


def _regtype(name):
    """to_regtype: the type a name denotes; a type modifier ('varchar(3)') is read and dropped."""
    text = re.sub(r"\([^)]*\)", "", str(name)).replace('"', "").strip()
    return sqltypes.oid_by_name(" ".join(text.split()))


#: the advisory-lock functions' keys: one bigint or two integers
_ADVISORY_KEYS = "int8 -> {0} | int4, int4 -> {0}"


def register_catalog_functions(register) -> None:
    def rows(fn, oid):
        def impl(cols, n, ctx):
            lists = [c.to_pylist() for c in cols]
            state = getattr(ctx, "state", None)
            out = []
            for i in range(n):
                a = [column[i] for column in lists]
                out.append(None if any(v is None for v in a) else fn(state, *a))
            return Col.from_pylist(out, oid)
        return impl

    def build_object(cols, n, ctx):
        texts = object_texts(cols, n, "json_build_object", " : ", "argument {} cannot be null", "Object keys should be text.",
                             tz=ctx.setting("timezone", "UTC") if ctx is not None else "UTC")
        return Col.from_pylist(texts, type_oids.JSON)

    register("json_build_object", sigs=" -> json | variadic any -> json", strict=False)(build_object)
    register("pg_collation_is_visible|pg_namespace_is_visible|pg_opclass_is_visible|pg_conversion_is_visible",
             type_oids.BOOL, [type_oids.OID])(rows(lambda st, o: True, type_oids.BOOL))
    def advisory(kind):
        def impl(cols, n, ctx):
            lists = [c.to_pylist() for c in cols]
            owner = getattr(getattr(ctx, "session", None), "pid", None) or id(getattr(ctx, "session", None))
            out = []
            for i in range(n):
                key = tuple(column[i] for column in lists)
                if kind in ("lock", "xact_lock"):
                    ADVISORY.lock(owner, key, ctx)
                    if kind == "xact_lock":   # held until the transaction ends
                        ctx.txn.on_end.append(lambda k=key: ADVISORY.unlock(owner, k))
                    out.append(None)
                elif kind == "try_xact":
                    got = ADVISORY.try_lock(owner, key)
                    if got:
                        ctx.txn.on_end.append(lambda k=key: ADVISORY.unlock(owner, k))
                    out.append(got)
                elif kind == "try":
                    out.append(ADVISORY.try_lock(owner, key))
                elif kind == "unlock":
                    out.append(ADVISORY.unlock(owner, key))
                else:
                    ADVISORY.release_all(owner)
                    out.append(None)
            return Col.from_pylist(out, type_oids.BOOL if kind in ("try", "try_xact", "unlock") else type_oids.VOID)
        return impl

    def sleep(cols, n, ctx):
        secs = cols[0].to_pylist()
        for i in range(n):
            v = secs[i]
            if v is None:
                continue
            end = time.monotonic() + float(v)
            while True:  # in slices, so cancel, statement_timeout and a vanished client interrupt it
                check = getattr(ctx, "check_cancel", None)
                if check is not None:
                    check()
                left = end - time.monotonic()
                if left <= 0:
                    break
                time.sleep(min(left, 0.02))
        return Col.from_pylist([None] * n, type_oids.VOID)

    register("pg_sleep", type_oids.VOID, [type_oids.FLOAT8], volatile=True)(sleep)
    register("pg_advisory_lock", volatile=True, sigs=_ADVISORY_KEYS.format("void"))(advisory("lock"))
    register("pg_try_advisory_lock", volatile=True, sigs=_ADVISORY_KEYS.format("bool"))(advisory("try"))
    register("pg_advisory_unlock", volatile=True, sigs=_ADVISORY_KEYS.format("bool"))(advisory("unlock"))
    register("pg_advisory_unlock_all", type_oids.VOID, [], volatile=True)(advisory("all"))
    register("pg_advisory_xact_lock", volatile=True, sigs=_ADVISORY_KEYS.format("void"))(advisory("xact_lock"))
    register("pg_try_advisory_xact_lock", volatile=True, sigs=_ADVISORY_KEYS.format("bool"))(advisory("try_xact"))
    register("pg_get_userbyid", type_oids.NAME, [type_oids.OID])(rows(_role_name_by_oid, type_oids.NAME))
    register("pg_get_expr", sigs="text, oid -> text | text, oid, bool -> text", strict=False)(_pg_get_expr)
    register("acldefault", type_oids.ARRAY_OF[type_oids.TEXT], [type_oids.CHAR, type_oids.OID])(
        rows(_acldefault, type_oids.ARRAY_OF[type_oids.TEXT]))
    register("pg_table_is_visible", type_oids.BOOL, [type_oids.OID])(_table_is_visible)
    register("current_schema", type_oids.NAME, [])(_current_schema)
    register("current_schemas", type_oids.ARRAY_OF[type_oids.NAME], [type_oids.BOOL])(_current_schemas)
    register("to_regtype", type_oids.REGTYPE, [type_oids.TEXT])(rows(lambda st, s: _regtype(s), type_oids.REGTYPE))
    register("to_regnamespace", type_oids.REGNAMESPACE, [type_oids.TEXT])(
        rows(lambda st, s: (st.schemas[s.strip('"')].oid if s.strip('"') in st.schemas else None),
             type_oids.REGNAMESPACE))


def _existing_path(ctx) -> list[str]:
    """The search path's schemas that exist, in order."""
    return [s for s in privileges.search_path(ctx.session) if s in ctx.state.schemas]


def _current_schema(cols, n, ctx) -> Col:
    """The first schema of the search path that exists (NULL when none does)."""
    path = _existing_path(ctx)
    return Col.const(path[0] if path else None, type_oids.NAME, n)


def _current_schemas(cols, n, ctx) -> Col:
    """The search path's existing schemas; with ``true`` also pg_catalog,
    searched first unless the path names it."""
    path = _existing_path(ctx)
    out = []
    for implicit in cols[0].to_pylist():
        out.append(None if implicit is None else
                   (["pg_catalog"] if implicit and "pg_catalog" not in path else []) + path)
    return Col.from_pylist(out, type_oids.ARRAY_OF[type_oids.NAME])


def _table_is_visible(cols, n, ctx) -> Col:
    """A relation is visible when its unqualified name finds it: its schema is
    on the search path, before any other schema holding the same name (the
    system catalogs, which have no rows of their own, count as visible)."""
    st = ctx.state
    path = privileges.search_path(ctx.session)
    out: list[bool | None] = []
    for oid in cols[0].to_pylist():
        rel = st.rels.get(oid) if oid is not None else None
        if rel is None:
            out.append(None if oid is None else True)
            continue
        first = next((s for s in path if st.lookup(s, rel.name) is not None), None)
        out.append(first == rel.schema)
    return Col.from_pylist(out, type_oids.BOOL)


class AdvisoryLocks:
    """Session-level advisory locks (pg_advisory_lock & co.), shared by all sessions of the process."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._held: dict[tuple, tuple[object, int]] = {}   # key -> (owner, count)

    def try_lock(self, owner, key) -> bool:
        with self._cv:
            cur = self._held.get(key)
            if cur is None or cur[0] == owner:
                self._held[key] = (owner, (cur[1] if cur else 0) + 1)
                return True
            return False

    def lock(self, owner, key, ctx) -> None:
        with self._cv:
            while True:
                cur = self._held.get(key)
                if cur is None or cur[0] == owner:
                    self._held[key] = (owner, (cur[1] if cur else 0) + 1)
                    return
                self._cv.wait(0.05)
                check = getattr(ctx, "check_cancel", None)
                if check is not None:
                    check()  # cancel requests and statement_timeout interrupt the wait

    def unlock(self, owner, key) -> bool:
        with self._cv:
            cur = self._held.get(key)
            if cur is None or cur[0] != owner:
                return False
            if cur[1] > 1:
                self._held[key] = (owner, cur[1] - 1)
            else:
                del self._held[key]
            self._cv.notify_all()
            return True

    def release_all(self, owner) -> None:
        with self._cv:
            for k in [k for k, v in self._held.items() if v[0] == owner]:
                del self._held[k]
            self._cv.notify_all()


ADVISORY = AdvisoryLocks()


def definition_function(planner, name, args, lift):
    if name == "pg_get_indexdef":
        return lift(lambda st, oid, col=0, *a: index_def(st, oid, col or 0), type_oids.TEXT)
    if name == "pg_get_constraintdef":
        return lift(lambda st, oid, pretty=False: constraint_def(st, oid, privileges.search_path(planner.session),
                                                                 bool(pretty)), type_oids.TEXT)
    if name == "pg_get_functiondef":
        def functiondef(st, oid, *a):
            fn = function_text.user_function(st, oid)
            return function_text.functiondef(fn) if fn is not None else None
        return lift(functiondef, type_oids.TEXT)
    if name in ("pg_get_partkeydef", "pg_get_statisticsobjdef_columns", "pg_get_triggerdef", "pg_get_ruledef"):
        return lift(lambda st, *a: None, type_oids.TEXT)
    if name in ("pg_relation_is_updatable",):
        return lift(lambda st, *a: 28, type_oids.INT4)
    if name in ("pg_column_is_updatable",):
        return lift(lambda st, *a: True, type_oids.BOOL)
    raise PgError(UNDEFINED_FUNCTION, f"function {name} does not exist")


# The registry is filled by the module that owns the functions, not by a
# back-import from functions.py.
register_catalog_functions(functions.register)


#: Sequence function -> the privileges of which it needs one (PostgreSQL's ACL_USAGE | ACL_UPDATE, ...).
_SEQUENCE_PRIVILEGES = {"nextval": "Uw", "currval": "rU", "setval": "w"}


def sequence_function(engine, planner, name, args):
    wanted = _SEQUENCE_PRIVILEGES.get(name, "")

    def find(st, v, ctx=None):
        if isinstance(v, int):
            rel = st.rels.get(v)
        else:
            parts = str(v).split(".")
            last = parts[-1].strip()      # a quoted name keeps its case, as regclass reads it
            rel = planner.lookup_relation(last[1:-1].replace('""', '"') if last.startswith('"') else last.lower(),
                                          parts[0] if len(parts) > 1 else None)
        if rel is None or rel.kind != "S":
            raise PgError(UNDEFINED_TABLE, f'relation "{v}" does not exist')
        if ctx is not None:
            privileges.authorize(st, ctx.session, [privileges.Need(wanted, rel.oid, any_of=len(wanted) > 1)])
        return rel

    if name == "nextval":
        def impl(cols, n, ctx):
            ctx.txn.refuse_write("nextval()")
            vals = cols[0].to_pylist()
            out = [engine.db.nextval(find(ctx.state, v, ctx).oid, find(ctx.state, v)) for v in vals]
            if out:
                ctx.session.settings["__lastval"] = str(out[-1])
                ctx.session.settings[f"__currval_{find(ctx.state, vals[-1]).oid}"] = str(out[-1])
            return Col.from_pylist(out, type_oids.INT8)

        return expr.Func("nextval", impl, [planner.coerce(args[0], type_oids.TEXT) if args[0].oid == type_oids.UNKNOWN else args[0]], type_oids.INT8, volatile=True)
    if name == "currval":
        def impl2(cols, n, ctx):
            rel = find(ctx.state, cols[0].to_pylist()[0], ctx)
            v = ctx.session.settings.get(f"__currval_{rel.oid}")
            if v is None:
                raise PgError("55000", f'currval of sequence "{rel.name}" is not yet defined in this session')
            return Col.const(int(v), type_oids.INT8, n)

        return expr.Func("currval", impl2, [planner.coerce(args[0], type_oids.TEXT) if args[0].oid == type_oids.UNKNOWN else args[0]], type_oids.INT8, volatile=True)
    if name == "lastval":
        def impl3(cols, n, ctx):
            v = ctx.session.settings.get("__lastval")
            if v is None:
                raise PgError("55000", "lastval is not yet defined in this session")
            return Col.const(int(v), type_oids.INT8, n)

        return expr.Func("lastval", impl3, [], type_oids.INT8, volatile=True)
    if name == "setval":
        def impl4(cols, n, ctx):
            ctx.txn.refuse_write("setval()")
            names, values = cols[0].to_pylist(), cols[1].to_pylist()
            flags = cols[2].to_pylist() if len(cols) > 2 else [True] * n
            out: list[int | None] = []
            for name, v, called in zip(names, values, flags):       # once per row, in order
                if name is None or v is None or called is None:
                    out.append(None)             # strict
                    continue
                engine.db.setval(find(ctx.state, name, ctx).oid, int(v), bool(called))
                out.append(int(v))
            return Col.from_pylist(out, type_oids.INT8)

        a = [planner.coerce(args[0], type_oids.TEXT) if args[0].oid == type_oids.UNKNOWN else args[0], planner.coerce(args[1], type_oids.INT8)] + \
            ([planner.coerce(args[2], type_oids.BOOL)] if len(args) > 2 else [])
        return expr.Func("setval", impl4, a, type_oids.INT8, volatile=True)
    raise PgError("42883", f"function {name} does not exist")


def _test_clock(cols, n, ctx):
    """splitstream_test_clock(t): stop the server's clock at ``t`` (NULL: let
    it run again); returns the clock's time.  Exists only in servers started
    with SPLITSTREAM_TEST_CLOCK=1 (tests), and only for superusers there."""
    if not privileges.current_role(ctx.state, ctx.session).superuser:
        raise PgError("42501", "permission denied for function splitstream_test_clock",
                      hint="Only a superuser may move the test clock.")
    vals = cols[0].to_pylist()
    if n:
        clock.set_frozen(vals[-1])
    return Col.const(clock.now(), type_oids.TIMESTAMPTZ, n)


if clock.test_clock_enabled():
    functions.register("splitstream_test_clock", type_oids.TIMESTAMPTZ, [type_oids.TIMESTAMPTZ], volatile=True,
                       strict=False)(_test_clock)
