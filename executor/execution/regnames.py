"""Output of the reg* types (regclass, regtype, ...): OIDs printed as names,
resolved against the catalog, as PostgreSQL's regclassout & co. do."""
from __future__ import annotations

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Col
from splitstream.catalog.objects import function_text, system_catalogs
from splitstream.protocol import oids as type_oids

REG_TYPES = (type_oids.REGCLASS, type_oids.REGTYPE, type_oids.REGNAMESPACE, type_oids.REGROLE, type_oids.REGPROC)


def reg_names(col: Col, ctx) -> Col:
    """regclass & co. print as names: resolve OIDs against the catalog."""
    st = ctx.state
    out: list[str | None] = []
    for v in col.to_pylist():
        if v is None:
            out.append(None)
            continue
        v = int(v)
        name = str(v)
        if col.oid == type_oids.REGCLASS and v in st.rels:
            r = st.rels[v]
            name = r.name if r.schema in ("public", "pg_catalog") else f"{r.schema}.{r.name}"
        elif col.oid == type_oids.REGTYPE:
            name = sqltypes.format_type(v) if v in sqltypes.TYPE_NAMES else str(v)
        elif col.oid == type_oids.REGNAMESPACE:
            name = next((s.name for s in st.schemas.values() if s.oid == v), str(v))
        elif col.oid == type_oids.REGROLE:
            name = next((r.name for r in st.roles.values() if r.oid == v), str(v))
        elif col.oid == type_oids.REGPROC:
            fn = function_text.user_function(st, v) if v else None
            name = "-" if v == 0 else (fn.name if fn is not None else (system_catalogs.proc_name(v) or str(v)))
        out.append(name)
    arr = np.empty(len(out), dtype=object)
    arr[:] = out
    return Col(arr, col.nulls, col.oid)
