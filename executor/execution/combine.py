"""PipelineDB's ``combine()``: re-aggregating a continuous view's aggregate
columns from the transition states behind them, not from their final values.

Why states: ``avg`` of averages, ``stddev`` of deviations or the union of
two HyperLogLogs cannot be computed from the values a view shows.  A view
read for a statement that calls ``combine`` hands its aggregate columns over
as :class:`StateCol`: the final values (so every other use of the column
sees the ordinary column) plus, per row, the group of a private copy of the
view's state (:class:`StateSource`) that produced it.  Filters, sorts, joins
and limits carry those group ids along (``take``/``filter``/``slice``).

The ``combine`` aggregate (:class:`CombineState`) then merges the source
groups of each of its groups into a fresh state of the view's aggregate,
through ``AggState.merge`` alone: any aggregate whose state is mergeable
(counts, sums, min/max, variance, the sketches and whatever another module
installs with ``aggregates.install_aggregate``) can be combined, with no
code here for it.  What a state class must do to be combinable (the same
as for sliding windows, TTLs and retention, which cut states by group too):

* ``merge(other, gmap)`` folds ``other``'s groups 0..len(gmap)-1 into the
  distinct groups ``gmap`` (several groups into one are merged here in
  pairwise rounds, never in one call);
* after ``settle()``, every per-group field is a numpy array whose first
  dimension is the state's ``size`` (1-D values, 2-D registers or cells,
  object arrays of per-group Python values), so :func:`taken_state` can
  gather groups; anything else is shared as is.
"""
from __future__ import annotations

import copy

import numpy as np

from splitstream.catalog.datatypes.vector import Col
from splitstream.protocol.errors import WRONG_OBJECT_TYPE, PgError

from . import expr, operators
from .aggregates import KEEPS_NULLS, AggSpec, AggState, install_aggregate

#: combine's overload in pg_proc's words: the result has the column's type
AGGREGATE_SIGNATURES: dict[str, str] = {"combine": "anyelement -> anyelement"}

_HINT = "combine must be called with a single aggregate continuous view column reference."


def invalid_expression() -> PgError:
    """PipelineDB's refusal of an argument that is not a view's aggregate column."""
    return PgError(WRONG_OBJECT_TYPE, "combine called with an invalid expression", hint=_HINT)


def wrong_arity(n: int) -> PgError:
    return PgError(WRONG_OBJECT_TYPE, f"combine called with {n} arguments", hint=_HINT)


def not_a_view(name: str) -> PgError:
    return PgError(WRONG_OBJECT_TYPE, f'"{name}" is not a continuous view',
                   hint="Only aggregate continuous view columns can be combined.")


_PASS_THROUGH = (operators.Filter, operators.Sort, operators.Limit)


def trace_column(op, idx: int, found):
    """Follow output column ``idx`` of ``op`` down through projections that
    only reference it (a USING join's, a view's select list) and through
    filters, sorts and limits, until ``found(op, idx)`` says what it is;
    None when it is computed on the way."""
    while True:
        hit = found(op, idx)
        if hit is not None:
            return hit
        if isinstance(op, operators.Project):
            e = op.exprs[idx] if 0 <= idx < len(op.exprs) else None
            if type(e) is not expr.ColRef:
                return None
            op, idx = op.child, e.idx
        elif isinstance(op, _PASS_THROUGH):
            op = op.child
        else:
            return None


class StateSource:
    """One aggregate's state over a view's groups, private to one read
    (nothing else merges into it while a statement combines it)."""

    __slots__ = ("state", "groups")

    def __init__(self, state: AggState, groups: int) -> None:
        self.state, self.groups = state, groups


class StateCol(Col):
    """An aggregate column of a view read for ``combine``: the final values,
    and per row the group of ``source`` behind it."""

    __slots__ = ("source", "gids")

    def __init__(self, final: Col, source: StateSource, gids: np.ndarray) -> None:
        super().__init__(final.data, final.nulls, final.oid)
        self.source, self.gids = source, gids

    def _with(self, final: Col, gids: np.ndarray) -> "StateCol":
        return StateCol(final, self.source, gids)

    def take(self, idx: np.ndarray) -> Col:
        return self._with(Col.take(self, idx), self.gids[idx])

    def filter(self, mask: np.ndarray) -> Col:
        return self._with(Col.filter(self, mask), self.gids[mask])

    def slice(self, a: int, b: int) -> Col:
        return self._with(Col.slice(self, a, b), self.gids[a:b])


def with_states(cols: list[Col], states: list[AggState], nkeys: int) -> list[Col]:
    """A grouping's result columns (keys, then one per state) with each
    aggregate column carrying its state (``states``: a private copy)."""
    n = len(cols[0]) if cols else 0
    gids = np.arange(n, dtype=np.int64)
    out = list(cols[:nkeys])
    for c, st in zip(cols[nkeys:nkeys + len(states)], states):
        out.append(StateCol(c, StateSource(st, n), gids))
    return out + list(cols[nkeys + len(states):])


