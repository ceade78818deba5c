"""``pipelinedb.stream_targets``: while a session sets it to a list of
continuous views and transforms, its INSERTs and COPYs into streams feed
only those (PipelineDB's ``stream_targets``, its regression test
``stream_targets.sql``); empty (the default, or RESET) feeds every view.

What PipelineDB does (its ``GetLocalStreamReaders`` in ``pipeline_stream.c``:
the list split by SplitIdentifierString when an insert begins, each name
looked up, the stream's active readers intersected with them), and so
what this does:

* The names are read as ``search_path`` reads its list (SplitIdentifierString:
  commas outside double quotes, unquoted names folded to lower case,
  ``schema.name`` allowed), when a statement runs, not at SET: a prepared
  INSERT follows the value in force when it is executed, and SET LOCAL
  ends with its transaction.
* A name that is no relation fails the statement with 42P01; a relation that
  is neither a continuous view nor a transform with 42809 (PipelineDB raises
  an internal error, "continuous view ... does not exist", for both).
  Nothing is logged then.  A malformed list is refused at SET (22023), as
  PostgreSQL's own list settings are; PipelineDB refused it at the insert.
* A target that does not read the stream inserted into is simply not fed by
  it (PipelineDB intersects the targets with the stream's readers); an
  INSERT whose targets read none of the stream's views feeds nothing, and is
  still logged (its rows are in the WAL, as PipelineDB's stream rows are
  sent, and read by nobody).
* Only the statement's own rows are targeted: a view reading a targeted
  view's ``output_of`` stream, or a transform's output, gets their changes
  as always (PipelineDB's output streams are written by its workers, outside
  the session).

Why durable: the targets are part of the stream record in the WAL
(``StreamBatch.targets``, ``StreamPart.targets``: view oids; records
written before the field read as "all views"), so a replay after a crash
feeds exactly the views the live insert fed.  Rows sent to chosen views
are held for a backfill (``backfill.RecentRows``) with their targets, so a
view created later never backfills them.
"""
from __future__ import annotations

from splitstream.protocol.errors import UNDEFINED_TABLE, WRONG_OBJECT_TYPE, PgError

from ..settings import pipelinedb as pipelinedb_gucs
from ..sql.planner import Planner
from ..sql.sqltext import qualified_name_parts
from . import output_streams

#: frozen set of view/transform oids, or None: every view of the stream
Targets = frozenset[int] | None

_HINT = ("pipelinedb.stream_targets lists the continuous views and transforms (comma-separated, as search_path) "
         "that this session's INSERTs and COPYs into streams feed; RESET pipelinedb.stream_targets feeds them all.")


def requested(settings: dict | None) -> str:
    return (settings or {}).get(pipelinedb_gucs.STREAM_TARGETS, "").strip()


def resolve(ctx) -> Targets:
    """The oids of the session's stream targets, looked up now (the
    statement's catalog and search_path), or None when none are set."""
    session = ctx.session
    value = requested(getattr(session, "settings", None))
    if not value:
        return None
    pl = Planner(ctx.engine, ctx.state, session=session)
    oids = set()
    for item in pipelinedb_gucs.split_targets(value):
        parts = qualified_name_parts(item)
        rel = pl.lookup_relation(parts[-1], parts[0] if len(parts) > 1 else None)
        shown = ".".join(parts)
        if rel is None:
            raise PgError(UNDEFINED_TABLE, f'relation "{shown}" does not exist', hint=_HINT)
        if rel.kind != "v" or not (rel.continuous or output_streams.is_transform(rel)):
            raise PgError(WRONG_OBJECT_TYPE, f'"{shown}" is not a continuous view or transform', hint=_HINT)
        oids.add(rel.oid)
    return frozenset(oids)


def feeds(targets: Targets, oid: int) -> bool:
    """Does a batch sent to ``targets`` reach view or transform ``oid`` (directly from its stream)?"""
    return targets is None or oid in targets


def logged(targets: Targets) -> list[int] | None:
    """As the WAL keeps it: sorted oids, or None (every view)."""
    return None if targets is None else sorted(targets)


def from_log(value) -> Targets:
    return None if value is None else frozenset(int(v) for v in value)
