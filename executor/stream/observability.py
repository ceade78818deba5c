"""splitstream.streams and splitstream.views: what streams and continuous
views hold right now.  Registered into the catalog's system relations from
here, because the numbers live in the executor's runtime objects."""
from __future__ import annotations

import datetime as dt

from catalog import types as T
from catalog.system import table
from protocol import oids as O


@table("splitstream", "streams", [
    ("name", O.TEXT), ("schema", O.TEXT), ("server", O.TEXT), ("rows_accepted", O.INT8), ("rate_per_s", O.FLOAT8),
    ("capacity", O.INT8), ("fill", O.INT8), ("overwritten", O.INT8), ("bytes_held", O.INT8), ("listeners", O.INT4),
    ("views", O.INT4), ("row_width", O.INT4), ("string_bytes", O.INT8), ("null_flag_bytes", O.INT8),
])
def _streams(state, ctx):
    """``bytes_held`` = ``capacity`` x ``row_width`` + ``string_bytes`` + ``null_flag_bytes``
    once the ring exists (it is allocated when a scan first listens), else 0.
    ``row_width`` is the declared slot width (a string slot: its offset and
    length); NULL flags take a byte per slot of a column only once it held a NULL."""
    mgr = ctx.engine.streams
    for rel in state.rels.values():
        if rel.kind != "f":
            continue
        rt = mgr.runtimes.get(rel.oid)
        ring = rt.ring if rt is not None else None
        fill = min(ring.visible_end, ring.capacity) if ring is not None else 0
        has = ring is not None
        yield (rel.name, rel.schema, rel.server, rt.accepted if rt else 0, rt.rate() if rt else 0.0, rel.capacity,
               fill, ring.overwritten if has else 0, ring.memory_bytes() if has else 0,
               rt.listeners if rt else 0, len(mgr._views_on(rel.oid)),
               ring.row_width() if has else _declared_width(rel), ring.string_bytes() if has else 0,
               ring.null_flag_bytes() if has else 0)


def _declared_width(rel) -> int:
    width = 0
    for c in rel.live_columns:
        d = T.dtype_of(c.type_oid)
        width += 12 if d.kind == "O" else d.itemsize
    return width


@table("splitstream", "views", [
    ("name", O.TEXT), ("schema", O.TEXT), ("streams", O.TEXT), ("groups", O.INT8), ("state_bytes", O.INT8),
    ("bytes_per_group", O.FLOAT8), ("rows_in", O.INT8), ("version", O.INT8), ("queued_batches", O.INT4),
    ("static_tables", O.TEXT), ("upper_tables", O.TEXT), ("refreshes", O.INT8), ("last_refresh", O.TIMESTAMPTZ),
    ("buffer_bytes", O.INT8),
])
def _views(state, ctx):
    mgr = ctx.engine.streams
    for rel in state.rels.values():
        if rel.kind != "v" or not rel.continuous:
            continue
        cv = mgr.views.get(rel.oid)
        if cv is None:
            yield (rel.name, rel.schema, None, 0, 0, None, 0, 0, 0, None, None, 0, None, 0)
            continue
        streams = ",".join(state.rels[o].name for o in cv.pipelines if o in state.rels)
        groups = cv.groups()
        nbytes = cv.state_bytes()
        rows_in = sum(p.global_.rows_in + p.local.rows_in for ps in cv.pipelines.values() for p in ps)
        names = lambda oids: ",".join(state.rels[o].name for o in oids if o in state.rels) or None
        yield (rel.name, rel.schema, streams, groups, nbytes, (nbytes / groups) if groups else None, rows_in,
               cv.version, len(cv.queue), names(sorted(cv.static_tables)), names(cv.upper_tables), cv.refreshes,
               _utc(cv.last_refresh), cv.buffer_bytes())


def _utc(t: float | None):
    return None if t is None else dt.datetime.fromtimestamp(t, dt.timezone.utc)