class CombineState(AggState):
    """``combine(col)``: remembers which source groups go to which of its
    groups, and merges them into a state of the view's aggregate at the end
    (``spec.combined``: that aggregate's spec, set when the call is bound)."""

    def __init__(self, spec: AggSpec) -> None:
        super().__init__(spec)
        self.parts: list[tuple[StateSource, np.ndarray, np.ndarray]] = []

    def _grow(self, cap: int) -> None:
        pass

    def update(self, gids, ng, args, valid):
        col = args[0] if args else None
        if not isinstance(col, StateCol):
            raise invalid_expression()
        src, dst = col.gids, gids
        if valid is not None:
            src, dst = src[valid], dst[valid]
        self.parts.append((col.source, src, dst))

    def merge(self, other, gmap):
        self.parts += [(s, src, gmap[dst]) for s, src, dst in other.parts]

    def final(self, ng):
        inner: AggState = self.spec.combined.make_state()      # type: ignore[attr-defined]
        inner.ensure(ng, exact=True)
        for source, src, dst in self.parts:
            if len(src):
                source.state.ensure(source.groups)
                _fold_into(inner, taken_state(source.state, src), dst)
        return inner.final(ng)

    def nbytes(self) -> int:
        return sum(src.nbytes + dst.nbytes for _, src, dst in self.parts)


def taken_state(st: AggState, idx: np.ndarray) -> AggState:
    """``st`` restricted to groups ``idx`` (a shallow copy whose per-group
    arrays are gathered; the source is left as it was).  A state keeping
    entries tagged by group (top-k, sets) gathers them itself."""
    own = getattr(st, "take_groups", None)
    if own is not None:
        return own(idx)
    st.settle()                 # buffered sketch input applied: every per-group array is dense
    part = copy.copy(st)
    size = st.size
    for name, v in vars(st).items():
        # rows of 2-D arrays too: HyperLogLog registers, t-digest centroids, count-min counters
        if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == size and size:
            setattr(part, name, v[idx])
    part.size = len(idx)
    return part


def _fold_into(inner: AggState, slots: AggState, dst: np.ndarray) -> None:
    """Merge slot i of ``slots`` into group ``dst[i]`` of ``inner``.

    ``AggState.merge`` takes distinct target groups only, so the slots of one
    target are first merged pairwise (rank 2j+1 into 2j, in log2(most slots
    per target) rounds of numpy over all targets), until one is left each."""
    order = np.argsort(dst, kind="stable")
    slots, dst = taken_state(slots, order), dst[order]
    while True:
        n = len(dst)
        pos = np.arange(n)
        starts = np.ones(n, dtype=bool)
        starts[1:] = dst[1:] != dst[:-1]
        rank = pos - np.maximum.accumulate(np.where(starts, pos, 0))
        odd = (rank & 1) == 1
        if not odd.any():
            break
        odd_idx = np.flatnonzero(odd)
        slots.merge(taken_state(slots, odd_idx), odd_idx - 1)
        keep = np.flatnonzero(~odd)
        slots, dst = taken_state(slots, keep), dst[keep]
    inner.merge(slots, dst)


def frame_combine(spec: AggSpec, col: Col, ps: np.ndarray, hi: np.ndarray) -> Col:
    """``combine(col) OVER (...)`` for frames that start at their
    partition's first row (``ps``, in window order) and end at row ``hi``:
    the view's aggregate over the states of those rows.

    Why a prefix scan: each row's frame is a prefix of its partition, so the
    states are merged as a Hillis-Steele scan (in round k, row i takes in
    row i - 2^k of its partition: log2(rows) rounds, each one merge of all
    rows at once), and row i's result is the prefix state of row ``hi[i]``.
    Merges are the aggregate's own ``AggState.merge``, as for grouped
    combine; a row's slot is copied before it is merged into another."""
    if not isinstance(col, StateCol):
        raise invalid_expression()
    n = len(col.gids)
    prefix: AggState = spec.combined.make_state()      # type: ignore[attr-defined]
    prefix.ensure(n, exact=True)
    if n == 0:
        return prefix.final(0)
    col.source.state.ensure(col.source.groups)
    _fold_into(prefix, taken_state(col.source.state, col.gids), np.arange(n, dtype=np.int64))
    rows = np.arange(n, dtype=np.int64)
    step = 1
    while step < n:
        take = rows[step:][rows[step:] - step >= ps[step:]]
        if not len(take):
            break
        prefix.merge(taken_state(prefix, take - step), take)
        step *= 2
    return taken_state(prefix, hi).final(n)


def _result_type(arg_oids: list[int]) -> int:
    return arg_oids[0] if len(arg_oids) == 1 else -1


install_aggregate("combine", CombineState, _result_type)
# a NULL value is no empty state (stddev of one row, min of NULLs next to a count): every row is combined
KEEPS_NULLS.add("combine")
