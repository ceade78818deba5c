"""Coalescing of batched prepared INSERTs (JDBC executeBatch, psycopg
executemany, asyncpg executemany).

Such clients send Parse once and then Bind/Execute per row, with one Sync
per batch.  Run one by one, every Execute of a one-row INSERT into a stream
pays the whole ingest path: a WAL record (and, with synchronous_commit, an
fsync), the stream pipelines of every continuous view and the row building,
~600 us to 2 ms a row.  Here consecutive Executes of the same prepared INSERT
in one extended-protocol block only record their parameter values; the rows
are built column-wise and delivered as one batch at Sync, or before any other
statement runs.

PostgreSQL semantics are kept: each Execute still answers ``INSERT 0 m``; a
batch that fails on delivery (bad value, NOT NULL, unique key) raises at the
Sync, before ReadyForQuery, and nothing of the block is delivered; a write is
acknowledged only after delivery (and its WAL flush) at Sync.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.errors import PgError

from .execution import expr
from .api import Result
from .commands.dml import InsertStmt, build_rows, check_constraints, eval_default, insert_batch

#: Executes kept as raw parameter tuples before they are built into a columnar
#: slab (bounds memory when a client sends a huge batch without a Sync).
SLAB_EXECUTES = 32768
#: Runs of different prepared INSERTs kept before they are delivered early.
MAX_SEGMENTS = 64


def _vector_expr(e: Any) -> bool:
    """True if ``e`` is a DEFAULT (None), a constant, a parameter, or casts of one."""
    while isinstance(e, expr.Cast):
        e = e.arg
    return e is None or type(e) in (expr.Const, expr.Param)


def coalescible(stmt: Any) -> bool:
    """Whether Executes of ``stmt`` may be buffered and delivered together.

    Only ``INSERT ... VALUES`` whose items are parameters, constants or casts
    of them: such rows depend on nothing but their own parameters, so building
    them later, all at once, gives the same rows.  RETURNING and ON CONFLICT
    need per-Execute answers and run as before.  Cached on the statement.
    """
    hit = getattr(stmt, "_coalescible", None)
    if hit is not None:
        return hit

    ok = (type(stmt) is InsertStmt and not stmt.default_values
          and stmt.source is None and stmt.conflict is None and stmt.ret is None and stmt.rows is not None and bool(stmt.rows)
          and all(_vector_expr(e) for row in stmt.rows for e in row)
          and not _set_level_constraints(stmt.rel))
    try:
        stmt._coalescible = ok
    except AttributeError:
        pass
    return ok


def _set_level_constraints(rel: Any) -> bool:
    """Unique, primary-key, foreign-key and CHECK constraints can only fail at
    delivery, i.e. at Sync, after every Execute was answered: libpq's pipeline
    mode (psycopg's executemany) cannot attribute such an error and breaks the
    connection.  Inserts into such tables run one by one, failing at their
    own Execute as in PostgreSQL; NOT NULL and type errors are checked per
    Execute anyway."""
    return any(c.kind in ("p", "u", "f", "c") for c in getattr(rel, "constraints", ()))


def _eval_vector(e: Any, params: list[Col], n: int, ctx) -> Col:
    """Evaluate a parameter/constant/cast expression for ``n`` Executes at once."""
    if isinstance(e, expr.Cast):
        return sqltypes.cast_col(_eval_vector(e.arg, params, n, ctx), e.oid, e.typmod, e.explicit)
    if isinstance(e, expr.Param):
        return params[e.idx] if e.idx < len(params) else Col.const(None, e.oid, n)
    return e.eval(Batch([], n), ctx)


def _param_types(stmt: Any, param_oids: list[int]) -> list[int]:
    """Type of each parameter as the statement's Param nodes see it."""
    oids = [o or type_oids.TEXT for o in param_oids]
    for row in stmt.rows:
        for e in row:
            while isinstance(e, expr.Cast):
                e = e.arg
            if isinstance(e, expr.Param):
                while len(oids) <= e.idx:
                    oids.append(type_oids.TEXT)
                oids[e.idx] = e.oid
    return oids


def _row_checks(stmt: Any, param_oids: list[int]) -> list[tuple[int, list[tuple[int, int, bool]], int, bool]]:
    """Per-Execute checks of a coalescible INSERT: for each parameter that
    feeds a column through a cast or into a NOT NULL column, (parameter
    index, casts innermost first (the column's assignment cast last), the
    parameter's type, NOT NULL).  Cached on the statement per parameter types."""
    cache = stmt.__dict__.setdefault("_row_checks", {})
    key = tuple(param_oids)
    hit = cache.get(key)
    if hit is not None:
        return hit
    checks = []
    for row in stmt.rows:
        for e, col in zip(row, stmt.targets):
            casts = []
            while isinstance(e, expr.Cast):
                casts.append((e.oid, e.typmod, e.explicit))
                e = e.arg
            if not isinstance(e, expr.Param):
                continue
            casts.reverse()
            out = casts[-1][0] if casts else e.oid
            if out != col.type_oid or col.typmod >= 0:
                casts.append((col.type_oid, col.typmod, False))     # build_rows' assignment cast
            if casts or col.not_null:
                checks.append((e.idx, casts, e.oid, bool(col.not_null)))
    cache[key] = checks
    return checks


class PendingInserts:
    """Parameter values of consecutive Executes of one prepared INSERT."""

    def __init__(self, stmt: Any, param_oids: list[int]) -> None:
        self.stmt = stmt
        self.param_oids = list(param_oids)
        self.rows_per_execute = len(stmt.rows)
        self.executes: list[list[Any]] = []
        #: parameter columns of earlier Executes, in order (runs of pipelined cycles, and
        #: the recorded ``executes`` before each run)
        self.chunks: list[list[Col]] = []
        self.n_chunk_rows = 0
        self.slabs: list[Batch] = []      # full-width rows already built from earlier Executes
        self.n_slab_rows = 0
        self.checks = _row_checks(stmt, self.param_oids)

    @property
    def tag(self) -> str:
        """Each Execute's command tag."""
        return f"INSERT 0 {self.rows_per_execute}"

    def add(self, params: list[Any]) -> str:
        """Record one Execute; returns its command tag."""
        self.executes.append(params)
        return self.tag

    def param_columns(self, values: list[Any], n: int) -> list[Col] | None:
        """``n`` Executes' parameters given as (numpy column of the type's
        native dtype, NULL mask or None), lists of Python values, or None
        (NULL throughout),
        as the columns :meth:`_param_cols` would build from their values;
        None when a column's type is not the one the statement's parameter
        takes (the Executes then go one by one)."""
        oids = _param_types(self.stmt, self.param_oids)
        if len(values) > len(oids):
            return None
        cols = []
        for k, oid in enumerate(oids):
            v = values[k] if k < len(values) else None
            if v is None:
                cols.append(Col(sqltypes.empty(oid, n), np.ones(n, bool), oid))
            elif isinstance(v, list):
                cols.append(Col.from_pylist(v, oid))
            elif v[0].dtype != sqltypes.dtype_of(oid) or len(v[0]) != n:
                return None
            else:
                cols.append(Col(v[0], v[1], oid))
        return cols

    def accepts_columns(self, cols: list[Col]) -> bool:
        """:meth:`accepts` for many Executes at once: True when none of
        them fails a NOT NULL or its value's conversion to the column."""
        for k, casts, _oid, notnull in self.checks:
            c = cols[k]
            if notnull and c.nulls is not None:
                return False
            if casts and not _converts(lambda: c, casts, notnull):
                return False
        return True

    def add_columns(self, cols: list[Col], n: int) -> None:
        """Record ``n`` Executes whose parameters are ``cols`` (after those recorded so far)."""
        self._chunk_executes()
        self.chunks.append(cols)
        self.n_chunk_rows += n

    def _chunk_executes(self) -> None:
        """The recorded one-by-one Executes as a chunk of parameter columns."""
        if self.executes:
            n = len(self.executes)
            self.chunks.append(self._param_cols())
            self.n_chunk_rows += n
            self.executes = []

    def accepts(self, params: list[Any]) -> bool:
        """Cheap per-Execute check of the row-local errors (NOT NULL, a value
        that does not convert to its column), so they are reported by the
        Execute that sent them, as PostgreSQL does.  False: run
        :class:`ProbeStmt` for the exact error."""
        for k, casts, oid, notnull in self.checks:
            v = params[k] if k < len(params) else None
            if v is None:
                if notnull:
                    return False
                continue
            if casts and len(casts) == 1 and _fits(oid, casts[0], v):
                continue
            if casts and not _converts(lambda: Col.const(v, oid, 1), casts, notnull):
                return False
        return True

    @property
    def full(self) -> bool:
        return len(self.executes) + self.n_chunk_rows >= SLAB_EXECUTES

    def to_slab(self, session, ctx) -> None:
        """Build the recorded Executes into full-width rows now (validating
        their values), so memory holds numpy columns, not Python tuples."""

        if not self.executes and not self.chunks:
            return
        src = self._source(session, ctx)
        stmt = self.stmt
        self.slabs.append(build_rows(session, ctx, stmt.rel, stmt.targets, src, insert=True))
        self.n_slab_rows += src.n
        self.executes = []
        self.chunks = []
        self.n_chunk_rows = 0

    def rows(self, session, ctx) -> Batch:
        """All buffered rows, full width, in Execute order."""
        self.to_slab(session, ctx)
        rel = self.stmt.rel
        if len(self.slabs) == 1:
            return self.slabs[0]
        return Batch.concat(self.slabs, [c.type_oid for c in rel.live_columns])

    def lone_row(self) -> list[Col] | None:
        """The full-width row of a lone one-row Execute, built straight from
        its values when every column takes a parameter or constant of its own
        type (or is left NULL) and no NOT NULL is violated: the common
        autocommitted ``INSERT ... VALUES ($1, $2)``, which the general
        column-wise build (casts, defaults, concatenation) costs ~5x more.
        None: use :meth:`rows`."""
        if self.slabs or self.chunks or len(self.executes) != 1:
            return None
        plan = _direct_plan(self.stmt, self.param_oids)
        if plan is None:
            return None
        params = self.executes[0]
        out = []
        for oid, kind, ref, not_null in plan:
            v = None if kind == 0 else ref if kind == 1 else params[ref] if ref < len(params) else None
            if v is None and not_null:
                return None                  # the general path raises the exact error
            out.append(Col.const(v, oid, 1))
        return out

    def _param_cols(self) -> list[Col]:
        """One column per parameter, typed as the statement's Param nodes
        are (what a one-row execution would give ``Col.const``)."""
        oids = _param_types(self.stmt, self.param_oids)
        cols = []
        for k, oid in enumerate(oids):
            vals = [p[k] if k < len(p) else None for p in self.executes]
            cols.append(Col.from_pylist(vals, oid))
        return cols

    def _all_param_cols(self) -> tuple[list[Col], int]:
        """Every recorded Execute's parameters as columns, and how many Executes."""
        if not self.chunks:
            return self._param_cols(), len(self.executes)
        self._chunk_executes()
        if len(self.chunks) == 1:
            return self.chunks[0], self.n_chunk_rows
        return [Col.concat(list(parts)) for parts in zip(*self.chunks)], self.n_chunk_rows

    def _source(self, session, ctx) -> Batch:
        """Target-column values of the recorded Executes, one column per target."""

        params, n = self._all_param_cols()
        stmt = self.stmt
        m = self.rows_per_execute
        cols = []
        for j, col in enumerate(stmt.targets):
            parts = []
            for row in stmt.rows:
                e = row[j]
                if e is None:       # DEFAULT
                    parts.append(eval_default(session, ctx, col, n) if col.default else
                                 Col(sqltypes.empty(col.type_oid, n), np.ones(n, bool), col.type_oid))
                else:
                    parts.append(_eval_vector(e, params, n, ctx))
            if m > 1 and any(p.oid != parts[0].oid for p in parts):
                # each row's value gets the assignment cast on its own, as in a one-Execute VALUES list
                parts = [p if p.oid == col.type_oid else sqltypes.cast_col(p, col.type_oid, col.typmod, explicit=False)
                         for p in parts]
            cols.append(Col.concat(parts))
        if m > 1:
            # parts are row-template major; rows must come in Execute order
            order = (np.arange(m)[None, :] * n + np.arange(n)[:, None]).ravel()
            cols = [c.take(order) for c in cols]
        return Batch(cols, n * m)


_INT_TYPES = frozenset((type_oids.INT2, type_oids.INT4, type_oids.INT8))
_INT_RANGES = {type_oids.INT2: 1 << 15, type_oids.INT4: 1 << 31, type_oids.INT8: 1 << 63}
_WIDER_THAN_INT = frozenset((type_oids.FLOAT4, type_oids.FLOAT8, type_oids.NUMERIC))


def _fits(oid: int, cast: tuple[int, int, bool], v: Any) -> bool:
    """True when the one assignment cast ``cast`` of ``v`` (of type ``oid``)
    surely succeeds: an integer into an integer column it fits, or into a
    float or unconstrained numeric one (JDBC and psycopg send ints as int8).
    False: unknown; :meth:`PendingInserts.accepts` casts the value to see."""
    to, typmod, _explicit = cast
    if oid not in _INT_TYPES or type(v) is not int:
        return False
    bound = _INT_RANGES.get(to)
    if bound is not None:
        return -bound <= v < bound
    return to in _WIDER_THAN_INT and typmod < 0


def _direct_plan(stmt: Any, param_oids: list[int]) -> list[tuple[int, int, Any, bool]] | None:
    """Per live column (type, 0 = NULL / 1 = constant / 2 = parameter, the
    constant or parameter index, NOT NULL), or None when some value needs a
    cast, a typmod check or a default.  Cached per parameter types."""
    cache = stmt.__dict__.setdefault("_direct_plan", {})
    key = tuple(param_oids)
    if key in cache:
        return cache[key]
    plan: list[tuple[int, int, Any, bool]] | None = []
    if len(stmt.rows) != 1:
        plan = None
    else:
        given = {id(col): e for col, e in zip(stmt.targets, stmt.rows[0])}
        steps: list[tuple[int, int, Any, bool]] = []
        plan = steps
        for col in stmt.rel.live_columns:
            e = given.get(id(col), _ABSENT)
            oid = col.type_oid
            if e is _ABSENT and col.default is None:
                steps.append((oid, 0, None, bool(col.not_null)))
            elif type(e) is expr.Const and e.oid == oid and col.typmod < 0:
                steps.append((oid, 1, e.value, bool(col.not_null)))
            elif type(e) is expr.Param and e.oid == oid and col.typmod < 0:
                steps.append((oid, 2, e.idx, bool(col.not_null)))
            else:
                plan = None
                break
    cache[key] = plan
    return plan


_ABSENT = object()


def _shape(rel) -> list[tuple[str, int, int]]:
    return [(c.name, c.type_oid, c.typmod) for c in rel.live_columns]


class ProbeStmt:
    """Builds and checks one Execute's rows alone, to raise the exact error
    (message, detail, SQLSTATE) that :meth:`PendingInserts.accepts` spotted."""

    cacheable = False

    def __init__(self, stmt: Any, param_oids: list[int], params: list[Any]) -> None:
        self.probe = PendingInserts(stmt, param_oids)
        self.probe.add(params)

    def run(self, session, ctx):
        rel = self.probe.stmt.rel
        check_constraints(session, ctx, rel, self.probe.rows(session, ctx))
        return Result(tag="")


class FlushStmt:
    """The statement that delivers buffered Executes: every segment (one per
    run of the same prepared INSERT) is built and checked first, then all are
    delivered in order, so a bad row anywhere delivers nothing of the block."""

    cacheable = False

    def __init__(self, segments: list[PendingInserts], slab: bool = False) -> None:
        self.segments = segments
        self.slab = slab            # only build (and validate) the last segment's rows so far; deliver later

    def run(self, session, ctx):
        for stmt in {id(p.stmt): p.stmt for p in self.segments}.values():
            stmt.authorize(ctx)     # the role may have changed since the Executes were recorded
        if self.slab:
            self.segments[-1].to_slab(session, ctx)
            return Result(tag="")
        if len(self.segments) == 1:
            row = self.segments[0].lone_row()
            rel = self.segments[0].stmt.rel
            if row is not None and rel.kind == "r" and ctx.state.rels.get(rel.oid) is rel:
                return Result(tag=f"INSERT 0 {insert_batch(session, ctx, rel, Batch(row, 1))}")
        built = []
        for p in self.segments:
            rel = p.stmt.rel
            cur = ctx.state.rels.get(rel.oid)
            if cur is None or cur is not rel and _shape(cur) != _shape(rel):
                raise PgError("40001", f'could not insert into "{rel.name}": it was altered or dropped concurrently')
            rows = p.rows(session, ctx)
            if rel.kind == "f":
                check_constraints(session, ctx, rel, rows)     # streams cannot take rows back: check all first
            built.append((rel, rows))
        n = 0
        for rel, rows in built:
            if rel.kind == "f":
                n += session.engine.streams.insert(ctx, rel, rows)
            else:
                n += insert_batch(session, ctx, rel, rows)
        return Result(tag=f"INSERT 0 {n}")


def _converts(make: Callable[[], Col], casts, notnull: bool) -> bool:
    """Whether the column ``make()`` builds goes through the column's casts
    without an error (and, for a NOT NULL column, without turning a value
    into NULL)."""
    try:
        c = make()
        for to, typmod, explicit in casts:
            c = sqltypes.cast_col(c, to, typmod, explicit)
    except Exception:
        return False
    return not (notnull and c.nulls is not None)
