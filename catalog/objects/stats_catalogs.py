"""pg_stats and pg_statistic (issue 18, item 2), with PostgreSQL 15's columns.

Why a provider hook: the statistics are computed by the executor from its
table samples (``executor/commands/table_stats.py``), which this layer may
not import; the executor installs ``set_stats_provider`` and these views
only lay the values out as PostgreSQL does.  ``anyarray`` columns
(most_common_vals, histogram_bounds, stavalues*) are sent as type 2277 in
array text form ('{1,2,3}'), as PostgreSQL sends them.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from splitstream.protocol import oids as type_oids
from splitstream.protocol.types import encode_text

from ..datatypes import sqltypes
from . import acl
from .system_catalogs import table

ANYARRAY = 2277
FLOAT4ARR = type_oids.ARRAY_OF[type_oids.FLOAT4]
STATISTIC_KIND_MCV, STATISTIC_KIND_HISTOGRAM, STATISTIC_KIND_CORRELATION = 1, 2, 3
DEFAULT_COLLATION = 100

#: (=, <) operator OIDs of PostgreSQL 15's default btree opclasses
OPERATORS = {
    type_oids.BOOL: (91, 58), type_oids.INT2: (94, 95), type_oids.INT4: (96, 97), type_oids.INT8: (410, 412),
    type_oids.FLOAT4: (620, 622), type_oids.FLOAT8: (670, 672), type_oids.NUMERIC: (1752, 1754),
    type_oids.TEXT: (98, 664), type_oids.VARCHAR: (98, 664), type_oids.BPCHAR: (1054, 1058),
    type_oids.DATE: (1093, 1095), type_oids.TIMESTAMP: (2060, 2062), type_oids.TIMESTAMPTZ: (1320, 1322),
    type_oids.TIME: (1108, 1110), type_oids.INTERVAL: (1330, 1332), type_oids.UUID: (2972, 2974),
    type_oids.OID: (607, 609), type_oids.NAME: (93, 660),
}

_provider: list[Callable[[Any, Any], Iterable[tuple[Any, int, Any, Any]]]] = []


def set_stats_provider(fn: Callable[[Any, Any], Iterable[tuple[Any, int, Any, Any]]]) -> None:
    """``fn(state, ctx)`` yields (relation, attnum, column, stats) for every analysed column."""
    _provider[:] = [fn]


def _columns(state, ctx):
    return _provider[0](state, ctx) if _provider else ()


def array_text(values: list[Any], elem_oid: int, tz: str = "UTC") -> str | None:
    """``values`` as PostgreSQL prints an array of ``elem_oid``."""
    if not values:
        return None
    arr = type_oids.ARRAY_OF.get(elem_oid, type_oids.ARRAY_OF[type_oids.TEXT])
    if arr == type_oids.ARRAY_OF[type_oids.TEXT] and elem_oid != type_oids.TEXT:
        values = [encode_text(elem_oid, v, tz=tz).decode() for v in values]
    return encode_text(arr, values, tz=tz).decode()


@table("pg_catalog", "pg_stats", [
    ("schemaname", type_oids.NAME), ("tablename", type_oids.NAME), ("attname", type_oids.NAME),
    ("inherited", type_oids.BOOL), ("null_frac", type_oids.FLOAT4), ("avg_width", type_oids.INT4),
    ("n_distinct", type_oids.FLOAT4), ("most_common_vals", ANYARRAY), ("most_common_freqs", FLOAT4ARR),
    ("histogram_bounds", ANYARRAY), ("correlation", type_oids.FLOAT4), ("most_common_elems", ANYARRAY),
    ("most_common_elem_freqs", FLOAT4ARR), ("elem_count_histogram", FLOAT4ARR),
])
def _pg_stats(state, ctx):
    for rel, _attnum, col, st in _columns(state, ctx):
        if not _may_select(state, ctx, rel, col):
            continue
        yield (rel.schema, rel.name, col.name, False, st.null_frac, st.avg_width, st.n_distinct,
               array_text(st.mcv, col.type_oid), st.mcv_freqs or None, array_text(st.histogram, col.type_oid),
               st.correlation, None, None, None)


def _may_select(state, ctx, rel, col) -> bool:
    """PostgreSQL's pg_stats shows a column to whom has_column_privilege(.., 'select')."""
    me = acl.current_role(state, ctx.session)
    if acl.has_owner_rights(state, me, rel.owner):
        return True
    roles = acl.privileged_roles(state.roles, me.oid)
    return "r" in acl.aclmask(acl.relation_acl(rel), roles)[0] or "r" in acl.aclmask(col.acl or (), roles)[0]


_SLOT_COLUMNS = [(f"{k}{i}", t) for k, t in (("stakind", type_oids.INT2), ("staop", type_oids.OID),
                                              ("stacoll", type_oids.OID), ("stanumbers", FLOAT4ARR),
                                              ("stavalues", ANYARRAY)) for i in range(1, 6)]


@table("pg_catalog", "pg_statistic", [
    ("starelid", type_oids.OID), ("staattnum", type_oids.INT2), ("stainherit", type_oids.BOOL),
    ("stanullfrac", type_oids.FLOAT4), ("stawidth", type_oids.INT4), ("stadistinct", type_oids.FLOAT4),
    *_SLOT_COLUMNS,
])
def _pg_statistic(state, ctx):
    for rel, attnum, col, st in _columns(state, ctx):
        slots = _slots(col.type_oid, st)
        slots += [(0, 0, 0, None, None)] * (5 - len(slots))
        by_field = [list(x) for x in zip(*slots)]       # kinds, ops, colls, numbers, values
        yield (rel.oid, attnum, False, st.null_frac, st.avg_width, st.n_distinct, *[v for f in by_field for v in f])


def _slots(oid: int, st) -> list[tuple[int, int, int, Any, Any]]:
    """(kind, operator, collation, numbers, values) per filled slot, in PostgreSQL's order."""
    eq, lt = OPERATORS.get(oid, (0, 0))
    coll = DEFAULT_COLLATION if sqltypes.is_string(oid) else 0
    out = []
    if st.mcv:
        out.append((STATISTIC_KIND_MCV, eq, coll, st.mcv_freqs, array_text(st.mcv, oid)))
    if st.histogram:
        out.append((STATISTIC_KIND_HISTOGRAM, lt, coll, None, array_text(st.histogram, oid)))
    if st.correlation is not None:
        out.append((STATISTIC_KIND_CORRELATION, lt, coll, [st.correlation], None))
    return out



