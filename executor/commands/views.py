"""CREATE VIEW / CREATE MATERIALIZED VIEW; a view over a stream is a continuous view.
"""
from __future__ import annotations

import re

from sqlglot import exp

from splitstream.catalog.objects.model import ColumnDef, Relation
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import DUPLICATE_TABLE, FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, Notice, PgError

from ..sql.binder import ident
from ..execution import privileges
from ..sql.dialect import DIALECT
from ..sql.planner import Planner
from ..stream import change_notify, late_rows, retention
from .names import qual, target_schema


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
    if existing is not None and not (replace and existing.kind == "v"):
        if tree.args.get("exists"):
            return [Notice(f'relation "{name}" already exists, skipping', "42P07")]
        raise PgError(DUPLICATE_TABLE, f'relation "{name}" already exists')
    if existing is not None:
        privileges.require_relation_owner(st, session.info, existing)
    query = tree.args["expression"]
    sql = query.sql(DIALECT)
    pl = Planner(session.engine, ctx.state, session=session.info)
    plan = pl.plan_query(query)
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
                    value.name if isinstance(value, exp.Expression) else str(value)
                options[str(p.this).lower()] = text
    if re.match(r"\s*create\s+materialized\s+view", text, re.I):
        materialized = True
    continuous = bool(pl.streams_used) or any(v.continuous for v in pl.views_used)
    _refuse_unimplemented_options(options)
    if late_rows.OPTION in options and not continuous:
        raise PgError(INVALID_PARAMETER_VALUE, f'option "{late_rows.OPTION}" needs a continuous view',
                      hint="late_rows says what a view over a stream with a WATERMARK does with the rows later "
                           "than it; a view over tables reads every row.")
    if change_notify.OPTION in options and not continuous:
        raise PgError(INVALID_PARAMETER_VALUE, f'option "{change_notify.OPTION}" needs a continuous view',
                      hint="A view over tables changes only when its tables do; LISTEN for a NOTIFY sent by "
                           "the writer instead.")
    if retention.OPTION in options and not continuous:
        raise PgError(INVALID_PARAMETER_VALUE, f'option "{retention.OPTION}" needs a continuous view',
                      hint="Retention drops the old panes of a TUMBLE/HOP view over a stream; a view over tables "
                           "keeps no state.")
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
    if options.get("action", "materialize").lower() not in ("materialize",):
        raise PgError(FEATURE_NOT_SUPPORTED, f"action={options['action']} is not supported",
                      hint="Use WITH (action=materialize) or plain CREATE VIEW.")
    if materialized and not continuous:
        raise PgError(FEATURE_NOT_SUPPORTED, "materialized views over tables are not supported",
                      hint="Create a plain view, or a view over a stream to get a continuous view.")
    if "action" in options and not continuous:
        # as PipelineDB: asking for a continuous view over tables is an error, not a plain view in disguise
        raise PgError(FEATURE_NOT_SUPPORTED, "continuous views (action=materialize) must read a stream in the FROM clause",
                      hint="Drop WITH (action=materialize) to create a plain view over tables, or join the tables with a stream.")
    cols = tuple(ColumnDef(colnames[i] if i < len(colnames) else c.name, c.oid if c.oid != type_oids.UNKNOWN else type_oids.TEXT, c.typmod, attnum=i + 1)
                 for i, c in enumerate(plan.out))
    oid = existing.oid if existing is not None else ctx.txn.new_oid()
    deps = tuple(sorted({r.oid for r in pl.streams_used} | set(pl.tables_used) | {v.oid for v in pl.views_used}))
    owner = existing.owner if existing is not None else privileges.current_role(st, session.info).oid
    rel = Relation(oid, schema, name, "v", cols, sql=sql, continuous=continuous, depends_on=deps, owner=owner,
                   acl=existing.acl if existing is not None else None,
                   options=tuple(sorted(options.items())))
    if continuous:
        session.engine.streams.create_view(session, ctx, rel, query, replacing=replacing, restart=restart)
    ctx.txn.apply(("rel", rel))
    if replacing and restart:
        return [Notice(f'continuous view "{name}" starts empty: the state it held is discarded')]
    return []


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
    "sw": "sliding windows (sw) are not implemented yet",
    "ttl": "time-to-live (ttl) is not implemented yet",
    "ttl_column": "time-to-live (ttl) is not implemented yet",
    "step_factor": "sliding windows (step_factor) are not implemented yet",
    "check_option": "WITH CHECK OPTION is not supported",
    "security_barrier": "security_barrier views are not supported",
    "security_invoker": "security_invoker views are not supported",
}


def _refuse_unimplemented_options(options: dict[str, str]) -> None:
    for name in options:
        if name in ("action", "restart"):
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
        if name in _NOT_IMPLEMENTED_OPTIONS:
            raise PgError(FEATURE_NOT_SUPPORTED, _NOT_IMPLEMENTED_OPTIONS[name],
                          hint=f"Remove the {name} option; for a time window, group by a time bucket such as "
                               "date_trunc('minute', ts) instead.")
        raise PgError(INVALID_PARAMETER_VALUE, f'unrecognized parameter "{name}"',
                      hint="The options of CREATE VIEW splitstream implements are action=materialize and "
                           "restart (CREATE OR REPLACE of a continuous view that starts over, empty), retention, late_rows "
                           "and notify (a channel to NOTIFY when the view changes).")
