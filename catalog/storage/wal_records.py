"""The operations a WAL record holds, as named, versioned record types.

In memory an operation stays what :func:`catalog.database.apply_op` takes
(a tuple whose first item names its kind), so the commit path and the
replay path still share one function.  On disk each kind is a record type
whose fields are named (:data:`OP_FIELDS`): the meaning of a logged
operation no longer depends on the position of a tuple item, and a reader
can tell which version of an operation it holds.

Stream batches and merged Spark partial states are records of their own
(:class:`StreamBatch`, :class:`PartialMerge`): storage hands them to the
stream hooks (:class:`catalog.hooks.StreamStorageHooks`) at replay.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import records
from ..objects.model import ColumnDef, Constraint, DatabaseDef, DefaultAcl, Function, Relation, Role, RoleSetting, Schema

#: A column as logged: its values and NULL mask (None: no NULLs).
ColumnArrays = tuple[np.ndarray, np.ndarray | None]

#: op kind -> the names of the tuple items after the kind, in order.
OP_FIELDS: dict[str, tuple[str, ...]] = {
    "rel": ("relation",),
    "drop_rel": ("oid",),
    "schema": ("schema",),
    "drop_schema": ("name",),
    "role": ("role",),
    "drop_role": ("name",),
    "function": ("function",),
    "drop_function": ("name",),
    "drop_function_oid": ("oid",),
    "insert": ("oid", "columns"),
    "delete": ("oid", "positions"),
    "relayout": ("oid", "type_oids", "columns"),
    "truncate": ("oid",),
    "setval": ("oid", "value"),
    "setval_uncalled": ("oid", "value"),     # setval(s, v, false), ALTER SEQUENCE RESTART: nextval gives v
    "database": ("database",),
    "default_acl": ("default_acl",),
    "drop_default_acl": ("role", "schema", "objtype"),
    "role_setting": ("role_setting",),
}

#: Fields that hold a list of :data:`ColumnArrays` (logged as "column" records).
_COLUMN_FIELDS = frozenset({"columns"})


@dataclass
class StreamBatch:
    """Rows inserted into a stream (logged; streams keep no rows themselves).
    ``batch_key``: the Spark exactly-once key of the insert, or ''.
    ``late_rows``: the statement's rows its stream's watermark dropped
    (counted once logged; records written before the field read as 0).
    ``targets``: the continuous views and transforms the statement fed
    (pipelinedb.stream_targets, their oids), or None: every view of the
    stream (records written before the field read as None)."""

    oid: int
    columns: list[ColumnArrays]
    seq: int = 0
    batch_key: str = ""
    late_rows: int = 0
    targets: list[int] | None = None


@dataclass
class StreamPart:
    """One slab of a COPY into a stream.  A COPY larger than one slab is
    logged as its parts and then a :class:`StreamCommit`; replay applies the
    parts of a group only at its commit, so a crash mid-COPY loses all of an
    unacknowledged COPY, never part of it.  ``targets`` as in
    :class:`StreamBatch`, on every part: replay stages a part as it reads it,
    before its commit."""

    oid: int
    group: int
    columns: list[ColumnArrays]
    targets: list[int] | None = None


@dataclass
class StreamCommit:
    """The end of a COPY's parts: ``parts`` records of ``group``, ``rows``
    rows; ``late_rows`` as in :class:`StreamBatch`."""

    oid: int
    group: int
    parts: int
    rows: int
    late_rows: int = 0


@dataclass
class PartialMerge:
    """Partial aggregate states shipped by Spark, merged into one pipeline of
    a continuous view.  ``pipeline`` is the pipeline's fingerprint."""

    oid: int
    view_oid: int
    pipeline: str
    keys: list[tuple[Any, ...]] = field(default_factory=list)
    states: list[dict[str, Any]] = field(default_factory=list)
    rows_in: int = 0
    batch_key: str = ""


@dataclass
class StreamDelta:
    """A COPY into a stream logged as what it did to each continuous view
    (PipelineDB logs its views' tables, never a stream's rows): per view
    pipeline, the statement's own grouped partial states, exported as a
    checkpoint exports a state (``views``: {"view": oid, "pipeline":
    fingerprint, "table": exported table}).  Far smaller than the rows of a
    stream feeding aggregating views, and replayed by merging, without
    running the views again.  ``rows``: the rows admitted; ``late_rows`` as
    in :class:`StreamBatch`; ``top_us``: the newest event time seen, for the
    stream's watermark (None: no watermark, or no row moved it)."""

    oid: int
    rows: int
    views: list[dict[str, Any]] = field(default_factory=list)
    late_rows: int = 0
    top_us: int | None = None


def _register() -> None:
    records.register("column", 1, ("data", "nulls"))
    # one value repeated ``rows`` times, without NULLs (a COPY's arrival_timestamp):
    # written since the WAL logs such columns so; "column" records still decode as before
    records.register("const_column", 1, ("value", "rows"))
    for kind, names in OP_FIELDS.items():
        records.register(f"op.{kind}", 1, names)
    # late_rows, targets: absent from records written before them (read as 0, None)
    records.register("op.stream", 1, ("oid", "columns", "seq", "batch_key", "late_rows", "targets"))
    records.register_dataclass(PartialMerge, "op.partial_merge")
    records.register("op.stream_part", 1, ("oid", "group", "columns", "targets"))
    records.register_dataclass(StreamCommit, "op.stream_commit")
    records.register_dataclass(StreamDelta, "op.stream_delta")
    for cls, tag in ((ColumnDef, "column_def"), (Constraint, "constraint"), (Schema, "schema"),
                     (Role, "role"), (DatabaseDef, "database"), (DefaultAcl, "default_acl"),
                     (RoleSetting, "role_setting")):
        records.register_dataclass(cls, tag)
    # version 2: argument names and defaults, volatility, strictness, SETOF/TABLE, kind and ACL
    records.register_dataclass(Function, "function", version=2)
    # Relation's pair-valued fields are kept by name on disk, not by position
    records.register("owned_by", 1, ("table", "column"))
    records.register_dataclass(Relation, "relation", convert={
        "options": (_pairs_out, _pairs_in), "column_comments": (_pairs_out, _pairs_in),
        "owned_by": (_owned_by_out, _owned_by_in)})


