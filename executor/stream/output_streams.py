"""PipelineDB's output streams and transforms.

``output_of('v')`` in the FROM clause of a continuous view is a stream of
``v``'s changes.  For a continuous view ``v`` (grouped), each batch applied
to ``v`` produces one row per group whose row changed: the group's row before
the batch (``old``, all NULL for a new group) and after it (``new``, all
NULL for a group that went away), as PipelineDB's output streams; a view
reads them as ``(old).col`` / ``(new).col`` or ``old.col`` / ``new.col``.
For a transform ``t`` (``CREATE VIEW t WITH (action = transform) AS SELECT
... FROM stream``: a filter/projection of the stream that keeps nothing),
``output_of('t')`` carries each transformed row, with ``t``'s columns.

Atomic and durable with the input: nothing derived is logged.  A transform
runs while the input batch is staged, so the views reading its output stage
their rows with everyone else (an error fails the statement, nothing is
logged).  A view's changes exist only once the batch is applied: inside the
same delivery of the cut, the view is read again, the difference to its last
read is taken per group, and the views reading ``output_of`` stage and apply
it at once, so a statement reading several views sees the input batch and
its derived changes in all of them or in none.  WAL replay runs the same
code over the logged input batches, from the states a checkpoint saved
together: derived rows are recomputed, never counted twice.  A view's first
"old" rows after a start (or after its first consumer appears) are read from
its state before the next batch is applied.

The output stream's oid is the view's own oid (``ContinuousView.pipelines``
is keyed by stream oid, so consumers are found as for any stream).  Ad hoc
``SELECT ... FROM output_of(...)`` is refused: an output stream has no ring
buffer; SUBSCRIBE gives a view's changes to a client.
"""
from __future__ import annotations

import dataclasses
import logging
import threading
import weakref
from typing import Callable

import sqlglot
from sqlglot import exp

from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.catalog.objects.model import ColumnDef, Relation
from splitstream.protocol.errors import FEATURE_NOT_SUPPORTED, INVALID_PARAMETER_VALUE, UNDEFINED_TABLE, PgError

from ..execution import operators, plans
from ..sql.dialect import DIALECT
from .continuous import StreamScanOp

log = logging.getLogger("splitstream.streams")

FUNCTION = "output_of"
TRANSFORM = "transform"
OUTPUTFUNC = "outputfunc"
HINT = ("output_of('view') reads the changes of a continuous view or the rows of a transform, "
        "inside CREATE VIEW ... AS SELECT ... FROM output_of('view').")


def is_transform(rel) -> bool:
    return dict(rel.options).get("action", "").lower() == TRANSFORM


def check_options(options: dict) -> None:
    """``outputfunc``: PipelineDB calls a trigger function with every row a
    transform outputs; splitstream has no trigger functions (only LANGUAGE
    sql), so it is refused rather than ignored."""
    if OUTPUTFUNC in options:
        if options.get("action", "").lower() != TRANSFORM:
            raise PgError(INVALID_PARAMETER_VALUE, f'option "{OUTPUTFUNC}" needs action = transform')
        raise PgError(FEATURE_NOT_SUPPORTED, f"transform outputfunc {options[OUTPUTFUNC]} is not supported",
                      hint="An outputfunc is a trigger function called per output row, and splitstream has only "
                           "LANGUAGE sql functions. Read the transform's rows with a continuous view over "
                           "output_of('transform') instead.")


def _column(name: str, c: ColumnDef) -> ColumnDef:
    return ColumnDef(name, c.type_oid, c.typmod)


def output_relation(view: Relation) -> Relation:
    """The stream ``output_of(view)``: a relation of kind 'f' outside the
    catalog, with the view's oid.  Columns: the transform's, or each of the
    view's columns as old, as new and as delta (scoped under
    ``old``/``new``/``delta`` by :func:`column_tables`)."""
    cols = view.visible_columns
    if is_transform(view):
        out = tuple(_column(c.name, c) for c in cols)
    else:
        out = tuple(_column(c.name, c) for c in cols) * 3
    return Relation(view.oid, view.schema, f"output_of({view.name})", "f", out, owner=view.owner)


