"""CREATE VIEW / CREATE MATERIALIZED VIEW; a view over a stream is a continuous view.
"""
from __future__ import annotations

import re

from sqlglot import exp

from splitstream.catalog.objects.model import Relation
from splitstream.protocol.errors import (DUPLICATE_COLUMN, DUPLICATE_TABLE, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, WRONG_OBJECT_TYPE,
                                         Notice, PgError)

from ..api import Result
from ..sql.binder import ident
from ..execution import privileges
from ..sql.dialect import DIALECT
from ..sql.planner import Planner
from ..stream import backfill, change_notify, late_rows, management, output_streams, retention, row_cap
from .matviews import create_snapshot, snapshot_columns
from ..sql.sql_functions import refuse_unstable_functions
from .names import qual, target_schema
from .view_windows import WINDOW_OPTIONS, check_window_options, refuse_other_arrival_windows, take_arrival_window


def create_view(session, ctx, planner, tree: exp.Create, text: str):
    table = tree.this
    colnames = []
    if isinstance(table, exp.Schema):
        colnames = [ident(c) for c in table.expressions]
        table = table.this
    schema, name = qual(table)
    st = ctx.txn.for_write(ctx.check_cancel)
    schema = target_schema(planner, schema, st)
    existing = st.lookup(schema, name)
    replace = bool(tree.args.get("replace"))
    if replace and existing is not None and existing.relkind != "v":
        raise PgError(WRONG_OBJECT_TYPE, f'"{name}" is not a view')
    if existing is not None and not replace:
        if tree.args.get("exists"):
            skipped = [Notice(f'relation "{name}" already exists, skipping', "42P07")]
            # the tag of a CREATE MATERIALIZED VIEW that created nothing names the command, not a row count
            return Result(tag="CREATE MATERIALIZED VIEW", notices=skipped) if _MATERIALIZED.match(text) else skipped
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
    if existing is not None:
        privileges.require_relation_owner(st, session.info, existing)
    query = tree.args["expression"]
    pl = Planner(session.engine, ctx.state, session=session.info)
    plan = pl.plan_query(query)
    arrival_sw = None
    if pl.streams_used:
        # PipelineDB's spelling of sw (view_windows.py): one definition, one plan
        query = query.copy()        # the parsed statement may be cached and run again: never edit it
        arrival_sw = take_arrival_window(query)
        refuse_other_arrival_windows(query)
        if arrival_sw is not None:
            pl = Planner(session.engine, ctx.state, session=session.info)
            plan = pl.plan_query(query)
    sql = query.sql(DIALECT)
    props = tree.args.get("properties")
    materialized = False
    options = {}
    if props is not None:
        for p in props.expressions:
            if isinstance(p, exp.MaterializedProperty):
                materialized = True
            elif isinstance(p, exp.Property):
                value = p.args.get("value")
                text = str(value.this).lower() if isinstance(value, exp.Boolean) else \
                    "-" + value.this.name if isinstance(value, exp.Neg) else \
                    value.name if isinstance(value, exp.Expression) else str(value)
                options[str(p.this).lower()] = text
    if _MATERIALIZED.match(text):
        materialized = True
    continuous = bool(pl.streams_used) or any(v.continuous for v in pl.views_used)
    if arrival_sw is not None:
        if "sw" in options and options["sw"] != arrival_sw:
            raise PgError(INVALID_PARAMETER_VALUE, f"sw = '{options['sw']}' contradicts the view's "
                          f"arrival_timestamp filter over interval '{arrival_sw}'",
                          hint="Give the window once: either WITH (sw = ...) or the arrival_timestamp filter.")
        options["sw"] = arrival_sw
    _refuse_unimplemented_options(options)
    if continuous:      # PipelineDB's settings and activity (stream/management.py)
        management.initial_options(options, session.info.settings, existing if existing is not None and existing.continuous else None)
    _backfill_option(options, bool(pl.streams_used), existing is not None)
    if late_rows.OPTION in options and not continuous:
        raise PgError(INVALID_PARAMETER_VALUE, f'option "{late_rows.OPTION}" needs a continuous view',
                      hint="late_rows says what a view over a stream with a WATERMARK does with the rows later "
                           "than it; a view over tables reads every row.")
    if change_notify.OPTION in options and not continuous:
        raise PgError(INVALID_PARAMETER_VALUE, f'option "{change_notify.OPTION}" needs a continuous view',
                      hint="A view over tables changes only when its tables do; LISTEN for a NOTIFY sent by "
                           "the writer instead.")
    if row_cap.OPTION in options and not continuous:
        raise PgError(INVALID_PARAMETER_VALUE, f'option "{row_cap.OPTION}" needs a continuous view',
                      hint="max_rows keeps the newest N rows of an ungrouped continuous view over a stream; "
                           "a view over tables keeps no rows.")
    if retention.OPTION in options and not continuous:
        raise PgError(INVALID_PARAMETER_VALUE, f'option "{retention.OPTION}" needs a continuous view',
                      hint="Retention drops the old panes of a TUMBLE/HOP view over a stream; a view over tables "
                           "keeps no state.")
    check_window_options(options, bool(pl.streams_used))
    restart = _flag("restart", options.pop("restart", "false"))
    replacing = existing is not None and existing.continuous
    if replacing and not continuous and not restart:
        raise PgError(FEATURE_NOT_SUPPORTED, f'cannot replace continuous view "{name}" by a view over tables',
                      hint="The state of the continuous view would be discarded; add WITH (restart = true) to do so.")
    epoch = int(dict(existing.options).get("state_epoch", "0")) if replacing and existing is not None else 0
    if replacing and restart:
        epoch += 1
    if epoch:
        options["state_epoch"] = str(epoch)
    zone = session.info.settings.get("timezone", "UTC") or "UTC"
    if continuous and zone != "UTC":
        # its insert-time expressions run in this zone, whoever inserts (ContinuousView._with_view_settings)
        options["timezone"] = zone
    if options.get("action", "materialize").lower() not in ("materialize", output_streams.TRANSFORM):
        raise PgError(FEATURE_NOT_SUPPORTED, f"action={options['action']} is not supported",
                      hint="Use WITH (action=materialize) or (action=transform), or plain CREATE VIEW.")
    output_streams.check_options(options)
    if "action" in options and not continuous:
        # as PipelineDB: asking for a continuous view over tables is an error, not a plain view in disguise
        raise PgError(FEATURE_NOT_SUPPORTED, "continuous views (action=materialize) must read a stream in the FROM clause",
                      hint="Drop WITH (action=materialize) to create a plain view over tables, or join the tables with a stream.")
    cols = snapshot_columns(colnames, plan)
    _refuse_duplicate_names(cols)
    oid = existing.oid if existing is not None else ctx.txn.new_oid()
    deps = tuple(sorted({r.oid for r in pl.streams_used} | set(pl.tables_used) | {v.oid for v in pl.views_used}
                        | set(pl.functions_used)))
    if continuous:
        refuse_unstable_functions(pl.functions_used.values())
    owner = existing.owner if existing is not None else privileges.current_role(st, session.info).oid
    rel = Relation(oid, schema, name, "v", cols, sql=sql, continuous=continuous, depends_on=deps, owner=owner,
                   acl=existing.acl if existing is not None else None,
                   options=tuple(sorted(options.items())), materialized=materialized)
    if materialized and not continuous:
        return Result(tag=f"SELECT {create_snapshot(session, ctx, pl, plan, rel)}")
    if continuous:
        session.engine.streams.create_view(session, ctx, rel, query, replacing=replacing, restart=restart)
    ctx.txn.apply(("rel", rel))
    if replacing and restart:
        return [Notice(f'continuous view "{name}" starts empty: the state it held is discarded')]
    if materialized:    # PostgreSQL's tag counts the rows stored: a new continuous view has none yet
        return Result(tag="SELECT 0")
    return []


