"""A COPY into a stream logged as its views' deltas rather than its rows.

A stream keeps no rows: what must survive a crash is what its rows did to
the continuous views.  PipelineDB never logged a stream's rows, only the
view tables its combiners changed.  Here a COPY whose every view is a
plain grouping can be logged the same way: each view pipeline's stage (the
statement's rows run into a table private to the statement, which the
live insert merges anyway) is exported as a checkpoint exports a state,
and replay merges it.  For YSB's view a 100,000-row COPY logs a few
hundred groups instead of 2.2 MB of rows; the WAL write was a third of
the COPY's time.

What keeps this exact:
- only views whose every pipeline merges a private table as its apply are
  eligible (no sliding window, session window or ungrouped view, no view
  whose output another view reads, no transform, no listening scan):
  replaying the merge is then the same operation the live insert did;
- the record is chosen under the checkpoint lock, and only if the stream
  still feeds exactly the views that staged (else the rows are logged, as
  before, and replay runs them through whatever views there are then);
- a delta that would be larger than the rows is not used.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from splitstream.catalog.storage.wal_records import StreamDelta
from splitstream.catalog.storage.records import DATA_CORRUPTED
from splitstream.protocol.errors import PgError

from .continuous import ContinuousView, StreamPipeline, VectorStage, ViewStage, export_table, import_table, \
    pipeline_fingerprints

#: a delta is logged only while its tables hold less than this share of the rows' bytes
MAX_SHARE = 0.5


def eligible(views: list[ContinuousView], stream_oid: int, read_sources: set[int]) -> bool:
    """Whether a statement feeding ``views`` could be logged as their deltas."""
    for cv in views:
        if cv.rel.oid in read_sources:
            return False
        for pipe in cv.pipelines.get(stream_oid, []):
            if type(pipe) is not StreamPipeline or pipe.window is not None or pipe.session is not None:
                return False
    return True


def export(views: list[ContinuousView], staged: dict[int, ViewStage], stream_oid: int,
           row_bytes: int) -> list[dict] | None:
    """Each staged pipeline's private table, exported, named by its view and
    pipeline fingerprint; None if a stage cannot give one, or if the tables
    hold more than :data:`MAX_SHARE` of ``row_bytes`` (the rows are logged
    instead).  The stages then apply those same tables."""
    out: list[dict] = []
    held = 0
    for cv in views:
        st = staged.get(cv.rel.oid)
        if st is None:
            continue
        fps = {id(p): fp for fp, p in pipeline_fingerprints(cv)}
        for pipe, stage in st.parts.get(stream_oid, []):
            delta = getattr(stage, "delta", None)
            if delta is None or id(pipe) not in fps:
                return None
            made = delta()
            if made is None:
                continue
            table, keys = made
            saved = export_table(table, copy_values=False)
            if keys is not None:
                saved["index"] = keys
            held += _nbytes(saved)
            if held > MAX_SHARE * row_bytes:
                return None
            out.append({"view": cv.rel.oid, "pipeline": fps[id(pipe)], "table": saved})
    return out


def _nbytes(v: Any) -> int:
    """About what ``v`` (an exported table) takes in the WAL."""
    if isinstance(v, np.ndarray):
        return v.nbytes
    if isinstance(v, dict):
        return sum(_nbytes(x) for x in v.values())
    if isinstance(v, (list, tuple)):
        return sum(_nbytes(x) for x in v) if len(v) < 64 else 16 * len(v)
    return 8


def replay(manager: Any, rec: StreamDelta, where: str,
           broken: Callable[[Any, str, Exception], None]) -> dict[int, ViewStage]:
    """The stages that merge a logged delta into its views (applied by the
    caller, as a logged batch's are).  A delta naming a pipeline the view no
    longer has cannot be merged anywhere: that view is marked broken
    (``broken(rel, what, error)``); the others go on."""
    staged: dict[int, ViewStage] = {}
    for d in rec.views:
        cv = manager.views.get(d["view"])
        if cv is None:
            continue
        pipe = dict(pipeline_fingerprints(cv)).get(d["pipeline"])
        try:
            if pipe is None:
                raise PgError(DATA_CORRUPTED, f"the logged delta names pipeline {d['pipeline']!r}, which the view "
                                              f"no longer has")
            st = VectorStage(pipe)
            st.table = pipe.agg.new_table()
            import_table(st.table, d["table"])
        except Exception as e:  # noqa: BLE001 - one view's failure must not stop recovery
            broken(cv.rel, f"replaying the WAL record {where} failed", e)
            continue
        vs = staged.get(cv.rel.oid)
        if vs is None:
            vs = staged[cv.rel.oid] = ViewStage(cv)
        vs.parts.setdefault(rec.oid, []).append((pipe, st))
    return staged