def column_tables(view: Relation, alias: str) -> list[str]:
    """The qualifier of each output column: old/new/delta for a view's changes."""
    n = len(view.visible_columns)
    return [alias] * n if is_transform(view) else ["old"] * n + ["new"] * n + ["delta"] * n


class OutputScanOp(StreamScanOp):
    """``output_of(view)`` in a plan: a stream scan a continuous view compiles
    like any other; run on its own it is refused (no ring buffer)."""

    def _execute(self, ctx):
        raise PgError(FEATURE_NOT_SUPPORTED, f"{self.rel.name} can only be read by a continuous view", hint=HINT)


def refuse_not_view(name: str, rel) -> None:
    if rel is None:
        raise PgError(UNDEFINED_TABLE, f'relation "{name}" does not exist')
    if rel.kind != "v" or not rel.continuous:
        raise PgError(FEATURE_NOT_SUPPORTED, f'"{name}" is not a continuous view', hint=HINT)


def refuse_ungrouped(view: Relation, plan: operators.Op) -> None:
    """A view keeping raw rows (no grouping) has no groups whose rows change:
    its output stream would be its input; refused rather than guessed."""
    if not is_transform(view) and not any(isinstance(n, operators.Aggregate) for n in _walk(plan)):
        raise PgError(FEATURE_NOT_SUPPORTED, f'output_of("{view.name}"): the view does not aggregate',
                      hint="An output stream carries the changed groups of an aggregating view. For the rows "
                           "themselves, read the stream, or make the filter a transform and read output_of of it.")


# ------------------------------------------------------------------ transforms

class Transform:
    """A transform's stream pipeline: filters and projections over one stream."""

    def __init__(self, rel: Relation, plan: operators.Op) -> None:
        self.rel = rel
        path: list = []                 # Filter / Project nodes, root first
        node = plan
        while not isinstance(node, StreamScanOp):
            if not isinstance(node, (operators.Filter, operators.Project)) or len(node.children) != 1:
                what = type(node).__name__
                raise PgError(FEATURE_NOT_SUPPORTED,
                              f'transform "{rel.name}" can only filter and project one stream (found {what})',
                              hint="A transform keeps no state: SELECT expressions FROM one stream WHERE ...; "
                                   "aggregate, join or order its output in a continuous view over output_of(...).")
            path.append(node)
            node = node.children[0]
        self.stream_oid = node.rel.oid
        self.ops = path[::-1]
        self.out = plan.out

    def run(self, batch: Batch, ctx) -> Batch:
        for op in self.ops:
            batch = op.process(batch, ctx)
            if batch.n == 0:
                break
        # only the visible output columns, as the output stream declares them
        return Batch(list(batch.cols[:len(self.out)]), batch.n)


# ------------------------------------------------------------------ a view's changes

def group_key_positions(view: Relation) -> list[int] | None:
    """Which of the view's output columns are its GROUP BY keys (by expression,
    output name or position), or None when it groups by nothing listed."""
    try:
        tree = sqlglot.parse_one(view.sql, read=DIALECT)
    except sqlglot.errors.ParseError:
        return None
    sel = tree if isinstance(tree, exp.Select) else tree.find(exp.Select)
    group = sel.args.get("group") if sel is not None else None
    if sel is None or group is None:
        return []
    items = sel.expressions
    keys = []
    for g in group.expressions:
        if isinstance(g, exp.Literal) and not g.is_string and g.this.isdigit():
            keys.append(int(g.this) - 1)
            continue
        for i, it in enumerate(items):
            plain = it.this if isinstance(it, exp.Alias) else it
            if plain.sql() == g.sql() or (isinstance(g, exp.Column) and not g.table and it.alias_or_name == g.name):
                keys.append(i)
                break
        else:
            return None
    return sorted(set(keys))


