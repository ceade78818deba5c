"""One statement's batches into a compiled stream pipeline, staged.

An insert must reach every continuous view of its stream or none (issue
14), so :meth:`CompiledStage.add` does everything that can fail -- the
pipeline's vector prefix (filters, joins), the kernel's input expressions,
casts -- before the batch is logged, and keeps the result private to the
statement.  :meth:`CompiledStage.apply` then runs the kernel into the sink's
shared tables, which cannot fail on user input.

What is staged is the kernel's prepared inputs, so the kernel still runs
once per batch, on the sink's thread-local tables, morsel-parallel as
before.  A large COPY would hold all its inputs until it is acknowledged;
past :data:`STAGE_BYTES` they are run into a table private to the statement
instead, which is merged at apply (one table per COPY, not per slab).
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

from splitstream.catalog.datatypes.vector import Batch

from ...execution.aggregates import check_no_overflow
from .. import interface as backends
from .runtime import CompiledSink, KernelInputs, count_llvm, count_vector
from .table import NativeTable, float_room

#: prepared kernel inputs one statement may hold per pipeline before they
#: are folded into a private table
STAGE_BYTES = 64 << 20
#: inputs of this many rows run as they are: joining them would copy more
#: than the kernel call it saves (a COPY's slabs)
JOIN_MAX_ROWS = 4096


class CompiledStage:
    def __init__(self, sink: CompiledSink, pipe: Any) -> None:
        self.sink = sink
        self.pipe = pipe
        self.pending: list[tuple[KernelInputs, Any]] = []
        self.pending_bytes = 0
        self.native: NativeTable | None = None     # private table of a large statement
        self.vector: Any = None                    # private GroupTable of batches on the vector path
        #: what the batches staged for the kernel may add to a float8 sum (table.float_bound);
        #: None once the statement's float sums could overflow: the rest runs on the vector path
        self.fbound: float | None = 0.0
        #: after :meth:`delta`: the private native table of the statement's groups
        #: (applied by adding it into the sink's own table where their layouts agree)
        self.ran: NativeTable | None = None

    def add(self, batch: Batch, ctx: Any) -> None:
        sink, n = self.sink, batch.n
        mode = backends.mode(ctx)
        sink.info.requested = mode
        if not sink.supported:
            count_vector(sink.info, n)
            self._vector(batch, ctx)
            return
        if not sink.ready(mode):
            # auto, not compiled yet: the vector path, timed to decide when compiling pays
            sink.observe_nulls(batch)
            t0 = time.perf_counter()
            self._vector(batch, ctx)
            sink.note_vector(n, time.perf_counter() - t0)
            return
        p = sink.prepare(batch, ctx, self.pipe.run_ops)
        if p.empty:
            sink.info.backend = "llvm"
            count_llvm(sink.info, n)
            return
        m = sink.module_for(p.present, mode)
        if m is not None and not self._float_room(p.fbound, ctx):
            m = None
        if m is None:             # NULLs the compiled code does not expect: this batch on vector
            if self.vector is None:
                self.vector = self.pipe.agg.new_table()
            sink.run_vector_prepared(p, self.vector, ctx)
            count_vector(sink.info, n)
            return
        self.pending.append((p, m))
        self.pending_bytes += _input_bytes(p)
        count_llvm(sink.info, n)
        if self.pending_bytes > STAGE_BYTES:
            self._fold_pending()

    def _float_room(self, fbound: float, ctx: Any) -> bool:
        """May the kernel take a batch adding up to ``fbound`` to float8 sums?
        Once the statement's own float sums could overflow, what it staged
        for the kernel moves to its vector table, whose sums are checked row
        by row as PostgreSQL's float8pl (22003 fails the statement before
        anything is logged), and so do its later batches."""
        if self.fbound is not None and float_room(self.fbound, fbound):
            self.fbound += fbound
            return True
        if self.fbound is not None:
            self.fbound = None
            if self.vector is None:
                self.vector = self.pipe.agg.new_table()
            if self.native is not None:
                self.native.merge_into(self.vector)
                self.native = None
            check_no_overflow(self.vector)
            for q, _m in self.pending:
                self.sink.run_vector_prepared(q, self.vector, ctx)
            self.pending, self.pending_bytes = [], 0
        return False

    def _vector(self, batch: Batch, ctx: Any) -> None:
        if self.vector is None:
            self.vector = self.pipe.agg.new_table()
        self.pipe.run_vector(batch, ctx, self.vector)

    def _fold_pending(self) -> None:
        if self.native is None:
            self.native = self.sink.private_table()
        for p, m in self.pending:
            self.sink.run_into(p, m, self.native)
        self.pending, self.pending_bytes = [], 0

    def apply(self) -> None:
        sink, local = self.sink, self.pipe.local
        if self.ran is not None:
            if not sink.take_private(self.ran):
                self.ran.merge_into(local)
            self.ran = None
        for p, m in merge_inputs(self.pending) if len(self.pending) > 1 else self.pending:
            sink.run(p, m)
        self.pending = []
        if self.native is not None and self.native.touched and self.native.ngroups:
            self.native.merge_into(local)
        if self.vector is not None:
            local.merge(self.vector)

    def delta(self) -> tuple[Any, dict | None] | None:
        """The statement's groups for a COPY logged as its views' deltas: a
        GroupTable holding their states, and a snapshot of their keys when
        its index is left empty (``GroupIndex.snapshot``'s form); None: no
        row reached the grouping.  When only the kernel's inputs are staged
        (a COPY's usual case) they run into a private native table, whose
        groups are exported without building a GroupTable index (that cost
        more than the kernel), and :meth:`apply` adds that table natively."""
        if self.native is not None or self.vector is not None or not self.pending:
            table = self.to_table()
            return (table, None) if len(table.index) or table.rows_in else None
        ran = self.sink.run_private(self.pending)
        self.pending, self.pending_bytes = [], 0
        if not (ran.touched and ran.ngroups):
            return None
        self.ran = ran
        table = self.pipe.agg.new_table()
        return table, ran.export_into(table)

    def to_table(self) -> Any:
        """The statement's batches run into one private GroupTable, which
        :meth:`apply` then merges (a COPY logged as its views' deltas:
        stream/view_deltas.py)."""
        table = self.pipe.agg.new_table()
        if self.native is not None and self.native.touched and self.native.ngroups:
            self.native.merge_into(table)
        self.native = None
        if self.pending:
            ran = self.sink.run_private(self.pending)
            self.pending, self.pending_bytes = [], 0
            if ran.touched and ran.ngroups:
                ran.merge_into(table)
        if self.vector is not None:
            table.merge(self.vector)
        self.vector = table
        return table

    def can_absorb(self, other: "CompiledStage | Any") -> bool:
        """Only prepared inputs are taken: a private table or vector-path
        state would be merged at apply anyway, at no saving."""
        return isinstance(other, CompiledStage) and other.sink is self.sink and self.native is None \
            and other.native is None and self.vector is None and other.vector is None \
            and self.ran is None and other.ran is None

    def absorb(self, other: "CompiledStage | Any") -> None:
        """Queue ``other``'s prepared inputs behind this stage's; :meth:`apply`
        runs consecutive ones of one kernel as one input (``merge_inputs``)."""
        self.pending.extend(other.pending)
        self.pending_bytes += other.pending_bytes
        if self.fbound is not None and other.fbound is not None:
            self.fbound += other.fbound
        other.pending, other.pending_bytes = [], 0

    def nbytes(self) -> int:
        n = self.pending_bytes + (self.native.nbytes() if self.native is not None else 0)
        return n + (self.vector.nbytes() if self.vector is not None else 0)


def _input_bytes(p: KernelInputs) -> int:
    arrays = list(p.cols) + [m for m in p.nulls if m is not None] + list(p.keep)
    return sum(a.nbytes for a in arrays)


def merge_inputs(pending: list[tuple[KernelInputs, Any]]) -> list[tuple[KernelInputs, Any]]:
    """``pending`` with each run of consecutive inputs for one kernel (same
    module, plan, parameter values and NULL-mask layout) concatenated into
    one, in order: many one-row statements applied together cost one kernel
    call and one argument setup instead of one each."""
    out: list[tuple[KernelInputs, Any]] = []
    run: list[KernelInputs] = []
    for p, m in pending:
        if run and not (m is out[-1][1] and _joinable(run[0], p)):
            out[-1] = (_concat(run), out[-1][1])
            run = []
        if not run:
            out.append((p, m))
        run.append(p)
    if run:
        out[-1] = (_concat(run), out[-1][1])
    return out


def _joinable(a: KernelInputs, b: KernelInputs) -> bool:
    """Same kernel arguments but for the column data: the plan, the parameter
    values (after the column, mask and premask addresses) and which columns
    carry NULL masks; both non-empty."""
    if a.empty or b.empty or a.plan is not b.plan or a.present != b.present or len(a.keep) != len(b.keep):
        return False
    if a.batch.n >= JOIN_MAX_ROWS or b.batch.n >= JOIN_MAX_ROWS:
        return False
    assert a.base is not None and b.base is not None
    skip = 2 * len(a.cols) + 1
    return a.base[skip:] == b.base[skip:]


def _concat(run: list[KernelInputs]) -> KernelInputs:
    """One input holding the rows of ``run`` (joinable inputs), in order."""
    if len(run) == 1:
        return run[0]
    first = run[0]
    p = KernelInputs()
    p.plan, p.empty, p.present = first.plan, False, first.present
    p.fbound = sum(q.fbound for q in run)          # what the rows together may add to float8 sums
    p.batch = Batch([], sum(q.batch.n for q in run))     # the kernel reads only the row count of it
    p.cols = [np.concatenate([q.cols[k] for q in run]) for k in range(len(first.cols))]
    p.nulls = [None if first.nulls[k] is None else np.concatenate([q.nulls[k] for q in run])
               for k in range(len(first.cols))]
    p.keep = [np.concatenate([q.keep[k] for q in run]) for k in range(len(first.keep))]
    assert first.base is not None
    c = len(first.cols)
    p.base = [d.ctypes.data for d in p.cols] + [0] * c + [p.keep[0].ctypes.data if p.keep else 0] + first.base[2 * c + 1:]
    return p
