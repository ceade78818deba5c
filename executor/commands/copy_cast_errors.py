"""Where a COPY's cast to a column failed, for PostgreSQL's CONTEXT.

COPY decodes each value with its column's base type, and the assignment
cast (varchar(n), char(n), numeric(p,s), a domain-free type change) runs
on the whole batch afterwards.  PostgreSQL applies those in the column's
input function, so its error says ``COPY t, line N, column c: "value"``;
this finds that row and column again, only once an error has happened.
"""
from __future__ import annotations

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol.copy import printout
from splitstream.protocol.errors import PgError
from splitstream.protocol.types import encode_text


def _casts(col: Col, target, rows: int) -> bool:
    part = Col(col.data[:rows], None if col.nulls is None else col.nulls[:rows], col.oid)
    try:
        sqltypes.cast_col(part, target.type_oid, target.typmod, explicit=False)
    except PgError:
        return False
    return True


def locate_cast_error(err: PgError, targets, src: Batch, first_line: int) -> PgError:
    """Add the line, column and value of the first value of ``src`` whose
    cast fails to ``err`` (unchanged if no single cast fails)."""
    if err.extra.get("line"):
        return err
    for col, target in zip(src.cols, targets):
        if (col.oid == target.type_oid and target.typmod < 0) or _casts(col, target, src.n):
            continue
        good, bad = 0, src.n            # the first `good` rows cast; the first `bad` do not
        while bad - good > 1:
            mid = (good + bad) // 2
            good, bad = (mid, bad) if _casts(col, target, mid) else (good, mid)
        row = bad - 1
        value = Col(col.data[row:row + 1], None if col.nulls is None else col.nulls[row:row + 1], col.oid).to_pylist()[0]
        err.extra["line"] = first_line + row
        err.extra["column"] = target.name
        if value is not None:
            err.extra["value"] = printout(encode_text(col.oid, value).decode())
        return err
    return err