_MATERIALIZED = re.compile(r"\s*create\s+materialized\s+view", re.I)


def _refuse_duplicate_names(cols) -> None:
    """A view's columns need distinct names, as a table's (PostgreSQL's 42701)."""
    seen: set[str] = set()
    for c in cols:
        if c.name in seen:
            raise PgError(DUPLICATE_COLUMN, f'column "{c.name}" specified more than once')
        seen.add(c.name)


def _backfill_option(options: dict[str, str], over_streams: bool, replacing: bool) -> None:
    """``backfill = true`` (stream/backfill.py): only a new view over a stream."""
    if backfill.OPTION not in options:
        return
    if not _flag(backfill.OPTION, options[backfill.OPTION]):
        del options[backfill.OPTION]
        return
    options[backfill.OPTION] = "true"
    if not over_streams:
        raise PgError(INVALID_PARAMETER_VALUE, 'option "backfill" needs a continuous view over a stream',
                      hint="A backfill runs the new view over the rows its stream's ring buffer still holds.")
    if replacing:
        raise PgError(FEATURE_NOT_SUPPORTED, "CREATE OR REPLACE VIEW cannot backfill",
                      hint="The view keeps its state (or restarts empty); to backfill, drop it and create it again.")


def _flag(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "on", "1", "yes"):
        return True
    if v in ("false", "off", "0", "no"):
        return False
    raise PgError(INVALID_PARAMETER_VALUE, f'invalid value for boolean option "{name}": {value}')


#: View options PostgreSQL or PipelineDB define that splitstream does not implement
#: yet: refused, since accepting and ignoring one gives silently wrong answers.
_NOT_IMPLEMENTED_OPTIONS = {
    "check_option": "WITH CHECK OPTION is not supported",
    "security_barrier": "security_barrier views are not supported",
    "security_invoker": "security_invoker views are not supported",
}


def _refuse_unimplemented_options(options: dict[str, str]) -> None:
    for name in options:
        if name in ("action", "restart", management.ACTIVE, backfill.OPTION, output_streams.OUTPUTFUNC) \
                or name in WINDOW_OPTIONS:
            continue
        if name == retention.OPTION:
            retention.parse(options[name])      # checked again against the view's windows when it compiles
            continue
        if name == late_rows.OPTION:
            late_rows.parse(options[name])      # and against the stream's other views when it compiles
            continue
        if name == change_notify.OPTION:
            change_notify.parse(options[name])
            continue
        if name == row_cap.OPTION:      # whether the view is ungrouped is checked when it compiles
            options[name] = str(row_cap.parse(options[name]))
            continue
        if name in _NOT_IMPLEMENTED_OPTIONS:
            raise PgError(FEATURE_NOT_SUPPORTED, _NOT_IMPLEMENTED_OPTIONS[name],
                          hint=f"Remove the {name} option.")
        raise PgError(INVALID_PARAMETER_VALUE, f'unrecognized parameter "{name}"',
                      hint="The options of CREATE VIEW splitstream implements are action=materialize or "
                           "action=transform, restart (CREATE OR REPLACE of a continuous view that starts "
                           "over, empty), sw and step_factor (sliding windows), ttl and ttl_column, retention, "
                           "late_rows, backfill, max_rows (an ungrouped view's newest N rows), and notify (a channel to "
                           "NOTIFY when the view changes).")
