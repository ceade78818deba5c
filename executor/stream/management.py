"""PipelineDB's management functions (``pipelinedb--1.0.0.sql``), by its
names, signatures and result columns.

Why most of them are catalog changes: a view's activity (``active``), its
TTL and a truncation (a new ``state_epoch``, the way ``WITH (restart =
true)`` starts a view over) live in the view's options, so the change is
logged like any DDL, takes effect at commit, and WAL replay follows it at
the same point (``manager._follow_definitions``): a restart reproduces it.

Deactivation, exactly: a deactivated view ignores every row of the INSERTs
and COPYs logged after ``pipelinedb.deactivate`` commits, until
``pipelinedb.activate`` commits; those rows are never counted, also not
after activation or a restart (PipelineDB's semantics).  Its state stays
readable.  An INSERT running concurrently with the switch counts as its
place in the WAL says, before or after the switch's commit, however far it
had got when the switch committed (``backfill.effective_active``), so live
and replay agree.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import sqlglot

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.catalog.objects.system_catalogs import table
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import (FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, UNDEFINED_COLUMN,
                                         UNDEFINED_OBJECT, PgError)

from ..execution import clock, functions, operators, privileges, proc_catalog, signatures
from ..settings import pipelinedb as pipelinedb_gucs
from ..sql.dialect import DIALECT
from ..sql.planner import Planner
from ..sql.sqltext import qualified_name_parts
from ..sql import viewdef
from ..sql.table_functions import TABLE_FUNCTIONS
from . import output_streams

#: the version pipelinedb.version() reports: the PipelineDB release whose SQL surface this follows
VERSION = "PipelineDB at revision 1.0.0 (splitstream)"

ACTIVE = "active"


def active(rel) -> bool:
    """Does the view take input (not deactivated)?"""
    return dict(rel.options).get(ACTIVE, "true") != "false"


def initial_options(options: dict[str, str], settings: dict, replaced=None) -> None:
    """A continuous view's options from the session's PipelineDB settings:
    continuous_queries_enabled = off creates it deactivated, and
    sliding_window_step_factor is the default step_factor of a sliding
    window.  A replacement (CREATE OR REPLACE of ``replaced``) stays as
    active as the view it replaces, unless it says ``active``."""
    if ACTIVE in options:
        if options[ACTIVE].strip().lower() not in ("true", "false", "on", "off"):
            raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for boolean option "active": {options[ACTIVE]}')
        options[ACTIVE] = "false" if options[ACTIVE].strip().lower() in ("false", "off") else "true"
    elif (replaced is not None and not active(replaced)) or \
            (replaced is None and not pipelinedb_gucs.queries_enabled(settings)):
        options[ACTIVE] = "false"
    if options.get(ACTIVE) == "true":
        del options[ACTIVE]
    factor = pipelinedb_gucs.step_factor(settings)
    if factor is not None and "sw" in options:
        options.setdefault("step_factor", str(factor))


def register_functions() -> None:
    if "pipelinedb.version" in functions.REGISTRY:
        return
    text, boolean = type_oids.TEXT, type_oids.BOOL
    functions.register("pipelinedb.version", text, [])(
        lambda cols, n, ctx: Col.const(VERSION, text, n))
    functions.register("pipelinedb.activate", boolean, [text], volatile=True, strict=False)(_switch(True))
    functions.register("pipelinedb.deactivate", boolean, [text], volatile=True, strict=False)(_switch(False))
    functions.register("pipelinedb.truncate_continuous_view", type_oids.VOID, [text], volatile=True, strict=False)(_truncate)
    functions.register("pipelinedb.ttl_expire", type_oids.INT8, [text], volatile=True, strict=False)(_ttl_expire)
    functions.register("pipelinedb.insert_into_stream", type_oids.VOID, [], volatile=True)(_trigger_only)
    # every INSERT and COPY has reached its views when it returns: nothing is left to flush
    functions.register("pipelinedb.flush", boolean, [], volatile=True)(lambda cols, n, ctx: Col.const(True, boolean, n))
    functions.NOT_IMPLEMENTED.update(_REFUSED_FUNCTIONS)
    for view in _STATS_VIEWS:
        table("pipelinedb", view, [("?column?", text)])(_refuse_stats)
    _register_system_views()
    TABLE_FUNCTIONS["pipelinedb.get_streams"] = _get_streams
    TABLE_FUNCTIONS["pipelinedb.set_ttl"] = _set_ttl
    proc_catalog.SET_RETURNING_SIGNATURES.update({"pipelinedb.get_streams": " -> record",
                                                  "pipelinedb.set_ttl": "text, interval, text -> record"})


#: PipelineDB's functions (pipelinedb--1.0.0.sql) splitstream refuses, with why
_NO_PROCESSES = ("splitstream has no worker or combiner processes: a continuous view's definition is "
                 "pg_get_viewdef('view'), its plan EXPLAIN SELECT ... .")
_STATS_HINT = ("splitstream keeps no per-process statistics; splitstream.streams and splitstream.views "
               "show each stream's and view's counters.")
_REFUSED_FUNCTIONS = {
    "pipelinedb.combine_table": "Backfill a continuous view by inserting the raw rows into its stream; "
                                "combining a table of aggregate rows into a view is not supported.",
    "pipelinedb.get_worker_querydef": _NO_PROCESSES,
    "pipelinedb.get_combiner_querydef": _NO_PROCESSES,
    "pipelinedb.hash_group": "An internal function of PipelineDB's workers; splitstream has none.",
    "pipelinedb.ls_hash_group": "An internal function of PipelineDB's workers; splitstream has none.",
    "pipelinedb.get_proc_query_stats": _STATS_HINT,
    "pipelinedb.get_stream_stats": _STATS_HINT,
}
#: PipelineDB's statistics views, refused (0A000) when read rather than unknown (42P01)
_STATS_VIEWS = ("proc_query_stats", "proc_stats", "query_stats", "db_stats", "stream_stats")


def _refuse_stats(state, ctx):
    raise PgError(FEATURE_NOT_SUPPORTED, "PipelineDB's statistics views are not supported", hint=_STATS_HINT)


# ------------------------------------------------------------ lookups
def _view(ctx, name: str | None):
    """A continuous view by PipelineDB's qualified name text ('v', 's.v', '"MyV"')."""
    if name is None:
        raise PgError(INVALID_PARAMETER_VALUE, "continuous view name is null")
    parts = qualified_name_parts(name)
    pl = Planner(ctx.engine, ctx.state, session=ctx.session)
    rel = pl.lookup_relation(parts[-1], parts[0] if len(parts) > 1 else None)
    if rel is None or rel.kind != "v" or not rel.continuous:
        raise PgError(UNDEFINED_OBJECT, f'continuous view "{parts[-1]}" does not exist')
    return rel


