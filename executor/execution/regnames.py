"""Output of the reg* types (regclass, regtype, ...): OIDs printed as names,
resolved against the catalog, as PostgreSQL's regclassout & co. do."""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.catalog.objects import function_text, system_catalogs
from splitstream.protocol import oids as type_oids

REG_TYPES = (type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGNAMESPACE, type_oids.REGROLE, type_oids.REGPROC)
#: the reg* types and their array types: what a result prints as names
REG_OUTPUT = frozenset(REG_TYPES) | {type_oids.ARRAY_OF[t] for t in REG_TYPES if t in type_oids.ARRAY_OF}


def reg_names(col: Col, ctx) -> Col:
    """regclass & co. (and arrays of them) print as names: resolve OIDs
    against the catalog."""
    st = ctx.state
    oid = type_oids.ELEMENT_OF.get(col.oid, col.oid)

    def named(v):
        if isinstance(v, list):
            return [named(x) for x in v]
        return None if v is None else _name(st, oid, int(v))

    arr = np.empty(len(col.data), dtype=object)
    arr[:] = [named(v) for v in col.to_pylist()]
    return Col(arr, col.nulls, col.oid)


def _name(st, oid: int, v: int) -> str:
    """The name a reg* value of type ``oid`` prints as (its number when no
    object has it, ``-`` for 0)."""
    if v == 0:
        return "-"
    if oid == type_oids.REGCLASS and v in st.rels:
        r = st.rels[v]
        return r.name if r.schema in ("public", "pg_catalog") else f"{r.schema}.{r.name}"
    if oid == type_oids.REGCLASS:
        vt = system_catalogs.relation_by_oid(v)
        return str(v) if vt is None else vt.name if vt.schema == "pg_catalog" else f"{vt.schema}.{vt.name}"
    if oid == type_oids.REGTYPE:
        return sqltypes.format_type(v) if v in sqltypes.TYPE_NAMES else str(v)
    if oid == type_oids.REGNAMESPACE:
        return next((s.name for s in st.schemas.values() if s.oid == v), str(v))
    if oid == type_oids.REGROLE:
        return next((r.name for r in st.roles.values() if r.oid == v), str(v))
    if oid == type_oids.REGPROC:
        fn = function_text.user_function(st, v)
        return fn.name if fn is not None else (system_catalogs.proc_name(v) or str(v))
    return str(v)
