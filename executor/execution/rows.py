"""Row values at run time: ``ROW(a, b)`` / ``(a, b)`` as a column of
:class:`~splitstream.protocol.composite.Record` values (an object column of
type record), and ``(a, b) IN (SELECT x, y ...)``.

Row comparisons between constructors never reach here: the binder expands
them field by field into ordinary comparisons (as PostgreSQL's parser does,
make_row_comparison_op), so they run on either backend.  Other row values
compare as whole records (record_eq, record_lt, ...: :func:`record_compare`).  A record column is
built only where a query asks for a row value, never on a scan or ingest
path.
"""
from __future__ import annotations

import operator

import numpy as np

from splitstream.catalog.datatypes import sqltypes
from splitstream.catalog.datatypes.vector import Batch, Col
from splitstream.protocol import oids as type_oids
from splitstream.protocol.composite import Record
from splitstream.protocol.errors import DATATYPE_MISMATCH, UNDEFINED_FUNCTION, PgError

from . import expr


class RowCtor(expr.Func):
    """``ROW(f1, f2, ...)``: never NULL, whatever its fields; ``names``: a
    whole-row reference's column names (to_json's keys)."""

    def __init__(self, fields: list[expr.Expr], names: tuple[str, ...] | None = None) -> None:
        def build(cols: list[Col], n: int, ctx) -> Col:
            oids = [c.oid for c in cols]
            data = np.empty(n, dtype=object)
            rows = zip(*(c.to_pylist() for c in cols)) if cols else [()] * n
            for i, values in enumerate(rows):
                data[i] = Record(values, oids, names)
            return Col(data, None, type_oids.RECORD)

        super().__init__("row", build, fields, type_oids.RECORD)

    def __repr__(self) -> str:
        return f"ROW({', '.join(map(repr, self.args))})"


def _equal_fields(fields: list[Col], values: tuple, oids: list[int], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every outer row against one subquery row: (no field pair unequal,
    some field pair NULL), the two halves of the row ``=``'s three values."""
    maybe = np.ones(n, bool)
    unknown = np.zeros(n, bool)
    for col, v, oid in zip(fields, values, oids):
        cc = expr.compare_cols("=", col, Col.const(v, oid, n))
        nulls = cc.null_mask()
        maybe &= cc.data | nulls
        unknown |= nulls
    return maybe, unknown


def row_in(fields: list[Col], res: Batch, negate: bool) -> Col:
    """``(a, b) [NOT] IN (SELECT x, y ...)``: true where some subquery row
    equals the row in every field, NULL where none does but some might (a
    NULL field and no unequal one), else false, as PostgreSQL's ANY over a
    row comparison answers."""
    n = len(fields[0]) if fields else 0
    hit = np.zeros(n, bool)
    unknown = np.zeros(n, bool)
    oids = [c.oid for c in res.cols]
    for values in zip(*(c.to_pylist() for c in res.cols)):
        maybe, null = _equal_fields(fields, values, oids, n)
        hit |= maybe & ~null
        unknown |= maybe & null
    unknown &= ~hit
    out = ~hit if negate else hit
    return Col(out & ~unknown, unknown, type_oids.BOOL)


class RowInSubquery(expr.SubqueryExpr):
    """``(a, b) [NOT] IN (SELECT x, y ...)``: an IN subquery whose argument
    is a row constructor, compared with the subquery's rows field by field."""

    def __init__(self, plan, correlated: bool, row: RowCtor, negate: bool = False) -> None:
        super().__init__("in", plan, type_oids.BOOL, correlated, arg=row, op="=", negate=negate)

    def _eval_with(self, res: Batch, batch: Batch, ctx) -> Col:
        assert isinstance(self.arg, RowCtor)
        fields = [f.eval(batch, ctx) for f in self.arg.args]
        return row_in(fields, res, self.negate)


_OPS = {"=": operator.eq, "<>": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
def _check_fields(x: Record, y: Record) -> None:
    """record_cmp's errors: unequal column counts, column types not the
    same (42804: record_cmp takes no cross-type operator), unknown ones."""
    if len(x.oids) != len(y.oids):
        raise PgError(DATATYPE_MISMATCH, "cannot compare record types with different numbers of columns")
    for i, (a, b) in enumerate(zip(x.oids, y.oids)):
        if a == b == type_oids.UNKNOWN:
            raise PgError(UNDEFINED_FUNCTION, "could not identify an equality operator for type unknown")
        if a != b:
            raise PgError(DATATYPE_MISMATCH, f"cannot compare dissimilar column types {sqltypes.format_type(a)} and "
                                             f"{sqltypes.format_type(b)} at record column {i + 1}")


def record_compare(op: str, left: expr.Expr, right: expr.Expr) -> expr.Func:
    """``r1 op r2`` of two row values that are not both constructors (a
    whole-row reference, a row inside a row): PostgreSQL's record_eq /
    record_lt ... , field by field with NULL fields equal to each other
    and above every value (record_cmp), NULL only when a row is NULL.
    ``op`` may also be ``IS DISTINCT FROM`` / ``IS NOT DISTINCT FROM``."""
    distinct = op in ("IS DISTINCT FROM", "IS NOT DISTINCT FROM")
    test = operator.ne if distinct else _OPS[op]
    negate = op == "IS NOT DISTINCT FROM"

    def impl(cols: list[Col], n: int, ctx) -> Col:
        out: list[bool | None] = []
        for x, y in zip(cols[0].to_pylist(), cols[1].to_pylist()):
            if x is None or y is None:
                out.append((x is None) != (y is None) != negate if distinct else None)
                continue
            _check_fields(x, y)
            out.append(test(expr.record_key(x), expr.record_key(y)) != negate)
        return Col.from_pylist(out, type_oids.BOOL)

    return expr.Func(f"record {op}", impl, [left, right], type_oids.BOOL)