def _redefine(ctx, rel, change: Callable[[dict], None], restart: bool = False):
    """The view with changed options, as CREATE OR REPLACE VIEW would replace
    it (state kept; ``restart``: a new state epoch, empty)."""
    st = ctx.txn.for_write(ctx.check_cancel)
    privileges.require_relation_owner(st, ctx.session, rel)
    options = dict(rel.options)
    change(options)
    if restart:
        options["state_epoch"] = str(int(options.get("state_epoch", "0")) + 1)
    new = dataclasses.replace(rel, options=tuple(sorted(options.items())))
    ctx.txn.stream_cut = True       # batches logged after the change follow it (backfill.py)
    query = sqlglot.parse_one(rel.sql, read=DIALECT)
    ctx.engine.streams.create_view(ctx.engine_session, ctx, new, query, replacing=True, restart=restart)
    ctx.txn.apply(("rel", new))
    return new


# ------------------------------------------------------------ scalar functions
def _switch(on: bool):
    def impl(cols, n, ctx):
        out = []
        for name in cols[0].to_pylist():
            rel = _view(ctx, name)
            changed = active(rel) != on
            if changed:
                _redefine(ctx, rel, lambda o: o.pop(ACTIVE, None) if on else o.__setitem__(ACTIVE, "false"))
                cv = ctx.engine.streams.views.get(rel.oid)
                if cv is not None:      # each batch follows the activity of its place in the WAL
                    cv.switch = (ctx.txn, on)
            out.append(changed)
        return Col.from_pylist(out, type_oids.BOOL)

    return impl


