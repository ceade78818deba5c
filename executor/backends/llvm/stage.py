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

from splitstream.catalog.datatypes.vector import Batch

from ...execution.aggregates import check_no_overflow
from .. import interface as backends
from .runtime import CompiledSink, KernelInputs, count_llvm, count_vector
from .table import NativeTable, float_room

#: prepared kernel inputs one statement may hold per pipeline before they
#: are folded into a private table
STAGE_BYTES = 64 << 20


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
        for p, m in self.pending:
            sink.run(p, m)
        self.pending = []
        if self.native is not None and self.native.touched and self.native.ngroups:
            self.native.merge_into(local)
        if self.vector is not None:
            local.merge(self.vector)

    def nbytes(self) -> int:
        n = self.pending_bytes + (self.native.nbytes() if self.native is not None else 0)
        return n + (self.vector.nbytes() if self.vector is not None else 0)


def _input_bytes(p: KernelInputs) -> int:
    arrays = list(p.cols) + [m for m in p.nulls if m is not None] + list(p.keep)
    return sum(a.nbytes for a in arrays)