@dataclasses.dataclass
class Changes:
    """One view's last rows by group key, to diff the next read against."""

    keys: list[int] | None
    last: dict | None = None

    def rows_by_key(self, batch: Batch) -> dict:
        cols = [c.to_pylist() for c in batch.cols]
        rows = list(zip(*cols)) if cols else [()] * batch.n
        if self.keys is None:               # no key known: every distinct row is its own group
            return {r: r for r in rows}
        return {tuple(r[i] for i in self.keys): r for r in rows}

    def diff(self, now: dict, width: int) -> list[tuple[object, tuple, tuple]]:
        """(key, old, new) of every group that changed, in the view's row order."""
        last = self.last or {}
        self.last = now
        empty = (None,) * width
        out = [(k, last.get(k, empty), row) for k, row in now.items() if last.get(k) != row]
        out += [(k, row, empty) for k, row in last.items() if k not in now]
        return out


def change_batch(changes: list[tuple[object, tuple, tuple]], deltas: dict, rel: Relation) -> Batch:
    """The output stream's batch: old, new and delta columns (the delta row of
    a group is the view's query over the batch's rows alone; NULLs when the
    batch had none for it, e.g. a group a TTL removed)."""
    cols = rel.live_columns
    width = len(cols) // 3
    empty = (None,) * width
    rows = [(old, new, deltas.get(k, empty)) for k, old, new in changes]
    out = [Col.from_pylist([r[i // width][i % width] for r in rows], c.type_oid) for i, c in enumerate(cols)]
    return Batch(out, len(rows))


def _walk(op):
    yield op
    for c in op.children:
        yield from _walk(c)


def _read_now(cv, ctx) -> Batch:
    """The view's rows now (not what ``ctx`` read before the batch was applied)."""
    ctx.view_snapshots.pop(cv.rel.oid, None)
    return cv.read(ctx)


class Outputs:
    """The transforms and the views' change tracking of one stream manager.

    ``manager`` gives ``views_on(oid)`` (the continuous views reading a
    stream, an output stream included), ``mark_broken`` and ``read_ctx``."""

    def __init__(self, manager) -> None:
        self.manager = manager
        self.transforms: dict[int, Transform] = {}
        self._changes: dict[int, Changes] = {}
        #: the rows each stage of a view with consumers took (its delta is computed from them at apply)
        self._inputs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._plans: dict[int, tuple] = {}     # view oid -> (its Relation, its plan, the stream scan in it)

    def transforms_on(self, stream_oid: int) -> list[Transform]:
        return [t for t in list(self.transforms.values()) if t.stream_oid == stream_oid]

    def forget(self, oid: int) -> None:
        self.transforms.pop(oid, None)
        self._changes.pop(oid, None)
        self._plans.pop(oid, None)

    # -------------------------------------------------------------- staging
    def stage(self, stream_oid: int, batch: Batch, ctx, views: list, staged: dict,
              to: frozenset[int] | None = None) -> None:
        """After the stream's views staged ``batch``: every transform reading it
        (of the statement's targets ``to``; None: all) runs, and the views
        reading its output stage the rows (transforms of transforms too,
        whatever the targets: only the statement's own rows are targeted).
        Errors fail the statement, as any view's would.
        ``views`` gains the views that staged something."""
        read = self._read_sources()
        for cv in self.manager.views_on(stream_oid):
            if cv.rel.oid in read:
                self._note_input(cv, staged.get(cv.rel.oid), batch)
        for t in self.transforms_on(stream_oid):
            if to is not None and t.rel.oid not in to:
                continue
            out = t.run(batch, ctx)
            if out.n == 0:
                continue
            for cv in self.manager.views_on(t.rel.oid):
                staged[cv.rel.oid] = cv.stage(t.rel.oid, out, ctx, staged.get(cv.rel.oid))
                if cv not in views:
                    views.append(cv)
            self.stage(t.rel.oid, out, ctx, views, staged)

    def read_sources(self) -> set[int]:
        """The oids whose output stream some continuous view reads."""
        return self._read_sources()

    def _read_sources(self) -> set[int]:
        """The oids whose output stream some continuous view reads (one pass over the views)."""
        return {oid for cv in list(self.manager.views.values()) for oid in cv.pipelines}

    def _note_input(self, cv, st, batch: Batch) -> None:
        """Keep the rows a view with consumers staged: its delta rows come from them."""
        if st is not None:
            with self._lock:
                self._inputs.setdefault(st, []).append(batch)

    def _deltas(self, cv, ch: Changes, st, ctx) -> dict:
        """The view's query over the rows of this stage alone, by group key
        (PipelineDB's delta tuples); empty when it reads several streams."""
        with self._lock:
            inputs = self._inputs.pop(st, []) if st is not None else []
        entry = self._plans.get(cv.rel.oid)
        if entry is None or entry[0] is not cv.rel:
            plan = self.manager.plan_definition(cv.rel, ctx.state)
            scans = [n for n in _walk(plan) if isinstance(n, StreamScanOp)]
            entry = self._plans[cv.rel.oid] = (cv.rel, plan, scans)
        _rel, plan, scans = entry
        if not inputs or len(scans) != 1:
            return {}
        rows = Batch.concat(inputs) if len(inputs) > 1 else inputs[0]
        src = operators.BatchSource("delta", scans[0].out, lambda _ctx: rows)
        return ch.rows_by_key(operators.run_plan(plans.rebuilt(plan, {id(scans[0]): src}), ctx))

    # -------------------------------------------------------------- applying
    def merged(self, cv, merge: Callable[[], None], read_ctx: Callable[[], object]) -> list:
        """A Spark partial state merged into ``cv`` (inside its delivery): its
        readers get the changed groups, with NULL deltas (the rows stayed in
        Spark).  The views that changed, for notify and SUBSCRIBE."""
        views = [cv]
        self.before_apply(views, read_ctx)
        merge()
        staged: dict = {cv.rel.oid: None}
        self.after_apply(views, staged, read_ctx)
        return views

    def before_apply(self, views: list, read_ctx: Callable[[], object]) -> None:
        """Inside the delivery, before the batch is applied: the rows a view with
        consumers starts from, if not read yet (first consumer, or a restart).
        ``read_ctx()`` makes the context views are read in (only when needed)."""
        read = self._read_sources()
        for cv in views:
            if cv.rel.oid not in self._changes and cv.rel.oid in read:
                ch = self._changes[cv.rel.oid] = Changes(group_key_positions(cv.rel))
                ch.last = ch.rows_by_key(_read_now(cv, read_ctx()))

    def after_apply(self, views: list, staged: dict, read_ctx: Callable[[], object]) -> None:
        """Inside the same delivery, once applied: each view with consumers is
        read again and its changed groups go to them as one batch, staged and
        applied at once (and so on down the chain).  A consumer that fails on
        them is marked broken, as for a logged batch it fails to apply."""
        i = 0
        while i < len(views):
            cv = views[i]
            i += 1
            ch = self._changes.get(cv.rel.oid)
            if ch is None or cv.rel.oid not in staged:
                continue
            consumers = self.manager.views_on(cv.rel.oid)
            if not consumers:               # its readers were dropped: a later one starts afresh
                self._changes.pop(cv.rel.oid, None)
                continue
            ctx = read_ctx()
            try:
                pairs = ch.diff(ch.rows_by_key(_read_now(cv, ctx)), len(cv.rel.visible_columns))
            except PgError:                 # the view itself is broken: nothing to derive
                continue
            if not pairs:
                continue
            try:
                deltas = self._deltas(cv, ch, staged[cv.rel.oid], ctx)
            except Exception:  # noqa: BLE001 - the rows staged once: a failure here is a bug
                log.exception("the delta rows of %s failed", cv.rel.name)
                deltas = {}
            batch = change_batch(pairs, deltas, output_relation(cv.rel))
            for c in consumers:
                try:
                    st = c.stage(cv.rel.oid, batch, ctx)
                except Exception as e:  # noqa: BLE001 - the input is logged: only this consumer fails
                    self.manager.mark_broken(c, f"staging the changes of {cv.rel.name} failed: {e}")
                    continue
                if c.rel.oid in self._read_sources():
                    self._note_input(c, st, batch)
                self.before_apply([c], read_ctx)        # its own readers diff against its rows before
                c.deliver(st)
                staged[c.rel.oid] = st
                if c not in views:
                    views.append(c)