def _truncate(cols, n, ctx):
    for name in cols[0].to_pylist():
        _redefine(ctx, _view(ctx, name), lambda o: None, restart=True)
    return Col.from_pylist([""] * n, type_oids.VOID)     # void is not NULL: printed empty, as PostgreSQL


def _ttl_expire(cols, n, ctx):
    """Drop the view's expired TTL groups now; how many went."""
    out = []
    for name in cols[0].to_pylist():
        rel = _view(ctx, name)
        if "ttl" not in dict(rel.options):
            raise PgError(INVALID_PARAMETER_VALUE, f'continuous view "{rel.name}" does not have a TTL')
        cv = ctx.engine.streams.views.get(rel.oid)
        if cv is None:
            out.append(0)
            continue
        before = cv.groups()
        cv.reap(clock.micros(clock.now()), wait=60.0)
        out.append(max(0, before - cv.groups()))
    return Col.from_pylist(out, type_oids.INT8)


def _trigger_only(cols, n, ctx):
    raise PgError(FEATURE_NOT_SUPPORTED, "trigger functions can only be called as triggers",
                  hint="splitstream has no triggers; a transform writes to a stream with "
                       "WITH (action = transform, outputfunc = pipelinedb.insert_into_stream('s')).")


# ------------------------------------------------------------ set-returning functions
def _scan(name: str, columns: list[tuple[str, int]], rows: Callable, args, colaliases):
    out = [operators.OutCol(colaliases[i] if i < len(colaliases) else c, oid) for i, (c, oid) in enumerate(columns)]

    def fn(vals, ctx):
        data = rows(vals, ctx)
        return Batch([Col.from_pylist([r[i] for r in data], oid) for i, (_c, oid) in enumerate(columns)], len(data))

    return operators.FunctionScan(name, fn, args, out)


def _continuous_views(state, transforms: bool | None = False) -> list:
    """The continuous views (``transforms``: the transforms; None: both), by schema and name."""
    return sorted((r for r in state.rels.values() if r.kind == "v" and r.continuous
                   and (transforms is None or output_streams.is_transform(r) == transforms)),
                  key=lambda r: (r.schema, r.name))


def _query_text(rel, ctx) -> str:
    """A continuous query's definition as PipelineDB's deparse_query_def
    prints it: pg_get_viewdef's text (ruleutils, not pretty), without its ';'."""
    return viewdef.view_definition(ctx.state, rel, False, ctx.session).rstrip(";")


_VIEW_COLUMNS = [("id", type_oids.OID), ("schema", type_oids.TEXT), ("name", type_oids.TEXT),
                 ("active", type_oids.BOOL), ("query", type_oids.TEXT)]
_TRANSFORM_COLUMNS = _VIEW_COLUMNS[:4] + [("tgfunc", type_oids.TEXT), ("tgargs", type_oids.ARRAY_OF[type_oids.TEXT]),
                                          ("query", type_oids.TEXT)]
_READER_COLUMNS = [("stream", type_oids.TEXT), ("continuous_queries", type_oids.ARRAY_OF[type_oids.TEXT])]


def _view_rows(state, ctx) -> list[tuple]:
    return [(r.oid, r.schema, r.name, active(r), _query_text(r, ctx)) for r in _continuous_views(state)]


def _transform_rows(state, ctx) -> list[tuple]:
    """tgfunc and tgargs, PipelineDB's outputfunc and its arguments, are always
    NULL: an outputfunc is refused (output_streams.check_options)."""
    return [(r.oid, r.schema, r.name, active(r), None, None, _query_text(r, ctx))
            for r in _continuous_views(state, transforms=True)]