def _pairs_out(pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    return dict(pairs)


def _pairs_in(d: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(d.items())


def _owned_by_out(v: tuple[int, str] | None) -> records.Record | None:
    return None if v is None else records.Record("owned_by", {"table": v[0], "column": v[1]})


def _owned_by_in(r: records.Record | None) -> tuple[int, str] | None:
    return None if r is None else (r.fields["table"], r.fields["column"])


_register()


def columns_out(cols: list[ColumnArrays]) -> list[records.Record]:
    """Columns as "column" records (for a value that is not an operation)."""
    return [records.Record("column", {"data": d, "nulls": m}) for d, m in cols]


def columns_in(recs: list[records.Record]) -> list[ColumnArrays]:
    return [(r.fields["data"], r.fields["nulls"]) if r.tag == "column" else _const_in(r.fields) for r in recs]


def _const_in(f: dict[str, Any]) -> ColumnArrays:
    value = f["value"]
    if not isinstance(value, np.ndarray) or value.shape != (1,) or type(f["rows"]) is not int or f["rows"] < 0:
        raise records.FormatError("a constant column record holds no one value and row count")
    return np.full(f["rows"], value[0], dtype=value.dtype), None


_COLUMN = records.record_type("column")
_CONST = records.record_type("const_column")
#: columns this long or longer are checked for one repeated value (logged as
#: a "const_column"); the check costs a comparison of the first and last
#: values, and a pass over the column only when they are equal
CONST_MIN_ROWS = 64
#: the integer view of a fixed-width value, for a bitwise comparison (NaN, -0.0, NaT)
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_STREAM = records.record_type("op.stream")
_PART = records.record_type("op.stream_part")
_OPS = {kind: records.record_type(f"op.{kind}") for kind in OP_FIELDS}


def put_ops(parts: list[bytes | memoryview], ops: list[Any]) -> None:
    """Append the encoding of a record body holding ``ops`` (tuples,
    :class:`StreamBatch`, :class:`PartialMerge`, :class:`StreamDelta`...) to ``parts``."""
    records.put_list_head(parts, len(ops))
    for op in ops:
        if isinstance(op, StreamBatch):
            records.put_record_values(parts, _STREAM, (op.oid, _Columns(op.columns), op.seq, op.batch_key,
                                                              op.late_rows, op.targets))
        elif isinstance(op, StreamPart):
            records.put_record_values(parts, _PART, (op.oid, op.group, _Columns(op.columns), op.targets))
        elif isinstance(op, (PartialMerge, StreamCommit, StreamDelta)):
            records.dump_parts(op, parts)
        else:
            rt = _OPS[op[0]]
            records.put_record_values(parts, rt, (_Columns(v) if n in _COLUMN_FIELDS else v
                                                  for n, v in zip(rt.fields, op[1:])))


class _Columns(list[ColumnArrays]):
    """A list of logged columns: encodes as a list of "column" records."""


def _put_columns(parts: list[bytes | memoryview], cols: _Columns) -> None:
    records.put_list_head(parts, len(cols))
    for pair in cols:
        if _constant(*pair):
            records.put_record_values(parts, _CONST, (pair[0][:1], len(pair[0])))
        else:
            records.put_record_values(parts, _COLUMN, pair)


def _constant(data: np.ndarray, nulls: np.ndarray | None) -> bool:
    """One value, bit for bit, in every row of a long column without NULLs:
    the WAL logs it once (a COPY's arrival_timestamp was a quarter of YSB's log)."""
    bits = _BITS.get(data.dtype.itemsize)
    if nulls is not None or bits is None or data.ndim != 1 or len(data) < CONST_MIN_ROWS \
            or data.dtype.kind not in "biufmM":
        return False
    v = data.view(bits)
    return bool(v[0] == v[-1]) and bool((v == v[0]).all())


records.add_encoder(_Columns, _put_columns)


def op_from_record(rec: Any) -> Any:
    """The in-memory operation of a record made by :func:`op_record`."""
    if isinstance(rec, (PartialMerge, StreamCommit, StreamDelta)):
        return rec
    if not isinstance(rec, records.Record) or not rec.tag.startswith("op."):
        raise records.FormatError(f"a WAL record holds {type(rec).__name__}, not an operation")
    f = rec.fields
    if rec.tag == "op.stream":
        return StreamBatch(f["oid"], columns_in(f["columns"]), f["seq"], f["batch_key"], f.get("late_rows", 0),
                           f.get("targets"))
    if rec.tag == "op.stream_part":
        return StreamPart(f["oid"], f["group"], columns_in(f["columns"]), f.get("targets"))
    kind = rec.tag[3:]
    return (kind, *(columns_in(f[n]) if n in _COLUMN_FIELDS else f[n] for n in OP_FIELDS[kind]))
