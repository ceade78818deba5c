"""splitstream.streams and splitstream.views: what streams and continuous
views hold right now.  Registered into the catalog's system relations from
here, because the numbers live in the executor's runtime objects."""
from __future__ import annotations

import datetime as dt

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.objects.system_catalogs import table
from splitstream.protocol import oids as type_oids

from ..execution import privileges
from .retention import pane_starts


def _visible(state, ctx, kind: str, continuous: bool = False) -> list:
    """The streams or continuous views the current role may see: those it
    holds some privilege on (a superuser sees all)."""
    me = privileges.current_role(state, ctx.session)
    return [rel for rel in state.rels.values()
            if rel.kind == kind and (not continuous or rel.continuous)
            and (me.superuser or privileges.held(state, me, privileges.relation_acl(rel)))]


@table("splitstream", "streams", [
    ("name", type_oids.TEXT), ("schema", type_oids.TEXT), ("server", type_oids.TEXT), ("rows_accepted", type_oids.INT8), ("rate_per_s", type_oids.FLOAT8),
    ("capacity", type_oids.INT8), ("fill", type_oids.INT8), ("overwritten", type_oids.INT8), ("bytes_held", type_oids.INT8), ("listeners", type_oids.INT4),
    ("views", type_oids.INT4), ("row_width", type_oids.INT4), ("string_bytes", type_oids.INT8), ("null_flag_bytes", type_oids.INT8),
    ("late_rows", type_oids.INT8), ("watermark", type_oids.TIMESTAMPTZ),
])
def _streams(state, ctx):
    """``bytes_held`` = ``capacity`` x ``row_width`` + ``string_bytes`` + ``null_flag_bytes``
    once the ring exists (it is allocated when a scan first listens), else 0.
    ``row_width`` is the declared slot width (a string slot: its offset and
    length); NULL flags take a byte per slot of a column only once it held a NULL."""
    mgr = ctx.engine.streams
    for rel in _visible(state, ctx, "f"):
        rt = mgr.runtimes.get(rel.oid)
        ring = rt.ring if rt is not None else None
        fill = min(ring.visible_end, ring.capacity) if ring is not None else 0
        has = ring is not None
        yield (rel.name, rel.schema, rel.server, rt.accepted if rt else 0, rt.rate() if rt else 0.0, rel.capacity,
               fill, ring.overwritten if has else 0, ring.memory_bytes() if has else 0,
               rt.listeners if rt else 0, len(mgr._views_on(rel.oid)),
               ring.row_width() if has else _declared_width(rel), ring.string_bytes() if has else 0,
               ring.null_flag_bytes() if has else 0, *_watermark(mgr, rel))


def _watermark(mgr, rel) -> tuple:
    """(late_rows, watermark) of a stream: rows dropped as later than its
    watermark, and the watermark itself (NULL without one or before any row)."""
    wm = mgr.watermark(rel)
    if wm is None:
        return 0, None
    cur = wm.current()
    return wm.late_rows, None if cur is None else _EPOCH + dt.timedelta(microseconds=cur)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _declared_width(rel) -> int:
    width = 0
    for c in rel.live_columns:
        d = sqltypes.dtype_of(c.type_oid)
        width += 12 if d.kind == "O" else d.itemsize
    return width


@table("splitstream", "views", [
    ("name", type_oids.TEXT), ("schema", type_oids.TEXT), ("streams", type_oids.TEXT), ("groups", type_oids.INT8), ("state_bytes", type_oids.INT8),
    ("bytes_per_group", type_oids.FLOAT8), ("rows_in", type_oids.INT8), ("version", type_oids.INT8), ("queued_batches", type_oids.INT4),
    ("static_tables", type_oids.TEXT), ("upper_tables", type_oids.TEXT), ("refreshes", type_oids.INT8), ("last_refresh", type_oids.TIMESTAMPTZ),
    ("buffer_bytes", type_oids.INT8), ("status", type_oids.TEXT), ("broken_reason", type_oids.TEXT),
    ("window", type_oids.TEXT), ("panes", type_oids.INT8), ("oldest_pane", type_oids.TIMESTAMPTZ),
    ("newest_pane", type_oids.TIMESTAMPTZ), ("retention", type_oids.TEXT), ("late_rows", type_oids.INT8),
    ("backfilled_rows", type_oids.INT8),
])
def _views(state, ctx):
    """``status``: 'active', 'broken' (its reads fail until it is dropped:
    ``broken_reason`` says why) or 'pending' (not yet maintained).
    ``window``: a sliding window's length and step, or a TTL; ``panes``:
    the panes held, ``oldest_pane``/``newest_pane`` when they begin (NULL
    for views without a window).  ``backfilled_rows``: the rows of the stream's
    ring a ``WITH (backfill = true)`` view took when it was created."""
    mgr = ctx.engine.streams
    for rel in _visible(state, ctx, "v", continuous=True):
        cv = mgr.views.get(rel.oid)
        if cv is None:
            broken = mgr.broken.get(rel.oid)
            yield (rel.name, rel.schema, None, 0, 0, None, 0, 0, 0, None, None, 0, None, 0,
                   "pending" if broken is None else "broken", None if broken is None else broken[0],
                   None, 0, None, None, None, 0, 0)
            continue
        winfo = cv.window_info()        # first: it reaps what time has expired
        streams = ",".join(state.rels[o].name for o in cv.pipelines if o in state.rels)
        groups = cv.groups()
        nbytes = cv.state_bytes()
        rows_in = sum(p.rows_in() for ps in cv.pipelines.values() for p in ps)
        def names(oids):
            return ",".join(state.rels[o].name for o in oids if o in state.rels) or None
        yield (rel.name, rel.schema, streams, groups, nbytes, (nbytes / groups) if groups else None, rows_in,
               cv.version, len(cv.queue), names(sorted(cv.static_tables)), names(cv.upper_tables), cv.refreshes,
               _utc(cv.last_refresh), cv.buffer_bytes(), "active", None, *_window_facts(mgr, state, cv, winfo),
               cv.backfilled)


def _window_facts(mgr, state, cv, sliding: tuple) -> tuple:
    """(window, panes, oldest_pane, newest_pane, retention, late_rows) of a
    windowed view: its window, the panes its global state holds (merged at
    its last read or reap) with the starts of the oldest and newest, its
    retention option, and the late rows of the streams it reads.
    ``sliding``: the first four for an sw or TTL view (sliding.py)."""
    late = sum(_watermark(mgr, state.rels[o])[0] for o in cv.pipelines if o in state.rels)
    if sliding[0] is not None:
        return (*sliding, dict(cv.rel.options).get("retention"), late)
    panes = cv.windows()
    if not panes:
        return None, 0, None, None, None, late
    first = panes[0][1]
    held = np.concatenate([pane_starts(p.global_, k) for p, k in panes])
    held = held[held != np.iinfo(np.int64).max]
    if first.gap:
        window = f"SESSION({_seconds(first.gap)})"
    elif first.size == first.slide:
        window = f"TUMBLE({_seconds(first.size)})"
    else:
        window = f"HOP({_seconds(first.slide)}, {_seconds(first.size)})"
    oldest = _EPOCH + dt.timedelta(microseconds=int(held.min())) if len(held) else None
    newest = _EPOCH + dt.timedelta(microseconds=int(held.max())) if len(held) else None
    distinct = len(np.unique(held))
    return window, distinct, oldest, newest, dict(cv.rel.options).get("retention"), late


def _seconds(us: int) -> str:
    return f"{us / 1_000_000:g} seconds"


def _utc(t: float | None):
    return None if t is None else dt.datetime.fromtimestamp(t, dt.timezone.utc)