def _reader_rows(state, ctx) -> list[tuple]:
    """Each stream some continuous view or transform reads, with their names
    (in creation order); streams nothing reads are left out, as PipelineDB does."""
    queries = sorted(_continuous_views(state, transforms=None), key=lambda r: r.oid)
    out = []
    for s in sorted((r for r in state.rels.values() if r.kind == "f"), key=lambda r: r.oid):
        readers = [q.name for q in queries if s.oid in q.depends_on]
        if readers:
            out.append((s.name, readers))
    return out


#: PipelineDB's system views over its set-returning functions (pipelinedb--1.0.0.sql):
#: view name -> (function name, columns, rows)
_SYSTEM_VIEWS = {"views": ("get_views", _VIEW_COLUMNS, _view_rows),
                 "transforms": ("get_transforms", _TRANSFORM_COLUMNS, _transform_rows),
                 "stream_readers": ("get_stream_readers", _READER_COLUMNS, _reader_rows)}


def _no_arguments_scan(fname: str, columns, rows):
    def plan(planner, args, colaliases):
        if args:
            raise signatures.undefined(f"pipelinedb.{fname}", [a.oid for a in args])
        return _scan(fname, columns, lambda vals, ctx: rows(ctx.state, ctx), args, colaliases)

    return plan


def _register_system_views() -> None:
    for view, (fname, columns, rows) in _SYSTEM_VIEWS.items():
        table("pipelinedb", view, columns)(rows)
        TABLE_FUNCTIONS[f"pipelinedb.{fname}"] = _no_arguments_scan(fname, columns, rows)
        proc_catalog.SET_RETURNING_SIGNATURES[f"pipelinedb.{fname}"] = " -> record"


def _get_streams(planner, args, colaliases):
    """(schema text, name text, queries text[]): each stream and the views reading it."""
    if args:
        raise signatures.undefined("pipelinedb.get_streams", [a.oid for a in args])

    def rows(vals, ctx):
        views = _continuous_views(ctx.state)
        streams = sorted((r for r in ctx.state.rels.values() if r.kind == "f"), key=lambda r: (r.schema, r.name))
        return [(s.schema, s.name, [v.name for v in views if s.oid in v.depends_on] or None) for s in streams]

    cols = [("schema", type_oids.TEXT), ("name", type_oids.TEXT), ("queries", type_oids.ARRAY_OF[type_oids.TEXT])]
    return _scan("get_streams", cols, rows, args, colaliases)


def _set_ttl(planner, args, colaliases):
    """set_ttl(view, ttl interval, ttl_column text) -> (ttl int4 seconds, ttl_attno int2);
    a NULL ttl removes the view's TTL."""
    if len(args) != 3:
        raise signatures.undefined("pipelinedb.set_ttl", [a.oid for a in args])
    args = [planner.coerce(a, t) for a, t in zip(args, (type_oids.TEXT, type_oids.INTERVAL, type_oids.TEXT))]

    def rows(vals, ctx):
        rel = _view(ctx, vals[0])
        ttl, column = vals[1], vals[2]
        if "sw" in dict(rel.options):
            raise PgError(FEATURE_NOT_SUPPORTED, "the ttl of a sliding-window continuous view cannot be changed")
        attno = None
        if column is not None:
            names = [c.name for c in rel.columns]
            if column.lower() not in names:
                raise PgError(UNDEFINED_COLUMN, f'column "{column}" does not exist')
            attno = names.index(column.lower()) + 1
            if rel.columns[attno - 1].type_oid not in (type_oids.TIMESTAMP, type_oids.TIMESTAMPTZ):
                raise PgError(INVALID_PARAMETER_VALUE, "ttl_column must refer to a timestamp or timestamptz column")
        seconds = None if ttl is None else int(ttl.months * 30 * 86400 + ttl.days * 86400 + ttl.microseconds // 10**6)

        def change(o: dict) -> None:
            if ttl is None:
                o.pop("ttl", None)
                o.pop("ttl_column", None)
            else:
                o["ttl"], o["ttl_column"] = f"{seconds} seconds", (column or o.get("ttl_column", "")).lower()

        _redefine(ctx, rel, change)
        return [(-1 if seconds is None else seconds, attno)]

    return _scan("set_ttl", [("ttl", type_oids.INT4), ("ttl_attno", type_oids.INT2)], rows, args, colaliases)
