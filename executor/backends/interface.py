"""Execution backends behind one interface.

Operators and continuous views run their pipelines through a :class:`Backend`
chosen per execution (``SET executor_backend = auto|vector|llvm``, or the
``SPLITSTREAM_FORCE_BACKEND`` environment variable for whole test runs).  The
vectorised (numpy) backend is the operators' own code, so its methods here
decline and the caller runs the vector path.  A compiling backend
(``executor/backends/llvm``) installs itself with :func:`install` when imported; it
keeps whatever it compiled in its own structures keyed by the plan objects it
was given, never in attributes on them, so a planned tree stays immutable and
this module imports nothing of the backends (no operators <-> llvm cycle).
"""
from __future__ import annotations

import os
from typing import Any, Protocol

from splitstream.catalog.datatypes.vector import Batch

MODES = ("auto", "vector", "llvm")


class PipelineStage(Protocol):
    """One statement's batches into one stream pipeline, in two steps so that
    an insert reaches every view of a stream or none (issue 14):
    :meth:`add` does all the work that can fail (expressions, casts, joins),
    into state private to the statement; :meth:`apply`, run once the batch is
    logged, folds it into the pipeline and must not fail on user input."""

    def add(self, batch: Batch, ctx: Any) -> None:
        """Stage one (pruned) batch; raises the statement's error, if any."""

    def apply(self) -> None:
        """Fold what was staged into the pipeline (under the view's lock)."""

    def nbytes(self) -> int:
        """Memory the stage holds."""

    def can_absorb(self, other: Any) -> bool:
        """Whether :meth:`absorb` can take ``other`` (a later statement's
        stage of the same pipeline, queued behind this one)."""

    def absorb(self, other: Any) -> None:
        """Take ``other``'s staged input (:meth:`can_absorb` said yes), so
        that both are applied as one: queued one-row inserts then cost one
        kernel run, not one each."""


class Backend(Protocol):
    """What the executor asks of a backend.  ``pipe`` is a continuous view's
    stream pipeline (``scan``, ``ops``, ``agg``, ``local``, ``run_vector``),
    ``agg`` a GROUP BY operator; both are plan objects and must not be
    modified."""

    name: str

    def aggregate(self, agg: Any, ctx: Any) -> Any:
        """Run the input pipeline of ``agg`` into a finished table; None = the vector path."""

    def stream_stage(self, pipe: Any, ctx: Any) -> "PipelineStage | None":
        """A private stage for one statement's batches into ``pipe``; None =
        the caller stages on the vector path."""

    def stream_flush(self, pipe: Any, table: Any) -> None:
        """Fold state the backend holds for ``pipe`` into ``table``."""

    def native_bytes(self, pipe: Any, holding: bool) -> int:
        """Bytes of the state the backend holds for ``pipe`` (with groups, or emptied and kept)."""

    def pipeline_tags(self, plan: Any, pipes: list, run: Any, analyze: bool, requested: str) -> list[str]:
        """One EXPLAIN bracket text per pipeline of ``plan``."""

    def stream_tag(self, pipe: Any) -> str:
        """The EXPLAIN backend line of a continuous view's stream pipeline."""


class VectorBackend:
    """The numpy operators themselves: every hook declines."""

    name = "vector"

    def aggregate(self, agg: Any, ctx: Any) -> Any:
        return None

    def stream_stage(self, pipe: Any, ctx: Any) -> "PipelineStage | None":
        return None

    def stream_flush(self, pipe: Any, table: Any) -> None:
        return None

    def native_bytes(self, pipe: Any, holding: bool) -> int:
        return 0

    def pipeline_tags(self, plan: Any, pipes: list, run: Any, analyze: bool, requested: str) -> list[str]:
        return ["vector"] * len(pipes)

    def stream_tag(self, pipe: Any) -> str:
        return "vector"


VECTOR = VectorBackend()
_compiling: list[Backend] = []      # at most one: the backend holding compiled state


def install(backend: Backend) -> None:
    """Called by a compiling backend's module on import."""
    _compiling[:] = [backend]


def native() -> Backend:
    """The backend that may hold state for a pipeline (flushes, sizes and
    EXPLAIN ask it whatever the current setting: batches may have run on it
    under an earlier one)."""
    return _compiling[0] if _compiling else VECTOR


def _forced() -> str:
    forced = os.environ.get("SPLITSTREAM_FORCE_BACKEND", "").strip().lower()
    return forced if forced in MODES else ""


_FORCED = _forced()


def mode(ctx: Any) -> str:
    """The session's executor_backend, unless SPLITSTREAM_FORCE_BACKEND overrides it
    (to run a whole test suite on one backend: SPLITSTREAM_FORCE_BACKEND=llvm make test)."""
    return _FORCED or ctx.setting("executor_backend", "auto")


def choose(ctx: Any) -> Backend:
    """The backend an execution runs on: vector when asked for, else the
    compiling backend (whose ``auto`` mode itself starts on the vector path
    and switches once compiling pays)."""
    return VECTOR if mode(ctx) == "vector" else native()


# Compiled sampling kernels (issue 18): the LLVM backend installs them on
# import; ``execution.reservoir`` falls back to the same algorithm in Python.
_sampling: dict[str, Any] = {}


def install_sampling_kernel(name: str, fn: Any) -> None:
    _sampling[name] = fn


def sampling_kernel(name: str) -> Any:
    return _sampling.get(name)
